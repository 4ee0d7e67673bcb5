//! `rpcwire bridge`: carries newline-framed JSON-RPC (MCP stdio) between this process's stdio
//! and a device on a serial port or a TCP socket, frame by frame, validating both sides.
//!
//! An MCP host spawns `rpcwire bridge --serial /dev/ttyACM0` as if it were a stdio MCP
//! server. Every frame from either side goes through the core's line decoder (with its maximum
//! frame length) and its message parser before it is passed on:
//!
//! - from the device, a garbled line (invalid JSON, not a JSON-RPC message), an oversize line,
//!   or an answer to no call of the host's is dropped and reported on stderr: it never
//!   reaches the host;
//! - the device's boot notification (`booted`, see `examples/firmware`) is reported on stderr
//!   as a device reset, and the host's calls that were waiting fail at once (the device forgot
//!   them);
//! - a call of the host's fails with a JSON-RPC error when the device sends nothing for
//!   `--timeout` after it was forwarded (a device that keeps talking — progress notifications
//!   of a long tool — keeps its calls alive);
//! - a host's `notifications/cancelled` is passed on and ends the bridge's wait for that call;
//! - from the host, garbage is answered as a JSON-RPC server would (Parse error, Invalid
//!   Request, `frame too large`) and not sent to the device;
//! - the end of stdin ends the bridge cleanly; the device link closing fails the waiting calls
//!   and ends it with an error.
//!
//! Frames are passed on byte for byte (ids included), so the two ends see the same ids; only
//! whitespace line breaks (from a `Content-Length` block read under line framing) are turned
//! into spaces so that the frame stays one line.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Duration;

use rpcwire::wire::{parse, FrameEvent, Framing, Message, ParseLimits, Parsed, RxBuffer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// The error code of the errors the bridge answers a host's call with when the device cannot:
/// it timed out, reset, or its link closed (`data.reason` says which). In the server-error
/// range the specification reserves for implementations.
pub const DEVICE_ERROR: i32 = -32000;

/// The default for `--timeout`, in seconds.
pub const DEFAULT_TIMEOUT_SECS: f64 = 10.0;

/// The default for `--max-frame`: 64 KiB (a microcontroller's frames are far smaller).
pub const DEFAULT_MAX_FRAME: usize = 64 << 10;

/// The default for `--max-pending`.
pub const DEFAULT_MAX_PENDING: usize = 256;

/// MCP's cancel notification: the host stops waiting for the call it names.
const CANCELLED: &str = "notifications/cancelled";

/// Frames queued for the device before the host's next ones get Server busy.
const DEVICE_QUEUE: usize = 64;

/// Bytes read at once from either side.
const READ_CHUNK: usize = 8192;

/// How the bridge behaves; every limit is here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeConfig {
    /// The largest frame taken from either side (longer ones are dropped or refused).
    pub max_frame: usize,
    /// A host's call fails when the device has sent nothing for this long since the call was
    /// forwarded.
    pub timeout: Duration,
    /// Host calls waiting for the device at once; more are answered with Server busy.
    pub max_pending: usize,
    /// The notification method the device sends when it boots.
    pub boot_method: String,
    /// Nesting depth accepted in a frame.
    pub max_depth: usize,
}

impl Default for BridgeConfig {
    fn default() -> Self {
        BridgeConfig {
            max_frame: DEFAULT_MAX_FRAME,
            timeout: Duration::from_secs_f64(DEFAULT_TIMEOUT_SECS),
            max_pending: DEFAULT_MAX_PENDING,
            boot_method: "booted".to_owned(),
            max_depth: ParseLimits::default().max_depth,
        }
    }
}

/// Why the bridge stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// Reading stdin or writing stdout failed.
    #[error("host side: {0}")]
    Host(#[source] std::io::Error),
    /// Reading from or writing to the device failed.
    #[error("device link: {0}")]
    Device(#[source] std::io::Error),
    /// The device closed the link.
    #[error("the device closed the link")]
    DeviceClosed,
}

/// What crossed the bridge, reported when it ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BridgeStats {
    /// Frames passed from the host to the device.
    pub to_device: u64,
    /// Frames passed from the device to the host.
    pub to_host: u64,
    /// Frames from the device dropped (garbled, oversize, invalid, unexpected answers).
    pub dropped: u64,
    /// Host frames answered by the bridge itself (garbage, busy).
    pub refused: u64,
    /// Host calls failed because the device stayed silent.
    pub timeouts: u64,
    /// Boot notifications seen.
    pub resets: u64,
}

/// A host call forwarded to the device and not yet answered.
#[derive(Debug, Clone, Copy)]
struct Pending {
    /// When it was forwarded.
    sent: Instant,
}

/// Why the bridge answers a host's call itself.
#[derive(Debug, Clone, Copy)]
enum Failure {
    Timeout,
    Reset,
    Closed,
}

/// Runs the bridge until stdin ends (`Ok`) or the device link fails (`Err`).
///
/// `host_in`/`host_out` are the host's side (stdin and stdout in the binary), `device_in` /
/// `device_out` the device's. Tests run it over in-memory pipes.
pub async fn run<HR, HW, DR, DW>(
    host_in: HR,
    host_out: HW,
    device_in: DR,
    device_out: DW,
    config: BridgeConfig,
) -> Result<BridgeStats, BridgeError>
where
    HR: AsyncRead + Unpin,
    HW: AsyncWrite + Unpin,
    DR: AsyncRead + Unpin,
    DW: AsyncWrite + Unpin + Send + 'static,
{
    // Writes to the device go through a bounded queue and a task of their own, so that a
    // device that stops reading never stops the timeouts (the host's calls still fail).
    let (to_device, queue) = mpsc::channel::<Vec<u8>>(DEVICE_QUEUE);
    let writer = tokio::spawn(device_writer(device_out, queue));
    let mut bridge = Bridge {
        host_in,
        host_out,
        device_in,
        to_device: Some(to_device),
        host_rx: RxBuffer::with_max_frame(Framing::Line, config.max_frame),
        device_rx: RxBuffer::with_max_frame(Framing::Line, config.max_frame),
        pending: HashMap::new(),
        last_heard: Instant::now(),
        stats: BridgeStats::default(),
        config,
    };
    let outcome = bridge.run().await;
    // Let what is queued for the device go out (bounded: a device that never reads must not
    // keep the bridge alive), then stop the writer.
    bridge.to_device = None;
    let written = tokio::time::timeout(Duration::from_secs(1), writer).await;
    let stats = bridge.stats;
    match (outcome, written) {
        (Err(e), _) => Err(e),
        (Ok(()), Ok(Ok(Err(e)))) => Err(BridgeError::Device(e)),
        (Ok(()), _) => Ok(stats),
    }
}

async fn device_writer<W: AsyncWrite + Unpin>(
    mut out: W,
    mut queue: mpsc::Receiver<Vec<u8>>,
) -> std::io::Result<()> {
    while let Some(frame) = queue.recv().await {
        out.write_all(&frame).await?;
        out.flush().await?;
    }
    Ok(())
}

struct Bridge<HR, HW, DR> {
    host_in: HR,
    host_out: HW,
    device_in: DR,
    /// `None` once the bridge is ending.
    to_device: Option<mpsc::Sender<Vec<u8>>>,
    host_rx: RxBuffer<Vec<u8>>,
    device_rx: RxBuffer<Vec<u8>>,
    /// The host's calls waiting for the device, by the raw text of their id.
    pending: HashMap<Vec<u8>, Pending>,
    /// When the device last sent a valid frame.
    last_heard: Instant,
    stats: BridgeStats,
    config: BridgeConfig,
}

/// Reports on stderr (the host's log); stdout carries only frames.
macro_rules! report {
    ($($arg:tt)*) => { eprintln!("rpcwire bridge: {}", format_args!($($arg)*)) };
}

impl<HR, HW, DR> Bridge<HR, HW, DR>
where
    HR: AsyncRead + Unpin,
    HW: AsyncWrite + Unpin,
    DR: AsyncRead + Unpin,
{
    async fn run(&mut self) -> Result<(), BridgeError> {
        let mut host_buf = vec![0u8; READ_CHUNK];
        let mut device_buf = vec![0u8; READ_CHUNK];
        loop {
            let deadline = self.next_deadline();
            tokio::select! {
                read = self.host_in.read(&mut host_buf) => {
                    let n = read.map_err(BridgeError::Host)?;
                    if n == 0 {
                        // The host is done: a last line without its newline still counts.
                        self.host_rx.finish();
                        self.host_frames().await?;
                        tracing::debug!("stdin ended");
                        return Ok(());
                    }
                    self.host_rx.push(&mut &host_buf[..n]);
                    self.host_frames().await?;
                }
                read = self.device_in.read(&mut device_buf) => {
                    let n = match read {
                        Ok(0) => {
                            report!("the device closed the link");
                            self.fail_all(Failure::Closed).await?;
                            return Err(BridgeError::DeviceClosed);
                        }
                        Ok(n) => n,
                        Err(e) => {
                            report!("the device link failed: {e}");
                            self.fail_all(Failure::Closed).await?;
                            return Err(BridgeError::Device(e));
                        }
                    };
                    let mut input = &device_buf[..n];
                    while !input.is_empty() {
                        self.device_rx.push(&mut input);
                        self.device_frames().await?;
                    }
                }
                () = sleep_until(deadline) => self.expire().await?,
            }
        }
    }

    /// When the oldest waiting call times out, if any call waits.
    fn next_deadline(&self) -> Option<Instant> {
        let oldest = self.pending.values().map(|p| p.sent).min()?;
        Some(oldest.max(self.last_heard) + self.config.timeout)
    }

    async fn expire(&mut self) -> Result<(), BridgeError> {
        let now = Instant::now();
        let timeout = self.config.timeout;
        let last_heard = self.last_heard;
        let expired: Vec<Vec<u8>> = self
            .pending
            .iter()
            .filter(|(_, p)| p.sent.max(last_heard) + timeout <= now)
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            self.pending.remove(&id);
            self.stats.timeouts += 1;
            report!(
                "no answer from the device to call {} within {} s: failed it",
                String::from_utf8_lossy(&id),
                timeout.as_secs_f64()
            );
            let reply = self.device_error(&id, Failure::Timeout);
            self.send_host(reply.as_bytes()).await?;
        }
        Ok(())
    }

    /// Fails every waiting call (the device reset or went away).
    async fn fail_all(&mut self, why: Failure) -> Result<(), BridgeError> {
        let ids: Vec<Vec<u8>> = self.pending.drain().map(|(id, _)| id).collect();
        for id in ids {
            let reply = self.device_error(&id, why);
            self.send_host(reply.as_bytes()).await?;
        }
        Ok(())
    }

    fn device_error(&self, id: &[u8], why: Failure) -> String {
        let (message, reason) = match why {
            Failure::Timeout => (
                format!(
                    "the device did not answer within {} s",
                    self.config.timeout.as_secs_f64()
                ),
                "device_timeout",
            ),
            Failure::Reset => (
                "the device reset before answering".to_owned(),
                "device_reset",
            ),
            Failure::Closed => (
                "the device link closed before an answer".to_owned(),
                "device_closed",
            ),
        };
        error_reply(
            id,
            DEVICE_ERROR,
            &message,
            Some(&serde_json::json!({ "reason": reason })),
        )
    }

    async fn send_host(&mut self, frame: &[u8]) -> Result<(), BridgeError> {
        let out = &mut self.host_out;
        out.write_all(frame).await.map_err(BridgeError::Host)?;
        out.write_all(b"\n").await.map_err(BridgeError::Host)?;
        out.flush().await.map_err(BridgeError::Host)
    }

    /// Queues a frame for the device; false when the queue is full.
    fn queue_for_device(&mut self, frame: &[u8]) -> bool {
        let Some(tx) = &self.to_device else {
            return false;
        };
        let mut line = Vec::with_capacity(frame.len() + 1);
        // A valid JSON text has line breaks only as whitespace (never inside a string): they
        // become spaces, so the frame stays one line on the device's side.
        line.extend(frame.iter().map(|&b| match b {
            b'\n' | b'\r' => b' ',
            b => b,
        }));
        line.push(b'\n');
        tx.try_send(line).is_ok()
    }

    /// Handles every complete frame the host sent.
    async fn host_frames(&mut self) -> Result<(), BridgeError> {
        let limits = ParseLimits {
            max_depth: self.config.max_depth,
        };
        loop {
            // Decide with the frame borrowed, act after: the answers need `&mut self`.
            let action = match self.host_rx.next_frame() {
                None => return Ok(()),
                Some(FrameEvent::Frame(frame)) => host_action(frame, limits),
                Some(FrameEvent::Oversize { len }) => HostAction::Refuse(
                    error_reply(
                        b"null",
                        -32600,
                        "Invalid Request",
                        Some(&serde_json::json!("frame too large")),
                    ),
                    None,
                )
                .noted(format!(
                    "refused a {len}-byte line from the host: too large"
                )),
                Some(_) => HostAction::Ignore,
            };
            match action {
                HostAction::Ignore => {}
                HostAction::Refuse(reply, note) => {
                    self.stats.refused += 1;
                    if let Some(note) = note {
                        tracing::warn!("{note}");
                    }
                    self.send_host(reply.as_bytes()).await?;
                }
                HostAction::Forward { ids } => self.forward_to_device(ids).await?,
                HostAction::Cancel(id) => {
                    // The host gave up on this call (MCP `notifications/cancelled`): it will
                    // ignore any answer, so the bridge stops waiting too (no timeout error
                    // later for a call the host no longer knows); the device still hears it.
                    self.pending.remove(&id);
                    self.forward_to_device(Vec::new()).await?;
                }
            }
        }
    }

    /// Forwards the held host frame, registering the calls it carries.
    async fn forward_to_device(&mut self, ids: Vec<Vec<u8>>) -> Result<(), BridgeError> {
        if self.pending.len() + ids.len() > self.config.max_pending {
            self.stats.refused += 1;
            report!(
                "{} calls already wait for the device (--max-pending): answered Server busy",
                self.pending.len()
            );
            return self.busy(&ids, "too many calls wait for the device").await;
        }
        let frame = self.host_rx.held().unwrap_or_default().to_vec();
        if !self.queue_for_device(&frame) {
            self.stats.refused += 1;
            report!("the device is not reading: answered Server busy");
            return self.busy(&ids, "the device is not reading").await;
        }
        self.stats.to_device += 1;
        let now = Instant::now();
        for id in ids {
            if self
                .pending
                .insert(id.clone(), Pending { sent: now })
                .is_some()
            {
                tracing::warn!(
                    id = %String::from_utf8_lossy(&id),
                    "the host reused the id of a call still waiting"
                );
            }
        }
        Ok(())
    }

    async fn busy(&mut self, ids: &[Vec<u8>], why: &str) -> Result<(), BridgeError> {
        let data = serde_json::json!(why);
        let replies: Vec<String> = ids
            .iter()
            .map(|id| error_reply(id, -32001, "Server busy", Some(&data)))
            .collect();
        let batch = self
            .host_rx
            .held()
            .and_then(|f| f.iter().find(|b| !b.is_ascii_whitespace()))
            == Some(&b'[');
        match (batch, replies.as_slice()) {
            (_, []) => Ok(()),
            (false, [one]) => self.send_host(one.as_bytes()).await,
            _ => {
                self.send_host(format!("[{}]", replies.join(",")).as_bytes())
                    .await
            }
        }
    }

    /// Handles every complete frame the device sent.
    async fn device_frames(&mut self) -> Result<(), BridgeError> {
        let limits = ParseLimits {
            max_depth: self.config.max_depth,
        };
        loop {
            let action = match self.device_rx.next_frame() {
                None => return Ok(()),
                Some(FrameEvent::Frame(frame)) => {
                    device_action(frame, limits, &self.config.boot_method, &self.pending)
                }
                Some(FrameEvent::Oversize { len }) => DeviceAction::Drop(format!(
                    "dropped a line of {len}+ bytes from the device: over --max-frame {}",
                    self.config.max_frame
                )),
                Some(_) => DeviceAction::Drop("dropped a bad header block from the device".into()),
            };
            match action {
                DeviceAction::Drop(why) => {
                    self.stats.dropped += 1;
                    report!("{why}");
                }
                DeviceAction::Booted(params) => {
                    self.last_heard = Instant::now();
                    self.stats.resets += 1;
                    report!("the device reset (boot notification {params})");
                    if !self.pending.is_empty() {
                        report!(
                            "{} calls were waiting: failed them (the device forgot them)",
                            self.pending.len()
                        );
                        self.fail_all(Failure::Reset).await?;
                    }
                }
                DeviceAction::Forward { answered } => {
                    self.last_heard = Instant::now();
                    for id in &answered {
                        self.pending.remove(id);
                    }
                    let frame = self.device_rx.held().unwrap_or_default().to_vec();
                    self.stats.to_host += 1;
                    self.send_host(&frame).await?;
                }
            }
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// What to do with a host frame.
enum HostAction {
    /// Nothing (a notification-only problem: never answered).
    Ignore,
    /// Answer the host with this frame instead of forwarding; a log note.
    Refuse(String, Option<String>),
    /// Forward it; it carries calls with these ids.
    Forward { ids: Vec<Vec<u8>> },
    /// Forward it; it cancels the call with this id (its raw JSON text).
    Cancel(Vec<u8>),
}

impl HostAction {
    fn noted(self, note: String) -> Self {
        match self {
            HostAction::Refuse(reply, _) => HostAction::Refuse(reply, Some(note)),
            other => other,
        }
    }
}

fn host_action(frame: &[u8], limits: ParseLimits) -> HostAction {
    let parsed = match parse(frame, limits) {
        Ok(p) => p,
        Err(e) => {
            return HostAction::Refuse(error_reply(b"null", -32700, "Parse error", None), None)
                .noted(format!("refused a line from the host: {e:?}"))
        }
    };
    match parsed {
        Parsed::Single(Ok(Message::Request(req))) => HostAction::Forward {
            ids: vec![req.id.raw_bytes().to_vec()],
        },
        Parsed::Single(Ok(Message::Notification(n))) if n.method.eq_str(CANCELLED) => {
            match n.params.and_then(|p| {
                p.members()
                    .find(|(name, _)| name.eq_str("requestId"))
                    .map(|(_, v)| v)
            }) {
                Some(id) => HostAction::Cancel(id.as_bytes().to_vec()),
                None => HostAction::Forward { ids: Vec::new() },
            }
        }
        Parsed::Single(Ok(_)) => HostAction::Forward { ids: Vec::new() },
        Parsed::Single(Err(invalid)) if invalid.needs_reply() => {
            let id = invalid.id.map_or(&b"null"[..], |id| id.raw_bytes());
            let data = serde_json::json!(invalid.reason.to_string());
            HostAction::Refuse(
                error_reply(id, -32600, "Invalid Request", Some(&data)),
                None,
            )
        }
        Parsed::Single(Err(_)) => HostAction::Ignore,
        Parsed::EmptyBatch => {
            HostAction::Refuse(error_reply(b"null", -32600, "Invalid Request", None), None)
        }
        Parsed::Batch(batch) => {
            // Forwarded whole (the device answers its invalid members as the specification
            // says); its calls are tracked one by one.
            let ids = batch
                .iter()
                .filter_map(|element| match element {
                    Ok(Message::Request(req)) => Some(req.id.raw_bytes().to_vec()),
                    _ => None,
                })
                .collect();
            HostAction::Forward { ids }
        }
    }
}

/// What to do with a device frame.
enum DeviceAction {
    /// Drop it, reporting why on stderr.
    Drop(String),
    /// The boot notification, with its params' text.
    Booted(String),
    /// Pass it to the host; it answers the host's calls with these ids.
    Forward { answered: Vec<Vec<u8>> },
}

fn device_action(
    frame: &[u8],
    limits: ParseLimits,
    boot_method: &str,
    pending: &HashMap<Vec<u8>, Pending>,
) -> DeviceAction {
    let parsed = match parse(frame, limits) {
        Ok(p) => p,
        Err(e) => {
            return DeviceAction::Drop(format!(
                "dropped a garbled line of {} bytes from the device ({:?} at byte {})",
                frame.len(),
                e.kind,
                e.offset
            ))
        }
    };
    let unexpected = |id: &[u8]| {
        DeviceAction::Drop(format!(
            "dropped an answer from the device to no waiting call (id {}; late, after its timeout?)",
            String::from_utf8_lossy(id)
        ))
    };
    match parsed {
        Parsed::Single(Ok(Message::Notification(n))) if n.method.eq_str(boot_method) => {
            DeviceAction::Booted(n.params.map_or("(no params)", |p| p.as_str()).to_owned())
        }
        Parsed::Single(Ok(Message::Response(resp))) => {
            let id = resp.id.raw_bytes();
            if pending.contains_key(id) {
                DeviceAction::Forward {
                    answered: vec![id.to_vec()],
                }
            } else {
                unexpected(id)
            }
        }
        Parsed::Single(Ok(_)) => DeviceAction::Forward {
            answered: Vec::new(),
        },
        Parsed::Single(Err(invalid)) => DeviceAction::Drop(format!(
            "dropped an invalid message from the device: {}",
            invalid.reason
        )),
        Parsed::EmptyBatch => DeviceAction::Drop("dropped an empty batch from the device".into()),
        Parsed::Batch(batch) => {
            // Passed on only when every member is a valid message and every answer in it
            // answers a waiting call: a batch cannot be cut without rewriting it.
            let mut answered = Vec::new();
            for element in batch.iter() {
                match element {
                    Ok(Message::Response(resp)) => {
                        let id = resp.id.raw_bytes();
                        if !pending.contains_key(id) {
                            return unexpected(id);
                        }
                        answered.push(id.to_vec());
                    }
                    Ok(_) => {}
                    Err(invalid) => {
                        return DeviceAction::Drop(format!(
                            "dropped a batch from the device with an invalid member: {}",
                            invalid.reason
                        ))
                    }
                }
            }
            DeviceAction::Forward { answered }
        }
    }
}

/// An error response echoing `id` (its raw JSON text).
fn error_reply(id: &[u8], code: i32, message: &str, data: Option<&serde_json::Value>) -> String {
    let mut out = String::with_capacity(96 + id.len());
    out.push_str(r#"{"jsonrpc":"2.0","id":"#);
    out.push_str(&String::from_utf8_lossy(id));
    let message = serde_json::Value::from(message);
    let _ = write!(out, r#","error":{{"code":{code},"message":{message}"#);
    if let Some(data) = data {
        let _ = write!(out, r#","data":{data}"#);
    }
    out.push_str("}}");
    out
}

/// Exit code: the device link could not be opened, failed or closed.
pub const EXIT_DEVICE: u8 = 3;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use serde_json::{json, Value};
    use tokio::io::{AsyncBufReadExt, BufReader, DuplexStream};

    struct Rig {
        host: tokio::io::WriteHalf<DuplexStream>,
        host_lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
        device: tokio::io::WriteHalf<DuplexStream>,
        device_lines: tokio::io::Lines<BufReader<tokio::io::ReadHalf<DuplexStream>>>,
        task: tokio::task::JoinHandle<Result<BridgeStats, BridgeError>>,
    }

    fn rig(config: BridgeConfig) -> Rig {
        let (host_a, host_b) = tokio::io::duplex(1 << 16);
        let (dev_a, dev_b) = tokio::io::duplex(1 << 16);
        let (hr, hw) = tokio::io::split(host_b);
        let (dr, dw) = tokio::io::split(dev_b);
        let task = tokio::spawn(run(hr, hw, dr, dw, config));
        let (host_read, host) = tokio::io::split(host_a);
        let (dev_read, device) = tokio::io::split(dev_a);
        Rig {
            host,
            host_lines: BufReader::new(host_read).lines(),
            device,
            device_lines: BufReader::new(dev_read).lines(),
            task,
        }
    }

    async fn line<R: tokio::io::AsyncBufRead + Unpin>(lines: &mut tokio::io::Lines<R>) -> Value {
        let l = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
            .await
            .expect("a line in time")
            .unwrap()
            .expect("not the end");
        serde_json::from_str(&l).unwrap()
    }

    #[tokio::test]
    async fn forwards_both_ways_and_drops_device_garbage() {
        let mut r = rig(BridgeConfig {
            max_frame: 100,
            ..BridgeConfig::default()
        });
        r.host
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"id\":\"a\"}\n")
            .await
            .unwrap();
        assert_eq!(line(&mut r.device_lines).await["id"], "a");
        // Garbage, an oversize line, an invalid message and a stray answer, then the answer.
        let mut junk = b"\x00\xffgarbage\n".to_vec();
        junk.extend_from_slice(
            format!(
                "{}\n{{\"x\":1}}\n{{\"jsonrpc\":\"2.0\",\"result\":1,\"id\":\"zz\"}}\n",
                "y".repeat(300)
            )
            .as_bytes(),
        );
        r.device.write_all(&junk).await.unwrap();
        r.device
            .write_all(b"{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":\"a\"}\n")
            .await
            .unwrap();
        assert_eq!(
            line(&mut r.host_lines).await,
            json!({"jsonrpc":"2.0","result":3,"id":"a"})
        );
        // A notification from the device passes; host garbage is answered, not forwarded.
        r.device
            .write_all(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n",
            )
            .await
            .unwrap();
        assert_eq!(
            line(&mut r.host_lines).await["method"],
            "notifications/progress"
        );
        r.host.write_all(b"{nope\n").await.unwrap();
        assert_eq!(line(&mut r.host_lines).await["error"]["code"], -32700);
        r.host.shutdown().await.unwrap();
        let stats = r.task.await.unwrap().unwrap();
        assert_eq!(stats.dropped, 4, "{stats:?}");
        assert_eq!((stats.to_device, stats.to_host, stats.refused), (1, 2, 1));
    }

    #[tokio::test]
    async fn silent_device_fails_calls_and_boot_fails_them_too() {
        let mut r = rig(BridgeConfig {
            timeout: Duration::from_millis(1000),
            ..BridgeConfig::default()
        });
        r.host
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"slow\",\"id\":7}\n")
            .await
            .unwrap();
        line(&mut r.device_lines).await;
        let err = line(&mut r.host_lines).await;
        assert_eq!(err["id"], 7);
        assert_eq!(err["error"]["code"], DEVICE_ERROR);
        assert_eq!(err["error"]["data"]["reason"], "device_timeout");
        r.host
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"slow\",\"id\":8}\n")
            .await
            .unwrap();
        line(&mut r.device_lines).await;
        r.device
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"booted\",\"params\":{}}\n")
            .await
            .unwrap();
        let err = line(&mut r.host_lines).await;
        assert_eq!(
            (err["id"].clone(), err["error"]["data"]["reason"].clone()),
            (json!(8), json!("device_reset"))
        );
        r.host.shutdown().await.unwrap();
        let stats = r.task.await.unwrap().unwrap();
        assert_eq!((stats.timeouts, stats.resets), (1, 1));
    }

    #[tokio::test]
    async fn a_talking_device_keeps_its_calls_alive() {
        let mut r = rig(BridgeConfig {
            timeout: Duration::from_millis(600),
            ..BridgeConfig::default()
        });
        r.host
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"long\",\"id\":1}\n")
            .await
            .unwrap();
        line(&mut r.device_lines).await;
        // Progress every 200 ms for 1.2 s: two timeouts' worth, never 600 ms of silence.
        for step in 1..=6 {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let note = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progress\":{step}}}}}\n");
            r.device.write_all(note.as_bytes()).await.unwrap();
            assert_eq!(line(&mut r.host_lines).await["params"]["progress"], step);
        }
        r.device
            .write_all(b"{\"jsonrpc\":\"2.0\",\"result\":\"done\",\"id\":1}\n")
            .await
            .unwrap();
        assert_eq!(line(&mut r.host_lines).await["result"], "done");
        r.host.shutdown().await.unwrap();
        assert_eq!(r.task.await.unwrap().unwrap().timeouts, 0);
    }

    #[tokio::test]
    async fn a_cancelled_call_is_no_longer_waited_for() {
        let mut r = rig(BridgeConfig {
            timeout: Duration::from_millis(500),
            ..BridgeConfig::default()
        });
        r.host
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"long\",\"id\":\"c\"}\n")
            .await
            .unwrap();
        line(&mut r.device_lines).await;
        let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c","reason":"user"}}"#;
        r.host
            .write_all(format!("{cancel}\n").as_bytes())
            .await
            .unwrap();
        assert_eq!(line(&mut r.device_lines).await["params"]["requestId"], "c");
        // Past the timeout: no error for the cancelled call; its late answer is dropped.
        tokio::time::sleep(Duration::from_millis(1000)).await;
        r.device
            .write_all(b"{\"jsonrpc\":\"2.0\",\"result\":1,\"id\":\"c\"}\n")
            .await
            .unwrap();
        r.device
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"after\"}\n")
            .await
            .unwrap();
        assert_eq!(line(&mut r.host_lines).await["method"], "after");
        r.host.shutdown().await.unwrap();
        let stats = r.task.await.unwrap().unwrap();
        assert_eq!((stats.timeouts, stats.dropped), (0, 1));
    }

    /// A notification of exactly `len` bytes.
    fn note_of_len(len: usize) -> String {
        let head = r#"{"jsonrpc":"2.0","method":"n","params":[""#;
        let tail = r#""]}"#;
        format!("{head}{}{tail}", "p".repeat(len - head.len() - tail.len()))
    }

    #[tokio::test]
    async fn max_frame_at_its_edge_both_ways() {
        let max = 200;
        let mut r = rig(BridgeConfig {
            max_frame: max,
            ..BridgeConfig::default()
        });
        // From the device: max bytes pass, max + 1 are dropped.
        let fits = note_of_len(max);
        let over = note_of_len(max + 1);
        r.device
            .write_all(format!("{over}\n{fits}\n").as_bytes())
            .await
            .unwrap();
        let got = line(&mut r.host_lines).await;
        assert_eq!(got.to_string().len(), max, "{got}");
        // From the host: max bytes are forwarded, max + 1 refused.
        r.host
            .write_all(format!("{over}\n{fits}\n").as_bytes())
            .await
            .unwrap();
        let refused = line(&mut r.host_lines).await;
        assert_eq!(refused["error"]["data"], "frame too large", "{refused}");
        assert_eq!(line(&mut r.device_lines).await.to_string().len(), max);
        r.host.shutdown().await.unwrap();
        let stats = r.task.await.unwrap().unwrap();
        assert_eq!(
            (stats.dropped, stats.refused, stats.to_device, stats.to_host),
            (1, 1, 1, 1)
        );
    }

    #[tokio::test]
    async fn pending_limit_answers_busy_at_its_edge() {
        let mut r = rig(BridgeConfig {
            max_pending: 2,
            ..BridgeConfig::default()
        });
        for id in 1..=3 {
            let call = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":{id}}}\n");
            r.host.write_all(call.as_bytes()).await.unwrap();
        }
        assert_eq!(line(&mut r.device_lines).await["id"], 1);
        assert_eq!(line(&mut r.device_lines).await["id"], 2);
        let busy = line(&mut r.host_lines).await;
        assert_eq!(
            (busy["id"].clone(), busy["error"]["code"].clone()),
            (json!(3), json!(-32001))
        );
        r.host.shutdown().await.unwrap();
        r.task.await.unwrap().unwrap();
    }
}
