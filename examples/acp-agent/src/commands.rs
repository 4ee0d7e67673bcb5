//! The prompts the example agent understands, each reported as a tool call:
//!
//! - `read PATH`: reads the file (through the editor's `fs/read_text_file` when it offers it,
//!   else from disk) and answers its line count;
//! - `write PATH TEXT`: asks permission, then writes TEXT to the file (through the editor's
//!   `fs/write_text_file` when it offers it, else to disk); refused in the `ask` mode;
//! - `long N`: a task of N steps that streams its progress and stops when the turn is
//!   cancelled;
//! - `ask QUESTION`: asks the user through the editor (`elicitation/create`, a form with one
//!   `answer` field) and says what came back;
//! - `run COMMAND ARGS..`: runs a command in the editor's terminal (`terminal/create`, then
//!   `wait_for_exit`, `output`, `release`), shown in the tool call; refused in the `ask` mode;
//! - `tools`: lists the tools of the MCP servers given in `session/new`;
//! - `tool NAME JSON`: calls that MCP tool with the JSON object as arguments;
//! - `mode`: says the session's mode;
//! - anything else: this list.

use std::time::Duration;

use rpcwire_acp::schema::{
    CreateElicitationRequest, ElicitationAction, ElicitationContentValue, ElicitationFormMode,
    ElicitationSchema, ElicitationSessionScope, PermissionOption, PermissionOptionKind, Plan,
    PlanEntry, PlanEntryPriority, PlanEntryStatus, RequestPermissionOutcome, SessionUpdate,
    StopReason, Terminal, ToolCall, ToolCallContent, ToolCallLocation, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use rpcwire_acp::{RpcError, SessionHandle};
use serde_json::Value;

/// The answer to a prompt the agent does not understand.
pub const HELP: &str = "I understand: `read PATH` (line count), `write PATH TEXT` (after asking), `long N` (N steps, cancellable), `ask QUESTION` (asks you), `run COMMAND ARGS` (in your terminal), `tools` and `tool NAME JSON` (the session's MCP servers), `mode`.";

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
    /// `ask QUESTION`.
    Ask { question: String },
    /// `run COMMAND ARGS..`.
    Run { command: String, args: Vec<String> },
    /// `tools`.
    Tools,
    /// `tool NAME JSON`.
    Tool { name: String, arguments: Value },
    /// `mode`.
    Mode,
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
            "ask" if !rest.is_empty() => Command::Ask {
                question: rest.to_owned(),
            },
            "run" if !rest.is_empty() => {
                let mut words = rest.split_whitespace().map(str::to_owned);
                let command = words.next().unwrap_or_default();
                Command::Run {
                    command,
                    args: words.collect(),
                }
            }
            "tools" if rest.is_empty() => Command::Tools,
            "tool" => {
                let (name, json) = rest.split_once(char::is_whitespace).unwrap_or((rest, "{}"));
                match serde_json::from_str::<Value>(json) {
                    Ok(arguments @ Value::Object(_)) if !name.is_empty() => Command::Tool {
                        name: name.to_owned(),
                        arguments,
                    },
                    _ => Command::Help,
                }
            }
            "mode" if rest.is_empty() => Command::Mode,
            _ => Command::Help,
        }
    }
}

fn text(s: impl Into<String>) -> Vec<ToolCallContent> {
    vec![ToolCallContent::from(s.into())]
}

/// One prompt turn: the session, the tool call's id, and how the session is set.
pub struct Turn<'a> {
    pub session: &'a SessionHandle,
    pub call: String,
    /// The `style` option is `shout`: answers in capitals.
    pub shout: bool,
    /// The mode is `code` (writes and commands allowed).
    pub code_mode: bool,
}

impl Turn<'_> {
    /// Says `text` (an agent message chunk) and ends the turn.
    pub async fn say(&self, text: String) -> Result<StopReason, RpcError> {
        self.message(text).await?;
        Ok(StopReason::EndTurn)
    }

    async fn message(&self, text: String) -> Result<(), RpcError> {
        let text = if self.shout {
            text.to_uppercase()
        } else {
            text
        };
        self.session.message(text).await?;
        Ok(())
    }

    async fn start(&self, call: ToolCall) -> Result<(), RpcError> {
        self.session.update(SessionUpdate::ToolCall(call)).await?;
        Ok(())
    }

    async fn progress(
        &self,
        status: ToolCallStatus,
        content: impl Into<String>,
    ) -> Result<(), RpcError> {
        self.update(
            ToolCallUpdateFields::new()
                .status(status)
                .content(text(content)),
        )
        .await
    }

    async fn update(&self, fields: ToolCallUpdateFields) -> Result<(), RpcError> {
        let update = ToolCallUpdate::new(self.call.clone(), fields);
        self.session
            .update(SessionUpdate::ToolCallUpdate(update))
            .await?;
        Ok(())
    }

    /// Ends a tool call: completed with `(progress, answer)` texts, or failed with the error.
    async fn conclude(
        &self,
        what: &str,
        outcome: Result<(String, String), String>,
    ) -> Result<StopReason, RpcError> {
        let (status, done, answer) = match outcome {
            Ok((done, answer)) => (ToolCallStatus::Completed, done, answer),
            Err(e) => (
                ToolCallStatus::Failed,
                format!("cannot {what}: {e}"),
                format!("cannot {what}: {e}"),
            ),
        };
        self.progress(status, done).await?;
        self.say(answer).await
    }

    /// Refuses what the `ask` mode does not allow.
    async fn refused(&self, what: &str) -> Result<StopReason, RpcError> {
        self.progress(ToolCallStatus::Failed, "refused in the ask mode")
            .await?;
        self.say(format!("not done: {what} is not allowed in the ask mode"))
            .await
    }

    /// `read PATH`.
    pub async fn read(&self, path: String) -> Result<StopReason, RpcError> {
        let started = ToolCall::new(self.call.clone(), format!("Read {path}"))
            .kind(ToolKind::Read)
            .status(ToolCallStatus::Pending)
            .locations(vec![ToolCallLocation::new(&path)]);
        self.start(started).await?;
        let via_client = self.session.client_capabilities().fs.read_text_file;
        let source = if via_client { "the editor" } else { "disk" };
        self.progress(ToolCallStatus::InProgress, format!("reading from {source}"))
            .await?;
        let content = if via_client {
            self.session
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
        self.conclude(&format!("read {path}"), outcome).await
    }

    /// `write PATH TEXT`: asks first.
    pub async fn write(&self, path: String, content: String) -> Result<StopReason, RpcError> {
        let started = ToolCall::new(self.call.clone(), format!("Write {path}"))
            .kind(ToolKind::Edit)
            .status(ToolCallStatus::Pending)
            .locations(vec![ToolCallLocation::new(&path)])
            .content(text(format!("{} bytes to write", content.len())));
        self.start(started).await?;
        if !self.code_mode {
            return self.refused("writing").await;
        }
        let ask = ToolCallUpdate::new(
            self.call.clone(),
            ToolCallUpdateFields::new().title(format!("Write {path}")),
        );
        let options = vec![
            PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
        ];
        let allowed = match self.session.request_permission(ask, options).await? {
            RequestPermissionOutcome::Selected(chosen) => &*chosen.option_id.0 == "allow",
            _ => {
                self.progress(ToolCallStatus::Failed, "cancelled").await?;
                return Ok(StopReason::Cancelled);
            }
        };
        if !allowed {
            self.progress(ToolCallStatus::Failed, "permission denied")
                .await?;
            return self
                .say(format!("not written: permission to write {path} denied"))
                .await;
        }
        self.progress(ToolCallStatus::InProgress, "writing").await?;
        let via_client = self.session.client_capabilities().fs.write_text_file;
        let written = if via_client {
            self.session
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
        self.conclude(&format!("write {path}"), outcome).await
    }

    /// `long N`: N steps of `step` each, a progress update per step, stopped by a cancellation.
    pub async fn long(&self, steps: u32, step: Duration) -> Result<StopReason, RpcError> {
        let plan = |status| {
            Plan::new(vec![PlanEntry::new(
                format!("run {steps} steps"),
                PlanEntryPriority::Medium,
                status,
            )])
        };
        self.session
            .update(SessionUpdate::Plan(plan(PlanEntryStatus::InProgress)))
            .await?;
        let started = ToolCall::new(self.call.clone(), format!("Long task ({steps} steps)"))
            .kind(ToolKind::Execute)
            .status(ToolCallStatus::InProgress);
        self.start(started).await?;
        for i in 1..=steps {
            tokio::select! {
                () = tokio::time::sleep(step) => {}
                () = self.session.cancelled() => {
                    tracing::debug!(step = i, "long task cancelled");
                    self.progress(ToolCallStatus::Failed, format!("cancelled at step {i}/{steps}")).await?;
                    return Ok(StopReason::Cancelled);
                }
            }
            self.progress(ToolCallStatus::InProgress, format!("step {i}/{steps}"))
                .await?;
        }
        self.progress(ToolCallStatus::Completed, format!("{steps} steps done"))
            .await?;
        self.session
            .update(SessionUpdate::Plan(plan(PlanEntryStatus::Completed)))
            .await?;
        self.say(format!("long task done: {steps} steps")).await
    }

    /// `ask QUESTION`: an elicitation form with one `answer` field.
    pub async fn ask(&self, question: String) -> Result<StopReason, RpcError> {
        let started = ToolCall::new(self.call.clone(), "Ask the user").kind(ToolKind::Think);
        self.start(started).await?;
        let scope = ElicitationSessionScope::new(self.session.session_id().clone())
            .tool_call_id(rpcwire_acp::schema::ToolCallId::new(self.call.clone()));
        let form = ElicitationFormMode::new(scope, ElicitationSchema::new().string("answer", true));
        let request = CreateElicitationRequest::new(form, question);
        let answer = match self.session.elicit(request).await {
            Ok(answer) => answer,
            Err(e) => return self.conclude("ask", Err(e.to_string())).await,
        };
        let said = match answer.action {
            ElicitationAction::Accept(accepted) => {
                match accepted.content.as_ref().and_then(|c| c.get("answer")) {
                    Some(ElicitationContentValue::String(s)) => format!("you answered: {s}"),
                    Some(other) => format!("you answered: {other:?}"),
                    None => "you answered nothing".to_owned(),
                }
            }
            ElicitationAction::Decline => "you declined to answer".to_owned(),
            ElicitationAction::Cancel => {
                self.progress(ToolCallStatus::Failed, "cancelled").await?;
                return Ok(StopReason::Cancelled);
            }
            _ => "an answer this agent does not know".to_owned(),
        };
        self.conclude("ask", Ok((said.clone(), said))).await
    }

    /// `run COMMAND ARGS..`: in the editor's terminal, shown in the tool call.
    pub async fn run(&self, command: String, args: Vec<String>) -> Result<StopReason, RpcError> {
        let title = format!("Run {command}");
        let started = ToolCall::new(self.call.clone(), title).kind(ToolKind::Execute);
        self.start(started).await?;
        if !self.code_mode {
            return self.refused("running commands").await;
        }
        let terminal = match self.session.create_terminal(command, args).await {
            Ok(t) => t,
            Err(e) => return self.conclude("run", Err(e.to_string())).await,
        };
        let shown = vec![ToolCallContent::Terminal(Terminal::new(
            terminal.id().clone(),
        ))];
        self.update(
            ToolCallUpdateFields::new()
                .status(ToolCallStatus::InProgress)
                .content(shown),
        )
        .await?;
        let exit = tokio::select! {
            exit = terminal.wait_for_exit() => exit,
            () = self.session.cancelled() => {
                let _ = terminal.kill().await;
                let _ = terminal.release().await;
                return Ok(StopReason::Cancelled);
            }
        };
        let output = terminal.output().await;
        let _ = terminal.release().await;
        let outcome = match (exit, output) {
            (Ok(exit), Ok(output)) => {
                let code = exit.exit_code.map_or("none".to_owned(), |c| c.to_string());
                let answer = format!("exit code {code}, output: {}", output.output.trim_end());
                Ok((format!("exit code {code}"), answer))
            }
            (Err(e), _) | (_, Err(e)) => Err(e.to_string()),
        };
        self.conclude("run", outcome).await
    }

    /// `tools`: the session's MCP tools.
    pub async fn tools(&self) -> Result<StopReason, RpcError> {
        let list: Vec<String> = self
            .session
            .mcp()
            .tools()
            .map(|(server, tool)| format!("{server}/{}", tool.name))
            .collect();
        if list.is_empty() {
            return self.say("no MCP tools in this session".to_owned()).await;
        }
        self.say(format!("MCP tools: {}", list.join(", "))).await
    }

    /// `tool NAME JSON`: calls the MCP tool (of the first server offering it).
    pub async fn tool(&self, name: String, arguments: Value) -> Result<StopReason, RpcError> {
        let started = ToolCall::new(self.call.clone(), format!("MCP tool {name}"))
            .kind(ToolKind::Other)
            .status(ToolCallStatus::InProgress)
            .raw_input(arguments.clone());
        self.start(started).await?;
        let mcp = self.session.mcp();
        let Some(server) = mcp.server_of(&name) else {
            return self
                .conclude(
                    &format!("call {name}"),
                    Err("no MCP server offers it".into()),
                )
                .await;
        };
        let outcome = match mcp.call_tool(server, &name, arguments).await {
            Ok(result) if result.is_error => Err(result.joined_text()),
            Ok(result) => {
                let text = result.joined_text();
                Ok((text.clone(), format!("{server}/{name}: {text}")))
            }
            Err(e) => Err(e.to_string()),
        };
        self.conclude(&format!("call {name}"), outcome).await
    }
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
        assert_eq!(
            Command::parse("ask your name?"),
            Command::Ask {
                question: "your name?".into()
            }
        );
        assert_eq!(
            Command::parse("run echo a b"),
            Command::Run {
                command: "echo".into(),
                args: vec!["a".into(), "b".into()]
            }
        );
        assert_eq!(
            Command::parse("tool add {\"a\": 1}"),
            Command::Tool {
                name: "add".into(),
                arguments: serde_json::json!({"a": 1})
            }
        );
        assert_eq!(Command::parse("tool add [1]"), Command::Help);
        assert_eq!(Command::parse("tools"), Command::Tools);
    }
}
