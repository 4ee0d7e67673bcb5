//! [`RedisTaskStore`]: tasks with their history, artifacts and leases, event logs and push
//! configs in a Redis or Valkey that several replicas of an agent share (feature `redis`).
//!
//! Its keys are listed on [`RedisTaskStore`].
//!
//! The bounds are the other stores' ([`StoreLimits`], [`EventLogLimits`]). Each write that
//! reads before it writes is one Lua script, which Redis runs alone: a new task is counted
//! (`ZCARD`, constant time), room made from the oldest finished task or refused, and inserted
//! in one step, so two replicas never both take the last place and no lock is held between
//! calls. A lapsed lease is failed in two steps: a script reads the lapsed tasks, the task is
//! failed here (the failure message is the same JSON as the other stores'), and a second
//! script writes it only if the task's version and lease are still those read, so that of two
//! replicas sweeping at once one fails it, and a write of its holder in between wins.
//!
//! The scripts name the keys of the tasks they evict or list themselves: a standalone Redis
//! or Valkey (or one primary), not a cluster. Listing (`ListTasks`) reads, in one script, the
//! index entry of every task newer than its `statusTimestampAfter` (to count `totalSize`, as
//! the SQL stores' `COUNT(*)` does): its cost grows with the tasks held, at most
//! [`StoreLimits::max_tasks`].
//!
//! The `redis` crate, not fred: rpcwire-mcp's shared session store already builds it (same
//! version, same features), so an agent with both profiles compiles no second client.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use ::redis::aio::MultiplexedConnection;
use ::redis::{Script, Value};

use super::memory::{Cursor, Page};
use super::redis_listen::{listen, subscribe};
use super::redis_wire::RedisError;
use super::redis_wire::{int, int_of, items, opt_text_of, text_of, Keys};
use super::sql::{self, micros};
use super::watchers::Watchers;
use super::{
    lapse, leasable, EventLogLimits, Lease, PushConfigStore, StoreError, StoreFuture, StoreLimits,
    TaskStore,
};
use crate::push::TaskPushNotificationConfig;
use crate::types::{ListTasksRequest, ListTasksResponse, Task, TaskState};

/// How a [`RedisTaskStore`] connects, beyond its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisOptions {
    /// The prefix of its keys and channels (one per agent: replicas of an agent share it;
    /// agents sharing one Redis each take their own). `rpcwire:a2a` by default.
    pub prefix: String,
    /// The longest connecting, and every command after, may take before the call fails (a
    /// stuck server fails a call rather than hanging it); 10 s by default.
    pub timeout: Duration,
    /// How often a stream following a task's log here reads it while the connection that
    /// listens for other replicas' appends is down (and how long that connection waits
    /// before reconnecting); 1 s by default.
    pub poll_interval: Duration,
}

impl Default for RedisOptions {
    fn default() -> Self {
        RedisOptions {
            prefix: "rpcwire:a2a".into(),
            timeout: Duration::from_secs(10),
            poll_interval: Duration::from_secs(1),
        }
    }
}

/// What evicting and removing scripts share: `drop(m)` forgets the task of index member `m`
/// (its hash, its push configs, its index entries). KEYS[2..4]: `P:tasks`, `P:finished`,
/// `P:leases`; ARGV[1]: the prefix.
const DROP: &str = r"
local P = ARGV[1]
local function drop(m)
  local id = string.sub(m, 18)
  redis.call('DEL', P .. ':t:' .. id, P .. ':p:' .. id)
  redis.call('ZREM', KEYS[2], m)
  redis.call('ZREM', KEYS[3], m)
  redis.call('ZREM', KEYS[4], m)
end
";

/// KEYS[1] the task, [2..4] the indexes, [5] `P:seq`. ARGV: prefix, id, context, state,
/// status µs, has owner (0/1), owner, task JSON, history, artifacts, terminal (0/1), lease
/// (`keep`, `set`, `drop`), holder, until µs, now µs, finished before this are too old,
/// most finished, most tasks. 0: full.
const PUT: &str = r"
local function evict()
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[16])) do drop(m) end
  local over = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[17])
  if over > 0 then
    for _, m in ipairs(redis.call('ZRANGE', KEYS[3], 0, over - 1)) do drop(m) end
  end
end
local m = redis.call('HGET', KEYS[1], 'm')
if not m then
  evict()
  if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[18]) then
    local oldest = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
    if not oldest then return 0 end
    drop(oldest)
  end
  m = string.format('%016x', redis.call('INCR', KEYS[5])) .. ':' .. ARGV[2]
  redis.call('HSET', KEYS[1], 'm', m)
end
redis.call('HSET', KEYS[1], 'c', ARGV[3], 's', ARGV[4], 'at', ARGV[5], 'task', ARGV[8],
  'h', ARGV[9], 'a', ARGV[10])
redis.call('HINCRBY', KEYS[1], 'v', 1)
if ARGV[6] == '1' then redis.call('HSET', KEYS[1], 'o', ARGV[7])
else redis.call('HDEL', KEYS[1], 'o') end
redis.call('ZADD', KEYS[2], ARGV[5], m)
if ARGV[11] == '1' and redis.call('HSETNX', KEYS[1], 'fin', ARGV[15]) == 1 then
  redis.call('ZADD', KEYS[3], ARGV[15], m)
end
if ARGV[12] == 'set' then
  redis.call('HSET', KEYS[1], 'lh', ARGV[13], 'lu', ARGV[14])
  redis.call('ZADD', KEYS[4], ARGV[14], m)
elseif ARGV[12] == 'drop' then
  redis.call('HDEL', KEYS[1], 'lh', 'lu')
  redis.call('ZREM', KEYS[4], m)
end
if ARGV[11] == '1' then evict() end
return 1
";

/// KEYS[1] the task, [2..4] the indexes. ARGV: prefix, id.
const REMOVE: &str = r"
local m = redis.call('HGET', KEYS[1], 'm')
if m then drop(m) end
redis.call('DEL', P .. ':p:' .. ARGV[2])
return 1
";

/// KEYS[1] `P:tasks`. ARGV: prefix, has caller (0/1), caller, context (empty: any), state
/// (empty: any), the lowest status time (`-inf` or `(µs`), has cursor (0/1), cursor µs,
/// cursor seq (16 hex digits), most rows. The number of matching tasks, then per row:
/// member, status µs, task, history, artifacts, owner.
const LIST: &str = r"
local P = ARGV[1]
local total, rows, out = 0, 0, {0}
local limit = tonumber(ARGV[10])
local cat = tonumber(ARGV[8])
local all = redis.call('ZREVRANGEBYSCORE', KEYS[1], '+inf', ARGV[6], 'WITHSCORES')
for i = 1, #all, 2 do
  local m = all[i]
  local key = P .. ':t:' .. string.sub(m, 18)
  local f = redis.call('HMGET', key, 'o', 'c', 's')
  if ((not f[1]) or (ARGV[2] == '1' and f[1] == ARGV[3]))
    and (ARGV[4] == '' or f[2] == ARGV[4]) and (ARGV[5] == '' or f[3] == ARGV[5]) then
    total = total + 1
    if rows < limit then
      local at = tonumber(all[i + 1])
      if ARGV[7] == '0' or at < cat or (at == cat and string.sub(m, 1, 16) < ARGV[9]) then
        rows = rows + 1
        local t = redis.call('HMGET', key, 'at', 'task', 'h', 'a', 'o')
        table.insert(out, m)
        for j = 1, 5 do table.insert(out, t[j]) end
      end
    end
  end
end
out[1] = total
return out
";

/// KEYS[1] `P:leases`. ARGV: prefix, now µs, holder. Per task leased by another holder
/// whose lease lapsed before now: member, version, task, history, artifacts, owner.
const LAPSED: &str = r"
local P = ARGV[1]
local out = {}
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[2])) do
  local f = redis.call('HMGET', P .. ':t:' .. string.sub(m, 18), 'lh', 'v', 'task', 'h', 'a', 'o')
  if not f[3] then
    redis.call('ZREM', KEYS[1], m)
  elseif f[1] and f[1] ~= ARGV[3] then
    table.insert(out, m)
    for j = 2, 6 do table.insert(out, f[j]) end
  end
end
return out
";

/// KEYS[2..4] the indexes. ARGV: prefix, now µs, holder, the time it finished (µs), the
/// failed state's name, then per task: member, version read, task, history, status µs.
/// The members of the tasks failed: those still at that version, leased by another holder,
/// lapsed.
const FAIL: &str = r"
local P = ARGV[1]
local done = {}
for i = 6, #ARGV, 5 do
  local m = ARGV[i]
  local key = P .. ':t:' .. string.sub(m, 18)
  local f = redis.call('HMGET', key, 'v', 'lh', 'lu')
  if f[1] == ARGV[i + 1] and f[2] and f[2] ~= ARGV[3] and tonumber(f[3]) < tonumber(ARGV[2]) then
    redis.call('HSET', key, 's', ARGV[5], 'task', ARGV[i + 2], 'h', ARGV[i + 3], 'at', ARGV[i + 4])
    redis.call('HINCRBY', key, 'v', 1)
    redis.call('HDEL', key, 'lh', 'lu')
    redis.call('ZREM', KEYS[4], m)
    redis.call('ZADD', KEYS[2], ARGV[i + 4], m)
    if redis.call('HSETNX', key, 'fin', ARGV[4]) == 1 then redis.call('ZADD', KEYS[3], ARGV[4], m) end
    table.insert(done, m)
  end
end
return done
";

/// KEYS[1] `P:leases`. ARGV: prefix, holder, until µs, then the ids. How many renewed.
const RENEW: &str = r"
local P = ARGV[1]
local n = 0
for i = 4, #ARGV do
  local key = P .. ':t:' .. ARGV[i]
  local f = redis.call('HMGET', key, 'lh', 'm')
  if f[1] == ARGV[2] and f[2] then
    redis.call('HSET', key, 'lu', ARGV[3])
    redis.call('ZADD', KEYS[1], ARGV[3], f[2])
    n = n + 1
  end
end
return n
";

/// The store's scripts, loaded once per server (`EVALSHA`, `SCRIPT LOAD` again on a server
/// that lost them).
struct Scripts {
    put: Script,
    remove: Script,
    list: Script,
    lapsed: Script,
    fail: Script,
    renew: Script,
}

impl Scripts {
    fn new() -> Self {
        Scripts {
            put: Script::new(&format!("{DROP}{PUT}")),
            remove: Script::new(&format!("{DROP}{REMOVE}")),
            list: Script::new(LIST),
            lapsed: Script::new(LAPSED),
            fail: Script::new(FAIL),
            renew: Script::new(RENEW),
        }
    }
}

/// Tasks, event logs and push configs in Redis or Valkey, bounded by [`StoreLimits`] and
/// [`EventLogLimits`] as the other stores are; several stores (replicas) may share one
/// prefix.
///
/// Every key is under a prefix ([`RedisOptions::prefix`], `rpcwire:a2a` by default; one per
/// agent, replicas of one agent share it):
///
/// | key | type | holds |
/// |---|---|---|
/// | `P:t:ID` | hash | task `ID`: its JSON without history and artifacts (`task`), its history (`h`) and artifacts (`a`) as JSON, context (`c`), state (`s`), status time (`at`, µs), owner (`o`), its member name in the indexes (`m`), when it finished (`fin`), its lease (`lh` holder, `lu` until, µs) and a version (`v`) bumped by each write |
/// | `P:tasks` | sorted set | every task, by status time; members `SEQ:ID` (`SEQ` 16 hex digits, its creation order), so that ties list newest first |
/// | `P:finished` | sorted set | the finished tasks, by when they finished (eviction) |
/// | `P:leases` | sorted set | the leased tasks, by when their lease lapses |
/// | `P:seq` | string | the last `SEQ` given |
/// | `P:p:ID` | string | task `ID`'s push configs, as JSON |
/// | `P:l:ID` | hash | task `ID`'s event log: owner (`o`), first kept id (`first`), next id (`next`) |
/// | `P:e:ID` | stream | its events, entry ids `0-N` for event `N` |
/// | `P:logs` | sorted set | the task ids with a log, by creation (eviction) |
/// | `P:events`, `P:cancel` | channels | `ID N` for each append; ids of tasks to cancel |
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use std::sync::Arc;
/// use rpcwire_a2a::{A2aServer, AgentCard, RedisTaskStore, StoreLimits, TaskContext};
///
/// let store = Arc::new(
///     RedisTaskStore::connect("redis://127.0.0.1:6379/", StoreLimits::default()).await?,
/// );
/// let server = A2aServer::new(AgentCard::default(), |ctx: TaskContext| async move {
///     ctx.complete(Some("done"));
/// })
/// .store(Arc::clone(&store) as _)
/// .event_log(Arc::clone(&store) as _)
/// .push_config_store(store);
/// # let _ = server;
/// # Ok(())
/// # }
/// ```
pub struct RedisTaskStore {
    link: Link,
    pub(super) keys: Keys,
    /// The streams here following tasks' logs, woken by other replicas' appends.
    pub(super) watchers: Arc<Watchers>,
    scripts: Scripts,
    limits: StoreLimits,
    pub(super) event_limits: EventLogLimits,
}

impl std::fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("prefix", &self.keys.prefix)
            .field("limits", &self.limits)
            .field("event_limits", &self.event_limits)
            .finish_non_exhaustive()
    }
}

impl RedisTaskStore {
    /// Connects to the Redis (or Valkey) at `url` (`redis://HOST:PORT/DB`) with
    /// [`RedisOptions::default`] and starts listening for other replicas' appends and
    /// cancellations. Call it within a tokio runtime.
    pub async fn connect(url: &str, limits: StoreLimits) -> Result<Self, RedisError> {
        Self::connect_with(url, limits, RedisOptions::default()).await
    }

    /// [`connect`](Self::connect) with these options.
    pub async fn connect_with(
        url: &str,
        limits: StoreLimits,
        options: RedisOptions,
    ) -> Result<Self, RedisError> {
        let client = ::redis::Client::open(url)?;
        let config = ::redis::AsyncConnectionConfig::new()
            .set_connection_timeout(options.timeout)
            .set_response_timeout(options.timeout);
        let conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        let keys = Keys::new(&options.prefix);
        let watchers = Watchers::new(options.poll_interval);
        // Subscribed before `connect` returns: no cancellation asked after it is missed.
        let pubsub = subscribe(&client, &keys, options.timeout).await?;
        watchers.set_listening(true);
        tokio::spawn(listen(
            client.clone(),
            pubsub,
            Arc::downgrade(&watchers),
            Keys::new(&options.prefix),
            options.poll_interval,
            options.timeout,
        ));
        Ok(RedisTaskStore {
            link: Link {
                client,
                config,
                current: Mutex::new(Some(conn)),
            },
            keys,
            watchers,
            scripts: Scripts::new(),
            limits,
            event_limits: EventLogLimits::default(),
        })
    }

    /// The bounds of its event logs ([`EventLogLimits::default`] unless set).
    pub fn event_limits(mut self, limits: EventLogLimits) -> Self {
        self.event_limits = limits;
        self
    }

    /// A connection for one call: the multiplexed connection every call shares (cloning it
    /// is cheap), opened again when the last call found it broken.
    pub(super) async fn conn(&self) -> Result<MultiplexedConnection, RedisError> {
        if let Some(conn) = self.link.current().clone() {
            return Ok(conn);
        }
        let conn = self
            .link
            .client
            .get_multiplexed_async_connection_with_config(&self.link.config)
            .await?;
        *self.link.current() = Some(conn.clone());
        Ok(conn)
    }

    /// A call's error, after which the connection is opened again if it cannot serve more
    /// (it dropped, the server restarted).
    pub(super) fn broken(&self, e: ::redis::RedisError) -> RedisError {
        if e.is_unrecoverable_error() {
            *self.link.current() = None;
        }
        e.into()
    }
}

/// The store's connection to the server: the `redis` crate's `MultiplexedConnection` does not
/// reconnect by itself, and its `ConnectionManager` (which does) is behind a feature of the
/// crate that rpcwire-mcp does not build; a call that finds the connection broken drops it
/// here and the next call opens a new one.
struct Link {
    client: ::redis::Client,
    config: ::redis::AsyncConnectionConfig,
    current: Mutex<Option<MultiplexedConnection>>,
}

impl Link {
    fn current(&self) -> std::sync::MutexGuard<'_, Option<MultiplexedConnection>> {
        self.current.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A task from its reply fields: task, history, artifacts (JSON), owner.
fn decode(fields: &[Value]) -> Result<Task, RedisError> {
    let [task, history, artifacts, owner] = fields else {
        return Err(RedisError::Unexpected("a task's four fields"));
    };
    Ok(sql::decode(
        text_of(task)?,
        text_of(history)?,
        text_of(artifacts)?,
        opt_text_of(owner)?,
    )?)
}

/// The creation order in an index member (`SEQ:ID`).
fn seq_of(member: &str) -> Result<u64, RedisError> {
    member
        .get(..16)
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .ok_or(RedisError::Unexpected("an index member"))
}

async fn put(
    store: &RedisTaskStore,
    mut task: Task,
    lease: Option<Lease>,
) -> Result<(), StoreError> {
    let now = micros(SystemTime::now());
    let state = task.status.state;
    let columns = sql::encode(&mut task)?;
    let keeps_lease = leasable(state);
    let lease = lease.filter(|_| keeps_lease);
    let mode = match (&lease, keeps_lease) {
        (Some(_), _) => "set",
        (None, true) => "keep",
        (None, false) => "drop",
    };
    let ttl = int(store.limits.finished_ttl.as_micros());
    let k = &store.keys;
    let mut call = store.scripts.put.prepare_invoke();
    call.key(k.task(&task.id))
        .key(&k.tasks)
        .key(&k.finished)
        .key(&k.leases)
        .key(&k.seq)
        .arg(&k.prefix)
        .arg(&task.id)
        .arg(&task.context_id)
        .arg(&columns.state)
        .arg(columns.status_at)
        .arg(if task.owner.is_some() { "1" } else { "0" })
        .arg(task.owner.as_deref().unwrap_or(""))
        .arg(&columns.body)
        .arg(&columns.history)
        .arg(&columns.artifacts)
        .arg(if state.is_terminal() { "1" } else { "0" })
        .arg(mode)
        .arg(lease.as_ref().map_or("", |l| l.holder.as_str()))
        .arg(lease.as_ref().map_or(0, |l| micros(l.until)))
        .arg(now)
        .arg(now.saturating_sub(ttl))
        .arg(int(store.limits.max_finished))
        .arg(int(store.limits.max_tasks));
    let stored: i64 = call
        .invoke_async(&mut store.conn().await?)
        .await
        .map_err(|e| store.broken(e))?;
    if stored == 0 {
        return Err(StoreError::Full);
    }
    Ok(())
}

async fn list(
    store: &RedisTaskStore,
    query: &ListTasksRequest,
    caller: Option<&str>,
    max_page: usize,
) -> Result<ListTasksResponse, StoreError> {
    let Page {
        size,
        after,
        cursor,
    } = Page::of(query, max_page)?;
    let state = query.status.map(sql::state_name).transpose()?;
    let mut call = store.scripts.list.prepare_invoke();
    call.key(&store.keys.tasks)
        .arg(&store.keys.prefix)
        .arg(if caller.is_some() { "1" } else { "0" })
        .arg(caller.unwrap_or(""))
        .arg(&query.context_id)
        .arg(state.as_deref().unwrap_or(""))
        .arg(after.map_or_else(|| "-inf".to_owned(), |a| format!("({a}")))
        .arg(if cursor.is_some() { "1" } else { "0" })
        .arg(cursor.map_or(0, |c| c.at))
        .arg(format!("{:016x}", cursor.map_or(0, |c| c.seq)))
        .arg(size + 1);
    let reply = items(
        call.invoke_async(&mut store.conn().await?)
            .await
            .map_err(|e| store.broken(e))?,
    )?;
    let total = int_of(reply.first().ok_or(RedisError::Unexpected("a count"))?)?;
    let rows = reply
        .get(1..)
        .unwrap_or_default()
        .chunks(6)
        .map(Ok::<_, StoreError>);
    sql::page(rows, size, total, |row: &[Value]| {
        let [member, at, fields @ ..] = row else {
            return Err(StoreError::from(RedisError::Unexpected("a listed task")));
        };
        let cursor = Cursor {
            at: int_of(at)?,
            seq: seq_of(text_of(member)?)?,
        };
        Ok((decode(fields)?, cursor))
    })
}

async fn fail_lapsed(
    store: &RedisTaskStore,
    now: SystemTime,
    holder: &str,
    reason: &str,
) -> Result<Vec<Task>, StoreError> {
    let k = &store.keys;
    let mut read = store.scripts.lapsed.prepare_invoke();
    read.key(&k.leases)
        .arg(&k.prefix)
        .arg(micros(now))
        .arg(holder);
    let reply = items(
        read.invoke_async(&mut store.conn().await?)
            .await
            .map_err(|e| store.broken(e))?,
    )?;
    if reply.is_empty() {
        return Ok(Vec::new());
    }
    let stamp = micros(SystemTime::now());
    let mut write = store.scripts.fail.prepare_invoke();
    write
        .key(&k.tasks)
        .key(&k.tasks)
        .key(&k.finished)
        .key(&k.leases)
        .arg(&k.prefix)
        .arg(micros(now))
        .arg(holder)
        .arg(stamp)
        .arg(sql::state_name(TaskState::Failed)?);
    let mut lapsed = Vec::new();
    for row in reply.chunks(6) {
        let [member, version, fields @ ..] = row else {
            return Err(RedisError::Unexpected("a lapsed task").into());
        };
        let mut task = decode(fields)?;
        lapse(&mut task, reason);
        let mut bare = task.clone();
        let columns = sql::encode(&mut bare)?;
        let at = if columns.status_at == 0 {
            stamp
        } else {
            columns.status_at
        };
        write
            .arg(text_of(member)?)
            .arg(text_of(version)?)
            .arg(&columns.body)
            .arg(&columns.history)
            .arg(at);
        lapsed.push((text_of(member)?.to_owned(), task));
    }
    let failed: Vec<String> = write
        .invoke_async(&mut store.conn().await?)
        .await
        .map_err(|e| store.broken(e))?;
    Ok(lapsed
        .into_iter()
        .filter(|(m, _)| failed.contains(m))
        .map(|(_, task)| task)
        .collect())
}

impl TaskStore for RedisTaskStore {
    fn put(&self, task: Task, lease: Option<Lease>) -> StoreFuture<'_, ()> {
        Box::pin(put(self, task, lease))
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Task>> {
        Box::pin(async move {
            let fields: Vec<Value> = ::redis::cmd("HMGET")
                .arg(self.keys.task(id))
                .arg(&["task", "h", "a", "o"][..])
                .query_async(&mut self.conn().await?)
                .await
                .map_err(|e| self.broken(e))?;
            if fields.first().is_none_or(|f| *f == Value::Nil) {
                return Ok(None);
            }
            Ok(Some(decode(&fields)?))
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let k = &self.keys;
            let mut call = self.scripts.remove.prepare_invoke();
            call.key(k.task(id))
                .key(&k.tasks)
                .key(&k.finished)
                .key(&k.leases)
                .arg(&k.prefix)
                .arg(id);
            call.invoke_async::<i64>(&mut self.conn().await?)
                .await
                .map_err(|e| self.broken(e))?;
            Ok(())
        })
    }

    fn list<'a>(
        &'a self,
        query: &'a ListTasksRequest,
        caller: Option<&'a str>,
        max_page: usize,
    ) -> StoreFuture<'a, ListTasksResponse> {
        Box::pin(list(self, query, caller, max_page))
    }

    fn renew<'a>(&'a self, lease: &'a Lease, ids: &'a [String]) -> StoreFuture<'a, usize> {
        Box::pin(async move {
            if ids.is_empty() {
                return Ok(0);
            }
            let mut call = self.scripts.renew.prepare_invoke();
            call.key(&self.keys.leases)
                .arg(&self.keys.prefix)
                .arg(&lease.holder)
                .arg(micros(lease.until))
                .arg(ids);
            let renewed: i64 = call
                .invoke_async(&mut self.conn().await?)
                .await
                .map_err(|e| self.broken(e))?;
            Ok(usize::try_from(renewed).unwrap_or(0))
        })
    }

    fn fail_lapsed<'a>(
        &'a self,
        now: SystemTime,
        holder: &'a str,
        reason: &'a str,
    ) -> StoreFuture<'a, Vec<Task>> {
        Box::pin(fail_lapsed(self, now, holder, reason))
    }

    fn request_cancel<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            ::redis::cmd("PUBLISH")
                .arg(&self.keys.cancel)
                .arg(id)
                .query_async::<i64>(&mut self.conn().await?)
                .await
                .map_err(|e| self.broken(e))?;
            Ok(true)
        })
    }

    fn cancel_requests(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        Some(self.watchers.cancels.subscribe())
    }
}

impl PushConfigStore for RedisTaskStore {
    fn save_configs<'a>(
        &'a self,
        task_id: &'a str,
        configs: Vec<TaskPushNotificationConfig>,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let key = self.keys.push(task_id);
            let mut cmd = if configs.is_empty() {
                ::redis::cmd("DEL")
            } else {
                ::redis::cmd("SET")
            };
            cmd.arg(key);
            if !configs.is_empty() {
                cmd.arg(serde_json::to_string(&configs)?);
            }
            cmd.query_async::<()>(&mut self.conn().await?)
                .await
                .map_err(|e| self.broken(e))?;
            Ok(())
        })
    }

    fn load_configs<'a>(
        &'a self,
        task_id: &'a str,
    ) -> StoreFuture<'a, Vec<TaskPushNotificationConfig>> {
        Box::pin(async move {
            let json: Option<String> = ::redis::cmd("GET")
                .arg(self.keys.push(task_id))
                .query_async(&mut self.conn().await?)
                .await
                .map_err(|e| self.broken(e))?;
            Ok(match json {
                Some(json) => serde_json::from_str(&json)?,
                None => Vec::new(),
            })
        })
    }
}

#[cfg(test)]
#[path = "redis_tests.rs"]
mod tests;
