//! The log of refused callers: authentication and authorization failures, at warn level,
//! with the peer and the reason (never the credential), and rate-limited so that a flood of
//! bad requests cannot flood the log.
//!
//! The limit is a token bucket shared by a service's refusals: at most `burst` lines at once,
//! then `per_second` lines a second. A refusal past it is not logged (it is still counted in
//! `rpc.server.rejections`); the next line logged says how many were left out before it
//! (`suppressed`).

use std::sync::{Mutex, PoisonError};
use std::time::Instant;

/// The rate of refusal log lines (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefusalLogLimit {
    /// Lines a second once the burst is spent (0: only the burst, ever).
    pub per_second: u32,
    /// Lines at once.
    pub burst: u32,
}

impl Default for RefusalLogLimit {
    /// 10 lines a second, 20 at once.
    fn default() -> Self {
        RefusalLogLimit {
            per_second: 10,
            burst: 20,
        }
    }
}

/// The bucket: tokens left, when it was last filled, and the lines left out since the last
/// one logged.
#[derive(Debug)]
pub(crate) struct RefusalLog {
    limit: RefusalLogLimit,
    state: Mutex<(f64, Instant, u64)>,
}

impl RefusalLog {
    pub(crate) fn new(limit: RefusalLogLimit) -> Self {
        RefusalLog {
            limit,
            state: Mutex::new((f64::from(limit.burst), Instant::now(), 0)),
        }
    }

    /// Whether a refusal may be logged now: `Some(lines left out before it)`, or `None` (this
    /// one is left out). Only refusals pay for the lock.
    pub(crate) fn admit_line(&self) -> Option<u64> {
        self.admit_line_at(Instant::now())
    }

    fn admit_line_at(&self, now: Instant) -> Option<u64> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let (tokens, last, suppressed) = &mut *state;
        let elapsed = now.saturating_duration_since(*last).as_secs_f64();
        *tokens =
            (*tokens + elapsed * f64::from(self.limit.per_second)).min(f64::from(self.limit.burst));
        *last = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            Some(std::mem::take(suppressed))
        } else {
            *suppressed += 1;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_burst_then_the_rate_and_the_count_of_lines_left_out() {
        let log = RefusalLog::new(RefusalLogLimit {
            per_second: 2,
            burst: 3,
        });
        let t0 = Instant::now();
        let at = |ms| t0 + Duration::from_millis(ms);
        let logged: Vec<_> = (0..10).map(|_| log.admit_line_at(at(0))).collect();
        assert_eq!(&logged[..3], &[Some(0), Some(0), Some(0)]);
        assert!(logged[3..].iter().all(Option::is_none));
        // Half a second: one token back; the line says 7 were left out.
        assert_eq!(log.admit_line_at(at(500)), Some(7));
        assert_eq!(log.admit_line_at(at(500)), None);
        // Long idle: no more than the burst.
        let later: Vec<_> = (0..5).map(|_| log.admit_line_at(at(60_000))).collect();
        assert_eq!(later.iter().filter(|l| l.is_some()).count(), 3);
        assert_eq!(later[0], Some(1));
    }

    #[test]
    fn zero_rate_logs_the_burst_only() {
        let log = RefusalLog::new(RefusalLogLimit {
            per_second: 0,
            burst: 1,
        });
        let t0 = Instant::now();
        assert_eq!(log.admit_line_at(t0), Some(0));
        assert_eq!(log.admit_line_at(t0 + Duration::from_secs(3600)), None);
    }
}
