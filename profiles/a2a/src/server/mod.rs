//! The A2A server: the binding's methods registered on a [`Router`] and served by a
//! [`Service`] (so its authenticator, access rules, rate limit, spans and error hygiene hold
//! for A2A as for any service), each POST body answered through the service's
//! [`Responder`](rpcwire_service::Responder), and the Agent Card at [`AGENT_CARD_PATH`].
//!
//! - `edge`: the HTTP edge (checks, the card, authentication, the POST and its answer);
//! - `methods`: the methods on the router;
//! - `publish`: a task's events to the event log, then to its live subscribers;
//! - `post`: what the edge and a method pass each other for one POST (its A2A headers, the
//!   stream a streaming method hands back);
//! - `streams`: the event streams, resumed from the tasks' event logs;
//! - `tasks`: the running turns.

mod card;
mod checks;
mod edge;
mod methods;
mod post;
pub(crate) mod publish;
mod streams;
mod tasks;
pub(crate) mod writes;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use hyper::Request;
use rpcwire_http::profile::{serve_profile, Body, Endpoint, HandlesIncoming, HandlesWhole};
use rpcwire_http::{HostPolicy, ResponseFuture};
use rpcwire_service::{Authenticator, RateLimiter, Responder, Router, Service};

use crate::agent::{Agent, TaskLimits};
use crate::push::webhook::WebhookPolicy;
use crate::push::{Push, PushLimits};
use crate::security::{SecurityRequirement, SecurityScheme};
use crate::store::{
    EventLog, EventLogLimits, LeaseConfig, MemoryEventLog, MemoryTaskStore, PushConfigStore,
    StoreLimits, TaskStore,
};
use crate::types::AgentCard;

pub use post::{EXTENSIONS_HEADER, VERSION_HEADER};

use edge::Edge;
use methods::Methods;
use streams::Streams;
use tasks::{TaskEvents, Tasks};

/// What [`A2aServer::map_router`] was given.
type RouterHook = Box<dyn FnOnce(Router) -> Router + Send>;

/// Builds an [`A2aService`]: an agent, its card, the service's policies, and limits.
pub struct A2aServer {
    card: AgentCard,
    extended: Option<AgentCard>,
    agent: Arc<dyn Agent>,
    store: Option<Arc<dyn TaskStore>>,
    push_store: Option<Arc<dyn PushConfigStore>>,
    event_log: Option<Arc<dyn EventLog>>,
    event_log_limits: EventLogLimits,
    store_limits: StoreLimits,
    leases: LeaseConfig,
    task_limits: TaskLimits,
    endpoint: Endpoint,
    path: String,
    send_wait: Duration,
    max_page: usize,
    compat_v03: bool,
    card_max_age: Duration,
    /// Push notifications: where deliveries may go, and their limits.
    push: Option<(WebhookPolicy, PushLimits)>,
    /// The security schemes declared, for an extended card given later.
    schemes: Vec<(String, SecurityScheme)>,
    /// The policies the methods are served with (its router is the server's own).
    service: Service,
    router_hook: Option<RouterHook>,
}

impl std::fmt::Debug for A2aServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aServer")
            .field("card", &self.card.name)
            .field("path", &self.path)
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}

impl A2aServer {
    /// A server for `agent`, publishing `card`. Defaults: the JSON-RPC endpoint at `/`, an
    /// in-memory store ([`StoreLimits::default`]), 30 s leases ([`LeaseConfig::default`]),
    /// [`TaskLimits::default`], 4 MiB bodies, the streams' events logged in memory for
    /// resumption ([`EventLogLimits::default`]: 64 events of each of 1 024 tasks),
    /// `SendMessage` waiting at most 60 s for a turn to end; callers
    /// anonymous, no rate limit, no access rules, the card cacheable for 300 s.
    pub fn new(card: AgentCard, agent: impl Agent) -> Self {
        A2aServer {
            card,
            extended: None,
            agent: Arc::new(agent),
            store: None,
            push_store: None,
            event_log: None,
            event_log_limits: EventLogLimits::default(),
            store_limits: StoreLimits::default(),
            leases: LeaseConfig::default(),
            task_limits: TaskLimits::default(),
            endpoint: Endpoint::new(Duration::from_secs(60), 64),
            path: "/".to_owned(),
            send_wait: Duration::from_secs(60),
            max_page: 100,
            compat_v03: false,
            card_max_age: Duration::from_secs(300),
            schemes: Vec::new(),
            push: None,
            service: Service::default(),
            router_hook: None,
        }
    }

    /// Serves the A2A 0.3 method names too (`message/send`, `message/stream`, `tasks/get`,
    /// `tasks/cancel`, `tasks/resubscribe`, ...), reading and writing the 0.3 shapes; off by
    /// default.
    pub fn compat_v03(mut self, on: bool) -> Self {
        self.compat_v03 = on;
        self
    }

    /// How long clients may cache the Agent Card (its `Cache-Control: max-age`; 300 s by
    /// default). The card is also served with an `ETag` and a `Last-Modified`, and answered
    /// 304 to a conditional request that still holds.
    pub fn card_max_age(mut self, max_age: Duration) -> Self {
        self.card_max_age = max_age;
        self
    }

    /// Sends push notifications (the card then says `capabilities.pushNotifications: true`):
    /// the four config methods are served (configs bounded by [`PushLimits`], visible to
    /// whoever may see their task), and each event of a task with configs is POSTed to
    /// their webhooks as a `StreamResponse`, with the config's authentication and token,
    /// retried with backoff from a bounded queue. `policy` says which addresses webhooks
    /// may be at: [`WebhookPolicy::public_only`] (no loopback, private, link-local or
    /// metadata address, checked after DNS resolution) unless a test allows more.
    /// Without this, the config methods answer -32003.
    pub fn push_notifications(mut self, policy: WebhookPolicy, limits: PushLimits) -> Self {
        self.card.capabilities.push_notifications = true;
        if let Some(extended) = self.extended.as_mut() {
            extended.capabilities.push_notifications = true;
        }
        self.push = Some((policy, limits));
        self
    }

    /// The path of the JSON-RPC endpoint (the card's interface URL should name it).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The card `GetExtendedAgentCard` answers, to authenticated callers only (anonymous
    /// ones get -32004; without one it answers -32007). The public card then says
    /// `capabilities.extendedAgentCard: true`; the security schemes declared with
    /// [`authenticator_with_scheme`](Self::authenticator_with_scheme) are on both.
    pub fn extended_card(mut self, mut card: AgentCard) -> Self {
        self.card.capabilities.extended_agent_card = true;
        for (name, scheme) in &self.schemes {
            card.security_schemes.insert(name.clone(), scheme.clone());
            card.security_requirements
                .push(SecurityRequirement::of(name, &[]));
        }
        self.extended = Some(card);
        self
    }

    /// Keeps tasks in `store` instead of memory.
    pub fn store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// Writes push notification configs through to `store` (and reads a task's from it when
    /// memory has none, after a restart), beyond the memory that holds them by default.
    pub fn push_config_store(mut self, store: Arc<dyn PushConfigStore>) -> Self {
        self.push_store = Some(store);
        self
    }

    /// Appends every event the task streams send (the task as a turn announces it, status and
    /// artifact updates, a direct message) to `log`, each with its id there as its SSE event
    /// id; a client resuming with `SubscribeToTask` and `Last-Event-ID` is sent the events
    /// of the task's log after that id (when it may see the task), then the live ones. A
    /// log that outlives the process (the SQLite store's) resumes streams across a restart.
    /// By default a [`MemoryEventLog`] bounded by
    /// [`event_log_limits`](Self::event_log_limits).
    ///
    /// An agent's events come from synchronous calls and are sent to live subscribers only
    /// with their id in the log: a log that does not answer at once (a database's) is
    /// appended to by a task of the server's, in order per task, never on the agent's
    /// thread, on any runtime; an event waits in its task's queue meanwhile, bounded by
    /// [`TaskLimits::max_pending_events`].
    pub fn event_log(mut self, log: Arc<dyn EventLog>) -> Self {
        self.event_log = Some(log);
        self
    }

    /// The bounds of the default, in-memory event log ([`EventLogLimits::default`]).
    pub fn event_log_limits(mut self, limits: EventLogLimits) -> Self {
        self.event_log_limits = limits;
        self
    }

    /// How long the lease a running turn holds on its task lasts, and how often this server
    /// renews its leases and fails the tasks whose lease lapsed ([`LeaseConfig::default`]:
    /// 30 s, every 10 s). A store shared by processes, or kept across restarts, thus never
    /// keeps a task `working` whose process died.
    pub fn leases(mut self, leases: LeaseConfig) -> Self {
        self.leases = leases;
        self
    }

    /// The limits of the in-memory store.
    pub fn store_limits(mut self, limits: StoreLimits) -> Self {
        self.store_limits = limits;
        self
    }

    /// What one task holds.
    pub fn task_limits(mut self, limits: TaskLimits) -> Self {
        self.task_limits = limits;
        self
    }

    /// Lets callers in with `authenticator` ([`Service::authenticator`]): every POST to the
    /// endpoint is authenticated before its body is read (401 with a `Bearer` challenge for
    /// missing or bad credentials, 400 for a token in the query string); the agent sees the
    /// identity in [`TaskContext::identity`](crate::TaskContext::identity). The Agent Card
    /// stays public.
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        self.service = self.service.authenticator(authenticator);
        self
    }

    /// [`authenticator`](Self::authenticator), declared on the card (and the extended card)
    /// as the security scheme `name`: its `securitySchemes` gets `scheme`, and its
    /// `securityRequirements` a requirement of it (with no scopes), so that clients read from
    /// the card how to authenticate.
    ///
    /// ```
    /// use rpcwire_a2a::{A2aServer, AgentCard, SecurityScheme, TaskContext};
    /// use rpcwire_service::StaticTokens; // feature `auth`; JWT with `jwt`
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let tokens: StaticTokens = "s3cr3t @alice user".parse()?;
    /// let server = A2aServer::new(AgentCard::default(), |ctx: TaskContext| async move {
    ///     ctx.complete(None);
    /// })
    /// .authenticator_with_scheme(tokens, "bearer", SecurityScheme::bearer(""));
    /// # let _ = server.build();
    /// # Ok(()) }
    /// ```
    pub fn authenticator_with_scheme(
        mut self,
        authenticator: impl Authenticator,
        name: &str,
        scheme: SecurityScheme,
    ) -> Self {
        for card in std::iter::once(&mut self.card).chain(self.extended.as_mut()) {
            card.security_schemes
                .insert(name.to_owned(), scheme.clone());
            card.security_requirements
                .push(SecurityRequirement::of(name, &[]));
        }
        self.schemes.push((name.to_owned(), scheme));
        self.authenticator(authenticator)
    }

    /// Limits each caller's calls ([`Service::rate_limit`]): a call over the limit is
    /// answered -32041 without running; each call counts once, streaming ones included.
    pub fn rate_limit(mut self, limiter: RateLimiter) -> Self {
        self.service = self.service.rate_limit(limiter);
        self
    }

    /// Sets any of the service's policies: `f` gets the service the server would serve
    /// with and returns the one it serves with (an authenticator, a rate limit shared with
    /// other services, handler concurrency, the handshake timeout). Its router is replaced
    /// by the server's own: give methods and access rules with
    /// [`map_router`](Self::map_router).
    ///
    /// ```
    /// use rpcwire_a2a::{A2aServer, AgentCard, RateLimiter, TaskContext};
    ///
    /// let server = A2aServer::new(AgentCard::default(), |ctx: TaskContext| async move {
    ///     ctx.complete(None);
    /// })
    /// .map_service(|s| s.rate_limit(RateLimiter::new(10.0, 20)).concurrency(16));
    /// # let _ = server.build();
    /// ```
    pub fn map_service(mut self, f: impl FnOnce(Service) -> Service) -> Self {
        self.service = f(self.service);
        self
    }

    /// Adds to the router once the binding's methods are on it: access rules
    /// ([`Router::require`], [`Router::policy`]), who sees internal errors' details
    /// ([`Router::show_error_details`]), methods of your own. A later call adds to an earlier
    /// one's.
    ///
    /// ```
    /// use rpcwire_a2a::{A2aServer, AgentCard, TaskContext};
    ///
    /// // Only operators may cancel tasks; the others get -32040 (Forbidden).
    /// let server = A2aServer::new(AgentCard::default(), |ctx: TaskContext| async move {
    ///     ctx.complete(None);
    /// })
    /// .map_router(|r| r.require("CancelTask", ["operator"]));
    /// # let _ = server.build();
    /// ```
    pub fn map_router(mut self, f: impl FnOnce(Router) -> Router + Send + 'static) -> Self {
        self.router_hook = Some(match self.router_hook.take() {
            Some(earlier) => Box::new(move |r| f(earlier(r))),
            None => Box::new(f),
        });
        self
    }

    /// Accepted `Host` / `Origin` values (loopback names by default).
    pub fn hosts(mut self, hosts: HostPolicy) -> Self {
        self.endpoint.set_hosts(hosts);
        self
    }

    /// The largest request body (413 beyond; at least 1 KiB).
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.endpoint.set_max_body(bytes);
        self
    }

    /// How long a request body may take to arrive.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.endpoint.set_timeout(timeout);
        self
    }

    /// How long `SendMessage` waits for a turn to end before answering with the task as it
    /// is (the work goes on).
    pub fn send_wait(mut self, wait: Duration) -> Self {
        self.send_wait = wait;
        self
    }

    /// The most connections served at once.
    pub fn max_connections(mut self, limit: usize) -> Self {
        self.endpoint.set_max_connections(limit);
        self
    }

    /// The service.
    pub fn build(self) -> A2aService {
        let store = self
            .store
            .unwrap_or_else(|| Arc::new(MemoryTaskStore::new(self.store_limits)));
        let push = self
            .push
            .map(|(policy, limits)| Arc::new(Push::new(policy, limits)));
        let limits = self.event_log_limits;
        let event_log = self
            .event_log
            .unwrap_or_else(|| Arc::new(MemoryEventLog::new(limits)));
        let tasks = Arc::new(Tasks::new(
            self.agent,
            store,
            self.task_limits,
            self.send_wait,
            push,
            self.leases,
            TaskEvents {
                log: event_log,
                push: self.push_store,
                max_replay: limits.max_events.max(1),
            },
        ));
        let streams = Arc::new(Streams::new(self.endpoint.streams()));
        let methods = Methods {
            tasks: Arc::clone(&tasks),
            extended: self.extended,
            max_page: self.max_page,
            admission: checks::Admission::of(&self.card),
        };
        // `rpc.discover` names the agent.
        let named = Router::new().info(&self.card.name, &self.card.version);
        let router = methods::router(named, methods, self.compat_v03);
        let router = match self.router_hook {
            Some(hook) => hook(router),
            None => router,
        };
        // One body is one request: A2A has no batches, and the core refuses them with one
        // Invalid Request, as the SDKs' servers do.
        let config = rpcwire::Config {
            max_frame: self.endpoint.max_body(),
            batches: false,
            ..rpcwire::Config::default()
        };
        // The service's drain is the serve loops' (stop accepting, 503 while draining).
        let mut endpoint = self.endpoint;
        endpoint.set_shutdown(self.service.shutdown_ref());
        let responder = Responder::new(self.service.router(router), config);
        let card = Bytes::from(serde_json::to_vec(&self.card).unwrap_or_default());
        let card = edge::CardResource::new(card, self.card_max_age);
        A2aService {
            edge: Arc::new(Edge {
                card,
                path: self.path,
                endpoint,
                responder,
                streams,
                tasks,
            }),
        }
    }
}

/// A built A2A server: mount it with [`serve`] or call [`handle`](A2aService::handle).
#[derive(Clone)]
pub struct A2aService {
    edge: Arc<Edge>,
}

impl std::fmt::Debug for A2aService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aService")
            .field("running", &self.running_tasks())
            .finish()
    }
}

/// Serves `service` on every connection accepted on `listener` until dropped (HTTP/1.1
/// requests within the body limit read whole and answered without a hyper connection under
/// each: an open stream holds no hyper buffers; HTTP/2 and the rest through hyper).
pub async fn serve(listener: tokio::net::TcpListener, service: A2aService) {
    serve_profile(listener, service).await;
}

/// Serves `service` over TLS on `listener` (feature `tls`): HTTPS with HTTP/2 or HTTP/1.1
/// by ALPN (give `tls` the ALPN protocols `h2` and `http/1.1`), each handshake within
/// `handshake_timeout`, the certificate reloaded as `tls` says; a client certificate reaches
/// the authenticator (mutual TLS).
#[cfg(feature = "tls")]
pub async fn serve_tls(
    listener: tokio::net::TcpListener,
    service: A2aService,
    tls: rpcwire_tokio::tls::ServerTls,
    handshake_timeout: Duration,
) {
    rpcwire_http::profile::serve_profile_tls(listener, service, tls, handshake_timeout).await;
}

impl HandlesIncoming for A2aService {
    fn handle_incoming(&self, req: Request<hyper::body::Incoming>) -> ResponseFuture {
        self.handle(req)
    }
}

impl HandlesWhole for A2aService {
    fn endpoint(&self) -> &Endpoint {
        &self.edge.endpoint
    }

    fn handle_whole(&self, req: Request<Body>) -> ResponseFuture {
        self.handle(req)
    }
}

impl A2aService {
    /// Answers one HTTP request.
    pub fn handle<B>(&self, req: Request<B>) -> ResponseFuture
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let edge = Arc::clone(&self.edge);
        Box::pin(async move { edge.handle(req).await })
    }

    /// The service the methods are served with (its router, authenticator, rate limit).
    pub fn service(&self) -> &Service {
        self.edge.responder.service()
    }

    /// How many tasks have a turn running.
    pub fn running_tasks(&self) -> usize {
        self.edge.tasks.running_count()
    }
}
