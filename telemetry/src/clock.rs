//! The clock calls are timed on.

use std::time::Instant;

/// Now, on tokio's clock: a paused test clock (`tokio::time::pause`, as rpcwire-testkit runs)
/// then times a call's both ends alike, and drives the deadlines a transport waits on.
/// Reading the system clock instead made a timer that fired in virtual time find its deadline
/// not yet reached in real time, and a driver's loop spin until it was.
#[inline]
pub fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}
