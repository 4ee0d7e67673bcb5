//! End-to-end load generation for the `rpcwire` benchmarks.
//!
//! The runners in `benches/` drive real server processes (the `rpcwire` binary and the
//! `plain-loop` reference in this package) through their stdio pipes or over loopback TCP with
//! the shared workload W1 (`subtract`, params `[42,23]`, answer 19), and check every answer.
//! Each figure the runners print is a ratio to the plain loop measured in the same run, because
//! absolute times on a shared 2-core machine drift by tens of percent between runs.
//!
//! Only std threads and blocking sockets are used: the client must not need the very runtime
//! whose server it measures, and every blocking call has a 30 s timeout ([`STALL`]) so that a
//! server that stops answering fails the run with a message instead of hanging it.

mod build;
mod check;
mod error;
mod load;
mod report;
mod server;

pub use build::{cargo_build, cargo_build_with, rpcwire_server};
pub use check::Checker;
pub use error::Error;
pub use load::{
    http_content_length, push_request, stdio_run, tcp_call_once, tcp_connect, tcp_run, TcpLoad,
};
pub use report::{format_rate, median, scale, scaled};
pub use server::{
    children_cpu, mosquitto, proc_cpu, proc_status, spawn_one_thread, workspace_root, Killed,
    ProcStatus, ServerCommand, TcpServer,
};

use std::time::Duration;

/// How long a server may stay silent while answers are owed before the run is failed.
pub const STALL: Duration = Duration::from_secs(30);
