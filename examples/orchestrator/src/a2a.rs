//! The orchestrator over A2A as well: agents found by their Agent Cards over HTTP beside
//! agents spawned on stdio. Each is asked what it can do (an A2A agent's card lists its
//! skills; a stdio agent answers its capability batch), each task goes to an agent that can
//! do it, and an A2A task's streamed progress is printed as it comes.

use std::process::ExitCode;
use std::time::Duration;

use rpcwire_a2a::{A2aClient, Message, Role, StreamResponse, TaskState};
use rpcwire_tokio::{Builder, Client};
use serde_json::{json, Value};

use crate::{capabilities, say, CALL_TIMEOUT};

/// An agent and how it is reached.
enum Reach {
    A2a(Box<A2aClient>),
    Stdio(Client),
}

struct Found {
    name: String,
    can: Vec<String>,
    reach: Reach,
}

/// A task: what it needs, and its text (A2A) or input (stdio).
struct Job {
    id: usize,
    needs: String,
    text: String,
}

/// `--a2a URL ... [--stdio NAME ...] --task SKILL:TEXT ...`: finds the A2A agents by their
/// cards and spawns the stdio ones, then routes each task.
pub async fn run(exe: &std::path::Path, args: &[String]) -> ExitCode {
    let mut urls = Vec::new();
    let mut stdio = Vec::new();
    let mut jobs = Vec::new();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let Some(value) = it.next() else {
            eprintln!("orchestrator: {flag} needs a value");
            return ExitCode::from(2);
        };
        match flag.as_str() {
            "--a2a" => urls.push(value.clone()),
            "--stdio" => stdio.push(value.clone()),
            "--task" => {
                let (needs, text) = value.split_once(':').unwrap_or((value, ""));
                jobs.push(Job {
                    id: jobs.len() + 1,
                    needs: needs.to_owned(),
                    text: text.to_owned(),
                });
            }
            _ => {
                eprintln!("orchestrator: unknown option {flag}");
                return ExitCode::from(2);
            }
        }
    }

    let mut found = Vec::new();
    let mut children = Vec::new();
    for url in &urls {
        match A2aClient::discover(url).await {
            Ok(client) => {
                let card = client.card().cloned().unwrap_or_default();
                let skills: Vec<String> = card.skills.iter().map(|s| s.id.clone()).collect();
                say!(
                    "a2a agent {} at {url}: card read, skills {skills:?}, streaming {}",
                    card.name,
                    card.capabilities.streaming
                );
                found.push(Found {
                    name: card.name,
                    can: skills,
                    reach: Reach::A2a(Box::new(client)),
                });
            }
            Err(e) => say!("a2a agent at {url}: no card: {e}; not used"),
        }
    }
    for name in &stdio {
        let mut cmd = tokio::process::Command::new(exe);
        cmd.args(["--agent", name]);
        match Builder::new()
            .request_timeout(Some(CALL_TIMEOUT))
            .spawn_child(&mut cmd)
        {
            Ok((session, child)) => {
                let client = session.client().clone();
                match capabilities(client.clone()).await {
                    Ok((describe, tools, _)) => {
                        say!(
                            "stdio agent {} (pid {}): tools {tools:?}",
                            describe.name,
                            describe.pid
                        );
                        found.push(Found {
                            name: name.clone(),
                            can: tools,
                            reach: Reach::Stdio(client),
                        });
                    }
                    Err(e) => say!("stdio agent {name}: capabilities failed: {e}; not used"),
                }
                children.push((session, child));
            }
            Err(e) => say!("stdio agent {name}: cannot start: {e}"),
        }
    }

    let (mut completed, mut reported) = (0, 0);
    for job in &jobs {
        let Some(agent) = found.iter().find(|a| a.can.contains(&job.needs)) else {
            say!(
                "task {} ({}): reported: no agent can do {}",
                job.id,
                job.needs,
                job.needs
            );
            reported += 1;
            continue;
        };
        say!(
            "task {} ({}: {}) -> {}",
            job.id,
            job.needs,
            job.text,
            agent.name
        );
        let done = match &agent.reach {
            Reach::A2a(client) => stream_task(client, job, &agent.name).await,
            Reach::Stdio(client) => {
                let params = json!({"tool": job.needs, "input": job.text, "delay_ms": 0});
                match client.call::<_, Value>("task.run", params).await {
                    Ok(result) => {
                        say!("task {} completed by {}: {result}", job.id, agent.name);
                        true
                    }
                    Err(e) => {
                        say!("task {} failed on {}: {e}", job.id, agent.name);
                        false
                    }
                }
            }
        };
        if done {
            completed += 1;
        } else {
            reported += 1;
        }
    }

    for (session, mut child) in children {
        let _ = tokio::time::timeout(Duration::from_secs(2), session.join()).await;
        if tokio::time::timeout(Duration::from_secs(2), child.wait())
            .await
            .is_err()
        {
            let _ = child.kill().await;
        }
    }
    say!(
        "done: {} tasks, {completed} completed, {reported} reported",
        jobs.len()
    );
    ExitCode::SUCCESS
}

/// Hands `job` to an A2A agent with `SendStreamingMessage` and prints its progress; true
/// when it completed.
async fn stream_task(client: &A2aClient, job: &Job, name: &str) -> bool {
    let message = Message::text(Role::User, format!("job-{}", job.id), job.text.clone());
    let mut stream = match client.send_streaming(message).await {
        Ok(s) => s,
        Err(e) => {
            say!("task {} failed on {name}: {e}", job.id);
            return false;
        }
    };
    let mut output = Vec::new();
    let mut state = TaskState::Unspecified;
    while let Some(event) = stream.next().await {
        match event {
            Ok(StreamResponse::Task(t)) => {
                say!("task {} progress: {name} accepted it as {}", job.id, t.id);
            }
            Ok(StreamResponse::StatusUpdate(s)) => {
                state = s.status.state;
                let text = s
                    .status
                    .message
                    .map(|m| m.joined_text())
                    .unwrap_or_default();
                say!("task {} progress: {state:?} {text}", job.id);
            }
            Ok(StreamResponse::ArtifactUpdate(a)) => {
                let text: Vec<_> = a
                    .artifact
                    .parts
                    .iter()
                    .filter_map(|p| p.text.clone())
                    .collect();
                say!(
                    "task {} progress: artifact {} += {}",
                    job.id,
                    a.artifact.artifact_id,
                    text.join("")
                );
                output.extend(text);
            }
            Ok(StreamResponse::Message(m)) => {
                output.push(m.joined_text());
                state = TaskState::Completed;
            }
            Err(e) => {
                say!("task {} stream failed: {e}", job.id);
                return false;
            }
        }
    }
    if state == TaskState::Completed {
        say!("task {} completed by {name}: {}", job.id, output.join(" "));
        true
    } else {
        say!("task {} ended {state:?} on {name}", job.id);
        false
    }
}
