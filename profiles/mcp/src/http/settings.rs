//! The settings of an MCP Streamable HTTP server ([`McpHttpServer`]), and
//! [`build`](McpHttpServer::build), which makes its [`McpService`] with everything a request
//! needs built once: the responders that answer POST bodies, the session table, the routes.

use std::prelude::rust_2021::*;

use std::sync::Arc;
use std::time::Duration;

use rpcwire::Config;
use rpcwire_http::profile::{Endpoint, DEFAULT_MAX_PARKED};
use rpcwire_http::HostPolicy;
use rpcwire_service::Responder;
use rpcwire_tokio::{Authenticator, Builder};

use super::auth::{AuthSettings, Gate, ProtectedResource};
use super::routes::Routes;
use super::server::{Inner, McpService};
use super::session::Sessions;
use super::session_table::{clean_prefix, SessionLimits};
use super::store::SharedStore;
use super::wire::Mode;
use crate::tokio::McpServer;

/// Settings of an MCP Streamable HTTP server, and [`build`](McpHttpServer::build) to make
/// its [`McpService`].
#[derive(Clone)]
pub struct McpHttpServer {
    builder: Builder,
    mode: Mode,
    path: String,
    endpoint: Endpoint,
    prefix: String,
    sessions: SessionLimits,
    auth: AuthSettings,
    /// Sessions and event logs shared with other replicas.
    store: Option<SharedStore>,
    /// The most request streams per session parked for resumption.
    max_parked: usize,
    /// Every POST signed (feature `signing`).
    #[cfg(feature = "signing")]
    signing: Option<Arc<rpcwire_tokio::signing::RequestSigning>>,
}

impl std::fmt::Debug for McpHttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHttpServer")
            .field("mode", &self.mode)
            .field("path", &self.path)
            .field("hosts", self.endpoint.hosts())
            .field("prefix", &self.prefix)
            .field("sessions", &self.sessions)
            .finish_non_exhaustive()
    }
}

impl McpHttpServer {
    /// Serves `server` (its handshake checks are left to the sessions here:
    /// `strict_handshake(false)`).
    pub fn new(server: McpServer) -> Self {
        Self::from_builder(server.strict_handshake(false).builder())
    }

    /// Serves the router of `builder` (an [`mcp_builder`](crate::tokio::mcp_builder) with an
    /// MCP router, possibly extended with methods of its own: resources, prompts,
    /// completion), with its service's policies and its connections' settings. An
    /// [`McpServer`]'s router needs `strict_handshake(false)`: the sessions are kept here,
    /// and each POST is answered by whichever pooled connection is free.
    pub fn from_builder(builder: Builder) -> Self {
        McpHttpServer {
            builder,
            mode: Mode::Sessions,
            path: "/mcp".into(),
            endpoint: Endpoint::new(Duration::from_secs(300), 256),
            prefix: "mcp".into(),
            sessions: SessionLimits {
                max_sessions: 1024,
                idle: Duration::from_secs(600),
            },
            auth: AuthSettings::default(),
            store: None,
            max_parked: DEFAULT_MAX_PARKED,
            #[cfg(feature = "signing")]
            signing: None,
        }
    }

    /// Shares the sessions (2025-11-25 and older revisions), the request streams' events and
    /// the client's answers to the server's requests with other replicas through `store`
    /// ([`MemoryStore`](super::store::MemoryStore), or `RedisStore` with the feature
    /// `redis`), so that any replica serves any request of any session: no sticky routing.
    /// Each request then reads its session from the store (a failing store answers 503).
    /// Without it (the default) sessions live in this server's own table.
    pub fn store(mut self, store: SharedStore) -> Self {
        self.store = Some(store);
        self
    }

    /// At most `limiter`'s rate of calls per caller (the authenticated subject; an
    /// unauthenticated caller by its address), counted by the service's dispatcher once
    /// per call, as on every transport: a call beyond it is answered `-32041` without
    /// reaching its handler, and a POST whose one call it refused gets 429 with
    /// `Retry-After` (an `initialize` refused makes no session).
    pub fn rate_limit(mut self, limiter: rpcwire_tokio::RateLimiter) -> Self {
        let service = self.builder.service_ref().clone().rate_limit(limiter);
        self.builder = self.builder.service(service);
        self
    }

    /// Requires every POST to be signed (feature `signing`): the HMAC-SHA256 of its exact
    /// body bytes, a timestamp and a nonce in the `X-Rpcwire-*` headers
    /// ([`rpcwire_tokio::signing`]), checked in constant time once the body is read and
    /// before it is parsed, with nonces remembered per caller. A refused request gets 401
    /// (429 while the caller's nonce cache is full): no session is created, no handler runs.
    #[cfg(feature = "signing")]
    pub fn signed(mut self, signing: Arc<rpcwire_tokio::signing::RequestSigning>) -> Self {
        self.signing = Some(signing);
        self
    }

    /// Authenticates every request with `authenticator` (a `JwtAuthenticator` for OAuth
    /// access tokens: `rpcwire_tokio::jwt`, feature `jwt` of `rpcwire-tokio`),
    /// before anything else is done for it: a request refused gets 401 (400 for a malformed
    /// `Authorization` header, 503 when the authenticator cannot decide) with a
    /// `WWW-Authenticate: Bearer` challenge, and no session or handler state exists for it.
    /// Handlers see the caller's identity in their context; a session is bound to the
    /// identity that created it (another identity presenting its id gets 404). An access
    /// token in the query string is refused (400), never read.
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        let service = self
            .builder
            .service_ref()
            .clone()
            .authenticator(authenticator);
        self.builder = self.builder.service(service);
        self
    }

    /// Serves RFC 9728 protected resource metadata for `resource` (at
    /// `/.well-known/oauth-protected-resource` and the form suffixed with the endpoint's
    /// path), and names its URL in every challenge (`resource_metadata="..."`), so that a
    /// client finds the authorization server.
    pub fn protected_resource(mut self, resource: ProtectedResource) -> Self {
        self.auth.resource = Some(resource);
        self
    }

    /// Scopes every request's token must hold (403 `insufficient_scope` otherwise); named
    /// in the 401 challenge's `scope`.
    pub fn required_scopes(mut self, scopes: &[&str]) -> Self {
        self.auth.required = scopes.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// Scopes a request for `method` (`tools/call`, say) must hold besides the required
    /// ones (403 `insufficient_scope` otherwise).
    pub fn method_scopes(mut self, method: &str, scopes: &[&str]) -> Self {
        self.auth.by_method.insert(
            method.to_owned(),
            scopes.iter().map(|s| (*s).to_owned()).collect(),
        );
        self
    }

    /// The most connections [`serve`](super::serve) holds at once (default 10 000, at least
    /// 1); more wait in the listen backlog.
    pub fn max_connections(mut self, limit: usize) -> Self {
        self.endpoint.set_max_connections(limit);
        self
    }

    /// How long [`serve`](super::serve) keeps a connection with no request under way
    /// (default 90 s, as [`HttpServer::idle_connection_timeout`](rpcwire_http::HttpServer::idle_connection_timeout)):
    /// one that sends nothing after connecting, an idle keep-alive connection, or an HTTP/2
    /// connection with no stream under way (shut down with GOAWAY; an open event stream
    /// counts as a stream). The same timer bounds a request's head (hyper's header read
    /// timeout). Not the session's idle time ([`idle_timeout`](McpHttpServer::idle_timeout)):
    /// a session outlives its connections.
    pub fn idle_connection_timeout(mut self, idle: Duration) -> Self {
        self.endpoint.set_idle_connection(idle);
        self
    }

    /// Sessions (default) or stateless.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// The endpoint's path (default `/mcp`); other paths get 404.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Which `Host` and `Origin` values are accepted (others get 403). Default: loopback.
    pub fn hosts(mut self, policy: HostPolicy) -> Self {
        self.endpoint.set_hosts(policy);
        self
    }

    /// The prefix of the session ids this server creates (`PREFIX-<32 hex digits>`), so that
    /// a load balancer can route each session to the server that holds it. Characters other
    /// than ASCII letters, digits, `.` and `_` are replaced with `_`. Default `mcp`.
    pub fn session_prefix(mut self, prefix: &str) -> Self {
        self.prefix = clean_prefix(prefix);
        self
    }

    /// The most sessions held at once (default 1024, at least 1); an `initialize` beyond it
    /// gets 503 once idle sessions have been ended.
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.sessions.max_sessions = n.max(1);
        self
    }

    /// The most request streams of one session whose client went away while their request
    /// runs on (default [`DEFAULT_MAX_PARKED`], 16; at least 1): each is kept for a client
    /// that resumes it with `Last-Event-ID` (with a [`store`](Self::store): at most this many
    /// per session on each replica, their events in the store's log). A request whose client
    /// goes while the session has that many is cancelled, since nobody could resume it.
    pub fn max_parked_streams(mut self, n: usize) -> Self {
        self.max_parked = n.max(1);
        self
    }

    /// How long a session with no request and no open stream lives (default 10 min).
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.sessions.idle = idle.max(Duration::from_millis(10));
        self
    }

    /// The largest request body (default 4 MiB, at least 1024); larger ones get 413.
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.endpoint.set_max_body(bytes);
        self
    }

    /// The longest one request may run (default 5 min); past it its stream ends (or 503).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.endpoint.set_timeout(timeout);
        self
    }

    /// The GET stream's resumption buffer per session (default 256 events, 1 MiB).
    pub fn stream_buffer(mut self, events: usize, bytes: usize) -> Self {
        self.endpoint.set_stream_buffer(events, bytes);
        self
    }

    /// The reconnection time event-stream clients are told (`retry:`; default 1 s): how long
    /// they wait before resuming a closed stream.
    pub fn retry(mut self, after: Duration) -> Self {
        self.endpoint.set_retry(after);
        self
    }

    /// The keep-alive comment interval of idle GET streams (default 15 s).
    pub fn keep_alive(mut self, every: Duration) -> Self {
        self.endpoint.set_keep_alive(every);
        self
    }

    /// Makes the service; starts the idle-session sweeper, so call it within a tokio runtime.
    pub fn build(self) -> McpService {
        // One responder per configuration served, built once: every POST body is answered
        // by one of its pooled core connections with the service's dispatcher, in the POST's
        // own task. The core's frames are the bodies themselves, up to the body limit.
        let config = Config {
            max_frame: self.endpoint.max_body(),
            ..self.builder.config()
        };
        let responder = |batches| {
            let config = Config { batches, ..config };
            Responder::with_settings(
                self.builder.service_ref().clone(),
                config,
                self.builder.client_settings().clone(),
            )
        };
        let sessions = Sessions::new(&self.prefix, self.sessions);
        sessions.count_as(rpcwire_telemetry::names::MCP_SESSIONS);
        sessions.start_sweeper();
        let gate = Gate::new(self.builder.service_ref().clone(), self.auth, &self.path);
        // The service's drain is the serve loops' (stop accepting, 503 while draining).
        let mut endpoint = self.endpoint;
        endpoint.set_shutdown(self.builder.service_ref().shutdown_ref());
        // With a shared store, the wire ids of the server's requests name this replica (a
        // random part after the prefix), so that a forwarded answer is taken by the replica
        // that asked, and only by it.
        let routes = match &self.store {
            Some(_) => Routes::new(
                &rpcwire_http::profile::random_id(sessions.prefix())
                    .unwrap_or_else(|| sessions.prefix().to_owned()),
            ),
            None => Routes::new(sessions.prefix()),
        };
        if let Some(store) = &self.store {
            let mut forwarded = store.forwarder.subscribe();
            let routes = Arc::clone(&routes);
            tokio::spawn(async move {
                while let Some(m) = forwarded.recv().await {
                    routes.take_forwarded(m).await;
                }
            });
        }
        McpService::new(Inner {
            gate,
            #[cfg(feature = "signing")]
            signing: self.signing,
            // Batches as the revision says: refused from 2025-06-18 on (the core's answer),
            // taken by sessions of older revisions.
            responder: responder(false),
            batch_responder: responder(true),
            mode: self.mode,
            path: self.path,
            endpoint,
            routes,
            sessions,
            store: self.store,
            max_parked: self.max_parked,
        })
    }
}
