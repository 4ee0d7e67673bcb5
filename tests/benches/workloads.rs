//! Server-side handling of the shared workloads (`../shared/bench/`, W1 to W6): bytes in,
//! typed params decoded, handler run, response bytes out, against the floor of
//! `serde_json::from_slice::<IgnoredAny>` plus copying a precomputed response.
//!
//! Run with `cargo bench -p rpcwire-tests --bench workloads`.

use rpcwire::storage::Inline;
use rpcwire::Input;
use std::path::PathBuf;

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use rpcwire::wire::RxBuffer;
use rpcwire::{Connection, Inbound, Instant, Output};

type Server = Connection<Inline<16384, 8192, 16, 16>>;

fn workloads() -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/bench");
    (1..=6)
        .filter_map(|i| {
            let name = format!("w{i}");
            std::fs::read(dir.join(format!("{name}.json")))
                .ok()
                .map(|b| (name, b))
        })
        .collect()
}

/// One message through a server-role connection, read where it lies (as the transports hand
/// the core whole lines, and as `bench/callgrind-core.sh` counts it); returns the bytes
/// written.
fn handle(
    conn: &mut Server,
    rx: &mut RxBuffer<[u8; 8192]>,
    frame: &[u8],
    sink: &mut [u8],
) -> usize {
    let mut input = frame;
    while let Input::Item(item) = conn.handle_input_borrowed(Instant::ZERO, rx, &mut input) {
        if let Inbound::Request(req) = item {
            let _ = rpcwire_demo::answer(conn, &req);
        }
    }
    let mut written = 0;
    while let Output::Transmit(bytes) = conn.poll_output() {
        let n = bytes.len();
        sink[..n].copy_from_slice(bytes);
        written += n;
        conn.advance_transmit(n);
    }
    written
}

fn bench(c: &mut Criterion) {
    let loads = workloads();
    if loads.is_empty() {
        eprintln!("SKIPPED: ../shared/bench not found");
        return;
    }
    let mut group = c.benchmark_group("workloads");
    for (name, bytes) in &loads {
        let mut frame = bytes.clone();
        frame.push(b'\n');
        let mut conn: Box<Server> = Box::default();
        let mut rx: Box<RxBuffer<[u8; 8192]>> = Box::new(conn.rx_buffer());
        let mut sink = vec![0u8; 16384];
        let response_len = handle(&mut conn, &mut rx, &frame, &mut sink);
        let response = sink[..response_len].to_vec();
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function(format!("{name}/rpcwire"), |b| {
            b.iter(|| black_box(handle(&mut conn, &mut rx, black_box(&frame), &mut sink)))
        });
        group.bench_function(format!("{name}/floor-serde_json-validate"), |b| {
            b.iter(|| {
                let ok = serde_json::from_slice::<serde::de::IgnoredAny>(black_box(bytes)).is_ok();
                sink[..response.len()].copy_from_slice(&response);
                black_box(ok);
                black_box(sink[0])
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
