//! Helpers shared by rpcwire's integration suites (in `tests/`).

use rpcwire::wire::RxBuffer;
use rpcwire::Input;
use rpcwire::{Connection, Instant, Output};

/// Feeds `bytes` into a server-role connection running the demo service and returns every
/// byte it transmits in answer.
pub fn serve_bytes<const N: usize>(
    conn: &mut Connection,
    rx: &mut RxBuffer<[u8; N]>,
    bytes: &[u8],
) -> Vec<u8> {
    let mut input = bytes;
    let mut out = Vec::new();
    loop {
        while let Input::Item(item) = conn.handle_input(Instant::ZERO, rx, &mut input) {
            rpcwire_demo::handle(conn, item).expect("demo answers fit");
        }
        drain(conn, &mut out);
        if input.is_empty() && !conn.is_input_blocked() {
            return out;
        }
    }
}

/// Moves everything the connection wants to transmit into `out`.
pub fn drain(conn: &mut Connection, out: &mut Vec<u8>) {
    while let Output::Transmit(bytes) = conn.poll_output() {
        out.extend_from_slice(bytes);
        let n = bytes.len();
        conn.advance_transmit(n);
    }
}

/// Parses a JSON value, sorting the elements of a top-level array so that batch replies
/// compare as sets.
pub fn normalize(text: &str) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(text).expect("valid JSON");
    if let serde_json::Value::Array(items) = &mut v {
        items.sort_by_key(|i| i.to_string());
    }
    v
}

/// Splits content-length frames into their bodies.
pub fn content_length_bodies(mut bytes: &[u8]) -> Vec<String> {
    let mut bodies = Vec::new();
    while !bytes.is_empty() {
        let text = std::str::from_utf8(bytes).expect("utf-8");
        let header_end = text.find("\r\n\r\n").expect("header terminator");
        let len: usize = text[..header_end]
            .strip_prefix("Content-Length: ")
            .expect("content-length header")
            .parse()
            .expect("length");
        let body = &bytes[header_end + 4..header_end + 4 + len];
        bodies.push(String::from_utf8(body.to_vec()).expect("utf-8"));
        bytes = &bytes[header_end + 4 + len..];
    }
    bodies
}

/// Skips a test that needs something this machine lacks: prints `SKIPPED: <why>` straight to
/// the process's stderr (past the test harness's capture, so it is visible in a normal run),
/// and fails instead under `CI=true`, where nothing may be skipped.
pub fn skip(why: &str) {
    use std::io::Write;
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true and a test would be skipped: {why}"
    );
    let _ = std::io::stderr().write_all(format!("SKIPPED: {why}\n").as_bytes());
}

/// A socat pseudo-terminal pair acting as a serial line, for serial tests.
pub mod pty {
    use std::io::{BufRead, BufReader};
    use std::process::{Child, Command, Stdio};

    /// A running socat joining two pseudo-terminals; killed on drop.
    pub struct Socat {
        child: Child,
        /// The two device paths.
        pub ends: (String, String),
    }

    impl Drop for Socat {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// Starts `socat pty,raw,echo=0 pty,raw,echo=0`; `None` (after [`super::skip`]) when
    /// socat is not installed.
    pub fn socat_pair() -> Option<Socat> {
        let found = Command::new("socat")
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if found.is_err() {
            super::skip("socat not found (apt-get install socat; .ci/install/embedded.sh)");
            return None;
        }
        let mut child = Command::new("socat")
            .args(["-d", "-d", "pty,raw,echo=0", "pty,raw,echo=0"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn socat");
        let mut lines = BufReader::new(child.stderr.take().expect("piped stderr")).lines();
        let mut ends = Vec::new();
        while ends.len() < 2 {
            let line = lines
                .next()
                .expect("socat names its ptys")
                .expect("read socat's stderr");
            if let Some(path) = line.split("PTY is ").nth(1) {
                ends.push(path.trim().to_owned());
            }
        }
        // Keep draining socat's diagnostics so it never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Some(Socat {
            child,
            ends: (ends[0].clone(), ends[1].clone()),
        })
    }
}
