//! The JSON-RPC server: its settings ([`builder`]), the service every request runs through
//! ([`rpc`]), what a POST body's answer becomes ([`reply`]), and its serve loops ([`serve`]).

mod builder;
mod reply;
mod rpc;
mod serve;

pub use builder::HttpServer;
pub use rpc::{BodyCheck, RequestCheck, RpcService, UpgradeHook};
#[cfg(feature = "tls")]
pub use serve::serve_tls;
pub use serve::{serve, serve_connection};
