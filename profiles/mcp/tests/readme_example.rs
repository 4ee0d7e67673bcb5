//! The top-level README's MCP server example compiles exactly as written (`cargo check`: the
//! compiler's verdict, without the code generation and linking it does not need), in a fresh crate
//! with the README's own dependency lines (the workspace's crates stand in for the published
//! ones through `[patch.crates-io]`); and without feature `schemars`, the compiler's error
//! names it.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The first fenced block of `lang` after the heading `heading` in `text`.
fn block<'a>(text: &'a str, heading: &str, lang: &str) -> &'a str {
    let section = &text[text
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?}"))..];
    let fence = format!("```{lang}\n");
    let start = section
        .find(&fence)
        .unwrap_or_else(|| panic!("no {lang} block"))
        + fence.len();
    let len = section[start..].find("\n```").unwrap();
    &section[start..=start + len]
}

/// Checks a fresh crate with `deps` and `main` (offline: every crate is in the local cache
/// once the workspace is built); the build's stderr on failure.
fn build(name: &str, deps: &str, main: &str) -> Result<(), String> {
    let ws = workspace();
    let dir = std::env::temp_dir().join(format!("rpcwire-{name}-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let patch = [
        "rpcwire:core",
        "rpcwire-tokio:transports/tokio",
        "rpcwire-mcp:profiles/mcp",
    ]
    .iter()
    .map(|entry| {
        let (krate, path) = entry.split_once(':').unwrap();
        format!("{krate} = {{ path = {:?} }}\n", ws.join(path))
    })
    .collect::<String>();
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n\
         {deps}\n[patch.crates-io]\n{patch}\n[workspace]\n"
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
    // The workspace's lock: the same versions, already built and cached.
    std::fs::copy(ws.join("Cargo.lock"), dir.join("Cargo.lock")).unwrap();
    let out = Command::new(env!("CARGO"))
        .args(["check", "--offline", "--quiet"])
        .current_dir(&dir)
        // Its own target directory: the outer `cargo test` holds the workspace's lock.
        .env("CARGO_TARGET_DIR", ws.join("target/readme-example"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn the_readme_mcp_example_builds_as_written_and_a_missing_feature_is_named() {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let deps = block(&readme, "## An MCP server", "toml");
    let main = block(&readme, "## An MCP server", "rust");
    assert!(deps.starts_with("[dependencies]\n"), "{deps}");
    if let Err(stderr) = build("readme-mcp", deps, main) {
        panic!("the README's MCP example does not build as written:\n{stderr}");
    }
    let without = deps.replace(
        "features = [\"tokio\", \"schemars\"]",
        "features = [\"tokio\"]",
    );
    assert_ne!(
        without, deps,
        "the README's rpcwire-mcp line changed: update this test"
    );
    let stderr = build("readme-mcp-no-schemars", &without, main).unwrap_err();
    assert!(
        stderr.contains("needs rpcwire-mcp's feature `schemars`"),
        "the error does not name the feature:\n{stderr}"
    );
}
