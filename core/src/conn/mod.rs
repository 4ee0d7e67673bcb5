//! The sans-IO [`Connection`]: one per byte stream, both roles at once.
//!
//! A driver feeds it received bytes ([`handle_input`](Connection::handle_input)) and the time
//! ([`handle_timeout`](Connection::handle_timeout)), gives it commands
//! ([`send_request`](Connection::send_request), [`respond`](Connection::respond), ...), and
//! after every input or command drains its outputs
//! ([`poll_output`](Connection::poll_output)) until [`Output::Timeout`] or [`Output::Idle`].
//!
//! One module per concern, each importing only the ones below it (this one only gathers the
//! public names):
//! - `input` (frames, messages, batches in), `commands` (requests, notifications and answers
//!   out), `outgoing` (batches out): the connection's `impl` blocks by family;
//! - `connection`: the [`Connection`] itself, its construction and outputs, and the writers the
//!   families share;
//! - the state it holds: `transmit` (the transmit queue), `pending` (our requests awaiting
//!   responses), `inflight` (the peer's requests awaiting answers), `batch` (the reply to an
//!   inbound batch), `memo` (what validating that batch learned of its elements);
//! - the leaves: `types` (the values it takes and gives), `stats` (its counters), `limits`
//!   (the sizes its parts share).

mod batch;
mod commands;
mod connection;
mod inflight;
mod input;
mod limits;
mod memo;
mod outgoing;
mod pending;
mod stats;
mod transmit;
mod types;

pub use self::connection::Connection;
pub use self::outgoing::OutgoingBatch;
pub use self::stats::Stats;
pub use self::types::*;
pub use crate::records::{InflightSlot, PendingSlot};
pub use crate::token::{Failure, Token};
pub use crate::wire::DEFAULT_MAX_FRAME;
