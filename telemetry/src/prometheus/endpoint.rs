//! The `GET /metrics` endpoint: a small HTTP/1.1 server, hand-written because it answers one
//! request per connection with one body (no HTTP stack in this crate, and none needed): it
//! reads at most one request head of [`MAX_REQUEST_HEAD`] bytes within [`READ_TIMEOUT`],
//! answers and closes. A scraper needs no more, and a hostile client gets no more.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::PrometheusMetrics;

/// The largest request head read from a scraper.
pub const MAX_REQUEST_HEAD: usize = 8 * 1024;

/// How long a scraper has to send its request head.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The content type of the exposition: the Prometheus text format, version 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

pub(super) async fn accept(listener: TcpListener, metrics: PrometheusMetrics) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let metrics = metrics.clone();
                tokio::spawn(async move {
                    if let Err(e) = answer(stream, &metrics).await {
                        tracing::debug!(error = %e, "metrics request failed");
                    }
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "metrics endpoint: accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Reads one request head and answers it.
async fn answer(mut stream: TcpStream, metrics: &PrometheusMetrics) -> std::io::Result<()> {
    let mut head = Vec::with_capacity(512);
    let complete = tokio::time::timeout(READ_TIMEOUT, async {
        let mut buf = [0u8; 1024];
        while head.len() < MAX_REQUEST_HEAD {
            let n = stream.read(&mut buf).await?;
            if n == 0 {
                return Ok::<_, std::io::Error>(false);
            }
            head.extend_from_slice(&buf[..n]);
            if head.windows(4).any(|w| w == b"\r\n\r\n") {
                return Ok(true);
            }
        }
        Ok(false)
    })
    .await
    .unwrap_or(Ok(false))?;
    let target = complete
        .then(|| request_target(&head))
        .flatten()
        .unwrap_or("");
    let (status, body) = if target == "/metrics" || target.starts_with("/metrics?") {
        ("200 OK", metrics.render())
    } else if complete {
        (
            "404 Not Found",
            "not found: the metrics are at /metrics\n".to_owned(),
        )
    } else {
        ("400 Bad Request", String::new())
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {CONTENT_TYPE}\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(reply.as_bytes()).await?;
    stream.shutdown().await
}

/// The target of a `GET` request line.
fn request_target(head: &[u8]) -> Option<&str> {
    let line = head.split(|&b| b == b'\r').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split(' ');
    match (parts.next(), parts.next()) {
        (Some("GET"), Some(target)) => Some(target),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        assert_eq!(
            request_target(b"GET /metrics HTTP/1.1\r\n\r\n"),
            Some("/metrics")
        );
        assert_eq!(request_target(b"POST /metrics HTTP/1.1\r\n\r\n"), None);
        assert_eq!(request_target(b"\xff\r\n"), None);
    }
}
