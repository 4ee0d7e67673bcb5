//! `http-feed ADDR PATH CALLS`: W1 POSTed to `http://ADDR/PATH` over 64 keep-alive
//! connections, `CALLS` on each, one outstanding per connection, every answer checked
//! (status 200, result 19); prints the calls made on stdout.
//!
//! `callgrind-http.sh` drives the HTTP servers under valgrind with it: a fixed number of calls,
//! the same for every server (std threads and blocking I/O: the client is not measured).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::ExitCode;

use rpcwire_bench::http_content_length;

const CONNECTIONS: usize = 64;
const BODY: &str = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;

fn main() -> ExitCode {
    match run() {
        Ok(calls) => {
            println!("{calls}");
            ExitCode::SUCCESS
        }
        Err(msg) => {
            eprintln!("http-feed: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<u64, String> {
    const USAGE: &str = "usage: http-feed ADDR PATH CALLS";
    let mut args = std::env::args().skip(1);
    let (Some(addr), Some(path), Some(calls)) = (args.next(), args.next(), args.next()) else {
        return Err(USAGE.into());
    };
    let calls: u64 = calls.parse().map_err(|_| USAGE.to_owned())?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{BODY}",
        BODY.len()
    );
    // Every connection first, then the calls.
    let streams = (0..CONNECTIONS)
        .map(|_| {
            let s = TcpStream::connect(&addr).map_err(|e| format!("connect {addr}: {e}"))?;
            s.set_nodelay(true).map_err(|e| e.to_string())?;
            Ok(s)
        })
        .collect::<Result<Vec<_>, String>>()?;
    std::thread::scope(|scope| {
        let workers: Vec<_> = streams
            .into_iter()
            .map(|s| scope.spawn(|| calls_on(s, request.as_bytes(), calls)))
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .map_err(|_| "a connection's thread panicked".to_owned())?
            })
            .sum()
    })
}

/// `calls` W1 calls on `stream`, each answer read and checked before the next is sent.
fn calls_on(mut stream: TcpStream, request: &[u8], calls: u64) -> Result<u64, String> {
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    for _ in 0..calls {
        stream
            .write_all(request)
            .map_err(|e| format!("write: {e}"))?;
        buf.clear();
        loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let len = http_content_length(&buf[..end]).ok_or_else(|| {
                    format!("no content-length: {}", String::from_utf8_lossy(&buf))
                })?;
                if buf.len() >= end + 4 + len {
                    let body = &buf[end + 4..end + 4 + len];
                    if !buf.starts_with(b"HTTP/1.1 200")
                        || !body.windows(11).any(|w| w == b"\"result\":19")
                    {
                        return Err(format!(
                            "not W1's answer: {}",
                            String::from_utf8_lossy(&buf)
                        ));
                    }
                    break;
                }
            }
            let n = stream.read(&mut chunk).map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err("the server closed the connection".into());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    }
    Ok(calls)
}
