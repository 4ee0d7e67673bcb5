//! The READMEs' server (this crate's and the top-level one) is the compiled example,
//! character for character.
#![allow(missing_docs, clippy::unwrap_used)]

#[test]
fn readme_shows_the_compiled_example() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    let example = std::fs::read_to_string(dir.join("examples/hello_mcp.rs")).unwrap();
    assert!(readme.contains(&format!("```rust\n{example}```")));
    let top = std::fs::read_to_string(dir.join("../../README.md")).unwrap();
    assert!(
        top.contains(&format!("```rust\n{example}```")),
        "the top-level README's copy"
    );
    assert!(example.lines().count() < 30);
}
