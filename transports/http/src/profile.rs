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
//! - Answering: [`status`], [`refuse`], [`json`], [`event_stream`] (a `text/event-stream`
//!   response fed through a channel), [`sse_event`]; the response [`Body`].
//! - A POST answered as an event stream: [`PostExchange`] runs the body through a core
//!   connection of its own and yields each message its handlers send, the answer last.
//! - Resumable POST streams: [`StreamRelay`] (a POST's events sent to its client and kept;
//!   parked when the client goes away, the work going on), [`ResumableStream`] (a bounded
//!   buffer of one stream's events, resumed after the `Last-Event-ID` a client sends),
//!   [`ParkedStreams`] (those whose clients went away, bounded), event ids [`stream_event`],
//!   [`priming_event`], [`parse_event_id`].
//! - The GET event stream with resumption: [`EventHub`], bounded by [`StreamLimits`].
//! - Sessions (or any state a client comes back to by id): [`SessionTable`], bounded in
//!   number, with idle expiry and ids no one can guess.
//! - The pipes between HTTP bodies and a `rpcwire-tokio` driver: [`OnceReader`],
//!   [`ChannelReader`], [`send_body`], [`FrameWriter`], [`drained`].
//! - Serving: [`HandlesIncoming`] (the service hyper calls), [`serve_hyper`] (an accept loop
//!   with a connection limit and idle timeout, HTTP/1.1 and HTTP/2), [`serve_hyper_connection`]
//!   (one connection you accepted, TLS say); [`serve_profile`] for a service that also answers
//!   requests read whole ([`HandlesWhole`]): its HTTP/1.1 connections are served without a
//!   hyper connection under each (no 16 KiB of buffers per open event stream).
//!
//! **Client side**: [`http_client`] with [`ClientTls`] (a pooled hyper client, `https://`
//! with the `tls` feature), [`parse_url`], [`is_event_stream`], [`failure`],
//! [`error_chain`]; `rpcwire::wire::sse::SseDecoder` reads event streams.
//!
//! A POST whose handler streams progress, answered as events:
//!
//! ```
//! use bytes::Bytes;
//! use rpcwire_http::profile::{event_stream, sse_event, ExchangeEvent, PostExchange};
//! use rpcwire_tokio::{Builder, Context, Router, RpcError};
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let router = Router::new().method_with_context("work", |ctx: Context, (): ()| async move {
//!     let _ = ctx.peer().notify("progress", [50]).await;
//!     Ok::<_, RpcError>("done")
//! });
//! let body = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"work"}"#);
//! let mut exchange =
//!     PostExchange::start(Builder::new().router(router), body, 1 << 20, Duration::from_secs(30)).await;
//! let (tx, rx) = tokio::sync::mpsc::channel(8);
//! let response = event_stream(rx); // sent to the client at once; events follow
//! tokio::spawn(async move {
//!     loop {
//!         match exchange.next().await {
//!             ExchangeEvent::Message(m) => { let _ = tx.send(sse_event(&m)).await; }
//!             ExchangeEvent::Answer(a) => { let _ = tx.send(sse_event(&a)).await; return; }
//!             ExchangeEvent::Cancelled => {}
//!             ExchangeEvent::End | ExchangeEvent::TimedOut => return,
//!         }
//!     }
//! });
//! assert_eq!(response.headers()["content-type"], "text/event-stream");
//! # }
//! ```

pub use crate::body::Body;
pub use crate::caller::{connection_peer, traced_caller};
pub use crate::client::{failure, is_event_stream};
pub use crate::connect::{
    error_chain, http_client, parse_url, ClientTls, Connector, HyperClient, TlsError,
};
pub use crate::endpoint::Endpoint;
pub use crate::exchange::{ExchangeEvent, PostExchange};
pub use crate::handles::{HandlesIncoming, HandlesWhole};
#[cfg(feature = "tls")]
pub use crate::listen::serve_hyper_tls;
pub use crate::listen::{serve_hyper, serve_profile};
pub use crate::media::{accepted_media, AcceptedMedia};
pub use crate::on_hyper::serve_hyper_connection;
pub use crate::pipe::{drained, send_body, ChannelReader, FrameWriter, OnceReader};
pub use crate::post::{after_body, read_post_body};
pub use crate::response::{event_stream, json, refuse, sse_event, status};
pub use crate::resume::{
    parse_event_id, priming_event, stream_event, ParkedStreams, ResumableStream, StreamRelay,
    DEFAULT_MAX_PARKED,
};
pub use crate::sessions::{
    clean_prefix, random_id, Session, SessionError, SessionHold, SessionLimits, SessionState,
    SessionTable,
};
pub use crate::stream::{EventHub, StreamLimits, VecSink};
