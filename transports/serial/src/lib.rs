#![no_std]
//! rpcwire transport adapter (serial): not yet written.
