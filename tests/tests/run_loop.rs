//! The run loop of the README and of the crate documentation, under backpressure: 1 000
//! pipelined requests arrive at once at a connection whose transmit queue holds about ten
//! answers. Every request is answered, in order, and no received byte is lost.

use rpcwire::storage::Inline;
use rpcwire::wire::RxBuffer;
use rpcwire::{Config, Connection, Inbound, Input, Instant, Output, RespondError};

/// A stand-in for a socket: everything written is kept.
fn write(wire: &mut Vec<u8>, bytes: &[u8]) -> Result<usize, std::convert::Infallible> {
    wire.extend_from_slice(bytes);
    Ok(bytes.len())
}

#[test]
fn the_readme_loop_answers_every_pipelined_request_with_small_buffers() {
    const N: usize = 1000;
    let mut received = Vec::new();
    for id in 0..N {
        received.extend_from_slice(
            format!("{{\"jsonrpc\":\"2.0\",\"method\":\"hello\",\"id\":{id}}}\n").as_bytes(),
        );
    }
    // 512 bytes of transmit queue, 256 of batch replies, 128-byte receive buffer.
    let mut conn: Connection<Inline<512, 256, 4, 4>> = Connection::new(Config::default());
    let mut rx: RxBuffer<[u8; 128]> = conn.rx_buffer();
    let mut wire = Vec::new();
    let now = || Instant::ZERO;

    // The loop, as written in the README.
    let mut input: &[u8] = &received;
    loop {
        let item = match conn.handle_input(now(), &mut rx, &mut input) {
            Input::Item(item) => item,
            Input::Blocked => {
                conn.transmit_with(|bytes| write(&mut wire, bytes)).unwrap();
                continue;
            }
            Input::NeedMore | Input::Closed => break,
        };
        match item {
            Inbound::Request(req) => {
                while let Err(RespondError::WouldBlock { .. }) = conn.respond(req.handle, &"hello")
                {
                    conn.transmit_with(|bytes| write(&mut wire, bytes)).unwrap();
                }
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    loop {
        match conn.poll_output() {
            Output::Transmit(bytes) => {
                let n = write(&mut wire, bytes).unwrap();
                conn.advance_transmit(n);
            }
            Output::Event(e) => panic!("unexpected event {e:?}"),
            Output::Timeout(_) | Output::Idle => break,
        }
    }

    assert!(
        input.is_empty(),
        "{} received bytes never read",
        input.len()
    );
    let text = String::from_utf8(wire).unwrap();
    let answers: Vec<&str> = text.lines().collect();
    assert_eq!(answers.len(), N, "every request answered");
    for (id, answer) in answers.iter().enumerate() {
        assert_eq!(
            *answer,
            format!("{{\"jsonrpc\":\"2.0\",\"result\":\"hello\",\"id\":{id}}}")
        );
    }
    assert_eq!(conn.inflight_len(), 0);
}
