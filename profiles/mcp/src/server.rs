//! A whole MCP server's protocol side over a core `Connection`, for firmware: the handshake,
//! `ping`, `tools/list`, `logging/setLevel` and cancellations are handled here, and the
//! 2026-07-28 revision's requests beside them (`server/discover`, no handshake, `_meta` per
//! request, `resultType` on results); the application runs tool calls.

use rpcwire::storage::Storage;
use rpcwire::wire::{Notification, RawJson};
use rpcwire::{
    Connection, ErrorCode, Inbound, InboundRequest, InboundResponse, Problem, RequestHandle,
    RespondError, SendError,
};

use crate::msg::{self, CallParams, Notice, Raw, Reply, ServerInfo, Text, Tool};
use crate::stateless::{self, RequestRevision};
use crate::{methods, Handshake, LogLevel, Phase, ProtocolVersion, Requests, Writer};

/// The default size of [`Server`]'s rendering buffer (`OUT`).
pub const DEFAULT_OUT: usize = 1024;

/// Renders `reply` on the stack and answers with it as one verbatim value: every answer goes
/// through one `respond::<Raw>` (a firmware may answer its own methods with [`Raw`] too and
/// share it). Too large for `OUT`: Internal error is sent, and `TooLarge` returned.
/// `completed`: the request is of 2026-07-28 ([`Reply::write_completed`]).
fn answer<S: Storage, const OUT: usize>(
    conn: &mut Connection<S>,
    handle: RequestHandle,
    reply: &Reply<'_>,
    completed: bool,
) -> Result<(), RespondError> {
    let mut buf = [0u8; OUT];
    let mut w = Writer::new(&mut buf);
    if completed {
        reply.write_completed(&mut w);
    } else {
        reply.write(&mut w);
    }
    match w.finish() {
        Ok(bytes) => conn.respond(handle, &Raw(bytes)),
        Err(required) => {
            conn.reject(handle, ErrorCode::INTERNAL_ERROR)?;
            Err(RespondError::TooLarge { required })
        }
    }
}

/// Refuses a 2026-07-28 request whose `_meta` is incomplete (Invalid params) or names a
/// revision not spoken here (`UnsupportedProtocolVersionError`, -32022) with the code's
/// standard message and no `data`: a message or `data` of our own would link a second
/// instantiation of the core's response encoder, about 1 KiB of a firmware's flash (measured
/// on the MCP firmware image, whose budget it would break). The std server's refusals carry
/// both.
fn refuse_revision<S: Storage>(
    conn: &mut Connection<S>,
    handle: RequestHandle,
    revision: RequestRevision<'_>,
) -> Result<(), RespondError> {
    let code = match revision {
        RequestRevision::Unsupported(_) => methods::UNSUPPORTED_PROTOCOL_VERSION,
        _ => ErrorCode::INVALID_PARAMS,
    };
    conn.reject(handle, code)
}

/// The running requests of the 2026-07-28 revision (their results carry `resultType`), by
/// handle: kept apart from [`Requests`], which does not track a request whose id is too long
/// to be cancelled by.
struct Stateless<const N: usize>([Option<RequestHandle>; N]);

impl<const N: usize> Stateless<N> {
    /// Marks `handle`; false when all `N` marks are taken (the connection has at most `N`
    /// requests in flight, so only when the application forgot to finish some).
    fn mark(&mut self, handle: RequestHandle) -> bool {
        self.unmark(handle);
        match self.0.iter_mut().find(|m| m.is_none()) {
            Some(free) => {
                *free = Some(handle);
                true
            }
            None => false,
        }
    }

    /// Forgets `handle`; true when it was marked.
    fn unmark(&mut self, handle: RequestHandle) -> bool {
        let mut found = false;
        for m in self.0.iter_mut() {
            if *m == Some(handle) {
                *m = None;
                found = true;
            }
        }
        found
    }

    fn contains(&self, handle: RequestHandle) -> bool {
        self.0.contains(&Some(handle))
    }
}

/// Renders `notice` on the stack and sends it (`TooLarge` when it does not fit `OUT`).
fn notify<S: Storage, const OUT: usize>(
    conn: &mut Connection<S>,
    notice: &Notice<'_>,
) -> Result<(), SendError> {
    let mut buf = [0u8; OUT];
    let mut w = Writer::new(&mut buf);
    notice.write(&mut w);
    let bytes = w
        .finish()
        .map_err(|required| SendError::TooLarge { required })?;
    conn.send_notification(notice.method(), Some(&Raw(bytes)))
}

/// What [`Server::handle`] leaves to the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    /// Handled (answered, refused, or bookkeeping only): nothing to do.
    Done,
    /// A `tools/call` of a tool in the table: run it, then answer with
    /// [`Server::respond_tool`] (a tool failure is a result with `is_error: true`), reporting
    /// progress on the way with [`Server::progress`].
    Call(ToolCall<'a>),
    /// `notifications/cancelled` named this running request (already marked:
    /// [`Server::is_cancelled`]): stop it and let go of it with [`Server::release`] (MCP asks
    /// a receiver not to answer a cancelled request; its caller no longer waits).
    Cancelled(RequestHandle),
    /// A request for a method this profile does not serve, after the handshake admitted it:
    /// answer it, or reject it with Method not found.
    Request(InboundRequest<'a>),
    /// A notification this profile does not take.
    Notification(Notification<'a>),
    /// A response to a request of ours.
    Response(InboundResponse<'a>),
    /// Peer garbage, already answered as JSON-RPC requires.
    Problem(Problem<'a>),
}

/// A tool call to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolCall<'a> {
    /// Names the request when answering.
    pub handle: RequestHandle,
    /// The tool's position in the server's table.
    pub tool: usize,
    /// `arguments` (an object) when given.
    pub arguments: Option<RawJson<'a>>,
    /// The call carried a progress token: [`Server::progress`] sends notifications.
    pub wants_progress: bool,
}

/// An MCP server's protocol state: the handshake, a static tools table, the running
/// requests (`N` at most: give it the connection's in-flight size) and the client's log level.
/// No heap; `const`-constructible for a `static`.
///
/// Answers and notifications are rendered into a buffer of `OUT` bytes on the stack (default
/// [`DEFAULT_OUT`]) and sent as one verbatim value; the `tools/list` answer must fit in it.
/// Refusals and unknown tools are answered with the core's standard errors (Invalid Request,
/// Invalid params), which link no serializer.
///
/// ```
/// use rpcwire::{Connection, Inbound, Input, Instant, storage::Inline, wire::RxBuffer};
/// use rpcwire_mcp::{Server, ServerInfo, Step, Text, Tool};
///
/// static INFO: ServerInfo<'static> = ServerInfo {
///     name: "device", version: "1.0", instructions: None, logging: true,
/// };
/// static TOOLS: &[Tool<'static>] = &[Tool {
///     name: "read_counter",
///     description: "The device's counter.",
///     input_schema: r#"{"type":"object","properties":{}}"#,
/// }];
///
/// let mut conn: Connection<Inline<1024, 512, 2, 2>> = Connection::new(Default::default());
/// let mut rx: RxBuffer<[u8; 512]> = conn.rx_buffer();
/// let mut server: Server<'static, 2> = Server::new(&INFO, TOOLS);
/// let mut input: &[u8] = concat!(
///     r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}"#, "\n",
///     r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#, "\n",
///     r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_counter","_meta":{"progressToken":9}}}"#, "\n",
/// ).as_bytes();
/// let mut out = Vec::new();
/// while let Input::Item(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut input) {
///     if let Step::Call(call) = server.handle(&mut conn, item).unwrap() {
///         assert_eq!(call.tool, 0);
///         server.progress(&mut conn, call.handle, 1, Some(1), None).unwrap();
///         server.respond_tool(&mut conn, call.handle, Text::Json(b"\"42\""), false).unwrap();
///     }
///     conn.transmit_with(|b| { out.extend_from_slice(b); Ok::<_, ()>(b.len()) }).unwrap();
/// }
/// let out = String::from_utf8(out).unwrap();
/// assert!(out.contains(r#""protocolVersion":"2025-06-18""#));
/// assert!(out.contains(r#"{"progressToken":9,"progress":1,"total":1}"#));
/// assert!(out.contains(r#""result":{"content":[{"type":"text","text":"42"}],"isError":false}"#));
/// ```
pub struct Server<'t, const N: usize, const OUT: usize = DEFAULT_OUT> {
    info: &'t ServerInfo<'t>,
    tools: &'t [Tool<'t>],
    handshake: Handshake,
    requests: Requests<N>,
    stateless: Stateless<N>,
    level: LogLevel,
}

impl<'t, const N: usize, const OUT: usize> Server<'t, N, OUT> {
    /// A server that has received nothing yet; it sends every log level until the client
    /// sets one.
    pub const fn new(info: &'t ServerInfo<'t>, tools: &'t [Tool<'t>]) -> Self {
        Server {
            info,
            tools,
            handshake: Handshake::new(),
            requests: Requests::new(),
            stateless: Stateless([None; N]),
            level: LogLevel::Debug,
        }
    }

    /// The handshake's phase.
    pub const fn phase(&self) -> Phase {
        self.handshake.phase()
    }

    /// The negotiated revision, once `initialize` is answered.
    pub const fn version(&self) -> Option<ProtocolVersion> {
        self.handshake.version()
    }

    /// The least severe level the client wants (`logging/setLevel`).
    pub const fn log_level(&self) -> LogLevel {
        self.level
    }

    /// The tools table.
    pub const fn tools(&self) -> &'t [Tool<'t>] {
        self.tools
    }

    /// Takes one inbound item: answers what the profile serves and returns what is left to the
    /// application. On `Err(RespondError::WouldBlock)`, write the transmit queue out and call
    /// again with the same item (nothing changed).
    pub fn handle<'a, S: Storage>(
        &mut self,
        conn: &mut Connection<S>,
        item: Inbound<'a>,
    ) -> Result<Step<'a>, RespondError> {
        match item {
            Inbound::Request(req) => self.request(conn, req),
            Inbound::Notification(n) => Ok(self.notification(n)),
            Inbound::Response(r) => Ok(Step::Response(r)),
            Inbound::Problem(p) => Ok(Step::Problem(p)),
        }
    }

    /// Takes one request (what [`handle`](Server::handle) does with
    /// `Inbound::Request`): for drivers that hand requests over in their own type, such as
    /// `rpcwire-embedded-io`'s `Incoming::Request` (run it under the driver's `ctx.retry`:
    /// after `WouldBlock` nothing changed).
    pub fn request<'a, S: Storage>(
        &mut self,
        conn: &mut Connection<S>,
        req: InboundRequest<'a>,
    ) -> Result<Step<'a>, RespondError> {
        let method = req.method.escaped_bytes();
        match stateless::classify(req.params) {
            RequestRevision::Stateless => return self.stateless_request(conn, req),
            RequestRevision::Session if method == methods::SERVER_DISCOVER.as_bytes() => {
                // A method of 2026-07-28 only: its request must say so in `_meta`.
                let missing = RequestRevision::Invalid(stateless::MetaProblem::Missing);
                return refuse_revision(conn, req.handle, missing).map(|()| Step::Done);
            }
            RequestRevision::Session => {}
            refused => return refuse_revision(conn, req.handle, refused).map(|()| Step::Done),
        }
        if let Err(refusal) = self.handshake.admit(method) {
            return conn.reject(req.handle, refusal.code()).map(|()| Step::Done);
        }
        let reply = if method == methods::INITIALIZE.as_bytes() {
            let version = msg::InitializeParams::parse(req.params).negotiate();
            answer::<S, OUT>(
                conn,
                req.handle,
                &Reply::Initialize {
                    version,
                    info: self.info,
                },
                false,
            )?;
            // Only once the answer is queued: a retry after WouldBlock finds the same phase.
            let _ = self.handshake.initialize(req.params);
            // Batches as the negotiated revision says, from the next frame on.
            conn.set_batches(!version.refuses_batches());
            return Ok(Step::Done);
        } else if method == methods::PING.as_bytes() {
            Reply::Empty
        } else if method == methods::TOOLS_LIST.as_bytes() {
            Reply::Tools(self.tools)
        } else if method == methods::LOGGING_SET_LEVEL.as_bytes() && self.info.logging {
            match msg::set_level(req.params) {
                Some(level) => {
                    answer::<S, OUT>(conn, req.handle, &Reply::Empty, false)?;
                    self.level = level;
                    return Ok(Step::Done);
                }
                None => {
                    return conn
                        .reject(req.handle, ErrorCode::INVALID_PARAMS)
                        .map(|()| Step::Done)
                }
            }
        } else if method == methods::TOOLS_CALL.as_bytes() {
            return self.call(conn, req);
        } else {
            self.requests.track(req.handle, req.id.raw_bytes(), None);
            return Ok(Step::Request(req));
        };
        answer::<S, OUT>(conn, req.handle, &reply, false).map(|()| Step::Done)
    }

    /// A complete 2026-07-28 request: no handshake; `server/discover` and `tools/list`
    /// answered here, the methods the revision removed refused with Method not found, a tool
    /// call or another method handed over marked (its result gets `resultType`).
    fn stateless_request<'a, S: Storage>(
        &mut self,
        conn: &mut Connection<S>,
        req: InboundRequest<'a>,
    ) -> Result<Step<'a>, RespondError> {
        let method = req.method.escaped_bytes();
        let reply = if method == methods::SERVER_DISCOVER.as_bytes() {
            Reply::Discover(self.info)
        } else if method == methods::TOOLS_LIST.as_bytes() {
            Reply::Tools(self.tools)
        } else if stateless::is_removed(method) {
            return conn
                .reject(req.handle, ErrorCode::METHOD_NOT_FOUND)
                .map(|()| Step::Done);
        } else {
            let step = if method == methods::TOOLS_CALL.as_bytes() {
                self.call(conn, req)?
            } else {
                self.requests.track(req.handle, req.id.raw_bytes(), None);
                Step::Request(req)
            };
            if matches!(step, Step::Call(_) | Step::Request(_)) {
                self.stateless.mark(req.handle);
            }
            return Ok(step);
        };
        answer::<S, OUT>(conn, req.handle, &reply, true).map(|()| Step::Done)
    }

    /// True while `handle` names a running request of the 2026-07-28 revision: what the
    /// application answers it with must carry `resultType` (as [`respond_tool`](Server::respond_tool)'s
    /// results do).
    pub fn is_stateless(&self, handle: RequestHandle) -> bool {
        self.stateless.contains(handle)
    }

    fn call<'a, S: Storage>(
        &mut self,
        conn: &mut Connection<S>,
        req: InboundRequest<'a>,
    ) -> Result<Step<'a>, RespondError> {
        let Some(params) = CallParams::parse(req.params) else {
            return conn
                .reject(req.handle, ErrorCode::INVALID_PARAMS)
                .map(|()| Step::Done);
        };
        let Some(tool) = msg::find_tool(self.tools, params.name.escaped_bytes()) else {
            // MCP: an unknown tool is a protocol error, Invalid params.
            return conn
                .reject(req.handle, ErrorCode::INVALID_PARAMS)
                .map(|()| Step::Done);
        };
        let token = params.progress_token.map(|t| t.as_bytes());
        self.requests.track(req.handle, req.id.raw_bytes(), token);
        Ok(Step::Call(ToolCall {
            handle: req.handle,
            tool,
            arguments: params.arguments,
            wants_progress: self.requests.has_progress(req.handle),
        }))
    }

    /// Takes one notification (what [`handle`](Server::handle) does with
    /// `Inbound::Notification`): `notifications/initialized` and `notifications/cancelled`
    /// are taken here, others returned as [`Step::Notification`].
    pub fn notification<'a>(&mut self, n: Notification<'a>) -> Step<'a> {
        let method = n.method.escaped_bytes();
        if method == methods::INITIALIZED.as_bytes() {
            self.handshake.initialized();
            Step::Done
        } else if method == methods::CANCELLED.as_bytes() {
            match msg::cancelled_request_id(n.params)
                .and_then(|id| self.requests.cancel(id.as_bytes()))
            {
                Some(handle) => Step::Cancelled(handle),
                None => Step::Done,
            }
        } else {
            Step::Notification(n)
        }
    }

    /// Answers a tool call with one text content item (`is_error: true` for a failed tool)
    /// and forgets the request. On `WouldBlock` nothing changed: write out and retry.
    pub fn respond_tool<S: Storage>(
        &mut self,
        conn: &mut Connection<S>,
        handle: RequestHandle,
        text: Text<'_>,
        is_error: bool,
    ) -> Result<(), RespondError> {
        let completed = self.stateless.contains(handle);
        answer::<S, OUT>(
            conn,
            handle,
            &Reply::ToolResult { text, is_error },
            completed,
        )?;
        self.finish(handle);
        Ok(())
    }

    /// Lets go of a request with no answer and forgets it: for a request the client cancelled
    /// ([`Step::Cancelled`]), which MCP asks a receiver not to answer. Nothing is written
    /// (`Connection::release`).
    pub fn release<S: Storage>(
        &mut self,
        conn: &mut Connection<S>,
        handle: RequestHandle,
    ) -> Result<(), RespondError> {
        conn.release(handle)?;
        self.finish(handle);
        Ok(())
    }

    /// Forgets a request the application answered itself (a [`Step::Request`], or a call
    /// answered with a JSON-RPC error).
    pub fn finish(&mut self, handle: RequestHandle) {
        self.requests.finish(handle);
        self.stateless.unmark(handle);
    }

    /// True once `notifications/cancelled` named this request.
    pub fn is_cancelled(&self, handle: RequestHandle) -> bool {
        self.requests.is_cancelled(handle)
    }

    /// Sends `notifications/progress` for a running request: `Ok(false)` (nothing sent) when
    /// it carried no progress token, was cancelled, or `progress` is not above the last value
    /// sent. On `Err(SendError::WouldBlock)` write out and retry.
    pub fn progress<S: Storage>(
        &mut self,
        conn: &mut Connection<S>,
        handle: RequestHandle,
        progress: u32,
        total: Option<u32>,
        message: Option<&str>,
    ) -> Result<bool, SendError> {
        let Some(token) = self.requests.check_progress(handle, progress) else {
            return Ok(false);
        };
        let notice = Notice::Progress {
            token,
            progress,
            total,
            message,
        };
        notify::<S, OUT>(conn, &notice)?;
        // Recorded only once sent: a retry after WouldBlock sends the same value.
        self.requests.record_progress(handle, progress);
        Ok(true)
    }

    /// Sends `notifications/message` when `level` is at or above the client's level and
    /// `initialize` is answered (`Ok(false)` otherwise).
    pub fn log<S: Storage>(
        &mut self,
        conn: &mut Connection<S>,
        level: LogLevel,
        logger: Option<&str>,
        data: Text<'_>,
    ) -> Result<bool, SendError> {
        if level < self.level || self.version().is_none() || !self.info.logging {
            return Ok(false);
        }
        let notice = Notice::Log {
            level,
            logger,
            data,
        };
        notify::<S, OUT>(conn, &notice).map(|()| true)
    }
}
