//! Scale-out behind a real load balancer: two `rpcwire serve --http` processes behind nginx
//! (Debian package, installed by `.ci/install/http-interop.sh`), round-robin. Plain POST calls
//! spread over both (nginx names the upstream that served each in a response header), and a
//! call answered as an event stream (progress first) passes through unbuffered.
//!
//! The configuration is the one `transports/http/README.md` shows, in a temporary prefix.
//! Skips with a visible `SKIPPED:` line when nginx is missing, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;

use common::bounded;
use rpcwire_tests::nginx;
use tokio::process::Child;

/// `rpcwire serve --http` on a free loopback port, and its `host:port`.
async fn serve_http() -> (Child, String) {
    let (child, url) = common::serve_http(&[]).await;
    let host = url["http://".len()..].split('/').next().unwrap().to_owned();
    (child, host)
}

/// The `http { }` block: the two servers round-robin (keep-alive upstream), event streams
/// unbuffered, the upstream that answered in `X-Upstream`.
fn config(port: u16, upstreams: &[String]) -> String {
    let servers: String = upstreams
        .iter()
        .map(|u| format!("        server {u};\n"))
        .collect();
    format!(
        r#"    upstream rpcwire {{
{servers}        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{port};
        location /rpc {{
            proxy_pass http://rpcwire;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $host;
            # Event streams (progress, the GET stream) pass through as they come.
            proxy_buffering off;
            proxy_read_timeout 1h;
            add_header X-Upstream $upstream_addr always;
        }}
    }}
"#
    )
}

/// A POST to `/rpc` through nginx: (status, X-Upstream, body).
fn post(front: &str, accept: &str, body: &str) -> (u16, String, String) {
    nginx::post(front, "/rpc", &[("Accept", accept)], body)
}

#[tokio::test]
async fn two_servers_behind_nginx_share_the_calls() {
    let Some(nginx) = nginx::find() else {
        rpcwire_tests::skip("no nginx: run .ci/install/http-interop.sh");
        return;
    };
    bounded(async {
        let (_a, host_a) = serve_http().await;
        let (_b, host_b) = serve_http().await;
        // Both upstreams answer before nginx sees traffic (one probed too early is marked
        // down for 10 s).
        for host in [&host_a, &host_b] {
            tokio::net::TcpStream::connect(host.as_str()).await.unwrap();
        }
        let upstreams = [host_a.clone(), host_b.clone()];
        let proxy = nginx::start(&nginx, "nginx", |port| config(port, &upstreams));
        let front = proxy.front.clone();

        let mut served: BTreeMap<String, usize> = BTreeMap::new();
        for i in 0..20 {
            let body =
                format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[{i},1],"id":{i}}}"#);
            let (status, upstream, answer) = post(&front, "application/json", &body);
            assert_eq!(status, 200, "{answer}");
            let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
            assert_eq!(v["result"], i - 1);
            *served.entry(upstream).or_default() += 1;
        }
        assert_eq!(
            served.keys().cloned().collect::<Vec<_>>(),
            {
                let mut both = vec![host_a.clone(), host_b.clone()];
                both.sort();
                both
            },
            "both servers served calls: {served:?}"
        );
        assert!(served.values().all(|&n| n >= 5), "{served:?}");

        // Progress first, then the answer, as an event stream through the proxy.
        let body = r#"{"jsonrpc":"2.0","method":"count","params":[3],"id":1}"#;
        let (status, _, stream) = post(&front, "application/json, text/event-stream", body);
        assert_eq!(status, 200);
        let data: Vec<&str> = stream
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .collect();
        assert_eq!(data.len(), 4, "{stream}");
        assert!(data[3].contains(r#""result":3"#), "{stream}");
        drop(proxy);
    })
    .await;
}
