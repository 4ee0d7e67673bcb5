//! Raw HTTP/1.1 on loopback (feature `raw-http`): requests written byte for byte and answers
//! read as their `content-length` says, for the servers' refusal tests (a refused request
//! must not cost the keep-alive connection it came on).

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long an answer may take.
pub const WAIT: Duration = Duration::from_secs(10);

/// A raw HTTP/1.1 POST of `body` to `path` with this `Content-Type`, accepting JSON and event
/// streams.
pub fn request(path: &str, content_type: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// A raw HTTP/1.1 POST of the JSON `body` to `path` with these extra header fields,
/// accepting JSON answers only.
pub fn json_post(path: &str, headers: &[(String, String)], body: &str) -> String {
    let extra: String = headers
        .iter()
        .map(|(n, v)| format!("{n}: {v}\r\n"))
        .collect();
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// One answer: (head, body), read as its `content-length` says.
pub async fn answer(stream: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> (String, String) {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if buf.len() >= end + 4 + len {
                let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).into_owned();
                buf.drain(..end + 4 + len);
                return (head, body);
            }
        }
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(WAIT, stream.read(&mut chunk))
            .await
            .expect("an answer in time")
            .unwrap();
        assert!(n > 0, "the connection closed; read so far: {buf:?}");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Sends `refused` and `good` on one connection, the refused request's body only a moment
/// after its head (as a client's body often comes), then `good` at once; returns both answers.
pub async fn back_to_back(addr: SocketAddr, refused: &str, good: &str) -> [(String, String); 2] {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let split = refused.find("\r\n\r\n").unwrap() + 4;
    stream
        .write_all(&refused.as_bytes()[..split])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    stream
        .write_all(format!("{}{good}", &refused[split..]).as_bytes())
        .await
        .unwrap();
    let mut buf = Vec::new();
    let first = answer(&mut stream, &mut buf).await;
    let second = answer(&mut stream, &mut buf).await;
    [first, second]
}

/// Sends each request on one keep-alive connection, each after the answer to the one before;
/// their answers, (head, body).
pub async fn exchange(addr: SocketAddr, requests: &[String]) -> Vec<(String, String)> {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    exchange_on(stream, requests).await
}

/// [`exchange`] from the local IPv4 address `from` (a loopback one such as `127.0.0.2`: all
/// of `127.0.0.0/8` is the loopback interface's), to tell clients apart by address.
pub async fn exchange_from(
    from: std::net::Ipv4Addr,
    addr: SocketAddr,
    requests: &[String],
) -> Vec<(String, String)> {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from((from, 0))).unwrap();
    let stream = socket.connect(addr).await.unwrap();
    exchange_on(stream, requests).await
}

async fn exchange_on(
    mut stream: tokio::net::TcpStream,
    requests: &[String],
) -> Vec<(String, String)> {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    for r in requests {
        stream.write_all(r.as_bytes()).await.unwrap();
        out.push(answer(&mut stream, &mut buf).await);
    }
    out
}

/// The status code of a head [`answer`] read (0 if none).
pub fn status(head: &str) -> u16 {
    head.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The value of the header `name` (lower case) in a head [`answer`] read ("" if none).
pub fn header<'a>(head: &'a str, name: &str) -> &'a str {
    head.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
        .map_or("", str::trim)
}

/// A listener on a loopback port, and its address.
pub async fn listen() -> (tokio::net::TcpListener, SocketAddr) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

/// Each refused request (with its status), then `good`, on one connection: the refusal keeps
/// the connection (no `connection: close`) and `good` is answered 200 with a body `answered`
/// accepts. Then `over`, a body over the limit by its declared length: 413, not read, and the
/// client told to close.
pub async fn refusals_keep_the_connection(
    addr: SocketAddr,
    cases: &[(String, &str)],
    good: &str,
    answered: impl Fn(&str) -> bool,
    over: &str,
) {
    for (refused, status) in cases {
        let [first, second] = back_to_back(addr, refused, good).await;
        assert!(
            first.0.starts_with(&format!("http/1.1 {status}")),
            "{first:?}"
        );
        assert!(!first.0.contains("connection: close"), "{first:?}");
        assert!(second.0.starts_with("http/1.1 200"), "{second:?}");
        assert!(answered(&second.1), "{second:?}");
    }
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(over.as_bytes()).await.unwrap();
    let first = answer(&mut stream, &mut Vec::new()).await;
    assert!(first.0.starts_with("http/1.1 413"), "{first:?}");
    assert!(first.0.contains("connection: close"), "{first:?}");
}
