//! An A2A agent with no language model, served over HTTP (`a2a-agent --http ADDR`):
//!
//! - `echo TEXT` (skill `echo`): answers at once with one artifact, the text.
//! - `count N` (skill `count`): counts to N (at most 1 000), one step every `--step-ms`,
//!   reporting each step as a status update and an artifact chunk; cancelling the task stops
//!   it (the turn is dropped at its next step).
//! - `greet` (skill `greet`): asks for a name (`input-required`), then greets it.
//!
//! It keeps its tasks in memory, or with `--store sqlite:PATH` in a SQLite file that outlives
//! the process: tasks finished before a restart are served after it, and those it was working
//! on when it died are failed once their lease (`--lease-ms`) lapses. With
//! `--store postgres:URL` or `--store redis:URL`, several replicas share their tasks, streams
//! and push configs.
//!
//! It sends push notifications to webhooks at public addresses (and those `--webhook-allow`
//! names). It prints `listening http://ADDR` once it serves, and `count stopped at STEP` on stderr
//! when a count is cancelled (the tests read it to see the work stop).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use rpcwire_a2a::{
    A2aServer, AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Artifact, Chunk,
    LeaseConfig, Part, PostgresTaskStore, PushLimits, RedisTaskStore, SqliteTaskStore, StoreLimits,
    TaskContext, WebhookPolicy,
};

#[derive(Parser, Debug)]
#[command(name = "a2a-agent", about = "An A2A agent: echo, count, greet")]
struct Args {
    /// The format of the stderr log: text lines, or one JSON object per line (for a log
    /// collector).
    #[arg(long, value_enum, default_value = "text")]
    log_format: LogFormat,
    /// The address to serve on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    http: SocketAddr,
    /// The time between two steps of `count`, in milliseconds.
    #[arg(long, default_value_t = 100)]
    step_ms: u64,
    /// The largest request body, in bytes (413 beyond).
    #[arg(long, default_value_t = 4 << 20)]
    max_body: usize,
    /// Serve the A2A 0.3 method names too (the card then lists a 0.3 interface as well).
    #[arg(long)]
    compat_v03: bool,
    /// The agent's name on its card.
    #[arg(long, default_value = "rpcwire-a2a-agent")]
    name: String,
    /// An address push notification webhooks may be at beyond public ones (a test's
    /// webhook on loopback); repeat for more.
    #[arg(long)]
    webhook_allow: Vec<IpAddr>,
    /// Where tasks are kept: `memory`, `sqlite:PATH` (a file, created when missing, that
    /// outlives the process), `postgres:URL` (a PostgreSQL database several replicas
    /// share, e.g. `postgres:postgres://user@127.0.0.1:5432/agents`), or `redis:URL` (a Redis
    /// or Valkey several replicas share, e.g. `redis:redis://127.0.0.1:6379/`).
    #[arg(long, default_value = "memory", value_parser = parse_store)]
    store: Store,
    /// How long the lease of a task being worked on lasts, in milliseconds: the task of a
    /// process that died is failed this long after its last renewal.
    #[arg(long, default_value_t = 30_000)]
    lease_ms: u64,
    /// How often the leases are renewed (and lapsed ones failed), in milliseconds; at most
    /// half of `--lease-ms` is used.
    #[arg(long, default_value_t = 10_000)]
    lease_renew_ms: u64,
}

/// Where tasks are kept (`--store`).
#[derive(Debug, Clone)]
enum Store {
    Memory,
    Sqlite(PathBuf),
    Postgres(String),
    Redis(String),
}

fn parse_store(text: &str) -> Result<Store, String> {
    match text.split_once(':') {
        _ if text == "memory" => Ok(Store::Memory),
        Some(("sqlite", path)) if !path.is_empty() => Ok(Store::Sqlite(path.into())),
        Some(("postgres", url)) if !url.is_empty() => Ok(Store::Postgres(url.into())),
        Some(("redis", url)) if !url.is_empty() => Ok(Store::Redis(url.into())),
        _ => Err(format!(
            "{text:?}: expected memory, sqlite:PATH, postgres:URL or redis:URL"
        )),
    }
}

fn skill(id: &str, description: &str, tags: &[&str], example: &str) -> AgentSkill {
    AgentSkill {
        id: id.into(),
        name: id.into(),
        description: description.into(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
        examples: vec![example.into()],
        ..AgentSkill::default()
    }
}

fn card(name: &str, url: String, compat_v03: bool) -> AgentCard {
    let mut interfaces = vec![AgentInterface {
        url: url.clone(),
        protocol_binding: "JSONRPC".into(),
        protocol_version: "1.0".into(),
        ..AgentInterface::default()
    }];
    if compat_v03 {
        interfaces.push(AgentInterface {
            url,
            protocol_binding: "JSONRPC".into(),
            protocol_version: "0.3".into(),
            ..AgentInterface::default()
        });
    }
    AgentCard {
        name: name.to_owned(),
        description: "Echoes, counts with streamed progress, greets after asking a name".into(),
        supported_interfaces: interfaces,
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: AgentCapabilities {
            streaming: true,
            ..AgentCapabilities::default()
        },
        default_input_modes: vec!["text/plain".into()],
        default_output_modes: vec!["text/plain".into()],
        skills: vec![
            skill(
                "echo",
                "Answers with the text it was sent",
                &["echo"],
                "echo hello",
            ),
            skill(
                "count",
                "Counts to N, streaming each step; stops when cancelled",
                &["count", "long"],
                "count 5",
            ),
            skill(
                "greet",
                "Asks for a name, then greets it",
                &["greet", "input"],
                "greet",
            ),
        ],
        ..AgentCard::default()
    }
}

/// Prints where the count was when the turn is dropped (cancelled) before it finished.
struct StopWatch {
    step: u64,
    done: bool,
}

impl Drop for StopWatch {
    fn drop(&mut self) {
        if !self.done {
            eprintln!("count stopped at {}", self.step);
        }
    }
}

async fn count(ctx: TaskContext, n: u64, step: Duration) {
    let mut watch = StopWatch {
        step: 0,
        done: false,
    };
    ctx.working(Some(&format!("counting to {n}")));
    for i in 1..=n {
        tokio::time::sleep(step).await;
        watch.step = i;
        ctx.working(Some(&format!("step {i}/{n}")));
        let chunk = Artifact {
            artifact_id: "count".into(),
            name: "count".into(),
            parts: vec![Part::text(format!("{i}"))],
            ..Artifact::default()
        };
        let piece = match (i > 1, i == n) {
            (false, true) => Chunk::Whole,
            (false, false) => Chunk::New,
            (true, false) => Chunk::Append,
            (true, true) => Chunk::Last,
        };
        ctx.artifact(chunk, piece);
    }
    watch.done = true;
    ctx.complete(Some(&format!("counted to {n}")));
}

/// What a turn is asked to do.
enum Skill {
    /// The answer to `greet`'s question: the name.
    Name(String),
    Count(u64),
    Greet,
    Echo(String),
    Unknown,
}

/// The skill a message asks for. Read before the turn's first `.await`, so that the turn's
/// future (kept while a count runs) holds no copy of the text.
fn skill_of(ctx: &TaskContext) -> Skill {
    let text = ctx.text();
    if ctx.is_continuation() {
        return Skill::Name(text.trim().to_owned());
    }
    let mut words = text.split_whitespace();
    match words.next().unwrap_or("") {
        "count" => Skill::Count(
            words
                .next()
                .and_then(|w| w.parse().ok())
                .unwrap_or(5u64)
                .min(1000),
        ),
        "greet" => Skill::Greet,
        "echo" => Skill::Echo(
            text.trim_start()
                .strip_prefix("echo")
                .unwrap_or("")
                .trim()
                .to_owned(),
        ),
        _ => Skill::Unknown,
    }
}

async fn turn(ctx: TaskContext, step: Duration) {
    match skill_of(&ctx) {
        Skill::Name(name) => {
            ctx.text_artifact("greeting", format!("Hello, {name}!"));
            ctx.complete(None);
        }
        Skill::Count(n) => count(ctx, n, step).await,
        Skill::Greet => {
            ctx.input_required("What is your name?");
        }
        Skill::Echo(rest) => {
            ctx.text_artifact("echo", rest);
            ctx.complete(None);
        }
        Skill::Unknown => {
            ctx.reject("unknown skill: start with echo, count or greet");
        }
    }
}

/// The format of the stderr log (`--log-format`).
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum LogFormat {
    Text,
    Json,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let log = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // A line that cannot be written (stderr closed) is dropped; the subscriber's own
        // report of it would panic the task that logged.
        .log_internal_errors(false)
        .with_max_level(tracing::Level::WARN);
    match args.log_format {
        LogFormat::Text => log.init(),
        LogFormat::Json => log.json().init(),
    }
    let listener = tokio::net::TcpListener::bind(args.http).await?;
    let addr = listener.local_addr()?;
    let step = Duration::from_millis(args.step_ms);
    let card = card(&args.name, format!("http://{addr}/"), args.compat_v03);
    // SIGTERM / SIGINT drain the server: no new connections, calls under way finish, what
    // arrives is answered 503, then the process ends (at most 30 s later).
    let shutdown = rpcwire_a2a::Shutdown::new(Duration::from_secs(30));
    shutdown.on_signals();
    let mut server = A2aServer::new(card, move |ctx| turn(ctx, step)).leases(LeaseConfig {
        duration: Duration::from_millis(args.lease_ms),
        renew_every: Duration::from_millis(args.lease_renew_ms),
    });
    match &args.store {
        Store::Memory => {}
        Store::Sqlite(path) => {
            // One file for tasks, their streams' events and push configs: a stream resumes
            // with `Last-Event-ID` after a restart too.
            let sqlite = Arc::new(SqliteTaskStore::open(path, StoreLimits::default())?);
            server = server
                .store(Arc::clone(&sqlite) as _)
                .event_log(Arc::clone(&sqlite) as _)
                .push_config_store(sqlite);
        }
        Store::Postgres(url) => {
            // One database for tasks, their streams' events and push configs, shared with the
            // other replicas: a stream on any replica follows a task worked on by another.
            let postgres = Arc::new(PostgresTaskStore::connect(url, StoreLimits::default()).await?);
            server = server
                .store(Arc::clone(&postgres) as _)
                .event_log(Arc::clone(&postgres) as _)
                .push_config_store(postgres);
        }
        Store::Redis(url) => {
            // The same, in a Redis or Valkey shared with the other replicas (keys under
            // `rpcwire:a2a`).
            let redis = Arc::new(RedisTaskStore::connect(url, StoreLimits::default()).await?);
            server = server
                .store(Arc::clone(&redis) as _)
                .event_log(Arc::clone(&redis) as _)
                .push_config_store(redis);
        }
    }
    let service = server
        .max_body(args.max_body)
        .compat_v03(args.compat_v03)
        .map_service(|s| s.shutdown(&shutdown))
        .push_notifications(
            WebhookPolicy::public_only().allow(args.webhook_allow.iter().copied()),
            PushLimits::default(),
        )
        .build();
    println!("listening http://{addr}");
    rpcwire_a2a::serve(listener, service).await;
    shutdown.drained().await;
    Ok(())
}
