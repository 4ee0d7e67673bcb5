//! Inputs the fuzz template found, kept as tests.

use rpcwire_testkit::{Case, Frame, Harness, Id, Message};
use serde_json::json;

#[test]
fn a_form_feed_line_is_a_frame() {
    // examples/fuzz-template router_bytes: "<", a form feed and an invalid UTF-8 byte, one a
    // line, written 11 bytes at a time: three parse errors.
    let case = Case::from_fuzz_bytes(&[0x0b, b'<', b'\n', 0x0c, b'\n', 0xf6]);
    assert_eq!(
        Harness::new(rpcwire_cli::demo_router()).check(&case),
        Ok(())
    );
}

/// A string id whose JSON text is longer than the core stores (`MAX_STORED_ID_LEN` bytes,
/// quotes and escapes included): `len` bytes of text made of escaped control characters, as
/// the fuzz input had them.
fn long_id(len: usize) -> Id {
    // serde_json writes U+001B as the six bytes `\u001b`; two quotes around them.
    assert_eq!((len - 2) % 6, 0);
    Id::Str("\u{1b}".repeat((len - 2) / 6))
}

#[test]
fn an_id_longer_than_the_core_stores_is_an_invalid_request() {
    // examples/fuzz-template router_ops: a batch whose first member's string id is 15 escaped
    // ESC characters plus one more (92 bytes of text). The core answers such a request
    // Invalid Request at once (it cannot echo the id later from fixed storage), and inside a
    // batch with id null (the member's reply room is reserved before it is read).
    let request = |id: Id| Message::Request {
        method: "add".into(),
        params: Some(json!([1, 2])),
        id,
    };
    // 62 bytes fit the core's 64; 68 and the fuzz input's 92 do not.
    assert_eq!(rpcwire::wire::MAX_STORED_ID_LEN, 64);
    for len in [62, 68, 92] {
        let case = Case::new(vec![
            Frame::Batch(vec![request(long_id(len)), request(Id::Num(1))]),
            Frame::Single(request(long_id(len))),
            Frame::Batch(vec![Message::Json(format!(
                "{{\"jsonrpc\":\"1.0\",\"method\":\"add\",\"id\":{}}}",
                serde_json::to_string(&"\u{1b}".repeat((len - 2) / 6)).unwrap_or_default()
            ))]),
        ])
        .chunked(vec![7, 1, 13]);
        assert_eq!(
            Harness::new(rpcwire_cli::demo_router()).check(&case),
            Ok(()),
            "id text of {len} bytes"
        );
    }
}

#[test]
fn two_batches_answered_with_id_null_each_take_their_own_answer() {
    // Found by the demo proptest with a new seed: a batch holding a call with id null (answered
    // late) and a batch holding an invalid element (answered Invalid Request with id null at
    // once). The checker gave the early error to the first batch, whose call may be answered
    // with any error, and then found no batch for the call's result.
    let sleep = Message::Request {
        method: "sleep".into(),
        params: Some(json!({"ms": 1})),
        id: Id::Null,
    };
    let case = Case::new(vec![
        Frame::Batch(vec![sleep]),
        Frame::Batch(vec![Message::Json("[]".into())]),
    ]);
    assert_eq!(
        Harness::new(rpcwire_cli::demo_router()).check(&case),
        Ok(())
    );
}
