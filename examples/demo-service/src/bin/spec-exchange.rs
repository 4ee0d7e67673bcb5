//! Plays every example of the JSON-RPC 2.0 specification through a server-role
//! [`rpcwire::Connection`] running the demo service, printing each exchange.

use rpcwire::Input;
use std::process::ExitCode;

use rpcwire::wire::RxBuffer;
use rpcwire::{Connection, Inbound, Instant, Output};
use rpcwire_demo::spec::{one_line, SPEC_EXAMPLES};

fn main() -> ExitCode {
    let mut conn: Connection = Connection::default();
    let mut rx: RxBuffer<[u8; 4096]> = conn.rx_buffer();
    let mut ok = true;
    for example in SPEC_EXAMPLES {
        let mut line: Vec<u8> = one_line(example.request).collect();
        line.push(b'\n');
        println!("# {}", example.name);
        println!("--> {}", String::from_utf8_lossy(&line).trim_end());
        let mut input = &line[..];
        while let Input::Item(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut input) {
            if let Inbound::Problem(p) = item {
                println!("    (problem reported: {p:?})");
            }
            let _ = rpcwire_demo::handle(&mut conn, item);
        }
        let mut answered = Vec::new();
        while let Output::Transmit(bytes) = conn.poll_output() {
            answered.extend_from_slice(bytes);
            let n = bytes.len();
            conn.advance_transmit(n);
        }
        if answered.is_empty() {
            println!("<-- (nothing)");
        } else {
            println!("<-- {}", String::from_utf8_lossy(&answered).trim_end());
        }
        ok &= answered.is_empty() == example.response.is_none();
        println!();
    }
    println!("stats: {:?}", conn.stats());
    if ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("an example was answered when it should not have been, or the reverse");
        ExitCode::FAILURE
    }
}
