//! [`Service`]: what every transport serves a caller with. The router, the authenticator
//! that establishes callers at a transport's edge, the rate limit and the handler limits the
//! [`Dispatcher`](crate::Dispatcher) applies to each call, and the protocol's cancel
//! notification.

use std::sync::Arc;
use std::time::Duration;

use crate::auth::{Authenticator, Credentials};
use crate::caller::Caller;
use crate::identity::Identity;
use crate::ratelimit::RateLimiter;
use crate::router::Router;

/// The most inbound requests open at once per connection (more are answered Server busy):
/// larger than any handler concurrency limit, so that requests beyond that limit wait in the
/// connection's queue.
pub const MAX_INFLIGHT: usize = 1024;

/// How long a server waits for a new caller's authentication (and a TLS handshake before it)
/// by default ([`Service::handshake_timeout`]).
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// A profile's cancel notification: its method and the params member naming the request's id
/// (`$/cancelRequest` / `id` for LSP, `notifications/cancelled` / `requestId` for MCP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CancelProfile {
    /// The notification's method.
    pub method: String,
    /// The member of its params that holds the cancelled request's id.
    pub id_member: String,
    /// A request the peer cancelled still gets its handler's answer (LSP); when false it is
    /// released with none (MCP).
    pub answer: bool,
}

/// What every transport serves its callers with: the [`Router`], the [`Authenticator`] that
/// establishes each caller at the transport's edge ([`admit`](Service::admit)), and what the
/// [`Dispatcher`](crate::Dispatcher) applies to every call (access rules, the rate limit,
/// handler concurrency, the queue of waiting requests, the profile's cancel notification).
/// Cheap to clone (shared).
///
/// ```
/// use rpcwire_service::{RateLimiter, Router, RpcError, Service};
///
/// let router = Router::new()
///     .method("subtract", |(a, b): (i64, i64)| async move { Ok::<_, RpcError>(a - b) });
/// let service = Service::new(router)
///     .rate_limit(RateLimiter::new(50.0, 100)) // 50 calls/s, bursts of 100, per caller
///     .concurrency(8);                       // handlers running at once, per connection
/// assert!(service.router_ref().is_some_and(|r| r.has_method("subtract")));
/// ```
#[derive(Clone, Default)]
pub struct Service(pub(crate) Arc<Settings>);

/// What a [`Service`] holds (shared: a connection keeps one pointer to it).
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) router: Option<Arc<Router>>,
    pub(crate) authenticator: Option<Arc<dyn Authenticator>>,
    pub(crate) limiter: Option<Arc<RateLimiter>>,
    pub(crate) concurrency: usize,
    pub(crate) queue_bytes: usize,
    pub(crate) cancel: Option<Arc<CancelProfile>>,
    /// Kept apart from `cancel` so that the order of the two setters does not matter.
    answer_cancelled: bool,
    pub(crate) handshake_timeout: Duration,
    /// Watched by every server of the service; refuses requests while it drains.
    pub(crate) shutdown: crate::Shutdown,
    /// The log of refused callers, rate-limited (see `refusal_log`).
    pub(crate) refusals: Arc<crate::refusal_log::RefusalLog>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.0;
        f.debug_struct("Service")
            .field("router", &s.router)
            .field("authenticator", &s.authenticator.is_some())
            .field("limiter", &s.limiter)
            .field("concurrency", &s.concurrency)
            .field("queue_bytes", &s.queue_bytes)
            .field("cancel", &s.cancel)
            .finish_non_exhaustive()
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            router: None,
            authenticator: None,
            limiter: None,
            concurrency: 64,
            queue_bytes: 16 << 20,
            cancel: None,
            answer_cancelled: true,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            shutdown: crate::Shutdown::default(),
            refusals: Arc::new(crate::refusal_log::RefusalLog::new(
                crate::RefusalLogLimit::default(),
            )),
        }
    }
}

impl Service {
    /// Serves `router` (given an `rpc.discover` method unless it has its own; see
    /// [`Router::discoverable`]): no authenticator (callers are what their transport says,
    /// anonymous on a network), no rate limit, 64 handlers at once per connection, 16 MiB of
    /// waiting requests.
    pub fn new(router: Router) -> Self {
        Service::default().router(router)
    }

    /// A service with no router: every request is answered Method not found (a client that
    /// only calls out).
    pub fn client_only() -> Self {
        Service::default()
    }

    /// Serves `router` instead (see [`new`](Service::new)).
    pub fn router(mut self, router: Router) -> Self {
        Arc::make_mut(&mut self.0).router = Some(Arc::new(router.discoverable()));
        self
    }

    /// Drains with `shutdown`: once it is triggered, every server of this service stops
    /// accepting, refuses new requests ([`SHUTTING_DOWN`](crate::SHUTTING_DOWN), 503 over
    /// HTTP), lets running calls finish and closes its connections cleanly. Without it, a
    /// handle of its own that nothing triggers.
    pub fn shutdown(mut self, shutdown: &crate::Shutdown) -> Self {
        Arc::make_mut(&mut self.0).shutdown = shutdown.clone();
        self
    }

    /// The service's shutdown handle.
    pub fn shutdown_ref(&self) -> &crate::Shutdown {
        &self.0.shutdown
    }

    /// Whether the service is ready for new callers (a readiness probe): not while it
    /// drains, nor while its authenticator is not [`ready`](crate::Authenticator::ready).
    pub async fn ready(&self) -> bool {
        if self.0.shutdown.is_draining() {
            return false;
        }
        match &self.0.authenticator {
            Some(authenticator) => authenticator.ready().await,
            None => true,
        }
    }

    /// The router, if any.
    pub fn router_ref(&self) -> Option<&Arc<Router>> {
        self.0.router.as_ref()
    }

    /// Lets callers in: every transport asks `authenticator` for each new caller's identity
    /// ([`admit`](Service::admit)) from what it knows (the peer's address, the TLS client
    /// certificate, HTTP headers) before any handler state exists for it; a caller it refuses
    /// is turned away, and the reason logged (never the credentials).
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        Arc::make_mut(&mut self.0).authenticator = Some(Arc::new(authenticator));
        self
    }

    /// [`authenticator`](Service::authenticator) already shared.
    pub fn shared_authenticator(mut self, authenticator: Arc<dyn Authenticator>) -> Self {
        Arc::make_mut(&mut self.0).authenticator = Some(authenticator);
        self
    }

    /// The rate of the warn-level log lines of refused callers (authentication and
    /// authorization failures, each with the peer, the transport and the reason, never the
    /// credential): [`RefusalLogLimit::default`](crate::RefusalLogLimit::default) unless set. Refusals past it are counted in
    /// `rpc.server.rejections` but not logged; the next line logged gives their number as
    /// `suppressed`.
    pub fn refusal_log_limit(mut self, limit: crate::RefusalLogLimit) -> Self {
        Arc::make_mut(&mut self.0).refusals = Arc::new(crate::refusal_log::RefusalLog::new(limit));
        self
    }

    /// Logs a refused caller at warn level, if the rate allows (see
    /// [`refusal_log_limit`](Service::refusal_log_limit)).
    pub(crate) fn log_refusal(
        &self,
        what: &'static str,
        remote: &rpcwire_telemetry::Remote,
        subject: Option<&str>,
        method: Option<&str>,
        reason: &dyn std::fmt::Display,
    ) {
        let Some(suppressed) = self.0.refusals.admit_line() else {
            return;
        };
        let peer = remote
            .peer()
            .map_or_else(|| "-".to_owned(), |p| p.to_string());
        tracing::warn!(
            peer = %peer,
            transport = %remote.transport(),
            subject = subject.unwrap_or("-"),
            method = method.unwrap_or("-"),
            %reason,
            suppressed,
            "{what}"
        );
    }

    /// The authenticator, if any.
    pub fn authenticator_ref(&self) -> Option<&Arc<dyn Authenticator>> {
        self.0.authenticator.as_ref()
    }

    /// Limits each caller's calls with `limiter` (off by default), on every connection and
    /// transport this service serves: callers are told apart by identity (anonymous ones by
    /// address). Each call is counted once, by the dispatcher: a request over the limit is
    /// answered [`RATE_LIMITED`](crate::RATE_LIMITED) (-32041, `"Too many requests"`) without
    /// its handler running, a batch's members one by one; a notification over it is dropped.
    pub fn rate_limit(self, limiter: RateLimiter) -> Self {
        self.shared_rate_limit(Arc::new(limiter))
    }

    /// [`rate_limit`](Service::rate_limit) with a limiter shared with other services (one
    /// budget per caller across several servers).
    pub fn shared_rate_limit(mut self, limiter: Arc<RateLimiter>) -> Self {
        Arc::make_mut(&mut self.0).limiter = Some(limiter);
        self
    }

    /// The rate limiter, if any.
    pub fn rate_limiter(&self) -> Option<&Arc<RateLimiter>> {
        self.0.limiter.as_ref()
    }

    /// How many handlers may run at once on one connection (clamped to
    /// `1..=`[`MAX_INFLIGHT`]` / 2`; default 64). Requests beyond it wait in a bounded queue.
    pub fn concurrency(mut self, limit: usize) -> Self {
        Arc::make_mut(&mut self.0).concurrency = limit.clamp(1, MAX_INFLIGHT / 2);
        self
    }

    /// The concurrency limit.
    pub fn concurrency_limit(&self) -> usize {
        self.0.concurrency
    }

    /// Bytes of method names and params that requests waiting for a handler slot may hold on
    /// one connection; a request beyond it is answered Server busy (-32001). Default 16 MiB.
    pub fn queue_bytes(mut self, bytes: usize) -> Self {
        Arc::make_mut(&mut self.0).queue_bytes = bytes;
        self
    }

    /// The profile's cancel notification: `method` with params `{"<id_member>": <id>}` (for
    /// example `("$/cancelRequest", "id")` for LSP, `("notifications/cancelled", "requestId")`
    /// for MCP). Both directions: when one of our calls times out or its future is dropped,
    /// the peer is sent this notification for it; when the peer sends it for a request whose
    /// handler is running, that handler's [`Context::cancelled`](crate::Context::cancelled)
    /// completes. Plain JSON-RPC has none (the default).
    ///
    /// A cancelled request is still answered with whatever its handler returns, as LSP
    /// requires; [`answer_cancelled`](Service::answer_cancelled) turns that off.
    pub fn cancel_notification(mut self, method: &str, id_member: &str) -> Self {
        Arc::make_mut(&mut self.0).cancel = Some(Arc::new(CancelProfile {
            method: method.to_owned(),
            id_member: id_member.to_owned(),
            answer: self.0.answer_cancelled,
        }));
        self
    }

    /// Whether a request the peer cancelled with the profile's cancel notification still gets
    /// an answer (default: yes, LSP's rule). With `false` (MCP's rule: a receiver should not
    /// answer a cancelled request), whatever the handler returns after the cancellation is
    /// dropped and the request is released with nothing written; in a batch, the reply leaves
    /// it out. A request still waiting for a handler slot is released at once, its handler
    /// never started. Without a cancel notification this changes nothing.
    pub fn answer_cancelled(mut self, answer: bool) -> Self {
        Arc::make_mut(&mut self.0).answer_cancelled = answer;
        if let Some(profile) = &mut Arc::make_mut(&mut self.0).cancel {
            Arc::make_mut(profile).answer = answer;
        }
        self
    }

    /// The cancel notification, if any.
    pub fn cancel_profile(&self) -> Option<&CancelProfile> {
        self.0.cancel.as_deref()
    }

    /// How long [`admit`](Service::admit) waits for the authenticator (and a TLS server for a
    /// handshake before it) before turning the caller away (default 10 s).
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        Arc::make_mut(&mut self.0).handshake_timeout = timeout;
        self
    }

    /// The handshake timeout.
    pub fn handshake_timeout_value(&self) -> Duration {
        self.0.handshake_timeout
    }

    /// The caller a transport serves: the authenticator's identity for these credentials (or,
    /// without one, the subject of a verified client certificate, else `fallback`), with the
    /// transport, the peer and the certificate. This is the one place a caller is
    /// authenticated; every transport calls it at its edge, before any handler state exists
    /// for the caller. A refusal (bad or missing credentials, or no answer within the
    /// handshake timeout) is logged at warn level with the peer and the reason, never the
    /// credentials.
    pub async fn admit(
        &self,
        credentials: Credentials<'_>,
        fallback: impl FnOnce() -> Identity,
    ) -> Result<Caller, crate::AuthError> {
        let identity = match &self.0.authenticator {
            Some(authenticator) => {
                let decided = tokio::time::timeout(
                    self.0.handshake_timeout,
                    authenticator.authenticate(credentials),
                )
                .await;
                match decided {
                    Ok(Ok(identity)) => identity,
                    Ok(Err(reason)) => {
                        let remote = Self::remote_of(&credentials);
                        self.log_refusal(
                            "caller refused: authentication failed",
                            &remote,
                            None,
                            None,
                            &reason,
                        );
                        rpcwire_telemetry::reject(rpcwire_telemetry::Rejection::Authentication);
                        return Err(reason);
                    }
                    Err(_) => {
                        let remote = Self::remote_of(&credentials);
                        self.log_refusal(
                            "caller refused: authentication timed out",
                            &remote,
                            None,
                            None,
                            &"no answer within the handshake timeout",
                        );
                        rpcwire_telemetry::reject(rpcwire_telemetry::Rejection::Authentication);
                        return Err(crate::AuthError::Unavailable(
                            "no answer within the handshake timeout".into(),
                        ));
                    }
                }
            }
            None => Self::unauthenticated(&credentials, fallback),
        };
        Ok(Caller::from_credentials(identity, &credentials))
    }

    /// Where credentials came from, as the refusal log says it.
    fn remote_of(credentials: &Credentials<'_>) -> rpcwire_telemetry::Remote {
        let remote = rpcwire_telemetry::Remote::new(credentials.transport);
        match credentials.peer {
            Some(peer) => remote.with_peer(peer),
            None => remote,
        }
    }

    /// [`admit`](Service::admit) at once when there is no authenticator (`None` when there is
    /// one: ask it with `admit`): a transport that admits most callers this way needs no task
    /// to wait in.
    pub fn admit_at_once(
        &self,
        credentials: &Credentials<'_>,
        fallback: impl FnOnce() -> Identity,
    ) -> Option<Caller> {
        if self.0.authenticator.is_some() {
            return None;
        }
        let identity = Self::unauthenticated(credentials, fallback);
        Some(Caller::from_credentials(identity, credentials))
    }

    /// Without an authenticator: a verified client certificate names the caller; else
    /// `fallback`.
    fn unauthenticated(
        credentials: &Credentials<'_>,
        fallback: impl FnOnce() -> Identity,
    ) -> Identity {
        match credentials.certificate {
            Some(certificate) => Identity::new(certificate.subject.clone()),
            None => fallback(),
        }
    }
}
