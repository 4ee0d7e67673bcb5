//! `rpcwire serve --allowed-host` and `--allowed-origin`: the `Host` and `Origin` names an
//! HTTP or WebSocket server accepts beside the loopback ones (the DNS-rebinding protection
//! stays on: any other name gets 403), or `--any-host`.

use std::process::ExitCode;

use clap::Args;
use rpcwire_http::HostPolicy;

use crate::EXIT_USAGE;

/// The host and origin flags.
#[derive(Debug, Args)]
pub(crate) struct HostArgs {
    /// With --http or --ws: also accept this name in `Host` (and as the host of an `Origin`),
    /// beside localhost, 127.0.0.1 and ::1 (repeatable): the name clients reach the server
    /// by. Any other name is refused with 403 (DNS-rebinding protection).
    #[arg(
        long,
        value_name = "NAME",
        requires = "web",
        conflicts_with = "any_host"
    )]
    pub(crate) allowed_host: Vec<String>,
    /// With --http or --ws: also accept this origin in `Origin` (repeatable), written as a
    /// browser sends it: `https://app.example.com`, a port if not the scheme's. A page of
    /// that site may then call the server (the `Host` must still be an accepted name).
    #[arg(
        long,
        value_name = "ORIGIN",
        requires = "web",
        conflicts_with = "any_host"
    )]
    pub(crate) allowed_origin: Vec<String>,
}

impl HostArgs {
    /// The policy: any host with `--any-host`, else the loopback names and those given.
    pub(crate) fn policy(&self, any_host: bool) -> Result<HostPolicy, ExitCode> {
        if any_host {
            return Ok(HostPolicy::Any);
        }
        let mut policy = HostPolicy::loopback();
        for name in &self.allowed_host {
            if name.is_empty() || name.contains(['/', ':']) && !name.starts_with('[') {
                eprintln!("rpcwire: --allowed-host {name:?}: a host name, without scheme or port");
                return Err(ExitCode::from(EXIT_USAGE));
            }
            policy = policy.with(name.as_str());
        }
        for origin in &self.allowed_origin {
            let host = origin
                .strip_prefix("https://")
                .or_else(|| origin.strip_prefix("http://"));
            if host.is_none_or(|h| h.is_empty() || h.contains('/')) {
                eprintln!(
                    "rpcwire: --allowed-origin {origin:?}: an origin such as https://app.example.com"
                );
                return Err(ExitCode::from(EXIT_USAGE));
            }
            policy = policy.with(origin.as_str());
        }
        Ok(policy)
    }
}
