//! Every limit at its edge: at the limit it works; over it, the documented error, and the
//! connection keeps working where the framing can resynchronise.

use core::time::Duration;
use rpcwire::storage::Inline;
use rpcwire::Input;

use rpcwire::wire::{Framing, RxBuffer, NO_PARAMS};
use rpcwire::{
    Config, Connection, Event, Failure, Inbound, Instant, Output, Problem, RespondError, SendError,
    Token,
};
use serde_json::{json, Value};

type Conn<const TX: usize, const B: usize, const P: usize, const I: usize> =
    Connection<Inline<TX, B, P, I>>;

/// Feeds bytes, collecting every inbound item as a debug string and answering requests with
/// the demo service when `answer` is set; returns (items, transmitted lines as JSON).
fn feed<const TX: usize, const B: usize, const P: usize, const I: usize, const N: usize>(
    conn: &mut Conn<TX, B, P, I>,
    rx: &mut RxBuffer<[u8; N]>,
    bytes: &[u8],
    answer: bool,
) -> (Vec<String>, Vec<Value>) {
    let mut items = Vec::new();
    let mut out = Vec::new();
    let mut input = bytes;
    for _ in 0..10_000 {
        while let Input::Item(item) = conn.handle_input(Instant::ZERO, rx, &mut input) {
            items.push(format!("{item:?}"));
            if answer {
                if let Inbound::Request(req) = item {
                    rpcwire_demo::answer(conn, &req).unwrap();
                }
            }
        }
        while let Output::Transmit(b) = conn.poll_output() {
            out.extend_from_slice(b);
            let n = b.len();
            conn.advance_transmit(n);
        }
        if input.is_empty() && !conn.is_input_blocked() {
            break;
        }
    }
    let lines = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (items, lines)
}

fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id}).to_string()
}

#[test]
fn line_frame_length_edge() {
    let mut conn: Connection = Connection::default();
    let echo = request(1, "echo", json!(["x"]));
    let max = echo.len();
    let mut rx = RxBuffer::<[u8; 256]>::with_max_frame(Framing::Line, max);
    // Exactly at the limit (with \r\n, which is not part of the frame).
    let (_, out) = feed(&mut conn, &mut rx, format!("{echo}\r\n").as_bytes(), true);
    assert_eq!(out, [json!({"jsonrpc":"2.0","result":["x"],"id":1})]);
    // One byte over, then a valid request: the long line is answered and skipped.
    let over = request(2, "echo", json!(["xy"]));
    assert_eq!(over.len(), max + 1);
    let (items, out) = feed(
        &mut conn,
        &mut rx,
        format!("{over}\n{echo}\n").as_bytes(),
        true,
    );
    assert!(items[0].contains("FrameTooLarge"), "{items:?}");
    assert_eq!(
        out,
        [
            json!({"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request","data":"frame too large"},"id":null}),
            json!({"jsonrpc":"2.0","result":["x"],"id":1}),
        ]
    );
    assert_eq!(conn.stats().oversize_frames, 1);
}

#[test]
fn line_longer_than_the_buffer_is_skipped_across_reads() {
    let mut conn: Connection = Connection::default();
    let mut rx = RxBuffer::<[u8; 128]>::new(Framing::Line);
    let mut stream = vec![b'['; 100_000];
    stream.push(b'\n');
    stream.extend_from_slice(request(5, "sum", json!([1, 2])).as_bytes());
    stream.push(b'\n');
    let mut items = Vec::new();
    let mut lines = Vec::new();
    for chunk in stream.chunks(37) {
        let (i, o) = feed(&mut conn, &mut rx, chunk, true);
        items.extend(i);
        lines.extend(o);
    }
    assert_eq!(
        items.iter().filter(|i| i.contains("FrameTooLarge")).count(),
        1,
        "{items:?}"
    );
    assert_eq!(
        lines.last().unwrap(),
        &json!({"jsonrpc":"2.0","result":3,"id":5})
    );
}

#[test]
fn content_length_edge_and_hostile_length() {
    let mut conn: Connection = Connection::new(Config::with_framing(Framing::ContentLength));
    let body = request(1, "sum", json!([1, 2, 3]));
    let mut rx = RxBuffer::<[u8; 512]>::with_max_frame(Framing::ContentLength, body.len());
    let frame = |b: &str| format!("Content-Length: {}\r\n\r\n{b}", b.len());
    let mut out = Vec::new();
    let mut input = frame(&body);
    // Over the limit by one, a header claiming 2^60 bytes (skipped by counting, never
    // buffered), a header with garbage, then a valid frame.
    let over = format!("{body} ");
    input.push_str(&frame(&over));
    input.push_str("Content-Length: 1152921504606846976\r\n\r\n");
    let mut items = Vec::new();
    let mut feed_cl = |bytes: &[u8], items: &mut Vec<String>| {
        let mut input = bytes;
        while let Input::Item(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut input) {
            items.push(format!("{item:?}"));
            if let Inbound::Request(req) = item {
                rpcwire_demo::answer(&mut conn, &req).unwrap();
            }
        }
        while let Output::Transmit(b) = conn.poll_output() {
            out.extend_from_slice(b);
            let n = b.len();
            conn.advance_transmit(n);
        }
    };
    feed_cl(input.as_bytes(), &mut items);
    assert!(items[0].contains("Request"), "{items:?}");
    assert!(items[1].contains("FrameTooLarge"), "{items:?}");
    assert!(
        items[2].contains("FrameTooLarge { len: 1152921504606846976 }"),
        "{items:?}"
    );
    assert_eq!(items.len(), 3);
    let _ = out;
}

#[test]
fn nesting_depth_edge() {
    let config = Config {
        max_depth: 8,
        ..Config::default()
    };
    let mut conn: Connection = Connection::new(config);
    let mut rx = RxBuffer::<[u8; 4096]>::new(Framing::Line);
    // The frame object is depth 1, params array 2, so 6 more levels reach exactly 8.
    let nested = |levels: usize| format!("{}1{}", "[".repeat(levels), "]".repeat(levels));
    let at = format!(
        r#"{{"jsonrpc":"2.0","method":"echo","params":[{}],"id":1}}"#,
        nested(6)
    );
    let over = format!(
        r#"{{"jsonrpc":"2.0","method":"echo","params":[{}],"id":2}}"#,
        nested(7)
    );
    let (items, out) = feed(
        &mut conn,
        &mut rx,
        format!("{at}\n{over}\n{at}\n").as_bytes(),
        true,
    );
    assert!(items[1].contains("TooDeep"), "{items:?}");
    assert_eq!(out.len(), 3);
    assert_eq!(out[0]["id"], 1);
    assert_eq!(out[1]["error"]["code"], -32700);
    assert_eq!(out[2]["id"], 1);
    // 10 000 levels: rejected without recursion, connection intact.
    let deep = format!("{}\n{at}\n", "[".repeat(10_000));
    let mut rx = RxBuffer::<[u8; 32768]>::new(Framing::Line);
    let (_, out) = feed(&mut conn, &mut rx, deep.as_bytes(), true);
    assert_eq!(out[0]["error"]["code"], -32700);
    assert_eq!(out[1]["result"], json!([[[[[[[1]]]]]]]));
}

#[test]
fn pending_table_edge() {
    let mut conn: Conn<4096, 2048, 4, 4> = Connection::default();
    for t in 0..4 {
        conn.send_request(Instant::ZERO, Token(t), "ping", NO_PARAMS, None)
            .unwrap();
    }
    assert_eq!(
        conn.send_request(Instant::ZERO, Token(9), "ping", NO_PARAMS, None),
        Err(SendError::PendingFull)
    );
    assert_eq!(conn.pending_len(), 4);
    // Answer the first request: a slot frees up.
    let sent = String::from_utf8(conn.poll_transmit().to_vec()).unwrap();
    let n = sent.len();
    conn.advance_transmit(n);
    let first: Value = serde_json::from_str(sent.lines().next().unwrap()).unwrap();
    let reply = format!(
        "{}\n",
        json!({"jsonrpc":"2.0","result":"pong","id":first["id"]})
    );
    let mut rx = RxBuffer::<[u8; 1024]>::new(Framing::Line);
    let (items, _) = feed(&mut conn, &mut rx, reply.as_bytes(), false);
    assert!(
        items[0].contains("Response") && items[0].contains("Token(0)"),
        "{items:?}"
    );
    conn.send_request(Instant::ZERO, Token(9), "ping", NO_PARAMS, None)
        .unwrap();
}

#[test]
fn inflight_table_edge() {
    let mut conn: Conn<4096, 2048, 4, 2> = Connection::default();
    let mut rx = RxBuffer::<[u8; 1024]>::new(Framing::Line);
    let three = format!(
        "{}\n{}\n{}\n",
        request(1, "sum", json!([1])),
        request(2, "sum", json!([2])),
        request(3, "sum", json!([3]))
    );
    let (items, out) = feed(&mut conn, &mut rx, three.as_bytes(), false);
    assert!(items[0].starts_with("Request") && items[1].starts_with("Request"));
    assert!(items[2].contains("Busy"), "{items:?}");
    assert_eq!(
        out,
        [json!({"jsonrpc":"2.0","error":{"code":-32001,"message":"Server busy"},"id":3})]
    );
    assert_eq!(conn.inflight_len(), 2);
    assert_eq!(conn.stats().busy_rejections, 1);
}

#[test]
fn batch_length_edge() {
    let config = Config {
        max_batch_len: 3,
        ..Config::default()
    };
    let mut conn: Connection = Connection::new(config);
    let mut rx = RxBuffer::<[u8; 4096]>::new(Framing::Line);
    let batch = |n: u64| {
        let items: Vec<Value> = (0..n)
            .map(|i| json!({"jsonrpc":"2.0","method":"sum","params":[i],"id":i}))
            .collect();
        format!("{}\n", Value::Array(items))
    };
    let (_, out) = feed(&mut conn, &mut rx, batch(3).as_bytes(), true);
    assert_eq!(out[0].as_array().unwrap().len(), 3);
    let (items, out) = feed(
        &mut conn,
        &mut rx,
        format!("{}{}", batch(4), batch(1)).as_bytes(),
        true,
    );
    assert!(items[0].contains("BatchTooLarge"), "{items:?}");
    assert_eq!(
        out[0],
        json!({"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request","data":"batch too large"},"id":null})
    );
    assert_eq!(out[1], json!([{"jsonrpc":"2.0","result":0,"id":0}]));
}

#[test]
fn batch_reply_buffer_edge() {
    // 512 bytes of batch reply room: a batch whose worst-case reply cannot fit is refused
    // whole; a member whose real answer is too large gets Internal error, the others theirs.
    let mut conn: Conn<1024, 512, 4, 8> = Connection::default();
    let mut rx = RxBuffer::<[u8; 4096]>::new(Framing::Line);
    let items: Vec<Value> = (0..5)
        .map(|i| json!({"jsonrpc":"2.0","method":"echo","params":[i],"id":i}))
        .collect();
    let (got, out) = feed(
        &mut conn,
        &mut rx,
        format!("{}\n", Value::Array(items)).as_bytes(),
        true,
    );
    assert!(got[0].contains("BatchTooLarge"), "{got:?}");
    assert_eq!(out[0]["error"]["data"], "batch too large");

    let items = json!([
        {"jsonrpc":"2.0","method":"echo","params":["a"],"id":1},
        {"jsonrpc":"2.0","method":"echo","params":["z".repeat(600)],"id":2}
    ]);
    let mut input = format!("{items}\n");
    let mut results = Vec::new();
    let mut bytes = input.as_bytes();
    while let Input::Item(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut bytes) {
        if let Inbound::Request(req) = item {
            results.push(rpcwire_demo::answer(&mut conn, &req));
        }
    }
    assert_eq!(results[0], Ok(()));
    assert!(
        matches!(results[1], Err(RespondError::TooLarge { .. })),
        "{results:?}"
    );
    let sent = String::from_utf8(conn.poll_transmit().to_vec()).unwrap();
    let reply: Value = serde_json::from_str(sent.trim_end()).unwrap();
    assert_eq!(
        reply,
        json!([
            {"jsonrpc":"2.0","result":["a"],"id":1},
            {"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":2}
        ])
    );
    input.clear();
}

#[test]
fn transmit_buffer_backpressure() {
    // A 256-byte transmit buffer: answers that do not fit now wait (WouldBlock) and input is
    // held back (never dropped) until the caller drains.
    let mut conn: Conn<256, 64, 4, 8> = Connection::default();
    let mut rx = RxBuffer::<[u8; 4096]>::new(Framing::Line);
    let mut stream = String::new();
    for i in 0..20 {
        stream.push_str("{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":1}\n"); // invalid params
        stream.push_str(&request(i, "get_data", json!([])));
        stream.push('\n');
    }
    let mut input = stream.as_bytes();
    let mut out = Vec::new();
    let mut blocked_seen = false;
    for _ in 0..1000 {
        while let Input::Item(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut input) {
            if let Inbound::Request(req) = item {
                loop {
                    match rpcwire_demo::answer(&mut conn, &req) {
                        Ok(()) => break,
                        Err(RespondError::WouldBlock { .. }) => {
                            blocked_seen = true;
                            let b = conn.poll_transmit();
                            out.extend_from_slice(b);
                            let n = b.len();
                            conn.advance_transmit(n);
                        }
                        Err(e) => panic!("{e:?}"),
                    }
                }
            }
        }
        blocked_seen |= conn.is_input_blocked();
        // Drain a little at a time, like a slow writer.
        let b = conn.poll_transmit();
        let n = b.len().min(50);
        out.extend_from_slice(&b[..n]);
        conn.advance_transmit(n);
        if input.is_empty() && !conn.is_input_blocked() && conn.poll_transmit().is_empty() {
            break;
        }
    }
    assert!(blocked_seen);
    let lines: Vec<Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 40, "every message answered exactly once");
    assert_eq!(
        lines
            .iter()
            .filter(|l| l["error"]["code"] == -32600)
            .count(),
        20
    );
    let mut ids: Vec<u64> = lines.iter().filter_map(|l| l["id"].as_u64()).collect();
    ids.sort();
    assert_eq!(ids, (0..20).collect::<Vec<_>>());
}

#[test]
fn long_ids_are_echoed_without_being_stored() {
    let mut conn: Connection = Connection::default();
    let mut rx = RxBuffer::<[u8; 4096]>::new(Framing::Line);
    let at = "x".repeat(rpcwire::wire::MAX_STORED_ID_LEN - 2);
    let over = "y".repeat(rpcwire::wire::MAX_STORED_ID_LEN - 1);
    let msg = |id: &str| format!("{}\n", json!({"jsonrpc":"2.0","method":"get_data","id":id}));
    let (items, out) = feed(
        &mut conn,
        &mut rx,
        format!("{}{}", msg(&at), msg(&over)).as_bytes(),
        true,
    );
    assert!(items[1].contains("IdTooLong"), "{items:?}");
    assert_eq!(
        out[0],
        json!({"jsonrpc":"2.0","result":["hello",5],"id":at})
    );
    assert_eq!(
        out[1],
        json!({"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request","data":"id too long"},"id":over})
    );
}

#[test]
fn an_id_too_long_for_the_transmit_buffer_is_answered_with_null() {
    // The receive buffer takes frames larger than the whole transmit buffer: an id that long
    // cannot be echoed in any reply. It is answered with `null` (it was once retried for ever,
    // which stopped all input), and the next request is answered as usual.
    let mut conn: Conn<256, 128, 4, 4> = Connection::default();
    let mut rx = RxBuffer::<[u8; 4096]>::new(Framing::Line);
    let long = "z".repeat(1000);
    let input = format!(
        "{}\n{}\n",
        json!({"jsonrpc":"2.0","method":"get_data","id":long}),
        request(2, "get_data", json!([]))
    );
    let (items, out) = feed(&mut conn, &mut rx, input.as_bytes(), true);
    assert!(items[0].contains("IdTooLong"), "{items:?}");
    assert!(!conn.is_input_blocked());
    assert_eq!(
        out,
        [
            json!({"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request","data":"id too long"},"id":null}),
            json!({"jsonrpc":"2.0","result":["hello",5],"id":2}),
        ]
    );
}

#[test]
fn ids_of_every_kind_are_echoed_byte_exact() {
    let mut conn: Connection = Connection::default();
    let mut rx = RxBuffer::<[u8; 4096]>::new(Framing::Line);
    for id in [
        "0",
        "-1",
        "1.50",
        "9007199254740993",
        "1e400",
        "null",
        r#""\u00e9\"x""#,
        r#""""#,
    ] {
        let frame = format!(r#"{{"jsonrpc":"2.0","method":"get_data","id":{id}}}"#);
        let mut input = format!("{frame}\n");
        let mut bytes = input.as_bytes();
        while let Input::Item(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut bytes) {
            rpcwire_demo::handle(&mut conn, item).unwrap();
        }
        let out = String::from_utf8(conn.poll_transmit().to_vec()).unwrap();
        let n = out.len();
        conn.advance_transmit(n);
        assert_eq!(
            out,
            format!("{{\"jsonrpc\":\"2.0\",\"result\":[\"hello\",5],\"id\":{id}}}\n")
        );
        input.clear();
    }
}

#[test]
fn duplicate_ids_under_both_policies() {
    for policy in [
        rpcwire::DuplicateIdPolicy::Process,
        rpcwire::DuplicateIdPolicy::Reject,
    ] {
        let config = Config {
            duplicate_ids: policy,
            ..Config::default()
        };
        let mut conn: Connection = Connection::new(config);
        let mut rx = RxBuffer::<[u8; 4096]>::new(Framing::Line);
        let two = format!(
            "{}\n{}\n",
            request(7, "sum", json!([1])),
            request(7, "sum", json!([2]))
        );
        let (items, out) = feed(&mut conn, &mut rx, two.as_bytes(), false);
        assert_eq!(conn.stats().duplicate_ids, 1);
        match policy {
            rpcwire::DuplicateIdPolicy::Process => {
                assert!(items[1].contains("duplicate: true"), "{items:?}");
                assert!(out.is_empty());
                assert_eq!(conn.inflight_len(), 2);
            }
            rpcwire::DuplicateIdPolicy::Reject => {
                assert!(items[1].contains("DuplicateId"), "{items:?}");
                assert_eq!(out[0]["error"]["data"], "duplicate id");
                assert_eq!(out[0]["id"], 7);
                assert_eq!(conn.inflight_len(), 1);
            }
        }
    }
}

#[test]
fn timeout_cancel_close_each_return_the_token_once() {
    let mut conn: Connection = Connection::default();
    let t0 = Instant::from_millis(1000);
    conn.send_request(
        t0,
        Token(1),
        "a",
        NO_PARAMS,
        Some(Duration::from_millis(10)),
    )
    .unwrap();
    conn.send_request(
        t0,
        Token(2),
        "b",
        NO_PARAMS,
        Some(Duration::from_millis(20)),
    )
    .unwrap();
    conn.send_request(t0, Token(3), "c", NO_PARAMS, None)
        .unwrap();
    let sent = String::from_utf8(conn.poll_transmit().to_vec()).unwrap();
    let n = sent.len();
    conn.advance_transmit(n);
    let ids: Vec<Value> = sent
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].clone())
        .collect();
    assert_eq!(conn.poll_timeout(), Some(Instant::from_millis(1010)));
    conn.handle_timeout(Instant::from_millis(1009));
    assert_eq!(conn.poll_event(), None);
    conn.handle_timeout(Instant::from_millis(1010));
    assert_eq!(
        conn.poll_event(),
        Some(Event::RequestFailed {
            token: Token(1),
            reason: Failure::TimedOut
        })
    );
    assert_eq!(conn.poll_event(), None);
    conn.handle_timeout(Instant::from_millis(1010)); // spurious: harmless
    assert_eq!(conn.poll_event(), None);
    // A late response to the timed-out request is reported, not delivered.
    let mut rx = RxBuffer::<[u8; 1024]>::new(Framing::Line);
    let late = format!("{}\n", json!({"jsonrpc":"2.0","result":1,"id":ids[0]}));
    let (items, out) = feed(&mut conn, &mut rx, late.as_bytes(), false);
    assert!(items[0].contains("UnknownResponse"), "{items:?}");
    assert!(out.is_empty(), "responses are never answered");
    assert_eq!(conn.cancel(Token(2)), Ok(()));
    assert!(conn.cancel(Token(2)).is_err());
    conn.close();
    assert_eq!(
        conn.poll_event(),
        Some(Event::RequestFailed {
            token: Token(3),
            reason: Failure::Closed
        })
    );
    assert_eq!(conn.poll_event(), None);
    assert_eq!(conn.pending_len(), 0);
    assert_eq!(
        conn.send_request(t0, Token(4), "d", NO_PARAMS, None),
        Err(SendError::Closed)
    );
    assert!(matches!(Problem::EmptyBatch, Problem::EmptyBatch));
}

#[test]
fn long_ids_in_a_batch_are_answered_with_null() {
    // In a batch the reply room is reserved per element before any is parsed, so an id too
    // long to keep is answered with `null` (the id "could not be determined").
    let mut conn: Connection = Connection::default();
    let mut rx = RxBuffer::<[u8; 4096]>::new(Framing::Line);
    let long = "q".repeat(rpcwire::wire::MAX_STORED_ID_LEN + 10);
    let batch = json!([
        {"jsonrpc":"2.0","method":"get_data","id":long},
        {"jsonrpc":"2.0","method":"get_data","id":1}
    ]);
    let (items, out) = feed(&mut conn, &mut rx, format!("{batch}\n").as_bytes(), true);
    assert!(items[0].contains("IdTooLong"), "{items:?}");
    let mut replies = out[0].as_array().unwrap().clone();
    replies.sort_by_key(|r| r.to_string());
    assert_eq!(
        replies,
        [
            json!({"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request","data":"id too long"},"id":null}),
            json!({"jsonrpc":"2.0","result":["hello",5],"id":1}),
        ]
    );
}

#[test]
fn fail_pending_keeps_inbound_requests_answerable() {
    let mut conn: Connection = Connection::default();
    let mut rx = RxBuffer::<[u8; 1024]>::new(Framing::Line);
    conn.send_request(Instant::ZERO, Token(1), "ping", NO_PARAMS, None)
        .unwrap();
    let n = conn.poll_transmit().len();
    conn.advance_transmit(n);
    let mut input = &b"{\"jsonrpc\":\"2.0\",\"method\":\"get_data\",\"id\":5}"[..];
    assert_eq!(
        conn.handle_input(Instant::ZERO, &mut rx, &mut input),
        Input::NeedMore
    );
    // End of input: the last line has no newline.
    rx.finish();
    let Input::Item(Inbound::Request(req)) = conn.handle_input(Instant::ZERO, &mut rx, &mut input)
    else {
        panic!("the last line is a request")
    };
    conn.fail_pending();
    assert_eq!(
        conn.poll_event(),
        Some(Event::RequestFailed {
            token: Token(1),
            reason: Failure::Closed
        })
    );
    rpcwire_demo::answer(&mut conn, &req).unwrap();
    let out = String::from_utf8(conn.poll_transmit().to_vec()).unwrap();
    assert_eq!(
        out,
        "{\"jsonrpc\":\"2.0\",\"result\":[\"hello\",5],\"id\":5}\n"
    );
}

#[test]
fn a_second_batch_never_holds_up_responses() {
    // One batch reply buffer: while a batch waits for its answers, a second batch gets Server
    // busy for its requests at once, and its notifications and responses still come through.
    let mut conn: Connection = Connection::default();
    let mut rx = RxBuffer::<[u8; 4096]>::new(Framing::Line);
    conn.send_request(Instant::ZERO, Token(42), "ping", NO_PARAMS, None)
        .unwrap();
    let sent = String::from_utf8(conn.poll_transmit().to_vec()).unwrap();
    let n = sent.len();
    conn.advance_transmit(n);
    let our_id = serde_json::from_str::<Value>(sent.trim_end()).unwrap()["id"].clone();

    let first = json!([{"jsonrpc":"2.0","method":"sum","params":[1],"id":"a"}]);
    let second = json!([
        {"jsonrpc":"2.0","method":"sum","params":[2],"id":"b"},
        {"jsonrpc":"2.0","method":"notify_hello","params":[7]},
        {"jsonrpc":"2.0","result":"pong","id":our_id},
        5
    ]);
    // Hold the first batch's request unanswered while the second arrives.
    let (items, out) = feed(
        &mut conn,
        &mut rx,
        format!("{first}\n{second}\n").as_bytes(),
        false,
    );
    assert!(items[0].starts_with("Request"), "{items:?}");
    assert!(items[1].contains("Busy"), "{items:?}");
    assert!(items[2].starts_with("Notification"), "{items:?}");
    assert!(
        items[3].contains("Response") && items[3].contains("Token(42)"),
        "{items:?}"
    );
    assert!(items[4].contains("Invalid"), "{items:?}");
    assert_eq!(
        out,
        [json!([
            {"jsonrpc":"2.0","error":{"code":-32001,"message":"Server busy"},"id":"b"},
            {"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}
        ])]
    );
    // The first batch is still answerable, and its reply is still one array.
    let (_, out) = feed(&mut conn, &mut rx, b"", false);
    assert!(out.is_empty());
    assert_eq!(conn.inflight_len(), 1);
}
