//! `rpc.discover` on the demo service: the application's name and version, each method's
//! params, and a document the OpenRPC project's own validator (npm
//! `@open-rpc/schema-utils-js`, installed by `.ci/install/openrpc.sh`) accepts. Skips with a
//! visible `SKIPPED:` line without node or the validator, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::{bin, bounded, rpcwire};
use serde_json::Value;

fn validator_dir() -> PathBuf {
    let base = match std::env::var_os("RPCWIRE_INTEROP_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/rpcwire-interop"),
    };
    base.join("openrpc")
}

/// Runs the OpenRPC validator on `doc`: `Ok` when it accepts it, its complaint otherwise;
/// `None` when it is not installed.
fn validate(doc: &str) -> Option<Result<(), String>> {
    let dir = validator_dir();
    if !dir.join("node_modules/@open-rpc/schema-utils-js").exists() {
        rpcwire_tests::skip("no @open-rpc/schema-utils-js: run .ci/install/openrpc.sh");
        return None;
    }
    let script = "const { validateOpenRPCDocument } = require('@open-rpc/schema-utils-js');\n\
        const doc = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n\
        const verdict = validateOpenRPCDocument(doc);\n\
        if (verdict === true) { console.log('valid'); } else { console.log(String(verdict)); process.exit(1); }";
    let mut child = match Command::new("node")
        .args(["-e", script])
        .current_dir(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(child) => child,
        Err(_) => {
            rpcwire_tests::skip("no node: run .ci/install/openrpc.sh");
            return None;
        }
    };
    child
        .stdin
        .take()
        .unwrap()
        .write_all(doc.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Some(if out.status.success() && said.trim() == "valid" {
        Ok(())
    } else {
        Err(said)
    })
}

#[tokio::test]
async fn the_demo_services_discover_document_lists_params_and_is_valid_openrpc() {
    let server = format!("{} serve --stdio", bin());
    let out = bounded(rpcwire(&["call", "--exec", &server, "rpc.discover"])).await;
    assert_eq!(out.code, Some(0), "{out:?}");
    let doc: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(doc["info"]["title"], "rpcwire demo service");
    let methods = doc["methods"].as_array().unwrap();
    let params = |name: &str| -> Vec<String> {
        let m = methods
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("no {name}"));
        m["params"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(params("subtract"), ["minuend", "subtrahend"]);
    assert_eq!(params("sleep"), ["ms"]);
    assert_eq!(params("sum"), ["numbers"]);
    assert!(params("get_data").is_empty());
    for m in methods {
        assert!(m["params"].is_array(), "{m}");
    }

    let Some(verdict) = validate(out.stdout.trim()) else {
        return;
    };
    verdict.unwrap_or_else(|e| panic!("the validator refuses the document: {e}\n{}", out.stdout));
    // The validator is not a rubber stamp: a method without a name is refused.
    let mut broken = doc.clone();
    broken["methods"][0].as_object_mut().unwrap().remove("name");
    assert!(
        validate(&broken.to_string()).unwrap().is_err(),
        "the validator accepts anything"
    );
}
