//! The PostgreSQL store's connections: a fixed number of them ([`Pool`]), each with the
//! statements it prepared ([`Pooled::prepared`]); and the store's error ([`PostgresError`]),
//! which every module of the store returns, the connections first.
//!
//! The crate's own rather than deadpool-postgres: a semaphore and a list of idle
//! connections, reconnected when one is found closed, is all the store needs, and
//! deadpool-postgres would bring a pool framework and its configuration types for it.
//!
//! A statement given to tokio-postgres as text is prepared on every call, a round trip of
//! its own before the one that runs it; the calls of the store's hot paths use statements
//! prepared once per connection instead, keyed by their text (the store's constants: the
//! cache holds at most one per constant).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_postgres::{Client, Config, NoTls, Statement};

use super::StoreError;

/// Why a PostgreSQL store could not be opened or used.
#[derive(Debug, thiserror::Error)]
pub enum PostgresError {
    /// The server (or the connection to it) said no.
    #[error("{}", describe(.0))]
    Postgres(#[from] tokio_postgres::Error),
    /// A stored task's JSON does not decode (or a task does not encode).
    #[error("a stored task does not decode: {0}")]
    Json(#[from] serde_json::Error),
    /// The database was migrated by a newer version of this crate (its schema version).
    #[error("the database's schema version {0} is newer than this crate's")]
    NewerSchema(i64),
    /// A schema name that is not a plain lower-case SQL identifier.
    #[error("{0:?} is not a schema name (lower-case letters, digits and '_', at most 63)")]
    BadSchema(String),
}

/// The driver's error with the server's message, or the cause (its own `Display` says only
/// "db error" or the like).
fn describe(e: &tokio_postgres::Error) -> String {
    match (e.as_db_error(), std::error::Error::source(e)) {
        (Some(db), _) => format!("{e}: {} ({})", db.message(), db.code().code()),
        (None, Some(cause)) => format!("{e}: {cause}"),
        (None, None) => e.to_string(),
    }
}

impl From<PostgresError> for StoreError {
    fn from(e: PostgresError) -> Self {
        StoreError::Backend(Arc::new(e))
    }
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        PostgresError::from(e).into()
    }
}

/// A connection and the statements prepared on it.
pub(super) struct Conn {
    client: Client,
    statements: HashMap<&'static str, Statement>,
}

/// A fixed number of connections: a permit of `gate` per connection in use, the idle ones
/// in `idle`. A connection found closed is dropped and a new one opened in its place.
pub(super) struct Pool {
    config: Config,
    gate: Semaphore,
    idle: Mutex<Vec<Conn>>,
}

/// A connection taken from the [`Pool`], given back on drop unless it closed.
pub(super) struct Pooled<'a> {
    conn: Option<Conn>,
    pool: &'a Pool,
    _permit: SemaphorePermit<'a>,
}

impl Pool {
    /// At most `size` connections (at least 1), `first` among them.
    pub(super) fn new(config: Config, size: usize, first: Client) -> Self {
        Pool {
            config,
            gate: Semaphore::new(size.max(1)),
            idle: Mutex::new(vec![Conn {
                client: first,
                statements: HashMap::new(),
            }]),
        }
    }

    pub(super) async fn get(&self) -> Result<Pooled<'_>, PostgresError> {
        let permit = self
            .gate
            .acquire()
            .await
            .unwrap_or_else(|_| unreachable!("the pool's semaphore is never closed"));
        let idle = {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            idle.retain(|c| !c.client.is_closed());
            idle.pop()
        };
        let conn = match idle {
            Some(conn) => conn,
            None => Conn {
                client: connect(&self.config).await?,
                statements: HashMap::new(),
            },
        };
        Ok(Pooled {
            conn: Some(conn),
            pool: self,
            _permit: permit,
        })
    }
}

impl Pooled<'_> {
    fn conn(&mut self) -> &mut Conn {
        self.conn
            .as_mut()
            .unwrap_or_else(|| unreachable!("taken only on drop"))
    }

    pub(super) fn client(&mut self) -> &mut Client {
        &mut self.conn().client
    }

    /// `sql` prepared on this connection: once, then from its cache.
    pub(super) async fn prepared(
        &mut self,
        sql: &'static str,
    ) -> Result<Statement, tokio_postgres::Error> {
        let conn = self.conn();
        if let Some(statement) = conn.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = conn.client.prepare(sql).await?;
        conn.statements.insert(sql, statement.clone());
        Ok(statement)
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take().filter(|c| !c.client.is_closed()) {
            self.pool
                .idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(conn);
        }
    }
}

/// Opens a connection; its I/O runs on a task of its own until the client is dropped.
pub(super) async fn connect(config: &Config) -> Result<Client, PostgresError> {
    let (client, connection) = config.connect(NoTls).await?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "a PostgreSQL task store connection failed");
        }
    });
    Ok(client)
}
