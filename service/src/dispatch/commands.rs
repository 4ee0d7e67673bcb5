//! The connection's own calls: commands from its [`Client`](crate::Client)s given to the core,
//! and held back while the core has no room.

use rpcwire::{Instant, SendError};

use super::{Dispatcher, MAX_PENDING_CALLS};
use crate::client::raw::Raw;
use crate::client::{BatchCmd, BatchItem, Command};
use crate::{CallError, Conn};

/// The params of a cancel notification: `{"<member>": <id>}`.
pub(super) struct CancelParams<'a> {
    pub(super) member: &'a str,
    pub(super) id: u64,
}

impl serde::Serialize for CancelParams<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(self.member, &self.id)?;
        map.end()
    }
}

impl Dispatcher {
    /// Takes a client's command (a statistics request is answered with `buffer_bytes` the
    /// transport holds).
    pub(super) fn on_command(&mut self, conn: &mut Conn, cmd: Command, buffer_bytes: usize) {
        if let Command::Stats(reply) = cmd {
            let _ = reply.send(self.stats(conn, buffer_bytes));
            return;
        }
        // Input has ended: a call could never be answered, so it fails now. A notification
        // still goes out while the connection writes: the handlers of the requests already
        // received run on, and their progress and log messages belong with their answers.
        if self.draining && !matches!(cmd, Command::Notify(_)) {
            cmd.fail(|| CallError::Closed);
            return;
        }
        if let Err(cmd) = self.try_command(conn, cmd) {
            self.stalled = Some(cmd);
        }
    }

    pub(super) fn retry_stalled(&mut self, conn: &mut Conn) {
        if let Some(cmd) = self.stalled.take() {
            self.on_command(conn, cmd, 0);
        }
    }

    /// Gives a command to the core; `Err` hands it back when there is no room yet.
    fn try_command(&mut self, conn: &mut Conn, cmd: Command) -> Result<(), Command> {
        let now = self.now();
        match cmd {
            Command::Call(c) => {
                if c.reply.is_closed() {
                    return Ok(());
                }
                let params = c.params.as_deref().map(Raw);
                // With a cancel profile the client keeps the deadline (see
                // `Service::connection`).
                let timeout = if self.service.0.cancel.is_some() {
                    None
                } else {
                    c.timeout
                };
                match conn.send_request(now, c.token, &c.method, params.as_ref(), timeout) {
                    Ok(()) => {
                        if let (Some(cx), Some(table)) = (c.trace, &self.outgoing_traces) {
                            if let Some(id) = conn.request_id(c.token) {
                                table.put(id, *cx);
                            }
                        }
                        self.calls.insert(c.token, c.reply);
                        Ok(())
                    }
                    Err(SendError::PendingFull | SendError::WouldBlock { .. }) => {
                        Err(Command::Call(c))
                    }
                    Err(e) => {
                        let _ = c.reply.send(Err(CallError::from_send(e)));
                        Ok(())
                    }
                }
            }
            Command::Notify(n) => {
                let raw = n.params.as_deref().map(Raw);
                match conn.send_notification(&n.method, raw.as_ref()) {
                    Ok(()) => {
                        let _ = n.done.send(Ok(()));
                        Ok(())
                    }
                    Err(SendError::WouldBlock { .. }) => Err(Command::Notify(n)),
                    Err(e) => {
                        let _ = n.done.send(Err(CallError::from_send(e)));
                        Ok(())
                    }
                }
            }
            Command::Batch(b) => self.try_batch(conn, now, b),
            Command::Stats(reply) => {
                let _ = reply.send(self.stats(conn, 0));
                Ok(())
            }
        }
    }

    fn try_batch(
        &mut self,
        conn: &mut Conn,
        now: Instant,
        batch: Box<BatchCmd>,
    ) -> Result<(), Command> {
        let calls = batch
            .items
            .iter()
            .filter(|i| matches!(i, BatchItem::Call(_)))
            .count();
        if calls > MAX_PENDING_CALLS {
            let err = || CallError::BatchTooLarge {
                calls,
                capacity: MAX_PENDING_CALLS,
            };
            Command::Batch(batch).fail(err);
            return Ok(());
        }
        let client_deadlines = self.service.0.cancel.is_some();
        match encode_batch(conn, now, &batch.items, client_deadlines) {
            Ok(()) => {
                let BatchCmd { items, done } = *batch;
                for item in items {
                    if let BatchItem::Call(c) = item {
                        self.calls.insert(c.token, c.reply);
                    }
                }
                let _ = done.send(Ok(()));
                Ok(())
            }
            Err(SendError::PendingFull | SendError::WouldBlock { .. }) => {
                Err(Command::Batch(batch))
            }
            Err(e) => {
                Command::Batch(batch).fail(|| CallError::from_send(e));
                Ok(())
            }
        }
    }
}

/// Writes a whole batch into the core, or nothing (an unfinished batch sends nothing).
fn encode_batch(
    conn: &mut Conn,
    now: Instant,
    items: &[BatchItem],
    client_deadlines: bool,
) -> Result<(), SendError> {
    let mut batch = conn.start_batch(now)?;
    for item in items {
        match item {
            BatchItem::Call(c) => {
                let params = c.params.as_deref().map(Raw);
                let timeout = if client_deadlines { None } else { c.timeout };
                batch.request(c.token, &c.method, params.as_ref(), timeout)?;
            }
            BatchItem::Notify { method, params } => {
                let params = params.as_deref().map(Raw);
                batch.notification(method, params.as_ref())?;
            }
        }
    }
    batch.finish();
    Ok(())
}
