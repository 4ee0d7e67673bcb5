//! Property tests of the core: round trip under both framings, chunking invariance, and token
//! conservation under random operations.

use rpcwire::storage::Inline;
use rpcwire::Input;
use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use rpcwire::wire::framing::split_frame;
use rpcwire::wire::ser::SliceSink;
use rpcwire::wire::{
    encode, parse, write_frame, FrameEvent, Framing, Message, ParseLimits, Parsed, RawJson,
    RxBuffer,
};
use rpcwire::{Config, Connection, ErrorCode, Event, Inbound, Instant, Output, Token};
use serde_json::{json, Value};

// ------------------------------------------------------------------------------ round trip

#[derive(Debug, Clone)]
enum Model {
    Request {
        id: String,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    Result {
        id: String,
        result: Value,
    },
    Error {
        id: String,
        code: i32,
        message: String,
        data: Option<Value>,
    },
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        any::<u64>().prop_map(|i| json!(i)),
        (-1e9f64..1e9).prop_map(|f| json!(f)),
        "\\PC{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("\\PC{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn structured() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        prop::collection::vec(json_value(), 0..4).prop_map(|v| Some(Value::Array(v))),
        prop::collection::btree_map("[a-z]{1,6}", json_value(), 0..4)
            .prop_map(|m| Some(Value::Object(m.into_iter().collect()))),
    ]
}

fn id_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("null".to_owned()),
        any::<i64>().prop_map(|i| i.to_string()),
        Just("9007199254740993".to_owned()),
        Just("-0.5e-7".to_owned()),
        Just("123456789012345678901234567890".to_owned()),
        "\\PC{0,10}".prop_map(|s| serde_json::to_string(&s).unwrap()),
    ]
}

fn model() -> impl Strategy<Value = Model> {
    let method = "\\PC{1,12}";
    prop_oneof![
        (id_text(), method, structured()).prop_map(|(id, method, params)| Model::Request {
            id,
            method,
            params
        }),
        (method, structured()).prop_map(|(method, params)| Model::Notification { method, params }),
        (id_text(), json_value()).prop_map(|(id, result)| Model::Result { id, result }),
        (
            id_text(),
            any::<i32>(),
            "\\PC{0,12}",
            prop::option::of(json_value())
        )
            .prop_map(|(id, code, message, data)| Model::Error {
                id,
                code,
                message,
                data
            }),
    ]
}

fn emit(m: &Model, framing: Framing) -> Vec<u8> {
    let mut buf = vec![0u8; 1 << 16];
    let n = write_frame(framing, &mut buf, |s: &mut SliceSink<'_>| match m {
        Model::Request { id, method, params } => {
            encode::request(s, id.as_bytes(), method, params.as_ref())
        }
        Model::Notification { method, params } => encode::notification(s, method, params.as_ref()),
        Model::Result { id, result } => encode::result(s, id.as_bytes(), result),
        Model::Error {
            id,
            code,
            message,
            data,
        } => encode::error(
            s,
            id.as_bytes(),
            ErrorCode(*code),
            Some(message),
            data.as_ref(),
        ),
    })
    .unwrap();
    buf.truncate(n);
    buf
}

fn value(raw: Option<RawJson<'_>>) -> Option<Value> {
    raw.map(|r| serde_json::from_str(r.as_str()).unwrap())
}

fn reparse(frame: &[u8]) -> Model {
    let Parsed::Single(Ok(msg)) = parse(frame, ParseLimits::default()).unwrap() else {
        panic!(
            "not a single valid message: {}",
            String::from_utf8_lossy(frame)
        );
    };
    match msg {
        Message::Request(r) => Model::Request {
            id: r.id.raw().to_owned(),
            method: r.method.to_string(),
            params: value(r.params),
        },
        Message::Notification(n) => Model::Notification {
            method: n.method.to_string(),
            params: value(n.params),
        },
        Message::Response(r) => match r.outcome {
            Ok(result) => Model::Result {
                id: r.id.raw().to_owned(),
                result: value(Some(result)).unwrap(),
            },
            Err(e) => Model::Error {
                id: r.id.raw().to_owned(),
                code: e.code.0,
                message: e.message.to_string(),
                data: value(e.data),
            },
        },
    }
}

fn same(a: &Model, b: &Model) -> bool {
    format!("{a:?}") == format!("{b:?}")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn parse_of_emit_is_identity(m in model(), cl in any::<bool>()) {
        let framing = if cl { Framing::ContentLength } else { Framing::Line };
        let bytes = emit(&m, framing);
        let mut rx = RxBuffer::<[u8; 1 << 16]>::new(framing);
        rx.push(&mut &bytes[..]);
        let Some(FrameEvent::Frame(frame)) = rx.next_frame() else { panic!("no frame") };
        let back = reparse(frame);
        prop_assert!(same(&m, &back), "{m:?} != {back:?}");
        prop_assert!(rx.next_frame().is_none());
        prop_assert_eq!(rx.buffered(), 0);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// What a message-framed transport uses: `split_frame` takes a written frame apart as the
    /// decoder does, and `push_frame` hands a whole frame over as it is (too long: reported,
    /// and the buffer takes the next one).
    #[test]
    fn split_frame_and_push_frame_agree_with_the_decoder(
        m in model(),
        cl in any::<bool>(),
        max in 1usize..400,
    ) {
        let framing = if cl { Framing::ContentLength } else { Framing::Line };
        let bytes = emit(&m, framing);
        let mut rx = RxBuffer::<[u8; 1 << 16]>::new(framing);
        rx.push(&mut &bytes[..]);
        let Some(FrameEvent::Frame(frame)) = rx.next_frame() else { panic!("no frame") };
        prop_assert_eq!(split_frame(framing, &bytes), Some((frame, bytes.len())));
        prop_assert_eq!(split_frame(framing, &bytes[..bytes.len() - 1]), None);

        let mut whole = RxBuffer::<Vec<u8>>::with_max_frame(Framing::ContentLength, max);
        for _ in 0..2 {
            prop_assert!(whole.push_frame(frame));
            prop_assert!(!whole.push_frame(b"{}"), "taken while a frame is under way");
            let expected = if frame.len() > max {
                FrameEvent::Oversize { len: frame.len() }
            } else {
                FrameEvent::Frame(frame)
            };
            prop_assert_eq!(whole.next_frame(), Some(expected));
            prop_assert_eq!(whole.next_frame(), None);
        }
    }
}

// ------------------------------------------------------------------------ chunking invariance

fn stream_part() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (any::<u16>(), prop::sample::select(vec!["subtract", "sum", "echo", "get_data", "nope"]))
            .prop_map(|(id, m)| json!({"jsonrpc":"2.0","method":m,"params":[id, 1],"id":id}).to_string()),
        1 => Just(r#"{"jsonrpc":"2.0","method":"update","params":[1,2]}"#.to_owned()),
        1 => Just(r#"[{"jsonrpc":"2.0","method":"sum","params":[1,2],"id":"b1"},{"jsonrpc":"2.0","method":"notify_hello"},3]"#.to_owned()),
        1 => Just(r#"{"jsonrpc":"2.0","method":"foobar, "params": "bar", "baz]"#.to_owned()),
        1 => Just(r#"{"jsonrpc":"2.0","result":1,"id":99}"#.to_owned()),
        1 => "\\PC{0,8}",
        1 => Just("[]".to_owned()),
    ]
}

/// The items and the bytes out of a connection fed `stream` cut at `cuts`: through
/// `handle_input`, or `handle_input_borrowed` when `borrowed`. `S` chooses the storage: a
/// small transmit queue makes replies wait for room (`Input::Blocked`), so that answers may
/// fail (recorded, not unwrapped).
fn run_stream_with<S: rpcwire::storage::Storage>(
    stream: &[u8],
    cuts: &[usize],
    framing: Framing,
    borrowed: bool,
) -> (Vec<String>, Vec<u8>) {
    run_stream_in::<S, [u8; 1024]>(stream, cuts, framing, borrowed)
}

/// [`run_stream_with`] with a receive buffer of storage `B`.
fn run_stream_in<S: rpcwire::storage::Storage, B: rpcwire::storage::Slots<u8>>(
    stream: &[u8],
    cuts: &[usize],
    framing: Framing,
    borrowed: bool,
) -> (Vec<String>, Vec<u8>) {
    let mut conn: Connection<S> = Connection::new(Config::with_framing(framing));
    let mut rx = RxBuffer::<B>::new(framing);
    let mut items = Vec::new();
    let mut out = Vec::new();
    let mut prev = 0;
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    points.sort();
    points.push(stream.len());
    for p in points {
        let mut input = &stream[prev..p];
        prev = p;
        loop {
            loop {
                let next = if borrowed {
                    conn.handle_input_borrowed(Instant::ZERO, &mut rx, &mut input)
                } else {
                    conn.handle_input(Instant::ZERO, &mut rx, &mut input)
                };
                let Input::Item(item) = next else { break };
                items.push(format!("{item:?}"));
                let answered = rpcwire_demo::handle(&mut conn, item);
                items.push(format!("{answered:?}"));
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
    }
    (items, out)
}

fn run_stream(stream: &[u8], cuts: &[usize], framing: Framing) -> (Vec<String>, Vec<u8>) {
    let run = run_stream_with::<Inline>(stream, cuts, framing, false);
    // The default transmit queue holds every answer of these streams: none fails.
    assert!(run.0.iter().all(|i| !i.starts_with("Err(")), "{:?}", run.0);
    run
}

/// Lines as `any_split_gives_the_same_messages` frames them.
fn line_stream(parts: &[String]) -> Vec<u8> {
    let mut stream = Vec::new();
    for p in parts {
        stream.extend_from_slice(p.replace('\n', " ").as_bytes());
        stream.push(b'\n');
    }
    stream
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn any_split_gives_the_same_messages(
        parts in prop::collection::vec(stream_part(), 1..12),
        cuts in prop::collection::vec(any::<usize>(), 0..20),
        cl in any::<bool>(),
        one_byte in any::<bool>(),
    ) {
        let framing = if cl { Framing::ContentLength } else { Framing::Line };
        let stream = match framing {
            Framing::Line => line_stream(&parts),
            Framing::ContentLength => parts
                .iter()
                .flat_map(|p| format!("Content-Length: {}\r\n\r\n{p}", p.len()).into_bytes())
                .collect(),
            other => unreachable!("no test for {other:?}"),
        };
        let whole = run_stream(&stream, &[], framing);
        let cuts: Vec<usize> = if one_byte { (0..stream.len()).collect() } else { cuts };
        let split = run_stream(&stream, &cuts, framing);
        prop_assert_eq!(whole, split);
    }

    /// Taking lines where they are (`handle_input_borrowed`) gives what copying them into the
    /// receive buffer gives, at any split, with room for every reply and with replies that
    /// wait for transmit room (a 256-byte queue).
    #[test]
    fn borrowed_input_gives_what_copied_input_gives(
        parts in prop::collection::vec(stream_part(), 1..16),
        cuts in prop::collection::vec(any::<usize>(), 0..20),
        crlf in any::<bool>(),
    ) {
        let mut stream = line_stream(&parts);
        if crlf {
            stream = String::from_utf8_lossy(&stream).replace('\n', "\r\n").into_bytes();
        }
        let framing = Framing::Line;
        for cuts in [&[][..], &cuts[..]] {
            let copied = run_stream_with::<Inline>(&stream, cuts, framing, false);
            let borrowed = run_stream_with::<Inline>(&stream, cuts, framing, true);
            prop_assert_eq!(&copied, &borrowed);
            type Tiny = Inline<256, 64, 4, 4>;
            let copied = run_stream_with::<Tiny>(&stream, cuts, framing, false);
            let borrowed = run_stream_with::<Tiny>(&stream, cuts, framing, true);
            prop_assert_eq!(copied, borrowed);
        }
    }
}

/// A canonical object whose line end follows it at once is taken where it is without a search
/// for the newline; every neighbour of that shape (a `\r\n` end, a space, a stray `\r` or a
/// second value before the end, no end yet, a line at the maximum frame and one byte over it,
/// two lines in one read) gives what the receive buffer gives, whole, cut before its last
/// byte, or one byte at a time.
#[test]
fn lines_read_whole_by_the_canonical_reader_split_as_the_buffer_splits_them() {
    const W1: &str = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;
    // `RxBuffer<[u8; 1024]>` (as `run_stream_with` makes it) takes lines of up to 1022 bytes.
    const MAX: usize = 1022;
    let sized = |n: usize| {
        let (head, tail) = (
            r#"{"jsonrpc":"2.0","method":"update","params":[""#,
            r#""],"id":7}"#,
        );
        format!("{head}{}{tail}", "x".repeat(n - head.len() - tail.len()))
    };
    let streams = [
        format!("{W1}\n"),
        format!("{W1}\r\n"),
        format!("{W1} \n"),
        format!("{W1}\r\r\n"),
        format!("{W1}{W1}\n"),
        format!("{W1}\n{W1}\n"),
        format!("{W1}\n\n{W1}"),
        W1.replace("1}", "1 }") + "\n",
        W1.to_owned(),
        format!("{}\n", sized(MAX)),
        format!("{}\r\n", sized(MAX)),
        format!("{}\n{W1}\n", sized(MAX + 1)),
        format!("{}\r\n{W1}\n", sized(MAX + 1)),
    ];
    for stream in &streams {
        let bytes = stream.as_bytes();
        let every: Vec<usize> = (0..bytes.len()).collect();
        for cuts in [&[][..], &[bytes.len() - 1][..], &every[..]] {
            let copied = run_stream_with::<Inline>(bytes, cuts, Framing::Line, false);
            let borrowed = run_stream_with::<Inline>(bytes, cuts, Framing::Line, true);
            assert_eq!(copied, borrowed, "{stream:?} cut at {cuts:?}");
        }
    }
    // The edges are edges: a line of the maximum is a request, one byte more is too large.
    let at_max = run_stream_with::<Inline>(streams[9].as_bytes(), &[], Framing::Line, true);
    assert!(at_max.0[0].starts_with("Request("), "{:?}", at_max.0);
    let over = run_stream_with::<Inline>(streams[11].as_bytes(), &[], Framing::Line, true);
    assert!(over.0[0].contains("FrameTooLarge"), "{:?}", over.0);
    assert!(over.0[2].starts_with("Request("), "{:?}", over.0);
}

// ------------------------------------------------------------------ batch element record

/// Inline storage without the record of a batch's elements: every element is walked again
/// when delivered (as on targets without the record), the reference for the recorded path.
struct Unrecorded;

/// The storage `Unrecorded` mirrors (room for a reply to 40 elements).
type Roomy = Inline<16384, 8000, 16, 64>;

impl rpcwire::storage::Storage for Unrecorded {
    type Tx = <Roomy as rpcwire::storage::Storage>::Tx;
    type Batch = <Roomy as rpcwire::storage::Storage>::Batch;
    type Pending = <Roomy as rpcwire::storage::Storage>::Pending;
    type Inflight = <Roomy as rpcwire::storage::Storage>::Inflight;
    type Memo = [rpcwire::wire::MemoSlot; 0];
    fn parts() -> rpcwire::storage::Parts<Self> {
        let inline = <Roomy as rpcwire::storage::Storage>::parts();
        rpcwire::storage::Parts {
            tx: inline.tx,
            batch: inline.batch,
            pending: inline.pending,
            inflight: inline.inflight,
            memo: [],
        }
    }
}

/// One batch element: every kind of message and of invalid element, some with escapes,
/// non-ASCII text and nested values.
fn batch_element() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (any::<u16>(), prop::sample::select(vec!["subtract", "sum", "echo", "get_data", "nope", "m\\u0065", "\u{e9}t\u{e9}"]))
            .prop_map(|(id, m)| format!(r#"{{"jsonrpc":"2.0","method":"{m}","params":[{id},1],"id":{id}}}"#)),
        1 => any::<u16>().prop_map(|id| format!(r#"{{"id":"s{id}","params":{{"a":[1,{{"b":null}}]}},"method":"echo","jsonrpc":"2.0"}}"#)),
        2 => Just(r#"{"jsonrpc":"2.0","method":"update","params":[1,2]}"#.to_owned()),
        1 => Just(r#"{"jsonrpc":"2.0","method":"notify_hello"}"#.to_owned()),
        1 => any::<u8>().prop_map(|id| format!(r#"{{"jsonrpc":"2.0","result":{{"x":"\u00e9"}},"id":{id}}}"#)),
        1 => Just(r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"m","data":[1]},"id":"e"}"#.to_owned()),
        1 => Just(r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"no data"},"id":null}"#.to_owned()),
        1 => Just(r#"{"jsonrpc":"2.0","error":{"code":1.5,"message":"m"},"id":3}"#.to_owned()),
        1 => Just(r#"{"jsonrpc":"2.0","method":"a","method":"b","id":1}"#.to_owned()),
        1 => Just(r#"{"jsonrpc":"1.0","method":"a","id":[1]}"#.to_owned()),
        1 => Just(r#"{"jsonrpc":"2.0","method":"a","params":"x","id":"p"}"#.to_owned()),
        1 => Just(r#"{"jsonrpc":"2.0","result":1,"error":{"code":1,"message":""},"id":2}"#.to_owned()),
        1 => Just(r#"{"method":1,"id":{}}"#.to_owned()),
        1 => Just(r#"{}"#.to_owned()),
        1 => prop::sample::select(vec!["1", "\"x\"", "[]", "null", "[{\"jsonrpc\":\"2.0\"}]", "-0.5e3", "true"])
            .prop_map(str::to_owned),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// A batch's elements as the walk that validated it recorded them are delivered and
    /// answered exactly as when each is walked again: the same items, the same bytes out,
    /// for batches shorter and longer than the record (16 elements), with any whitespace.
    #[test]
    fn recorded_batch_elements_are_what_a_second_walk_finds(
        batches in prop::collection::vec(
            prop::collection::vec((batch_element(), prop::sample::select(vec!["", " ", " \r ", "\t"])), 1..40),
            1..4,
        ),
        cuts in prop::collection::vec(any::<usize>(), 0..6),
    ) {
        let mut stream = Vec::new();
        for batch in &batches {
            let texts: Vec<String> = batch.iter().map(|(e, ws)| format!("{ws}{e}{ws}")).collect();
            stream.extend_from_slice(format!(" [{}] \n", texts.join(",")).as_bytes());
        }
        let framing = Framing::Line;
        type Rx = [u8; 8192];
        let reference = run_stream_in::<Unrecorded, Rx>(&stream, &cuts, framing, false);
        // Every element was delivered, and every request answered.
        let elements: usize = batches.iter().map(Vec::len).sum();
        prop_assert!(reference.0.len() >= 2 * elements, "{:?}", reference.0);
        prop_assert!(reference.0.iter().all(|i| !i.starts_with("Err(")), "{:?}", reference.0);
        let recorded = run_stream_in::<Roomy, Rx>(&stream, &cuts, framing, false);
        prop_assert_eq!(&reference, &recorded);
        // Growing storage takes its record at the first batch; its handles differ.
        let heap = run_stream_in::<rpcwire::storage::Heap, Rx>(&stream, &cuts, framing, true);
        prop_assert_eq!(&reference.1, &heap.1);
    }
}

// --------------------------------------------------------------------- token conservation

#[derive(Debug, Clone)]
enum Op {
    Send { timeout_ms: Option<u8> },
    Respond { pick: usize, error: bool },
    RespondUnknown,
    Garbage(Vec<u8>),
    Advance(u16),
    Cancel { pick: usize },
    BatchSend { n: u8 },
    Close,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => prop::option::of(any::<u8>()).prop_map(|timeout_ms| Op::Send { timeout_ms }),
        5 => (any::<usize>(), any::<bool>()).prop_map(|(pick, error)| Op::Respond { pick, error }),
        1 => Just(Op::RespondUnknown),
        1 => prop::collection::vec(any::<u8>(), 0..40).prop_map(Op::Garbage),
        3 => any::<u16>().prop_map(Op::Advance),
        2 => any::<usize>().prop_map(|pick| Op::Cancel { pick }),
        1 => (0u8..6).prop_map(|n| Op::BatchSend { n }),
        1 => Just(Op::Close),
    ]
}

const PENDING: usize = 8;

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn every_token_comes_back_exactly_once(ops in prop::collection::vec(op(), 1..60)) {
        let mut conn: Connection<Inline<4096, 1024, PENDING, 8>> = Connection::default();
        let mut rx = RxBuffer::<[u8; 4096]>::new(Framing::Line);
        let mut now = Instant::ZERO;
        let mut next_token = 0u64;
        let mut issued = BTreeSet::new();
        let mut returned: BTreeMap<u64, u32> = BTreeMap::new();
        // id text -> token, for requests the peer has seen.
        let mut on_wire: Vec<(String, u64)> = Vec::new();
        let back = |t: Token, returned: &mut BTreeMap<u64, u32>| *returned.entry(t.0).or_default() += 1;

        let sent_ids = |conn: &mut Connection<Inline<4096, 1024, PENDING, 8>>, tokens: &[u64], on_wire: &mut Vec<(String, u64)>| {
            let bytes = conn.poll_transmit().to_vec();
            conn.advance_transmit(bytes.len());
            let mut ids = Vec::new();
            for line in String::from_utf8(bytes).unwrap().lines() {
                let v: Value = serde_json::from_str(line).unwrap();
                match v {
                    Value::Array(items) => ids.extend(items.iter().filter_map(|i| i.get("id").map(|x| x.to_string()))),
                    v => ids.extend(v.get("id").map(|x| x.to_string())),
                }
            }
            assert_eq!(ids.len(), tokens.len());
            on_wire.extend(ids.into_iter().zip(tokens.iter().copied()));
        };

        for op in ops {
            match op {
                Op::Send { timeout_ms } => {
                    let t = next_token;
                    let timeout = timeout_ms.map(|ms| core::time::Duration::from_millis(u64::from(ms)));
                    if conn.send_request(now, Token(t), "m", Some(&[t]), timeout).is_ok() {
                        next_token += 1;
                        issued.insert(t);
                        sent_ids(&mut conn, &[t], &mut on_wire);
                    }
                }
                Op::BatchSend { n } => {
                    let Ok(mut batch) = conn.start_batch(now) else { continue };
                    let mut tokens = Vec::new();
                    for _ in 0..n {
                        let t = next_token;
                        if batch.request(Token(t), "m", Some(&[t]), None).is_ok() {
                            next_token += 1;
                            tokens.push(t);
                        }
                    }
                    batch.notification("note", rpcwire::wire::NO_PARAMS).unwrap();
                    batch.finish();
                    issued.extend(tokens.iter().copied());
                    sent_ids(&mut conn, &tokens, &mut on_wire);
                }
                Op::Respond { pick, error } if !on_wire.is_empty() => {
                    let (id, _) = on_wire.remove(pick % on_wire.len());
                    let reply = if error {
                        format!(r#"{{"jsonrpc":"2.0","error":{{"code":-1,"message":"no"}},"id":{id}}}"#)
                    } else {
                        format!(r#"{{"jsonrpc":"2.0","result":true,"id":{id}}}"#)
                    };
                    let mut input = format!("{reply}\n");
                    let mut bytes = input.as_bytes();
                    while let Input::Item(item) = conn.handle_input(now, &mut rx, &mut bytes) {
                        if let Inbound::Response(r) = item { back(r.token, &mut returned); }
                    }
                    input.clear();
                }
                Op::Respond { .. } => {}
                Op::RespondUnknown => {
                    let mut bytes = &b"{\"jsonrpc\":\"2.0\",\"result\":0,\"id\":\"zz\"}\n"[..];
                    while let Input::Item(item) = conn.handle_input(now, &mut rx, &mut bytes) {
                        prop_assert!(!matches!(item, Inbound::Response(_)));
                    }
                }
                Op::Garbage(mut g) => {
                    g.push(b'\n');
                    let mut bytes = &g[..];
                    while let Input::Item(item) = conn.handle_input(now, &mut rx, &mut bytes) {
                        if let Inbound::Response(r) = item { back(r.token, &mut returned); }
                    }
                }
                Op::Advance(ms) => {
                    now = now + core::time::Duration::from_millis(u64::from(ms));
                    conn.handle_timeout(now);
                }
                Op::Cancel { pick } if !issued.is_empty() => {
                    let t = *issued.iter().nth(pick % issued.len()).unwrap();
                    if conn.cancel(Token(t)).is_ok() { back(Token(t), &mut returned); }
                }
                Op::Cancel { .. } => {}
                Op::Close => conn.close(),
            }
            prop_assert!(conn.pending_len() <= PENDING);
            while let Some(Event::RequestFailed { token, .. }) = conn.poll_event() {
                back(token, &mut returned);
            }
            // Drop whatever automatic replies the garbage produced.
            let n = conn.poll_transmit().len();
            conn.advance_transmit(n);
        }
        conn.close();
        while let Some(Event::RequestFailed { token, .. }) = conn.poll_event() {
            back(token, &mut returned);
        }
        for t in &issued {
            prop_assert_eq!(returned.get(t).copied(), Some(1), "token {} returned {:?} times", t, returned.get(t));
        }
        prop_assert_eq!(returned.len(), issued.len());
        prop_assert_eq!(conn.pending_len(), 0);
    }
}
