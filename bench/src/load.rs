//! The load generators: W1 calls through a child's stdio, or over loopback TCP connections.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use crate::check::answer_id;
use crate::server::reap;
use crate::{Checker, Error, ServerCommand, STALL};

/// Requests are formatted and written this many at a time: few syscalls, small buffers.
const CHUNK: u64 = 1024;
/// Buffer of the reading side.
const READ_BUFFER: usize = 64 * 1024;
/// Stack of the per-connection client threads: they only shuffle bytes, and a hundred of them
/// at the default 2 MiB would be memory the server under test could have used.
const CLIENT_STACK: usize = 256 * 1024;

/// Appends W1 with id `id` and its newline:
/// `{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":ID}\n`.
pub fn push_request(buf: &mut Vec<u8>, id: u64) {
    buf.extend_from_slice(
        b"{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[42,23],\"id\":",
    );
    // Writing into a Vec cannot fail.
    let _ = write!(buf, "{id}");
    buf.extend_from_slice(b"}\n");
}

/// Runs `server --stdio` as a child, sends it W1 with ids `1..=n` from one thread (at most
/// `window` unanswered, like [`TcpLoad::window`]) while another reads and checks the answers,
/// and returns the time from the first byte written to the last answer read. Stdin is closed
/// once everything is written; the child is then given [`STALL`] to exit and is killed after
/// that.
pub fn stdio_run(server: &ServerCommand, n: u64, window: u64) -> Result<Duration, Error> {
    let what = format!("{} over stdio", server.name);
    let mut child = server
        .command(&["--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| Error::io(format!("cannot start {}", server.program.display()), e))?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(Error::Server("no stdio pipes".into()));
    };

    // Answers checked so far; and whether the reader has stopped (for good or not), so that
    // a writer waiting for room in the window never waits for answers that cannot come.
    let progress = Arc::new(AtomicU64::new(0));
    let reader_done = Arc::new(AtomicBool::new(false));
    let window = window.max(1);
    let writer_progress = Arc::clone(&progress);
    let writer_done = Arc::clone(&reader_done);
    let writer = std::thread::spawn(move || -> std::io::Result<Instant> {
        let mut buf = Vec::with_capacity(CHUNK as usize * 64);
        let start = Instant::now();
        let mut sent = 0;
        while sent < n {
            let outstanding = sent - writer_progress.load(Ordering::Acquire);
            if outstanding > window / 2 {
                if writer_done.load(Ordering::Acquire) {
                    break;
                }
                // The reader unparks us after each answer; the timeout is only a backstop.
                std::thread::park_timeout(Duration::from_millis(10));
                continue;
            }
            let batch = (window - outstanding).min(n - sent);
            buf.clear();
            for id in sent + 1..=sent + batch {
                push_request(&mut buf, id);
            }
            stdin.write_all(&buf)?;
            sent += batch;
        }
        // Dropping stdin here is the end of input for the server.
        Ok(start)
    });
    let writer_thread = writer.thread().clone();
    let reader_progress = Arc::clone(&progress);
    let reader_what = what.clone();
    let done = Arc::clone(&reader_done);
    let reader = std::thread::spawn(move || -> Result<Instant, Error> {
        let result = (|| {
            let mut reader = BufReader::with_capacity(READ_BUFFER, stdout);
            let mut checker = Checker::new(n);
            let mut line = Vec::with_capacity(256);
            while !checker.complete() {
                line.clear();
                let got = reader
                    .read_until(b'\n', &mut line)
                    .map_err(|e| Error::io(reader_what.as_str(), e))?;
                if got == 0 {
                    return Err(Error::Closed {
                        what: format!("{reader_what}: {} of {n} answers", checker.received()),
                    });
                }
                checker.check(&line)?;
                reader_progress.store(checker.received(), Ordering::Release);
                writer_thread.unpark();
            }
            Ok(Instant::now())
        })();
        done.store(true, Ordering::Release);
        writer_thread.unpark();
        result
    });

    // Watchdog: pipes have no timeouts, so a silent server is killed, which ends both threads.
    let mut last = (0, Instant::now());
    let mut stalled = false;
    while !reader.is_finished() {
        std::thread::sleep(Duration::from_millis(20));
        let now = progress.load(Ordering::Relaxed);
        if now != last.0 {
            last = (now, Instant::now());
        } else if last.1.elapsed() > STALL {
            stalled = true;
            let _ = child.kill();
            break;
        }
    }
    if stalled {
        // The threads are left behind rather than joined: a process the server started itself
        // may still hold the pipes open, and a failed run ends the benchmark anyway.
        reap(&mut child, Duration::ZERO);
        return Err(Error::Stalled {
            what: format!(
                "{what}: {} of {n} answers",
                progress.load(Ordering::Relaxed)
            ),
        });
    }
    let end = reader
        .join()
        .map_err(|_| Error::Server("the reading thread panicked".into()));
    let start = writer
        .join()
        .map_err(|_| Error::Server("the writing thread panicked".into()));
    reap(&mut child, STALL);
    let end = end??;
    let start = start?.map_err(|e| Error::io(format!("{what}: writing"), e))?;
    Ok(end.duration_since(start))
}

/// Connects to `addr` with [`STALL`] as connect, read and write timeout, Nagle off (requests
/// are written in chunks already).
pub fn tcp_connect(addr: SocketAddr) -> Result<TcpStream, Error> {
    let what = || format!("connect to {addr}");
    let stream = TcpStream::connect_timeout(&addr, STALL).map_err(|e| Error::io(what(), e))?;
    stream.set_nodelay(true).map_err(|e| Error::io(what(), e))?;
    stream
        .set_read_timeout(Some(STALL))
        .map_err(|e| Error::io(what(), e))?;
    stream
        .set_write_timeout(Some(STALL))
        .map_err(|e| Error::io(what(), e))?;
    Ok(stream)
}

/// Sends one W1 call with `id` on `stream` and checks its answer.
pub fn tcp_call_once(stream: &mut TcpStream, id: u64) -> Result<(), Error> {
    let mut request = Vec::with_capacity(80);
    push_request(&mut request, id);
    stream
        .write_all(&request)
        .map_err(|e| Error::io("write a call", e))?;
    let mut answer = Vec::with_capacity(64);
    let mut buf = [0u8; 256];
    // One request is outstanding, so everything up to the newline is its answer.
    while !answer.contains(&b'\n') {
        let got = stream
            .read(&mut buf)
            .map_err(|e| Error::io(format!("read the answer to id {id}"), e))?;
        if got == 0 {
            return Err(Error::Closed {
                what: format!("answer to id {id}"),
            });
        }
        answer.extend_from_slice(&buf[..got]);
    }
    let got = answer_id(&answer)?;
    if got == id {
        Ok(())
    } else {
        Err(Error::bad(format!("id {got} instead of {id}"), &answer))
    }
}

/// A TCP load: `connections` connections, each pipelining `calls` W1 calls with at most
/// `window` of them unanswered.
#[derive(Debug, Clone, Copy)]
pub struct TcpLoad {
    /// Connections, all open at once.
    pub connections: usize,
    /// Calls per connection, ids `1..=calls` on each.
    pub calls: u64,
    /// Most calls unanswered on one connection (`u64::MAX`: no bound; the writer and the
    /// reader are separate threads, so a full socket cannot deadlock them).
    pub window: u64,
}

/// Opens every connection of `load` to `addr`, then starts them all at once and returns the
/// time until the last answer of the slowest. Connecting is not timed.
///
/// Calls/s is `connections * calls / time`.
pub fn tcp_run(addr: SocketAddr, load: TcpLoad) -> Result<Duration, Error> {
    let streams = (0..load.connections)
        .map(|_| tcp_connect(addr))
        .collect::<Result<Vec<_>, _>>()?;
    // The gate: held for writing while the threads are started, so that they all begin
    // together (each waits for a read lock) when it is released.
    let gate = Arc::new(RwLock::new(()));
    let closed = gate
        .write()
        .map_err(|_| Error::Server("gate poisoned".into()))?;
    let mut threads = Vec::with_capacity(streams.len());
    let mut spawn_error = None;
    for (i, stream) in streams.into_iter().enumerate() {
        let gate = Arc::clone(&gate);
        let spawned = std::thread::Builder::new()
            .stack_size(CLIENT_STACK)
            .spawn(move || {
                drop(gate.read());
                pipeline(stream, load).map_err(|e| match e {
                    Error::Stalled { what } => Error::Stalled {
                        what: format!("connection {i}: {what}"),
                    },
                    other => other,
                })
            });
        match spawned {
            Ok(handle) => threads.push(handle),
            Err(e) => {
                // The threads already started still run their load (unmeasured) and are
                // joined below, so none is left behind.
                spawn_error = Some(Error::io("spawn a client thread", e));
                break;
            }
        }
    }
    drop(closed);
    let start = Instant::now();
    let mut first_error = None;
    for handle in threads {
        let outcome = handle
            .join()
            .unwrap_or_else(|_| Err(Error::Server("a client thread panicked".into())));
        if let Err(e) = outcome {
            first_error.get_or_insert(e);
        }
    }
    let elapsed = start.elapsed();
    match spawn_error.or(first_error) {
        Some(e) => Err(e),
        None => Ok(elapsed),
    }
}

/// One connection of [`tcp_run`]: a writer thread sends the calls (while fewer than half the
/// window are unanswered, if the window is bounded) and this thread reads and checks every
/// answer (the socket read timeout is the stall timeout). Two threads, so that an unbounded
/// pipeline cannot deadlock on full socket buffers.
fn pipeline(stream: TcpStream, load: TcpLoad) -> Result<(), Error> {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let mut reader = BufReader::with_capacity(
        READ_BUFFER,
        stream
            .try_clone()
            .map_err(|e| Error::io("clone a socket", e))?,
    );
    let received = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let received = Arc::clone(&received);
        let stop = Arc::clone(&stop);
        let stream = stream
            .try_clone()
            .map_err(|e| Error::io("clone a socket", e))?;
        std::thread::Builder::new()
            .stack_size(CLIENT_STACK)
            .spawn(move || -> Result<(), Error> {
                let mut writer = &stream;
                let mut buf = Vec::with_capacity(CHUNK as usize * 64);
                let window = load.window.max(1);
                let mut sent = 0;
                while sent < load.calls && !stop.load(Ordering::Relaxed) {
                    let outstanding = sent - received.load(Ordering::Acquire);
                    if outstanding > window / 2 {
                        std::thread::yield_now();
                        continue;
                    }
                    let batch = (window - outstanding).min(CHUNK).min(load.calls - sent);
                    buf.clear();
                    for id in sent + 1..=sent + batch {
                        push_request(&mut buf, id);
                    }
                    writer
                        .write_all(&buf)
                        .map_err(|e| Error::io(format!("write calls after {sent}"), e))?;
                    sent += batch;
                }
                Ok(())
            })
            .map_err(|e| Error::io("spawn a writer thread", e))?
    };
    let mut checker = Checker::new(load.calls);
    let mut line = Vec::with_capacity(256);
    let outcome = (|| {
        while !checker.complete() {
            line.clear();
            let got = reader.read_until(b'\n', &mut line).map_err(|e| {
                Error::io(
                    format!("{} of {} answers", checker.received(), load.calls),
                    e,
                )
            })?;
            if got == 0 {
                return Err(Error::Closed {
                    what: format!("{} of {} answers", checker.received(), load.calls),
                });
            }
            checker.check(&line)?;
            received.store(checker.received(), Ordering::Release);
        }
        Ok(())
    })();
    stop.store(true, Ordering::Relaxed);
    if outcome.is_err() {
        // Unblock a writer stuck on a full socket.
        let _ = stream.shutdown(std::net::Shutdown::Both);
    }
    let written = writer
        .join()
        .unwrap_or_else(|_| Err(Error::Server("a writer thread panicked".into())));
    outcome.and(written)
}

/// The `Content-Length` of an HTTP response head (its field name in any case): how the HTTP
/// load generators find the end of each answer.
pub fn http_content_length(head: &[u8]) -> Option<usize> {
    const NAME: &[u8] = b"content-length:";
    head.split(|&b| b == b'\n').find_map(|line| {
        let value = line
            .get(..NAME.len())
            .filter(|name| name.eq_ignore_ascii_case(NAME))
            .and_then(|_| line.get(NAME.len()..))?;
        std::str::from_utf8(value).ok()?.trim().parse().ok()
    })
}
