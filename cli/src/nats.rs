//! The NATS side of the `rpcwire` command: `serve --nats URL --subject S [--queue G]` (the demo
//! service on a subject, in a queue group) and `call --nats URL --subject S` (the connection a
//! call goes over).

use std::process::ExitCode;

use clap::Args;
use rpcwire_nats::{async_nats, NatsClient, NatsServer};
use rpcwire_tokio::{Builder, Session};

use crate::EXIT_CONNECTION;

/// The NATS options of `rpcwire serve`.
#[derive(Debug, Args)]
pub struct NatsServeArgs {
    /// Serve on a NATS server (e.g. nats://127.0.0.1:4222), as the service `rpcwire` of NATS's
    /// service API, one JSON-RPC message per NATS message.
    #[arg(long, value_name = "URL", requires = "subject")]
    pub nats: Option<String>,
    /// With --nats: the subject served.
    #[arg(long, value_name = "SUBJECT", requires = "nats")]
    pub subject: Option<String>,
    /// With --nats: the queue group (default `q`): each message goes to one server of it.
    #[arg(long, value_name = "GROUP", requires = "nats")]
    pub queue: Option<String>,
}

/// The NATS options of `rpcwire call`.
#[derive(Debug, Args)]
pub struct NatsCallArgs {
    /// Call over a NATS server (e.g. nats://127.0.0.1:4222): the request goes to --subject,
    /// a notification is published there.
    #[arg(long, value_name = "URL", requires = "subject")]
    pub nats: Option<String>,
    /// With --nats: the subject the service is served on.
    #[arg(long, value_name = "SUBJECT", requires = "nats")]
    pub subject: Option<String>,
}

async fn connect(url: &str) -> Result<async_nats::Client, ExitCode> {
    async_nats::connect(url).await.map_err(|e| {
        eprintln!("rpcwire: cannot connect to {url}: {e}");
        ExitCode::from(EXIT_CONNECTION)
    })
}

/// Serves `builder`'s service as `args` say, until the NATS connection ends.
pub async fn serve(args: &NatsServeArgs, builder: Builder) -> ExitCode {
    let (Some(url), Some(subject)) = (&args.nats, &args.subject) else {
        return ExitCode::from(EXIT_CONNECTION);
    };
    let nats = match connect(url).await {
        Ok(nats) => nats,
        Err(code) => return code,
    };
    let server = NatsServer {
        queue_group: args.queue.clone(),
        ..NatsServer::new(subject.as_str())
    };
    let group = args.queue.as_deref().unwrap_or("q");
    eprintln!("rpcwire: serving the demo service on {url}, subject {subject}, queue group {group}");
    match server.serve(nats, builder).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rpcwire: {e}");
            ExitCode::from(EXIT_CONNECTION)
        }
    }
}

/// The connection a call goes over (`None` without `--nats`).
pub async fn session(args: &NatsCallArgs, builder: Builder) -> Option<Result<Session, ExitCode>> {
    let (url, subject) = (args.nats.as_ref()?, args.subject.as_ref()?);
    Some(match connect(url).await {
        Ok(nats) => NatsClient::new(subject.as_str())
            .start(nats, builder)
            .await
            .map_err(|e| {
                eprintln!("rpcwire: {e}");
                ExitCode::from(EXIT_CONNECTION)
            }),
        Err(code) => Err(code),
    })
}
