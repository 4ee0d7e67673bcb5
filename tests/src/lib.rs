//! Integration suites for rpcwire live in `tests/`.
