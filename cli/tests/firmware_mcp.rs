//! MCP on the emulated microcontroller, end to end: the official Python MCP SDK
//! (`stdio_client` + `ClientSession`, installed by `.ci/install/mcp-interop.sh`) spawns
//! `rpcwire bridge --serial PTY` as its stdio server; the pty is one end of a socat pair whose
//! other end the test joins to the MCP firmware image (examples/firmware,
//! `rpcwire-firmware-mcp`) running in qemu with UART0 on a TCP socket. The script initializes,
//! pings, lists the tools, calls every device tool (progress received from `blink`), and
//! checks the session is unharmed at the end.
//!
//! On the way from the device the test injects, before most device frames, a garbled line,
//! an oversize line (over the bridge's `--max-frame 4096`) and invalid JSON-RPC: none may reach
//! the SDK (which would fail on them), and the bridge reports each on stderr. The device's boot
//! notification is reported as a reset.
//!
//! Skips (printing `SKIPPED:`) when qemu, socat, the thumbv7m target or the Python SDK is
//! missing, unless CI=true. Prints `FIRMWARE_MCP_STACK_USED=<bytes>` and records it in
//! `target/figures/` for .ci/after/firmware.sh.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rpcwire_tests::firmware::{self, start_on_socket as start_qemu};
use rpcwire_tests::{pty::socat_pair, skip, Killed};

fn python() -> Option<PathBuf> {
    let base = std::env::var_os("RPCWIRE_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/rpcwire-interop")
        });
    let python = base.join("mcp/venv/bin/python");
    let found = Command::new(&python)
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        skip("the Python MCP SDK is not installed (bash .ci/install/mcp-interop.sh)");
        return None;
    }
    Some(python)
}

/// What the injector puts on the line before device frame number `n` (0-based): garbage
/// before every frame, an oversize line before every other one, an invalid message before
/// every third.
fn junk_before(n: usize) -> Vec<Vec<u8>> {
    let mut junk = vec![b"\x00\xff\xfe}{ garbage from a glitching UART \x1b[0m".to_vec()];
    if n.is_multiple_of(2) {
        let big = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"level":"info","data":"{}"}}}}"#,
            "x".repeat(6000)
        );
        junk.push(big.into_bytes());
    }
    if n.is_multiple_of(3) {
        junk.push(br#"{"jsonrpc":"2.0","result":{},"id":"nobody-asked"}"#.to_vec());
    }
    junk
}

#[test]
fn python_sdk_runs_a_session_against_the_mcp_firmware_through_the_bridge() {
    if !firmware::have_qemu() {
        return;
    }
    let Some(python) = python() else { return };
    let Some(pair) = socat_pair() else { return };
    let Some(elf) = firmware::build("rpcwire-firmware-mcp") else {
        return;
    };
    let (_qemu, uart) = start_qemu(&elf);
    let (device_end, host_end) = pair.ends.clone();

    // The device side of the pty pair, joined to qemu's UART by two copy threads.
    let pty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&device_end)
        .expect("open the device end of the pty pair");
    let release = Arc::new(AtomicBool::new(false));
    let injected = Arc::new(AtomicUsize::new(0));
    let device_frames = Arc::new(AtomicUsize::new(0));
    {
        // Device -> host: line by line, junk in front; held until the bridge has the pty open.
        let (mut uart, mut pty) = (uart.try_clone().unwrap(), pty.try_clone().unwrap());
        let (release, injected, frames) = (
            Arc::clone(&release),
            Arc::clone(&injected),
            Arc::clone(&device_frames),
        );
        std::thread::spawn(move || {
            let mut pending = Vec::new();
            let mut buf = [0u8; 2048];
            let mut n = 0;
            loop {
                match uart.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(k) => pending.extend_from_slice(&buf[..k]),
                }
                while !release.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                while let Some(nl) = pending.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=nl).collect();
                    let mut out = Vec::new();
                    for junk in junk_before(n) {
                        out.extend_from_slice(&junk);
                        out.push(b'\n');
                        injected.fetch_add(1, Ordering::Relaxed);
                    }
                    out.extend_from_slice(&line);
                    n += 1;
                    frames.fetch_add(1, Ordering::Relaxed);
                    if pty.write_all(&out).and_then(|()| pty.flush()).is_err() {
                        return;
                    }
                }
            }
        });
    }
    {
        // Host -> device: as it comes.
        let (mut uart, mut pty) = (uart.try_clone().unwrap(), pty.try_clone().unwrap());
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            loop {
                match pty.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(k) => {
                        if uart.write_all(&buf[..k]).is_err() {
                            return;
                        }
                    }
                }
            }
        });
    }

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/firmware_mcp_client.py");
    // Created once the bridge has reported the device's boot: the script initializes only
    // then, so the boot is never seen while a call waits (under load a fixed wait was not
    // enough).
    let booted = std::env::temp_dir().join(format!("rpcwire-fw-mcp-booted-{}", std::process::id()));
    let _ = std::fs::remove_file(&booted);
    let mut child = Killed(
        Command::new(&python)
            .env("RPCWIRE_DEVICE_BOOTED", &booted)
            .arg(&script)
            .arg(env!("CARGO_BIN_EXE_rpcwire"))
            .arg(&host_end)
            .args(["--max-frame", "4096", "--timeout", "10"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn python"),
    );
    let stdout = child.0.stdout.take().unwrap();
    let stderr = child.0.stderr.take().unwrap();
    let out_lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let err_lines = Arc::new(Mutex::new(Vec::<String>::new()));
    let readers = [
        {
            let sink = Arc::clone(&out_lines);
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    sink.lock().unwrap().push(line);
                }
            })
        },
        {
            let (sink, release) = (Arc::clone(&err_lines), Arc::clone(&release));
            let booted = booted.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    // The bridge has opened its end of the pty: let the device's frames
                    // (its boot notification first) through.
                    if line.contains("bridging stdio to") {
                        release.store(true, Ordering::Release);
                    }
                    // The bridge has seen the boot: the script may initialize.
                    if line.contains("the device reset (boot notification") {
                        let _ = std::fs::write(&booted, b"booted");
                    }
                    sink.lock().unwrap().push(line);
                }
            })
        },
    ];
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the Python session did not finish within 90 s\nstdout:\n{}\nstderr:\n{}",
            out_lines.lock().unwrap().join("\n"),
            err_lines.lock().unwrap().join("\n")
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    for reader in readers {
        let _ = reader.join();
    }
    let _ = std::fs::remove_file(&booted);
    let stdout = out_lines.lock().unwrap().join("\n");
    let stderr = err_lines.lock().unwrap().join("\n");
    println!("{stdout}\n--- stderr (the bridge's reports)\n{stderr}");
    record_stack_figure(&stdout);
    assert!(status.success(), "python exited with {status}");
    assert_eq!(
        stdout.lines().last(),
        Some("firmware-mcp: all checks passed"),
        "{stdout}"
    );

    // The device's frames went through with junk around them; the bridge dropped every piece
    // of junk (the SDK never saw one: its session passed) and said so on stderr.
    let injected = injected.load(Ordering::Relaxed);
    let frames = device_frames.load(Ordering::Relaxed);
    assert!(frames >= 15, "only {frames} device frames");
    assert!(
        injected >= frames + frames / 2,
        "{injected} junk lines for {frames} frames"
    );
    let count = |needle: &str| stderr.lines().filter(|l| l.contains(needle)).count();
    assert!(count("dropped a garbled line") >= frames, "{stderr}");
    assert!(count("over --max-frame 4096") >= frames / 2, "{stderr}");
    assert!(
        count("no waiting call (id \"nobody-asked\"") >= frames / 3,
        "{stderr}"
    );
    assert_eq!(
        count(r#"the device reset (boot notification {"firmware":"rpcwire-firmware-mcp""#),
        1,
        "{stderr}"
    );
    // stdin's end (the SDK closing the session) ended the bridge cleanly, with its totals:
    // every injected line dropped, none timed out.
    let summary = stderr
        .lines()
        .find(|l| l.contains("stdin ended"))
        .unwrap_or_else(|| panic!("no summary line: {stderr}"));
    assert!(
        summary.contains(&format!("{injected} dropped from the device"))
            && summary.contains("0 timed out")
            && summary.contains("1 resets"),
        "{summary} (injected {injected})"
    );
}

/// Records the stack high-water mark the Python session printed in
/// `target/figures/firmware-mcp-stack-used`, where .ci/after/firmware.sh reports it from.
fn record_stack_figure(stdout: &str) {
    let Some(used) = stdout
        .lines()
        .find_map(|l| l.strip_prefix("FIRMWARE_MCP_STACK_USED="))
    else {
        return;
    };
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/figures");
    if let Err(e) = std::fs::create_dir_all(&dir)
        .and_then(|()| std::fs::write(dir.join("firmware-mcp-stack-used"), used.trim()))
    {
        println!("could not record the stack figure: {e}");
    }
}
