//! A2A 1.0 objects in their JSON form: the protobuf JSON mapping of the specification's
//! `a2a.proto` (camelCase members, enums as their `TASK_STATE_...` / `ROLE_...` names, empty
//! members left out), which is what the official SDKs send and accept. As ProtoJSON parsers
//! do, every member is read under its original proto field name too (`history_length` as
//! well as `historyLength`): a filter sent either way is never silently dropped. Output is
//! always camelCase. As ProtoJSON parsers
//! do, every member is read under its original proto field name too (`history_length` as
//! well as `historyLength`): a filter sent either way is never silently dropped. Output is
//! always camelCase.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::security::{SecurityRequirement, SecurityScheme};

/// The protocol version this crate speaks, sent and checked in the `A2A-Version` header.
pub const PROTOCOL_VERSION: &str = "1.0";

/// Where a server publishes its Agent Card.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";

/// The `protocolBinding` of the JSON-RPC binding in a card's interfaces.
pub const JSONRPC_BINDING: &str = "JSONRPC";

fn is_false(b: &bool) -> bool {
    !*b
}

/// A task's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Default)]
pub enum TaskState {
    /// Not set (never sent by a server).
    #[default]
    #[serde(rename = "TASK_STATE_UNSPECIFIED")]
    Unspecified,
    /// Accepted, not started.
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    /// Running.
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    /// Done (final).
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    /// Ended in error (final).
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    /// Cancelled (final).
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    /// Waiting for the client's next message (interrupted).
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    /// Refused by the agent (final).
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    /// Waiting for authentication (interrupted).
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
}

impl TaskState {
    /// Completed, failed, canceled or rejected: nothing more happens to the task.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Input or authentication required: the task waits for the client.
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// Terminal or interrupted: a stream about the task ends after this state.
    pub fn ends_stream(self) -> bool {
        self.is_terminal() || self.is_interrupted()
    }
}

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
pub enum Role {
    /// Not set.
    #[default]
    #[serde(rename = "ROLE_UNSPECIFIED")]
    Unspecified,
    /// The client.
    #[serde(rename = "ROLE_USER")]
    User,
    /// The agent.
    #[serde(rename = "ROLE_AGENT")]
    Agent,
}

/// Reads a protobuf enum as its JSON mapping allows: by name or by number. An unknown name
/// or number is the unspecified value, as protobuf parsers that ignore unknown fields read it.
fn enum_value<'de, D: serde::Deserializer<'de>>(d: D, names: &[&str]) -> Result<usize, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(match v {
        Value::String(s) => names.iter().position(|n| *n == s).unwrap_or(0),
        Value::Number(n) => n
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n < names.len())
            .unwrap_or(0),
        _ => 0,
    })
}

const TASK_STATES: [TaskState; 9] = [
    TaskState::Unspecified,
    TaskState::Submitted,
    TaskState::Working,
    TaskState::Completed,
    TaskState::Failed,
    TaskState::Canceled,
    TaskState::InputRequired,
    TaskState::Rejected,
    TaskState::AuthRequired,
];

impl<'de> Deserialize<'de> for TaskState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const NAMES: [&str; 9] = [
            "TASK_STATE_UNSPECIFIED",
            "TASK_STATE_SUBMITTED",
            "TASK_STATE_WORKING",
            "TASK_STATE_COMPLETED",
            "TASK_STATE_FAILED",
            "TASK_STATE_CANCELED",
            "TASK_STATE_INPUT_REQUIRED",
            "TASK_STATE_REJECTED",
            "TASK_STATE_AUTH_REQUIRED",
        ];
        let i = enum_value(d, &NAMES)?;
        Ok(TASK_STATES.get(i).copied().unwrap_or_default())
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        const NAMES: [&str; 3] = ["ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"];
        Ok(match enum_value(d, &NAMES)? {
            1 => Role::User,
            2 => Role::Agent,
            _ => Role::Unspecified,
        })
    }
}

/// One piece of content: text, raw bytes (base64), a URL or structured data.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Part {
    /// Text content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Raw bytes, base64 encoded as in the protobuf JSON mapping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,
    /// A URL to the content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Structured content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Extension metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// A file name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub filename: String,
    /// The content's media type.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "media_type")]
    pub media_type: String,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part {
            text: Some(text.into()),
            ..Part::default()
        }
    }
}

/// A message between client and agent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// The sender's id for the message.
    #[serde(default)]
    #[serde(alias = "message_id")]
    pub message_id: String,
    /// The conversation it belongs to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// The task it continues or belongs to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// Who wrote it.
    #[serde(default)]
    pub role: Role,
    /// Its content.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Extension metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Extensions the message uses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Other tasks it refers to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "reference_task_ids")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// A message of one text part from `role`, with the id `message_id`.
    pub fn text(role: Role, message_id: impl Into<String>, text: impl Into<String>) -> Self {
        Message {
            message_id: message_id.into(),
            role,
            parts: vec![Part::text(text)],
            ..Message::default()
        }
    }

    /// The text of its text parts, joined with newlines.
    pub fn joined_text(&self) -> String {
        let texts: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|p| p.text.as_deref())
            .collect();
        texts.join("\n")
    }
}

/// A task's state at a moment.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state.
    #[serde(default)]
    pub state: TaskState,
    /// What the agent said with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// When (RFC 3339, UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// An output of a task.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Its id within the task.
    #[serde(default)]
    #[serde(alias = "artifact_id")]
    pub artifact_id: String,
    /// A name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// A description.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Its content.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Extension metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Extensions it uses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// A unit of work an agent does for a client.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Its id (chosen by the server).
    pub id: String,
    /// Its conversation.
    #[serde(default)]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// Where it is.
    #[serde(default)]
    pub status: TaskStatus,
    /// What it produced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// The messages exchanged about it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// Extension metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Who created it: the subject of the authenticated caller whose message started it
    /// (`None`: an anonymous caller). Only that caller gets, lists, cancels, continues or
    /// subscribes to an owned task; others are told it does not exist. Never sent on the
    /// wire: a [`TaskStore`](crate::TaskStore) that keeps tasks elsewhere must keep it too.
    #[serde(skip)]
    pub owner: Option<String>,
}

impl Task {
    /// Whether the caller `subject` (`None`: anonymous) may see this task: it owns it, or
    /// nobody does.
    pub fn visible_to(&self, subject: Option<&str>) -> bool {
        self.owner.is_none() || self.owner.as_deref() == subject
    }
}

/// A change of a task's state, sent on streams.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// Its conversation.
    #[serde(default)]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// The new status.
    #[serde(default)]
    pub status: TaskStatus,
    /// Extension metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A new or grown artifact, sent on streams.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    #[serde(alias = "task_id")]
    pub task_id: String,
    /// Its conversation.
    #[serde(default)]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// The artifact (or the chunk added to it).
    #[serde(default)]
    pub artifact: Artifact,
    /// True when the parts are added to an artifact of the same id.
    #[serde(default, skip_serializing_if = "is_false")]
    pub append: bool,
    /// True on an artifact's last chunk.
    #[serde(default, skip_serializing_if = "is_false")]
    #[serde(alias = "last_chunk")]
    pub last_chunk: bool,
    /// Extension metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// One event of a stream (`StreamResponse`): exactly one member is set on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// The task as it is.
    Task(Task),
    /// A direct message (the stream's only event).
    Message(Message),
    /// A status change.
    StatusUpdate(TaskStatusUpdateEvent),
    /// An artifact change.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl StreamResponse {
    /// The task state this event leaves its task in, when it says one.
    pub fn state(&self) -> Option<TaskState> {
        match self {
            StreamResponse::Task(t) => Some(t.status.state),
            StreamResponse::StatusUpdate(s) => Some(s.status.state),
            StreamResponse::Message(_) | StreamResponse::ArtifactUpdate(_) => None,
        }
    }

    /// True when a stream ends after this event: a message, or a terminal or interrupted
    /// state.
    pub fn ends_stream(&self) -> bool {
        matches!(self, StreamResponse::Message(_))
            || self.state().is_some_and(TaskState::ends_stream)
    }
}

/// The answer to `SendMessage`: a task or a direct message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
// One per answer, built and serialized once: boxing the task would add an allocation per call.
#[allow(clippy::large_enum_variant)]
pub enum SendMessageResponse {
    /// The task the message started or continued.
    Task(Task),
    /// A direct answer.
    Message(Message),
}

/// How a `SendMessage` is to be answered.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// Media types the client accepts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "accepted_output_modes")]
    pub accepted_output_modes: Vec<String>,
    /// The most history messages in the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    /// Answer as soon as the task exists instead of when it stops.
    #[serde(default, skip_serializing_if = "is_false")]
    #[serde(alias = "return_immediately")]
    pub return_immediately: bool,
    /// Push notifications for the task (with [`A2aServer::push_notifications`](crate::A2aServer::push_notifications)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "task_push_notification_config")]
    pub task_push_notification_config: Option<crate::push::config::TaskPushNotificationConfig>,
}

/// `SendMessage` / `SendStreamingMessage` parameters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// The tenant (unused here).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The message.
    pub message: Message,
    /// How to answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Extension metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `GetTask` parameters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    /// The tenant (unused here).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task.
    pub id: String,
    /// The most history messages in the answer (the latest ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
}

/// `CancelTask` and `SubscribeToTask` parameters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskIdRequest {
    /// The tenant (unused here).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The task.
    pub id: String,
    /// Extension metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// `ListTasks` parameters.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// The tenant (unused here).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// Only tasks of this conversation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "context_id")]
    pub context_id: String,
    /// Only tasks in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    /// The most tasks per page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "page_size")]
    pub page_size: Option<i32>,
    /// Where the page starts (from the previous page's `nextPageToken`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "page_token")]
    pub page_token: String,
    /// The most history messages per task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "history_length")]
    pub history_length: Option<i32>,
    /// Only tasks whose status changed after this time (RFC 3339, as a protobuf
    /// `Timestamp` is written in JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(alias = "status_timestamp_after")]
    pub status_timestamp_after: Option<String>,
    /// Include the tasks' artifacts.
    #[serde(default, skip_serializing_if = "is_false")]
    #[serde(alias = "include_artifacts")]
    pub include_artifacts: bool,
}

/// The answer to `ListTasks`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// The page's tasks, newest first.
    #[serde(default)]
    pub tasks: Vec<Task>,
    /// The token of the next page, empty on the last.
    #[serde(default)]
    #[serde(alias = "next_page_token")]
    pub next_page_token: String,
    /// The page size used.
    #[serde(default)]
    #[serde(alias = "page_size")]
    pub page_size: i32,
    /// How many tasks match.
    #[serde(default)]
    #[serde(alias = "total_size")]
    pub total_size: i32,
}

/// One way to reach the agent.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// The endpoint URL.
    pub url: String,
    /// `JSONRPC`, `HTTP+JSON` or `GRPC`.
    #[serde(alias = "protocol_binding")]
    pub protocol_binding: String,
    /// The tenant (unused here).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tenant: String,
    /// The A2A version spoken there.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "protocol_version")]
    pub protocol_version: String,
}

/// What the agent supports.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// `SendStreamingMessage` and `SubscribeToTask`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub streaming: bool,
    /// Push notifications.
    #[serde(default, skip_serializing_if = "is_false")]
    #[serde(alias = "push_notifications")]
    pub push_notifications: bool,
    /// Extensions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<Value>,
    /// `GetExtendedAgentCard`.
    #[serde(default, skip_serializing_if = "is_false")]
    #[serde(alias = "extended_agent_card")]
    pub extended_agent_card: bool,
}

/// One thing the agent can do.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// Keywords.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Example prompts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Input media types, when not the card's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "input_modes")]
    pub input_modes: Vec<String>,
    /// Output media types, when not the card's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "output_modes")]
    pub output_modes: Vec<String>,
}

/// An agent's self-description, served at [`AGENT_CARD_PATH`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// Its name.
    pub name: String,
    /// What it is.
    #[serde(default)]
    pub description: String,
    /// Where and how to reach it.
    #[serde(default)]
    #[serde(alias = "supported_interfaces")]
    pub supported_interfaces: Vec<AgentInterface>,
    /// The organisation behind it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<Value>,
    /// Its version.
    #[serde(default)]
    pub version: String,
    /// Documentation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "documentation_url")]
    pub documentation_url: String,
    /// What it supports.
    #[serde(default)]
    pub capabilities: AgentCapabilities,
    /// Media types it takes.
    #[serde(default)]
    #[serde(alias = "default_input_modes")]
    pub default_input_modes: Vec<String>,
    /// Media types it gives.
    #[serde(default)]
    #[serde(alias = "default_output_modes")]
    pub default_output_modes: Vec<String>,
    /// What it can do.
    #[serde(default)]
    pub skills: Vec<AgentSkill>,
    /// How callers authenticate, by scheme name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[serde(alias = "security_schemes")]
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// Which schemes a caller must use (any one of the requirements).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[serde(alias = "security_requirements")]
    pub security_requirements: Vec<SecurityRequirement>,
    /// Icon.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[serde(alias = "icon_url")]
    pub icon_url: String,
}

impl AgentCard {
    /// The URL of its JSON-RPC interface, if it has one.
    pub fn jsonrpc_url(&self) -> Option<&str> {
        self.supported_interfaces
            .iter()
            .find(|i| i.protocol_binding.eq_ignore_ascii_case(JSONRPC_BINDING))
            .map(|i| i.url.as_str())
    }
}

/// The current time in RFC 3339 (UTC, microseconds), as status timestamps carry it.
pub fn now_rfc3339() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60,
        now.subsec_micros()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_response_is_one_member() {
        let e = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Working,
                ..TaskStatus::default()
            },
            metadata: None,
        });
        let v = serde_json::to_value(&e).unwrap_or_default();
        assert_eq!(
            v,
            serde_json::json!({"statusUpdate": {"taskId": "t", "contextId": "c",
                "status": {"state": "TASK_STATE_WORKING"}}})
        );
    }

    #[test]
    fn enums_read_by_name_or_number() {
        let s: TaskState = serde_json::from_str("3").unwrap_or_default();
        assert_eq!(s, TaskState::Completed);
        let s: TaskState = serde_json::from_str("\"TASK_STATE_WORKING\"").unwrap_or_default();
        assert_eq!(s, TaskState::Working);
        let r: Role = serde_json::from_str("\"UNRECOGNIZED\"").unwrap_or(Role::User);
        assert_eq!(r, Role::Unspecified);
    }

    #[test]
    fn proto_field_names_are_read_too() {
        let read = |text: &str| serde_json::from_str::<ListTasksRequest>(text).unwrap_or_default();
        let snake = read(
            r#"{"context_id":"c","page_size":2,"history_length":0,"status_timestamp_after":"2026-01-01T00:00:00Z","include_artifacts":true}"#,
        );
        let camel = read(
            r#"{"contextId":"c","pageSize":2,"historyLength":0,"statusTimestampAfter":"2026-01-01T00:00:00Z","includeArtifacts":true}"#,
        );
        assert_eq!(snake, camel);
        assert_eq!(
            (snake.context_id.as_str(), snake.history_length),
            ("c", Some(0))
        );
        let get: GetTaskRequest =
            serde_json::from_str(r#"{"id":"t","history_length":1}"#).unwrap_or_default();
        assert_eq!(get.history_length, Some(1));
        // Written in camelCase only.
        let out = serde_json::to_string(&get).unwrap_or_default();
        assert_eq!(out, r#"{"id":"t","historyLength":1}"#);
    }

    #[test]
    fn timestamp_shape() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 27, "{t}");
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
    }
}
