//! Serves the demo methods (`subtract`, `sum`, `get_data`, `echo`, `update`, ...) on a serial
//! port: `cargo run -p rpcwire-serial --example serve -- PATH [BAUD]`.

use std::process::ExitCode;
use std::time::Duration;

use rpcwire::Config;
use rpcwire_embedded_io::Incoming;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: serve PATH [BAUD]");
        return ExitCode::from(2);
    };
    let baud = args.next().and_then(|b| b.parse().ok()).unwrap_or(115_200);
    let port = match rpcwire_serial::open(&path, baud) {
        Ok(port) => port,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut driver = rpcwire_serial::driver(port, Config::default());
    eprintln!("serving the demo methods on {path} at {baud} baud");
    loop {
        let polled = driver.poll(|ctx, item| match item {
            Incoming::Request(req) => {
                let _ = ctx.retry(|conn| rpcwire_demo::answer(conn, &req));
            }
            Incoming::Problem(p) => eprintln!("peer problem: {p:?}"),
            _ => {}
        });
        if let Err(e) = polled {
            eprintln!("serial error: {e}");
            return ExitCode::FAILURE;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}
