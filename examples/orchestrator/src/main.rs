//! rpcwire example: an orchestrator of agents over JSON-RPC.
//!
//! One process spawns three agent servers as child processes (this binary run with
//! `--agent NAME`, each serving JSON-RPC on its stdio), asks each for its capabilities with a
//! single batch call (`agent.describe`, `agent.tools`, `agent.health` in one JSON array,
//! replies collated by id by `rpcwire_tokio::Client::batch`), then routes tasks to an agent
//! that offers the tool. Halfway, while one agent works on a task, that agent is killed: the
//! orchestrator reports it, reroutes the task to another agent offering the same tool, and
//! reports the tasks no live agent can do.
//!
//! Run it: `cargo run -p rpcwire-example-orchestrator`.
//!
//! With `--a2a URL` (any number), `--stdio NAME` and `--task SKILL:TEXT` it orchestrates A2A
//! agents found by their Agent Cards over HTTP beside stdio agents it spawns (module `a2a`):
//! `orchestrator --a2a http://127.0.0.1:8080 --stdio alpha --task count:"count 3"`.

mod a2a;
mod agent;

use std::process::ExitCode;
use std::time::Duration;

use rpcwire_tokio::{Builder, CallError, Client, Session};
use serde::Deserialize;
use serde_json::{json, Value};

/// Prints a line on stdout; a reader that went away (`orchestrator | head`) ends the process
/// quietly, as for any Unix filter.
#[macro_export]
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if writeln!(std::io::stdout(), $($arg)*).is_err() {
            std::process::exit(141);
        }
    }};
}

/// How long the orchestrator waits for any answer.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// How long the task during which an agent is killed would take.
const SLOW_TASK_MS: u64 = 5_000;

/// When, after the slow task starts, its agent is killed.
const KILL_AFTER: Duration = Duration::from_millis(300);

/// The agent killed halfway.
const VICTIM: &str = "beta";

/// What an agent says about itself (`agent.describe`).
#[derive(Debug, Deserialize)]
struct Describe {
    name: String,
    role: String,
    pid: u32,
}

/// `agent.health`.
#[derive(Debug, Deserialize)]
struct Health {
    status: String,
    uptime_ms: u64,
    /// Batches the agent had read when it answered (1: the calls came in one frame).
    batches_received: u64,
}

/// A running agent, as the orchestrator knows it.
struct Agent {
    name: String,
    tools: Vec<String>,
    client: Client,
    session: Option<Session>,
    child: tokio::process::Child,
    alive: bool,
}

/// A task to route: a tool and its input.
struct Task {
    id: u32,
    tool: &'static str,
    input: Value,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match args.get(1).map(String::as_str) {
        Some("--agent") => {
            let name = args.get(2).cloned().unwrap_or_default();
            match runtime.block_on(agent::serve(&name)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("agent {name}: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        None => runtime.block_on(orchestrate()),
        Some("--a2a" | "--stdio" | "--task") => match std::env::current_exe() {
            Ok(exe) => runtime.block_on(a2a::run(&exe, &args[1..])),
            Err(e) => {
                eprintln!("orchestrator: cannot find its own binary: {e}");
                ExitCode::FAILURE
            }
        },
        Some(_) => {
            eprintln!("usage: orchestrator            (runs the orchestration)\n       orchestrator --agent NAME (one agent server on stdio)\n       orchestrator [--a2a URL]... [--stdio NAME]... [--task SKILL:TEXT]... (A2A and stdio agents)");
            ExitCode::from(2)
        }
    }
}

async fn orchestrate() -> ExitCode {
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("orchestrator: cannot find its own binary: {e}");
            return ExitCode::FAILURE;
        }
    };

    // 1. Spawn the agents.
    let mut agents = Vec::new();
    for (name, _, _) in agent::AGENTS {
        let mut cmd = tokio::process::Command::new(&exe);
        cmd.args(["--agent", name]);
        match Builder::new()
            .request_timeout(Some(CALL_TIMEOUT))
            .spawn_child(&mut cmd)
        {
            Ok((session, child)) => agents.push(Agent {
                name: name.to_owned(),
                tools: Vec::new(),
                client: session.client().clone(),
                session: Some(session),
                child,
                alive: true,
            }),
            Err(e) => {
                eprintln!("orchestrator: cannot start agent {name}: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    say!(
        "started {} agents: {}",
        agents.len(),
        names(&agents, |_| true)
    );

    // 2. One batch per agent, all three at once: describe, tools, health.
    let rounds: Vec<_> = agents
        .iter()
        .map(|a| tokio::spawn(capabilities(a.client.clone())))
        .collect();
    for (agent, round) in agents.iter_mut().zip(rounds) {
        let answer = round.await.unwrap_or(Err(CallError::Closed));
        match answer {
            Ok((describe, tools, health)) => {
                say!(
                    "batch {}: 3 calls in one frame, replies collated by id: describe={{name: {}, role: {}, pid: {}}} tools={:?} health={{status: {}, uptime_ms: {}, batches_received: {}}}",
                    agent.name, describe.name, describe.role, describe.pid, tools, health.status, health.uptime_ms, health.batches_received
                );
                agent.tools = tools;
            }
            Err(e) => {
                say!("batch {}: failed: {e}; not used", agent.name);
                agent.alive = false;
            }
        }
    }
    let mut table: Vec<(String, Vec<String>)> = Vec::new();
    for agent in agents.iter().filter(|a| a.alive) {
        for tool in &agent.tools {
            match table.iter_mut().find(|(t, _)| t == tool) {
                Some((_, offered_by)) => offered_by.push(agent.name.clone()),
                None => table.push((tool.clone(), vec![agent.name.clone()])),
            }
        }
    }
    let caps: Vec<String> = table
        .iter()
        .map(|(tool, by)| format!("{tool} -> {}", by.join(", ")))
        .collect();
    say!("capabilities: {}", caps.join("; "));

    // 3. Route the tasks; the agent of the third one is killed while it works on it.
    let tasks = [
        Task {
            id: 1,
            tool: "uppercase",
            input: json!("hello agents"),
        },
        Task {
            id: 2,
            tool: "sum",
            input: json!([1, 2, 3]),
        },
        Task {
            id: 3,
            tool: "sum",
            input: json!([10, 20, 30, 40]),
        },
        Task {
            id: 4,
            tool: "sort",
            input: json!([3, 1, 2]),
        },
        Task {
            id: 5,
            tool: "word_count",
            input: json!("one two three"),
        },
    ];
    let (mut completed, mut reported) = (0, 0);
    for task in &tasks {
        let mut tried: Vec<String> = Vec::new();
        loop {
            let Some(agent) = agents.iter_mut().find(|a| {
                a.alive && a.tools.iter().any(|t| t == task.tool) && !tried.contains(&a.name)
            }) else {
                say!(
                    "task {} ({}): reported: no live agent offers {}",
                    task.id,
                    task.tool,
                    task.tool
                );
                reported += 1;
                break;
            };
            tried.push(agent.name.clone());
            let interrupt = task.id == 3 && agent.name == VICTIM;
            let delay_ms = if interrupt { SLOW_TASK_MS } else { 0 };
            say!(
                "task {} ({} {}) -> {}",
                task.id,
                task.tool,
                task.input,
                agent.name
            );
            let params = json!({"tool": task.tool, "input": task.input, "delay_ms": delay_ms});
            let client = agent.client.clone();
            let call = client.call::<_, Value>("task.run", params);
            let outcome = if interrupt {
                kill_halfway(agent, call).await
            } else {
                call.await
            };
            match outcome {
                Ok(result) => {
                    say!("task {} completed by {}: {result}", task.id, agent.name);
                    completed += 1;
                    break;
                }
                Err(e @ (CallError::Closed | CallError::Timeout)) => {
                    agent.alive = false;
                    let status = agent.child.wait().await.map(|s| s.to_string());
                    say!(
                        "agent {} lost during task {}: {e} (process: {}); rerouting",
                        agent.name,
                        task.id,
                        status.unwrap_or_else(|e| e.to_string())
                    );
                }
                Err(e) => {
                    say!(
                        "task {} failed on {}: {e}; trying another agent",
                        task.id,
                        agent.name
                    );
                }
            }
        }
    }

    // 4. Shut down: close each live agent's stdin, wait for it.
    let lost = names(&agents, |a| !a.alive);
    for agent in &mut agents {
        if let Some(session) = agent.session.take() {
            let _ = tokio::time::timeout(Duration::from_secs(2), session.join()).await;
        }
        if tokio::time::timeout(Duration::from_secs(2), agent.child.wait())
            .await
            .is_err()
        {
            let _ = agent.child.kill().await;
        }
    }
    say!(
        "done: {} tasks, {completed} completed, {reported} reported; agents lost: {}",
        tasks.len(),
        if lost.is_empty() {
            "none".to_owned()
        } else {
            lost
        }
    );
    ExitCode::SUCCESS
}

/// Runs `call` and kills the agent's process after [`KILL_AFTER`], while it works.
async fn kill_halfway<F>(agent: &mut Agent, call: F) -> Result<Value, CallError>
where
    F: std::future::Future<Output = Result<Value, CallError>>,
{
    tokio::pin!(call);
    tokio::select! {
        outcome = &mut call => return outcome,
        () = tokio::time::sleep(KILL_AFTER) => {}
    }
    say!(
        "halfway: killing agent {} (pid {}) while it works",
        agent.name,
        agent
            .child
            .id()
            .map_or_else(|| "?".to_owned(), |p| p.to_string())
    );
    if let Err(e) = agent.child.start_kill() {
        say!("could not kill agent {}: {e}", agent.name);
    }
    call.await
}

/// One batch: `agent.describe`, `agent.tools`, `agent.health`.
async fn capabilities(client: Client) -> Result<(Describe, Vec<String>, Health), CallError> {
    let mut batch = client.batch();
    let describe = batch.call("agent.describe", ())?;
    let tools = batch.call("agent.tools", ())?;
    let health = batch.call("agent.health", ())?;
    let results = batch.send().await?;
    Ok((
        results.get(describe)?,
        results.get(tools)?,
        results.get(health)?,
    ))
}

fn names(agents: &[Agent], keep: impl Fn(&Agent) -> bool) -> String {
    agents
        .iter()
        .filter(|a| keep(a))
        .map(|a| a.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
