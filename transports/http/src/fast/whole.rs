//! The fast path's whole lane: any other request with a body of known length within the
//! service's limit is read whole and answered by the service's
//! [`HandlesWhole::handle_whole`], its response written as hyper writes it (a plain body with
//! `content-length`, a stream with chunked transfer coding).
//!
//! Why not hyper: a hyper HTTP/1.1 connection keeps an 8 KiB read buffer and an 8 KiB header
//! buffer for its whole life, so every open event stream (one connection each, as the A2A and
//! MCP SDK clients open them, and the JSON-RPC server's GET stream) held 16 KiB before any of
//! its own state. Here the read buffer is given back while a response streams (a few bytes
//! are kept to see the client leave or pipeline), and the head is written from a buffer freed
//! once it is sent.

use std::future::Future;
use std::io;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use crate::body::Body;
use crate::caller::ConnectionInfo;
use crate::handles::HandlesWhole;

use super::head::Whole;
use super::limits::KEEP;
use super::read::{Streaming, UnlessClosed};
use super::write::{prepare, respond};

/// Answers the request whose head is `head` with `service`, the head and the body at the
/// start of `buf`; `told`: what the connection tells each request (in its extensions).
/// `Some(now)`: answered, and the connection waits for its next request from `now`; `None`:
/// close it.
///
/// Not an `async fn`, and what lives across one wait kept apart from what lives across
/// another: every open event stream's task holds this future.
#[allow(clippy::manual_async_fn)] // see above
pub(super) fn serve<'a, I, S>(
    stream: &'a mut I,
    service: &'a S,
    told: Option<&'a ConnectionInfo>,
    buf: &'a mut Vec<u8>,
    head: Box<Whole>,
) -> impl Future<Output = io::Result<Option<Instant>>> + 'a
where
    I: AsyncRead + AsyncWrite + Unpin,
    S: HandlesWhole,
{
    async move {
        let (len, close) = (head.len, head.close);
        let total = len + head.body;
        let prepared = {
            let mut request = head
                .request
                .map(|()| Body::full(Bytes::copy_from_slice(&buf[len..total])));
            if let Some(info) = told {
                request.extensions_mut().insert(info.clone());
            }
            buf.drain(..total);
            if buf.is_empty() {
                // Nothing pipelined: the buffer is not held while the request is answered (an
                // event stream may stay open for hours).
                *buf = Vec::new();
            }
            // A client that closes its connection while its request is answered has gone: the
            // answer is dropped, as hyper's path drops it. Bytes read meanwhile (the next
            // pipelined requests) are kept.
            let answer = UnlessClosed::<_, _, Streaming> {
                stream: &mut *stream,
                answer: service.handle_whole(request),
                early: &mut *buf,
                room: std::marker::PhantomData,
            }
            .await;
            let Some(response) = answer else {
                tracing::debug!(parent: rpcwire_telemetry::span_parent(), "the client closed its connection during its request");
                return Ok(None);
            };
            prepare(response, close)
        };
        if respond(stream, buf, prepared).await? {
            stream.shutdown().await.ok();
            return Ok(None);
        }
        if buf.is_empty() && buf.capacity() > KEEP {
            *buf = Vec::new();
        }
        Ok(Some(Instant::now()))
    }
}
