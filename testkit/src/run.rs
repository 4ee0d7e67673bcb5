//! Running a harness under proptest (feature `proptest`): the failing case, shrunk.

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestError, TestRunner};

use crate::harness::{Harness, Target};
use crate::{Case, Violation};

/// A case that broke an invariant, shrunk as far as proptest could.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{violation}\nminimal failing case: {case:?}")]
pub struct Failure {
    /// The smallest failing case proptest found.
    pub case: Case,
    /// What it broke.
    pub violation: Violation,
}

impl<T: Target> Harness<T> {
    /// Runs `cases` cases from `strategy` (deterministically: a fixed seed, no persistence
    /// file) and returns the first failure, shrunk.
    pub fn run_proptest(
        &self,
        strategy: impl Strategy<Value = Case>,
        cases: u32,
    ) -> Result<(), Failure> {
        let config = Config {
            cases,
            failure_persistence: None,
            max_shrink_iters: 4096,
            ..Config::default()
        };
        let mut runner = TestRunner::new_with_rng(
            config,
            proptest::test_runner::TestRng::deterministic_rng(
                proptest::test_runner::RngAlgorithm::ChaCha,
            ),
        );
        let outcome = runner.run(&strategy, |case| {
            self.check(&case)
                .map_err(|v| TestCaseError::fail(v.to_string()))
        });
        match outcome {
            Ok(()) => Ok(()),
            Err(TestError::Fail(_, case)) => {
                let violation = match self.check(&case) {
                    Err(v) => v,
                    // A case that fails only sometimes: not deterministic after all.
                    Ok(()) => Violation::ServerFailed {
                        error: "the case failed once and passed when run again".into(),
                    },
                };
                Err(Failure { case, violation })
            }
            Err(TestError::Abort(reason)) => Err(Failure {
                case: Case::default(),
                violation: Violation::ServerFailed {
                    error: format!("proptest aborted: {reason}"),
                },
            }),
        }
    }

    /// [`run_proptest`](Harness::run_proptest), panicking with the shrunk case: for `#[test]`s.
    ///
    /// # Panics
    ///
    /// When a case breaks an invariant.
    #[track_caller]
    pub fn proptest(&self, strategy: impl Strategy<Value = Case>, cases: u32) {
        if let Err(failure) = self.run_proptest(strategy, cases) {
            panic!("{failure}");
        }
    }
}
