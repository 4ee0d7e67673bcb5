//! `rpcwire serve --metrics ADDR`: the calls' and connections' metrics (see
//! `rpcwire_telemetry`) in the Prometheus text format, on an address of their own
//! (loopback unless told otherwise), so that scraping needs no access to the RPC port.
//!
//! The recorder is `metrics-exporter-prometheus`'s; the endpoint is a small HTTP/1.1 server
//! here (`GET /metrics`, anything else 404), which reads at most one request head of 8 KiB per
//! connection within 10 seconds and closes: a scraper needs no more, and a hostile client
//! gets no more.

use std::net::SocketAddr;
use std::time::Duration;

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use rpcwire_telemetry::{names, BATCH_SIZE_BUCKETS, DURATION_BUCKETS};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The largest request head read from a scraper.
pub const MAX_REQUEST_HEAD: usize = 8 * 1024;

/// How long a scraper has to send its request head.
pub const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the metrics endpoint could not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsError {
    /// `--metrics` is neither `HOST:PORT` nor a port.
    #[error("--metrics {0}: expected HOST:PORT or a port (served on 127.0.0.1)")]
    Address(String),
    /// The address could not be bound.
    #[error("--metrics {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// A recorder was installed already, or the buckets are invalid.
    #[error("metrics recorder: {0}")]
    Recorder(String),
}

/// `--metrics`'s address: `HOST:PORT`, or a port alone on the loopback interface.
pub fn parse_addr(text: &str) -> Result<SocketAddr, MetricsError> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    text.parse::<u16>()
        .map(|port| SocketAddr::from(([127, 0, 0, 1], port)))
        .map_err(|_| MetricsError::Address(text.to_owned()))
}

/// Installs the Prometheus recorder (call durations with the OpenTelemetry buckets, batch
/// sizes in powers of two) and
/// serves it on `addr`; returns the address bound (port 0 picks one).
pub async fn serve(addr: SocketAddr) -> Result<SocketAddr, MetricsError> {
    serve_beside(addr, None::<metrics::NoopRecorder>).await
}

/// [`serve`], with `other` recording the same values beside the Prometheus recorder (the OTLP
/// export's, `serve --metrics ADDR --otlp URL`): one source for both exporters.
pub async fn serve_beside<R>(addr: SocketAddr, other: Option<R>) -> Result<SocketAddr, MetricsError>
where
    R: metrics::Recorder + Send + Sync + 'static,
{
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| MetricsError::Bind { addr, source })?;
    let local = listener
        .local_addr()
        .map_err(|source| MetricsError::Bind { addr, source })?;
    let recorder = PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Full(names::SERVER_DURATION.into()),
            &DURATION_BUCKETS,
        )
        .and_then(|b| {
            b.set_buckets_for_metric(
                Matcher::Full(names::CLIENT_DURATION.into()),
                &DURATION_BUCKETS,
            )
        })
        .and_then(|b| {
            b.set_buckets_for_metric(Matcher::Full(names::BATCH_SIZE.into()), &BATCH_SIZE_BUCKETS)
        })
        .map_err(|e| MetricsError::Recorder(e.to_string()))?
        .build_recorder();
    let handle = recorder.handle();
    let installed = match other {
        None => metrics::set_global_recorder(recorder).map_err(|e| e.to_string()),
        Some(other) => {
            let both = metrics_util::layers::FanoutBuilder::default()
                .add_recorder(recorder)
                .add_recorder(other)
                .build();
            metrics::set_global_recorder(both).map_err(|e| e.to_string())
        }
    };
    installed.map_err(MetricsError::Recorder)?;
    // Durations and calls in flight counted in process and rendered below: a fraction of the
    // exporter's cost per sample (a clock read and a queue push each).
    rpcwire_telemetry::durations::aggregate();
    rpcwire_telemetry::enable_metrics();
    tokio::spawn(accept(listener, handle));
    Ok(local)
}

async fn accept(listener: TcpListener, handle: PrometheusHandle) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                let handle = handle.clone();
                tokio::spawn(async move {
                    if let Err(e) = answer(stream, &handle).await {
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
async fn answer(mut stream: TcpStream, handle: &PrometheusHandle) -> std::io::Result<()> {
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
        handle.run_upkeep();
        let mut text = handle.render();
        rpcwire_telemetry::durations::render_prometheus(&mut text);
        ("200 OK", text)
    } else if complete {
        (
            "404 Not Found",
            "not found: the metrics are at /metrics\n".to_owned(),
        )
    } else {
        ("400 Bad Request", String::new())
    };
    let reply = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
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
    fn addresses() {
        assert_eq!(
            parse_addr("9464").unwrap(),
            "127.0.0.1:9464".parse().unwrap()
        );
        assert_eq!(
            parse_addr("0.0.0.0:1").unwrap(),
            "0.0.0.0:1".parse().unwrap()
        );
        assert!(parse_addr("nowhere").is_err());
    }

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
