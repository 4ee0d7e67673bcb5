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
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use common::bounded;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

fn nginx() -> Option<PathBuf> {
    ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// `rpcwire serve --http` on a free loopback port, and its `host:port`.
async fn serve_http() -> (Child, String) {
    let (child, url) = common::serve_http(&[]).await;
    let host = url["http://".len()..].split('/').next().unwrap().to_owned();
    (child, host)
}

/// nginx in the foreground from `dir`; stopped with SIGQUIT (then killed) on drop.
struct Nginx {
    child: Child,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .args(["-QUIT", &pid.to_string()])
                .status();
            for _ in 0..50 {
                if matches!(self.child.try_wait(), Ok(Some(_))) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.child.start_kill();
    }
}

fn config(dir: &Path, port: u16, upstreams: &[String]) -> String {
    let servers: String = upstreams
        .iter()
        .map(|u| format!("        server {u};\n"))
        .collect();
    let d = dir.display();
    format!(
        r#"daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 512; }}
http {{
    access_log off;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;

    upstream rpcwire {{
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
}}
"#
    )
}

/// One HTTP/1.1 POST written by hand: (status, X-Upstream, body).
async fn post(host: &str, accept: &str, body: &str) -> (u16, String, String) {
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let head = format!(
        "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: {accept}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut all = Vec::new();
    stream.read_to_end(&mut all).await.unwrap();
    let text = String::from_utf8(all).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    let upstream = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("x-upstream: ")
                .map(str::to_owned)
        })
        .unwrap_or_default();
    (status, upstream, body.to_owned())
}

#[tokio::test]
async fn two_servers_behind_nginx_share_the_calls() {
    let Some(nginx) = nginx() else {
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
        let dir = std::env::temp_dir().join(format!("rpcwire-nginx-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        std::fs::write(
            dir.join("nginx.conf"),
            config(&dir, port, &[host_a.clone(), host_b.clone()]),
        )
        .unwrap();
        let child = Command::new(&nginx)
            .arg("-c")
            .arg(dir.join("nginx.conf"))
            .arg("-p")
            .arg(&dir)
            .arg("-e")
            .arg(dir.join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let _nginx = Nginx { child };
        let front = format!("127.0.0.1:{port}");
        let mut up = false;
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(&front).await.is_ok() {
                up = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(
            up,
            "nginx did not start: {:?}",
            std::fs::read_to_string(dir.join("error.log"))
        );

        let mut served: BTreeMap<String, usize> = BTreeMap::new();
        for i in 0..20 {
            let body =
                format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[{i},1],"id":{i}}}"#);
            let (status, upstream, answer) = post(&front, "application/json", &body).await;
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
        let (status, _, stream) = post(&front, "application/json, text/event-stream", body).await;
        assert_eq!(status, 200);
        let data: Vec<&str> = stream
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .collect();
        assert_eq!(data.len(), 4, "{stream}");
        assert!(data[3].contains(r#""result":3"#), "{stream}");
        drop(_nginx);
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}
