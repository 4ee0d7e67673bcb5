//! Inputs the fuzz template found, kept as tests.

use rpcwire_testkit::{Case, Harness};

#[test]
fn a_form_feed_line_is_a_frame() {
    // examples/fuzz-template router_bytes: "<", a form feed and an invalid UTF-8 byte, one a
    // line, written 11 bytes at a time: three parse errors.
    let case = Case::from_fuzz_bytes(&[0x0b, b'<', b'\n', 0x0c, b'\n', 0xf6]);
    assert_eq!(
        Harness::new(rpcwire_cli::demo_router()).check(&case),
        Ok(())
    );
}
