//! `Connection::release`: an inbound request let go without an answer (MCP's rule for a
//! request its peer cancelled). Nothing is written for it, alone or in a batch; the rest of a
//! batch is still answered; a batch left with no reply sends nothing; a handle is released
//! once; the slot is free again.

use rpcwire::wire::RxBuffer;
use rpcwire::{Connection, Inbound, Input, Instant, RequestHandle, RespondError};
use rpcwire_tests::sent;

/// Feeds `bytes`; the handles of the requests that came, by method name.
fn requests(conn: &mut Connection, bytes: &[u8]) -> Vec<(String, RequestHandle)> {
    let mut rx: RxBuffer<[u8; 1024]> = conn.rx_buffer();
    let mut input = bytes;
    let mut seen = Vec::new();
    while let Input::Item(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut input) {
        if let Inbound::Request(r) = item {
            seen.push((r.method.to_string(), r.handle));
        }
    }
    seen
}

#[test]
fn a_released_request_is_not_answered_and_its_slot_is_free() {
    let mut conn: Connection = Connection::default();
    let got = requests(
        &mut conn,
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"b\"}\n",
    );
    assert_eq!(got.len(), 2);
    assert_eq!(conn.inflight_len(), 2);
    conn.release(got[0].1).unwrap();
    assert_eq!(conn.inflight_len(), 1);
    assert_eq!(sent(&mut conn), "");
    assert!(matches!(
        conn.release(got[0].1),
        Err(RespondError::UnknownHandle)
    ));
    assert!(matches!(
        conn.respond(got[0].1, &1),
        Err(RespondError::UnknownHandle)
    ));
    conn.respond(got[1].1, &2).unwrap();
    assert_eq!(
        sent(&mut conn),
        "{\"jsonrpc\":\"2.0\",\"result\":2,\"id\":2}\n"
    );
    assert_eq!(conn.inflight_len(), 0);
}

#[test]
fn a_batch_leaves_a_released_member_out() {
    let mut conn: Connection = Connection::default();
    let got = requests(
        &mut conn,
        b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"},{\"jsonrpc\":\"2.0\",\"method\":\"n\"},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"b\"},{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"c\"}]\n",
    );
    assert_eq!(got.len(), 3);
    conn.release(got[1].1).unwrap();
    conn.respond(got[2].1, &"c").unwrap();
    assert_eq!(sent(&mut conn), "", "the batch is not complete yet");
    conn.respond(got[0].1, &"a").unwrap();
    assert_eq!(
        sent(&mut conn),
        "[{\"jsonrpc\":\"2.0\",\"result\":\"c\",\"id\":3},{\"jsonrpc\":\"2.0\",\"result\":\"a\",\"id\":1}]\n"
    );
    assert_eq!(conn.inflight_len(), 0);
}

#[test]
fn a_batch_with_every_request_released_sends_nothing_and_the_next_is_answered() {
    let mut conn: Connection = Connection::default();
    let got = requests(
        &mut conn,
        b"[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"b\"}]\n",
    );
    for (_, h) in &got {
        conn.release(*h).unwrap();
    }
    assert_eq!(sent(&mut conn), "");
    assert_eq!(conn.inflight_len(), 0);
    let got = requests(
        &mut conn,
        b"[{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"c\"}]\n",
    );
    conn.respond(got[0].1, &3).unwrap();
    assert_eq!(
        sent(&mut conn),
        "[{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":3}]\n"
    );
}
