//! Runs the orchestrator against two A2A agents (served in this test by `rpcwire-a2a`, each
//! with its own skills) and one stdio agent it spawns, and checks its output: the cards read,
//! the stdio agent's capabilities, each task handed to the agent that can do it, the A2A
//! task's progress streamed, the task nobody can do reported.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use rpcwire_a2a::{
    A2aServer, AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Artifact, Chunk, Part,
    TaskContext,
};

async fn agent(name: &str, skills: &[&str]) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let card = AgentCard {
        name: name.into(),
        supported_interfaces: vec![AgentInterface {
            url: format!("{base}/"),
            protocol_binding: "JSONRPC".into(),
            protocol_version: "1.0".into(),
            ..AgentInterface::default()
        }],
        capabilities: AgentCapabilities {
            streaming: true,
            ..AgentCapabilities::default()
        },
        skills: skills
            .iter()
            .map(|s| AgentSkill {
                id: (*s).into(),
                name: (*s).into(),
                ..AgentSkill::default()
            })
            .collect(),
        ..AgentCard::default()
    };
    let service = A2aServer::new(card, |ctx: TaskContext| async move {
        let text = ctx.text();
        let mut words = text.split_whitespace();
        match words.next() {
            Some("count") => {
                let n: u32 = words.next().and_then(|w| w.parse().ok()).unwrap_or(1);
                for i in 1..=n {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    ctx.working(Some(&format!("step {i}/{n}")));
                    let chunk = Artifact {
                        artifact_id: "count".into(),
                        parts: vec![Part::text(i.to_string())],
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
                ctx.complete(None);
            }
            _ => {
                ctx.text_artifact("echo", text.trim_start_matches("echo ").to_owned());
                ctx.complete(None);
            }
        }
    })
    .build();
    tokio::spawn(rpcwire_a2a::serve(listener, service));
    base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orchestrator_routes_to_a2a_and_stdio_agents() {
    let counter = agent("counter", &["count"]).await;
    let echoer = agent("echoer", &["echo"]).await;
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_orchestrator"))
            .args(["--a2a", &counter, "--a2a", &echoer, "--stdio", "alpha"])
            .args(["--task", "count:count 3", "--task", "echo:echo hi"])
            .args(["--task", "uppercase:shout", "--task", "translate:bonjour"])
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the orchestrator finished in time")
    .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stdout}\n{stderr}", out.status);
    let has = |needle: &str| {
        assert!(
            stdout.lines().any(|l| l.contains(needle)),
            "no line with {needle:?} in:\n{stdout}\n{stderr}"
        );
    };
    has(&format!(
        r#"a2a agent counter at {counter}: card read, skills ["count"], streaming true"#
    ));
    has(&format!(
        r#"a2a agent echoer at {echoer}: card read, skills ["echo"], streaming true"#
    ));
    has(r#"stdio agent alpha (pid "#);
    has(r#"tools ["uppercase", "reverse"]"#);
    has("task 1 (count: count 3) -> counter");
    has("task 1 progress: counter accepted it as task-");
    has("task 1 progress: Working step 1/3");
    has("task 1 progress: artifact count += 3");
    has("task 1 progress: Completed");
    has("task 1 completed by counter: 1 2 3");
    has("task 2 (echo: echo hi) -> echoer");
    has("task 2 completed by echoer: hi");
    has("task 3 (uppercase: shout) -> alpha");
    has(r#"task 3 completed by alpha: "SHOUT""#);
    has("task 4 (translate): reported: no agent can do translate");
    has("done: 4 tasks, 3 completed, 1 reported");
    // Progress comes in order, before the completion.
    let at = |needle: &str| stdout.find(needle).unwrap();
    assert!(at("step 1/3") < at("step 2/3") && at("step 3/3") < at("task 1 completed"));
}
