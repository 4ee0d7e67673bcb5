//! Running a harness under proptest (feature `proptest`): the failing case shrunk, printed as
//! a ready-to-paste regression test with the seed it was found with, and the run's coverage.

use std::cell::RefCell;
use std::fmt;

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use rpcwire::storage::Storage;

use crate::check::Seen;
use crate::firmware::{Firmware, Serve};
use crate::harness::{Harness, Target};
use crate::report::{Reproduce, CASES_VAR, SEED_VAR};
use crate::{Case, Coverage, Violation};

/// A case that broke an invariant, shrunk as far as proptest could. Its `Display` shows the
/// broken invariant, the seed to replay the run with, and the case as a `#[test]` to paste
/// into a test file ([`regression_test`](Failure::regression_test)).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Failure {
    /// The smallest failing case proptest found.
    pub case: Case,
    /// What it broke.
    pub violation: Violation,
    /// The run's seed (`RPCWIRE_TESTKIT_SEED` replays it).
    pub seed: u64,
    /// What the run reached before the failure.
    pub coverage: Coverage,
    expression: String,
}

impl Failure {
    /// The case as a `#[test]` that checks it with the harness's expression (`harness()` by
    /// default, see `Harness::reproduce_with`) and fails while the defect is there.
    pub fn regression_test(&self) -> String {
        crate::rust::test(
            &self.case,
            &self.expression,
            &self.violation.to_string(),
            Some(self.seed),
        )
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.violation)?;
        writeln!(f, "seed: {SEED_VAR}={} replays this run", self.seed)?;
        writeln!(f, "minimal failing {:?}", self.case)?;
        writeln!(
            f,
            "as a regression test (`{}` returns this harness):\n",
            self.expression
        )?;
        write!(f, "{}", self.regression_test())
    }
}

impl std::error::Error for Failure {}

/// What the proptest helpers need of a harness.
pub(crate) trait Checks {
    fn check_seen(&self, case: &Case) -> Result<Seen, Violation>;
    fn reproduce(&self) -> &Reproduce;
}

impl<T: Target> Checks for Harness<T> {
    fn check_seen(&self, case: &Case) -> Result<Seen, Violation> {
        Harness::check_seen(self, case)
    }
    fn reproduce(&self) -> &Reproduce {
        &self.reproduce
    }
}

impl<H: Serve<S, RX>, S: Storage, const RX: usize> Checks for Firmware<H, S, RX> {
    fn check_seen(&self, case: &Case) -> Result<Seen, Violation> {
        Firmware::check_seen(self, case)
    }
    fn reproduce(&self) -> &Reproduce {
        &self.reproduce
    }
}

/// The seed: the environment's, else the one set in code, else 0. `random` draws one.
fn seed(in_code: Option<u64>) -> u64 {
    let var = std::env::var(SEED_VAR).ok();
    var.as_deref().and_then(parse_seed).or(in_code).unwrap_or(0)
}

/// A seed as the environment gives it: decimal, `0x` hex, or `random`.
fn parse_seed(text: &str) -> Option<u64> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("random") {
        return Some(random_seed());
    }
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// A seed from the clock and the process (no dependency for one number).
fn random_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    // Folded to 64 bits; the process id separates runs started in the same instant.
    (nanos as u64) ^ ((nanos >> 64) as u64) ^ u64::from(std::process::id()).rotate_left(32)
}

fn rng(seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// Runs `cases` cases (or `RPCWIRE_TESTKIT_CASES`) from `strategy` through `harness`; the
/// coverage, or the first failure shrunk.
pub(crate) fn run<C: Checks>(
    harness: &C,
    strategy: impl Strategy<Value = Case>,
    cases: u32,
) -> Result<Coverage, Box<Failure>> {
    let cases = std::env::var(CASES_VAR)
        .ok()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(cases);
    let reproduce = harness.reproduce();
    let seed = seed(reproduce.seed);
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 4096,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(config, rng(seed));
    // Counted until the first failure: shrinking runs variants of one case.
    let tally = RefCell::new((Coverage::default(), false));
    let outcome = runner.run(&strategy, |case| {
        let verdict = harness.check_seen(&case);
        let mut tally = tally.borrow_mut();
        match &verdict {
            Ok(seen) if !tally.1 => tally.0.add(seen),
            Ok(_) => {}
            Err(_) => tally.1 = true,
        }
        verdict
            .map(drop)
            .map_err(|v| TestCaseError::fail(v.to_string()))
    });
    let mut coverage = tally.into_inner().0;
    coverage.finish(&reproduce.methods);
    let failure = |case: Case, violation: Violation| {
        Box::new(Failure {
            case,
            violation,
            seed,
            coverage: coverage.clone(),
            expression: reproduce.expression.clone(),
        })
    };
    match outcome {
        Ok(()) => Ok(coverage),
        Err(TestError::Fail(_, case)) => {
            let violation = match harness.check_seen(&case) {
                Err(v) => v,
                // A case that fails only sometimes: not deterministic after all.
                Ok(_) => Violation::ServerFailed {
                    error: "the case failed once and passed when run again".into(),
                },
            };
            Err(failure(case, violation))
        }
        Err(TestError::Abort(reason)) => Err(failure(
            Case::default(),
            Violation::ServerFailed {
                error: format!("proptest aborted: {reason}"),
            },
        )),
    }
}

/// [`run`], panicking with the failure; the coverage printed to stderr either way.
#[track_caller]
pub(crate) fn run_or_panic<C: Checks>(
    harness: &C,
    strategy: impl Strategy<Value = Case>,
    cases: u32,
) -> Coverage {
    match run(harness, strategy, cases) {
        Ok(coverage) => {
            eprint!("{coverage}");
            coverage
        }
        Err(failure) => {
            eprint!("{}", failure.coverage);
            panic!("{failure}");
        }
    }
}

impl<T: Target> Harness<T> {
    /// Runs `cases` cases from `strategy` and returns what they reached, or the first failure,
    /// shrunk. The seed comes from `RPCWIRE_TESTKIT_SEED` (a number, or `random`), else
    /// [`Harness::seed`], else 0; `RPCWIRE_TESTKIT_CASES` overrides `cases`. No persistence
    /// file is written.
    pub fn run_proptest(
        &self,
        strategy: impl Strategy<Value = Case>,
        cases: u32,
    ) -> Result<Coverage, Box<Failure>> {
        run(self, strategy, cases)
    }

    /// [`run_proptest`](Harness::run_proptest) for `#[test]`s: prints the coverage to stderr
    /// and returns it; panics with the failure (the seed and a regression test included).
    ///
    /// # Panics
    ///
    /// When a case breaks an invariant.
    #[track_caller]
    pub fn proptest(&self, strategy: impl Strategy<Value = Case>, cases: u32) -> Coverage {
        run_or_panic(self, strategy, cases)
    }
}

impl<H: Serve<S, RX>, S: Storage, const RX: usize> Firmware<H, S, RX> {
    /// As [`Harness::run_proptest`], for a firmware handler.
    pub fn run_proptest(
        &self,
        strategy: impl Strategy<Value = Case>,
        cases: u32,
    ) -> Result<Coverage, Box<Failure>> {
        run(self, strategy, cases)
    }

    /// As [`Harness::proptest`], for a firmware handler.
    ///
    /// # Panics
    ///
    /// When a case breaks an invariant.
    #[track_caller]
    pub fn proptest(&self, strategy: impl Strategy<Value = Case>, cases: u32) -> Coverage {
        run_or_panic(self, strategy, cases)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use proptest::strategy::ValueTree;

    fn first(seed: u64) -> u64 {
        let mut runner = TestRunner::new_with_rng(Config::default(), rng(seed));
        proptest::prelude::any::<u64>()
            .new_tree(&mut runner)
            .map_or(0, |t| t.current())
    }

    #[test]
    fn seeds_expand_to_distinct_generators() {
        assert_ne!(first(1), first(2));
        assert_eq!(first(7), first(7));
        assert_eq!(parse_seed(" 42 "), Some(42));
        assert_eq!(parse_seed("0x2a"), Some(42));
        assert_eq!(parse_seed("forty-two"), None);
        assert!(parse_seed("random").is_some());
    }
}
