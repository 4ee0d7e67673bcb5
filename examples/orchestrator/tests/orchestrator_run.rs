//! Runs the orchestrator example end to end (three agent processes) and checks its output:
//! every agent's capability batch answered and collated, the killed agent reported, its task
//! completed by another agent, the task no live agent offers reported, a clean exit.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn orchestrator_collates_batches_survives_a_killed_agent_and_completes_the_task() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_orchestrator"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Bounded: the run takes well under a second; kill it if it hangs.
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the orchestrator did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stdout}\n{stderr}", out.status);
    let has = |needle: &str| {
        assert!(
            stdout.lines().any(|l| l.contains(needle)),
            "no line with {needle:?} in:\n{stdout}\n{stderr}"
        );
    };
    has("started 3 agents: alpha, beta, gamma");
    // The batch replies, collated: each agent's own name, tools and health in one round.
    has("batch alpha: 3 calls in one frame, replies collated by id: describe={name: alpha, role: text");
    has(r#"tools=["uppercase", "reverse"] health={status: ok"#);
    has("batch beta: 3 calls in one frame, replies collated by id: describe={name: beta, role: math");
    has(r#"tools=["sum", "word_count"] health={status: ok"#);
    has("batch gamma: 3 calls in one frame, replies collated by id: describe={name: gamma, role: math");
    has(r#"tools=["sum", "sort"] health={status: ok"#);
    // Each agent read exactly one batch (a line starting with `[`) before answering health:
    // the three calls went out as one frame.
    let batch_lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("batch ")).collect();
    assert_eq!(batch_lines.len(), 3, "{stdout}");
    for line in batch_lines {
        assert!(line.contains("batches_received: 1}"), "{line}");
    }
    has("capabilities: uppercase -> alpha; reverse -> alpha; sum -> beta, gamma; word_count -> beta; sort -> gamma");
    has(r#"task 1 completed by alpha: "HELLO AGENTS""#);
    has("task 2 completed by beta: 6");
    // The kill, reported; the task rerouted and completed by the other agent with the tool.
    has("halfway: killing agent beta");
    has("agent beta lost during task 3: connection closed");
    has("task 3 completed by gamma: 100");
    has("task 4 completed by gamma: [1,2,3]");
    has("task 5 (word_count): reported: no live agent offers word_count");
    has("done: 5 tasks, 4 completed, 1 reported; agents lost: beta");
    // In this order.
    let at = |needle: &str| stdout.find(needle).unwrap();
    assert!(
        at("halfway: killing") < at("agent beta lost")
            && at("agent beta lost") < at("task 3 completed by gamma")
    );
}
