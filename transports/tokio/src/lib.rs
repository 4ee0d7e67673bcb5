#![no_std]
//! rpcwire transport adapter (tokio): not yet written.
