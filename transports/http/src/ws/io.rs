//! A WebSocket connection under the tokio driver of `rpcwire-tokio`: the driver runs over the
//! crate's pipes ([`ChannelReader`] and [`FrameWriter`], `Content-Length` framing, as the GET
//! event stream and the clients do: the core cuts the frames), and a task of its own moves each
//! inbound text message to it as one body and each message it writes out as one text message.
//! Control frames, limits, keep-alive and the closing handshake are handled in that task, where
//! the WebSocket protocol lives.

use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use rpcwire_service::Tracked;
use rpcwire_tokio::{Builder, Session};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::time::{sleep_until, timeout, Instant};
use tokio_tungstenite::tungstenite::error::{CapacityError, Error as WsError};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::frame::{CloseFrame, Utf8Bytes};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::config::WsConfig;
use rpcwire_service::pipe::{send_body, ChannelReader, FrameWriter};

/// The reason sent with close code 1003 when a binary message arrives.
pub(crate) const BINARY_REFUSED: &str =
    "binary messages are not accepted: send each JSON-RPC message or batch as a text message";

/// The reason sent with close code 1001 when the server drains.
pub(crate) const DRAINED: &str = "server shutting down";

/// The reason sent with close code 1008 when the caller's credential has expired.
pub(crate) const EXPIRED: &str = "credential expired";

/// How long the closing handshake may take before the socket is dropped.
const CLOSE_LINGER: Duration = Duration::from_secs(2);

/// Messages waiting between the task and the driver, each way.
const QUEUED: usize = 4;

/// Runs `builder`'s connection over `ws` (its framing and frame limit set by `config`), the
/// WebSocket side in a task of its own; the session ends when either side does.
pub(crate) fn run<S>(
    ws: WebSocketStream<S>,
    builder: Builder,
    config: &WsConfig,
    expires: Option<std::time::SystemTime>,
) -> Session
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (in_tx, in_rx) = mpsc::channel(QUEUED);
    let (out_tx, out_rx) = mpsc::channel(QUEUED);
    let (reader, writer) = (
        ChannelReader::new(in_rx),
        FrameWriter::new(out_tx, config.max_message),
    );
    let shutdown = builder.service_ref().shutdown_ref().clone();
    let session = config.driver(builder).run(reader, writer);
    // When the caller's credential (and its leeway) runs out.
    let expired = expires.zip(config.credential_leeway).map(|(at, leeway)| {
        let left = at.duration_since(std::time::SystemTime::now());
        Instant::now() + left.unwrap_or_default() + leeway
    });
    // The drain waits for the socket, its closing handshake included.
    let ends = (shutdown.track(), shutdown, expired);
    tokio::spawn(pump(ws, in_tx, out_rx, config.clone(), ends));
    session
}

/// Why the task stops: the close frame to send, if any, or the socket dropped at once (a peer
/// that does not read, or answers no ping).
enum End {
    Close(Option<(CloseCode, &'static str)>),
    Drop,
}

/// Moves messages between `ws` and the driver until either ends, keeping the peer alive
/// with pings (a peer silent for `pong_timeout` after one is dropped) and dropping a peer that
/// does not read a message within `send_timeout`, or once `expired` (the caller's credential
/// and its leeway) has passed; then the closing handshake (1008 for the credential, 1001 when
/// the driver ended for `shutdown`'s drain).
async fn pump<S>(
    mut ws: WebSocketStream<S>,
    input: mpsc::Sender<Bytes>,
    mut output: mpsc::Receiver<Bytes>,
    config: WsConfig,
    (_tracked, shutdown, expired): (Tracked, rpcwire_tokio::Shutdown, Option<Instant>),
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut last_rx = Instant::now();
    let mut expired = std::pin::pin!(async {
        match expired {
            Some(at) => sleep_until(at).await,
            None => std::future::pending().await,
        }
    });
    let mut ping_sent: Option<Instant> = None;
    let end = loop {
        let due = match (config.ping_interval, ping_sent) {
            (None, _) => None,
            (Some(_), Some(sent)) => Some(sent + config.pong_timeout),
            (Some(interval), None) => Some(last_rx + interval),
        };
        let keepalive = async {
            match due {
                Some(at) => sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            item = ws.next() => {
                (last_rx, ping_sent) = (Instant::now(), None);
                match on_message(item) {
                    Ok(Some(text)) => {
                        if !send_body(&input, Bytes::from(text)).await {
                            break End::Close(None);
                        }
                    }
                    Ok(None) => {}
                    Err(end) => break end,
                }
            }
            message = output.recv() => {
                let Some(message) = message else { break End::Close(None) };
                let Ok(text) = Utf8Bytes::try_from(message) else {
                    tracing::debug!("output message is not UTF-8: closing");
                    break End::Close(None);
                };
                if let Err(end) = send(&mut ws, Message::Text(text), config.send_timeout).await {
                    break end;
                }
            }
            () = expired.as_mut() => break End::Close(Some((CloseCode::Policy, EXPIRED))),
            () = keepalive => {
                if ping_sent.is_some() {
                    tracing::debug!("WebSocket peer did not answer a ping: closing");
                    break End::Drop;
                }
                ping_sent = Some(Instant::now());
                let ping = Message::Ping(Default::default());
                if let Err(end) = send(&mut ws, ping, config.send_timeout).await {
                    break end;
                }
            }
        }
    };
    // The driver's input ends; what it still writes goes nowhere.
    drop((input, output));
    let End::Close(close) = end else { return };
    // The driver ended for the server's drain: say so (1001 Going Away).
    let close = close.or_else(|| shutdown.is_draining().then_some((CloseCode::Away, DRAINED)));
    let frame = close.map(|(code, reason)| {
        tracing::debug!(code = u16::from(code), reason, "closing WebSocket");
        CloseFrame {
            code,
            reason: Utf8Bytes::from_static(reason),
        }
    });
    // Our close frame (or the reply to the peer's), then what the peer still sends until it
    // closes, within the linger time.
    let _ = timeout(CLOSE_LINGER, async {
        if ws.close(frame).await.is_ok() {
            while let Some(Ok(_)) = ws.next().await {}
        }
    })
    .await;
}

/// Sends `message` within `send_timeout`.
async fn send<S>(ws: &mut WebSocketStream<S>, message: Message, limit: Duration) -> Result<(), End>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    match timeout(limit, ws.send(message)).await {
        Ok(Ok(())) => Ok(()),
        // After a close (ours or the peer's) the connection ends quietly.
        Ok(Err(WsError::ConnectionClosed | WsError::AlreadyClosed)) => Err(End::Drop),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "WebSocket send failed");
            Err(End::Drop)
        }
        Err(_) => {
            tracing::debug!("WebSocket peer stopped reading: closing");
            Err(End::Drop)
        }
    }
}

/// What an inbound item means: a text message for the driver, nothing (a control frame), or
/// the end (the close code to send for a message refused).
fn on_message(item: Option<Result<Message, WsError>>) -> Result<Option<Utf8Bytes>, End> {
    let refuse = |code, reason| Err(End::Close(Some((code, reason))));
    match item {
        Some(Ok(Message::Text(text))) => Ok(Some(text)),
        Some(Ok(Message::Binary(_))) => refuse(CloseCode::Unsupported, BINARY_REFUSED),
        Some(Ok(Message::Close(_))) | None => Err(End::Close(None)),
        Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => Ok(None),
        Some(Err(WsError::Capacity(CapacityError::MessageTooLong { .. }))) => {
            refuse(CloseCode::Size, "message too large")
        }
        Some(Err(WsError::Capacity(_))) => refuse(CloseCode::Size, "frame too large"),
        Some(Err(WsError::Utf8(_))) => {
            refuse(CloseCode::Invalid, "text message is not valid UTF-8")
        }
        Some(Err(WsError::Protocol(e))) => {
            tracing::debug!(error = %e, "WebSocket protocol error");
            refuse(CloseCode::Protocol, "WebSocket protocol error")
        }
        Some(Err(WsError::ConnectionClosed | WsError::AlreadyClosed)) => Err(End::Drop),
        Some(Err(e)) => {
            tracing::debug!(error = %e, "WebSocket connection failed");
            Err(End::Drop)
        }
    }
}
