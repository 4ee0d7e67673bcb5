//! The webhook client push notifications are delivered with, safe against server-side
//! request forgery by default: `http://` and `https://` URLs only (`https://` delivered with
//! the crate's `tls` feature, Mozilla's roots), the host's name resolved here and every
//! address it resolves
//! to checked ([`WebhookPolicy::allows`]: no loopback, private, link-local — the cloud
//! metadata address among them —, shared, unique-local, multicast or unspecified address,
//! unless the policy's allow-list names it), the connection made to the address checked (so
//! a second resolution cannot swap it), and redirects never followed (a 3xx is a failed
//! delivery), so no redirect can lead anywhere unchecked. Hand-written over hyper's
//! connection API: the shared HTTP client resolves names itself, after any check.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use bytes::Bytes;
use http::{header, Request, Uri};
use http_body_util::Full;
use hyper_util::rt::TokioIo;

/// Which webhook addresses deliveries may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebhookPolicy {
    allowed: Vec<IpAddr>,
}

impl WebhookPolicy {
    /// Public addresses only (the default).
    pub fn public_only() -> Self {
        WebhookPolicy::default()
    }

    /// Also `addresses`, whatever they are (a webhook on 127.0.0.1 in a test, say).
    pub fn allow(mut self, addresses: impl IntoIterator<Item = IpAddr>) -> Self {
        self.allowed.extend(addresses);
        self
    }

    /// Whether a delivery may reach `ip`: it is on the allow-list, or it is a public
    /// unicast address.
    pub fn allows(&self, ip: IpAddr) -> bool {
        self.allowed.contains(&ip) || is_public(ip)
    }
}

/// A public unicast address: none of the special-purpose ranges of RFC 6890 a request
/// from the server must not reach (nor an IPv4 one inside an IPv6 mapped or compatible
/// address).
fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, _, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_multicast()
        || ip.is_broadcast()
        || ip.is_documentation()
        || a == 0
        // Shared address space (carrier-grade NAT), 100.64.0.0/10.
        || (a == 100 && (64..128).contains(&b))
        // IETF protocol assignments, 192.0.0.0/24; benchmarking, 198.18.0.0/15.
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (b == 18 || b == 19))
        // Reserved, 240.0.0.0/4.
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        // Unique local, fc00::/7; link local, fe80::/10.
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] & 0xffc0) == 0xfe80
        // IPv4-compatible (deprecated) ::a.b.c.d, NAT64 64:ff9b::/96 and documentation
        // 2001:db8::/32: read as not public.
        || (s[0..6] == [0, 0, 0, 0, 0, 0])
        || (s[0] == 0x64 && s[1] == 0xff9b)
        || (s[0] == 0x2001 && s[1] == 0x0db8))
}

/// Why a webhook URL is refused or a delivery failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// Not an absolute `http://` or `https://` URL with a host.
    #[error("the webhook URL must be an absolute http(s):// URL: {0}")]
    BadUrl(String),
    /// The host did not resolve.
    #[error("the webhook host does not resolve: {0}")]
    Unresolved(String),
    /// The host resolves to an address the policy does not allow.
    #[error("the webhook host resolves to {0}, which deliveries may not reach")]
    Forbidden(IpAddr),
    /// The connection or the exchange failed, or took too long.
    #[error("the webhook could not be reached: {0}")]
    Unreachable(String),
    /// The webhook answered with a status other than 2xx (redirects are not followed).
    #[error("the webhook answered {0}")]
    Status(u16),
}

/// Where a webhook URL leads: the addresses to connect to, all allowed.
#[derive(Debug)]
pub(crate) struct Target {
    uri: Uri,
    host: String,
    tls: bool,
    addresses: Vec<SocketAddr>,
}

/// `url`'s URI, host (brackets removed) and port, when it is an absolute http(s) URL.
pub(crate) fn parse(url: &str) -> Result<(Uri, String, u16, bool), WebhookError> {
    let bad = || WebhookError::BadUrl(url.to_owned());
    let uri: Uri = url.parse().map_err(|_| bad())?;
    let tls = match uri.scheme_str() {
        Some("http") => false,
        Some("https") => true,
        _ => return Err(bad()),
    };
    let host = uri
        .host()
        .filter(|h| !h.is_empty())
        .ok_or_else(bad)?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    Ok((uri, host, port, tls))
}

/// A check of `url` when a config is created: its shape, and the addresses it resolves to
/// now (a name that does not resolve yet is let through: each delivery resolves and checks
/// again).
pub(crate) async fn check(url: &str, policy: &WebhookPolicy) -> Result<(), WebhookError> {
    match resolve(url, policy).await {
        Ok(_) | Err(WebhookError::Unresolved(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Resolves `url` and checks every address it leads to against `policy`.
pub(crate) async fn resolve(url: &str, policy: &WebhookPolicy) -> Result<Target, WebhookError> {
    let (uri, host, port, tls) = parse(url)?;
    let addresses: Vec<SocketAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, port)],
        Err(_) => tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|e| WebhookError::Unresolved(format!("{host}: {e}")))?
            .collect(),
    };
    if addresses.is_empty() {
        return Err(WebhookError::Unresolved(host));
    }
    // Every address: a name that resolves to a public and a private address is refused.
    if let Some(bad) = addresses.iter().find(|a| !policy.allows(a.ip())) {
        return Err(WebhookError::Forbidden(bad.ip()));
    }
    Ok(Target {
        uri,
        host,
        tls,
        addresses,
    })
}

/// POSTs `body` (JSON) to `target` with these extra `headers`, within `timeout`.
pub(crate) async fn post(
    target: &Target,
    headers: &[(http::HeaderName, http::HeaderValue)],
    body: Bytes,
    timeout: Duration,
) -> Result<(), WebhookError> {
    let exchange = async {
        let mut last = String::new();
        let mut stream = None;
        for addr in &target.addresses {
            match tokio::net::TcpStream::connect(addr).await {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = format!("{addr}: {e}"),
            }
        }
        let stream = stream.ok_or(WebhookError::Unreachable(last))?;
        let unreachable = |e: hyper::Error| WebhookError::Unreachable(e.to_string());
        let (mut sender, conn) = if target.tls {
            let tls = tls_stream(stream, &target.host).await?;
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
                .await
                .map_err(unreachable)?;
            (sender, Connection::Tls(conn))
        } else {
            let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
                .await
                .map_err(unreachable)?;
            (sender, Connection::Plain(conn))
        };
        let conn = tokio::spawn(conn.run());
        let path = target
            .uri
            .path_and_query()
            .map_or("/", http::uri::PathAndQuery::as_str);
        let authority = target
            .uri
            .authority()
            .map_or("", http::uri::Authority::as_str);
        let mut req = Request::post(path)
            .header(header::HOST, authority)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(body))
            .map_err(|e| WebhookError::BadUrl(e.to_string()))?;
        for (name, value) in headers {
            req.headers_mut().insert(name.clone(), value.clone());
        }
        let answer = sender.send_request(req).await.map_err(unreachable);
        conn.abort();
        let status = answer?.status();
        if status.is_success() {
            Ok(())
        } else {
            Err(WebhookError::Status(status.as_u16()))
        }
    };
    tokio::time::timeout(timeout, exchange)
        .await
        .unwrap_or_else(|_| Err(WebhookError::Unreachable("timed out".into())))
}

/// A TLS stream over `stream` to `host` (feature `tls`), verified with Mozilla's roots.
#[cfg(feature = "tls")]
async fn tls_stream(
    stream: tokio::net::TcpStream,
    host: &str,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, WebhookError> {
    use rustls::pki_types::ServerName;
    let unreachable = |e: String| WebhookError::Unreachable(e);
    let config = rpcwire_http::tls::default_tls().map_err(|e| unreachable(e.to_string()))?;
    let name = ServerName::try_from(host.to_owned()).map_err(|e| unreachable(e.to_string()))?;
    tokio_rustls::TlsConnector::from(config)
        .connect(name, stream)
        .await
        .map_err(|e| unreachable(e.to_string()))
}

/// Without the `tls` feature, `https://` webhooks are not delivered to.
#[cfg(not(feature = "tls"))]
async fn tls_stream(
    _: tokio::net::TcpStream,
    _: &str,
) -> Result<tokio::net::TcpStream, WebhookError> {
    Err(WebhookError::Unreachable(
        "https:// webhooks need rpcwire-a2a's `tls` feature".into(),
    ))
}

/// The stream of one exchange, kept running beside its request.
enum Connection<P, T> {
    Plain(P),
    Tls(T),
}

impl<P, T> Connection<P, T>
where
    P: std::future::Future + Send + 'static,
    T: std::future::Future + Send + 'static,
{
    async fn run(self) {
        match self {
            Connection::Plain(c) => {
                let _ = c.await;
            }
            Connection::Tls(c) => {
                let _ = c.await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_addresses_are_not_public() {
        let p = WebhookPolicy::public_only();
        for bad in [
            "127.0.0.1",
            "169.254.169.254",
            "10.0.0.1",
            "172.16.5.4",
            "192.168.1.1",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a00:1",
            "224.0.0.1",
        ] {
            let ip: IpAddr = bad.parse().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
            assert!(!p.allows(ip), "{bad}");
        }
        for good in [
            "93.184.216.34",
            "2606:2800:220:1:248:1893:25c8:1946",
            "8.8.8.8",
        ] {
            let ip: IpAddr = good.parse().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
            assert!(p.allows(ip), "{good}");
        }
        let test = p.allow([IpAddr::V4(Ipv4Addr::LOCALHOST)]);
        assert!(test.allows(IpAddr::V4(Ipv4Addr::LOCALHOST)));
        assert!(!test.allows(
            "10.0.0.1"
                .parse()
                .unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))
        ));
    }

    #[tokio::test]
    async fn urls_and_names_are_checked_after_resolution() {
        let p = WebhookPolicy::public_only();
        let refused = |r: Result<Target, WebhookError>| r.err();
        assert_eq!(
            refused(resolve("http://127.0.0.1:9/hook", &p).await),
            Some(WebhookError::Forbidden(IpAddr::V4(Ipv4Addr::LOCALHOST)))
        );
        assert!(matches!(
            refused(resolve("http://localhost:9/hook", &p).await),
            Some(WebhookError::Forbidden(_))
        ));
        assert!(matches!(
            refused(resolve("http://[::ffff:10.0.0.1]/", &p).await),
            Some(WebhookError::Forbidden(_))
        ));
        for bad in [
            "ftp://example.com/",
            "file:///etc/passwd",
            "/relative",
            "http://",
            "https://",
        ] {
            assert!(
                matches!(
                    refused(resolve(bad, &p).await),
                    Some(WebhookError::BadUrl(_))
                ),
                "{bad}"
            );
        }
        let allowed = p.allow([IpAddr::V4(Ipv4Addr::LOCALHOST)]);
        assert!(resolve("http://127.0.0.1:9/hook", &allowed).await.is_ok());
    }
}
