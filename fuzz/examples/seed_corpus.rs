//! Writes the committed seed corpora in `fuzz/corpus/<target>/`:
//! - the JSON-RPC 2.0 specification's examples (`rpcwire_demo::spec::SPEC_EXAMPLES`), as they
//!   are and framed both ways, with the header bytes each target expects;
//! - the JSONTestSuite parsing files (`../shared/testdata/json-test-suite/test_parsing`, MIT,
//!   see `fuzz/NOTICE`) of at most 4 KiB, for the scanner and the parser;
//! - a few seeded random inputs for the structured `connection_ops` target.
//!
//! Run from `fuzz/`: `cargo +nightly run --example seed_corpus` (idempotent).

use std::fs;
use std::path::{Path, PathBuf};

use rpcwire_demo::spec::{one_line, SPEC_EXAMPLES};
use rpcwire_fuzz::Chunker;

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new("corpus").join(target);
    fs::create_dir_all(&dir).expect("create corpus dir");
    fs::write(dir.join(name), bytes).expect("write seed");
}

fn slug(i: usize, name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    format!("spec-{i:02}-{}", s.trim_matches('-'))
}

fn line(text: &str) -> Vec<u8> {
    let mut v: Vec<u8> = one_line(text).collect();
    v.push(b'\n');
    v
}

fn content_length(text: &str) -> Vec<u8> {
    let mut v = format!("Content-Length: {}\r\n\r\n", text.len()).into_bytes();
    v.extend_from_slice(text.as_bytes());
    v
}

fn main() {
    let mut all_line = Vec::new();
    let mut all_cl = Vec::new();
    for (i, ex) in SPEC_EXAMPLES.iter().enumerate() {
        let name = slug(i, ex.name);
        write(
            "parse_roundtrip",
            &format!("{name}-request"),
            ex.request.as_bytes(),
        );
        write(
            "scan_differential",
            &format!("{name}-request"),
            ex.request.as_bytes(),
        );
        if let Some(resp) = ex.response {
            write(
                "parse_roundtrip",
                &format!("{name}-response"),
                resp.as_bytes(),
            );
            write(
                "scan_differential",
                &format!("{name}-response"),
                resp.as_bytes(),
            );
        }
        // Framing targets: [max frame, seed, seed] + stream.
        let mut l = vec![200, i as u8, 7];
        l.extend(line(ex.request));
        write("framing_line", &name, &l);
        let mut c = vec![255, i as u8, 5];
        c.extend(content_length(ex.request));
        write("framing_content_length", &name, &c);
        // Connection target: [options, seed, seed] + stream, both framings.
        let mut cl = vec![0, i as u8, 9];
        cl.extend(line(ex.request));
        write("connection_bytes", &format!("{name}-line"), &cl);
        let mut cc = vec![1, i as u8, 3];
        cc.extend(content_length(ex.request));
        write("connection_bytes", &format!("{name}-content-length"), &cc);
        all_line.extend(line(ex.request));
        all_cl.extend(content_length(ex.request));
    }
    // Whole exchanges in one stream, with CRLF and blank lines for the line framing.
    let mut l = vec![120, 1, 1];
    l.extend(&all_line);
    l.extend(b"\r\n\n  \n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}\r\n");
    write("framing_line", "spec-all", &l);
    let mut c = vec![64, 2, 2];
    c.extend(&all_cl);
    c.extend(
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 2\r\n\r\n{}",
    );
    write("framing_content_length", "spec-all", &c);
    let mut cb = vec![0x30, 3, 17];
    cb.extend(&all_line);
    write("connection_bytes", "spec-all-line", &cb);
    let mut cb = vec![0x31, 4, 1];
    cb.extend(&all_cl);
    write("connection_bytes", "spec-all-content-length", &cb);

    // JSONTestSuite (MIT): small files only, to keep libFuzzer's max_len low.
    let suite: PathBuf = [
        "..",
        "..",
        "shared",
        "testdata",
        "json-test-suite",
        "test_parsing",
    ]
    .iter()
    .collect();
    let mut copied = 0;
    if let Ok(entries) = fs::read_dir(&suite) {
        let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            let Ok(bytes) = fs::read(&path) else { continue };
            if bytes.len() > 4096 {
                continue;
            }
            let name = format!(
                "jts-{}",
                path.file_name().and_then(|n| n.to_str()).unwrap_or("x")
            );
            write("scan_differential", &name, &bytes);
            if name.starts_with("jts-y_") {
                write("parse_roundtrip", &name, &bytes);
            }
            copied += 1;
        }
    } else {
        eprintln!(
            "warning: {} not found; JSONTestSuite seeds skipped",
            suite.display()
        );
    }

    // Structured target: any bytes decode to some operation sequence.
    let mut rng = Chunker::new(0x5EED, 256);
    for k in 0..16 {
        let len = 32 + rng.next_len() * 2;
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_len() as u8).collect();
        write("connection_ops", &format!("random-{k:02}"), &bytes);
    }
    println!("seed corpora written ({copied} JSONTestSuite files)");
}
