//! `plain-loop`: the reference server of the end-to-end benchmarks.
//!
//! A newline-delimited JSON-RPC 2.0 loop written by hand the way a competent Rust developer
//! would write it with serde_json and std alone: a `BufReader` read line by line into a reused
//! buffer, the request parsed into a struct that borrows `params` and `id` as `&RawValue`,
//! `subtract` dispatched, the answer written into a `BufWriter` that is flushed only when no
//! input is waiting. It is the yardstick the `rpcwire` binary is measured against in the same
//! run, so it must stay plain: no tricks that a real service would not use.
//!
//! `plain-loop --stdio` serves stdin/stdout; `plain-loop --tcp ADDR` listens on ADDR, one OS
//! thread per connection, and prints `plain-loop: listening on IP:PORT` on stderr.

use std::borrow::Cow;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::ExitCode;

use serde::Deserialize;
use serde_json::value::RawValue;

/// Input buffer size: large enough that a burst of pipelined requests is read in few syscalls.
const READ_BUFFER: usize = 64 * 1024;
/// Output buffer size: responses are batched until no input waits, then flushed at once.
const WRITE_BUFFER: usize = 64 * 1024;

/// One request, borrowing from the line it was parsed from.
#[derive(Deserialize)]
struct Request<'a> {
    /// `Cow` rather than `&str`: a version or method name with escapes cannot be borrowed.
    #[serde(borrow)]
    jsonrpc: Option<Cow<'a, str>>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
    #[serde(borrow)]
    id: Option<&'a RawValue>,
}

/// `subtract` by name.
#[derive(Deserialize)]
struct Named {
    minuend: i64,
    subtrahend: i64,
}

/// What a request comes to: a result or an error code with its message.
enum Answer {
    Result(i64),
    Error(i32, &'static str),
}

fn subtract(params: Option<&RawValue>) -> Answer {
    const INVALID: Answer = Answer::Error(-32602, "Invalid params");
    let Some(params) = params else {
        return INVALID;
    };
    let text = params.get();
    // The first byte tells the shape: cheaper than an untagged enum, which buffers the value.
    let pair = match text.as_bytes().first() {
        Some(b'[') => serde_json::from_str::<(i64, i64)>(text).ok(),
        Some(b'{') => serde_json::from_str::<Named>(text)
            .ok()
            .map(|n| (n.minuend, n.subtrahend)),
        _ => None,
    };
    match pair.and_then(|(a, b)| a.checked_sub(b)) {
        Some(n) => Answer::Result(n),
        None => INVALID,
    }
}

fn write_answer(out: &mut impl Write, answer: &Answer, id: &str) -> io::Result<()> {
    match answer {
        Answer::Result(n) => writeln!(out, "{{\"jsonrpc\":\"2.0\",\"result\":{n},\"id\":{id}}}"),
        Answer::Error(code, message) => writeln!(
            out,
            "{{\"jsonrpc\":\"2.0\",\"error\":{{\"code\":{code},\"message\":\"{message}\"}},\"id\":{id}}}"
        ),
    }
}

/// Answers one line (without its newline). Notifications (no `id`) get no answer.
fn handle_line(line: &[u8], out: &mut impl Write) -> io::Result<()> {
    let request: Request<'_> = match serde_json::from_slice(line) {
        Ok(r) => r,
        Err(e) if e.is_syntax() || e.is_eof() => {
            return write_answer(out, &Answer::Error(-32700, "Parse error"), "null");
        }
        // Valid JSON of the wrong shape (not an object, a member of the wrong type).
        Err(_) => return write_answer(out, &Answer::Error(-32600, "Invalid Request"), "null"),
    };
    let answer = match (request.jsonrpc.as_deref(), request.method.as_deref()) {
        (Some("2.0"), Some("subtract")) => subtract(request.params),
        (Some("2.0"), Some(_)) => Answer::Error(-32601, "Method not found"),
        _ => Answer::Error(-32600, "Invalid Request"),
    };
    match request.id {
        Some(id) => write_answer(out, &answer, id.get()),
        None => Ok(()),
    }
}

/// The loop itself: one line in, one answer out, flushed when the reader has nothing buffered
/// (so a pipelined burst is answered with few writes, and a lone request is answered at once).
fn serve(input: impl Read, output: impl Write) -> io::Result<()> {
    let mut reader = BufReader::with_capacity(READ_BUFFER, input);
    let mut writer = BufWriter::with_capacity(WRITE_BUFFER, output);
    let mut line = Vec::with_capacity(1024);
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let text = line.trim_ascii();
        if !text.is_empty() {
            handle_line(text, &mut writer)?;
        }
        if reader.buffer().is_empty() {
            writer.flush()?;
        }
    }
    writer.flush()
}

fn serve_tcp(addr: &str) -> Result<(), String> {
    let listener = TcpListener::bind(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("cannot read the bound address: {e}"))?;
    eprintln!("plain-loop: listening on {local}");
    for stream in listener.incoming() {
        let stream = match stream {
            Ok(s) => s,
            // Out of descriptors and the like: this connection is lost, the server goes on.
            Err(e) => {
                eprintln!("plain-loop: accept: {e}");
                continue;
            }
        };
        std::thread::spawn(move || {
            if let Err(e) = serve_connection(stream) {
                // A peer that vanishes mid-answer is normal for a benchmark client being killed.
                if e.kind() != io::ErrorKind::BrokenPipe
                    && e.kind() != io::ErrorKind::ConnectionReset
                {
                    eprintln!("plain-loop: connection: {e}");
                }
            }
        });
    }
    Ok(())
}

fn serve_connection(stream: TcpStream) -> io::Result<()> {
    // Answers are flushed in batches already; Nagle would only delay the last one of a burst.
    stream.set_nodelay(true)?;
    let input = stream.try_clone()?;
    serve(input, stream)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] | ["--stdio"] => {
            serve(io::stdin().lock(), io::stdout().lock()).map_err(|e| format!("stdio: {e}"))
        }
        ["--tcp", addr] => serve_tcp(addr),
        _ => {
            eprintln!("usage: plain-loop [--stdio | --tcp ADDR]");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("plain-loop: {msg}");
            ExitCode::FAILURE
        }
    }
}
