//! What a run reports besides its verdict: how to reproduce a failure (the seed, the
//! expression of a printed regression test) and what the traffic reached ([`Coverage`]).

// Failures and coverage are reported by the proptest helpers only (feature `proptest`).
#![cfg_attr(not(feature = "proptest"), allow(dead_code))]

use std::collections::BTreeMap;
use std::fmt;

use crate::check::Seen;

/// The environment variable giving a run's seed: a number (decimal or `0x` hex), or
/// `random` for a new one each run. A failure prints the seed it was found with.
pub const SEED_VAR: &str = "RPCWIRE_TESTKIT_SEED";

/// The environment variable overriding the number of cases of a run (more for a long
/// search, fewer while working on the harness).
pub const CASES_VAR: &str = "RPCWIRE_TESTKIT_CASES";

/// How a harness's failures are reproduced, and the names it knows.
#[derive(Debug, Clone)]
pub(crate) struct Reproduce {
    /// The expression a printed regression test calls `.check(&case)` on.
    pub(crate) expression: String,
    /// The seed set in code (the environment's comes first).
    pub(crate) seed: Option<u64>,
    /// The service's method and notification names, for [`Coverage::never_called`].
    pub(crate) methods: Vec<String>,
}

impl Reproduce {
    pub(crate) fn new(expression: &str) -> Self {
        Reproduce {
            expression: expression.to_owned(),
            seed: None,
            methods: Vec::new(),
        }
    }
}

/// What the random traffic of a run reached: the methods the service was called with, the
/// answers it gave, the batch sizes sent. `Harness::proptest` prints it after a run (shown
/// with `cargo test -- --nocapture`); `run_proptest` returns it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Coverage {
    /// Cases run (before the first failure, if any).
    pub cases: u64,
    /// Requests that reached the service, by method.
    pub requests: BTreeMap<String, u64>,
    /// Notifications that reached the service, by method.
    pub notifications: BTreeMap<String, u64>,
    /// Answers with a result.
    pub results: u64,
    /// Error answers, by code (the core's own included: parse errors, Invalid Request).
    pub errors: BTreeMap<i64, u64>,
    /// Batches sent, by length (empty and refused ones included).
    pub batch_sizes: BTreeMap<usize, u64>,
    /// The service's names the traffic never called (when the harness knows them:
    /// `Harness::new` takes them from the router, `Firmware::methods` from you).
    pub never_called: Vec<String>,
    /// Calls to names the service does not have (counted here, not by name, when the harness
    /// knows the service's names).
    pub unknown: u64,
}

impl Coverage {
    /// Counts one case's traffic.
    pub(crate) fn add(&mut self, seen: &Seen) {
        self.cases += 1;
        for (method, request) in &seen.calls {
            let table = if *request {
                &mut self.requests
            } else {
                &mut self.notifications
            };
            *table.entry(method.clone()).or_default() += 1;
        }
        for answer in &seen.answers {
            match answer {
                None => self.results += 1,
                Some(code) => *self.errors.entry(*code).or_default() += 1,
            }
        }
        for &len in &seen.batch_sizes {
            *self.batch_sizes.entry(len).or_default() += 1;
        }
    }

    /// Notes which of `names` were never called, and folds the calls to other names into
    /// [`unknown`](Coverage::unknown).
    pub(crate) fn finish(&mut self, names: &[String]) {
        if names.is_empty() {
            return;
        }
        self.never_called = names
            .iter()
            .filter(|n| !self.requests.contains_key(*n) && !self.notifications.contains_key(*n))
            .cloned()
            .collect();
        for table in [&mut self.requests, &mut self.notifications] {
            table.retain(|name, n| {
                let known = names.contains(name);
                if !known {
                    self.unknown += *n;
                }
                known
            });
        }
    }
}

fn counts<K: fmt::Display>(table: &BTreeMap<K, u64>) -> String {
    if table.is_empty() {
        return "none".into();
    }
    table
        .iter()
        .map(|(k, n)| format!("{k} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for Coverage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "coverage over {} cases:", self.cases)?;
        writeln!(f, "  requests:      {}", counts(&self.requests))?;
        writeln!(f, "  notifications: {}", counts(&self.notifications))?;
        writeln!(f, "  results:       {}", self.results)?;
        writeln!(f, "  errors:        {}", counts(&self.errors))?;
        writeln!(f, "  batch sizes:   {}", counts(&self.batch_sizes))?;
        if self.unknown > 0 {
            writeln!(f, "  unknown names: {} calls", self.unknown)?;
        }
        if !self.never_called.is_empty() {
            writeln!(f, "  never called:  {}", self.never_called.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_calls_answers_and_batches() {
        let mut c = Coverage::default();
        c.add(&Seen {
            calls: vec![("add".into(), true), ("log".into(), false)],
            answers: vec![None, Some(-32601), Some(-32601)],
            batch_sizes: vec![2, 0],
        });
        c.finish(&["add".into(), "log".into(), "sub".into()]);
        assert_eq!(c.results, 1);
        assert_eq!(c.errors.get(&-32601), Some(&2));
        assert_eq!(c.never_called, ["sub"]);
        c.add(&Seen {
            calls: vec![("nope".into(), true)],
            ..Seen::default()
        });
        c.finish(&["add".into()]);
        // `log` is not among the names this time either.
        assert_eq!((c.unknown, c.requests.len()), (2, 1));
        let text = c.to_string();
        assert!(text.contains("requests:      add ×1"), "{text}");
        assert!(text.contains("batch sizes:   0 ×1, 2 ×1"), "{text}");
    }
}
