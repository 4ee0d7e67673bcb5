//! Errors with id `null` from the peer (its Parse error, Invalid Request, frame too large):
//! delivered as the answer of our request when it can only be about that one, reported as
//! `Problem::PeerError` otherwise. Never lost, never given to the wrong request.

use rpcwire::wire::{RxBuffer, NO_PARAMS};
use rpcwire::{Connection, Inbound, Input, Instant, Problem, Token};
use rpcwire_tests::sent;

const PEER_PARSE_ERROR: &[u8] =
    b"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700,\"message\":\"Parse error\"},\"id\":null}\n";

/// Feeds `bytes` and returns what the connection makes of them.
fn receive(conn: &mut Connection, bytes: &[u8]) -> Vec<String> {
    let mut rx: RxBuffer<[u8; 1024]> = conn.rx_buffer();
    let mut input = bytes;
    let mut seen = Vec::new();
    while let Input::Item(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut input) {
        seen.push(match item {
            Inbound::Response(r) => format!("response {} {:?}", r.token.0, r.outcome.map(|_| ())),
            Inbound::Problem(Problem::PeerError(e)) => format!("peer error {}", e.code.0),
            other => format!("{other:?}"),
        });
    }
    seen
}

#[test]
fn a_lone_request_gets_the_peers_null_error_at_once() {
    let mut conn: Connection = Connection::default();
    conn.send_request(Instant::ZERO, Token(1), "m", NO_PARAMS, None)
        .unwrap();
    sent(&mut conn);
    let seen = receive(&mut conn, PEER_PARSE_ERROR);
    assert_eq!(seen.len(), 1);
    assert!(seen[0].starts_with("response 1 Err"), "{seen:?}");
    assert_eq!(conn.pending_len(), 0);
    assert_eq!(conn.stats().peer_errors, 1);
}

#[test]
fn with_two_requests_waiting_the_error_is_reported_not_guessed() {
    let mut conn: Connection = Connection::default();
    for t in 1..=2 {
        conn.send_request(Instant::ZERO, Token(t), "m", NO_PARAMS, None)
            .unwrap();
    }
    sent(&mut conn);
    assert_eq!(receive(&mut conn, PEER_PARSE_ERROR), ["peer error -32700"]);
    assert_eq!(conn.pending_len(), 2);
}

#[test]
fn an_unconfirmed_notification_may_be_what_the_error_is_about() {
    let mut conn: Connection = Connection::default();
    conn.send_notification("note", NO_PARAMS).unwrap();
    conn.send_request(Instant::ZERO, Token(1), "m", NO_PARAMS, None)
        .unwrap();
    sent(&mut conn);
    assert_eq!(receive(&mut conn, PEER_PARSE_ERROR), ["peer error -32700"]);
    assert_eq!(conn.pending_len(), 1);
}

#[test]
fn once_the_peer_answers_a_later_request_the_notification_is_confirmed() {
    let mut conn: Connection = Connection::default();
    conn.send_notification("note", NO_PARAMS).unwrap();
    conn.send_request(Instant::ZERO, Token(1), "m", NO_PARAMS, None)
        .unwrap();
    conn.send_request(Instant::ZERO, Token(2), "m", NO_PARAMS, None)
        .unwrap();
    let wire = sent(&mut conn);
    // Answer the first request (its id as we sent it): the peer read past the notification.
    let first = wire.lines().nth(1).unwrap();
    let id = &first[first.find("\"id\":").unwrap() + 5..first.len() - 1];
    let answer = format!("{{\"jsonrpc\":\"2.0\",\"result\":1,\"id\":{id}}}\n");
    assert_eq!(receive(&mut conn, answer.as_bytes()), ["response 1 Ok(())"]);
    let seen = receive(&mut conn, PEER_PARSE_ERROR);
    assert!(seen[0].starts_with("response 2 Err"), "{seen:?}");
}
