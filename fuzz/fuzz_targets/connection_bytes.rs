//! A `Connection` (small capacities) fed raw bytes in arbitrary chunks, answering requests
//! with the demo service. No input may panic or stall it, and everything it transmits must
//! be valid JSON-RPC: only responses (it never sends requests here), each echoing the id of
//! something the peer sent (or `null`). It never produces an `Inbound::Response` (nothing is
//! pending) and never exceeds its capacities.
//!
//! Both storages run the same protocol code: inline arrays, or heap storage (growing vectors)
//! with the same limits.
//!
//! Input: byte 0 = framing and options, bytes 1-2 = chunking seed (the top bit of byte 2:
//! heap storage; the low bit of byte 1: bytes taken where they are, `handle_input_borrowed`,
//! instead of through the receive buffer), the rest = the stream.
#![no_main]

use std::collections::BTreeSet;

use libfuzzer_sys::fuzz_target;
use rpcwire::storage::{Heap, Inline, Slots, Storage};
use rpcwire::wire::{parse, FrameEvent, Framing, Message, ParseLimits, Parsed, RxBuffer};
use rpcwire::{
    Config, Connection, DuplicateIdPolicy, Inbound, Input, Instant, Output, Problem, RespondError,
};
use rpcwire_fuzz::Chunker;

/// Inline storage: 1 KiB transmit, 512 B batch replies, 4 pending and 3 in-flight slots.
type Conn = Connection<Inline<1024, 512, 4, 3>>;

struct Tap {
    rx: RxBuffer<[u8; 4096]>,
}

impl Tap {
    fn check(&mut self, mut bytes: &[u8], ids: &BTreeSet<String>) {
        while !bytes.is_empty() {
            assert!(
                self.rx.push(&mut bytes) > 0 || !self.rx.is_full(),
                "emitted frame over 4 KiB"
            );
            while let Some(ev) = self.rx.next_frame() {
                let FrameEvent::Frame(frame) = ev else {
                    panic!("connection emitted a bad frame: {ev:?}");
                };
                let text = String::from_utf8_lossy(frame);
                let messages: Vec<Message<'_>> = match parse(frame, ParseLimits::default()) {
                    Ok(Parsed::Single(Ok(m))) => vec![m],
                    Ok(Parsed::Batch(b)) => b
                        .iter()
                        .collect::<Result<_, _>>()
                        .unwrap_or_else(|e| panic!("invalid element {e:?} emitted: {text}")),
                    other => panic!("emitted {other:?}: {text}"),
                };
                for m in messages {
                    let Message::Response(r) = m else {
                        panic!("emitted something other than a response: {text}");
                    };
                    assert!(
                        r.id.is_null() || ids.contains(r.id.raw()),
                        "response for id {} the peer never sent: {text}",
                        r.id
                    );
                }
            }
        }
    }
}

fn drain<S: Storage>(conn: &mut Connection<S>, tap: &mut Tap, ids: &BTreeSet<String>) {
    loop {
        match conn.poll_output() {
            Output::Transmit(bytes) => {
                let n = bytes.len();
                tap.check(bytes, ids);
                conn.advance_transmit(n);
            }
            Output::Event(e) => panic!("event without any request sent: {e:?}"),
            Output::Timeout(_) | Output::Idle => return,
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((head, body)) = data.split_first_chunk::<3>() else {
        return;
    };
    let framing = if head[0] & 1 == 0 {
        Framing::Line
    } else {
        Framing::ContentLength
    };
    let config = Config {
        framing,
        batches: head[0] & 2 == 0,
        max_batch_len: usize::from(head[0] >> 4) + 1,
        duplicate_ids: if head[0] & 4 == 0 {
            DuplicateIdPolicy::Process
        } else {
            DuplicateIdPolicy::Reject
        },
        max_depth: if head[0] & 8 == 0 { 64 } else { 4 },
        ..Config::default()
    };
    let tap = Tap {
        rx: RxBuffer::new(framing),
    };
    if head[2] & 0x80 == 0 {
        let mut conn = Conn::new(config);
        let mut rx: RxBuffer<[u8; 512]> = conn.rx_buffer();
        run(&mut conn, &mut rx, tap, head, body);
    } else {
        // The same limits on growing storage: frames of what 512 bytes hold, 3 in flight.
        let max_frame = if framing == Framing::Line { 510 } else { 512 };
        let config = Config {
            max_frame,
            max_pending: 4,
            max_inflight: 3,
            ..config
        };
        let mut conn: Connection<Heap> = Connection::new(config);
        let mut rx: RxBuffer<Vec<u8>> = conn.rx_buffer();
        run(&mut conn, &mut rx, tap, head, body);
    }
});

fn run<S: Storage, B: Slots<u8>>(
    conn: &mut Connection<S>,
    rx: &mut RxBuffer<B>,
    mut tap: Tap,
    head: &[u8; 3],
    body: &[u8],
) {
    let mut ids = BTreeSet::new();
    let mut chunker = Chunker::new(
        u64::from(head[1]) << 8 | u64::from(head[2]),
        usize::from(head[2] % 64) + 1,
    );
    let now = Instant::ZERO;
    let mut rest = body;
    while !rest.is_empty() {
        let n = chunker.next_len().min(rest.len());
        let mut input = &rest[..n];
        rest = &rest[n..];
        let mut stalls = 0;
        loop {
            let before = input.len();
            let next = if head[1] & 1 == 1 {
                conn.handle_input_borrowed(now, rx, &mut input)
            } else {
                conn.handle_input(now, rx, &mut input)
            };
            let item = match next {
                Input::Item(item) => item,
                Input::NeedMore => {
                    assert!(
                        input.is_empty() && !conn.is_input_blocked(),
                        "NeedMore with {} bytes left",
                        input.len()
                    );
                    break;
                }
                Input::Blocked => {
                    assert!(conn.is_input_blocked(), "Blocked, yet not blocked");
                    // Blocked on transmit room: drain and retry; it must move on.
                    stalls = if input.len() == before { stalls + 1 } else { 0 };
                    assert!(
                        stalls < 3,
                        "connection stuck with {} bytes left",
                        input.len()
                    );
                    drain(conn, &mut tap, &ids);
                    continue;
                }
                Input::Closed => panic!("closed while open"),
            };
            match item {
                Inbound::Request(req) => {
                    ids.insert(req.id.raw().to_owned());
                    let mut tries = 0;
                    loop {
                        match rpcwire_demo::answer(conn, &req) {
                            Ok(()) | Err(RespondError::TooLarge { .. }) => break,
                            Err(RespondError::WouldBlock { .. }) if tries == 0 => {
                                tries += 1;
                                drain(conn, &mut tap, &ids);
                            }
                            Err(e) => panic!("answering {req:?}: {e:?}"),
                        }
                    }
                }
                Inbound::Notification(_) => {}
                Inbound::Response(r) => panic!("a response routed with nothing pending: {r:?}"),
                Inbound::Problem(p) => match p {
                    Problem::Busy(id) | Problem::DuplicateId(id) | Problem::IdTooLong(id) => {
                        ids.insert(id.raw().to_owned());
                    }
                    Problem::Invalid(inv) => {
                        if let Some(id) = inv.id {
                            ids.insert(id.raw().to_owned());
                        }
                    }
                    _ => {}
                },
            }
            assert!(conn.inflight_len() <= 3 && conn.pending_len() == 0);
            drain(conn, &mut tap, &ids);
        }
    }
    drain(conn, &mut tap, &ids);
    conn.close();
    drain(conn, &mut tap, &ids);
}
