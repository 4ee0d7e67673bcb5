//! Static API keys and bearer tokens (feature `auth`): a table of tokens, each with the
//! identity it stands for, compared in constant time.

use std::path::Path;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::auth::{AuthError, AuthFuture, Authenticator, Credentials};
use crate::identity::Identity;

/// Tokens kept as SHA-256 digests, so that every comparison is of 32 bytes whatever the
/// token's length, and the table in memory does not hold the secrets themselves.
type TokenDigest = [u8; 32];

/// The longest token accepted (longer `Authorization` values are refused before hashing).
pub const MAX_TOKEN_LEN: usize = 4096;

/// An [`Authenticator`] over a fixed table of API keys or bearer tokens.
///
/// A caller presents its token as `Authorization: Bearer <token>` (or in the header named by
/// [`StaticTokens::header`], `X-API-Key` say). The token is hashed and compared with every
/// entry of the table in constant time, so the time taken tells nothing of how close a guess
/// was. The table reads from text, one token a line:
///
/// ```text
/// # token             roles...          (an optional @subject before the roles)
/// 3f9c2d8e71b04a55    user
/// 8e1b0c7d2f6a4e99    @ops-bot admin user
/// ```
///
/// A token without `@subject` gets the subject `token-<first 8 hex digits of its SHA-256>`,
/// which is safe to log.
///
/// ```
/// use rpcwire_service::{Authenticator, Credentials, StaticTokens, Transport};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let tokens: StaticTokens = "s3cr3t-admin @root admin user\ns3cr3t-user user".parse()?;
/// let headers = [("Authorization", "Bearer s3cr3t-admin")];
/// let creds = Credentials { headers: &headers, ..Credentials::new(Transport::new("http", "tcp"), None) };
/// let id = tokens.authenticate(creds).await?;
/// assert_eq!(id.subject(), "root");
/// assert!(id.has_role("admin"));
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub struct StaticTokens {
    entries: Vec<(TokenDigest, Identity)>,
    header: Option<String>,
}

/// A line of a token table that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("token table line {line}: {reason}")]
pub struct TokenTableError {
    /// The line number, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Why a token file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// The file could not be read.
    #[error("cannot read the token file: {0}")]
    Io(#[from] std::io::Error),
    /// A line does not read.
    #[error(transparent)]
    Table(#[from] TokenTableError),
}

fn digest(token: &[u8]) -> TokenDigest {
    Sha256::digest(token).into()
}

impl StaticTokens {
    /// An empty table (every caller refused).
    pub fn new() -> Self {
        StaticTokens::default()
    }

    /// Adds `token`, standing for `identity`.
    pub fn with_token(mut self, token: &str, identity: Identity) -> Self {
        self.entries.push((digest(token.as_bytes()), identity));
        self
    }

    /// Reads the token from this header (an API key header such as `X-API-Key`) instead of
    /// `Authorization: Bearer`.
    pub fn header(mut self, name: &str) -> Self {
        // Lower-case, as `credential_header` gives it.
        self.header = Some(name.to_ascii_lowercase());
        self
    }

    /// Loads a table from a file (see the type's documentation for the format).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, TokenFileError> {
        Ok(std::fs::read_to_string(path)?.parse()?)
    }

    /// How many tokens the table holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when the table holds no token.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The identity `token` stands for. Every entry is compared, in constant time.
    pub fn lookup(&self, token: &str) -> Option<&Identity> {
        let presented = digest(token.as_bytes());
        let mut found = None;
        for (known, identity) in &self.entries {
            // No early exit: every entry costs the same whether it matches or not.
            let equal: bool = known.ct_eq(&presented).into();
            if equal && found.is_none() {
                found = Some(identity);
            }
        }
        found
    }

    fn token<'a>(&self, credentials: &Credentials<'a>) -> Result<&'a str, AuthError> {
        let token = match &self.header {
            Some(name) => {
                let value = credentials.headers.get(name).ok_or(AuthError::Missing)?;
                std::str::from_utf8(value)
                    .map_err(|_| AuthError::Malformed)?
                    .trim_matches(' ')
            }
            None => credentials.bearer()?.ok_or(AuthError::Missing)?,
        };
        if token.is_empty() || token.len() > MAX_TOKEN_LEN {
            return Err(AuthError::Malformed);
        }
        Ok(token)
    }
}

impl Authenticator for StaticTokens {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        let found = self.token(&credentials).and_then(|token| {
            self.lookup(token)
                .cloned()
                .ok_or(AuthError::Invalid("unknown token"))
        });
        Box::pin(std::future::ready(found))
    }

    /// The answer depends on the token's header alone: the table does not change.
    fn credential_header(&self) -> Option<&str> {
        Some(self.header.as_deref().unwrap_or("authorization"))
    }
}

impl std::str::FromStr for StaticTokens {
    type Err = TokenTableError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let mut table = StaticTokens::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let error = |reason| TokenTableError {
                line: n + 1,
                reason,
            };
            let mut words = line.split_whitespace();
            let token = words.next().ok_or(error("no token"))?;
            if token.len() > MAX_TOKEN_LEN {
                return Err(error("token longer than 4096 bytes"));
            }
            let mut words = words.peekable();
            let hashed = digest(token.as_bytes());
            let subject = match words.next_if(|w| w.starts_with('@')) {
                Some(at) => {
                    let name = at.trim_start_matches('@');
                    if name.is_empty() {
                        return Err(error("empty @subject"));
                    }
                    name.to_owned()
                }
                None => format!(
                    "token-{}",
                    hashed[..4]
                        .iter()
                        .map(|b| format!("{b:02x}"))
                        .collect::<String>()
                ),
            };
            if table.entries.iter().any(|(d, _)| *d == hashed) {
                return Err(error("the same token twice"));
            }
            let identity = Identity::new(subject).with_roles(words);
            table.entries.push((hashed, identity));
        }
        Ok(table)
    }
}

/// Tokens are never shown: only how many there are and whom they stand for.
impl std::fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticTokens")
            .field(
                "subjects",
                &self
                    .entries
                    .iter()
                    .map(|(_, i)| i.subject())
                    .collect::<Vec<_>>(),
            )
            .field("header", &self.header)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Transport;

    fn with_header<'a>(headers: &'a Vec<(&'a str, &'a str)>) -> Credentials<'a> {
        Credentials {
            headers,
            ..Credentials::new(Transport::new("http", "tcp"), None)
        }
    }

    #[tokio::test]
    async fn tokens_map_to_their_identities_and_others_are_refused() -> Result<(), TokenTableError>
    {
        let tokens: StaticTokens =
            "# comment\n\nadmin-tok @root admin user\nuser-tok user\n".parse()?;
        assert_eq!(tokens.len(), 2);
        let id = tokens
            .authenticate(with_header(&vec![("authorization", "Bearer admin-tok")]))
            .await;
        assert!(id
            .as_ref()
            .is_ok_and(|i| i.subject() == "root" && i.has_role("admin")));
        let id = tokens
            .authenticate(with_header(&vec![("authorization", "Bearer user-tok")]))
            .await;
        assert!(id.as_ref().is_ok_and(|i| i.subject().starts_with("token-")
            && i.has_role("user")
            && !i.has_role("admin")));
        let refused = tokens
            .authenticate(with_header(&vec![("authorization", "Bearer nope")]))
            .await;
        assert_eq!(refused, Err(AuthError::Invalid("unknown token")));
        let missing = tokens.authenticate(with_header(&vec![])).await;
        assert_eq!(missing, Err(AuthError::Missing));
        let basic = tokens
            .authenticate(with_header(&vec![("authorization", "Basic eDp5")]))
            .await;
        assert_eq!(basic, Err(AuthError::Malformed));
        let long = format!("Bearer {}", "a".repeat(MAX_TOKEN_LEN + 1));
        let long = tokens
            .authenticate(with_header(&vec![("authorization", &long)]))
            .await;
        assert_eq!(long, Err(AuthError::Malformed));
        Ok(())
    }

    #[tokio::test]
    async fn an_api_key_header_can_carry_the_token() {
        let tokens = StaticTokens::new()
            .with_token("k1", Identity::new("svc").with_roles(["user"]))
            .header("X-API-Key");
        let id = tokens
            .authenticate(with_header(&vec![("x-api-key", "k1")]))
            .await;
        assert!(id.is_ok_and(|i| i.subject() == "svc"));
        let bearer = tokens
            .authenticate(with_header(&vec![("authorization", "Bearer k1")]))
            .await;
        assert_eq!(bearer, Err(AuthError::Missing));
    }

    #[test]
    fn bad_tables_name_their_line() {
        let dup = "a user\nb user\na admin".parse::<StaticTokens>();
        assert_eq!(dup.err().map(|e| e.line), Some(3));
        let empty_subject = "a @ user".parse::<StaticTokens>();
        assert_eq!(
            empty_subject.err().map(|e| e.reason),
            Some("empty @subject")
        );
    }

    #[test]
    fn debug_shows_no_token() {
        let tokens: Result<StaticTokens, _> = "very-secret-token @x user".parse();
        let shown = format!("{tokens:?}");
        assert!(!shown.contains("very-secret-token"), "{shown}");
        assert!(shown.contains("\"x\""), "{shown}");
    }
}
