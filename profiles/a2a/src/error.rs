//! The A2A errors of the JSON-RPC binding: codes -32001 to -32009 beside JSON-RPC's own, each
//! sent with a `google.rpc.ErrorInfo` in `data` (reason, domain `a2a-protocol.org`, metadata),
//! as the SDKs send and read them. A handler's [`A2aError`] becomes the service layer's
//! [`RpcError`] (code, message, that `data`), which the dispatcher answers with.

use rpcwire_service::{ErrorCode, RpcError};
use serde::Serialize;
use serde_json::{Map, Value};

/// The `@type` of an `ErrorInfo` detail.
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// The domain of A2A's error reasons.
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// An error kind of the protocol, with its JSON-RPC code and `ErrorInfo` reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// -32001: no task of that id.
    TaskNotFound,
    /// -32002: the task is already in a final state.
    TaskNotCancelable,
    /// -32003: push notifications are not supported.
    PushNotificationNotSupported,
    /// -32004: the operation is not supported (or not in the task's state).
    UnsupportedOperation,
    /// -32005: a content type the agent does not take or give.
    ContentTypeNotSupported,
    /// -32006: the agent produced something invalid.
    InvalidAgentResponse,
    /// -32007: no extended Agent Card is configured.
    ExtendedAgentCardNotConfigured,
    /// -32008: the request must use an extension it does not declare.
    ExtensionSupportRequired,
    /// -32009: the `A2A-Version` asked for is not spoken here.
    VersionNotSupported,
    /// -32700: the body is not JSON.
    ParseError,
    /// -32600: not a valid request (a batch, say).
    InvalidRequest,
    /// -32601: no such method.
    MethodNotFound,
    /// -32602: the parameters do not fit the method.
    InvalidParams,
    /// -32603: the server failed.
    Internal,
}

impl ErrorKind {
    /// The JSON-RPC error code.
    pub fn code(self) -> i32 {
        match self {
            ErrorKind::TaskNotFound => -32001,
            ErrorKind::TaskNotCancelable => -32002,
            ErrorKind::PushNotificationNotSupported => -32003,
            ErrorKind::UnsupportedOperation => -32004,
            ErrorKind::ContentTypeNotSupported => -32005,
            ErrorKind::InvalidAgentResponse => -32006,
            ErrorKind::ExtendedAgentCardNotConfigured => -32007,
            ErrorKind::ExtensionSupportRequired => -32008,
            ErrorKind::VersionNotSupported => -32009,
            ErrorKind::ParseError => -32700,
            ErrorKind::InvalidRequest => -32600,
            ErrorKind::MethodNotFound => -32601,
            ErrorKind::InvalidParams => -32602,
            ErrorKind::Internal => -32603,
        }
    }

    /// The kind a code stands for (`None`: not one of the protocol's).
    pub fn from_code(code: i64) -> Option<Self> {
        use ErrorKind::*;
        [
            TaskNotFound,
            TaskNotCancelable,
            PushNotificationNotSupported,
            UnsupportedOperation,
            ContentTypeNotSupported,
            InvalidAgentResponse,
            ExtendedAgentCardNotConfigured,
            ExtensionSupportRequired,
            VersionNotSupported,
            ParseError,
            InvalidRequest,
            MethodNotFound,
            InvalidParams,
            Internal,
        ]
        .into_iter()
        .find(|k| i64::from(k.code()) == code)
    }

    /// The `ErrorInfo` reason.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorKind::TaskNotFound => "TASK_NOT_FOUND",
            ErrorKind::TaskNotCancelable => "TASK_NOT_CANCELABLE",
            ErrorKind::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            ErrorKind::UnsupportedOperation => "UNSUPPORTED_OPERATION",
            ErrorKind::ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            ErrorKind::InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            ErrorKind::ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            ErrorKind::ExtensionSupportRequired => "EXTENSION_SUPPORT_REQUIRED",
            ErrorKind::VersionNotSupported => "VERSION_NOT_SUPPORTED",
            ErrorKind::ParseError => "PARSE_ERROR",
            ErrorKind::InvalidRequest => "INVALID_REQUEST",
            ErrorKind::MethodNotFound => "METHOD_NOT_FOUND",
            ErrorKind::InvalidParams => "INVALID_PARAMS",
            ErrorKind::Internal => "INTERNAL",
        }
    }

    /// The message sent when there is nothing more specific to say.
    pub fn default_message(self) -> &'static str {
        match self {
            ErrorKind::TaskNotFound => "Task not found",
            ErrorKind::TaskNotCancelable => "Task cannot be canceled",
            ErrorKind::PushNotificationNotSupported => "Push Notification is not supported",
            ErrorKind::UnsupportedOperation => "This operation is not supported",
            ErrorKind::ContentTypeNotSupported => "Incompatible content types",
            ErrorKind::InvalidAgentResponse => "Invalid agent response",
            ErrorKind::ExtendedAgentCardNotConfigured => {
                "Authenticated Extended Card is not configured"
            }
            ErrorKind::ExtensionSupportRequired => "Extension support required",
            ErrorKind::VersionNotSupported => "Version not supported",
            ErrorKind::ParseError => "Parse error",
            ErrorKind::InvalidRequest => "Invalid Request",
            ErrorKind::MethodNotFound => "Method not found",
            ErrorKind::InvalidParams => "Invalid params",
            ErrorKind::Internal => "Internal error",
        }
    }
}

/// An error answered to a request: its kind and message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} ({})", kind.code())]
pub struct A2aError {
    /// What went wrong.
    pub kind: ErrorKind,
    /// What is said about it.
    pub message: String,
}

impl A2aError {
    /// An error of `kind` with its default message.
    pub fn new(kind: ErrorKind) -> Self {
        A2aError {
            kind,
            message: kind.default_message().to_owned(),
        }
    }

    /// An error of `kind` saying `message`.
    pub fn with_message(kind: ErrorKind, message: impl Into<String>) -> Self {
        A2aError {
            kind,
            message: message.into(),
        }
    }

    /// The JSON-RPC `error` object, `data` carrying the `ErrorInfo`.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(RpcError::from(self.clone())).unwrap_or_default()
    }

    /// The `data` of its error object: one `google.rpc.ErrorInfo`.
    pub(crate) fn details(&self) -> [ErrorInfo; 1] {
        [ErrorInfo {
            kind: ERROR_INFO_TYPE,
            reason: self.kind.reason(),
            domain: ERROR_DOMAIN,
            metadata: Map::new(),
        }]
    }
}

/// A `google.rpc.ErrorInfo` in its ProtoJSON form (`Any`'s `@type` beside the fields).
#[derive(Debug, Serialize)]
pub(crate) struct ErrorInfo {
    #[serde(rename = "@type")]
    kind: &'static str,
    reason: &'static str,
    domain: &'static str,
    metadata: Map<String, Value>,
}

/// What the dispatcher answers for a handler that failed with `error`.
impl From<A2aError> for RpcError {
    fn from(error: A2aError) -> Self {
        let details = error.details();
        RpcError::new(ErrorCode(error.kind.code()), error.message).with_data(&details)
    }
}

impl From<ErrorKind> for A2aError {
    fn from(kind: ErrorKind) -> Self {
        A2aError::new(kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_maps_back() {
        for code in (-32009..=-32001).chain([-32700, -32600, -32601, -32602, -32603]) {
            let kind = ErrorKind::from_code(code);
            assert_eq!(kind.map(|k| i64::from(k.code())), Some(code));
        }
        assert_eq!(ErrorKind::from_code(-32000), None);
    }

    #[test]
    fn error_info_shape() {
        let e = A2aError::new(ErrorKind::TaskNotFound).to_json();
        assert_eq!(e["code"], -32001);
        assert_eq!(e["data"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(e["data"][0]["@type"], ERROR_INFO_TYPE);
    }
}
