//! Wall time per message of the core against the floor, measured in one process in short
//! alternated chunks: `workload_time w1 [CHUNK] [CHUNKS]`.
//!
//! `bench/time-core.py` times whole runs of `workload_profile`; on a shared machine few runs
//! of half a second go undisturbed. Here the core and the floor (the same loops as
//! `workload_profile`: `handle_input_borrowed` and the demo answer, against
//! `serde_json::from_slice::<IgnoredAny>` plus a 40-byte copy) take turns every CHUNK
//! messages (default: about a millisecond of work), CHUNKS times each (default 400), and the
//! fastest chunk of each is reported: a millisecond escapes the neighbours far more often than
//! half a second does. The median of the ratios of neighbouring chunks is printed beside it.
//! Output: one line, `W ns_core_fastest ns_floor_fastest ratio_fastest ratio_median_pairs`.

use std::time::Instant as Clock;

use rpcwire::storage::Inline;
use rpcwire::wire::RxBuffer;
use rpcwire::Input;
use rpcwire::{Connection, Inbound, Instant, Output};

type Conn = Connection<Inline<16384, 8192, 16, 16>>;

/// `n` round trips of the core, as `workload_profile` runs them.
#[inline(never)]
fn core(
    n: usize,
    conn: &mut Conn,
    rx: &mut RxBuffer<[u8; 8192]>,
    frame: &[u8],
    sink: &mut [u8],
) -> usize {
    let mut total = 0usize;
    for _ in 0..n {
        let mut input = frame;
        while let Input::Item(item) = conn.handle_input_borrowed(Instant::ZERO, rx, &mut input) {
            if let Inbound::Request(req) = item {
                let _ = rpcwire_demo::answer(conn, &req);
            }
        }
        while let Output::Transmit(out) = conn.poll_output() {
            let k = out.len();
            sink[..k].copy_from_slice(out);
            total += k;
            conn.advance_transmit(k);
        }
    }
    total
}

/// `n` rounds of the floor, as `workload_profile floor` runs them.
#[inline(never)]
fn floor(n: usize, bytes: &[u8], sink: &mut [u8]) -> usize {
    let mut total = 0usize;
    for _ in 0..n {
        let ok = serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok();
        sink[..40].copy_from_slice(&bytes[..40]);
        total += usize::from(ok) + usize::from(sink[3]);
    }
    total
}

fn main() {
    let mut args = std::env::args().skip(1);
    let name = args.next().unwrap_or_else(|| "w1".into());
    let default_chunk = match name.as_str() {
        "w3" => 1_000,
        "w4" => 1_500,
        _ => 8_000,
    };
    let chunk: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_chunk);
    let chunks: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(400);
    let path = format!(
        "{}/../../shared/bench/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut frame = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let bytes = frame.clone();
    frame.push(b'\n');
    let mut conn: Box<Conn> = Box::default();
    let mut rx: Box<RxBuffer<[u8; 8192]>> = Box::new(conn.rx_buffer());
    let mut sink = vec![0u8; 16384];
    let mut total = 0usize;
    // Warm both up.
    total += core(chunk, &mut conn, &mut rx, &frame, &mut sink);
    total += floor(chunk, &bytes, &mut sink);
    let mut c = Vec::with_capacity(chunks);
    let mut f = Vec::with_capacity(chunks);
    for _ in 0..chunks {
        let t = Clock::now();
        total += core(chunk, &mut conn, &mut rx, &frame, &mut sink);
        c.push(t.elapsed().as_nanos() as f64 / chunk as f64);
        let t = Clock::now();
        total += floor(chunk, &bytes, &mut sink);
        f.push(t.elapsed().as_nanos() as f64 / chunk as f64);
    }
    let mut pairs: Vec<f64> = c.iter().zip(&f).map(|(c, f)| c / f).collect();
    pairs.sort_by(f64::total_cmp);
    let fastest = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let (cf, ff) = (fastest(&c), fastest(&f));
    println!(
        "{} {cf:.1} {ff:.1} {:.3} {:.3}",
        name.to_uppercase(),
        cf / ff,
        pairs[pairs.len() / 2]
    );
    std::hint::black_box(total);
}
