//! The [`RedisTaskStore`]'s event logs (its listening connection is `redis_listen`'s).
//!
//! A task's log is a Redis Stream `P:e:ID` whose entry ids are the events' ids (`0-N`), beside
//! a hash `P:l:ID` (owner, first kept id, next id). An append is one script: the log created
//! (the oldest log forgotten past [`EventLogLimits::max_tasks`]), its owner checked, the next
//! id taken, the event added with `XADD … MAXLEN` (the oldest trimmed past
//! [`EventLogLimits::max_events`]), and `ID N` published on `P:events`. A read after an id is
//! one script too (`XRANGE` from the id, exclusive), so a trim cannot slip between the log's
//! first kept id and its events.
//!
//! Streams here that follow a task another replica works on are woken by one pub/sub
//! connection per store, subscribed to `P:events` and `P:cancel` (`Watchers`); a stream reads
//! the log itself, after its last event and with its caller's identity, so a message names
//! ids only. Pub/sub rather than `XREAD BLOCK`: a blocked read holds a connection per waiting
//! stream, one subscription serves them all. While that connection is down the streams poll
//! every [`RedisOptions::poll_interval`](super::RedisOptions::poll_interval); once it is back
//! each is woken once, for what was appended meanwhile.

use std::sync::{Arc, LazyLock};

use ::redis::{Script, Value};

use super::events::may_read;
use super::redis::RedisTaskStore;
use super::redis_wire::{bytes_of, int_of, items, text_of, RedisError};
use super::{EventLog, LogWatch, LoggedEvent, StoreError, StoreFuture};
use crate::types::StreamResponse;

/// KEYS[1] the log's hash, [2] its stream, [3] `P:logs`, [4] `P:logseq`. ARGV: prefix, task
/// id, has owner (0/1), owner, event, most events, most logs, channel. The event's id; -1:
/// the log has another owner.
const APPEND: &str = r"
local P = ARGV[1]
if redis.call('EXISTS', KEYS[1]) == 0 then
  local over = redis.call('ZCARD', KEYS[3]) - tonumber(ARGV[7]) + 1
  if over > 0 then
    for _, id in ipairs(redis.call('ZRANGE', KEYS[3], 0, over - 1)) do
      redis.call('DEL', P .. ':l:' .. id, P .. ':e:' .. id)
      redis.call('ZREM', KEYS[3], id)
    end
  end
  redis.call('DEL', KEYS[2])
  redis.call('HSET', KEYS[1], 'first', 1, 'next', 1)
  if ARGV[3] == '1' then redis.call('HSET', KEYS[1], 'o', ARGV[4]) end
  redis.call('ZADD', KEYS[3], redis.call('INCR', KEYS[4]), ARGV[2])
end
local o = redis.call('HGET', KEYS[1], 'o')
if ARGV[3] == '1' then
  if o ~= ARGV[4] then return -1 end
elseif o then
  return -1
end
local id = redis.call('HINCRBY', KEYS[1], 'next', 1) - 1
redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[6], string.format('0-%d', id), 'e', ARGV[5])
local first = id + 1 - tonumber(ARGV[6])
if first > tonumber(redis.call('HGET', KEYS[1], 'first')) then
  redis.call('HSET', KEYS[1], 'first', string.format('%d', first))
end
redis.call('PUBLISH', ARGV[8], ARGV[2] .. ' ' .. string.format('%d', id))
return id
";

/// KEYS[1] the log's hash, [2] its stream. ARGV: after, most events. Nil: no log; else its
/// owner (nil: nobody), its first kept id, then entry id and event pairs.
const READ: &str = r"
local f = redis.call('HMGET', KEYS[1], 'o', 'first')
if not f[2] then return false end
local out = {f[1], f[2]}
if tonumber(ARGV[2]) > 0 then
  for _, e in ipairs(redis.call('XRANGE', KEYS[2], '(0-' .. ARGV[1], '+', 'COUNT', ARGV[2])) do
    table.insert(out, e[1])
    table.insert(out, e[2][2])
  end
end
return out
";

/// KEYS[1] the log's hash, [2] its stream. ARGV: through. How many events dropped.
const TRIM: &str = r"
local nxt = redis.call('HGET', KEYS[1], 'next')
if not nxt then return 0 end
local first = math.min(tonumber(ARGV[1]) + 1, tonumber(nxt))
if first > tonumber(redis.call('HGET', KEYS[1], 'first')) then
  redis.call('HSET', KEYS[1], 'first', string.format('%d', first))
end
return redis.call('XTRIM', KEYS[2], 'MINID', string.format('0-%d', first))
";

/// The event logs' scripts, loaded (hashed) once per process.
static LOG_SCRIPTS: LazyLock<LogScripts> = LazyLock::new(LogScripts::new);

/// The event logs' scripts.
struct LogScripts {
    append: Script,
    read: Script,
    trim: Script,
}

impl LogScripts {
    fn new() -> Self {
        LogScripts {
            append: Script::new(APPEND),
            read: Script::new(READ),
            trim: Script::new(TRIM),
        }
    }
}

/// Event ids as the scripts take them: Lua's numbers are exact to 2^53, beyond any log's.
const LARGEST_ID: u64 = 1 << 53;

/// An entry id `0-N` → N.
fn entry_id(v: &Value) -> Result<u64, RedisError> {
    text_of(v)?
        .strip_prefix("0-")
        .and_then(|n| n.parse().ok())
        .ok_or(RedisError::Unexpected("an entry id"))
}

impl EventLog for RedisTaskStore {
    fn watch(&self, task_id: &str) -> Option<LogWatch> {
        Some(self.watchers.watch(task_id))
    }

    fn last_id<'a>(&'a self, task_id: &'a str, caller: Option<&'a str>) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            let (log, _) = self.keys.log(task_id);
            let (owner, next): (Option<String>, Option<u64>) = ::redis::cmd("HMGET")
                .arg(log)
                .arg(&["o", "next"][..])
                .query_async(&mut self.conn().await?)
                .await
                .map_err(|e| self.broken(e))?;
            let next = next.ok_or(StoreError::NotFound)?;
            if !may_read(owner.as_deref(), caller) {
                return Err(StoreError::NotFound);
            }
            Ok(next.saturating_sub(1))
        })
    }

    fn append<'a>(
        &'a self,
        task_id: &'a str,
        owner: Option<&'a str>,
        event: Arc<StreamResponse>,
    ) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            let body = serde_json::to_string(&*event)?;
            let (log, stream) = self.keys.log(task_id);
            let limits = self.event_limits;
            let mut call = LOG_SCRIPTS.append.prepare_invoke();
            call.key(log)
                .key(stream)
                .key(&self.keys.logs)
                .key(&self.keys.log_seq)
                .arg(&self.keys.prefix)
                .arg(task_id)
                .arg(if owner.is_some() { "1" } else { "0" })
                .arg(owner.unwrap_or(""))
                .arg(body)
                .arg(limits.max_events.max(1))
                .arg(limits.max_tasks.max(1))
                .arg(&self.keys.events);
            let id: i64 = call
                .invoke_async(&mut self.conn().await?)
                .await
                .map_err(|e| self.broken(e))?;
            u64::try_from(id).map_err(|_| StoreError::NotOwner)
        })
    }

    fn read_after<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
        after: u64,
        max: usize,
    ) -> StoreFuture<'a, Vec<LoggedEvent>> {
        Box::pin(async move {
            let (log, stream) = self.keys.log(task_id);
            let mut call = LOG_SCRIPTS.read.prepare_invoke();
            call.key(log)
                .key(stream)
                .arg(after.min(LARGEST_ID))
                .arg(max.min(1 << 20));
            let reply: Value = call
                .invoke_async(&mut self.conn().await?)
                .await
                .map_err(|e| self.broken(e))?;
            if reply == Value::Nil {
                return Err(StoreError::NotFound);
            }
            let reply = items(reply)?;
            let [owner, first, events @ ..] = &reply[..] else {
                return Err(RedisError::Unexpected("a log").into());
            };
            let owner = bytes_of(owner).map(String::from_utf8_lossy);
            if !may_read(owner.as_deref(), caller) {
                return Err(StoreError::NotFound);
            }
            let first = u64::try_from(int_of(first)?).unwrap_or(0);
            if after.saturating_add(1) < first {
                return Err(StoreError::Trimmed);
            }
            let mut read = Vec::with_capacity(events.len() / 2);
            for pair in events.chunks(2) {
                let [id, event] = pair else {
                    return Err(RedisError::Unexpected("an event").into());
                };
                read.push(LoggedEvent {
                    id: entry_id(id)?,
                    event: Arc::new(serde_json::from_str(text_of(event)?)?),
                });
            }
            Ok(read)
        })
    }

    fn trim<'a>(&'a self, task_id: &'a str, through: u64) -> StoreFuture<'a, usize> {
        Box::pin(async move {
            let (log, stream) = self.keys.log(task_id);
            let mut call = LOG_SCRIPTS.trim.prepare_invoke();
            call.key(log).key(stream).arg(through.min(LARGEST_ID));
            let dropped: i64 = call
                .invoke_async(&mut self.conn().await?)
                .await
                .map_err(|e| self.broken(e))?;
            Ok(usize::try_from(dropped).unwrap_or(0))
        })
    }

    fn forget<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let (log, stream) = self.keys.log(task_id);
            ::redis::pipe()
                .atomic()
                .del(log)
                .del(stream)
                .zrem(&self.keys.logs, task_id)
                .query_async::<()>(&mut self.conn().await?)
                .await
                .map_err(|e| self.broken(e))?;
            Ok(())
        })
    }
}
