//! A real authorization server for the authentication tests (feature `oauth`): npm
//! `oauth2-mock-server` (installed by `.ci/install/oauth-interop.sh`), run by Node on
//! 127.0.0.1 with an RS256 key. It serves its JWKS at [`Issuer::jwks`]; [`Issuer::token`]
//! has it sign a token with the claims asked for (its `issuer.buildToken`). The tokens no
//! authorization server would issue (`alg: none`, a tampered signature) are made here from
//! its own. Its token endpoint (client credentials) takes an RFC 8707 `resource` as the
//! token's audience.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

/// Starts the server, prints `{"issuer", "jwks"}`, then signs a token for each JSON line
/// `{"claims": {...}, "expiresIn": N}` read on stdin (one token per line out); stops when
/// stdin closes.
const SCRIPT: &str = r#"
const dir = process.argv[process.argv.length - 1];
const { OAuth2Server } = await import(dir + "/node_modules/oauth2-mock-server/dist/index.mjs");
const readline = await import("node:readline");
const server = new OAuth2Server();
await server.issuer.keys.generate("RS256");
// RFC 8707: a token request's `resource` is the token's audience (as a real authorization
// server does; the mock reads only `aud`).
server.service.on("beforeTokenSigning", (token, req) => {
  const resource = req.body && req.body.resource;
  if (resource) token.payload.aud = resource;
});
await server.start(0, "127.0.0.1");
const issuer = server.issuer.url;
console.log(JSON.stringify({ issuer, jwks: issuer + "/jwks" }));
const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  const ask = JSON.parse(line);
  const token = await server.issuer.buildToken({
    expiresIn: ask.expiresIn,
    scopesOrTransform: (_header, payload) => Object.assign(payload, ask.claims),
  });
  console.log(token);
}
await server.stop();
process.exit(0);
"#;

/// Where `.ci/install/oauth-interop.sh` installs (`$RPCWIRE_INTEROP_DIR/oauth`, by default
/// `~/.cache/rpcwire-interop/oauth`).
pub fn interop_dir() -> PathBuf {
    let root = std::env::var_os("RPCWIRE_INTEROP_DIR").map_or_else(
        || {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/rpcwire-interop")
        },
        PathBuf::from,
    );
    root.join("oauth")
}

/// The Python of the virtualenv with `httpx`, `websockets` and `mcp`, if installed.
pub fn python() -> Option<PathBuf> {
    let python = interop_dir().join("venv/bin/python");
    python.exists().then_some(python)
}

/// A running `oauth2-mock-server`; stopped on drop.
pub struct Issuer {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// Its issuer URL (`iss` of its tokens).
    pub issuer: String,
    /// Its JWKS URL.
    pub jwks: String,
}

impl Issuer {
    /// Starts the server, or `None` (after [`crate::skip`], which fails under `CI=true`) when
    /// it is not installed.
    pub fn start() -> Option<Issuer> {
        let dir = interop_dir().join("node");
        if !dir
            .join("node_modules/oauth2-mock-server/package.json")
            .exists()
        {
            crate::skip("oauth2-mock-server is not installed (.ci/install/oauth-interop.sh)");
            return None;
        }
        let mut child = match Command::new("node")
            .args(["--input-type=module", "-e", SCRIPT, "--"])
            .arg(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
        {
            Ok(child) => child,
            Err(e) => {
                crate::skip(&format!("node cannot run: {e}"));
                return None;
            }
        };
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take()?);
        let mut line = String::new();
        stdout.read_line(&mut line).ok()?;
        let started: serde_json::Value =
            serde_json::from_str(&line).expect("oauth2-mock-server's URLs");
        Some(Issuer {
            child,
            stdin,
            stdout,
            issuer: started["issuer"].as_str()?.to_owned(),
            jwks: started["jwks"].as_str()?.to_owned(),
        })
    }

    /// A token the server signs (RS256) with these claims (over its own `iss`, `iat`, `nbf`,
    /// `exp`), expiring in `expires_in` seconds (negative: expired already).
    pub fn token(&mut self, claims: serde_json::Value, expires_in: i64) -> String {
        let ask = serde_json::json!({"claims": claims, "expiresIn": expires_in});
        let stdin = self.stdin.as_mut().expect("the server's stdin");
        writeln!(stdin, "{ask}").expect("asked for a token");
        stdin.flush().expect("asked for a token");
        let mut token = String::new();
        self.stdout.read_line(&mut token).expect("a token");
        token.trim().to_owned()
    }
}

impl Issuer {
    /// The tokens a resource server for `audience` must refuse, by name: signed by this
    /// server but for another audience, by another issuer's name, expired; and, made from
    /// `valid`, `alg: none` and a tampered signature. Each carries `scope`.
    pub fn bad_tokens(
        &mut self,
        audience: &str,
        scope: &str,
        valid: &str,
    ) -> Vec<(&'static str, String)> {
        let elsewhere = serde_json::json!({"aud": "https://elsewhere.test/", "scope": scope});
        let evil = serde_json::json!({"aud": audience, "iss": "https://evil.test", "scope": scope});
        let ok = serde_json::json!({"aud": audience, "scope": scope});
        vec![
            ("wrong audience", self.token(elsewhere, 600)),
            ("wrong issuer", self.token(evil, 600)),
            ("expired", self.token(ok, -3600)),
            ("alg none", alg_none(valid)),
            ("tampered signature", tampered(valid)),
        ]
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        // Closing stdin stops it; kill in case it does not.
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `token` with its header replaced by `{"alg":"none"}` and no signature (what a forger
/// sends, hoping the server takes unsigned tokens).
pub fn alg_none(token: &str) -> String {
    let payload = token.split('.').nth(1).unwrap_or_default();
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    format!("{header}.{payload}.")
}

/// `token` with one claim changed (`sub` becomes `admin`) and the signature kept: its
/// signature no longer matches.
pub fn tampered(token: &str) -> String {
    let mut parts = token.split('.');
    let (header, payload, signature) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let mut claims: serde_json::Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap_or_default())
            .unwrap_or_default();
    claims["sub"] = "admin".into();
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    format!("{header}.{payload}.{signature}")
}
