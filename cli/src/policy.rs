//! `--policy FILE`: which roles may call which method, as a small text file applied to a
//! [`Router`] with [`Router::require`] and [`Router::require_by_default`].
//!
//! ```text
//! # method     roles (any one of them)
//! subtract     user admin
//! fail         admin
//! *            user            # every method without a line of its own
//! echo                         # no roles: open to every caller
//! ```

use std::path::Path;

use rpcwire_tokio::Router;

/// A line of a policy file that does not read, or a file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("cannot read the policy file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A method named twice.
    #[error("policy line {line}: {method:?} has a line already")]
    Repeated {
        /// The line number, from 1.
        line: usize,
        /// The method.
        method: String,
    },
}

/// The rules of a policy file: `(method, roles)` in file order, `*` for the default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    rules: Vec<(String, Vec<String>)>,
}

impl Policy {
    /// Reads a policy file.
    pub fn from_file(path: &Path) -> Result<Policy, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|source| PolicyError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Policy::parse(&text)
    }

    /// Reads a policy from text.
    pub fn parse(text: &str) -> Result<Policy, PolicyError> {
        let mut rules: Vec<(String, Vec<String>)> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or_default().trim();
            let mut words = line.split_whitespace();
            let Some(method) = words.next() else {
                continue;
            };
            if rules.iter().any(|(m, _)| m == method) {
                return Err(PolicyError::Repeated {
                    line: n + 1,
                    method: method.to_owned(),
                });
            }
            rules.push((method.to_owned(), words.map(str::to_owned).collect()));
        }
        Ok(Policy { rules })
    }

    /// `router` with these rules.
    pub fn apply(&self, mut router: Router) -> Router {
        for (method, roles) in &self.rules {
            router = if method == "*" {
                router.require_by_default(roles.iter().cloned())
            } else {
                router.require(method, roles.iter().cloned())
            };
        }
        router
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcwire_tokio::Identity;

    #[test]
    fn a_policy_file_becomes_router_rules() -> Result<(), PolicyError> {
        let policy = Policy::parse("# comment\nfail admin\n* user # default\necho\n\n")?;
        let router = policy.apply(crate::demo_router());
        let user = Identity::new("u").with_roles(["user"]);
        let admin = Identity::new("a").with_roles(["admin"]);
        assert!(!router.permits(&user, "fail"));
        assert!(router.permits(&admin, "fail"));
        assert!(router.permits(&user, "subtract"));
        assert!(
            !router.permits(&admin, "subtract"),
            "the default asks for user"
        );
        assert!(router.permits(&Identity::anonymous(), "echo"));
        Ok(())
    }

    #[test]
    fn a_method_named_twice_is_refused() {
        let repeated = Policy::parse("a x\nb y\na z");
        assert!(matches!(
            repeated,
            Err(PolicyError::Repeated { line: 3, .. })
        ));
    }
}
