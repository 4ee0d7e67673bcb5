//! The HTTP/1.1 fast path, one for every server of the crate (the JSON-RPC server's
//! [`serve`](crate::serve), a profile's [`serve_profile`](crate::profile::serve_profile)):
//! each request is read in the connection's own task, with no hyper connection under it, and
//! answered in one of two lanes.
//!
//! - The plain lane ([`plain`], the JSON-RPC server's only): a POST of JSON to the served
//!   path with a `Content-Length`, from a client that accepts plain JSON alone, is read, run
//!   and answered with no HTTP machinery in between.
//! - The whole lane ([`whole`]): any other request whose body has a known length within the
//!   service's limit is read whole and answered by the service's
//!   [`handle_whole`](crate::profile::HandlesWhole::handle_whole), the same answer it gives
//!   through hyper; a streamed response is written as it comes, with no hyper buffers held.
//!
//! A request neither lane takes (HTTP/1.0, `HEAD`, `CONNECT`, `Transfer-Encoding`, `Expect`,
//! `Upgrade` or another hop-by-hop `Connection` token, a body over the limit, a head it
//! cannot parse, longer than [`MAX_HEAD`](limits::MAX_HEAD) or with more than
//! [`MAX_HEADERS`](limits::MAX_HEADERS) fields, a target that is not a path) hands the
//! connection, with the bytes already read, to hyper for the rest of its life, which answers
//! it exactly as before.
//!
//! The modules import one way: [`limits`] and [`kept_line`] at the bottom; [`auth`] (the
//! plain lane's kept callers); [`head`] (parsing); [`last_head`]; [`read`] and [`write`];
//! the lanes [`plain`] and [`whole`]; this one, the connection's loop, on top.

mod auth;
mod head;
mod kept_line;
mod last_head;
mod limits;
mod plain;
mod read;
mod whole;
mod write;

pub(crate) use plain::{Answer, NoPosts, Posts};

use std::future::Future;
use std::io;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::time::Instant;

use crate::caller::ConnectionInfo;
use crate::handles::HandlesWhole;
use crate::on_hyper::{serve_hyper_told, ConnectionError, Protocol};

use head::{parse, Parsed};
use limits::MAX_HEAD;
use plain::{Lane, Traced};
use read::{read_body, read_head, BodyRead, Rewind};

/// How a connection's fast path ended.
enum End {
    /// The peer closed, an error, or `Connection: close` answered: close the socket.
    Close,
    /// A request the fast path does not take: hyper serves the rest of the connection, from
    /// these bytes on.
    Hyper(Vec<u8>),
}

/// Serves one HTTP/1.1 connection, which `info` describes: the fast path while requests fit
/// it (the plain lane answering `posts`, when given), then hyper. Not an `async fn`: that
/// would keep a copy of each argument beside the one it moves in.
#[allow(clippy::manual_async_fn)] // see above
pub(crate) fn serve<I, S, P>(
    mut stream: I,
    service: S,
    posts: Option<Arc<P>>,
    info: ConnectionInfo,
) -> impl Future<Output = Result<(), ConnectionError>> + Send
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: HandlesWhole,
    P: Posts,
{
    async move {
        // Decided once per connection, as hyper's path decides whether to tell requests their
        // peer. Callers carry the connection's peer while spans are listened to (their
        // `network.peer.*`) and under a rate limit (the key of an anonymous caller's bucket).
        let wants_peer = service.wants_peer();
        let traced = Traced {
            info: &info,
            on: rpcwire_telemetry::spans_enabled() || wants_peer,
        };
        let told = info.is_told(wants_peer).then_some(&info);
        let end = run(&mut stream, &service, posts.as_deref(), &traced, told).await?;
        if let End::Hyper(read) = end {
            let idle = service.endpoint().idle_connection();
            // Boxed: hyper's connection state is allocated only for connections that need it.
            let io = Rewind::new(read, stream);
            Box::pin(serve_hyper_told(io, service, Protocol::Http1, idle, info)).await?;
        }
        Ok(())
    }
}

/// The connection's requests, each in its lane, until one is hyper's or the connection ends.
///
/// Not an `async fn`: that would keep a copy of each argument beside the one it moves in,
/// and every idle connection's task holds this future.
#[allow(clippy::manual_async_fn)] // see above
fn run<'a, I, S, P>(
    stream: &'a mut I,
    service: &'a S,
    posts: Option<&'a P>,
    traced: &'a Traced<'a>,
    told: Option<&'a ConnectionInfo>,
) -> impl Future<Output = io::Result<End>> + 'a
where
    I: AsyncRead + AsyncWrite + Unpin,
    S: HandlesWhole,
    P: Posts,
{
    async move {
        let mut buf: Vec<u8> = Vec::new();
        // What the plain lane reads while a call runs, and writes when requests are pipelined.
        let mut out: Vec<u8> = Vec::new();
        // When the head now in the buffer began (slowloris: a head must be whole in time).
        let mut head_since: Option<Instant> = None;
        // The idle timeout: one timer for the connection's life, moved only when it fires early
        // (see `read::wait_idle`), so that a request costs no timer registration.
        let idle_timer = tokio::time::sleep(service.endpoint().idle_connection());
        tokio::pin!(idle_timer);
        let mut idle_since = Instant::now();
        let mut lane = posts.map(Lane::new);
        loop {
            // In a block, and kept as a flag: the connection's future holds what lives across
            // its awaits.
            let (recognised, parsed) = match (&mut lane, posts) {
                (Some(lane), Some(posts)) => lane.next(posts, service.endpoint(), traced.on, &buf),
                _ => (false, parse(None, None, service.endpoint(), &buf)),
            };
            let served = match parsed {
                Parsed::Hyper => return Ok(End::Hyper(buf)),
                // While the server drains, a request is hyper's: answered 503 with
                // `Connection: close` there (one atomic load a request).
                Parsed::Plain(_) | Parsed::Whole(_)
                    if service.endpoint().shutdown().is_draining() =>
                {
                    return Ok(End::Hyper(buf))
                }
                Parsed::Partial => {
                    if buf.len() >= MAX_HEAD {
                        return Ok(End::Hyper(buf));
                    }
                    if buf.is_empty() && out.capacity() > 0 {
                        // Idle (before the first request, or between requests): nothing held but
                        // the socket, for at most the idle timeout.
                        out = Vec::new();
                    }
                    let idle_end = idle_since + service.endpoint().idle_connection();
                    let more = read_head(
                        stream,
                        &mut buf,
                        idle_timer.as_mut(),
                        idle_end,
                        &mut head_since,
                        service.endpoint().timeout(),
                    );
                    if more.await? {
                        continue;
                    }
                    return Ok(End::Close);
                }
                Parsed::Plain(ref head) => {
                    let (Some(lane), Some(posts)) = (&mut lane, posts) else {
                        return Ok(End::Close); // a plain head comes only from a plain lane
                    };
                    head_since = None;
                    let request = lane.serve(
                        stream,
                        posts,
                        service.endpoint(),
                        traced,
                        &mut buf,
                        &mut out,
                        head,
                        recognised,
                    );
                    request.await?
                }
                Parsed::Whole(head) => {
                    head_since = None;
                    // The head stays boxed while its body comes: the connection's future holds
                    // a pointer across that wait, not the request.
                    let total = head.len + head.body;
                    let deadline = Instant::now() + service.endpoint().timeout();
                    match read_body(stream, &mut buf, total, deadline).await? {
                        BodyRead::Whole => {}
                        BodyRead::Closed => return Ok(End::Close),
                        // Nothing is answered yet: hyper reads on, and the service answers
                        // as it does when a body comes too slowly (a refusal of the request
                        // itself, or 408).
                        BodyRead::TooSlow => return Ok(End::Hyper(buf)),
                    }
                    whole::serve(stream, service, told, &mut buf, head).await?
                }
            };
            match served {
                Some(now) => idle_since = now,
                None => return Ok(End::Close),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use crate::endpoint::Endpoint;
    use crate::handles::{HandlesIncoming, ResponseFuture};
    use crate::RpcService;

    use auth::{admit, kept, Admitted};
    use head::PlainRules;
    use last_head::LastHead;
    use limits::{KEEP, MAX_HEADERS};

    /// Every idle keep-alive connection keeps its `run` future (in its task) for as long as it
    /// stays open: a change that makes the future larger costs that much per connection, as a
    /// call pinned beside a `select!` once did (1 416 bytes). Raise the bound knowingly:
    /// 1 152 until a request's caller (a pointer kept through the nested answering futures,
    /// for authentication and access rules) made it 1 216, 1 240 with authentication on the
    /// fast path (the connection's remembered caller, the request's start time), 1 248
    /// with the choice of a traced batch's span, 1 256 with the last head kept to
    /// recognise the next (a pointer: `last_head`), and 1 296 with traced calls on the fast
    /// path (the connection's `Traced`, its peer's caller and the request's, and the trace
    /// headers' places in the head: 40 bytes, in place of hyper's whole connection state
    /// per traced connection); 1 240 since the lanes are futures of their own that keep
    /// nothing across two waits that one would do; 1 232 with a responder's exchange whose
    /// input channel, which few have, is boxed.
    #[tokio::test]
    async fn an_idle_connection_keeps_a_small_future() {
        let service = crate::HttpServer::new(rpcwire_tokio::Builder::new()).build();
        let (mut stream, _peer) = tokio::io::duplex(64);
        let info = ConnectionInfo::of_peer(None);
        let untraced = Traced {
            info: &info,
            on: false,
        };
        let future = run(
            &mut stream,
            &service,
            Some(&*service.inner),
            &untraced,
            None,
        );
        let size = std::mem::size_of_val(&future);
        println!("the fast path's connection future: {size} bytes");
        assert!(
            size <= 1_232,
            "the fast path's connection future is {size} bytes"
        );
    }

    /// A head recognised as the last one ([`LastHead::again`]) is the head `parse` makes of
    /// the same bytes: random heads (the usual fields in any order, a credential before or
    /// after `Content-Length`, spaces around its value), then the next request's bytes: the
    /// same, other digits (leading zeros, over the body limit, too many for a `usize`), one
    /// byte changed, added or removed anywhere, or cut anywhere; with and without an
    /// authenticator (then only the same bytes are recognised).
    #[tokio::test]
    async fn a_head_recognised_again_is_the_parse_of_its_bytes() {
        use proptest::prelude::*;
        use proptest::sample::select;
        use proptest::test_runner::{Config, TestRunner};

        let plain = crate::HttpServer::new(rpcwire_tokio::Builder::new())
            .path("/rpc")
            .build();
        let token = one_token_service();
        let max_body = plain.inner.endpoint.max_body;
        let body = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;
        let fields = (
            proptest::sample::subsequence(
                vec![
                    format!("Authorization: {TOKEN}\r\n"),
                    "Accept: application/json\r\n".to_owned(),
                    "X-Other: y\r\n".to_owned(),
                ],
                0..=3,
            )
            .prop_map(|mut lines| {
                lines.push("Host: 127.0.0.1\r\n".to_owned());
                lines.push("Content-Type: application/json\r\n".to_owned());
                lines
            })
            .prop_shuffle(),
            select(vec!["", " ", "  ", "\t"]),
            select(vec!["", " ", "\t "]),
            any::<usize>(),
        );
        let change = (
            0..6u8,
            any::<usize>(),
            any::<u8>(),
            prop_oneof![
                3 => proptest::string::string_regex("[0-9]{1,4}").expect("digits"),
                1 => proptest::string::string_regex("[0-9]{5,22}").expect("digits"),
            ],
        );
        let (hits, digits_hits) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
        let mut runner = TestRunner::new(Config {
            cases: 3_000,
            failure_persistence: None,
            ..Config::default()
        });
        let result = runner.run(
            &(fields, change, any::<bool>()),
            |((lines, lead, trail, at), (how, place, byte, digits), with_token)| {
                let service = if with_token { &token } else { &plain };
                let mut lines = lines;
                let length = format!("Content-Length:{lead}{}{trail}\r\n", body.len());
                lines.insert(at % (lines.len() + 1), length);
                let head = format!("POST /rpc HTTP/1.1\r\n{}\r\n", lines.concat());
                let first = [head.as_bytes(), body.as_bytes()].concat();
                let Parsed::Plain(parsed) = parse_for(service, false, None, &first) else {
                    // Without a host or a type, say: hyper's, never kept.
                    return Ok(());
                };
                let mut last = LastHead::new(&first, parsed);
                let (from, to) = (parsed.length.0 as usize, parsed.length.1 as usize);
                let length = body.len().to_string();
                prop_assert_eq!(&first[from..to], length.as_bytes());
                let mut next = first.clone();
                match how {
                    0 => {}
                    1 => {
                        next.splice(from..to, digits.bytes());
                    }
                    2 => next[place % first.len()] = byte,
                    3 => next.insert(place % (first.len() + 1), byte),
                    4 => {
                        next.remove(place % first.len());
                    }
                    _ => next.truncate(place % first.len()),
                }
                let any_length = !with_token;
                let Some(again) = last.again(&next, max_body, any_length) else {
                    // The same head, or (without an authenticator) other digits that fit,
                    // is recognised.
                    let fits =
                        digits.len() <= 19 && digits.parse::<usize>().is_ok_and(|n| n <= max_body);
                    prop_assert!(how != 0, "the same head");
                    prop_assert!(!(how == 1 && any_length && fits), "{digits}");
                    return Ok(());
                };
                hits.set(hits.get() + 1);
                digits_hits.set(digits_hits.get() + usize::from(how == 1 && next != first));
                let Parsed::Plain(reparsed) = parse_for(service, false, None, &next) else {
                    panic!("recognised, but not the fast path's: {next:?}");
                };
                prop_assert_eq!(again, reparsed);
                // Recognised with an authenticator: the very same bytes.
                prop_assert!(any_length || next[..again.len] == first[..parsed.len]);
                Ok(())
            },
        );
        result.expect("recognised heads are parsed alike");
        let (hits, digits_hits) = (hits.get(), digits_hits.get());
        assert!(hits > 1_000 && digits_hits > 100, "{hits} {digits_hits}");
    }

    /// Lets in `Bearer ` and the token below, from `Authorization` alone.
    struct OneToken;

    const TOKEN: &str =
        "Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJiZW5jaCJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ";

    impl rpcwire_tokio::Authenticator for OneToken {
        fn authenticate<'a>(
            &'a self,
            credentials: rpcwire_tokio::Credentials<'a>,
        ) -> rpcwire_tokio::AuthFuture<'a> {
            let found = match credentials.bearer() {
                Ok(Some(t)) if t == &TOKEN[7..] => Ok(rpcwire_tokio::Identity::new("one")),
                Ok(_) => Err(rpcwire_tokio::AuthError::Missing),
                Err(e) => Err(e),
            };
            Box::pin(std::future::ready(found))
        }

        fn credential_header(&self) -> Option<&str> {
            Some("authorization")
        }
    }

    /// A traced connection's fast path serves a call carrying a W3C trace context: its caller
    /// gets the `traceparent` and `tracestate` values and the connection's peer (what its
    /// span's parent and `network.peer.*` come from), with and without a kept credential line
    /// before them; an untraced connection reads neither header; a repeated `traceparent`
    /// is hyper's.
    #[tokio::test]
    async fn a_traced_connection_serves_its_trace_context_on_the_fast_path() {
        const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let router = rpcwire_tokio::Router::new().method_with_context(
            "whoami",
            |cx: rpcwire_tokio::Context, _: Option<serde_json::Value>| async move {
                let caller = cx.caller();
                Ok::<_, rpcwire_tokio::RpcError>(serde_json::json!([
                    caller.trace_context().map(|t| t.traceparent()),
                    caller.trace_context().and_then(|t| t.tracestate()),
                    caller.peer_addr().map(|p| p.to_string()),
                ]))
            },
        );
        let service = crate::HttpServer::new(rpcwire_tokio::Builder::new().router(router))
            .path("/rpc")
            .build();
        let peer: std::net::SocketAddr = "127.0.0.1:4242".parse().unwrap();
        let body = r#"{"jsonrpc":"2.0","method":"whoami","id":1}"#;
        // The connection's answer to `extra` header lines, and how the fast path ended.
        let served = |traced: Traced<'static>, extra: String| {
            let service = service.clone();
            async move {
                let (mut client, mut server) = tokio::io::duplex(1 << 16);
                let head = format!(
                    "POST /rpc HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
                     {extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                client.write_all(head.as_bytes()).await.unwrap();
                let posts = Some(&*service.inner);
                let end = run(&mut server, &service, posts, &traced, None)
                    .await
                    .unwrap();
                drop(server);
                let mut answer = String::new();
                client.read_to_string(&mut answer).await.unwrap();
                let json = answer.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
                (matches!(end, End::Close), json)
            }
        };
        let result = |json: &str| -> serde_json::Value {
            serde_json::from_str::<serde_json::Value>(json).unwrap()["result"].clone()
        };
        // What the accept loop told, for the whole test (the served futures borrow it).
        let with_peer: &'static ConnectionInfo =
            Box::leak(Box::new(ConnectionInfo::of_peer(Some(peer))));
        let without_peer: &'static ConnectionInfo =
            Box::leak(Box::new(ConnectionInfo::of_peer(None)));
        let traced = || Traced {
            info: with_peer,
            on: true,
        };
        let with_context = format!("traceparent: {TP}\r\nTraceState: a=1\r\n");
        let (fast, json) = served(traced(), with_context.clone()).await;
        assert!(fast, "the fast path answered: {json}");
        assert_eq!(
            result(&json),
            serde_json::json!([TP, "a=1", "127.0.0.1:4242"])
        );
        // Without a peer (a connection handed to `serve_connection`): the context alone.
        let (fast, json) = served(
            Traced {
                info: without_peer,
                on: true,
            },
            with_context.clone(),
        )
        .await;
        assert!(fast);
        assert_eq!(result(&json), serde_json::json!([TP, "a=1", null]));
        // Untraced: neither is read.
        let untraced = Traced {
            info: with_peer,
            on: false,
        };
        let (fast, json) = served(untraced, with_context).await;
        assert!(fast);
        assert_eq!(result(&json), serde_json::json!([null, null, null]));
        // Traced, no context: the peer alone.
        let (fast, json) = served(traced(), String::new()).await;
        assert!(fast);
        assert_eq!(
            result(&json),
            serde_json::json!([null, null, "127.0.0.1:4242"])
        );
        // Twice: not the plain lane's; the whole lane answers it as hyper's path does, the
        // context ignored (this connection tells its requests nothing).
        let (fast, json) = served(
            traced(),
            format!("traceparent: {TP}\r\ntraceparent: {TP}\r\n"),
        )
        .await;
        assert!(fast);
        assert_eq!(result(&json), serde_json::json!([null, null, null]));
    }

    /// A service at `/rpc` with [`OneToken`].
    fn one_token_service() -> RpcService {
        crate::HttpServer::new(
            rpcwire_tokio::Builder::new().map_service(|s| s.authenticator(OneToken)),
        )
        .path("/rpc")
        .build()
    }

    /// A connection's caller let in by the token, from `head`.
    async fn token_kept(head: &str) -> Option<Box<Admitted>> {
        let mut admitted = None;
        let (head, token) = (head.as_bytes(), Some(TOKEN.as_bytes()));
        let service = rpcwire_service::Service::client_only().authenticator(OneToken);
        admit(&service, &mut admitted, None, head, token, Instant::now())
            .await
            .expect("let in");
        admitted
    }

    /// `parse` of `buf` for `service`'s plain lane.
    fn parse_for(
        service: &RpcService,
        traced: bool,
        admitted: Option<&mut Admitted>,
        buf: &[u8],
    ) -> Parsed {
        let inner = &*service.inner;
        let rules = PlainRules {
            path: inner.path(),
            credential: inner.credential_header(),
            traced,
        };
        parse(Some(rules), admitted, service.endpoint(), buf)
    }

    /// What `parse` made of a head, comparable: the credential as its bytes.
    #[derive(Debug, PartialEq)]
    enum Seen {
        Partial,
        Whole(usize, usize, bool),
        Hyper,
        Fast(usize, usize, bool, Option<Vec<u8>>),
    }

    fn seen(parsed: Parsed, buf: &[u8]) -> (Seen, Option<usize>) {
        match parsed {
            Parsed::Partial => (Seen::Partial, None),
            Parsed::Whole(w) => (Seen::Whole(w.len, w.body, w.close), None),
            Parsed::Hyper => (Seen::Hyper, None),
            Parsed::Plain(h) => {
                let value = h.credential(buf).map(<[u8]>::to_vec);
                (Seen::Fast(h.len, h.body, h.close, value), h.left_out())
            }
        }
    }

    /// A head parsed without the kept credential's line is parsed as the whole head is:
    /// random heads whose lines are the kept credential (in any case, with any spaces),
    /// nearly it (a byte changed, added or removed, a control byte, NUL, CR, LF, an obsolete
    /// fold, trailing space inside or after it), other fields, repeated or broken lines, cut
    /// anywhere, get the same outcome from `parse` with the kept caller as without it, and
    /// the handlers' header map of a head parsed without the line is the whole head's.
    #[tokio::test]
    async fn heads_parsed_without_the_kept_line_are_parsed_alike() {
        use proptest::prelude::*;
        use proptest::sample::select;
        use proptest::test_runner::{Config, TestRunner};

        let service = one_token_service();
        let first = format!("POST /rpc HTTP/1.1\r\nAuthorization: {TOKEN}\r\n\r\n");
        let admitted = token_kept(&first).await;

        let body = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;
        let bytes = |s: &str| s.as_bytes().to_vec();
        let line = |n: &str, v: &[u8]| [n.as_bytes(), b":", v, b"\r\n"].concat();
        let token = || bytes(TOKEN);
        let fields = vec![
            line("Host", b" 127.0.0.1"),
            line("Content-Type", b" application/json"),
            line("Content-Length", format!(" {}", body.len()).as_bytes()),
            line("Content-Length", b" 1"),
            line("Accept", b" application/json"),
            line("Connection", b" close"),
            line("X-Trace", b" abc"),
            line("Authorization", &[b" ", &token()[..]].concat()),
            line("authorization", &[b"\t \t", &token()[..]].concat()),
            line("AUTHORIZATION", &[b"", &token()[..]].concat()),
            line("Authorization", &[b" ", &token()[..], b" "].concat()),
            line("Authorization", b" Bearer other"),
            line("Authorization ", &[b" ", &token()[..]].concat()),
            line("X-Authorization", &[b" ", &token()[..]].concat()),
            b" folded\r\n".to_vec(),
            b"\tfolded\r\n".to_vec(),
            b"Bad Name: x\r\n".to_vec(),
            // Longer than what is copied after the kept line.
            line("X-Long", "y".repeat(KEEP + 100).as_bytes()),
            // With the kept line: one field more than the fast path parses.
            (0..MAX_HEADERS - 3)
                .flat_map(|i| line(&format!("X-{i}"), b" y"))
                .collect(),
            [b"Authorization: ", &token()[..], b"\n"].concat(),
            // A trace context (read on traced connections): its places move with the line.
            line(
                "traceparent",
                b" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            ),
            line("TraceState", b" a=1,b=2"),
        ];
        let n = fields.len();
        // `run` takes an `Fn`.
        let admitted = std::cell::RefCell::new(admitted);
        let (left_outs, fasts) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
        let head = (
            select(vec![
                "POST /rpc HTTP/1.1",
                "POST /rpc HTTP/1.1",
                "POST /rpc HTTP/1.1",
                "POST /rpc HTTP/1.1",
                "POST /rpc HTTP/1.0",
                "GET /rpc HTTP/1.1",
                "POST /x HTTP/1.1",
                "\r\nPOST /rpc HTTP/1.1",
            ]),
            // Which of the usual fields (host, type, length) are left out, one time in ten.
            proptest::collection::vec(proptest::bool::weighted(0.1), 3),
            // Other lines, and where they go: the kept credential's as it may stand, often.
            proptest::collection::vec(
                (
                    select((3..n).chain([7, 7, 8, 9, 7, 7, 8, 9]).collect::<Vec<_>>()),
                    any::<usize>(),
                ),
                1..4,
            ),
            // A change to one line: (which line, where, how, the byte).
            proptest::option::weighted(
                0.3,
                (
                    any::<usize>(),
                    any::<usize>(),
                    0..3u8,
                    select(vec![
                        0u8, b'\t', b'\r', b'\n', b' ', 0x01, 0x7f, 0x80, 0xff, b'x', b'.', b':',
                    ]),
                ),
            ),
            proptest::bool::weighted(0.2),
            any::<usize>(),
            proptest::bool::weighted(0.2),
        );
        let mut runner = TestRunner::new(Config {
            cases: 4_000,
            failure_persistence: None,
            ..Config::default()
        });
        runner
            .run(
                &head,
                |(request_line, omit, extra, change, cut, at, kept_in_body)| {
                    let mut lines: Vec<Vec<u8>> = (0..3)
                        .filter(|&i| !omit[i])
                        .map(|i| fields[i].clone())
                        .collect();
                    for (i, place) in extra {
                        let place = place % (lines.len() + 1);
                        lines.insert(place, fields[i].clone());
                    }
                    if let (Some((which, pos, how, b)), false) = (change, lines.is_empty()) {
                        let count = lines.len();
                        let l = &mut lines[which % count];
                        let pos = pos % l.len();
                        match how {
                            0 => l[pos] = b,
                            1 => l.insert(pos, b),
                            _ => {
                                l.remove(pos);
                            }
                        }
                    }
                    let mut buf = [request_line.as_bytes(), b"\r\n"].concat();
                    for l in &lines {
                        buf.extend_from_slice(l);
                    }
                    buf.extend_from_slice(b"\r\n");
                    if kept_in_body {
                        // The kept line right after the head: not the head's.
                        buf.extend_from_slice(&fields[7]);
                    }
                    buf.extend_from_slice(body.as_bytes());
                    if cut {
                        buf.truncate(at % (buf.len() + 1));
                    }
                    let mut admitted = admitted.borrow_mut();
                    let whole = parse_for(&service, true, None, &buf);
                    let with = parse_for(&service, true, admitted.as_deref_mut(), &buf);
                    // The trace context's values, found in the whole buffer either way.
                    let trace = |parsed: &Parsed| match parsed {
                        Parsed::Plain(h) => {
                            let (parent, state) = h.trace_context(&buf);
                            Some((parent.map(<[u8]>::to_vec), state.map(<[u8]>::to_vec)))
                        }
                        _ => None,
                    };
                    prop_assert_eq!(trace(&with), trace(&whole));
                    let whole = seen(whole, &buf);
                    let left_out = matches!(&with, Parsed::Plain(h) if h.left_out.is_some());
                    let (head_len, credential) = match &with {
                        Parsed::Plain(h) => (h.len, h.credential(&buf)),
                        _ => (0, None),
                    };
                    let with = seen(with, &buf);
                    prop_assert_eq!(&with.0, &whole.0, "{:?}", String::from_utf8_lossy(&buf));
                    fasts.set(fasts.get() + usize::from(matches!(with.0, Seen::Fast(..))));
                    left_outs.set(left_outs.get() + usize::from(left_out));
                    if left_out {
                        // The value is the kept one, and the handlers see the whole head's fields.
                        let Seen::Fast(_, _, _, Some(value)) = &with.0 else {
                            panic!("a credential");
                        };
                        prop_assert_eq!(&value[..], TOKEN.as_bytes());
                        let renew = match with.1 {
                            Some(at) => auth::Renew::WithoutLine(at),
                            None => auth::Renew::Whole,
                        };
                        prop_assert!(kept(
                            &mut admitted,
                            &buf[..head_len],
                            credential,
                            renew,
                            Instant::now()
                        ));
                        let caller = admitted.as_deref().expect("kept").caller();
                        let map = caller.meta::<http::HeaderMap>().expect("headers");
                        let expected = auth::header_map(&buf[..head_len], None);
                        prop_assert_eq!(map, &expected);
                        let order = |m: &http::HeaderMap| {
                            m.iter()
                                .map(|(n, v)| (n.clone(), v.clone()))
                                .collect::<Vec<_>>()
                        };
                        prop_assert_eq!(order(map), order(&expected));
                    }
                    Ok(())
                },
            )
            .unwrap();
        // The cases cover both ways (about a fifth of them taken, about a third of those
        // parsed without the line).
        println!(
            "{} taken, {} without the line",
            fasts.get(),
            left_outs.get()
        );
        assert!(left_outs.get() >= 150 && fasts.get() > left_outs.get());
    }

    /// A kept line where the last head had it but after this head's end is not this head's
    /// (the head is parsed whole, its credential missing).
    #[tokio::test]
    async fn a_kept_line_after_the_head_is_not_in_it() {
        let service = one_token_service();
        let line = format!("Authorization: {TOKEN}\r\n");
        let head = format!(
            "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: 2\r\nX-Pad: 0123456789ab\r\n{line}\r\n[]"
        );
        let mut admitted = token_kept(&head).await;
        let Parsed::Plain(h) = parse_for(&service, false, admitted.as_deref_mut(), head.as_bytes())
        else {
            panic!("taken");
        };
        assert!(
            h.left_out.is_some(),
            "the line is found (and its place kept)"
        );
        // The same place, now in the body of a shorter head (a body of three digits' length).
        let filler = format!("{}\n", "x".repeat(16));
        let body = format!("{filler}{line}[]");
        let short = format!(
            "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        assert_eq!(short.find("Authorization"), head.find("Authorization"));
        let with = seen(
            parse_for(&service, false, admitted.as_deref_mut(), short.as_bytes()),
            short.as_bytes(),
        );
        let whole = seen(
            parse_for(&service, false, None, short.as_bytes()),
            short.as_bytes(),
        );
        assert_eq!(with, whole);
        assert_eq!(
            with.0,
            Seen::Fast(short.len() - body.len(), body.len(), false, None)
        );
    }

    #[derive(Clone)]
    struct Refuses(Endpoint);

    impl HandlesIncoming for Refuses {
        fn handle_incoming(&self, _: http::Request<hyper::body::Incoming>) -> ResponseFuture {
            Box::pin(async { crate::response::status(http::StatusCode::NOT_FOUND) })
        }
    }

    impl HandlesWhole for Refuses {
        fn endpoint(&self) -> &Endpoint {
            &self.0
        }

        fn handle_whole(&self, _: http::Request<crate::Body>) -> ResponseFuture {
            Box::pin(async { crate::response::status(http::StatusCode::NOT_FOUND) })
        }
    }

    /// Every open event stream keeps its connection's future (in its task) for as long as it
    /// is open: a change that makes it larger costs that much per stream. Raise the bound
    /// knowingly: 1 728 bytes while `respond` took the response itself (an `async fn` keeps its
    /// arguments) and the request head stayed unboxed across the body's read; 1 240 since, and
    /// 1 208 since the fast path is one for every server (its lanes futures of their own), and
    /// 1 216 since an `Endpoint` holds the drain's handle (this test's service holds its
    /// endpoint by value; the servers' own keep theirs behind a pointer).
    #[test]
    fn an_open_stream_keeps_a_small_connection_future() {
        let service = Refuses(endpoint());
        let (stream, _peer) = tokio::io::duplex(64);
        let info = ConnectionInfo::of_peer(None);
        let future = serve(stream, service, None::<Arc<NoPosts>>, info);
        let size = std::mem::size_of_val(&future);
        println!("a profile's connection future: {size} bytes");
        assert!(
            size <= 1_216,
            "a profile's connection future is {size} bytes"
        );
    }

    fn endpoint() -> Endpoint {
        let mut e = Endpoint::new(std::time::Duration::from_secs(1), 1);
        e.set_max_body(1024);
        e
    }
}
