//! Building the binaries under test with cargo, from inside a bench runner.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::{workspace_root, Error, ServerCommand};

/// Runs `cargo build --release -p PACKAGE --bin BIN` in the workspace and returns the path of
/// the executable, as cargo reports it (`--message-format=json`): that path is right whatever
/// `CARGO_TARGET_DIR` or `build.target-dir` say. Cargo's own progress goes to stderr as usual.
pub fn cargo_build(package: &str, bin: &str) -> Result<PathBuf, Error> {
    cargo_build_with(package, bin, &[])
}

/// [`cargo_build`] with these features of the package turned on.
pub fn cargo_build_with(package: &str, bin: &str, features: &[&str]) -> Result<PathBuf, Error> {
    // Cargo gives its own path to the processes it runs; a bench started otherwise falls back
    // to the one on PATH.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(workspace_root())
        .args([
            "build",
            "--release",
            "--message-format=json-render-diagnostics",
            "-p",
            package,
            "--bin",
            bin,
            "--features",
            &features.join(","),
        ])
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| Error::io("run cargo build", e))?;
    if !output.status.success() {
        return Err(Error::Server(format!(
            "cargo build --release -p {package} --bin {bin} failed ({})",
            output.status
        )));
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["target"]["name"] == bin)
        .find_map(|m| m["executable"].as_str().map(PathBuf::from))
        .ok_or_else(|| Error::Server(format!("cargo did not report the `{bin}` executable")))
}

/// The `rpcwire` binary as a server command (`rpcwire serve ...`): the file named by
/// `RPCWIRE_BENCH_RPCWIRE` when set (to measure another build, e.g. an older commit's), else
/// a fresh release build of `rpcwire-cli`.
pub fn rpcwire_server() -> Result<ServerCommand, Error> {
    let program = match std::env::var_os("RPCWIRE_BENCH_RPCWIRE") {
        Some(path) => PathBuf::from(path),
        None => cargo_build("rpcwire-cli", "rpcwire")?,
    };
    Ok(ServerCommand {
        name: "rpcwire".into(),
        program,
        args: vec!["serve".into()],
    })
}
