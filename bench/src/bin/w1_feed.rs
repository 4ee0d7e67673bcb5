//! `w1-feed`: feeds W1 calls to a server command through its stdio and checks every answer.
//!
//! `w1-feed --calls N [--window W] -- PROGRAM [ARGS...]` runs `PROGRAM ARGS... --stdio`, sends
//! W1 with ids 1..=N keeping at most W (default 1024) unanswered, checks that each id comes
//! back once with result 19, and prints the calls per second on stdout.
//!
//! `callgrind.sh` uses it to put a server under valgrind, the same client for both servers
//! (a file fed to stdin would also do now; the window keeps the two runs alike).

use std::path::PathBuf;
use std::process::ExitCode;

use rpcwire_bench::{format_rate, stdio_run, ServerCommand};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("w1-feed: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    const USAGE: &str = "usage: w1-feed --calls N [--window W] -- PROGRAM [ARGS...]";
    let mut args = std::env::args().skip(1);
    let mut calls = None;
    let mut window = 1024;
    let number = |v: Option<String>| -> Result<u64, String> {
        v.and_then(|s| s.parse().ok())
            .filter(|&n| n > 0)
            .ok_or_else(|| USAGE.to_owned())
    };
    loop {
        match args.next().as_deref() {
            Some("--calls") => calls = Some(number(args.next())?),
            Some("--window") => window = number(args.next())?,
            Some("--") => break,
            _ => return Err(USAGE.to_owned()),
        }
    }
    let calls = calls.ok_or_else(|| USAGE.to_owned())?;
    let program = args.next().ok_or_else(|| USAGE.to_owned())?;
    let server = ServerCommand {
        name: program.clone(),
        program: PathBuf::from(program),
        args: args.collect(),
    };
    let time = stdio_run(&server, calls, window).map_err(|e| e.to_string())?;
    println!(
        "{calls} calls checked, {} calls/s",
        format_rate(calls as f64 / time.as_secs_f64())
    );
    Ok(())
}
