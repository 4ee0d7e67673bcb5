//! Runs one shared workload through a server-role connection many times, for instruction
//! counting: `valgrind --tool=callgrind target/release/examples/workload_profile w1 10000`.
//! With `floor` as third argument it runs the serde_json validation floor instead; with `copy`
//! the core takes the bytes through its receive buffer (`handle_input`) instead of where they
//! are (`handle_input_borrowed`).

use rpcwire::storage::Inline;
use rpcwire::wire::RxBuffer;
use rpcwire::Input;
use rpcwire::{Connection, Inbound, Instant, Output};

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "w1".into());
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10_000);
    let mode = args.next();
    let floor = mode.as_deref() == Some("floor");
    let copy = mode.as_deref() == Some("copy");
    let path = format!(
        "{}/../../shared/bench/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut frame = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let bytes = frame.clone();
    frame.push(b'\n');
    let mut conn: Box<Connection<Inline<16384, 8192, 16, 16>>> = Box::default();
    let mut rx: Box<RxBuffer<[u8; 8192]>> = Box::new(conn.rx_buffer());
    let mut sink = vec![0u8; 16384];
    let mut total = 0usize;
    for _ in 0..n {
        if floor {
            let ok = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok();
            sink[..40].copy_from_slice(&bytes[..40]);
            total += usize::from(ok) + usize::from(sink[3]);
            continue;
        }
        let mut input = &frame[..];
        loop {
            let next = if copy {
                conn.handle_input(Instant::ZERO, &mut rx, &mut input)
            } else {
                conn.handle_input_borrowed(Instant::ZERO, &mut rx, &mut input)
            };
            let Input::Item(item) = next else { break };
            if let Inbound::Request(req) = item {
                let _ = rpcwire_demo::answer(&mut conn, &req);
            }
        }
        while let Output::Transmit(out) = conn.poll_output() {
            let k = out.len();
            sink[..k].copy_from_slice(out);
            total += k;
            conn.advance_transmit(k);
        }
    }
    println!("{name}: {n} messages, {total} bytes out");
}
