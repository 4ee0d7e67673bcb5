//! The firmware images on emulated microcontrollers, UART0 on a TCP socket: examples/firmware
//! on a Cortex-M3 (qemu's `lm3s6965evb`; in a second run, on a host pty reached through
//! rpcwire-serial), examples/firmware-m0 on a Cortex-M0 (qemu's `microbit`, nRF51822) and
//! examples/firmware-embassy on a Cortex-M4F (qemu's `mps2-an386`). Every example of the
//! JSON-RPC 2.0 specification must get exactly the specification's answer (JSON values
//! compared, batch replies as sets), including batches and invalid JSON.
//!
//! The tests build the images themselves (`cargo build --release` in each image's folder,
//! into its `target/`). They skip, printing `SKIPPED:`, when qemu-system-arm or an image's
//! target is missing, unless CI=true, in which case they fail.
//! It prints `FIRMWARE_STACK_USED=<bytes>` and records it in `target/figures/` (read by
//! .ci/after/firmware.sh).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rpcwire::wire::RawJson;
use rpcwire::{Config, Token};
use rpcwire_demo::spec::{one_line, SPEC_EXAMPLES};
use rpcwire_embedded_io::Incoming;
use rpcwire_tests::firmware::{self, qemu, Image};
use rpcwire_tests::normalize;
use rpcwire_tests::Killed;
use serde_json::Value;

/// Newline-framed reading over a TCP stream.
struct Link {
    stream: TcpStream,
    pending: Vec<u8>,
    /// Notifications of this method are not replies: [`Link::line`] sets them aside in
    /// `notes`, with the time they arrived.
    skip: Option<&'static str>,
    notes: Vec<(Instant, Value)>,
}

impl Link {
    fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send to the firmware");
    }

    /// The next line, waiting at most `timeout`.
    fn line(&mut self, timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(nl) = self.pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=nl).collect();
                let line = String::from_utf8(line)
                    .expect("utf-8")
                    .trim_end()
                    .to_owned();
                if let Some(method) = self.skip {
                    if let Ok(note) = serde_json::from_str::<Value>(&line) {
                        if note["method"] == method && note.get("id").is_none() {
                            self.notes.push((Instant::now(), note));
                            continue;
                        }
                    }
                }
                return Some(line);
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            self.stream
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .expect("set timeout");
            let mut buf = [0u8; 2048];
            match self.stream.read(&mut buf) {
                Ok(0) => panic!("qemu closed the serial socket"),
                Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => panic!("read from qemu: {e}"),
            }
        }
    }

    /// Sends one line and returns the one reply it must get.
    fn exchange(&mut self, request: &str) -> Value {
        self.send(format!("{request}\n").as_bytes());
        let reply = self
            .line(Duration::from_secs(10))
            .unwrap_or_else(|| panic!("no reply to {request}"));
        serde_json::from_str(&reply).expect("the reply is JSON")
    }
}

/// Starts the firmware with UART0 on a TCP socket qemu listens on (qemu waits for us before
/// running the guest, so nothing it sends is lost).
fn start_tcp(elf: &Path) -> (Killed, Link) {
    let (guard, stream) = firmware::start_on_socket(elf);
    (
        guard,
        Link {
            stream,
            pending: Vec::new(),
            skip: None,
            notes: Vec::new(),
        },
    )
}

/// Builds `image` and starts it with its UART on a socket; `None` when skipped.
fn start_image(image: &Image) -> Option<(Killed, Link)> {
    if !firmware::have_qemu() {
        return None;
    }
    let elf = firmware::build_image(image)?;
    let (guard, stream) = firmware::start_on_socket_of(image.machine, &elf);
    Some((
        guard,
        Link {
            stream,
            pending: Vec::new(),
            skip: None,
            notes: Vec::new(),
        },
    ))
}

/// Every example of the specification, answered exactly as the specification shows.
fn check_spec_examples(link: &mut Link) {
    for example in SPEC_EXAMPLES {
        let mut line: Vec<u8> = one_line(example.request).collect();
        line.push(b'\n');
        link.send(&line);
        match example.response {
            Some(expected) => {
                let reply = link
                    .line(Duration::from_secs(10))
                    .unwrap_or_else(|| panic!("{}: no reply", example.name));
                assert_eq!(normalize(&reply), normalize(expected), "{}", example.name);
            }
            None => {
                // Nothing at all: the next request's answer must be the next line.
                let probe = link.exchange(r#"{"jsonrpc":"2.0","method":"get_data","id":"probe"}"#);
                assert_eq!(
                    probe["id"], "probe",
                    "{}: answered a notification: {probe}",
                    example.name
                );
            }
        }
    }
}

#[test]
fn firmware_answers_every_spec_example_in_qemu() {
    if !firmware::have_qemu() {
        return;
    }
    let Some(elf) = firmware::build("rpcwire-firmware") else {
        return;
    };
    let (_qemu, mut link) = start_tcp(&elf);

    // One notification on boot.
    let booted: Value = serde_json::from_str(
        &link
            .line(Duration::from_secs(20))
            .expect("boot notification"),
    )
    .expect("JSON");
    assert_eq!(booted["method"], "booted", "{booted}");
    assert_eq!(booted["params"]["firmware"], "rpcwire-firmware");
    assert!(
        booted.get("id").is_none(),
        "a notification has no id: {booted}"
    );

    check_spec_examples(&mut link);
    check_demo_limits(&mut link);

    let stats = link.exchange(r#"{"jsonrpc":"2.0","method":"rpc.stats","id":"s"}"#);
    let used = stats["result"]["stack_used"].as_u64().expect("stack_used");
    assert!(used > 0 && used < 16 * 1024, "{stats}");
    println!("firmware stats: {}", stats["result"]);
    println!("FIRMWARE_STACK_USED={used}");
    firmware::record_figure("firmware-stack-used", used);
}

/// The Cortex-M0 image (interrupt-driven UART, `Driver::handle_bytes`) on qemu's micro:bit:
/// the specification's examples and the demo image's limits, byte for byte the same.
#[test]
fn cortex_m0_image_answers_every_spec_example_on_microbit() {
    let Some((_qemu, mut link)) = start_image(&firmware::M0) else {
        return;
    };
    check_spec_examples(&mut link);
    check_demo_limits(&mut link);
    let stats = link.exchange(r#"{"jsonrpc":"2.0","method":"rpc.stats","id":"s"}"#);
    assert_eq!(stats["error"]["code"], -32601, "not on this image: {stats}");
}

/// The embassy image on qemu's mps2-an386 (Cortex-M4F): the async driver answers the
/// specification's examples and the demo image's checks, while a second embassy task's
/// `telemetry` notification arrives every second, none lost, between the answers.
#[test]
fn embassy_image_answers_while_another_task_notifies_every_second() {
    let Some((_qemu, mut link)) = start_image(&firmware::EMBASSY) else {
        return;
    };
    link.skip = Some("telemetry");
    let start = Instant::now();
    check_spec_examples(&mut link);
    check_demo_limits(&mut link);
    // Calls for a few more seconds, each answered at once.
    let mut calls = 0;
    while start.elapsed() < Duration::from_secs(5) || link.notes.len() < 4 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{} notes",
            link.notes.len()
        );
        let sum = link.exchange(r#"{"jsonrpc":"2.0","method":"sum","params":[1,2],"id":"t"}"#);
        assert_eq!(sum["result"], 3, "{sum}");
        calls += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    let notes = &link.notes;
    println!(
        "embassy image: {calls} calls, {} telemetry notifications",
        notes.len()
    );
    for pair in notes.windows(2) {
        let ((t0, a), (t1, b)) = (&pair[0], &pair[1]);
        assert_eq!(
            b["params"]["seq"],
            a["params"]["seq"].as_u64().unwrap() + 1,
            "none lost"
        );
        let guest =
            b["params"]["uptime_ms"].as_u64().unwrap() - a["params"]["uptime_ms"].as_u64().unwrap();
        assert!(
            (950..=1050).contains(&guest),
            "a second apart on the device: {guest} ms"
        );
        // On the host's clock, qemu's time may run slow on a loaded machine (it did, 3.9 s
        // apart, with the whole workspace testing beside it): the check is only that they
        // keep coming while calls are answered.
        let host = t1.duration_since(*t0);
        assert!(
            host > Duration::from_millis(300) && host < Duration::from_secs(10),
            "they keep coming here: {host:?} apart"
        );
    }
}

/// The typed-methods image (three methods in a dispatch table, 34 lines of handler code):
/// typed results (an `f32` among them), Invalid params and Method not found as the
/// specification words them, and the driver's own schedule sending `telemetry` every second.
#[test]
fn typed_image_answers_its_methods_and_ticks_every_second() {
    let Some((_qemu, mut link)) = start_image(&firmware::TYPED) else {
        return;
    };
    link.skip = Some("telemetry");
    let cases = [
        (
            r#""temp.read""#,
            r#"{"jsonrpc":"2.0","result":21.5,"id":1}"#,
        ),
        (
            r#""temp.read","params":[]"#,
            r#"{"jsonrpc":"2.0","result":21.5,"id":1}"#,
        ),
        (
            r#""led.set","params":[true]"#,
            r#"{"jsonrpc":"2.0","result":true,"id":1}"#,
        ),
        (
            r#""add","params":[40,2]"#,
            r#"{"jsonrpc":"2.0","result":42,"id":1}"#,
        ),
        (
            r#""add","params":[2147483647,1]"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params"},"id":1}"#,
        ),
        (
            r#""led.set","params":["on"]"#,
            r#"{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params"},"id":1}"#,
        ),
        (
            r#""led.set""#,
            r#"{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params"},"id":1}"#,
        ),
        (
            r#""foobar""#,
            r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":1}"#,
        ),
    ];
    for (call, answer) in cases {
        let line = format!(r#"{{"jsonrpc":"2.0","method":{call},"id":1}}"#);
        link.send(format!("{line}\n").as_bytes());
        let reply = link.line(Duration::from_secs(10)).expect("a reply");
        assert_eq!(reply, answer, "{call}");
    }
    let start = Instant::now();
    while link.notes.len() < 3 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "telemetry every second"
        );
        let _ = link.line(Duration::from_millis(200));
    }
    for (_, note) in &link.notes {
        assert_eq!(note["params"]["centi_celsius"], 2150, "{note}");
    }
    assert_eq!(
        link.notes.last().map(|(_, n)| n["params"]["led"].clone()),
        Some(Value::Bool(true))
    );
}

/// The demo methods beyond the specification's examples, and the limits of an image with a
/// 1 KiB receive and transmit buffer.
fn check_demo_limits(link: &mut Link) {
    // The rest of the demo methods, and the firmware's limits.
    let echo = link.exchange(r#"{"jsonrpc":"2.0","method":"echo","params":{"k":[1,2,{"z":null}],"s":"\u00e9\n"},"id":[]}"#);
    assert_eq!(
        echo["error"]["code"], -32600,
        "an array id is invalid: {echo}"
    );
    let echo = link.exchange(r#"{"jsonrpc":"2.0","method":"echo","params":{"k":[1,2,{"z":null}],"s":"\u00e9\n"},"id":-7.5}"#);
    assert_eq!(
        echo["result"],
        serde_json::json!({"k":[1,2,{"z":null}],"s":"\u{e9}\n"})
    );
    assert_eq!(echo["id"], -7.5);
    let sum =
        link.exchange(r#"{"jsonrpc":"2.0","method":"sum","params":[1,-2,3000000000],"id":1}"#);
    assert_eq!(sum["result"], 2999999999i64);
    let bad = link.exchange(r#"{"jsonrpc":"2.0","method":"sum","params":[1.5],"id":2}"#);
    assert_eq!(bad["error"]["code"], -32602, "integers only: {bad}");
    let update = link.exchange(r#"{"jsonrpc":"2.0","method":"update","params":[1],"id":3}"#);
    assert_eq!(update["result"], Value::Null);

    // A frame over the 1 KiB receive buffer is answered and skipped; the next one works.
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"echo","params":["{}"],"id":4}}"#,
        "a".repeat(1100)
    );
    let too_large = link.exchange(&big);
    assert_eq!(too_large["error"]["data"], "frame too large", "{too_large}");
    // Just under the limit: the echo fits the 1 KiB transmit buffer too.
    let fits = format!(
        r#"{{"jsonrpc":"2.0","method":"echo","params":["{}"],"id":5}}"#,
        "b".repeat(900)
    );
    assert_eq!(
        link.exchange(&fits)["result"][0].as_str().map(str::len),
        Some(900)
    );

    // Bytes trickling in one at a time, split across reads.
    for b in b"{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,8],\"id\":6}\n" {
        link.send(&[*b]);
    }
    let trickled: Value =
        serde_json::from_str(&link.line(Duration::from_secs(10)).expect("reply")).unwrap();
    assert_eq!(trickled["result"], -3);

    // Several frames in one write, answered in order.
    link.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1],\"id\":7}\n\xff\n{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[2],\"id\":8}\n");
    let replies: Vec<Value> = (0..3)
        .map(|_| serde_json::from_str(&link.line(Duration::from_secs(10)).expect("reply")).unwrap())
        .collect();
    assert_eq!(replies[0]["result"], 1);
    assert_eq!(replies[1]["error"]["code"], -32700);
    assert_eq!(replies[2]["result"], 2);

    // Raw UTF-8 in strings, checked by the firmware's own compact validator (32-bit targets
    // link no `core::str::from_utf8`): well-formed text of every length is echoed byte-exact;
    // overlong forms, surrogates, code points over U+10FFFF, stray continuation bytes and cut
    // sequences are parse errors, and the next frame is answered.
    let text = "é ✓ 𝄞";
    let echo = link.exchange(&format!(
        r#"{{"jsonrpc":"2.0","method":"echo","params":["{text}"],"id":9}}"#
    ));
    assert_eq!(echo["result"][0], text, "{echo}");
    for bad in [
        &b"\xc0\xaf"[..],
        b"\xed\xa0\x80",
        b"\xf4\x90\x80\x80",
        b"\x80",
        b"\xe2\x82",
        b"\xf0\x9d\x84",
    ] {
        let mut frame = br#"{"jsonrpc":"2.0","method":"echo","params":[""#.to_vec();
        frame.extend_from_slice(bad);
        frame.extend_from_slice(b"\"],\"id\":10}\n");
        link.send(&frame);
        let reply: Value =
            serde_json::from_str(&link.line(Duration::from_secs(10)).expect("reply")).unwrap();
        assert_eq!(reply["error"]["code"], -32700, "{bad:x?}: {reply}");
        assert_eq!(reply["id"], Value::Null);
    }
    // Escapes in member names and method names are decoded byte by byte on the device.
    let escaped =
        link.exchange(r#"{"jsonrpc":"2.0","m\u0065thod":"s\u0075m","\u0070arams":[2,3],"id":11}"#);
    assert_eq!(escaped["result"], 5, "{escaped}");
}

/// `rpc.stats` counts exactly what was sent: requests, notifications, garbage lines, invalid
/// requests, a batch and an oversize frame, each kind by its own counter.
#[test]
fn rpc_stats_counts_what_was_sent() {
    if !firmware::have_qemu() {
        return;
    }
    let Some(elf) = firmware::build("rpcwire-firmware") else {
        return;
    };
    let (_qemu, mut link) = start_tcp(&elf);
    link.line(Duration::from_secs(20))
        .expect("boot notification");

    let requests = [
        r#"{"jsonrpc":"2.0","method":"sum","params":[1,2],"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"no_such_method","id":2}"#,
        r#"{"jsonrpc":"2.0","method":"echo","params":["x"],"id":3}"#,
    ];
    for request in requests {
        assert!(link.exchange(request).get("id").is_some());
    }
    let garbage = ["garbage", r#"{"jsonrpc":"#, "[1,2"];
    for line in garbage {
        assert_eq!(link.exchange(line)["error"]["code"], -32700, "{line}");
    }
    let invalid = [r#"{"jsonrpc":"2.0","method":1,"id":4}"#, r#"{"foo":"bar"}"#];
    for line in invalid {
        assert_eq!(link.exchange(line)["error"]["code"], -32600, "{line}");
    }
    let notifications = [
        r#"{"jsonrpc":"2.0","method":"notify_hello","params":[7]}"#,
        r#"{"jsonrpc":"2.0","method":"update","params":[1]}"#,
    ];
    for line in notifications {
        link.send(format!("{line}\n").as_bytes());
    }
    // A batch of one request and one notification: a reply of one element.
    let batch = link.exchange(
        r#"[{"jsonrpc":"2.0","method":"sum","params":[4],"id":5},{"jsonrpc":"2.0","method":"notify_hello"}]"#,
    );
    assert_eq!(batch.as_array().map(Vec::len), Some(1), "{batch}");
    let oversize = format!(
        r#"{{"jsonrpc":"2.0","method":"echo","params":["{}"],"id":6}}"#,
        "a".repeat(1100)
    );
    assert_eq!(link.exchange(&oversize)["error"]["code"], -32600);

    let stats = link.exchange(r#"{"jsonrpc":"2.0","method":"rpc.stats","id":7}"#);
    let stats = &stats["result"];
    println!("rpc.stats: {stats}");
    // Every line above is a frame, and so is the `rpc.stats` call itself; its own answer is
    // not yet counted when it is rendered.
    let frames = requests.len() + garbage.len() + invalid.len() + notifications.len() + 1 + 1 + 1;
    let expected = [
        ("frames_in", frames),
        ("requests_in", requests.len() + 1 + 1),
        ("notifications_in", notifications.len() + 1),
        ("responses_out", requests.len() + 1),
        ("batches_in", 1),
        ("parse_errors", garbage.len()),
        ("invalid_messages", invalid.len()),
        ("oversize_frames", 1),
    ];
    for (name, count) in expected {
        assert_eq!(stats[name], count as u64, "{name} in {stats}");
    }
    // Counting goes on: the previous call's answer and this call.
    let again = link.exchange(r#"{"jsonrpc":"2.0","method":"rpc.stats","id":8}"#);
    assert_eq!(again["result"]["requests_in"], requests.len() as u64 + 3);
    assert_eq!(again["result"]["responses_out"], requests.len() as u64 + 2);
    assert_eq!(again["result"]["frames_in"], frames as u64 + 1);
}

#[test]
fn host_reaches_the_firmware_through_a_pty_with_rpcwire_serial() {
    if !firmware::have_qemu() {
        return;
    }
    let Some(elf) = firmware::build("rpcwire-firmware") else {
        return;
    };
    let mut child = qemu(&elf, &["-serial", "pty"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn qemu");
    // qemu names the pty on stdout (older versions) or stderr.
    let (tx, rx) = std::sync::mpsc::channel();
    for stream in [
        Box::new(child.stdout.take().expect("stdout")) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().expect("stderr")),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("redirected to ").nth(1) {
                    let path = rest.split_whitespace().next().unwrap_or("").to_owned();
                    let _ = tx.send(path);
                }
            }
        });
    }
    let _qemu = Killed(child);
    let path = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("qemu names its pty");
    let port = rpcwire_serial::open(&path, 115_200).expect("open qemu's pty");
    let mut host = rpcwire_serial::driver(port, Config::default());

    // qemu notices that the pty's other end was opened on a 1 s timer and drops what the
    // guest writes before: call `rpc.stats` with short timeouts until one is answered.
    let mut synced = false;
    for token in 100..120 {
        host.send_request(
            Token(token),
            "rpc.stats",
            rpcwire::wire::NO_PARAMS,
            Some(Duration::from_millis(500)),
        )
        .expect("send");
        let mut done = false;
        while !done {
            host.poll(|_, item| match item {
                Incoming::Response(r) if r.token == Token(token) => {
                    synced = true;
                    done = true;
                }
                Incoming::Event(_) => done = true,
                _ => {}
            })
            .expect("serial transport");
            std::thread::sleep(Duration::from_millis(1));
        }
        if synced {
            break;
        }
    }
    assert!(synced, "the firmware never answered on {path}");

    let mut call = |token: u64, method: &str, params: &str| -> Value {
        let params = RawJson::parse(params, 16).expect("params");
        host.send_request(
            Token(token),
            method,
            Some(&params),
            Some(Duration::from_secs(10)),
        )
        .expect("send");
        let mut got = None;
        while got.is_none() {
            host.poll(|_, item| match item {
                Incoming::Response(r) if r.token == Token(token) => {
                    got = Some(match r.outcome {
                        Ok(v) => serde_json::from_str(v.as_str()).expect("JSON result"),
                        Err(e) => serde_json::json!({"error": e.code.0}),
                    });
                }
                Incoming::Event(e) => panic!("{method}: {e:?}"),
                _ => {} // the boot notification, if the pty was open in time
            })
            .expect("serial transport");
            std::thread::sleep(Duration::from_millis(1));
        }
        got.expect("set above")
    };
    assert_eq!(call(1, "sum", "[1,2,4]"), serde_json::json!(7));
    assert_eq!(
        call(2, "subtract", r#"{"minuend":42,"subtrahend":23}"#),
        serde_json::json!(19)
    );
    assert_eq!(call(3, "nope", "[]"), serde_json::json!({"error": -32601}));
    assert!(call(4, "rpc.stats", "{}")["stack_used"].as_u64().is_some());
}

/// `_meta` of a 2026-07-28 request: its revision and the client's capabilities (and, as the
/// specification recommends, its name).
const META_2026: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"qemu-test","version":"1"}}"#;

/// The MCP image (examples/firmware, `rpcwire-firmware-mcp`) speaks MCP 2026-07-28 over its
/// UART with no `initialize`: `server/discover`, `tools/list` and `tools/call` (with progress)
/// answered exactly, `resultType` on every result; the specification's refusals of a request
/// whose `_meta` is missing or incomplete, or names an unknown revision, and of the methods
/// 2026-07-28 removed; then, on the same line, an `initialize` session whose results stay as
/// the session revisions have them (both revisions at once).
#[test]
fn mcp_image_answers_2026_07_28_discover_and_tools_call_over_its_uart() {
    if !firmware::have_qemu() {
        return;
    }
    let Some(elf) = firmware::build("rpcwire-firmware-mcp") else {
        return;
    };
    let (_qemu, mut link) = start_tcp(&elf);
    let booted: Value = serde_json::from_str(
        &link
            .line(Duration::from_secs(20))
            .expect("boot notification"),
    )
    .expect("JSON");
    assert_eq!(
        booted["params"]["firmware"], "rpcwire-firmware-mcp",
        "{booted}"
    );
    let version = booted["params"]["version"]
        .as_str()
        .expect("version")
        .to_owned();
    let expect = |link: &mut Link, request: &str, expected: Value| {
        let reply = link.exchange(request);
        assert_eq!(reply, expected, "{request}");
    };

    expect(
        &mut link,
        &format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{META_2026}}}}}"#
        ),
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {
            "supportedVersions": ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"],
            "capabilities": {"tools": {"listChanged": false}},
            "instructions": "A Cortex-M3 board: read its counter, switch or blink its LED, add integers.",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "rpcwire-firmware-mcp", "version": version}},
            "resultType": "complete", "ttlMs": 0, "cacheScope": "private"}}),
    );
    expect(
        &mut link,
        &format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"add","arguments":{{"a":40,"b":2}},{META_2026}}}}}"#
        ),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "result": {
            "content": [{"type": "text", "text": "42"}], "isError": false, "resultType": "complete"}}),
    );
    // A failing tool is a result too, with `resultType`.
    expect(
        &mut link,
        &format!(
            r#"{{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{{"name":"set_led","arguments":{{"on":1}},{META_2026}}}}}"#
        ),
        serde_json::json!({"jsonrpc": "2.0", "id": "s", "result": {
            "content": [{"type": "text", "text": "set_led expects {\"on\": true or false}"}],
            "isError": true, "resultType": "complete"}}),
    );
    let list = link.exchange(&format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{{{META_2026}}}}}"#
    ));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["read_counter", "set_led", "add", "blink"], "{list}");
    assert_eq!(
        (
            &list["result"]["resultType"],
            &list["result"]["ttlMs"],
            &list["result"]["cacheScope"]
        ),
        (
            &Value::from("complete"),
            &Value::from(0),
            &Value::from("private")
        ),
        "{list}"
    );
    // Progress before the result, as on the session revisions.
    link.send(
        concat!(
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"blink","arguments":{"times":2},"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
            "\n"
        )
        .as_bytes(),
    );
    for done in 1..=2 {
        let note: Value =
            serde_json::from_str(&link.line(Duration::from_secs(10)).expect("progress")).unwrap();
        assert_eq!(
            note,
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": "p", "progress": done, "total": 2}})
        );
    }
    let done: Value =
        serde_json::from_str(&link.line(Duration::from_secs(10)).expect("result")).unwrap();
    assert_eq!(
        done,
        serde_json::json!({"jsonrpc": "2.0", "id": 4, "result": {
            "content": [{"type": "text", "text": "blinked 2 times"}], "isError": false,
            "resultType": "complete"}})
    );

    // Refusals. `server/discover` without `_meta`, or a `_meta` lacking a key: Invalid params.
    let error = |id: u32, code: i32, message: &str| serde_json::json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    expect(
        &mut link,
        r#"{"jsonrpc":"2.0","id":10,"method":"server/discover","params":{}}"#,
        error(10, -32602, "Invalid params"),
    );
    expect(
        &mut link,
        r#"{"jsonrpc":"2.0","id":11,"method":"server/discover"}"#,
        error(11, -32602, "Invalid params"),
    );
    expect(
        &mut link,
        r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        error(12, -32602, "Invalid params"),
    );
    expect(
        &mut link,
        r#"{"jsonrpc":"2.0","id":13,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}"#,
        error(13, -32602, "Invalid params"),
    );
    expect(
        &mut link,
        r#"{"jsonrpc":"2.0","id":14,"method":"tools/list","params":{"_meta":"2026-07-28"}}"#,
        error(14, -32602, "Invalid params"),
    );
    // A revision nobody speaks: UnsupportedProtocolVersionError.
    expect(
        &mut link,
        r#"{"jsonrpc":"2.0","id":15,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
        error(15, -32022, "Server error"),
    );
    // Methods 2026-07-28 removed.
    for (id, method) in [(16, "ping"), (17, "initialize"), (18, "logging/setLevel")] {
        expect(
            &mut link,
            &format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{META_2026}}}}}"#
            ),
            error(id, -32601, "Method not found"),
        );
    }
    // No `_meta` revision and no `initialize`: the session revisions' refusal.
    expect(
        &mut link,
        r#"{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}"#,
        error(19, -32600, "Invalid Request"),
    );
    // An unknown tool stays Invalid params; the one after it runs.
    expect(
        &mut link,
        &format!(
            r#"{{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{{"name":"nope",{META_2026}}}}}"#
        ),
        error(20, -32602, "Invalid params"),
    );

    // The session revisions beside it, on the same line.
    let init = link.exchange(
        r#"{"jsonrpc":"2.0","id":30,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"qemu-test","version":"1"}}}"#,
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    link.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    expect(
        &mut link,
        r#"{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"name":"add","arguments":{"a":-5,"b":2}}}"#,
        serde_json::json!({"jsonrpc": "2.0", "id": 31, "result": {
            "content": [{"type": "text", "text": "-3"}], "isError": false}}),
    );
    expect(
        &mut link,
        &format!(
            r#"{{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{{"name":"add","arguments":{{"a":7,"b":8}},{META_2026}}}}}"#
        ),
        serde_json::json!({"jsonrpc": "2.0", "id": 32, "result": {
            "content": [{"type": "text", "text": "15"}], "isError": false, "resultType": "complete"}}),
    );
    let counter = link.exchange(&format!(
        r#"{{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{{"name":"read_counter",{META_2026}}}}}"#
    ));
    let text = counter["result"]["content"][0]["text"]
        .as_str()
        .expect("text");
    println!("2026-07-28 read_counter: {text}");
    assert!(text.starts_with("counter=6 "), "six calls ran: {counter}");
}
