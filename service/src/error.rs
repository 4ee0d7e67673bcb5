//! Error types: a JSON-RPC error object ([`RpcError`]) and why a call failed ([`CallError`]).

use std::fmt;

use rpcwire::wire::ErrorObject;
use rpcwire::{ErrorCode, SendError};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// A JSON-RPC error object: what a handler returns to fail a request, and what a call returns
/// when the peer answered with an error. Serializes as the object itself
/// (`{"code":..,"message":..,"data":..}`), with `data` kept byte-exact.
///
/// ```
/// use rpcwire_service::{ErrorCode, RpcError};
///
/// let e = RpcError::new(ErrorCode(-32000), "disk full").with_data(&serde_json::json!({"free": 0}));
/// assert_eq!(serde_json::to_string(&e)?, r#"{"code":-32000,"message":"disk full","data":{"free":0}}"#);
/// assert_eq!(e.error_code(), ErrorCode(-32000));
///
/// // In a handler, a failed call to the peer becomes the handler's error with `?`.
/// async fn relay(peer: &rpcwire_service::Client) -> Result<i64, RpcError> {
///     Ok(peer.call("subtract", [42, 23]).await?)
/// }
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RpcError {
    /// The error code.
    pub code: i32,
    /// A short description.
    pub message: String,
    /// Extra information, as raw JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Box<RawValue>>,
}

impl RpcError {
    /// An error with a code and message and no data.
    pub fn new(code: ErrorCode, message: impl fmt::Display) -> Self {
        RpcError {
            code: code.0,
            message: message.to_string(),
            data: None,
        }
    }

    /// An error with the code's standard message ("Invalid params", ...).
    pub fn standard(code: ErrorCode) -> Self {
        RpcError::new(code, code.message())
    }

    /// Invalid params (-32602) whose `data` explains what was wrong.
    pub fn invalid_params(detail: impl fmt::Display) -> Self {
        let detail = detail.to_string();
        let data = serde_json::value::to_raw_value(&detail).ok();
        RpcError {
            data,
            ..RpcError::standard(ErrorCode::INVALID_PARAMS)
        }
    }

    /// Internal error (-32603) whose `data` says what happened.
    pub fn internal(detail: impl fmt::Display) -> Self {
        let detail = detail.to_string();
        RpcError {
            data: serde_json::value::to_raw_value(&detail).ok(),
            ..RpcError::standard(ErrorCode::INTERNAL_ERROR)
        }
    }

    /// Sets `data` to any serializable value. It cannot fail: a value that does not serialize
    /// (a map with non-string keys, say) becomes the serializer's message, as a string.
    pub fn with_data<D: Serialize + ?Sized>(mut self, data: &D) -> Self {
        self.data = serde_json::value::to_raw_value(data)
            .or_else(|e| serde_json::value::to_raw_value(&format!("unserializable data: {e}")))
            .ok();
        self
    }

    /// The code as an [`ErrorCode`].
    pub fn error_code(&self) -> ErrorCode {
        ErrorCode(self.code)
    }

    /// Copies an error object received on the wire.
    pub(crate) fn from_wire(e: &ErrorObject<'_>) -> Self {
        RpcError {
            code: e.code.0,
            message: e.message.to_string_lossy(),
            data: e
                .data
                .and_then(|d| RawValue::from_string(d.as_str().to_owned()).ok()),
        }
    }
}

impl PartialEq for RpcError {
    fn eq(&self, other: &Self) -> bool {
        self.code == other.code
            && self.message == other.message
            && self.data.as_ref().map(|d| d.get()) == other.data.as_ref().map(|d| d.get())
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JSON-RPC error {}: {}", self.code, self.message)?;
        if let Some(data) = &self.data {
            write!(f, " (data: {})", data.get())?;
        }
        Ok(())
    }
}

impl std::error::Error for RpcError {}

/// A handler that calls the peer can return the call's failure with `?`: the peer's own error
/// object is passed on as is; a timeout, a closed connection or a decoding failure becomes
/// Internal error (-32603) whose `data` says which.
impl From<CallError> for RpcError {
    fn from(e: CallError) -> Self {
        match e {
            CallError::Rpc(e) => e,
            other => RpcError::internal(other),
        }
    }
}

/// Why a call, notification or batch did not produce a result.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    /// The peer answered with an error object.
    #[error(transparent)]
    Rpc(RpcError),
    /// No response arrived within the call's timeout.
    #[error("request timed out")]
    Timeout,
    /// The connection is closed (the peer closed it, it failed, or it was shut down) before a
    /// response arrived.
    #[error("connection closed")]
    Closed,
    /// The params could not be serialized.
    #[error("cannot serialize params: {0}")]
    Params(#[source] serde_json::Error),
    /// The params serialized to something other than an array, an object or `null` (none).
    #[error("params must serialize to a JSON array or object (or null for none)")]
    ParamsNotStructured,
    /// The result could not be deserialized into the requested type.
    #[error("cannot deserialize result: {0}")]
    Decode(#[source] serde_json::Error),
    /// The message can never fit the connection's transmit buffer, whose size is the
    /// largest frame ([`Config::max_frame`](rpcwire::Config::max_frame)).
    #[error("message of {required} bytes exceeds the largest frame (Config::max_frame)")]
    TooLarge {
        /// Bytes needed.
        required: usize,
    },
    /// A batch has more calls than the connection can have pending at once.
    #[error("batch of {calls} calls exceeds the pending-request capacity {capacity}")]
    BatchTooLarge {
        /// Calls in the batch.
        calls: usize,
        /// Pending-request capacity.
        capacity: usize,
    },
}

impl CallError {
    /// The peer's error object, when the peer answered with one.
    pub fn rpc(&self) -> Option<&RpcError> {
        match self {
            CallError::Rpc(e) => Some(e),
            _ => None,
        }
    }

    /// A copy of this error for a second reader (the serde errors inside are not `Clone`:
    /// they are copied as their message).
    pub(crate) fn duplicate(&self) -> Self {
        use serde::de::Error as _;
        match self {
            CallError::Rpc(e) => CallError::Rpc(e.clone()),
            CallError::Timeout => CallError::Timeout,
            CallError::Closed => CallError::Closed,
            CallError::Params(e) => CallError::Params(serde_json::Error::custom(e)),
            CallError::ParamsNotStructured => CallError::ParamsNotStructured,
            CallError::Decode(e) => CallError::Decode(serde_json::Error::custom(e)),
            CallError::TooLarge { required } => CallError::TooLarge {
                required: *required,
            },
            CallError::BatchTooLarge { calls, capacity } => CallError::BatchTooLarge {
                calls: *calls,
                capacity: *capacity,
            },
        }
    }

    pub(crate) fn from_send(e: SendError) -> Self {
        match e {
            SendError::TooLarge { required } => CallError::TooLarge { required },
            SendError::Serialize(_) => CallError::ParamsNotStructured,
            // PendingFull and WouldBlock are retried by the driver and never reach a caller.
            SendError::Closed | SendError::PendingFull | SendError::WouldBlock { .. } => {
                CallError::Closed
            }
        }
    }
}
