//! The top-level README's "Testing your service" example is the testkit README's, which the
//! crate's documentation compiles (with feature `proptest`): one text, compiled once.

#[test]
fn the_top_level_readme_shows_the_compiled_example() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let ours = std::fs::read_to_string(format!("{dir}/README.md")).unwrap_or_default();
    let top = std::fs::read_to_string(format!("{dir}/../README.md")).unwrap_or_default();
    let start = ours
        .find("```toml\n[dev-dependencies]")
        .expect("the example's dependencies");
    let code = ours[start..].find("```rust\n").expect("the example") + start;
    let end = ours[code..].find("\n```\n").expect("the example's end") + code;
    let example = &ours[start..end];
    assert!(
        top.contains(example),
        "README.md's example differs from testkit/README.md's"
    );
    let lines = ours[code..end].lines().count() - 1;
    assert!(lines <= 20, "the example has {lines} lines");
}
