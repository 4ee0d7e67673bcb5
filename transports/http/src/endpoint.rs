//! What every HTTP server built on this crate is set up with alike (the JSON-RPC server here,
//! a profile's server such as MCP Streamable HTTP): accepted hosts, request size and time, the
//! event streams' buffers, and what a serve loop holds open. The defaults and the bounds each
//! setter applies live here once, so that the servers cannot drift apart; their public
//! builders keep the setters (with docs that name their own defaults) and hand the values
//! over.

use std::time::Duration;

use http::{header, Request};

use crate::stream::StreamLimits;

/// The default largest request body (4 MiB).
pub const DEFAULT_MAX_BODY: usize = 4 << 20;

/// The default of
/// [`HttpServer::idle_connection_timeout`](crate::HttpServer::idle_connection_timeout) (and of
/// [`Endpoint`]).
pub const DEFAULT_IDLE_CONNECTION: Duration = Duration::from_secs(90);

/// Which `Host` and `Origin` headers are accepted (DNS-rebinding protection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPolicy {
    /// Any host and origin.
    Any,
    /// Only these host names (without port; `localhost`, `127.0.0.1`, `[::1]` and the like),
    /// in `Host` and, when present, in `Origin`; an entry with a scheme
    /// (`https://app.example.com`, a port if not the scheme's) is an origin accepted in
    /// `Origin` as written (any case), not a host.
    Names(Vec<String>),
}

impl HostPolicy {
    /// `localhost`, `127.0.0.1` and `[::1]`, any port: the default.
    pub fn loopback() -> Self {
        HostPolicy::Names(vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()])
    }

    /// This policy with `name` accepted too: a host name, or an origin with its scheme (see
    /// [`Names`](HostPolicy::Names)). [`Any`](HostPolicy::Any) stays as it is.
    ///
    /// ```
    /// use rpcwire_http::HostPolicy;
    /// let hosts = HostPolicy::loopback().with("api.example.com").with("https://app.example.com");
    /// let req = |host, origin| http::Request::builder().header("host", host).header("origin", origin).body(());
    /// assert_eq!(hosts.refusal(&req("api.example.com", "https://app.example.com")?), None);
    /// assert!(hosts.refusal(&req("app.example.com", "https://app.example.com")?).is_some());
    /// assert!(hosts.refusal(&req("api.example.com", "https://evil.example")?).is_some());
    /// # Ok::<(), http::Error>(())
    /// ```
    pub fn with(mut self, name: impl Into<String>) -> Self {
        if let HostPolicy::Names(names) = &mut self {
            names.push(name.into());
        }
        self
    }

    pub(crate) fn allows_host(&self, host: &str) -> bool {
        self.allows_host_bytes(host.as_bytes())
    }

    /// [`allows_host`](Self::allows_host) of a header value's bytes.
    pub(crate) fn allows_host_bytes(&self, host: &[u8]) -> bool {
        match self {
            HostPolicy::Any => true,
            HostPolicy::Names(names) => {
                let name = strip_port(host);
                // Exact first (clients send names as typed, and loopback ones are digits or
                // lower case): one comparison, before the byte-wise case folding; the first
                // bytes and lengths tell most other names apart without either.
                names.iter().any(|n| {
                    let n = n.as_bytes();
                    n.len() == name.len()
                        && n.first().map(u8::to_ascii_lowercase)
                            == name.first().map(u8::to_ascii_lowercase)
                        && (n == name || n.eq_ignore_ascii_case(name))
                })
            }
        }
    }

    pub(crate) fn allows_origin(&self, origin: &str) -> bool {
        match self {
            HostPolicy::Any => true,
            HostPolicy::Names(names) => match origin.split_once("://") {
                _ if names.iter().any(|n| n.eq_ignore_ascii_case(origin)) => true,
                Some((scheme, rest)) if scheme == "http" || scheme == "https" => {
                    self.allows_host(rest.split('/').next().unwrap_or(""))
                }
                _ => false,
            },
        }
    }

    /// Why `req` is refused with 403 (DNS-rebinding and cross-site protection), if it is: its
    /// `Host` (or, in HTTP/2, its authority) is not an accepted host, or its `Origin`, when
    /// sent, is not an `http` or `https` origin on one.
    pub fn refusal<B>(&self, req: &Request<B>) -> Option<&'static str> {
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| req.uri().authority().map(|a| a.as_str()));
        match host {
            Some(h) if self.allows_host(h) => {}
            None if *self == HostPolicy::Any => {}
            _ => return Some("host not allowed\n"),
        }
        match req.headers().get(header::ORIGIN) {
            Some(origin) if !origin.to_str().is_ok_and(|o| self.allows_origin(o)) => {
                Some("origin not allowed\n")
            }
            _ => None,
        }
    }
}

/// `host:port` → `host` (IPv6 literals keep their brackets). Byte searches: this runs for
/// every request.
fn strip_port(host: &[u8]) -> &[u8] {
    let end = if host.first() == Some(&b'[') {
        host.iter()
            .position(|&b| b == b']')
            .map_or(host.len(), |e| e + 1)
    } else {
        host.iter().position(|&b| b == b':').unwrap_or(host.len())
    };
    host.get(..end).unwrap_or(host)
}

/// The settings every server shares, bounds applied, and the `Host` / `Origin` check
/// ([`refusal`](Endpoint::refusal)).
///
/// ```
/// use rpcwire_http::profile::Endpoint;
/// use rpcwire_http::HostPolicy;
/// use std::time::Duration;
///
/// let mut endpoint = Endpoint::new(Duration::from_secs(30), 64);
/// endpoint.set_max_body(0); // bounded: at least 1024
/// assert_eq!(endpoint.max_body(), 1024);
/// let evil = http::Request::builder().uri("/a2a").header("host", "evil.example").body(())?;
/// assert_eq!(endpoint.refusal(&evil), Some("host not allowed\n"));
/// endpoint.set_hosts(HostPolicy::Any);
/// assert_eq!(endpoint.refusal(&evil), None);
/// # Ok::<(), http::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Which `Host` and `Origin` values are accepted.
    pub(crate) hosts: HostPolicy,
    /// The largest request body, in bytes.
    pub(crate) max_body: usize,
    /// The longest one request may take.
    pub(crate) timeout: Duration,
    /// The event streams' resumption buffer, keep-alive and `retry:`.
    pub(crate) streams: StreamLimits,
    /// The most connections `serve` holds at once.
    pub(crate) max_connections: usize,
    /// How long `serve` keeps a connection with no request under way.
    pub(crate) idle_connection: Duration,
    /// The drain every server of the crate watches (the service's).
    pub(crate) shutdown: rpcwire_service::Shutdown,
}

impl Endpoint {
    /// The defaults (loopback hosts, 4 MiB bodies, a 1 MiB resumption buffer, keep-alive
    /// comments every 15 s, `retry:` 1 s, 10 000 connections, 90 s idle), with a server's own
    /// request time limit and resumption buffer length.
    pub fn new(timeout: Duration, buffered_events: usize) -> Self {
        Endpoint {
            hosts: HostPolicy::loopback(),
            max_body: DEFAULT_MAX_BODY,
            timeout,
            streams: StreamLimits {
                events: buffered_events,
                bytes: 1 << 20,
                keep_alive: Duration::from_secs(15),
                retry: Duration::from_secs(1),
            },
            max_connections: 10_000,
            idle_connection: DEFAULT_IDLE_CONNECTION,
            shutdown: rpcwire_service::Shutdown::default(),
        }
    }

    /// Which `Host` and `Origin` values are accepted (others get 403).
    pub fn set_hosts(&mut self, hosts: HostPolicy) {
        self.hosts = hosts;
    }

    /// The longest one request may take.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// The reconnection time event-stream clients are told (`retry:`).
    pub fn set_retry(&mut self, after: Duration) {
        self.streams.retry = after;
    }

    /// Which `Host` and `Origin` values are accepted.
    pub fn hosts(&self) -> &HostPolicy {
        &self.hosts
    }

    /// The largest request body, in bytes.
    pub fn max_body(&self) -> usize {
        self.max_body
    }

    /// The longest one request may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The event streams' resumption buffer, keep-alive and `retry:`.
    pub fn streams(&self) -> StreamLimits {
        self.streams
    }

    /// The most connections a serve loop holds at once.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// How long a serve loop keeps a connection with no request under way.
    pub fn idle_connection(&self) -> Duration {
        self.idle_connection
    }

    /// The largest request body: at least 1024 bytes (a smaller limit would refuse every real
    /// request).
    pub fn set_max_body(&mut self, bytes: usize) {
        self.max_body = bytes.max(1024);
    }

    /// The resumption buffers' length in events (at least one: a stream with none could never
    /// resume) and in bytes.
    pub fn set_stream_buffer(&mut self, events: usize, bytes: usize) {
        self.streams.events = events.max(1);
        self.streams.bytes = bytes;
    }

    /// The keep-alive comment interval of idle event streams: at least 10 ms (a zero interval
    /// would spin).
    pub fn set_keep_alive(&mut self, every: Duration) {
        self.streams.keep_alive = every.max(Duration::from_millis(10));
    }

    /// The most connections a serve loop holds at once: at least one (none would accept
    /// nothing, for ever).
    pub fn set_max_connections(&mut self, limit: usize) {
        self.max_connections = limit.max(1);
    }

    /// How long a connection with no request under way is kept: at least 1 ms (a zero timer
    /// would close every connection before its first request).
    pub fn set_idle_connection(&mut self, idle: Duration) {
        self.idle_connection = idle.max(Duration::from_millis(1));
    }

    /// The drain the serve loops watch: they stop accepting once it is triggered, and every
    /// request that arrives then is answered 503 with `Connection: close` (a server takes its
    /// service's, [`Service::shutdown`](rpcwire_service::Service::shutdown)).
    pub fn set_shutdown(&mut self, shutdown: &rpcwire_service::Shutdown) {
        self.shutdown = shutdown.clone();
    }

    /// The drain the serve loops watch.
    pub fn shutdown(&self) -> &rpcwire_service::Shutdown {
        &self.shutdown
    }

    /// Why `req` is refused with 403, if it is: [`HostPolicy::refusal`] of its hosts.
    pub fn refusal<B>(&self, req: &Request<B>) -> Option<&'static str> {
        self.hosts.refusal(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(host: Option<&str>, origin: Option<&str>) -> Request<()> {
        let mut b = Request::builder().uri("/rpc");
        if let Some(h) = host {
            b = b.header(header::HOST, h);
        }
        if let Some(o) = origin {
            b = b.header(header::ORIGIN, o);
        }
        b.body(()).unwrap_or_default()
    }

    #[test]
    fn loopback_hosts_and_origins_pass_others_are_refused() {
        let e = Endpoint::new(Duration::from_secs(1), 1);
        assert_eq!(e.refusal(&request(Some("127.0.0.1:8080"), None)), None);
        assert_eq!(e.refusal(&request(Some("LOCALHOST"), None)), None);
        assert_eq!(e.refusal(&request(Some("[::1]:1"), None)), None);
        assert_eq!(
            e.refusal(&request(Some("localhost"), Some("http://localhost:3000"))),
            None
        );
        assert_eq!(
            e.refusal(&request(Some("evil.example"), None)),
            Some("host not allowed\n")
        );
        assert_eq!(e.refusal(&request(None, None)), Some("host not allowed\n"));
        assert_eq!(
            e.refusal(&request(Some("localhost"), Some("http://evil.example"))),
            Some("origin not allowed\n")
        );
        assert_eq!(
            e.refusal(&request(Some("localhost"), Some("file://localhost"))),
            Some("origin not allowed\n")
        );
    }

    #[test]
    fn any_host_takes_requests_without_one() {
        let mut e = Endpoint::new(Duration::from_secs(1), 1);
        e.hosts = HostPolicy::Any;
        assert_eq!(e.refusal(&request(None, Some("null"))), None);
        assert_eq!(e.refusal(&request(Some("evil.example"), None)), None);
    }

    #[test]
    fn setters_keep_their_bounds() {
        let mut e = Endpoint::new(Duration::from_secs(1), 1);
        e.set_max_body(0);
        e.set_stream_buffer(0, 0);
        e.set_keep_alive(Duration::ZERO);
        e.set_max_connections(0);
        e.set_idle_connection(Duration::ZERO);
        assert_eq!(e.max_body, 1024);
        assert_eq!(e.streams.events, 1);
        assert_eq!(e.streams.keep_alive, Duration::from_millis(10));
        assert_eq!(e.max_connections, 1);
        assert_eq!(e.idle_connection, Duration::from_millis(1));
    }
}
