//! The limits of `Config` (`max_frame`, `max_pending`, `max_inflight`), each at its edge, on
//! heap storage (where they are what memory may grow to) and on inline storage (where they
//! cap the arrays lower).

use rpcwire::storage::{Heap, Inline, Slots, Storage};
use rpcwire::wire::{RxBuffer, NO_PARAMS};
use rpcwire::{
    Config, Connection, ErrorCode, Inbound, Input, Instant, Problem, RespondError, SendError, Token,
};
use rpcwire_tests::sent;

fn config() -> Config {
    Config {
        max_frame: 100,
        max_pending: 3,
        max_inflight: 2,
        ..Config::default()
    }
}

fn pending_limit<S: Storage>(mut conn: Connection<S>) {
    for t in 0..3 {
        conn.send_request(Instant::ZERO, Token(t), "m", NO_PARAMS, None)
            .unwrap();
    }
    assert_eq!(
        conn.send_request(Instant::ZERO, Token(9), "m", NO_PARAMS, None),
        Err(SendError::PendingFull)
    );
    assert_eq!(conn.pending_len(), 3);
    conn.cancel(Token(0)).unwrap();
    conn.send_request(Instant::ZERO, Token(9), "m", NO_PARAMS, None)
        .unwrap();
}

fn inflight_limit<S: Storage, B: Slots<u8>>(mut conn: Connection<S>, mut rx: RxBuffer<B>) {
    let mut input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1}\n\
        {\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":2}\n\
        {\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":3}\n";
    let mut open = Vec::new();
    let mut busy = Vec::new();
    while let Input::Item(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut input) {
        match item {
            Inbound::Request(req) => open.push(req.handle),
            Inbound::Problem(Problem::Busy(id)) => busy.push(id.raw().to_owned()),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((open.len(), busy), (2, vec!["3".to_owned()]));
    assert!(sent(&mut conn).contains("\"code\":-32001"));
    conn.respond(open[0], &1).unwrap();
    let mut again: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":4}\n";
    assert!(matches!(
        conn.handle_input(Instant::ZERO, &mut rx, &mut again),
        Input::Item(Inbound::Request(_))
    ));
}

fn frame_limit<S: Storage, B: Slots<u8>>(mut conn: Connection<S>, mut rx: RxBuffer<B>) {
    // Inbound: a line of exactly 100 bytes is a frame; 101 is too large.
    let at_limit = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"{}\",\"id\":1}}",
        "m".repeat(100 - 36)
    );
    assert_eq!(at_limit.len(), 100);
    let over = at_limit.replace("\"id\":1", "\"id\":12");
    let input = format!("{at_limit}\n{over}\n");
    let mut input = input.as_bytes();
    let mut seen = Vec::new();
    while let Input::Item(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut input) {
        seen.push(match item {
            Inbound::Request(req) => {
                conn.reject(req.handle, ErrorCode::METHOD_NOT_FOUND)
                    .unwrap();
                "request".to_owned()
            }
            Inbound::Problem(Problem::FrameTooLarge { len }) => format!("too large {len}"),
            other => panic!("unexpected {other:?}"),
        });
    }
    assert_eq!(seen, ["request", "too large 101"]);
    sent(&mut conn);
    // Outbound: a request whose frame would pass the limit is refused, nothing sent.
    let params = ["p".repeat(200)];
    assert!(matches!(
        conn.send_request(Instant::ZERO, Token(1), "m", Some(&params), None),
        Err(SendError::TooLarge { .. })
    ));
    assert_eq!(conn.pending_len(), 0);
    assert_eq!(sent(&mut conn), "");
}

#[test]
fn max_pending_on_heap_and_inline_storage() {
    pending_limit(Connection::<Heap>::new(config()));
    pending_limit(Connection::<Inline<4096, 2048, 16, 16>>::new(config()));
}

#[test]
fn max_inflight_on_heap_and_inline_storage() {
    let heap = Connection::<Heap>::new(config());
    let rx: RxBuffer<Vec<u8>> = heap.rx_buffer();
    inflight_limit(heap, rx);
    let inline = Connection::<Inline<4096, 2048, 16, 16>>::new(config());
    let rx: RxBuffer<[u8; 4096]> = inline.rx_buffer();
    inflight_limit(inline, rx);
}

#[test]
fn max_frame_on_heap_storage_both_ways() {
    let conn = Connection::<Heap>::new(config());
    let rx: RxBuffer<Vec<u8>> = conn.rx_buffer();
    frame_limit(conn, rx);
}

#[test]
fn a_response_larger_than_max_frame_is_answered_internal_error() {
    let mut conn = Connection::<Heap>::new(config());
    let mut rx: RxBuffer<Vec<u8>> = conn.rx_buffer();
    let mut input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":7}\n";
    let Input::Item(Inbound::Request(req)) = conn.handle_input(Instant::ZERO, &mut rx, &mut input)
    else {
        panic!("a request")
    };
    let big = "r".repeat(500);
    assert!(matches!(
        conn.respond(req.handle, &big),
        Err(RespondError::TooLarge { .. })
    ));
    let out = sent(&mut conn);
    assert!(
        out.contains("\"code\":-32603") && out.contains("\"id\":7"),
        "{out}"
    );
}

#[test]
fn an_answer_over_max_frame_is_refused_even_where_the_transmit_buffer_has_room() {
    // Growing storage grows its transmit buffer up to one frame of `max_frame` bytes with its
    // framing: after an answer near the limit is written out, the buffer keeps room for a
    // body a little over `max_frame`, which must still be refused (not written because it
    // happens to fit).
    let mut conn = Connection::<Heap>::new(config());
    let mut rx: RxBuffer<Vec<u8>> = conn.rx_buffer();
    let mut input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1}\n\
        {\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":2}\n";
    let mut handles = Vec::new();
    while let Input::Item(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut input) {
        if let Inbound::Request(req) = item {
            handles.push(req.handle);
        }
    }
    // `{"jsonrpc":"2.0","result":"..","id":1}`: 36 bytes around the string's 60.
    conn.respond(handles[0], &"a".repeat(60)).unwrap();
    let first = sent(&mut conn);
    assert!(first.len() > 90 && first.len() <= 101, "{first}");
    // 36 + 66 = 102 bytes of body: over `max_frame` (100), within what the buffer holds.
    assert!(matches!(
        conn.respond(handles[1], &"b".repeat(66)),
        Err(RespondError::TooLarge { .. })
    ));
    let out = sent(&mut conn);
    assert!(
        out.contains("\"code\":-32603") && out.contains("\"id\":2") && !out.contains("bbb"),
        "{out}"
    );
}
