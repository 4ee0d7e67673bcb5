//! Which identity may call which method: the router's access rules
//! ([`Router::require`](crate::Router::require), [`Router::require_by_default`](crate::Router::require_by_default),
//! [`Router::policy`](crate::Router::policy)), checked for every request and notification before its handler
//! runs, on every transport and member by member inside a batch.

use std::collections::HashMap;
use std::sync::Arc;

use rpcwire::ErrorCode;

use crate::identity::Identity;

/// The method name OpenRPC reserves for service discovery: open to every caller, whatever
/// the access rules say (it shows each caller only what it may call).
pub const DISCOVER_METHOD: &str = "rpc.discover";

/// The error code of a request its caller may not make (`"Forbidden"`, no data): the handler
/// never ran. Chosen in the server-error range away from the codes MCP (-32002, -32020,
/// -32022), A2A (-32001 to -32009) and rpcwire itself (-32001, Server busy) use.
pub const FORBIDDEN: ErrorCode = ErrorCode(-32040);

/// The message sent with [`FORBIDDEN`]: generic on purpose (which role was missing goes to
/// the server's log at debug level, never to the caller).
pub const FORBIDDEN_MESSAGE: &str = "Forbidden";

/// A function that decides, from the caller's identity and the method name, whether a call
/// may go ahead (see [`Router::policy`](crate::Router::policy)).
pub type Policy = Arc<dyn Fn(&Identity, &str) -> bool + Send + Sync>;

/// The rules. Empty (the default) lets every caller call every method, at the cost of one
/// branch per message.
#[derive(Clone, Default)]
pub(crate) struct Access {
    /// Roles a method needs (any one of them).
    rules: HashMap<Box<str>, Box<[Box<str>]>>,
    /// Roles every method without a rule of its own needs (`rpc.discover` excepted).
    default: Option<Box<[Box<str>]>>,
    policy: Option<Policy>,
}

impl Access {
    /// True when there is no rule at all.
    pub(crate) fn is_open(&self) -> bool {
        self.rules.is_empty() && self.default.is_none() && self.policy.is_none()
    }

    pub(crate) fn require(&mut self, method: &str, roles: Box<[Box<str>]>) {
        self.rules.insert(method.into(), roles);
    }

    pub(crate) fn require_by_default(&mut self, roles: Box<[Box<str>]>) {
        self.default = Some(roles);
    }

    pub(crate) fn set_policy(&mut self, policy: Policy) {
        self.policy = Some(policy);
    }

    /// Whether `identity` may call `method`. Inlined up to the check for no rules (the usual
    /// case, asked on every call).
    #[inline]
    pub(crate) fn permits(&self, identity: &Identity, method: &str) -> bool {
        self.is_open() || self.permits_by_rules(identity, method)
    }

    #[inline(never)]
    fn permits_by_rules(&self, identity: &Identity, method: &str) -> bool {
        let roles = match self.rules.get(method) {
            Some(roles) => Some(roles),
            None if method == DISCOVER_METHOD => None,
            None => self.default.as_ref(),
        };
        let by_role = roles.is_none_or(|roles| identity.has_any_role(roles));
        by_role && self.policy.as_ref().is_none_or(|p| p(identity, method))
    }
}

/// Role lists as the rules keep them.
pub(crate) fn role_list<I, S>(roles: I) -> Box<[Box<str>]>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    roles
        .into_iter()
        .map(|r| r.into().into_boxed_str())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_policy_and_the_default_combine() {
        let mut access = Access::default();
        assert!(access.permits(&Identity::anonymous(), "anything"));
        access.require("admin.reset", role_list(["admin"]));
        access.require("open", role_list::<[&str; 0], &str>([]));
        access.require_by_default(role_list(["user", "admin"]));
        let user = Identity::new("u").with_roles(["user"]);
        let admin = Identity::new("a").with_roles(["admin"]);
        let anon = Identity::anonymous();
        assert!(!access.permits(&user, "admin.reset"));
        assert!(access.permits(&admin, "admin.reset"));
        assert!(access.permits(&user, "echo"));
        assert!(!access.permits(&anon, "echo"));
        assert!(access.permits(&anon, "open"));
        assert!(access.permits(&anon, DISCOVER_METHOD));
        assert!(access.permits(&Identity::local(), "admin.reset"));
        access.set_policy(Arc::new(|id, method| {
            !(id.is_local() && method == "admin.reset")
        }));
        assert!(!access.permits(&Identity::local(), "admin.reset"));
        assert!(access.permits(&admin, "admin.reset"));
    }
}
