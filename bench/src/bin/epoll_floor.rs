//! The kernel's floor of the `http` bench: a server that does nothing but what the kernel makes
//! every loopback HTTP server do. One `mio` poll per thread over its connections; each readable
//! connection is read until empty, and every whole request in it (head up to the blank line,
//! then `Content-Length` bytes) gets W1's fixed answer, with the header fields rpcwire's path
//! sends. No HTTP library, no JSON, no runtime, no timers: its calls per second are the most any
//! server can reach on this machine with the same system calls per call (one `recvfrom`, one
//! `sendto`), so the bench can say how far a server is from the limit and how much of a ratio to
//! jsonrpsee is left to win.
//!
//! Prints `listening on ADDR` on stderr; worker threads from `RPCWIRE_THREADS` (default: one per
//! CPU), each with its own poll, and the main thread accepting. Not a server to use: a short
//! write (the socket's send buffer full) closes the connection, which never happens with one
//! call outstanding per connection, as in the bench.

use std::io::{self, ErrorKind, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token, Waker};
use rpcwire_bench::http_content_length;

const ANSWER: &str = r#"{"jsonrpc":"2.0","result":19,"id":1}"#;

/// The answer's bytes: the status line and fields rpcwire's HTTP path writes, with a fixed date
/// of the same length as a real one.
fn answer() -> Vec<u8> {
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\ndate: Tue, 24 Nov 2026 00:00:00 GMT\r\n\r\n{ANSWER}",
        ANSWER.len()
    )
    .into_bytes()
}

/// The length of the whole request at the start of `buf`, if it is all there (`Err` for a head
/// without `Content-Length`: this floor takes nothing else).
fn whole_request(buf: &[u8]) -> io::Result<Option<usize>> {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let body = http_content_length(&buf[..end])
        .ok_or_else(|| io::Error::new(ErrorKind::InvalidData, "no content-length"))?;
    let total = end + 4 + body;
    Ok((buf.len() >= total).then_some(total))
}

/// Reads what `stream` holds into `buf` and answers each whole request; `Ok(false)` when the
/// connection is over (closed by the peer, or a request this floor does not take).
fn serve_readable(stream: &mut TcpStream, buf: &mut Vec<u8>, answer: &[u8]) -> io::Result<bool> {
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => return Ok(false),
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                // A short read emptied the socket (a stream socket hands out all it holds, up
                // to the space given): no second read to see `WouldBlock`, as tokio does.
                if n < chunk.len() {
                    break;
                }
            }
            // Edge-triggered: empty now, so the next event comes with new bytes.
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    while let Some(len) = whole_request(buf)? {
        buf.drain(..len);
        if stream.write(answer)? != answer.len() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// A connection handed to a worker, with its token (the acceptor's count of connections).
type Handed = (usize, std::net::TcpStream);

/// The token of a worker's waker, which the acceptor wakes after handing it a connection.
const WAKE: Token = Token(usize::MAX);

/// One worker's loop: serves the connections the acceptor hands it on `handed`, for ever.
/// The worker registers each connection itself; bytes that arrived before that are reported at
/// registration.
fn serve(
    mut poll: Poll,
    handed: mpsc::Receiver<Handed>,
    workers: usize,
    answer: &[u8],
) -> io::Result<()> {
    let mut slots: Vec<Option<(TcpStream, Vec<u8>)>> = Vec::new();
    let mut events = Events::with_capacity(256);
    loop {
        match poll.poll(&mut events, None) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        for event in &events {
            if event.token() == WAKE {
                while let Ok((token, stream)) = handed.try_recv() {
                    let mut stream = TcpStream::from_std(stream);
                    poll.registry()
                        .register(&mut stream, Token(token), Interest::READABLE)?;
                    let slot = token / workers;
                    if slots.len() <= slot {
                        slots.resize_with(slot + 1, || None);
                    }
                    slots[slot] = Some((stream, Vec::with_capacity(1024)));
                }
                continue;
            }
            let slot = event.token().0 / workers;
            let Some((stream, buf)) = slots.get_mut(slot).and_then(Option::as_mut) else {
                continue;
            };
            if !serve_readable(stream, buf, answer).unwrap_or(false) {
                if let Some((mut stream, _)) = slots[slot].take() {
                    let _ = poll.registry().deregister(&mut stream);
                }
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let workers: usize = std::env::var("RPCWIRE_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let listener = TcpListener::bind(addr)?;
    eprintln!("epoll floor: listening on {}", listener.local_addr()?);
    let answer = answer();
    std::thread::scope(|scope| {
        // Workers take connections in turn from this thread, which only accepts: each
        // worker gets its share whatever the scheduler does.
        let mut to_workers = Vec::with_capacity(workers);
        for _ in 0..workers {
            let poll = Poll::new()?;
            let waker = Waker::new(poll.registry(), WAKE)?;
            let (tx, rx) = mpsc::channel();
            let answer = &answer;
            scope.spawn(move || {
                if let Err(e) = serve(poll, rx, workers, answer) {
                    eprintln!("epoll floor: {e}");
                    std::process::exit(1);
                }
            });
            to_workers.push((waker, tx));
        }
        for token in 0.. {
            let (stream, _) = listener.accept()?;
            stream.set_nodelay(true)?;
            stream.set_nonblocking(true)?;
            let (waker, tx) = &to_workers[token % workers];
            tx.send((token, stream))
                .map_err(|_| io::Error::other("worker gone"))?;
            waker.wake()?;
        }
        Ok(())
    })
}
