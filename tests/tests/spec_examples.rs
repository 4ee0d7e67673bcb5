//! The "Examples" section of the JSON-RPC 2.0 specification, fed as bytes into a server-role
//! Connection running the demo service, under both framings. Replies are compared as JSON
//! values (batch replies as sets); the all-notification examples must produce no bytes at all.

use rpcwire::wire::{Framing, RxBuffer};
use rpcwire::{Config, Connection};
use rpcwire_demo::spec::{one_line, SPEC_EXAMPLES};
use rpcwire_tests::{content_length_bodies, normalize, serve_bytes};

#[test]
fn every_spec_example_gets_the_spec_reply() {
    for framing in [Framing::Line, Framing::ContentLength] {
        for example in SPEC_EXAMPLES {
            let mut conn: Connection = Connection::new(Config::with_framing(framing));
            let mut rx: RxBuffer<[u8; 4096]> = conn.rx_buffer();
            let frame: Vec<u8> = match framing {
                Framing::Line => one_line(example.request).chain([b'\n']).collect(),
                Framing::ContentLength => format!(
                    "Content-Length: {}\r\n\r\n{}",
                    example.request.len(),
                    example.request
                )
                .into_bytes(),
                other => unreachable!("no test for {other:?}"),
            };
            let out = serve_bytes(&mut conn, &mut rx, &frame);
            let bodies: Vec<String> = match framing {
                Framing::Line => String::from_utf8(out.clone())
                    .unwrap()
                    .lines()
                    .map(str::to_owned)
                    .collect(),
                Framing::ContentLength => content_length_bodies(&out),
                other => unreachable!("no test for {other:?}"),
            };
            match example.response {
                None => assert!(
                    out.is_empty(),
                    "{framing:?} {}: expected no bytes, got {:?}",
                    example.name,
                    String::from_utf8_lossy(&out)
                ),
                Some(expected) => {
                    assert_eq!(
                        bodies.len(),
                        1,
                        "{framing:?} {}: one frame expected",
                        example.name
                    );
                    assert_eq!(
                        normalize(&bodies[0]),
                        normalize(expected),
                        "{framing:?} {}",
                        example.name
                    );
                }
            }
        }
    }
}

#[test]
fn all_examples_in_one_stream_keep_their_order_and_count() {
    // The same exchange on one connection, every example back to back in a single write.
    let mut conn: Connection = Connection::default();
    let mut rx: RxBuffer<[u8; 4096]> = conn.rx_buffer();
    let mut stream = Vec::new();
    for example in SPEC_EXAMPLES {
        stream.extend(one_line(example.request));
        stream.push(b'\n');
    }
    let out = serve_bytes(&mut conn, &mut rx, &stream);
    let got: Vec<serde_json::Value> = String::from_utf8(out)
        .unwrap()
        .lines()
        .map(normalize)
        .collect();
    let expected: Vec<serde_json::Value> = SPEC_EXAMPLES
        .iter()
        .filter_map(|e| e.response)
        .map(normalize)
        .collect();
    assert_eq!(got, expected);
}
