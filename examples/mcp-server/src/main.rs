//! rpcwire example: mcp-server (under construction).
fn main() {}
