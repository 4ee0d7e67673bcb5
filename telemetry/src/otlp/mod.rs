//! Spans exported over OTLP/HTTP with protobuf bodies (feature `otlp`): OpenTelemetry's SDK
//! batches the spans that a `tracing-opentelemetry` layer makes of rpcwire's call and
//! connection spans (see `crate`) and POSTs them to a collector's
//! `/v1/traces`.
//!
//! The exporter is this module's own. It encodes each batch straight into the protobuf
//! `ExportTraceServiceRequest`, with no conversion to `opentelemetry-proto`'s messages first
//! (`otlp_encode.rs` says why and how it is held to the library's encoding), and its HTTP
//! client is a blocking HTTP/1.1 POST over a plain `http://` connection, one per batch. The
//! SDK's batch processor exports from a thread of its own (no tokio runtime there, which the
//! `hyper` client of `opentelemetry-http` needs) and `reqwest` would bring a second HTTP stack
//! and a TLS stack besides rustls; a collector is normally on the same host or network (an
//! agent or sidecar), so `https://` is refused with an error rather than supported.
//!
//! ```no_run
//! use tracing_subscriber::layer::SubscriberExt;
//! let otlp = rpcwire_telemetry::otlp::OtlpExport::start("http://127.0.0.1:4318", "my-service")?;
//! let subscriber = tracing_subscriber::registry().with(otlp.layer());
//! tracing::subscriber::set_global_default(subscriber)?;
//! // ... serve ...
//! otlp.shutdown(); // exports what is left
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod encode;
pub mod metrics;

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, Uri};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider, SpanData, SpanExporter};

use crate::otlp::encode::TraceEncoder;

/// How long one export may take (connecting, writing the batch, reading the answer).
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// How many times an export is tried again after a failure that may pass (an answer 429, 502,
/// 503 or 504, or no connection: what OpenTelemetry's exporters retry), each after a pause
/// twice the one before, from [`RETRY_PAUSE`]. Others (a 400, say) are not: the same batch
/// would fail the same way.
pub const EXPORT_RETRIES: u32 = 3;

/// The pause before the first retry of an export (see [`EXPORT_RETRIES`]).
pub const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// The most bytes of a collector's answer read (its body is only a partial-success note).
const MAX_ANSWER: u64 = 64 << 10;

/// Why the exporter could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtlpError {
    /// Not an `http://host[:port][/path]` URL.
    #[error("OTLP endpoint must be an http:// URL: {0}")]
    BadUrl(String),
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
    ///
    /// Every span rpcwire builds is exported: which calls get one is rpcwire's head sampling
    /// (`rpcwire_telemetry::set_sample_ratio`), set from OpenTelemetry's
    /// `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG` by
    /// `rpcwire_telemetry::SampleRatio::from_env` if the application asks for it (as
    /// `rpcwire serve --otlp` does); the SDK's own sampler does not read them.
    pub fn start(url: &str, service_name: &str) -> Result<Self, OtlpError> {
        let endpoint = traces_endpoint(url)?
            .parse()
            .map_err(|_| OtlpError::BadUrl(url.to_owned()))?;
        let exporter = SpanExport {
            client: PlainHttp {
                timeout: EXPORT_TIMEOUT,
            },
            endpoint,
            state: Mutex::default(),
            shut_down: AtomicBool::new(false),
            retry_pause: RETRY_PAUSE,
        };
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(service_name.to_owned())
            .build();
        // Sampling is rpcwire's, decided before a span is built
        // (`rpcwire_telemetry::set_sample_ratio`; OpenTelemetry's `OTEL_TRACES_SAMPLER`
        // through `SampleRatio::from_env`): the SDK records every span it is given, with the
        // sampler it would take by default, not one of the environment's on top.
        let sampler = opentelemetry_sdk::trace::Sampler::ParentBased(Box::new(
            opentelemetry_sdk::trace::Sampler::AlwaysOn,
        ));
        let provider = SdkTracerProvider::builder()
            .with_sampler(sampler)
            .with_batch_exporter(exporter)
            .with_resource(resource)
            .build();
        let tracer = provider.tracer("rpcwire");
        Ok(OtlpExport { provider, tracer })
    }

    /// The `tracing` layer that turns spans into OpenTelemetry spans for this export (only
    /// spans at info level and above: rpcwire's call and connection spans are). The call log
    /// (target [`CALL_LOG`](crate::CALL_LOG)) is left to the layers that
    /// write it: were it taken here, every call would build its log line and add it as an
    /// event to the span it ends in (its connection's, for a call answered in place), sampled
    /// or not, whether the call log is on or not.
    ///
    /// Spans carry the attributes rpcwire gives them and nothing of the layer's own: no
    /// `busy_ns`/`idle_ns`, no source location (`code.*`: rpcwire's own files), no thread
    /// (`thread.*`), no `target`. Entering a span does not make its OpenTelemetry context
    /// the current one (`opentelemetry::Context::current()`): code that needs the context of
    /// the span it runs in takes it from the span
    /// (`tracing_opentelemetry::OpenTelemetrySpanExt::context` of `tracing::Span::current()`),
    /// as rpcwire does for the `traceparent` it sends. Each of these cost work on every span
    /// (attributes to build and export, a context made current on every entry: a call's span
    /// is entered while its handler runs): together about a fifth of a sampled call's work on
    /// the thread that serves it (see `BENCHMARKS.md`).
    pub fn layer<S>(&self) -> OtlpLayer<S>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    {
        use tracing_subscriber::filter::{LevelFilter, Targets};
        use tracing_subscriber::Layer as _;
        let filter = Targets::new()
            .with_default(LevelFilter::INFO)
            .with_target(crate::CALL_LOG, LevelFilter::OFF);
        // No busy/idle times: they read the clock on every enter and exit of every span,
        // and a connection's span is entered on every poll of its driver.
        tracing_opentelemetry::layer()
            .with_tracer(self.tracer.clone())
            .with_tracked_inactivity(false)
            .with_context_activation(false)
            .with_location(false)
            .with_threads(false)
            .with_target(false)
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

/// The span exporter: each batch encoded by `TraceEncoder` (not `opentelemetry-otlp`'s
/// conversion to `opentelemetry-proto`'s messages: see `otlp_encode` for why) into a
/// buffer kept between batches, and POSTed by [`PlainHttp`]. An answer other than 2xx, or an
/// I/O error, fails the export, once retried as [`EXPORT_RETRIES`] says.
#[derive(Debug)]
struct SpanExport {
    client: PlainHttp,
    /// The traces endpoint (`.../v1/traces`).
    endpoint: Uri,
    /// The encoder and the body's buffer. The batch processor exports from its one thread, so
    /// the lock is never waited for.
    state: Mutex<(TraceEncoder, Vec<u8>)>,
    shut_down: AtomicBool,
    /// The pause before the first retry ([`RETRY_PAUSE`]; shorter in tests).
    retry_pause: Duration,
}

/// An answer status that asks to be tried again later.
fn retryable(status: http::StatusCode) -> bool {
    matches!(status.as_u16(), 429 | 502 | 503 | 504)
}

impl SpanExport {
    fn export_now(&self, batch: &[SpanData]) -> OTelSdkResult {
        if self.shut_down.load(Ordering::Relaxed) {
            return Err(OTelSdkError::InternalFailure(
                "OTLP exporter already shut down".to_owned(),
            ));
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (encoder, body) = &mut *state;
        encoder.encode(batch, body);
        let headers = [("Content-Type", "application/x-protobuf")];
        let mut pause = self.retry_pause;
        let mut retries = 0;
        loop {
            let failure = match self.client.send(&self.endpoint, headers, body) {
                Ok(answer) if answer.status().is_success() => return Ok(()),
                Ok(answer) if !retryable(answer.status()) => {
                    return Err(OTelSdkError::InternalFailure(format!(
                        "OTLP export failed: HTTP status {}",
                        answer.status()
                    )));
                }
                Ok(answer) => format!("HTTP status {}", answer.status()),
                Err(e) => e.to_string(),
            };
            if retries == EXPORT_RETRIES {
                return Err(OTelSdkError::InternalFailure(format!(
                    "OTLP export failed after {} attempts: {failure}",
                    retries + 1
                )));
            }
            // Blocking: this is the batch processor's own thread (spans keep queueing, up to
            // its queue's bound, meanwhile).
            std::thread::sleep(pause);
            pause *= 2;
            retries += 1;
        }
    }
}

impl SpanExporter for SpanExport {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        // Blocking: the SDK's batch processor calls it from its own thread.
        self.export_now(&batch)
    }

    fn shutdown_with_timeout(&self, _timeout: Duration) -> OTelSdkResult {
        if self.shut_down.swap(true, Ordering::Relaxed) {
            return Err(OTelSdkError::AlreadyShutdown);
        }
        Ok(())
    }

    fn set_resource(&mut self, resource: &opentelemetry_sdk::Resource) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        state.0.set_resource(resource);
    }
}

/// The exporters' HTTP client: one blocking HTTP/1.1 POST per batch over a plain TCP
/// connection (see the module's documentation for why).
#[derive(Debug)]
pub(crate) struct PlainHttp {
    pub(crate) timeout: Duration,
}

impl PlainHttp {
    /// POSTs `request` (its URI, headers and body).
    pub(crate) fn post(&self, request: Request<Bytes>) -> std::io::Result<Response<Bytes>> {
        let headers = request
            .headers()
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)));
        self.send(request.uri(), headers, request.body())
    }

    /// POSTs `body` to `uri` with `headers` (`Host` and `Content-Length` are this client's
    /// own).
    pub(crate) fn send<'a>(
        &self,
        uri: &Uri,
        headers: impl IntoIterator<Item = (&'a str, &'a str)>,
        body: &[u8],
    ) -> std::io::Result<Response<Bytes>> {
        use std::io::{Error, ErrorKind};
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
            body.len()
        );
        for (name, value) in headers {
            if name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("host") {
                continue;
            }
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes())?;
        stream.write_all(body)?;
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

    /// A collector that takes one POST, answers it with `status` and hands back its head and
    /// body.
    fn collector(status: u16) -> (String, std::sync::mpsc::Receiver<(String, Vec<u8>)>) {
        collector_answering(vec![status])
    }

    /// A collector that takes a POST per status, answers each with its status in turn and
    /// hands back their heads and bodies; then stops listening.
    fn collector_answering(
        statuses: Vec<u16>,
    ) -> (String, std::sync::mpsc::Receiver<(String, Vec<u8>)>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for status in statuses {
                let (mut stream, _) = listener.accept().unwrap();
                take_post(&mut stream, status, &tx);
            }
        });
        (url, rx)
    }

    /// Reads one POST from `stream`, answers `status` and sends its head and body on `tx`.
    fn take_post(
        stream: &mut std::net::TcpStream,
        status: u16,
        tx: &std::sync::mpsc::Sender<(String, Vec<u8>)>,
    ) {
        let mut request = Vec::new();
        let mut chunk = [0; 4096];
        let (head, length) = loop {
            let n = stream.read(&mut chunk).unwrap();
            assert!(n > 0, "the request ended early");
            request.extend_from_slice(&chunk[..n]);
            if let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8(request[..end].to_vec()).unwrap();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                    .unwrap()
                    .parse::<usize>()
                    .unwrap();
                request.drain(..end + 4);
                break (head, length);
            }
        };
        while request.len() < length {
            let n = stream.read(&mut chunk).unwrap();
            assert!(n > 0, "the body ended early");
            request.extend_from_slice(&chunk[..n]);
        }
        let answer =
            format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        stream.write_all(answer.as_bytes()).unwrap();
        tx.send((head, request)).unwrap();
    }

    fn exporter(url: &str) -> SpanExport {
        SpanExport {
            client: PlainHttp {
                timeout: Duration::from_secs(5),
            },
            endpoint: traces_endpoint(url).unwrap().parse().unwrap(),
            state: Mutex::default(),
            shut_down: AtomicBool::new(false),
            retry_pause: Duration::from_millis(1),
        }
    }

    fn span() -> SpanData {
        use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId};
        SpanData {
            span_context: SpanContext::new(
                TraceId::from(7),
                SpanId::from(9),
                TraceFlags::SAMPLED,
                false,
                Default::default(),
            ),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Server,
            name: "call".into(),
            start_time: std::time::UNIX_EPOCH + Duration::from_secs(1),
            end_time: std::time::UNIX_EPOCH + Duration::from_secs(2),
            attributes: vec![opentelemetry::KeyValue::new("rpc.method", "subtract")],
            dropped_attributes_count: 0,
            events: Default::default(),
            links: Default::default(),
            status: Status::Unset,
            instrumentation_scope: opentelemetry::InstrumentationScope::builder("rpcwire").build(),
        }
    }

    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(future)
    }

    #[test]
    fn a_batch_is_posted_as_protobuf_to_v1_traces() {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use prost::Message as _;
        let (url, requests) = collector(200);
        let mut exporter = exporter(&url);
        let resource = opentelemetry_sdk::Resource::builder_empty()
            .with_service_name("svc")
            .build();
        exporter.set_resource(&resource);
        block_on(exporter.export(vec![span()])).unwrap();
        let (head, body) = requests.recv().unwrap();
        assert!(head.starts_with("POST /v1/traces HTTP/1.1\r\n"), "{head}");
        assert!(
            head.contains("\r\nContent-Type: application/x-protobuf"),
            "{head}"
        );
        let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        let resource_spans = &request.resource_spans[0];
        let service = &resource_spans.resource.as_ref().unwrap().attributes[0];
        assert_eq!(service.key, "service.name");
        let spans = &resource_spans.scope_spans[0].spans;
        assert_eq!(spans.len(), 1);
        assert_eq!(spans[0].name, "call");
        assert_eq!(spans[0].attributes[0].key, "rpc.method");
    }

    #[test]
    fn failed_posts_are_export_errors() {
        // Tried again while the collector is unavailable, then given up.
        let (url, requests) = collector_answering(vec![503; 4]);
        let error = block_on(exporter(&url).export(vec![span()])).unwrap_err();
        assert!(error.to_string().contains("503"), "{error}");
        assert!(error.to_string().contains("after 4 attempts"), "{error}");
        assert_eq!(requests.iter().count(), 4);

        // A refusal of the batch itself is not tried again.
        let (url, requests) = collector_answering(vec![400]);
        let error = block_on(exporter(&url).export(vec![span()])).unwrap_err();
        assert!(error.to_string().contains("400"), "{error}");
        assert_eq!(requests.iter().count(), 1);

        // Nothing listening.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", closed.local_addr().unwrap());
        drop(closed);
        assert!(block_on(exporter(&url).export(vec![span()])).is_err());
    }

    /// A collector unavailable for a moment (a 503, then a 429) gets the batch on the third
    /// attempt, the same bytes each time.
    #[test]
    fn transient_failures_are_retried() {
        let (url, requests) = collector_answering(vec![503, 429, 200]);
        block_on(exporter(&url).export(vec![span()])).unwrap();
        let bodies: Vec<Vec<u8>> = requests.iter().map(|(_, body)| body).collect();
        assert_eq!(bodies.len(), 3);
        assert!(bodies.iter().all(|b| b == &bodies[0] && !b.is_empty()));
    }

    #[test]
    fn nothing_is_exported_after_shutdown() {
        let exporter = exporter("http://127.0.0.1:9");
        exporter.shutdown().unwrap();
        assert!(matches!(
            exporter.shutdown(),
            Err(OTelSdkError::AlreadyShutdown)
        ));
        assert!(block_on(exporter.export(vec![span()])).is_err());
    }

    #[test]
    fn the_export_sends_its_spans_under_the_service_name_when_dropped() {
        use opentelemetry::trace::{Span as _, Tracer as _};
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use opentelemetry_proto::tonic::common::v1::any_value::Value;
        use prost::Message as _;
        let (url, requests) = collector(200);
        let export = OtlpExport::start(&url, "my-service").unwrap();
        export.tracer.start("work").end();
        export.shutdown();
        let (_, body) = requests.recv().unwrap();
        let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        let resource_spans = &request.resource_spans[0];
        let resource = resource_spans.resource.as_ref().unwrap();
        let service = resource
            .attributes
            .iter()
            .find(|kv| kv.key == "service.name")
            .and_then(|kv| kv.value.as_ref()?.value.as_ref());
        assert_eq!(service, Some(&Value::StringValue("my-service".to_owned())));
        let scope_spans = &resource_spans.scope_spans[0];
        assert_eq!(scope_spans.scope.as_ref().unwrap().name, "rpcwire");
        assert_eq!(scope_spans.spans[0].name, "work");
    }
}
