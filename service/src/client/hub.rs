//! [`Hub`]: the clients of a server's open connections, to notify all of them at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;

use super::raw::encode_params;
use super::Client;
use crate::CallError;

/// The default time a notification from [`Hub::notify_all`] may wait for one connection.
pub const DEFAULT_HUB_SEND_TIMEOUT: Duration = Duration::from_secs(10);

/// The clients of a server's open connections (a transport [`add`](Hub::add)s each one as
/// it opens and [`remove`](Hub::remove)s it as it ends), to notify all of them (or list
/// them). Cheap to clone (clones share the connections).
///
/// A notification to a connection whose peer does not read waits at most the hub's send
/// timeout in a task of its own; the others get theirs meanwhile.
#[derive(Clone, Debug, Default)]
pub struct Hub {
    inner: Arc<HubInner>,
}

#[derive(Debug, Default)]
struct HubInner {
    next: AtomicU64,
    clients: Mutex<HashMap<u64, Client>>,
    send_timeout: Mutex<Option<Duration>>,
}

impl Hub {
    /// An empty hub (give it to a server to share it, for example with a handler that
    /// broadcasts).
    pub fn new() -> Self {
        Hub::default()
    }

    fn clients_map(&self) -> MutexGuard<'_, HashMap<u64, Client>> {
        self.inner
            .clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds `client` (a connection that opened) until [`remove`](Hub::remove) is given the
    /// number returned.
    pub fn add(&self, client: Client) -> u64 {
        let id = self.inner.next.fetch_add(1, Ordering::Relaxed);
        self.clients_map().insert(id, client);
        id
    }

    /// Lets go of the client [`add`](Hub::add) numbered `id` (its connection ended).
    pub fn remove(&self, id: u64) {
        self.clients_map().remove(&id);
    }

    /// How long a notification may wait for one connection (default 10 s), for this hub
    /// and its clones.
    pub fn set_send_timeout(&self, timeout: Duration) {
        *self
            .inner
            .send_timeout
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(timeout);
    }

    /// How many connections are open.
    pub fn len(&self) -> usize {
        self.clients_map().len()
    }

    /// True when no connection is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A [`Client`] for each open connection.
    pub fn clients(&self) -> Vec<Client> {
        self.clients_map().values().cloned().collect()
    }

    /// Sends the notification `method` with `params` to every open connection, each in a task
    /// of its own (must be called inside a tokio runtime); returns how many connections it
    /// went to. Params must be an array, an object or `()` (none): others
    /// ([`CallError::ParamsNotStructured`]), and params that do not serialize
    /// ([`CallError::Params`]), fail here, before anything is sent.
    pub fn notify_all<P: Serialize>(&self, method: &str, params: P) -> Result<usize, CallError> {
        let params: Option<Arc<RawValue>> = match encode_params(&params)? {
            Some(text) => Some(
                RawValue::from_string(text)
                    .map_err(CallError::Params)?
                    .into(),
            ),
            None => None,
        };
        let timeout = self
            .inner
            .send_timeout
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .unwrap_or(DEFAULT_HUB_SEND_TIMEOUT);
        let clients = self.clients();
        for client in &clients {
            let (client, method, params) = (client.clone(), method.to_owned(), params.clone());
            tokio::spawn(async move {
                let sent = client.notify(&method, params.as_deref());
                if !matches!(tokio::time::timeout(timeout, sent).await, Ok(Ok(()))) {
                    tracing::debug!(method, "notification not delivered to one connection");
                }
            });
        }
        Ok(clients.len())
    }
}
