#![no_std]
//! rpcwire transport adapter (embedded-io): not yet written.
