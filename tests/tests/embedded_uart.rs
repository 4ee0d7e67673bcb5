//! rpcwire-embedded-io against in-memory UART mocks that deliver one byte per read and take a
//! few bytes per write: the specification's examples, backpressure (`WouldBlock`, blocked
//! input), the client role (responses, timeouts), transport errors, and the async driver.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use rpcwire::Input;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::rc::Rc;
use std::time::Duration;

use rpcwire::storage::Storage;
use rpcwire::wire::{RawJson, RxBuffer, NO_PARAMS};
use rpcwire::{Config, Connection, ErrorCode, Event, Failure, Instant, Problem, Token};
use rpcwire_demo::spec::{one_line, SPEC_EXAMPLES};
use rpcwire_embedded_io::asynch::{block_on, AsyncContext, AsyncDriver};
use rpcwire_embedded_io::clock::Ticker;
use rpcwire_embedded_io::embedded_io_async;
use rpcwire_embedded_io::io06::{Io06, Io06Error};
use rpcwire_embedded_io::methods::{self, MethodError, MethodList, Methods, NoParams};
use rpcwire_embedded_io::outbox::{NotifyError, Outbox};
use rpcwire_embedded_io::{Driver, Error, Incoming, Inline};
use rpcwire_tests::normalize;

/// A UART: reads give one byte at a time (0 at the end of the scripted input), writes take at
/// most `chunk` bytes.
#[derive(Default)]
struct Uart {
    input: VecDeque<u8>,
    out: Vec<u8>,
    chunk: usize,
    reads: usize,
    writes: usize,
    fail_writes: bool,
    zero_writes: bool,
    /// Async reads wait (pending) while no input is there, as a real UART's do, instead of
    /// reporting the end of the stream.
    idle_waits: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct UartError;

impl std::fmt::Display for UartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UART failure")
    }
}

impl std::error::Error for UartError {}

impl embedded_io::Error for UartError {
    fn kind(&self) -> embedded_io::ErrorKind {
        embedded_io::ErrorKind::Other
    }
}

impl Uart {
    fn new(chunk: usize) -> Self {
        Uart {
            chunk,
            ..Uart::default()
        }
    }

    fn feed(&mut self, bytes: &[u8]) {
        self.input.extend(bytes);
    }

    fn take_out(&mut self) -> String {
        String::from_utf8(std::mem::take(&mut self.out)).expect("utf-8 output")
    }
}

impl embedded_io::ErrorType for Uart {
    type Error = UartError;
}

impl embedded_io::Read for Uart {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, UartError> {
        self.reads += 1;
        match (self.input.pop_front(), buf.first_mut()) {
            (Some(b), Some(slot)) => {
                *slot = b;
                Ok(1)
            }
            (Some(b), None) => {
                self.input.push_front(b);
                Ok(0)
            }
            (None, _) => Ok(0),
        }
    }
}

impl embedded_io::ReadReady for Uart {
    fn read_ready(&mut self) -> Result<bool, UartError> {
        Ok(!self.input.is_empty())
    }
}

impl embedded_io::Write for Uart {
    fn write(&mut self, buf: &[u8]) -> Result<usize, UartError> {
        if self.fail_writes {
            return Err(UartError);
        }
        if self.zero_writes {
            return Ok(0);
        }
        self.writes += 1;
        let n = buf.len().min(self.chunk);
        self.out.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> Result<(), UartError> {
        Ok(())
    }
}

impl embedded_io_async::Read for Uart {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, UartError> {
        if self.idle_waits && self.input.is_empty() {
            std::future::pending::<()>().await;
        }
        embedded_io::Read::read(self, buf)
    }
}

impl embedded_io_async::Write for Uart {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, UartError> {
        embedded_io::Write::write(self, buf)
    }

    async fn flush(&mut self) -> Result<(), UartError> {
        embedded_io::Write::flush(self)
    }
}

/// A clock the test moves by hand.
#[derive(Clone, Default)]
struct TestClock(Rc<RefCell<u64>>);

impl TestClock {
    fn advance_ms(&self, ms: u64) {
        *self.0.borrow_mut() += ms;
    }

    fn now(&self) -> Instant {
        Instant::from_millis(*self.0.borrow())
    }
}

impl rpcwire_embedded_io::Clock for TestClock {
    fn now(&mut self) -> Instant {
        TestClock::now(self)
    }
}

fn frames(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.trim().is_empty()).collect()
}

fn example_line(request: &str) -> Vec<u8> {
    let mut line: Vec<u8> = one_line(request).collect();
    line.push(b'\n');
    line
}

/// The firmware's handler: the demo service through `Context::retry`.
fn demo<IO: embedded_io::Write, S: Storage>(
    ctx: &mut rpcwire_embedded_io::Context<'_, IO, S>,
    item: Incoming<'_>,
) {
    if let Incoming::Request(req) = item {
        ctx.retry(|conn| rpcwire_demo::answer(conn, &req))
            .expect("demo answers fit");
    }
}

#[test]
fn spec_examples_over_a_byte_at_a_time_uart() {
    let mut driver: Driver<Uart, _> =
        Driver::new(Uart::new(3), || Instant::ZERO, Config::default());
    for example in SPEC_EXAMPLES {
        let line = example_line(example.request);
        driver.io_mut().feed(&line);
        while !driver.io().input.is_empty() {
            driver.read_once(demo).expect("no transport error");
        }
        let out = driver.io_mut().take_out();
        match example.response {
            None => assert_eq!(out, "", "{}: expected no answer", example.name),
            Some(expected) => {
                let got = frames(&out);
                assert_eq!(
                    got.len(),
                    1,
                    "{}: one reply frame, got {out:?}",
                    example.name
                );
                assert_eq!(normalize(got[0]), normalize(expected), "{}", example.name);
            }
        }
    }
    let uart = driver.io();
    let fed: usize = SPEC_EXAMPLES
        .iter()
        .map(|e| example_line(e.request).len())
        .sum();
    assert_eq!(uart.reads, fed, "one read per byte");
    assert!(uart.writes > 20, "many small writes");
}

#[test]
fn spec_examples_with_poll_and_all_input_at_once() {
    let mut driver: Driver<Uart, _> =
        Driver::new(Uart::new(2), || Instant::ZERO, Config::default());
    let mut expected = Vec::new();
    for example in SPEC_EXAMPLES {
        driver.io_mut().feed(&example_line(example.request));
        if let Some(r) = example.response {
            expected.push(normalize(r));
        }
    }
    let next = driver.poll(demo).expect("no transport error");
    assert_eq!(next, None, "a pure server has no deadline");
    let out = driver.io_mut().take_out();
    let got: Vec<_> = frames(&out).into_iter().map(normalize).collect();
    assert_eq!(got, expected);
}

/// A UART with nothing to say, constructible in a `const` (for the static driver below).
struct Silent;

impl embedded_io::ErrorType for Silent {
    type Error = Infallible;
}

impl embedded_io::Write for Silent {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        Ok(buf.len())
    }

    fn flush(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}

/// `Driver::new` is a `const fn`: a driver can be a constant or a static's initial value.
const CONST_DRIVER: Driver<
    Silent,
    rpcwire_embedded_io::clock::NoClock,
    Inline<256, 128, 1, 1>,
    256,
> = Driver::new(Silent, rpcwire_embedded_io::clock::NoClock, Config::DEFAULT);

#[test]
fn drivers_are_built_in_const_context_and_in_place() {
    // A constant driver works like any other.
    let mut driver = CONST_DRIVER;
    driver
        .handle_bytes(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"id\":1}\n",
            |ctx, item| {
                if let Incoming::Request(req) = item {
                    ctx.reject(req.handle, ErrorCode::METHOD_NOT_FOUND).unwrap();
                }
            },
        )
        .expect("no transport error");
    assert_eq!(driver.conn().stats().frames_out, 1);

    // `new_in` builds the driver in caller-provided storage (a static's, on a device).
    let mut slot = Box::new(std::mem::MaybeUninit::uninit());
    let driver: &mut Driver<Uart, _> =
        Driver::new_in(&mut slot, Uart::new(3), || Instant::ZERO, Config::default());
    driver
        .io_mut()
        .feed(&example_line(SPEC_EXAMPLES[0].request));
    while !driver.io().input.is_empty() {
        driver.read_once(demo).expect("no transport error");
    }
    let out = driver.io_mut().take_out();
    assert_eq!(
        normalize(frames(&out)[0]),
        normalize(SPEC_EXAMPLES[0].response.expect("answered"))
    );
}

#[test]
fn crlf_split_frames_and_garbage_keep_the_connection() {
    let mut driver: Driver<Uart, _> =
        Driver::new(Uart::new(1), || Instant::ZERO, Config::default());
    driver.io_mut().feed(
        b"\r\n{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1,2],\"id\":7}\r\n\xff\xfe{{{\n",
    );
    driver
        .io_mut()
        .feed(b"{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"\\u00e9\"],\"id\":\"x\"}\n");
    let mut problems = 0;
    driver
        .poll(|ctx, item| {
            if let Incoming::Problem(_) = item {
                problems += 1;
            }
            demo(ctx, item)
        })
        .unwrap();
    let out = driver.io_mut().take_out();
    assert_eq!(
        frames(&out),
        [
            r#"{"jsonrpc":"2.0","result":3,"id":7}"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null}"#,
            r#"{"jsonrpc":"2.0","result":["\u00e9"],"id":"x"}"#,
        ]
    );
    assert_eq!(problems, 1);
}

#[test]
fn oversize_frame_is_answered_and_skipped() {
    // A 256-byte receive buffer: frames up to 254 bytes.
    let mut driver: Driver<Uart, _, rpcwire_embedded_io::DefaultStore, 256> =
        Driver::new(Uart::new(4), || Instant::ZERO, Config::default());
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"{}\"],\"id\":1}}\n",
        "a".repeat(400)
    );
    driver.io_mut().feed(big.as_bytes());
    driver
        .io_mut()
        .feed(b"{\"jsonrpc\":\"2.0\",\"method\":\"get_data\",\"id\":2}\n");
    driver.poll(demo).unwrap();
    let out = driver.io_mut().take_out();
    let got = frames(&out);
    assert_eq!(got.len(), 2, "{out}");
    assert!(
        got[0].contains("-32600") && got[0].contains("frame too large"),
        "{}",
        got[0]
    );
    assert_eq!(got[1], r#"{"jsonrpc":"2.0","result":["hello",5],"id":2}"#);
}

#[test]
fn commands_in_a_handler_retry_when_the_transmit_buffer_is_full() {
    // TX of 256 bytes: five 120-byte notifications and a 200-byte answer cannot all be queued
    // at once, so `Context` writes out and retries.
    let mut driver: Driver<Uart, _, Inline<256, 128, 2, 2>, 512> =
        Driver::new(Uart::new(3), || Instant::ZERO, Config::default());
    let padding = "p".repeat(80);
    let long = "r".repeat(200);
    driver
        .io_mut()
        .feed(b"{\"jsonrpc\":\"2.0\",\"method\":\"go\",\"id\":1}\n");
    driver
        .poll(|ctx, item| {
            if let Incoming::Request(req) = item {
                for i in 0..5 {
                    ctx.send_notification("progress", Some(&(i, padding.as_str())))
                        .expect("retried until it fits");
                }
                ctx.respond(req.handle, &long)
                    .expect("retried until it fits");
            }
        })
        .unwrap();
    let out = driver.io_mut().take_out();
    let got = frames(&out);
    assert_eq!(got.len(), 6, "{out}");
    for (i, frame) in got.iter().take(5).enumerate() {
        assert!(
            frame.starts_with(&format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":\"progress\",\"params\":[{i},"
            )),
            "{frame}"
        );
    }
    assert_eq!(
        got[5],
        format!("{{\"jsonrpc\":\"2.0\",\"result\":\"{long}\",\"id\":1}}")
    );
}

#[test]
fn blocked_input_resumes_after_writing_out() {
    // Twenty garbage lines at once: their Parse error replies (about 75 bytes each) overflow a
    // 256-byte transmit buffer, so input processing stops until the driver writes out.
    let mut driver: Driver<Uart, _, Inline<256, 128, 2, 2>, 2048> =
        Driver::new(Uart::new(5), || Instant::ZERO, Config::default());
    let garbage = "}{\n".repeat(20);
    let taken = driver.handle_bytes(garbage.as_bytes(), demo).unwrap();
    assert_eq!(taken, garbage.len());
    let out = driver.io_mut().take_out();
    let got = frames(&out);
    assert_eq!(got.len(), 20);
    assert!(got.iter().all(|f| f.contains("-32700")));
    assert_eq!(driver.conn().stats().parse_errors, 20);
}

#[test]
fn batch_replies_collect_in_a_small_batch_buffer() {
    // Every element of a batch reserves room for a fallback error reply (about 150 bytes for
    // these), so a 700-byte batch buffer takes four requests, and refuses six.
    let mut driver: Driver<Uart, _, Inline<1024, 700, 2, 2>, 1024> =
        Driver::new(Uart::new(3), || Instant::ZERO, Config::default());
    let batch = |n: usize| {
        "[".to_string()
            + &(0..n)
                .map(|i| {
                    format!(
                        "{{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[{i},1],\"id\":{i}}}"
                    )
                })
                .collect::<Vec<_>>()
                .join(",")
            + "]\n"
    };
    driver.io_mut().feed(batch(4).as_bytes());
    driver.io_mut().feed(batch(6).as_bytes());
    driver.poll(demo).unwrap();
    let out = driver.io_mut().take_out();
    let got = frames(&out);
    let reply: serde_json::Value = serde_json::from_str(got[0]).unwrap();
    assert_eq!(reply.as_array().map(Vec::len), Some(4), "{out}");
    assert_eq!(
        got[1],
        r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request","data":"batch too large"},"id":null}"#
    );
}

#[test]
fn device_calls_the_host_and_gets_the_response() {
    let clock = TestClock::default();
    let mut device: Driver<Uart, _> = Driver::new(Uart::new(3), clock.clone(), Config::default());
    device
        .send_request(
            Token(1),
            "host.time",
            NO_PARAMS,
            Some(Duration::from_secs(1)),
        )
        .unwrap();
    device
        .send_notification("booted", Some(&["fw", "1.0"]))
        .unwrap();
    assert_eq!(device.next_deadline(), Some(Instant::from_millis(1000)));

    // The host: a plain connection that answers whatever it gets with 12345.
    let mut host: Connection = Connection::default();
    let mut host_rx: RxBuffer<[u8; 1024]> = host.rx_buffer();
    let sent = device.io_mut().take_out();
    assert!(
        sent.contains(r#""method":"booted","params":["fw","1.0"]"#),
        "{sent}"
    );
    let mut input = sent.as_bytes();
    let mut notes = 0;
    while let Input::Item(item) = host.handle_input(Instant::ZERO, &mut host_rx, &mut input) {
        match item {
            rpcwire::Inbound::Request(req) => host.respond(req.handle, &12345).unwrap(),
            rpcwire::Inbound::Notification(_) => notes += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(notes, 1);
    let mut reply = Vec::new();
    rpcwire_tests::drain(&mut host, &mut reply);
    device.io_mut().feed(&reply);

    let mut answers = Vec::new();
    clock.advance_ms(10);
    device
        .poll(|_, item| {
            if let Incoming::Response(resp) = item {
                let value: i64 = resp.outcome.expect("a result").decode().unwrap();
                answers.push((resp.token, value));
            }
        })
        .unwrap();
    assert_eq!(answers, [(Token(1), 12345)]);
    assert_eq!(device.next_deadline(), None);
}

#[test]
fn device_request_times_out_while_the_host_is_silent() {
    let clock = TestClock::default();
    let mut device: Driver<Uart, _> = Driver::new(Uart::new(8), clock.clone(), Config::default());
    device
        .send_request(
            Token(9),
            "host.ping",
            NO_PARAMS,
            Some(Duration::from_millis(250)),
        )
        .unwrap();
    let mut failures = Vec::new();
    let mut on_item = |_: &mut rpcwire_embedded_io::Context<'_, Uart>, item: Incoming<'_>| {
        if let Incoming::Event(Event::RequestFailed { token, reason }) = item {
            failures.push((token, reason));
        }
    };
    clock.advance_ms(249);
    assert_eq!(
        device.poll(&mut on_item).unwrap(),
        Some(Instant::from_millis(250))
    );
    clock.advance_ms(1);
    assert_eq!(device.poll(&mut on_item).unwrap(), None);
    assert_eq!(failures, [(Token(9), Failure::TimedOut)]);

    // A late response is a problem, not a crash.
    device
        .io_mut()
        .feed(b"{\"jsonrpc\":\"2.0\",\"result\":1,\"id\":1}\n{\"jsonrpc\":\"2.0\",\"result\":1,\"id\":17}\n");
    let mut unknown = 0;
    device
        .poll(|_, item| {
            if let Incoming::Problem(Problem::UnknownResponse(_)) = item {
                unknown += 1;
            }
        })
        .unwrap();
    assert_eq!(unknown, 2);
}

#[test]
fn transport_errors_are_returned_and_the_driver_recovers() {
    let mut driver: Driver<Uart, _> =
        Driver::new(Uart::new(3), || Instant::ZERO, Config::default());
    driver.io_mut().fail_writes = true;
    driver
        .io_mut()
        .feed(b"{\"jsonrpc\":\"2.0\",\"method\":\"get_data\",\"id\":1}\n");
    assert_eq!(driver.poll(demo), Err(Error::Io(UartError)));
    // The answer is still queued: once the UART works again it goes out.
    driver.io_mut().fail_writes = false;
    driver.poll(demo).unwrap();
    assert_eq!(
        driver.io_mut().take_out(),
        "{\"jsonrpc\":\"2.0\",\"result\":[\"hello\",5],\"id\":1}\n"
    );

    driver.io_mut().zero_writes = true;
    assert_eq!(
        driver.send_notification("x", NO_PARAMS),
        Err(Error::WriteZero)
    );
    driver.io_mut().zero_writes = false;

    // End of stream on a blocking read.
    assert_eq!(driver.read_once(demo), Err(Error::Eof));
    // An answer that can never fit becomes Internal error.
    driver
        .io_mut()
        .feed(b"{\"jsonrpc\":\"2.0\",\"method\":\"get_data\",\"id\":2}\n");
    let mut answered = None;
    driver
        .poll(|ctx, item| {
            if let Incoming::Request(req) = item {
                answered = Some(ctx.respond(req.handle, &"x".repeat(2000)));
            }
        })
        .unwrap();
    assert!(matches!(
        answered,
        Some(Err(rpcwire::RespondError::TooLarge { .. }))
    ));
    let out = driver.io_mut().take_out();
    assert!(out.contains("-32603"), "{out}");
}

#[test]
fn a_transport_error_inside_a_handler_comes_back_from_the_driver() {
    let mut driver: Driver<Uart, _, Inline<256, 128, 2, 2>, 512> =
        Driver::new(Uart::new(3), || Instant::ZERO, Config::default());
    driver
        .io_mut()
        .feed(b"{\"jsonrpc\":\"2.0\",\"method\":\"go\",\"id\":1}\n");
    driver.io_mut().fail_writes = true;
    let mut results = Vec::new();
    let r = driver.poll(|ctx, item| {
        if let Incoming::Request(_) = item {
            for _ in 0..4 {
                results.push(ctx.send_notification("n", Some(&["z".repeat(100)])));
            }
        }
    });
    assert_eq!(r, Err(Error::Io(UartError)));
    // The first fits the transmit buffer; writing out for the second fails, so it and the
    // rest report WouldBlock without touching the UART again.
    assert!(results[0].is_ok(), "{results:?}");
    assert!(
        results[1..]
            .iter()
            .all(|r| matches!(r, Err(rpcwire::SendError::WouldBlock { .. }))),
        "{results:?}"
    );
}

#[test]
fn refused_commands_are_send_errors() {
    let mut driver: Driver<Uart, _, Inline<256, 128, 1, 1>, 256> =
        Driver::new(Uart::new(3), || Instant::ZERO, Config::default());
    driver.send_request(Token(1), "a", NO_PARAMS, None).unwrap();
    assert_eq!(
        driver.send_request(Token(2), "b", NO_PARAMS, None),
        Err(Error::Send(rpcwire::SendError::PendingFull))
    );
    let huge = "h".repeat(400);
    assert!(matches!(
        driver.send_notification("big", Some(&[huge.as_str()])),
        Err(Error::Send(rpcwire::SendError::TooLarge { .. }))
    ));
    let shown = Error::<UartError>::Send(rpcwire::SendError::PendingFull).to_string();
    assert!(shown.contains("pending"), "{shown}");
}

#[test]
fn unknown_methods_and_bad_params_through_reject() {
    let mut driver: Driver<Uart, _> =
        Driver::new(Uart::new(3), || Instant::ZERO, Config::default());
    driver
        .io_mut()
        .feed(b"{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":[1]}\n");
    driver
        .io_mut()
        .feed(b"{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":1}\n");
    driver
        .io_mut()
        .feed(b"{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[1],\"id\":2}\n");
    driver
        .poll(|ctx, item| {
            if let Incoming::Request(req) = item {
                if req.method.eq_str("nope") {
                    ctx.reject(req.handle, ErrorCode::METHOD_NOT_FOUND).unwrap();
                } else {
                    demo(ctx, item);
                }
            }
        })
        .unwrap();
    let out = driver.io_mut().take_out();
    assert_eq!(
        frames(&out),
        [
            r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"},"id":null}"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":1}"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params"},"id":2}"#,
        ]
    );
}

#[test]
fn async_driver_serves_the_spec_examples() {
    let mut driver: AsyncDriver<Uart, _> =
        AsyncDriver::new(Uart::new(3), || Instant::ZERO, Config::default());
    for example in SPEC_EXAMPLES {
        driver.io_mut().feed(&example_line(example.request));
        block_on(async {
            while !driver.io().input.is_empty() {
                driver
                    .read_once(async |ctx, item| {
                        if let Incoming::Request(req) = item {
                            ctx.retry(|conn| rpcwire_demo::answer(conn, &req))
                                .await
                                .unwrap();
                        }
                    })
                    .await
                    .unwrap();
            }
        });
        let out = driver.io_mut().take_out();
        match example.response {
            None => assert_eq!(out, "", "{}", example.name),
            Some(expected) => assert_eq!(
                normalize(out.trim_end()),
                normalize(expected),
                "{}",
                example.name
            ),
        }
    }
}

#[test]
fn async_driver_client_role_and_backpressure() {
    let mut driver: AsyncDriver<Uart, _, Inline<256, 128, 2, 2>, 512> =
        AsyncDriver::new(Uart::new(2), || Instant::ZERO, Config::default());
    let padding = "q".repeat(100);
    block_on(async {
        driver.send_notification("hello", Some(&[1])).await.unwrap();
        driver
            .io_mut()
            .feed(b"{\"jsonrpc\":\"2.0\",\"method\":\"go\",\"id\":1}\n");
        let mut handler = async |ctx: &mut AsyncContext<'_, Uart, Inline<256, 128, 2, 2>>,
                                 item: Incoming<'_>| {
            if let Incoming::Request(req) = item {
                for _ in 0..4 {
                    ctx.send_notification("n", Some(&[padding.as_str()]))
                        .await
                        .unwrap();
                }
                ctx.respond(req.handle, &true).await.unwrap();
            }
        };
        while !driver.io().input.is_empty() {
            driver.read_once(&mut handler).await.unwrap();
        }
    });
    let out = driver.io_mut().take_out();
    let got = frames(&out);
    assert_eq!(got.len(), 6, "{out}");
    assert_eq!(got[0], r#"{"jsonrpc":"2.0","method":"hello","params":[1]}"#);
    assert_eq!(got[5], r#"{"jsonrpc":"2.0","result":true,"id":1}"#);
}

/// A device on a schedule: a `Ticker` clock hands the handler a tick every second, the
/// handler sends a notification from it, and the driver's deadline is the next tick.
#[test]
fn ticks_come_on_schedule_and_the_deadline_covers_them() {
    let clock = TestClock::default();
    let mut ticker = Ticker::new(clock.clone());
    ticker.set_period(Some(Duration::from_secs(1)));
    let mut driver: Driver<Uart, Ticker<TestClock>> =
        Driver::new(Uart::new(5), ticker, Config::default());
    assert_eq!(driver.next_deadline(), Some(Instant::from_millis(1000)));
    let mut ticks = Vec::new();
    let mut sent = 0;
    let mut step = |driver: &mut Driver<Uart, Ticker<TestClock>>, ticks: &mut Vec<Instant>| {
        driver
            .poll(|ctx, item| match item {
                Incoming::Tick(due) => {
                    ticks.push(due);
                    sent += 1;
                    ctx.send_notification("telemetry", Some(&[sent])).unwrap();
                }
                Incoming::Request(req) => ctx.respond(req.handle, &"pong").unwrap(),
                _ => {}
            })
            .unwrap()
    };

    assert_eq!(
        step(&mut driver, &mut ticks),
        Some(Instant::from_millis(1000))
    );
    clock.advance_ms(999);
    step(&mut driver, &mut ticks);
    assert!(ticks.is_empty(), "no tick before its time");
    assert_eq!(driver.io_mut().take_out(), "");

    // Due: one tick, its notification written, the deadline moved a period on.
    clock.advance_ms(1);
    assert_eq!(
        step(&mut driver, &mut ticks),
        Some(Instant::from_millis(2000))
    );
    assert_eq!(ticks, [Instant::from_millis(1000)]);
    assert_eq!(
        driver.io_mut().take_out(),
        "{\"jsonrpc\":\"2.0\",\"method\":\"telemetry\",\"params\":[1]}\n"
    );

    // A tick and a request at the same time: both handled in one call.
    clock.advance_ms(1000);
    driver
        .io_mut()
        .feed(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":7}\n");
    step(&mut driver, &mut ticks);
    let out = driver.io_mut().take_out();
    assert_eq!(
        frames(&out),
        [
            r#"{"jsonrpc":"2.0","method":"telemetry","params":[2]}"#,
            r#"{"jsonrpc":"2.0","result":"pong","id":7}"#
        ]
    );

    // Asleep for 3.5 periods: one late tick, no burst, and the next a period after now.
    clock.advance_ms(3500);
    assert_eq!(
        step(&mut driver, &mut ticks),
        Some(Instant::from_millis(6500))
    );
    assert_eq!(ticks.len(), 3);
    assert_eq!(ticks[2], Instant::from_millis(3000));
    step(&mut driver, &mut ticks);
    assert_eq!(ticks.len(), 3, "the late tick came once");

    // Stopped: no more ticks and no deadline.
    driver.clock_mut().set_period(None);
    clock.advance_ms(10_000);
    assert_eq!(step(&mut driver, &mut ticks), None);
    assert_eq!(ticks.len(), 3);
}

/// A period of zero is taken as the shortest one: a driver call still ends, and the next tick
/// needs the clock to move.
#[test]
fn a_zero_period_cannot_keep_a_driver_call_from_ending() {
    let clock = TestClock::default();
    let mut ticker = Ticker::new(clock.clone());
    ticker.set_period(Some(Duration::ZERO));
    assert_eq!(ticker.period(), Some(rpcwire_embedded_io::clock::MIN_TICK));
    let mut driver: Driver<Uart, _> = Driver::new(Uart::new(5), ticker, Config::default());
    let mut ticks = 0;
    for _ in 0..5 {
        clock.advance_ms(1);
        driver
            .poll(|_, item| ticks += usize::from(matches!(item, Incoming::Tick(_))))
            .unwrap();
        driver.process(|_, _| ticks += 1).unwrap();
    }
    assert_eq!(ticks, 5, "one tick per millisecond the clock moved");
}

#[test]
fn errors_display() {
    let e: Error<Infallible> = Error::WriteZero;
    assert_eq!(e.to_string(), "the writer accepted no bytes");
    assert_eq!(
        embedded_io::Error::kind(&Error::<UartError>::Eof),
        embedded_io::ErrorKind::BrokenPipe
    );
}

/// The device of the dispatch-table tests: what its methods did.
#[derive(Default)]
struct Board {
    led: bool,
    /// Every `count` call's side effect.
    counted: u32,
    celsius: f32,
}

/// The demo methods of `rpcwire serve` as a typed table (integers only; `echo` is answered
/// before the table, as it borrows its params).
fn demo_table() -> Methods<Board, impl MethodList<Board>> {
    fn int(v: RawJson<'_>) -> Option<i64> {
        v.decode::<i64>().ok()
    }
    Methods::new()
        .raw("subtract", |_: &mut Board, p| {
            let p = p.ok_or(MethodError::INVALID_PARAMS)?;
            let (a, b) = if p.is_array() {
                let mut it = p.elements();
                (it.next().and_then(int), it.next().and_then(int))
            } else {
                let (mut a, mut b) = (None, None);
                for (k, v) in p.members() {
                    if k.eq_str("minuend") {
                        a = int(v);
                    } else if k.eq_str("subtrahend") {
                        b = int(v);
                    }
                }
                (a, b)
            };
            a.zip(b)
                .and_then(|(a, b)| a.checked_sub(b))
                .ok_or(MethodError::INVALID_PARAMS)
        })
        .method("sum", |_: &mut Board, v: Vec<i64>| {
            v.iter()
                .try_fold(0i64, |s, n| s.checked_add(*n))
                .ok_or(MethodError::INVALID_PARAMS)
        })
        .method("get_data", |_: &mut Board, _: NoParams| Ok(("hello", 5)))
        .raw("update", |_: &mut Board, _| Ok(()))
        .raw("notify_hello", |_: &mut Board, _| Ok(()))
        .raw("notify_sum", |_: &mut Board, _| Ok(()))
        .method("led.set", |b: &mut Board, (on,): (bool,)| {
            b.led = on;
            Ok(on)
        })
        .method("count", |b: &mut Board, _: NoParams| {
            b.counted += 1;
            Ok(b.counted)
        })
        .method("temp.read", |b: &mut Board, _: NoParams| Ok(b.celsius))
        .method("greet", |_: &mut Board, (name,): (String,)| {
            Ok(format!("hello {name}"))
        })
        .method("big", |_: &mut Board, (n,): (usize,)| Ok("z".repeat(n)))
        .method("fail", |_: &mut Board, _: NoParams| {
            Err::<(), _>(MethodError::new(ErrorCode(-32001), "sensor busy"))
        })
}

/// One handler over the table, as a firmware writes it.
fn serve_table<IO: embedded_io::Write, S: Storage>(
    table: &mut Methods<Board, impl MethodList<Board>>,
    board: &mut Board,
    ctx: &mut rpcwire_embedded_io::Context<'_, IO, S>,
    item: Incoming<'_>,
) {
    match item {
        Incoming::Request(req) if req.method.eq_str("echo") => {
            let _ = ctx.respond(req.handle, &req.params);
        }
        item => {
            table.dispatch(board, ctx, item);
        }
    }
}

#[test]
fn a_typed_table_answers_the_spec_examples() {
    let mut driver: Driver<Uart, _> =
        Driver::new(Uart::new(3), || Instant::ZERO, Config::default());
    let mut table = demo_table();
    let mut board = Board::default();
    for example in SPEC_EXAMPLES {
        driver.io_mut().feed(&example_line(example.request));
        driver
            .poll(|ctx, item| serve_table(&mut table, &mut board, ctx, item))
            .unwrap();
        let out = driver.io_mut().take_out();
        match example.response {
            None => assert_eq!(out, "", "{}", example.name),
            Some(expected) => assert_eq!(
                normalize(out.trim_end()),
                normalize(expected),
                "{}",
                example.name
            ),
        }
    }
}

#[test]
fn a_typed_table_answers_invalid_params_unknown_methods_and_errors() {
    let mut driver: Driver<Uart, _> =
        Driver::new(Uart::new(4), || Instant::ZERO, Config::default());
    let mut table = demo_table();
    let mut board = Board {
        celsius: 21.25,
        ..Board::default()
    };
    let calls = [
        (r#""led.set","params":[true]"#, r#""result":true"#),
        (
            r#""led.set","params":[1]"#,
            r#""error":{"code":-32602,"message":"Invalid params"}"#,
        ),
        (
            r#""led.set","params":[true,false]"#,
            r#""error":{"code":-32602,"message":"Invalid params"}"#,
        ),
        (
            r#""led.set""#,
            r#""error":{"code":-32602,"message":"Invalid params"}"#,
        ),
        (r#""get_data","params":[]"#, r#""result":["hello",5]"#),
        (r#""get_data","params":{}"#, r#""result":["hello",5]"#),
        (
            r#""get_data","params":[1]"#,
            r#""error":{"code":-32602,"message":"Invalid params"}"#,
        ),
        (r#""temp.read""#, r#""result":21.25"#),
        (
            r#""sum","params":[9223372036854775807,1]"#,
            r#""error":{"code":-32602,"message":"Invalid params"}"#,
        ),
        (
            r#""greet","params":["a\"b\u00e9"]"#,
            r#""result":"hello a\"bé""#,
        ),
        (
            r#""fail""#,
            r#""error":{"code":-32001,"message":"sensor busy"}"#,
        ),
        (
            r#""reboot""#,
            r#""error":{"code":-32601,"message":"Method not found"}"#,
        ),
    ];
    for (i, (call, answer)) in calls.iter().enumerate() {
        let line = format!("{{\"jsonrpc\":\"2.0\",\"method\":{call},\"id\":{i}}}\n");
        driver.io_mut().feed(line.as_bytes());
        driver
            .poll(|ctx, item| serve_table(&mut table, &mut board, ctx, item))
            .unwrap();
        let out = driver.io_mut().take_out();
        assert_eq!(
            out,
            format!("{{\"jsonrpc\":\"2.0\",{answer},\"id\":{i}}}\n"),
            "{call}"
        );
    }
    assert!(board.led);

    // A string longer than the unescape buffer once decoded: invalid params, no panic.
    let long = format!(r#"["{}\n"]"#, "x".repeat(methods::UNESCAPE_LEN));
    let line = format!(r#"{{"jsonrpc":"2.0","method":"greet","params":{long},"id":"l"}}"#);
    driver.io_mut().feed(format!("{line}\n").as_bytes());
    driver
        .poll(|ctx, item| serve_table(&mut table, &mut board, ctx, item))
        .unwrap();
    assert!(driver.io_mut().take_out().contains("-32602"));

    // A result that cannot be JSON (NaN) is an Internal error, and the request is done.
    board.celsius = f32::NAN;
    driver
        .io_mut()
        .feed(b"{\"jsonrpc\":\"2.0\",\"method\":\"temp.read\",\"id\":99}\n");
    driver
        .poll(|ctx, item| serve_table(&mut table, &mut board, ctx, item))
        .unwrap();
    assert_eq!(
        driver.io_mut().take_out(),
        "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32603,\"message\":\"Internal error\"},\"id\":99}\n"
    );
    assert_eq!(driver.conn().inflight_len(), 0);
}

/// Notifications run their method (when its params fit) and are never answered; those of
/// methods the table lacks come back to the handler.
#[test]
fn a_typed_table_runs_notifications_without_answering() {
    let mut driver: Driver<Uart, _> =
        Driver::new(Uart::new(4), || Instant::ZERO, Config::default());
    let mut table = demo_table();
    let mut board = Board::default();
    driver.io_mut().feed(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"led.set\",\"params\":[true]}\n\
          {\"jsonrpc\":\"2.0\",\"method\":\"count\"}\n\
          {\"jsonrpc\":\"2.0\",\"method\":\"count\",\"params\":[\"bad\"]}\n\
          {\"jsonrpc\":\"2.0\",\"method\":\"led.blink\"}\n",
    );
    let mut passed_on = Vec::new();
    driver
        .poll(|ctx, item| {
            if let Some(Incoming::Notification(n)) = table.dispatch(&mut board, ctx, item) {
                passed_on.push(n.method.as_str().unwrap_or("?").to_owned());
            }
        })
        .unwrap();
    assert_eq!(driver.io_mut().take_out(), "");
    assert!(board.led);
    assert_eq!(board.counted, 1, "bad params: the method did not run");
    assert_eq!(passed_on, ["led.blink"]);
}

/// Each request runs its method once even when its answer has to wait for transmit room:
/// the table keeps the result while the driver writes out and retries.
#[test]
fn a_typed_method_runs_once_when_its_answer_waits_for_room() {
    let mut driver: Driver<Uart, _, Inline<256, 128, 2, 2>, 512> =
        Driver::new(Uart::new(1), || Instant::ZERO, Config::default());
    let mut table = demo_table();
    let mut board = Board::default();
    let padding = "p".repeat(180);
    for i in 0..5 {
        driver
            .io_mut()
            .feed(format!("{{\"jsonrpc\":\"2.0\",\"method\":\"count\",\"id\":{i}}}\n").as_bytes());
    }
    driver
        .poll(|ctx, item| {
            // Fill the transmit buffer first: the answer finds no room.
            ctx.conn()
                .send_notification("log", Some(&[padding.as_str()]))
                .unwrap();
            table.dispatch(&mut board, ctx, item);
        })
        .unwrap();
    let out = driver.io_mut().take_out();
    let results: Vec<String> = frames(&out)
        .into_iter()
        .filter(|f| f.contains("result"))
        .map(str::to_owned)
        .collect();
    assert_eq!(board.counted, 5, "one side effect per request");
    for (i, result) in results.iter().enumerate() {
        assert_eq!(
            result,
            &format!("{{\"jsonrpc\":\"2.0\",\"result\":{},\"id\":{i}}}", i + 1)
        );
    }
    assert_eq!(results.len(), 5);
}

#[test]
fn a_typed_table_in_an_async_handler() {
    let mut driver: AsyncDriver<Uart, _, Inline<256, 128, 2, 2>, 512> =
        AsyncDriver::new(Uart::new(2), || Instant::ZERO, Config::default());
    let mut table = demo_table();
    let mut board = Board::default();
    let padding = "p".repeat(180);
    driver.io_mut().feed(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"count\",\"id\":1}\n\
          {\"jsonrpc\":\"2.0\",\"method\":\"count\",\"id\":2}\n\
          {\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":3}\n",
    );
    block_on(async {
        while !driver.io().input.is_empty() {
            driver
                .read_once(async |ctx, item| {
                    // Queued bytes before the table: it writes them out before answering.
                    ctx.conn()
                        .send_notification("log", Some(&[padding.as_str()]))
                        .unwrap();
                    ctx.dispatch(&mut table, &mut board, item).await;
                })
                .await
                .unwrap();
        }
    });
    let out = driver.io_mut().take_out();
    let answers: Vec<&str> = frames(&out)
        .into_iter()
        .filter(|f| f.contains("\"id\""))
        .collect();
    assert_eq!(
        answers,
        [
            r#"{"jsonrpc":"2.0","result":1,"id":1}"#,
            r#"{"jsonrpc":"2.0","result":2,"id":2}"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":3}"#
        ]
    );
    assert_eq!(board.counted, 2);
}

/// A UART of a HAL still on embedded-io 0.6: one byte per read, two per write.
#[derive(Default)]
struct OldUart {
    input: VecDeque<u8>,
    out: Vec<u8>,
    fail: bool,
}

impl embedded_io_06::ErrorType for OldUart {
    type Error = embedded_io_06::ErrorKind;
}

impl embedded_io_06::Read for OldUart {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        if self.fail {
            return Err(embedded_io_06::ErrorKind::TimedOut);
        }
        match (self.input.pop_front(), buf.first_mut()) {
            (Some(b), Some(slot)) => {
                *slot = b;
                Ok(1)
            }
            _ => Ok(0),
        }
    }
}

impl embedded_io_06::ReadReady for OldUart {
    fn read_ready(&mut self) -> Result<bool, Self::Error> {
        Ok(!self.input.is_empty())
    }
}

impl embedded_io_06::Write for OldUart {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        let n = buf.len().min(2);
        self.out.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl embedded_io_async_06::Read for OldUart {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        embedded_io_06::Read::read(self, buf)
    }
}

impl embedded_io_async_06::Write for OldUart {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        embedded_io_06::Write::write(self, buf)
    }
}

/// Feature `embedded-io-06`: a 0.6 UART serves the specification's examples through `Io06`,
/// with both drivers, and its errors keep their kind.
#[test]
fn an_embedded_io_06_uart_through_io06() {
    let mut driver: Driver<Io06<OldUart>, _> = Driver::new(
        Io06(OldUart::default()),
        || Instant::ZERO,
        Config::default(),
    );
    let mut async_driver: AsyncDriver<Io06<OldUart>, _> = AsyncDriver::new(
        Io06(OldUart::default()),
        || Instant::ZERO,
        Config::default(),
    );
    for example in SPEC_EXAMPLES {
        let line = example_line(example.request);
        driver.io_mut().0.input.extend(&line);
        driver.poll(demo).unwrap();
        async_driver.io_mut().0.input.extend(&line);
        block_on(async {
            while !async_driver.io().0.input.is_empty() {
                async_driver
                    .read_once(async |ctx, item| {
                        if let Incoming::Request(req) = item {
                            let _ = ctx.retry(|conn| rpcwire_demo::answer(conn, &req)).await;
                        }
                    })
                    .await
                    .unwrap();
            }
        });
        for out in [
            std::mem::take(&mut driver.io_mut().0.out),
            std::mem::take(&mut async_driver.io_mut().0.out),
        ] {
            let out = String::from_utf8(out).unwrap();
            match example.response {
                None => assert_eq!(out, "", "{}", example.name),
                Some(expected) => {
                    assert_eq!(
                        normalize(out.trim_end()),
                        normalize(expected),
                        "{}",
                        example.name
                    )
                }
            }
        }
    }
    driver.io_mut().0.fail = true;
    driver.io_mut().0.input.push_back(b'\n');
    let err = driver.read_once(demo).unwrap_err();
    assert_eq!(
        embedded_io::Error::kind(&err),
        embedded_io::ErrorKind::TimedOut
    );
    assert_eq!(
        err,
        Error::Io(Io06Error(embedded_io_06::ErrorKind::TimedOut))
    );
}

/// A clock whose `sleep_until` moves time on to the instant asked for (simulated time: a
/// test's async driver waits in no real time).
#[derive(Clone, Default)]
struct SimClock(TestClock);

impl rpcwire_embedded_io::Clock for SimClock {
    fn now(&mut self) -> Instant {
        self.0.now()
    }
}

impl rpcwire_embedded_io::asynch::Timer for SimClock {
    async fn sleep_until(&mut self, at: Instant) {
        let now = self.0.now();
        if at > now {
            self.0
                .advance_ms((at.as_micros() - now.as_micros()).div_ceil(1000));
        }
    }
}

type Outbox4 = Outbox<embassy_sync::blocking_mutex::raw::NoopRawMutex, 4, 48>;

/// Another task's notifications go out through the outbox while the async driver serves:
/// in order, between the host's calls, with the driver's ticks, and never more than the
/// outbox holds.
#[test]
fn the_outbox_carries_other_tasks_notifications_while_serving() {
    let outbox = Outbox4::new();
    let sim = SimClock::default();
    let mut ticker = Ticker::new(sim.clone());
    ticker.set_period(Some(Duration::from_secs(1)));
    let mut uart = Uart::new(3);
    uart.idle_waits = true;
    let mut driver: AsyncDriver<Uart, Ticker<SimClock>> =
        AsyncDriver::new(uart, ticker, Config::default());

    // Queued before the driver runs: sent first, in order.
    block_on(outbox.notify("button", Some(&["pressed"]))).unwrap();
    block_on(outbox.notify("button", None::<&()>)).unwrap();
    assert_eq!(outbox.len(), 2);
    let ticks = std::cell::Cell::new(0);
    let mut handler = async |ctx: &mut AsyncContext<'_, Uart>, item: Incoming<'_>| match item {
        Incoming::Request(req) => {
            let _ = ctx.respond(req.handle, &"pong").await;
        }
        Incoming::Tick(_) => ticks.set(ticks.get() + 1),
        _ => {}
    };
    block_on(async {
        driver.wait_once(&outbox, &mut handler).await.unwrap();
        driver.wait_once(&outbox, &mut handler).await.unwrap();
    });
    assert!(outbox.is_empty());
    assert_eq!(
        frames(&driver.io_mut().take_out()),
        [
            r#"{"jsonrpc":"2.0","method":"button","params":["pressed"]}"#,
            r#"{"jsonrpc":"2.0","method":"button"}"#
        ]
    );
    assert_eq!(
        sim.0.now(),
        Instant::ZERO,
        "no waiting while notes were queued"
    );

    // A call from the host and a note at once: both done, the call first (input wins).
    driver
        .io_mut()
        .feed(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":1}\n");
    outbox.try_notify("temp", Some(&21.5f32)).unwrap();
    block_on(async {
        while !driver.io().input.is_empty() || !outbox.is_empty() {
            driver.wait_once(&outbox, &mut handler).await.unwrap();
        }
    });
    assert_eq!(
        frames(&driver.io_mut().take_out()),
        [
            r#"{"jsonrpc":"2.0","result":"pong","id":1}"#,
            r#"{"jsonrpc":"2.0","method":"temp","params":21.5}"#
        ]
    );

    // Nothing to read and nothing queued: the driver sleeps until the tick.
    block_on(async {
        driver.wait_once(&outbox, &mut handler).await.unwrap();
    });
    assert_eq!(sim.0.now(), Instant::from_millis(1000));
    assert_eq!(ticks.get(), 1);

    // Bounded: a full outbox refuses (try_notify) or waits (notify); params too large or not
    // JSON are refused before they take a slot.
    for i in 0..4 {
        outbox.try_notify("n", Some(&[i])).unwrap();
    }
    assert_eq!(outbox.try_notify("n", Some(&[5])), Err(NotifyError::Full));
    let mut waiting = std::pin::pin!(outbox.notify("n", Some(&[6])));
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    assert!(waiting.as_mut().poll(&mut cx).is_pending());
    assert_eq!(
        outbox.try_notify("n", Some(&"x".repeat(60))),
        Err(NotifyError::TooLarge { required: 62 })
    );
    assert!(matches!(
        outbox.try_notify("n", Some(&f32::NAN)),
        Err(NotifyError::Serialize(_))
    ));
    block_on(async {
        driver.wait_once(&outbox, &mut handler).await.unwrap();
    });
    assert!(
        waiting.as_mut().poll(&mut cx).is_ready(),
        "a slot came free"
    );
    assert_eq!(outbox.len(), 4);
}

/// A note longer than the transmit buffer is the caller's sizing mistake: an error from the
/// driver call, after which the driver serves on.
#[test]
fn an_outbox_note_the_connection_refuses_is_an_error_and_serving_goes_on() {
    let outbox: Outbox<embassy_sync::blocking_mutex::raw::NoopRawMutex, 2, 400> = Outbox::new();
    let mut uart = Uart::new(8);
    uart.idle_waits = true;
    let mut driver: AsyncDriver<Uart, SimClock, Inline<256, 128, 2, 2>, 256> =
        AsyncDriver::new(uart, SimClock::default(), Config::default());
    outbox.try_notify("big", Some(&"y".repeat(300))).unwrap();
    outbox.try_notify("small", Some(&1)).unwrap();
    let mut handler =
        async |_: &mut AsyncContext<'_, Uart, Inline<256, 128, 2, 2>>, _: Incoming<'_>| {};
    let first = block_on(driver.wait_once(&outbox, &mut handler));
    assert!(
        matches!(first, Err(Error::Send(rpcwire::SendError::TooLarge { .. }))),
        "{first:?}"
    );
    block_on(driver.wait_once(&outbox, &mut handler)).unwrap();
    assert_eq!(
        frames(&driver.io_mut().take_out()),
        [r#"{"jsonrpc":"2.0","method":"small","params":1}"#]
    );
}
