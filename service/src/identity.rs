//! Who is calling: the caller's [`Identity`], established once per connection (or per HTTP
//! request) at the transport's edge by an [`Authenticator`](crate::Authenticator). Handlers
//! read it from their [`Context`](crate::Context); the router's access rules
//! ([`Router::require`](crate::Router::require)) decide from it which methods a caller may
//! call.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

/// Who a caller is: a subject, the roles (or OAuth scopes) it holds, and the claims it was
/// established with. Cheap to clone (shared).
///
/// ```
/// use rpcwire_service::Identity;
/// let alice = Identity::new("alice").with_roles(["user", "admin"]);
/// assert!(alice.has_role("admin"));
/// assert!(alice.is_authenticated());
/// assert!(!Identity::anonymous().is_authenticated());
/// ```
#[derive(Clone, PartialEq)]
pub struct Identity(Arc<IdentityInner>);

#[derive(Clone, PartialEq)]
struct IdentityInner {
    subject: Box<str>,
    roles: Box<[Box<str>]>,
    claims: serde_json::Value,
    kind: Kind,
    /// When the credentials it was established with stop being valid.
    expires: Option<SystemTime>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Anonymous,
    Authenticated,
    /// The local process (stdio, a serial line, a child process): passes every role check.
    Local,
}

impl Identity {
    /// An authenticated identity named `subject`, with no roles yet.
    pub fn new(subject: impl Into<String>) -> Self {
        Identity::build(
            subject.into(),
            Vec::new(),
            serde_json::Value::Null,
            Kind::Authenticated,
        )
    }

    /// Nobody in particular: the identity of a caller on a transport with no authenticator.
    /// It holds no role, so a method that requires one is refused to it.
    pub fn anonymous() -> Self {
        // One shared value: every unauthenticated connection holds the same one.
        static ANONYMOUS: std::sync::OnceLock<Identity> = std::sync::OnceLock::new();
        ANONYMOUS
            .get_or_init(|| {
                Identity::build(
                    "anonymous".to_owned(),
                    Vec::new(),
                    serde_json::Value::Null,
                    Kind::Anonymous,
                )
            })
            .clone()
    }

    /// The local process at the other end of stdio, a serial line or a child process's pipes:
    /// trusted as the process itself is, so it passes every role check (a
    /// [`Router::policy`](crate::Router::policy) function still sees it and may refuse).
    pub fn local() -> Self {
        Identity::build(
            "local".to_owned(),
            Vec::new(),
            serde_json::Value::Null,
            Kind::Local,
        )
    }

    fn build(subject: String, roles: Vec<Box<str>>, claims: serde_json::Value, kind: Kind) -> Self {
        Identity(Arc::new(IdentityInner {
            subject: subject.into_boxed_str(),
            roles: roles.into_boxed_slice(),
            claims,
            kind,
            expires: None,
        }))
    }

    /// This identity with `roles` (or scopes) added.
    pub fn with_roles<I, S>(self, roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let inner = Arc::unwrap_or_clone(self.0);
        let mut all = inner.roles.into_vec();
        for role in roles {
            let role: Box<str> = role.into().into_boxed_str();
            if !all.contains(&role) {
                all.push(role);
            }
        }
        let expires = inner.expires;
        Identity::build(inner.subject.into_string(), all, inner.claims, inner.kind)
            .expiring(expires)
    }

    /// This identity with the claims it was established with (a JWT's payload, say).
    pub fn with_claims(self, claims: serde_json::Value) -> Self {
        let inner = Arc::unwrap_or_clone(self.0);
        Identity::build(
            inner.subject.into_string(),
            inner.roles.into_vec(),
            claims,
            inner.kind,
        )
        .expiring(inner.expires)
    }

    /// This identity, valid until `at` (a JWT's `exp`, say): a transport that keeps an
    /// identity for a connection's later requests ([`Authenticator::credential_header`](crate::Authenticator::credential_header)) asks
    /// its authenticator again from then on.
    pub fn with_expiry(self, at: SystemTime) -> Self {
        self.expiring(Some(at))
    }

    fn expiring(self, expires: Option<SystemTime>) -> Self {
        if self.0.expires == expires {
            return self;
        }
        let mut inner = Arc::unwrap_or_clone(self.0);
        inner.expires = expires;
        Identity(Arc::new(inner))
    }

    /// When the credentials this identity was established with stop being valid (`None`:
    /// not known to expire).
    pub fn expires(&self) -> Option<SystemTime> {
        self.0.expires
    }

    /// The subject: a user, a service, a certificate's subject.
    pub fn subject(&self) -> &str {
        &self.0.subject
    }

    /// The roles or scopes held.
    pub fn roles(&self) -> impl Iterator<Item = &str> {
        self.0.roles.iter().map(|r| &**r)
    }

    /// True when this identity holds `role` (the local process holds every role).
    pub fn has_role(&self, role: &str) -> bool {
        self.0.kind == Kind::Local || self.0.roles.iter().any(|r| &**r == role)
    }

    /// True when it holds at least one of `roles` (an empty list: true).
    pub fn has_any_role<S: AsRef<str>>(&self, roles: &[S]) -> bool {
        roles.is_empty() || roles.iter().any(|r| self.has_role(r.as_ref()))
    }

    /// The claims it was established with (`null` when none).
    pub fn claims(&self) -> &serde_json::Value {
        &self.0.claims
    }

    /// False for [`Identity::anonymous`], true otherwise.
    pub fn is_authenticated(&self) -> bool {
        self.0.kind != Kind::Anonymous
    }

    /// True for [`Identity::local`].
    pub fn is_local(&self) -> bool {
        self.0.kind == Kind::Local
    }
}

impl Default for Identity {
    fn default() -> Self {
        Identity::anonymous()
    }
}

/// The claims are left out: they may hold what a log must not show.
impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("subject", &self.0.subject)
            .field("roles", &self.0.roles)
            .field("kind", &self.0.kind)
            .field("expires", &self.0.expires)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_added_once_and_the_local_process_holds_every_role() {
        let id = Identity::new("alice")
            .with_roles(["user"])
            .with_roles(["user", "admin"]);
        assert_eq!(id.roles().collect::<Vec<_>>(), ["user", "admin"]);
        assert!(id.has_any_role(&["ops", "admin"]));
        assert!(!id.has_any_role(&["ops"]));
        assert!(Identity::local().has_role("anything"));
        assert!(!Identity::anonymous().has_role("user"));
        assert!(Identity::anonymous().has_any_role::<&str>(&[]));
    }

    #[test]
    fn debug_output_shows_no_claims() {
        let id = Identity::new("bob").with_claims(serde_json::json!({"secret": "x"}));
        assert!(!format!("{id:?}").contains("secret"));
    }
}
