//! Rate limits per caller: a token bucket for each identity (off by default; see
//! [`Service::rate_limit`](crate::Service::rate_limit)). A request over the limit is answered
//! [`RATE_LIMITED`] on stream transports (HTTP answers a single call 429 with `Retry-After`) and its
//! handler does not run; a notification over the limit is dropped.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rpcwire::ErrorCode;

use crate::caller::Caller;

/// The error code of a request over its caller's rate limit (`"Too many requests"`).
pub const RATE_LIMITED: ErrorCode = ErrorCode(-32041);

/// The message sent with [`RATE_LIMITED`].
pub const RATE_LIMITED_MESSAGE: &str = "Too many requests";

/// The default bound on callers tracked at once ([`RateLimiter::max_callers`]).
pub const DEFAULT_MAX_CALLERS: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

/// Token buckets by caller: each caller may make `burst` calls at once and `per_second` on
/// average. Callers are told apart by their identity's subject; anonymous ones by their
/// address (so that unauthenticated clients do not share one bucket). The table holds at most
/// [`max_callers`](RateLimiter::max_callers) buckets: full buckets (callers that have been
/// quiet) are let go first, and while every slot is taken by a caller still being limited, a
/// new caller is limited too.
///
/// ```
/// use std::time::Instant;
/// use rpcwire_service::RateLimiter;
/// let limiter = RateLimiter::new(1.0, 2);
/// let now = Instant::now();
/// assert!(limiter.check("alice", now).is_ok());
/// assert!(limiter.check("alice", now).is_ok());
/// assert!(limiter.check("alice", now).is_err()); // the burst is spent
/// assert!(limiter.check("bob", now).is_ok());    // another caller, another bucket
/// ```
#[derive(Debug)]
pub struct RateLimiter {
    per_second: f64,
    burst: f64,
    max_callers: usize,
    buckets: Mutex<HashMap<Box<str>, Bucket>>,
}

impl RateLimiter {
    /// `per_second` calls a second on average (at least one every hour), `burst` at once (at
    /// least 1), per caller.
    pub fn new(per_second: f64, burst: u32) -> Self {
        let per_second = if per_second.is_finite() {
            per_second.max(1.0 / 3600.0)
        } else {
            f64::MAX
        };
        RateLimiter {
            per_second,
            burst: f64::from(burst.max(1)),
            max_callers: DEFAULT_MAX_CALLERS,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// At most this many callers tracked at once (default 10 000, at least 1).
    pub fn max_callers(mut self, limit: usize) -> Self {
        self.max_callers = limit.max(1);
        self
    }

    /// How many callers are tracked now.
    pub fn tracked(&self) -> usize {
        self.buckets.lock().map_or(0, |b| b.len())
    }

    /// The key a caller is limited under.
    pub fn key(caller: &Caller) -> String {
        let identity = caller.identity();
        match (identity.is_authenticated(), caller.peer_addr()) {
            (false, Some(peer)) => format!("ip:{}", peer.ip()),
            _ => format!("sub:{}", identity.subject()),
        }
    }

    /// Takes one call from `key`'s bucket at `now`: `Err(wait)` when it is empty, with how
    /// long until the next call would be let through.
    pub fn check(&self, key: &str, now: Instant) -> Result<(), Duration> {
        let refill = |bucket: &Bucket| {
            let elapsed = now.saturating_duration_since(bucket.updated).as_secs_f64();
            (bucket.tokens + elapsed * self.per_second).min(self.burst)
        };
        let Ok(mut buckets) = self.buckets.lock() else {
            return Err(Duration::from_secs(1));
        };
        if !buckets.contains_key(key) && buckets.len() >= self.max_callers {
            // Let go of the buckets that have refilled: the same as never seen.
            buckets.retain(|_, bucket| refill(bucket) < self.burst);
            if buckets.len() >= self.max_callers {
                return Err(Duration::from_secs_f64(1.0 / self.per_second));
            }
        }
        let bucket = buckets.entry(key.into()).or_insert(Bucket {
            tokens: self.burst,
            updated: now,
        });
        let tokens = refill(bucket);
        bucket.updated = now;
        if tokens >= 1.0 {
            bucket.tokens = tokens - 1.0;
            Ok(())
        } else {
            bucket.tokens = tokens;
            Err(Duration::from_secs_f64((1.0 - tokens) / self.per_second))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Identity, Transport};

    #[test]
    fn a_bucket_refills_at_its_rate() {
        let limiter = RateLimiter::new(10.0, 3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(limiter.check("a", t0).is_ok());
        }
        let wait = limiter.check("a", t0).err();
        assert!(
            wait.is_some_and(|w| w <= Duration::from_millis(100)),
            "{wait:?}"
        );
        assert!(limiter.check("a", t0 + Duration::from_millis(100)).is_ok());
        assert!(limiter.check("a", t0 + Duration::from_millis(110)).is_err());
        // Never more than the burst, however long the caller was quiet.
        let later = t0 + Duration::from_secs(3600);
        for _ in 0..3 {
            assert!(limiter.check("a", later).is_ok());
        }
        assert!(limiter.check("a", later).is_err());
    }

    #[test]
    fn the_table_is_bounded_and_quiet_callers_make_room() {
        let limiter = RateLimiter::new(1.0, 1).max_callers(2);
        let t0 = Instant::now();
        assert!(limiter.check("a", t0).is_ok());
        assert!(limiter.check("b", t0).is_ok());
        // Both still limited: a third caller waits too, and the table does not grow.
        assert!(limiter.check("c", t0).is_err());
        assert_eq!(limiter.tracked(), 2);
        // A second later both buckets are full again: let go, room for c.
        assert!(limiter.check("c", t0 + Duration::from_secs(1)).is_ok());
        assert_eq!(limiter.tracked(), 1);
    }

    #[test]
    fn anonymous_callers_are_told_apart_by_address() {
        let peer = |port| std::net::SocketAddr::from(([127, 0, 0, 1], port));
        let anon =
            Caller::new(Identity::anonymous(), Transport::new("tcp", "tcp")).with_peer(peer(1));
        let alice =
            Caller::new(Identity::new("alice"), Transport::new("tcp", "tcp")).with_peer(peer(2));
        assert_eq!(RateLimiter::key(&anon), "ip:127.0.0.1");
        assert_eq!(RateLimiter::key(&alice), "sub:alice");
        assert_eq!(RateLimiter::key(&Caller::anonymous()), "sub:anonymous");
    }
}
