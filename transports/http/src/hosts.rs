//! Which `Host` and `Origin` values a server accepts: its DNS-rebinding protection, checked
//! for every request (by [`Endpoint::refusal`](crate::profile::Endpoint::refusal) and on the
//! fast path from the head's bytes).

/// Which `Host` and `Origin` headers are accepted (DNS-rebinding protection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPolicy {
    /// Any host and origin.
    Any,
    /// Only these host names (without port; `localhost`, `127.0.0.1`, `[::1]` and the like),
    /// in `Host` and, when present, in `Origin`.
    Names(Vec<String>),
}

impl HostPolicy {
    /// `localhost`, `127.0.0.1` and `[::1]`, any port: the default.
    pub fn loopback() -> Self {
        HostPolicy::Names(vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()])
    }

    pub(crate) fn allows_host(&self, host: &str) -> bool {
        self.allows_host_bytes(host.as_bytes())
    }

    /// [`allows_host`](Self::allows_host) of a header value's bytes.
    pub(crate) fn allows_host_bytes(&self, host: &[u8]) -> bool {
        match self {
            HostPolicy::Any => true,
            HostPolicy::Names(names) => {
                let name = strip_port(host);
                // Exact first (clients send names as typed, and loopback ones are digits or
                // lower case): one comparison, before the byte-wise case folding; the first
                // bytes and lengths tell most other names apart without either.
                names.iter().any(|n| {
                    let n = n.as_bytes();
                    n.len() == name.len()
                        && n.first().map(u8::to_ascii_lowercase)
                            == name.first().map(u8::to_ascii_lowercase)
                        && (n == name || n.eq_ignore_ascii_case(name))
                })
            }
        }
    }

    pub(crate) fn allows_origin(&self, origin: &str) -> bool {
        match self {
            HostPolicy::Any => true,
            HostPolicy::Names(_) => match origin.split_once("://") {
                Some((scheme, rest)) if scheme == "http" || scheme == "https" => {
                    self.allows_host(rest.split('/').next().unwrap_or(""))
                }
                _ => false,
            },
        }
    }
}

/// `host:port` → `host` (IPv6 literals keep their brackets). Byte searches: this runs for
/// every request.
fn strip_port(host: &[u8]) -> &[u8] {
    let end = if host.first() == Some(&b'[') {
        host.iter()
            .position(|&b| b == b']')
            .map_or(host.len(), |e| e + 1)
    } else {
        host.iter().position(|&b| b == b':').unwrap_or(host.len())
    };
    host.get(..end).unwrap_or(host)
}
