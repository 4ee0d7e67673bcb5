//! Building blocks for profiles: what a protocol that speaks JSON-RPC over HTTP (MCP
//! Streamable HTTP, A2A, the next one) builds its server and client from, so that adding a
//! protocol touches no transport. The crate's own JSON-RPC server is built from the same
//! pieces.
//!
//! **Server side**
//!
//! - Settings and the DNS-rebinding check: [`Endpoint`] (hosts, body size, request time,
//!   event-stream buffers, connections) and [`Endpoint::refusal`] (`Host` / `Origin`, 403).
//! - Reading a POST: [`read_post_body`] (415, 406, 413, 408 as every server answers them),
//!   [`after_body`] (a refusal that keeps the keep-alive connection), [`AcceptedMedia`]
//!   (what `Accept` allows).
//! - Who is calling: [`admit`] (the service's authenticator asked with the request's headers,
//!   peer and TLS client certificate, or the 401 / 400 / 503 refusal), [`connection_peer`]
//!   and [`connection_certificate`] (what the serve loop told the request), [`traced_caller`]
//!   (the request's W3C trace context for the calls' spans).
//! - Answering: [`status`], [`refuse`], [`json`], [`event_stream`] (a `text/event-stream`
//!   response fed through a channel), [`sse_event`]; the response [`Body`].
//! - A POST answered as an event stream: the service's
//!   [`Responder::exchange`](rpcwire_service::Responder::exchange) runs the body through a
//!   pooled core connection and the service's dispatcher and yields each message its handlers
//!   send, the answer last ([`Exchange::input`](rpcwire_service::Exchange::input) takes the
//!   client's later bodies for it); [`event_stream`] and [`sse_event`] answer with them.
//! - Resumable POST streams: [`StreamRelay`] (a POST's events sent to its client and kept;
//!   parked when the client goes away, the work going on), [`ResumableStream`] (a bounded
//!   buffer of one stream's events, resumed after the `Last-Event-ID` a client sends),
//!   [`ParkedStreams`] (those whose clients went away, bounded), event ids [`stream_event`],
//!   [`priming_event`], [`parse_event_id`].
//! - The GET event stream with resumption: [`EventHub`], bounded by [`StreamLimits`].
//! - State a client comes back to by id (a session, a task): [`random_id`], ids no one can
//!   guess.
//! - The pipes between HTTP bodies and a long-lived `rpcwire-tokio` driver (a GET stream's, a
//!   client's): [`ChannelReader`], [`send_body`], [`FrameWriter`].
//! - Serving: [`HandlesIncoming`] (the service hyper calls) and [`HandlesWhole`] (the same
//!   service answering requests read whole); [`serve_profile`] (an accept loop with a
//!   connection limit and idle timeout: HTTP/1.1 on the fast path, without a hyper connection
//!   under each, so no 16 KiB of buffers per open event stream; HTTP/2 through hyper) and
//!   `serve_profile_tls` (feature `tls`); [`serve_hyper_connection`] (one connection you
//!   accepted, through hyper).
//!
//! **Client side**: [`http_client`] with [`ClientTls`] (a pooled hyper client, `https://`
//! with the `tls` feature), [`parse_url`], [`is_event_stream`], [`failure`],
//! [`error_chain`]; `rpcwire::wire::sse::SseDecoder` reads event streams.
//!
//! A POST whose handler streams progress, answered as events:
//!
//! ```
//! use rpcwire_http::profile::{event_stream, sse_event};
//! use rpcwire_service::{Responder, Sent, Service};
//! use rpcwire_tokio::{Context, Router, RpcError};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let router = Router::new().method_with_context("work", |ctx: Context, (): ()| async move {
//!     let _ = ctx.peer().notify("progress", [50]).await;
//!     Ok::<_, RpcError>("done")
//! });
//! // Built once, for every POST.
//! let responder = Responder::new(Service::new(router), rpcwire::Config::default());
//! // Per POST: the caller `Service::admit` established (anonymous here) and the body.
//! let caller = std::sync::Arc::clone(responder.caller());
//! let mut exchange = responder.exchange(&caller, br#"{"jsonrpc":"2.0","id":1,"method":"work"}"#);
//! let (tx, rx) = tokio::sync::mpsc::channel(8);
//! let response = event_stream(rx); // sent to the client at once; events follow
//! tokio::spawn(async move {
//!     while let Some(Sent::Message(m) | Sent::Answer(m)) = exchange.next().await {
//!         if tx.send(sse_event(&m)).await.is_err() {
//!             return; // the client left: dropping the exchange stops its handlers
//!         }
//!     }
//! });
//! assert_eq!(response.headers()["content-type"], "text/event-stream");
//! # }
//! ```

pub use crate::body::Body;
pub use crate::caller::{
    admit, connection_certificate, connection_peer, traced_caller, traced_request_caller,
};
pub use crate::client::{failure, is_event_stream};
pub use crate::connect::{
    error_chain, http_client, parse_url, ClientTls, Connector, HyperClient, TlsError,
};
pub use crate::endpoint::Endpoint;
pub use crate::handles::{HandlesIncoming, HandlesWhole};
pub use crate::listen::serve_profile;
#[cfg(feature = "tls")]
pub use crate::listen::serve_profile_tls;
pub use crate::media::{accepted_media, AcceptedMedia};
pub use crate::on_hyper::serve_hyper_connection;
pub use crate::post::{after_body, read_post_body};
pub use crate::response::{event_stream, json, refuse, sse_event, status};
pub use crate::stream::{EventHub, StreamLimits, VecSink};
pub use rpcwire_service::pipe::{send_body, ChannelReader, FrameWriter};
pub use rpcwire_service::random_id;
pub use rpcwire_service::resumable::{
    parse_event_id, priming_event, stream_event, ParkedStreams, ResumableStream, StreamRelay,
    DEFAULT_MAX_PARKED,
};
