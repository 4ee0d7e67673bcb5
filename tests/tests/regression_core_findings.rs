//! Regression tests for core bugs found by the simulation (`sim_two_peers.rs`) and the fuzz
//! targets (`fuzz/`). A test marked `#[ignore = "core bug: ..."]` pins a bug that is not fixed
//! yet: it fails today and must pass once the core is fixed (then remove the `ignore`).
//!
//! Fixed in the core since: the batch of responses and the two content-length
//! resynchronisation tests (core commit "take a batch of responses whatever the batch limits;
//! resynchronise content-length on the next header; no reply to header garbage"), and the
//! chunking dependence of that resynchronisation (core commit "chunking-invariant
//! resynchronisation").

use rpcwire::storage::Inline;
use rpcwire::wire::{FrameEvent, Framing, RxBuffer, NO_PARAMS};
use rpcwire::Input;
use rpcwire::{Config, Connection, Inbound, Instant, Output, Problem, Token};

/// Everything a connection wants to transmit, drained.
fn drain<const TX: usize, const B: usize, const P: usize, const I: usize>(
    conn: &mut Connection<Inline<TX, B, P, I>>,
) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        match conn.poll_output() {
            Output::Transmit(bytes) => {
                let n = bytes.len();
                out.extend_from_slice(bytes);
                conn.advance_transmit(n);
            }
            Output::Event(_) => {}
            Output::Timeout(_) | Output::Idle => return out,
        }
    }
}

/// Found by the simulation (seed 1594590341). A connection whose `max_batch_len` is 2 may
/// send a batch of 3 requests (`start_batch` does not check its own limit), but when the
/// peer answers with the 3-element array of responses the spec requires, the connection
/// applies `max_batch_len` to that array of *responses*: it reports
/// `Problem::BatchTooLarge`, none of the three tokens gets its response (they are lost until
/// timeout), and it answers the responses with an Invalid Request error (`id: null`), which
/// the specification forbids (responses are never answered). The same happens with
/// `batches: false` (the MCP profile): the reply to our own batch is refused.
#[test]

fn batch_of_responses_is_not_limited_by_max_batch_len() {
    for config in [
        Config {
            max_batch_len: 2,
            ..Config::default()
        },
        Config {
            batches: false,
            ..Config::default()
        },
    ] {
        let mut conn: Connection = Connection::new(config);
        let mut rx: RxBuffer<[u8; 4096]> = conn.rx_buffer();
        let now = Instant::ZERO;
        let mut batch = conn.start_batch(now).unwrap();
        for t in 1..=3 {
            batch.request(Token(t), "m", NO_PARAMS, None).unwrap();
        }
        batch.finish();
        let sent = String::from_utf8(drain(&mut conn)).unwrap();
        // Answer each request by echoing its id back in one array of responses.
        let ids: Vec<&str> = sent
            .split("\"id\":")
            .skip(1)
            .map(|rest| rest.split('}').next().unwrap())
            .collect();
        assert_eq!(ids.len(), 3, "{sent}");
        let reply = format!(
            "[{}]\n",
            ids.iter()
                .map(|id| format!(r#"{{"jsonrpc":"2.0","result":true,"id":{id}}}"#))
                .collect::<Vec<_>>()
                .join(",")
        );
        let mut input = reply.as_bytes();
        let mut answered = Vec::new();
        let mut problems = Vec::new();
        while let Input::Item(item) = conn.handle_input(now, &mut rx, &mut input) {
            match item {
                Inbound::Response(r) => answered.push(r.token.0),
                Inbound::Problem(p) => problems.push(format!("{p:?}")),
                _ => {}
            }
        }
        let written = String::from_utf8(drain(&mut conn)).unwrap();
        assert_eq!(problems, Vec::<String>::new(), "config {config:?}");
        assert_eq!(answered, [1, 2, 3], "config {config:?}");
        assert_eq!(
            written, "",
            "responses must never be answered (config {config:?})"
        );
    }
}

/// Found by the simulation (seed 1594590375, content-length framing with truncation). Once a
/// body is shorter than its `Content-Length` (a lost or truncated write), the decoder takes
/// the start of the next frame as the end of that body, then treats the remaining
/// `body + next header` as one header block, which has no valid `Content-Length` of its own:
/// `BadHeader`, skip to the next `\r\n\r\n`, and the next body again starts a header block. It
/// never resynchronises: every later valid frame is lost as `BadHeader`. Between two rpcwire
/// peers each `BadHeader` is answered with a Parse error frame, which the other (equally
/// desynchronised) side turns into another `BadHeader`: an endless ping-pong of error replies.
/// Expected: after the damaged frame, the decoder finds the next `Content-Length:` header
/// (for example by searching the bad block for a `Content-Length` line) and valid frames
/// are decoded again.
#[test]

fn content_length_decoder_resynchronises_after_a_truncated_body() {
    let frame = |body: &str| format!("Content-Length: {}\r\n\r\n{body}", body.len());
    let good = r#"{"jsonrpc":"2.0","method":"note","params":[1]}"#;
    // The first frame lost its last 10 bytes on the way.
    let damaged = frame(good);
    let mut stream = damaged[..damaged.len() - 10].to_string();
    for _ in 0..10 {
        stream.push_str(&frame(good));
    }
    let mut rx: RxBuffer<[u8; 4096]> = RxBuffer::new(Framing::ContentLength);
    let mut input = stream.as_bytes();
    rx.push(&mut input);
    assert!(input.is_empty());
    let mut frames = 0;
    let mut bad = 0;
    while let Some(ev) = rx.next_frame() {
        match ev {
            FrameEvent::Frame(f) if f == good.as_bytes() => frames += 1,
            _ => bad += 1,
        }
    }
    // The damaged frame and the one it swallowed may be lost; the other 9 must come through.
    assert!(
        frames >= 9,
        "only {frames} of 10 valid frames decoded ({bad} bad events)"
    );
}

/// The same bug seen end to end: two connections over content-length framing, one damaged
/// frame, then ordinary traffic: the requests after it must be answered.
#[test]

fn content_length_connection_recovers_after_a_truncated_frame() {
    let config = Config::with_framing(Framing::ContentLength);
    let mut server: Connection = Connection::new(config);
    let mut rx: RxBuffer<[u8; 4096]> = server.rx_buffer();
    let now = Instant::ZERO;
    let mut client: Connection = Connection::new(config);
    client.send_notification("note", Some(&[1])).unwrap();
    let mut stream = drain(&mut client);
    stream.truncate(stream.len() - 5);
    for t in 0..5 {
        client
            .send_request(now, Token(t), "ping", NO_PARAMS, None)
            .unwrap();
        stream.extend(drain(&mut client));
    }
    let mut input = &stream[..];
    let mut requests = 0;
    let mut problems = 0;
    while let Input::Item(item) = server.handle_input(now, &mut rx, &mut input) {
        match item {
            Inbound::Request(req) => {
                requests += 1;
                server.respond(req.handle, "pong").unwrap();
            }
            Inbound::Problem(Problem::BadHeader | Problem::ParseError(_)) => problems += 1,
            _ => {}
        }
        drain(&mut server);
    }
    assert!(
        requests >= 4,
        "{requests} of 5 requests after the damage delivered ({problems} problems)"
    );
}

/// Found by the `framing_content_length` fuzz target (chunking invariance). More than
/// `MAX_HEADER_BLOCK` (1 KiB) of garbage followed by a valid frame whose header ends past the
/// first 1 KiB: fed in one read, the decoder finds the terminator, sees the block is too long,
/// resynchronises on the `Content-Length` header inside it and decodes the frame; fed in two
/// reads (the first 1 KiB, then the rest), it gives up on the block at 1 KiB without a
/// terminator (`BadHeader`, then skips to the next `\r\n\r\n`) and the frame is lost. The
/// same bytes must give the same frames however they are split.
#[test]

fn content_length_resync_does_not_depend_on_chunking() {
    let mut stream = vec![b'x'; 1010];
    stream.extend_from_slice(b"\r\nContent-Length: 2\r\n\r\n{}");
    let decode = |split: usize| {
        let mut rx: RxBuffer<[u8; 2048]> = RxBuffer::new(Framing::ContentLength);
        let mut events = Vec::new();
        for piece in [&stream[..split], &stream[split..]] {
            let mut input = piece;
            rx.push(&mut input);
            while let Some(ev) = rx.next_frame() {
                events.push(format!("{ev:?}"));
            }
        }
        events
    };
    let whole = decode(stream.len());
    assert!(whole.iter().any(|e| e.contains("Frame")), "{whole:?}");
    for split in [1, 512, 1024, 1026, stream.len() - 2] {
        assert_eq!(decode(split), whole, "split at {split}");
    }
}

/// Found by the `framing_line` fuzz target (minimised: maximum frame 0, input `" t"`).
/// `RxBuffer::finish` is documented to turn a last line without its newline into a frame "or
/// an oversize report", but a line longer than the maximum + 1 is already being discarded
/// (`DiscardLine`, with `start == end`), so `finish` returns early and the oversize line is
/// never reported: the peer's last message vanishes without the Invalid Request reply an
/// oversize line gets everywhere else.
#[test]

fn finish_reports_an_unterminated_oversize_line() {
    for (max, input) in [(0, &b" t"[..]), (8, &b"0123456789abc"[..])] {
        let mut rx: RxBuffer<[u8; 64]> = RxBuffer::with_max_frame(Framing::Line, max);
        let mut bytes = input;
        rx.push(&mut bytes);
        assert_eq!(rx.next_frame(), None);
        rx.finish();
        assert!(
            matches!(rx.next_frame(), Some(FrameEvent::Oversize { .. })),
            "max {max}: the unterminated oversize line {input:?} was not reported"
        );
    }
}
