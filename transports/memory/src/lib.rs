#![no_std]
//! rpcwire transport adapter (memory): not yet written.
