//! `rpcwire serve --http`'s liveness and readiness probes (`rpcwire_http::HttpServer::liveness`
//! and `readiness`).

use clap::Args;
use rpcwire_http::HttpServer;

/// The probes' flags.
#[derive(Debug, Args)]
pub(crate) struct ProbeArgs {
    /// With --http: answer `GET PATH` 200 while the process serves (a liveness probe, e.g.
    /// /healthz; before the Host check and authentication).
    #[arg(long, value_name = "PATH", requires = "http")]
    pub(crate) liveness_path: Option<String>,
    /// With --http: answer `GET PATH` 200 when ready for new callers, 503 when not: while
    /// draining, and while a --jwks key set has never been fetched (e.g. /readyz).
    #[arg(long, value_name = "PATH", requires = "http")]
    pub(crate) readiness_path: Option<String>,
}

impl ProbeArgs {
    /// `server` with the probes asked for.
    pub(crate) fn apply(&self, mut server: HttpServer) -> HttpServer {
        if let Some(path) = &self.liveness_path {
            server = server.liveness(path);
        }
        if let Some(path) = &self.readiness_path {
            server = server.readiness(path);
        }
        server
    }
}
