//! `http-feed ADDR PATH CALLS`: W1 POSTed to `http://ADDR/PATH` over 64 keep-alive
//! connections, `CALLS` on each, one outstanding per connection, every answer checked
//! (status 200, result 19); prints the calls made on stdout.
//!
//! `callgrind-http.sh` drives the HTTP servers under valgrind with it: a fixed number of calls,
//! the same for every server (std threads and blocking I/O: the client is not measured).
//!
//! `HTTP_FEED_CA=FILE`: HTTPS instead, trusting that CA (PEM) for the name `localhost`;
//! `HTTP_FEED_BEARER=TOKEN`: every call carries `Authorization: Bearer TOKEN`
//! (`callgrind-auth.sh`); `HTTP_FEED_VARY=1`: every call's head differs from the one before
//! (an `X-Request` field with the call's number, before `Content-Length`), as with a client
//! that sends a request id or trace context per call, so that a server cannot take a head
//! for the last one. The calls per second of the whole run go to stderr.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::ExitCode;
use std::sync::Arc;

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
    let auth = std::env::var("HTTP_FEED_BEARER")
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let vary = std::env::var_os("HTTP_FEED_VARY").is_some_and(|v| v == "1");
    let request_id = if vary { "X-Request: 00000000\r\n" } else { "" };
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{auth}{request_id}Content-Length: {}\r\n\r\n{BODY}",
        BODY.len()
    );
    // Where the call's number goes: eight digits.
    let number_at = vary
        .then(|| {
            request
                .find("X-Request: ")
                .map(|at| at + "X-Request: ".len())
        })
        .flatten();
    let tls = match std::env::var_os("HTTP_FEED_CA") {
        Some(ca) => Some(client_config(std::path::Path::new(&ca))?),
        None => None,
    };
    // Every connection first (TLS handshakes done), then the calls.
    let streams = (0..CONNECTIONS)
        .map(|_| {
            let s = TcpStream::connect(&addr).map_err(|e| format!("connect {addr}: {e}"))?;
            s.set_nodelay(true).map_err(|e| e.to_string())?;
            Ok(match &tls {
                None => Stream::Plain(s),
                Some(config) => {
                    let name = rustls::pki_types::ServerName::try_from("localhost")
                        .map_err(|e| e.to_string())?;
                    let conn = rustls::ClientConnection::new(Arc::clone(config), name)
                        .map_err(|e| e.to_string())?;
                    let mut tls = rustls::StreamOwned::new(conn, s);
                    while tls.conn.is_handshaking() {
                        tls.conn
                            .complete_io(&mut tls.sock)
                            .map_err(|e| format!("TLS handshake: {e}"))?;
                    }
                    Stream::Tls(Box::new(tls))
                }
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let started = std::time::Instant::now();
    let total = std::thread::scope(|scope| {
        let workers: Vec<_> = streams
            .into_iter()
            .map(|s| scope.spawn(|| calls_on(s, request.as_bytes().to_vec(), number_at, calls)))
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .map_err(|_| "a connection's thread panicked".to_owned())?
            })
            .sum::<Result<u64, String>>()
    })?;
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "{total} calls in {secs:.3} s: {:.0} calls/s",
        total as f64 / secs
    );
    Ok(total)
}

/// A connection, plain or TLS.
enum Stream {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

/// rustls (ring) trusting the CA in `ca` (PEM).
fn client_config(ca: &std::path::Path) -> Result<Arc<rustls::ClientConfig>, String> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_file_iter(ca).map_err(|e| e.to_string())? {
        roots
            .add(cert.map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth(),
    ))
}

/// `calls` W1 calls on `stream`, each answer read and checked before the next is sent; with
/// `number_at`, the call's number is written there first (eight digits).
fn calls_on(
    mut stream: Stream,
    mut request: Vec<u8>,
    number_at: Option<usize>,
    calls: u64,
) -> Result<u64, String> {
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    for call in 0..calls {
        if let Some(at) = number_at {
            let digits = format!("{:08}", call % 100_000_000);
            request[at..at + 8].copy_from_slice(digits.as_bytes());
        }
        stream
            .write_all(&request)
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
