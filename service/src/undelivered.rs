//! The answers a message's requests get when the message never reached a peer: a client
//! transport that learns so (a broker with no subscriber on the subject, a POST that failed)
//! hands them to its connection, so that each call ends at once with that error instead of
//! waiting for its deadline. The JSON-RPC rules (which members are requests, their ids kept
//! byte-exact, a batch answered with an array) are the core parser's, applied here once for
//! every transport.

use rpcwire::wire::{parse, Message, ParseLimits, Parsed};

use crate::error::RpcError;

/// The error answers to every request of `message` (one JSON text, as sent: a request, a
/// notification or a batch), `error` for each, shaped as a peer would have answered: a response
/// for a request, an array of them for a batch. `None` when it holds no request (nothing waits
/// for an answer) or is not a message at all.
///
/// ```
/// use rpcwire_service::{undelivered, ErrorCode, RpcError};
///
/// let error = RpcError::new(ErrorCode(-32098), "no responders");
/// let batch = br#"[{"jsonrpc":"2.0","method":"a","id":"x"},{"jsonrpc":"2.0","method":"b"}]"#;
/// assert_eq!(
///     undelivered(batch, &error).as_deref(),
///     Some(&br#"[{"jsonrpc":"2.0","error":{"code":-32098,"message":"no responders"},"id":"x"}]"#[..])
/// );
/// assert_eq!(undelivered(br#"{"jsonrpc":"2.0","method":"b"}"#, &error), None);
/// ```
pub fn undelivered(message: &[u8], error: &RpcError) -> Option<Vec<u8>> {
    let error = serde_json::to_string(error).ok()?;
    let answer = |id: &str| format!(r#"{{"jsonrpc":"2.0","error":{error},"id":{id}}}"#);
    match parse(message, ParseLimits::default()).ok()? {
        Parsed::Single(Ok(Message::Request(r))) => Some(answer(r.id.raw()).into_bytes()),
        Parsed::Batch(batch) => {
            let answers: Vec<String> = batch
                .iter()
                .filter_map(|element| match element {
                    Ok(Message::Request(r)) => Some(answer(r.id.raw())),
                    _ => None,
                })
                .collect();
            (!answers.is_empty()).then(|| format!("[{}]", answers.join(",")).into_bytes())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcwire::ErrorCode;

    #[test]
    fn each_request_is_answered_with_its_own_id_and_nothing_else_is() {
        let error = RpcError::new(ErrorCode(-32000), "gone");
        assert_eq!(
            undelivered(br#"{"jsonrpc":"2.0","method":"a","id":1.50}"#, &error).as_deref(),
            Some(&br#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"gone"},"id":1.50}"#[..])
        );
        let notes = br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]"#;
        assert_eq!(undelivered(notes, &error), None);
        assert_eq!(undelivered(b"not json", &error), None);
        assert_eq!(
            undelivered(br#"{"jsonrpc":"2.0","result":1,"id":1}"#, &error),
            None
        );
    }
}
