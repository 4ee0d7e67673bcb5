//! Spans exported over OTLP/HTTP with protobuf bodies (feature `otlp`): OpenTelemetry's SDK
//! batches the spans that a `tracing-opentelemetry` layer makes of rpcwire's call and
//! connection spans (see `rpcwire_tokio::telemetry`) and POSTs them to a collector's
//! `/v1/traces`.
//!
//! The exporter's HTTP client is this module's own: a blocking HTTP/1.1 POST over a plain
//! `http://` connection, one per batch. The SDK's batch processor exports from a thread of
//! its own (no tokio runtime there, which the `hyper` client of `opentelemetry-http` needs)
//! and `reqwest` would bring a second HTTP stack and a TLS stack besides rustls; a collector
//! is normally on the same host or network (an agent or sidecar), so `https://` is refused
//! with an error rather than supported.
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! let otlp = rpcwire_http::otlp::OtlpExport::start("http://127.0.0.1:4318", "my-service")?;
//! let subscriber = tracing_subscriber::registry().with(otlp.layer());
//! tracing::subscriber::set_global_default(subscriber)?;
//! // ... serve ...
//! otlp.shutdown(); // exports what is left
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

/// How long one export may take (connecting, writing the batch, reading the answer).
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// The most bytes of a collector's answer read (its body is only a partial-success note).
const MAX_ANSWER: u64 = 64 << 10;

/// Why the exporter could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtlpError {
    /// Not an `http://host[:port][/path]` URL.
    #[error("OTLP endpoint must be an http:// URL: {0}")]
    BadUrl(String),
    /// The SDK refused the exporter's settings.
    #[error("OTLP exporter: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// A metrics export interval of zero.
    #[error("OTLP metrics interval must be more than zero")]
    BadInterval,
    /// The metrics export's thread could not start.
    #[error("OTLP metrics thread: {0}")]
    Thread(std::io::Error),
}

/// The traces endpoint of `url`: the URL itself when it names `/v1/traces`, otherwise that
/// path under it (as `OTEL_EXPORTER_OTLP_ENDPOINT` is read).
pub fn traces_endpoint(url: &str) -> Result<String, OtlpError> {
    signal_endpoint(url, "/v1/traces")
}

/// The paths of the OTLP/HTTP signals under a collector's base URL.
const SIGNAL_PATHS: [&str; 3] = ["/v1/traces", "/v1/metrics", "/v1/logs"];

/// The endpoint of a signal (`path`: `/v1/traces`, `/v1/metrics`) under an `http://` URL. A
/// URL that names a signal's path already (one `--otlp` URL copied from a traces setting,
/// say) stands for its collector: each signal goes to its own path beside it, never to
/// `/v1/traces/v1/metrics`.
pub(crate) fn signal_endpoint(url: &str, path: &str) -> Result<String, OtlpError> {
    let uri: http::Uri = url.parse().map_err(|_| OtlpError::BadUrl(url.to_owned()))?;
    if uri.scheme_str() != Some("http") || uri.host().is_none() {
        return Err(OtlpError::BadUrl(url.to_owned()));
    }
    let base = url.trim_end_matches('/');
    let base = SIGNAL_PATHS
        .iter()
        .find_map(|signal| base.strip_suffix(signal))
        .unwrap_or(base);
    Ok(format!("{base}{path}"))
}

/// The `tracing` layer of an [`OtlpExport`] (see [`OtlpExport::layer`]).
pub type OtlpLayer<S> = tracing_subscriber::filter::Filtered<
    tracing_opentelemetry::OpenTelemetryLayer<S, SdkTracer>,
    tracing_subscriber::filter::Targets,
    S,
>;

/// A running export of spans: its tracer for the `tracing` layer, flushed and stopped by
/// [`shutdown`](OtlpExport::shutdown) (or when dropped).
#[derive(Debug)]
pub struct OtlpExport {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
}

impl OtlpExport {
    /// Starts exporting to the collector at `url` (`http://host:port`, spans going to
    /// `/v1/traces`), as the service `service_name`.
    pub fn start(url: &str, service_name: &str) -> Result<Self, OtlpError> {
        let endpoint = traces_endpoint(url)?;
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(endpoint)
            .with_timeout(EXPORT_TIMEOUT)
            .with_http_client(PlainHttp {
                timeout: EXPORT_TIMEOUT,
            })
            .build()?;
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(service_name.to_owned())
            .build();
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("rpcwire");
        Ok(OtlpExport { provider, tracer })
    }

    /// The `tracing` layer that turns spans into OpenTelemetry spans for this export (only
    /// spans at info level and above: rpcwire's call and connection spans are). The call log
    /// (target [`CALL_LOG`](rpcwire_tokio::telemetry::CALL_LOG)) is left to the layers that
    /// write it: were it taken here, every call would build its log line and add it as an
    /// event to the span it ends in (its connection's, for a call answered in place), sampled
    /// or not, whether the call log is on or not. Spans carry no `busy_ns`/`idle_ns`.
    pub fn layer<S>(&self) -> OtlpLayer<S>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        use tracing_subscriber::filter::{LevelFilter, Targets};
        use tracing_subscriber::Layer as _;
        let filter = Targets::new()
            .with_default(LevelFilter::INFO)
            .with_target(rpcwire_tokio::telemetry::CALL_LOG, LevelFilter::OFF);
        // No busy/idle times: they read the clock on every enter and exit of every span,
        // and a connection's span is entered on every poll of its driver.
        tracing_opentelemetry::layer()
            .with_tracer(self.tracer.clone())
            .with_tracked_inactivity(false)
            .with_filter(filter)
    }

    /// Exports the spans not yet sent, then stops.
    pub fn shutdown(self) {
        // `Drop` does it.
    }
}

impl Drop for OtlpExport {
    fn drop(&mut self) {
        if let Err(e) = self.provider.force_flush() {
            tracing::warn!(error = %e, "OTLP: spans not exported");
        }
        let _ = self.provider.shutdown();
    }
}

/// The exporter's HTTP client: one blocking HTTP/1.1 POST per batch over a plain TCP
/// connection (see the module's documentation for why).
#[derive(Debug)]
pub(crate) struct PlainHttp {
    pub(crate) timeout: Duration,
}

impl PlainHttp {
    pub(crate) fn post(&self, request: Request<Bytes>) -> std::io::Result<Response<Bytes>> {
        use std::io::{Error, ErrorKind};
        let uri = request.uri();
        let host = uri
            .host()
            .ok_or_else(|| Error::new(ErrorKind::InvalidInput, "no host"))?;
        let port = uri.port_u16().unwrap_or(80);
        let addr = (host.trim_matches(['[', ']']), port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| Error::new(ErrorKind::NotFound, "no address"))?;
        let mut stream = TcpStream::connect_timeout(&addr, self.timeout)?;
        stream.set_read_timeout(Some(self.timeout))?;
        stream.set_write_timeout(Some(self.timeout))?;
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let authority = uri.authority().map_or(host, |a| a.as_str());
        let mut head = format!(
            "POST {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {}\r\nConnection: close\r\n",
            request.body().len()
        );
        for (name, value) in request.headers() {
            if name == http::header::CONTENT_LENGTH || name == http::header::HOST {
                continue;
            }
            if let Ok(value) = value.to_str() {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes())?;
        stream.write_all(request.body())?;
        stream.flush()?;
        let mut answer = Vec::new();
        stream.take(MAX_ANSWER).read_to_end(&mut answer)?;
        parse_answer(&answer)
    }
}

/// The status and body of an HTTP/1.1 answer read to its end (`Connection: close`).
fn parse_answer(answer: &[u8]) -> std::io::Result<Response<Bytes>> {
    use std::io::{Error, ErrorKind};
    let bad = || Error::new(ErrorKind::InvalidData, "not an HTTP/1.1 answer");
    let end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(bad)?;
    let status_line = answer[..end]
        .split(|&b| b == b'\r')
        .next()
        .ok_or_else(bad)?;
    let code = std::str::from_utf8(status_line)
        .ok()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(bad)?;
    Response::builder()
        .status(code)
        .body(Bytes::copy_from_slice(&answer[end + 4..]))
        .map_err(|_| bad())
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for PlainHttp {
    async fn send_bytes(
        &self,
        request: Request<Bytes>,
    ) -> Result<Response<Bytes>, opentelemetry_http::HttpError> {
        // Blocking: the SDK's batch processor calls it from its own thread.
        Ok(self.post(request)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_http_urls_under_v1_traces() {
        assert_eq!(
            traces_endpoint("http://127.0.0.1:4318").unwrap(),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            traces_endpoint("http://[::1]:4318/v1/traces").unwrap(),
            "http://[::1]:4318/v1/traces"
        );
        assert!(traces_endpoint("https://collector:4318").is_err());
        assert!(traces_endpoint("127.0.0.1:4318").is_err());
    }

    #[test]
    fn answers_give_their_status() {
        let ok = parse_answer(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi").unwrap();
        assert_eq!(ok.status(), 200);
        assert_eq!(ok.body().as_ref(), b"hi");
        assert!(parse_answer(b"garbage").is_err());
        assert!(parse_answer(b"HTTP/1.1 x\r\n\r\n").is_err());
    }
}
