//! rpcwire example: orchestrator (under construction).
fn main() {}
