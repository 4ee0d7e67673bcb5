//! Calls (or notifies) a JSON-RPC peer on a serial port and prints the result:
//! `cargo run -p rpcwire-serial --example call -- PATH METHOD [PARAMS] [--notify]
//! [--baud N] [--timeout-ms N]`. PARAMS is a JSON array or object. Exits with 1 when the
//! peer answers with an error (printed as JSON on stderr), 2 on usage errors, 3 on timeout.

use std::process::ExitCode;
use std::time::Duration;

use rpcwire::wire::RawJson;
use rpcwire::{Config, Event, Token};
use rpcwire_embedded_io::Incoming;

fn main() -> ExitCode {
    let mut positional = Vec::new();
    let mut notify = false;
    let mut baud = 115_200u32;
    let mut timeout = Duration::from_secs(5);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--notify" => notify = true,
            "--baud" => baud = args.next().and_then(|v| v.parse().ok()).unwrap_or(baud),
            "--timeout-ms" => {
                if let Some(ms) = args.next().and_then(|v| v.parse().ok()) {
                    timeout = Duration::from_millis(ms);
                }
            }
            _ => positional.push(arg),
        }
    }
    let (Some(path), Some(method)) = (positional.first(), positional.get(1)) else {
        eprintln!("usage: call PATH METHOD [PARAMS] [--notify] [--baud N] [--timeout-ms N]");
        return ExitCode::from(2);
    };
    let params = match positional.get(2).map(|p| RawJson::parse(p, 64)) {
        None => None,
        Some(Ok(p)) if p.is_array() || p.is_object() => Some(p),
        Some(_) => {
            eprintln!("PARAMS must be a JSON array or object");
            return ExitCode::from(2);
        }
    };
    let port = match rpcwire_serial::open(path, baud) {
        Ok(port) => port,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    let mut driver = rpcwire_serial::driver(port, Config::default());
    let sent = if notify {
        driver.send_notification(method, params.as_ref())
    } else {
        driver.send_request(Token(1), method, params.as_ref(), Some(timeout))
    };
    if let Err(e) = sent {
        eprintln!("cannot send: {e}");
        return ExitCode::FAILURE;
    }
    if notify {
        return ExitCode::SUCCESS;
    }
    let mut outcome: Option<ExitCode> = None;
    while outcome.is_none() {
        let polled = driver.poll(|_, item| match item {
            Incoming::Response(resp) if resp.token == Token(1) => {
                outcome = Some(match resp.outcome {
                    Ok(result) => {
                        println!("{result}");
                        ExitCode::SUCCESS
                    }
                    Err(error) => {
                        let data = error
                            .data
                            .map(|d| format!(",\"data\":{d}"))
                            .unwrap_or_default();
                        eprintln!(
                            "{{\"code\":{},\"message\":\"{}\"{data}}}",
                            error.code.0,
                            error.message.escaped()
                        );
                        ExitCode::FAILURE
                    }
                });
            }
            Incoming::Event(Event::RequestFailed { reason, .. }) => {
                eprintln!("no response: {reason:?}");
                outcome = Some(ExitCode::from(3));
            }
            _ => {}
        });
        if let Err(e) = polled {
            eprintln!("serial error: {e}");
            return ExitCode::FAILURE;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    outcome.unwrap_or(ExitCode::FAILURE)
}
