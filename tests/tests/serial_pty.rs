//! rpcwire-serial's blocking driver (the library, as a host tool or a test bench would embed
//! it) over a socat pseudo-terminal pair acting as a real serial line: a server running the
//! demo service on one end, a client on the other; calls, notifications, errors, and every
//! example of the specification sent as raw bytes. Skips (printing `SKIPPED:`) without socat,
//! unless CI=true.
//!
//! The `rpcwire` command over a pty pair (`serve --serial` against `call --serial`: exit codes,
//! stdout, the error object on stderr, `--notify`, both framings) is tested where its binary
//! is built: `cli/tests/cli_serial.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use rpcwire_tests::pty::socat_pair;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rpcwire::wire::{RawJson, NO_PARAMS};
use rpcwire::{Config, ErrorCode, Event, Token};
use rpcwire_demo::spec::{one_line, SPEC_EXAMPLES};
use rpcwire_embedded_io::Incoming;
use rpcwire_serial::HostDriver;
use rpcwire_tests::normalize;

/// The demo service on `path` until `stop` is set; returns how many notifications it saw.
fn spawn_server(path: String, stop: Arc<AtomicBool>) -> JoinHandle<usize> {
    std::thread::spawn(move || {
        let port = rpcwire_serial::open(&path, 115_200).expect("open the server end");
        let mut driver = rpcwire_serial::driver(port, Config::default());
        let mut notifications = 0;
        while !stop.load(Ordering::Relaxed) {
            driver
                .poll(|ctx, item| match item {
                    Incoming::Request(req) => {
                        ctx.retry(|conn| rpcwire_demo::answer(conn, &req))
                            .expect("demo answers fit");
                    }
                    Incoming::Notification(_) => notifications += 1,
                    _ => {}
                })
                .expect("server transport");
            std::thread::sleep(Duration::from_millis(1));
        }
        notifications
    })
}

/// Calls `method` and waits for its outcome: the result's JSON text, or the error code.
fn call(
    client: &mut HostDriver,
    token: u64,
    method: &str,
    params: Option<&str>,
) -> Result<String, ErrorCode> {
    let params = params.map(|p| RawJson::parse(p, 16).expect("valid params"));
    client
        .send_request(
            Token(token),
            method,
            params.as_ref(),
            Some(Duration::from_secs(5)),
        )
        .expect("send");
    let mut outcome = None;
    while outcome.is_none() {
        client
            .poll(|_, item| match item {
                Incoming::Response(r) => {
                    assert_eq!(r.token, Token(token));
                    outcome = Some(r.outcome.map(|v| v.to_string()).map_err(|e| e.code));
                }
                Incoming::Event(Event::RequestFailed { reason, .. }) => {
                    panic!("{method}: {reason:?}")
                }
                other => panic!("unexpected {other:?}"),
            })
            .expect("client transport");
        std::thread::sleep(Duration::from_millis(1));
    }
    outcome.expect("set above")
}

#[test]
fn calls_notifications_and_errors_over_a_pty_pair() {
    let Some(socat) = socat_pair() else { return };
    let stop = Arc::new(AtomicBool::new(false));
    let server = spawn_server(socat.ends.0.clone(), stop.clone());
    let port = rpcwire_serial::open(&socat.ends.1, 115_200).expect("open the client end");
    let mut client = rpcwire_serial::driver(port, Config::default());

    assert_eq!(call(&mut client, 1, "sum", Some("[1,2,4]")), Ok("7".into()));
    assert_eq!(
        call(
            &mut client,
            2,
            "subtract",
            Some(r#"{"subtrahend":23,"minuend":42}"#)
        ),
        Ok("19".into())
    );
    assert_eq!(
        call(&mut client, 3, "get_data", None),
        Ok(r#"["hello",5]"#.into())
    );
    assert_eq!(
        call(&mut client, 4, "echo", Some(r#"{"a":[1,"\u00e9"]}"#)),
        Ok(r#"{"a":[1,"\u00e9"]}"#.into())
    );
    client
        .send_notification("update", Some(&[1, 2, 3]))
        .unwrap();
    client
        .send_notification("notify_hello", Some(&[7]))
        .unwrap();
    assert_eq!(
        call(&mut client, 5, "foobar", None),
        Err(ErrorCode::METHOD_NOT_FOUND)
    );
    assert_eq!(
        call(&mut client, 6, "subtract", Some("[1]")),
        Err(ErrorCode::INVALID_PARAMS)
    );
    client.send_notification("update", NO_PARAMS).unwrap();
    // A large request crosses the line in many chunks.
    let big = format!("[\"{}\"]", "x".repeat(3000));
    assert_eq!(call(&mut client, 7, "echo", Some(&big)), Ok(big.clone()));

    stop.store(true, Ordering::Relaxed);
    let notifications = server.join().expect("server thread");
    assert_eq!(notifications, 3);
}

/// Reads newline-terminated replies until `quiet` passes with nothing new.
fn read_replies(port: &mut rpcwire_serial::SerialPort, quiet: Duration) -> Vec<String> {
    port.set_timeout(Duration::from_millis(20)).unwrap();
    let mut bytes = Vec::new();
    let mut last = Instant::now();
    let mut buf = [0u8; 1024];
    while last.elapsed() < quiet {
        match port.read(&mut buf) {
            Ok(n) if n > 0 => {
                bytes.extend_from_slice(&buf[..n]);
                last = Instant::now();
            }
            _ => {}
        }
    }
    String::from_utf8(bytes)
        .expect("utf-8 replies")
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn spec_examples_as_raw_bytes_over_a_pty_pair() {
    let Some(socat) = socat_pair() else { return };
    let stop = Arc::new(AtomicBool::new(false));
    let server = spawn_server(socat.ends.0.clone(), stop.clone());
    let mut port = rpcwire_serial::open(&socat.ends.1, 115_200).expect("open the client end");
    for example in SPEC_EXAMPLES {
        let mut line: Vec<u8> = one_line(example.request).collect();
        line.push(b'\n');
        port.write_all(&line).unwrap();
        let quiet = if example.response.is_some() { 300 } else { 150 };
        let replies = read_replies(&mut port, Duration::from_millis(quiet));
        match example.response {
            None => assert!(replies.is_empty(), "{}: {replies:?}", example.name),
            Some(expected) => {
                assert_eq!(replies.len(), 1, "{}: {replies:?}", example.name);
                assert_eq!(
                    normalize(&replies[0]),
                    normalize(expected),
                    "{}",
                    example.name
                );
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    server.join().expect("server thread");
}

#[test]
fn opening_a_missing_port_is_an_error() {
    let err = rpcwire_serial::open("/dev/rpcwire-no-such-port", 9600).expect_err("no such port");
    assert_eq!(err.path(), "/dev/rpcwire-no-such-port");
    assert!(
        err.to_string().contains("/dev/rpcwire-no-such-port"),
        "{err}"
    );
}
