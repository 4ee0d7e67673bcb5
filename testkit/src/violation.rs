//! What a harness reports when a service breaks the protocol.

/// A broken invariant: the first one a harness found in a case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Violation {
    /// The server wrote a frame that is not JSON.
    #[error("the server wrote a frame that is not JSON: {frame}")]
    NotJson {
        /// The frame (invalid UTF-8 replaced).
        frame: String,
    },
    /// The server wrote JSON that is not a valid JSON-RPC 2.0 response (or batch answer).
    #[error("the server wrote an invalid response ({reason}): {frame}")]
    InvalidResponse {
        /// What is wrong with it.
        reason: &'static str,
        /// The frame.
        frame: String,
    },
    /// A request was answered more than once.
    #[error("request id {id} answered more than once: {frame}")]
    AnsweredTwice {
        /// The id's JSON text.
        id: String,
        /// The extra answer.
        frame: String,
    },
    /// An answer nothing asked for: a notification answered, or an unknown id.
    #[error("an answer no request asked for (a notification answered?): {frame}")]
    Unexpected {
        /// The answer.
        frame: String,
    },
    /// The answer is not the error the specification requires.
    #[error("id {id}: expected error {expected}, got {frame}")]
    WrongAnswer {
        /// The id's JSON text.
        id: String,
        /// The error code (or codes) the specification requires.
        expected: String,
        /// The answer.
        frame: String,
    },
    /// A request was answered, but not as the method model says (a wrong result, a result
    /// where an error was due, another error code).
    #[error("id {id}: {call} should answer {expected}, got {frame}")]
    NotAsModelled {
        /// The id's JSON text.
        id: String,
        /// The call, as `method(params)`.
        call: String,
        /// What the model expects.
        expected: String,
        /// The answer.
        frame: String,
    },
    /// The case itself cannot test what it seems to: a request or notification built with
    /// params that are neither an array nor an object (`json!(null)`, say) is an Invalid
    /// Request the core answers itself, and no handler ever sees it. Build it without params
    /// ([`Message::request_without_params`](crate::Message::request_without_params)), or
    /// send hostile input on purpose as [`Message::Json`](crate::Message::Json) or
    /// [`Frame::Raw`](crate::Frame::Raw).
    #[error("vacuous case: {message} has params that are neither an array nor an object, so the core answers it Invalid Request and no handler sees it (send no params with Message::request_without_params, or hostile input as Message::Json)")]
    Vacuous {
        /// The message, as sent.
        message: String,
    },
    /// A batch was answered out of specification: split, merged, with answers missing or
    /// extra, or answered when it held only notifications.
    #[error(
        "batch answered out of specification: expected one array holding [{expected}], got {frame}"
    )]
    BatchMismatch {
        /// The answers the batch is owed.
        expected: String,
        /// What came instead.
        frame: String,
    },
    /// A request got no answer before the harness's stall timeout (in virtual time).
    #[error("no answer for {due} within the stall timeout")]
    Missing {
        /// The answer owed.
        due: String,
    },
    /// A handler panicked (the router answered Internal error, but a panic is a bug).
    #[error("a handler panicked: {message}")]
    Panic {
        /// The panic's message.
        message: String,
    },
    /// After the input ended and everything was answered, the server did not end.
    #[error("the server did not end after its input closed (stall)")]
    NoEnd,
    /// The server's connection ended with an error.
    #[error("the server's connection failed: {error}")]
    ServerFailed {
        /// The error.
        error: String,
    },
    /// After the case, the connection did not go back to its idle state and size.
    #[error("memory not back to idle: {detail}")]
    NotIdle {
        /// What is still held.
        detail: String,
    },
}
