//! # rpcwire-http
//!
//! JSON-RPC 2.0 over HTTP for [`rpcwire`]: POST, Server-Sent Events, WebSocket (feature `ws`)
//! and MCP Streamable HTTP. (Under construction.)

#[cfg(feature = "ws")]
pub mod ws;
