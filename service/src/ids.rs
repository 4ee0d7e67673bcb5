//! Ids a client cannot guess, for what a profile keeps for a client and finds again by id
//! (MCP's sessions, A2A's tasks), on any transport (moved here from `rpcwire-http`).

/// An id no client can guess: `prefix`, `-`, and 128 bits from the operating system's secure
/// random source as 32 hex digits; `None` when the system gives no randomness.
pub fn random_id(prefix: &str) -> Option<String> {
    use std::fmt::Write as _;
    let mut bytes = [0u8; 16];
    if let Err(e) = getrandom::fill(&mut bytes) {
        tracing::error!(error = %e, "no randomness for an id");
        return None;
    }
    let mut id = String::with_capacity(prefix.len() + 1 + 2 * bytes.len());
    id.push_str(prefix);
    id.push('-');
    for b in bytes {
        // Writing into a String cannot fail.
        let _ = write!(id, "{b:02x}");
    }
    Some(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefixed_and_random() {
        let (a, b) = (random_id("a_b"), random_id("a_b"));
        let a = a.unwrap_or_default();
        assert!(a.starts_with("a_b-") && a.len() == 4 + 32, "{a}");
        assert!(a.bytes().skip(4).all(|c| c.is_ascii_hexdigit()));
        assert_ne!(Some(a), b);
    }
}
