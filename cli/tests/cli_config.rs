//! `rpcwire serve --config FILE`: a server from a TOML file behaves as the same server from
//! its flags (the same answers, statuses and refusals to the same requests), a flag on the
//! command line overrides its key, and a bad file is refused with the key named.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{bounded, http, spawn_serve};

const TOKEN: &str = "config-token-51ab";

/// A directory with a tokens file and a policy file, and their paths.
fn files(name: &str) -> (std::path::PathBuf, String, String) {
    let dir = std::env::temp_dir().join(format!("rpcwire-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, format!("{TOKEN} @alice user\n")).unwrap();
    let policy = dir.join("policy");
    std::fs::write(&policy, "subtract\necho\nfail admin\n").unwrap();
    (
        dir,
        tokens.to_str().unwrap().to_owned(),
        policy.to_str().unwrap().to_owned(),
    )
}

/// `rpcwire serve ARGS` and its URL.
async fn serve(args: &[&str]) -> (tokio::process::Child, String) {
    let (child, mut lines) = spawn_serve(args);
    let url = loop {
        let line = lines.next_line().await.unwrap().expect("a line on stderr");
        let last = line.rsplit(' ').next().unwrap_or_default().to_owned();
        if last.starts_with("http://") {
            break last;
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

/// The answers of a server to the same requests: status and body of each.
async fn answers(url: &str) -> Vec<(u16, String)> {
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"echo","params":["{}"],"id":4}}"#,
        "x".repeat(3000)
    );
    let mut out = Vec::new();
    for (headers, body) in [
        (
            "",
            r#"{"jsonrpc":"2.0","method":"subtract","params":[5,3],"id":1}"#.to_owned(),
        ),
        (
            auth.as_str(),
            r#"{"jsonrpc":"2.0","method":"subtract","params":[5,3],"id":2}"#.to_owned(),
        ),
        (
            auth.as_str(),
            r#"{"jsonrpc":"2.0","method":"fail","id":3}"#.to_owned(),
        ),
        (auth.as_str(), big),
    ] {
        out.push(http("POST", url, headers, &body).await);
    }
    out.push(http("GET", &url.replace("/rpc", "/elsewhere"), &auth, "").await);
    out
}

#[tokio::test]
async fn a_config_file_serves_as_its_flags_do() {
    bounded(async {
        let (dir, tokens, policy) = files("config-same");
        let flags = [
            "--http",
            "127.0.0.1:0",
            "--tokens",
            &tokens,
            "--policy",
            &policy,
            "--max-frame",
            "2000",
            "--rate-limit",
            "1000",
            "--path",
            "/rpc",
        ];
        let config = dir.join("serve.toml");
        std::fs::write(
            &config,
            format!(
                "http = \"127.0.0.1:0\"\ntokens = \"{tokens}\"\npolicy = \"{policy}\"\n\
                 max-frame = 2000\nrate_limit = 1000\npath = \"/rpc\"\n"
            ),
        )
        .unwrap();
        let (_a, by_flags) = serve(&flags).await;
        let (_b, by_file) = serve(&["--config", config.to_str().unwrap()]).await;
        let (a, b) = (answers(&by_flags).await, answers(&by_file).await);
        assert_eq!(a, b);
        // And what they agree on is the configured server, not a default one.
        assert_eq!(a[0].0, 401, "{a:?}");
        assert!(a[1].1.contains(r#""result":2"#), "{a:?}");
        assert!(a[2].1.contains("-32040"), "{a:?}");
        assert_ne!(a[3].0, 200, "a body over --max-frame: {a:?}");
        assert_eq!(a[4].0, 404, "{a:?}");
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

#[tokio::test]
async fn a_flag_overrides_its_key() {
    bounded(async {
        let (dir, tokens, policy) = files("config-override");
        let config = dir.join("serve.toml");
        std::fs::write(
            &config,
            format!(
                "http = \"127.0.0.1:0\"\ntokens = \"{tokens}\"\npolicy = \"{policy}\"\n\
                 max-frame = 2000\n"
            ),
        )
        .unwrap();
        let config = config.to_str().unwrap();
        let (_a, small) = serve(&["--config", config]).await;
        let (_b, large) = serve(&["--config", config, "--max-frame", "100000"]).await;
        let (small, large) = (answers(&small).await, answers(&large).await);
        assert_ne!(small[3].0, 200, "{small:?}");
        assert_eq!(large[3].0, 200, "{large:?}");
        assert!(large[3].1.contains("xxxx"), "{large:?}");
        // Everything else the file says still holds.
        assert_eq!(large[0].0, 401);
        assert!(large[2].1.contains("-32040"));
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

#[tokio::test]
async fn a_bad_file_is_refused_with_the_key_named() {
    let dir = std::env::temp_dir().join(format!("rpcwire-config-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("serve.toml");
    std::fs::write(&config, "http = \"127.0.0.1:0\"\nmax-frames = 10\n").unwrap();
    let out = common::rpcwire(&["serve", "--config", config.to_str().unwrap()]).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("max-frames"), "{out:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
