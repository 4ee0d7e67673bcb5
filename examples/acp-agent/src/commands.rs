//! The prompts the example agent understands, each reported as a tool call:
//!
//! - `read PATH`: reads the file (through the editor's `fs/read_text_file` when it offers it,
//!   else from disk) and answers its line count;
//! - `write PATH TEXT`: asks permission, then writes TEXT to the file (through the editor's
//!   `fs/write_text_file` when it offers it, else to disk);
//! - `long N`: a task of N steps that streams its progress and stops when the turn is
//!   cancelled;
//! - anything else: this list.

use std::time::Duration;

use rpcwire_acp::schema::{
    PermissionOption, PermissionOptionKind, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    RequestPermissionOutcome, SessionUpdate, StopReason, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use rpcwire_acp::{RpcError, SessionHandle};

/// The answer to a prompt the agent does not understand.
pub const HELP: &str = "I understand: `read PATH` (line count), `write PATH TEXT` (after asking), `long N` (N steps, cancellable).";

/// The most steps `long` takes (a bound on a peer-chosen loop).
pub const MAX_STEPS: u32 = 10_000;

/// A parsed prompt.
#[derive(Debug, PartialEq)]
pub enum Command {
    /// `read PATH`.
    Read { path: String },
    /// `write PATH TEXT`.
    Write { path: String, content: String },
    /// `long N`.
    Long { steps: u32 },
    /// Anything else.
    Help,
}

impl Command {
    /// Parses the prompt's text.
    pub fn parse(text: &str) -> Command {
        let text = text.trim();
        let (word, rest) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let rest = rest.trim_start();
        match word {
            "read" if !rest.is_empty() => Command::Read {
                path: rest.to_owned(),
            },
            "write" => match rest.split_once(char::is_whitespace) {
                Some((path, content)) => Command::Write {
                    path: path.to_owned(),
                    content: content.trim_start().to_owned(),
                },
                None => Command::Help,
            },
            "long" => match rest.parse::<u32>() {
                Ok(steps) if (1..=MAX_STEPS).contains(&steps) => Command::Long { steps },
                _ => Command::Help,
            },
            _ => Command::Help,
        }
    }
}

fn text(s: impl Into<String>) -> Vec<ToolCallContent> {
    vec![ToolCallContent::from(s.into())]
}

async fn progress(
    session: &SessionHandle,
    call: &str,
    status: ToolCallStatus,
    content: impl Into<String>,
) -> Result<(), RpcError> {
    let fields = ToolCallUpdateFields::new()
        .status(status)
        .content(text(content));
    session
        .update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            call.to_owned(),
            fields,
        )))
        .await?;
    Ok(())
}

/// Ends a file tool call: completed with `(progress, answer)` texts, or failed with the error.
async fn conclude(
    session: &SessionHandle,
    call: &str,
    path: &str,
    verb: &str,
    outcome: Result<(String, String), String>,
) -> Result<StopReason, RpcError> {
    let (status, done, answer) = match outcome {
        Ok((done, answer)) => (ToolCallStatus::Completed, done, answer),
        Err(e) => (
            ToolCallStatus::Failed,
            format!("cannot {verb}: {e}"),
            format!("cannot {verb} {path}: {e}"),
        ),
    };
    progress(session, call, status, done).await?;
    session.message(answer).await?;
    Ok(StopReason::EndTurn)
}

/// `read PATH`.
pub async fn read(
    session: &SessionHandle,
    call: String,
    path: String,
) -> Result<StopReason, RpcError> {
    let started = ToolCall::new(call.clone(), format!("Read {path}"))
        .kind(ToolKind::Read)
        .status(ToolCallStatus::Pending)
        .locations(vec![ToolCallLocation::new(&path)]);
    session.update(SessionUpdate::ToolCall(started)).await?;
    let via_client = session.client_capabilities().fs.read_text_file;
    let source = if via_client { "the editor" } else { "disk" };
    progress(
        session,
        &call,
        ToolCallStatus::InProgress,
        format!("reading from {source}"),
    )
    .await?;
    let content = if via_client {
        session
            .read_text_file(&path)
            .await
            .map_err(|e| e.to_string())
    } else {
        tokio::fs::read_to_string(&path)
            .await
            .map_err(|e| e.to_string())
    };
    let outcome = content.map(|content| {
        let lines = content.lines().count();
        (
            format!("{lines} lines (read from {source})"),
            format!("{path} has {lines} lines"),
        )
    });
    conclude(session, &call, &path, "read", outcome).await
}

/// `write PATH TEXT`: asks first.
pub async fn write(
    session: &SessionHandle,
    call: String,
    path: String,
    content: String,
) -> Result<StopReason, RpcError> {
    let started = ToolCall::new(call.clone(), format!("Write {path}"))
        .kind(ToolKind::Edit)
        .status(ToolCallStatus::Pending)
        .locations(vec![ToolCallLocation::new(&path)])
        .content(text(format!("{} bytes to write", content.len())));
    session.update(SessionUpdate::ToolCall(started)).await?;
    let ask = ToolCallUpdate::new(
        call.clone(),
        ToolCallUpdateFields::new().title(format!("Write {path}")),
    );
    let options = vec![
        PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
        PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
    ];
    let allowed = match session.request_permission(ask, options).await? {
        RequestPermissionOutcome::Selected(chosen) => &*chosen.option_id.0 == "allow",
        _ => {
            progress(session, &call, ToolCallStatus::Failed, "cancelled").await?;
            return Ok(StopReason::Cancelled);
        }
    };
    if !allowed {
        progress(session, &call, ToolCallStatus::Failed, "permission denied").await?;
        session
            .message(format!("not written: permission to write {path} denied"))
            .await?;
        return Ok(StopReason::EndTurn);
    }
    progress(session, &call, ToolCallStatus::InProgress, "writing").await?;
    let via_client = session.client_capabilities().fs.write_text_file;
    let written = if via_client {
        session
            .write_text_file(&path, content.as_str())
            .await
            .map_err(|e| e.to_string())
    } else {
        tokio::fs::write(&path, &content)
            .await
            .map_err(|e| e.to_string())
    };
    let target = if via_client { "the editor" } else { "disk" };
    let outcome = written.map(|()| {
        (
            format!("written to {target}"),
            format!("wrote {} bytes to {path}", content.len()),
        )
    });
    conclude(session, &call, &path, "write", outcome).await
}

/// `long N`: N steps of `step` each, a progress update per step, stopped by a cancellation.
pub async fn long(
    session: &SessionHandle,
    call: String,
    steps: u32,
    step: Duration,
) -> Result<StopReason, RpcError> {
    let plan = Plan::new(vec![PlanEntry::new(
        format!("run {steps} steps"),
        PlanEntryPriority::Medium,
        PlanEntryStatus::InProgress,
    )]);
    session.update(SessionUpdate::Plan(plan)).await?;
    let started = ToolCall::new(call.clone(), format!("Long task ({steps} steps)"))
        .kind(ToolKind::Execute)
        .status(ToolCallStatus::InProgress);
    session.update(SessionUpdate::ToolCall(started)).await?;
    for i in 1..=steps {
        tokio::select! {
            () = tokio::time::sleep(step) => {}
            () = session.cancelled() => {
                tracing::info!(step = i, "long task cancelled");
                progress(session, &call, ToolCallStatus::Failed, format!("cancelled at step {i}/{steps}")).await?;
                return Ok(StopReason::Cancelled);
            }
        }
        tracing::debug!(step = i, "long task step");
        progress(
            session,
            &call,
            ToolCallStatus::InProgress,
            format!("step {i}/{steps}"),
        )
        .await?;
    }
    progress(
        session,
        &call,
        ToolCallStatus::Completed,
        format!("{steps} steps done"),
    )
    .await?;
    let plan = Plan::new(vec![PlanEntry::new(
        format!("run {steps} steps"),
        PlanEntryPriority::Medium,
        PlanEntryStatus::Completed,
    )]);
    session.update(SessionUpdate::Plan(plan)).await?;
    session
        .message(format!("long task done: {steps} steps"))
        .await?;
    Ok(StopReason::EndTurn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_prompt_forms() {
        assert_eq!(
            Command::parse(" read /a b "),
            Command::Read {
                path: "/a b".into()
            }
        );
        assert_eq!(
            Command::parse("write /x hello world"),
            Command::Write {
                path: "/x".into(),
                content: "hello world".into()
            }
        );
        assert_eq!(Command::parse("long 3"), Command::Long { steps: 3 });
        assert_eq!(Command::parse("long 0"), Command::Help);
        assert_eq!(Command::parse("long 10001"), Command::Help);
        assert_eq!(Command::parse("write /x"), Command::Help);
        assert_eq!(Command::parse("read"), Command::Help);
        assert_eq!(Command::parse("hello"), Command::Help);
    }
}
