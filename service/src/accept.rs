//! The accept loop every stream server of a service runs (TCP, TLS, Unix sockets, HTTP): the
//! service's connection limit and graceful drain applied to any listener's `accept`. Nothing
//! here knows a transport (`rpcwire-tokio` and `rpcwire-http` hand it their listeners): it
//! moved here from `rpcwire-tokio`, beside the [`Shutdown`] whose drain it honours.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::shutdown::{Shutdown, Tracked};

/// How long a draining accept loop waits for the next connection of its listen backlog.
const BACKLOG_WAIT: Duration = Duration::from_millis(10);

/// What an accepted connection holds while it lives: its place under the connection limit,
/// and its count among the connections a drain waits for.
#[derive(Debug)]
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    _tracked: Tracked,
}

/// Accepts connections with `accept` (a listener's: the next connection and its peer's
/// address, where it has one) and hands each to `start` with a [`Slot`] it holds while it
/// lives: at most `max_connections` (at least 1) are open at once, and at the limit new
/// clients wait in the listen backlog (logged once per wait). A failed accept (out of file
/// descriptors, say) is logged and retried after 50 ms. Runs until dropped or until
/// `shutdown` is triggered: the connections already waiting in the listen backlog are then
/// handed on too (as slots allow), and the listener is closed. Connections handed on go on,
/// each counted in `shutdown`'s drain until its slot is dropped.
pub async fn accept_loop<S, A, F>(
    mut accept: A,
    max_connections: usize,
    shutdown: &Shutdown,
    start: impl Fn(S, Option<SocketAddr>, Slot),
) where
    A: FnMut() -> F,
    F: Future<Output = std::io::Result<(S, Option<SocketAddr>)>>,
{
    let max_connections = max_connections.max(1);
    let slots = Arc::new(Semaphore::new(max_connections));
    let draining = shutdown.draining();
    tokio::pin!(draining);
    let slot = |permit| Slot {
        _permit: permit,
        _tracked: shutdown.track(),
    };
    loop {
        let next = async {
            let permit = match Arc::clone(&slots).try_acquire_owned() {
                Ok(permit) => permit,
                Err(_) => {
                    tracing::warn!(
                        limit = max_connections,
                        "connection limit reached: new connections wait until one ends"
                    );
                    // The semaphore is never closed.
                    Arc::clone(&slots).acquire_owned().await.ok()?
                }
            };
            match accept().await {
                Ok((stream, peer)) => Some(Some((stream, peer, permit))),
                Err(e) => {
                    // Out of descriptors and the like: wait and go on.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Some(None)
                }
            }
        };
        let accepted = tokio::select! {
            biased;
            () = &mut draining => {
                // Connections the kernel has completed are served (their requests refused),
                // not reset with the listener: those that come within a few milliseconds.
                while let Ok(permit) = Arc::clone(&slots).try_acquire_owned() {
                    let backlog = tokio::time::timeout(BACKLOG_WAIT, accept()).await;
                    let Ok(Ok((stream, peer))) = backlog else { return };
                    start(stream, peer, slot(permit));
                }
                return;
            }
            accepted = next => accepted,
        };
        match accepted {
            Some(Some((stream, peer, permit))) => start(stream, peer, slot(permit)),
            Some(None) => {}
            None => return,
        }
    }
}
