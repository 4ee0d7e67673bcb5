//! # rpcwire-mcp
//!
//! The Model Context Protocol as a profile over [`rpcwire`]. (Under construction.)
#![no_std]
