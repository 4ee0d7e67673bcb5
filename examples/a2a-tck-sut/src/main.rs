//! The system under test of the official A2A TCK (`a2a-tck-sut --http ADDR`): an agent that
//! does what the TCK's scenarios (`scenarios/*.feature` in the TCK) say it does when a
//! message's id starts with the scenario's prefix, written with `rpcwire-a2a`'s public API
//! only. Everything the scenarios leave to "the SDK framework" (errors, capability checks,
//! history, listing, subscriptions) is the crate's own behaviour.
//!
//! It sends push notifications (to public addresses, and those `--webhook-allow` names)
//! unless `--no-push`. It
//! prints `listening http://ADDR` once it serves.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use clap::Parser;
use rpcwire_a2a::serde_json::json;
use rpcwire_a2a::{
    A2aServer, AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Artifact, Chunk, Part,
    PushLimits, TaskContext, WebhookPolicy,
};

#[derive(Parser, Debug)]
#[command(name = "a2a-tck-sut", about = "The A2A TCK's system under test")]
struct Args {
    /// The address to serve on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    http: SocketAddr,
    /// How long the long-running scenario works before it completes, in milliseconds (the
    /// TCK's resubscription test wants twice its streaming timeout of 2 s).
    #[arg(long, default_value_t = 4000)]
    long_ms: u64,
    /// Declare no streaming on the card (the TCK's checks of an agent without it).
    #[arg(long)]
    no_streaming: bool,
    /// Send no push notifications (the TCK's checks of an agent without them).
    #[arg(long)]
    no_push: bool,
    /// Declare an extension the clients must use (the TCK's `urn:a2a:tck:required-extension`).
    #[arg(long)]
    require_extension: Option<String>,
    /// An address push notification webhooks may be at beyond public ones (the TCK's
    /// webhook receiver on loopback); repeat for more.
    #[arg(long)]
    webhook_allow: Vec<IpAddr>,
}

fn card(url: String, args: &Args) -> AgentCard {
    AgentCard {
        name: "rpcwire A2A TCK system under test".into(),
        description: "Implements the scenarios of the A2A TCK".into(),
        supported_interfaces: vec![AgentInterface {
            url,
            protocol_binding: "JSONRPC".into(),
            protocol_version: "1.0".into(),
            ..AgentInterface::default()
        }],
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: AgentCapabilities {
            streaming: !args.no_streaming,
            extensions: args
                .require_extension
                .iter()
                .map(|uri| json!({"uri": uri, "required": true}))
                .collect(),
            ..AgentCapabilities::default()
        },
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec!["text/plain".into()],
        skills: vec![AgentSkill {
            id: "tck".into(),
            name: "TCK conformance".into(),
            description: "Handles the TCK's conformance messages".into(),
            tags: vec!["tck".into()],
            ..AgentSkill::default()
        }],
        ..AgentCard::default()
    }
}

fn artifact(id: &str, part: Part) -> Artifact {
    Artifact {
        artifact_id: id.into(),
        parts: vec![part],
        ..Artifact::default()
    }
}

fn file_part() -> Part {
    Part::file_bytes(b"tck", "text/plain", "output.txt")
}

/// The scenarios, by message id prefix. Longer prefixes first where one starts another.
async fn turn(ctx: TaskContext, long: Duration) {
    let id = ctx.message().message_id.clone();
    let p = |prefix: &str| id.starts_with(prefix);
    if p("tck-stream-artifact-chunked") {
        ctx.working(None);
        ctx.artifact(artifact("chunked", Part::text("chunk-1 ")), Chunk::New);
        ctx.artifact(artifact("chunked", Part::text("chunk-2")), Chunk::Last);
        ctx.complete(None);
    } else if p("test-resubscribe-message-id") {
        ctx.working(None);
        tokio::time::sleep(long).await;
        ctx.complete(None);
    } else if p("tck-stream-artifact-text") {
        streamed(&ctx, Part::text("Streamed text content"));
    } else if p("tck-stream-artifact-file") {
        streamed(&ctx, file_part());
    } else if p("tck-stream-ordering-001") {
        streamed(&ctx, Part::text("Ordered output"));
    } else if p("tck-stream-001") {
        streamed(&ctx, Part::text("Stream hello from TCK"));
    } else if p("tck-stream-002") {
        ctx.complete(None);
    } else if p("tck-stream-003") {
        streamed(&ctx, Part::text("Stream task lifecycle"));
    } else if p("tck-artifact-file-url") {
        let url = Part::file_url("https://example.com/output.txt", "text/plain", "output.txt");
        ctx.parts_artifact("file-url", vec![url]);
        ctx.complete(None);
    } else if p("tck-artifact-file") {
        ctx.parts_artifact("file", vec![file_part()]);
        ctx.complete(None);
    } else if p("tck-artifact-text") {
        ctx.text_artifact("text", "Generated text content");
        ctx.complete(None);
    } else if p("tck-artifact-data") {
        let data = Part::data(json!({"key": "value", "count": 42}));
        ctx.parts_artifact("data", vec![data]);
        ctx.complete(None);
    } else if p("tck-message-response") {
        ctx.reply("Direct message response");
    } else if p("tck-input-required") {
        ctx.input_required("More input, please");
    } else if p("tck-reject-task") {
        ctx.reject("rejected");
    } else if p("tck-complete-task") {
        ctx.complete(Some("Hello from TCK"));
    } else {
        ctx.complete(Some(&format!("Unhandled messageId prefix: {id}")));
    }
}

/// Working, one artifact, completed: the streaming scenarios' lifecycle.
fn streamed(ctx: &TaskContext, part: Part) {
    ctx.working(None);
    ctx.artifact(artifact("streamed", part), Chunk::New);
    ctx.complete(None);
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // A line that cannot be written (stderr closed) is dropped; the subscriber's own
        // report of it would panic the task that logged.
        .log_internal_errors(false)
        .with_max_level(tracing::Level::WARN)
        .init();
    let args = Args::parse();
    let listener = tokio::net::TcpListener::bind(args.http).await?;
    let addr = listener.local_addr()?;
    let long = Duration::from_millis(args.long_ms);
    let policy = WebhookPolicy::public_only().allow(args.webhook_allow.iter().copied());
    let server = A2aServer::new(card(format!("http://{addr}/"), &args), move |ctx| {
        turn(ctx, long)
    });
    let server = if args.no_push {
        server
    } else {
        server.push_notifications(policy, PushLimits::default())
    };
    let service = server.build();
    println!("listening http://{addr}");
    rpcwire_a2a::serve(listener, service).await;
    Ok(())
}
