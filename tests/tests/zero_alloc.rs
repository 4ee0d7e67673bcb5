//! A server-role Connection handles 10 000 messages of each workload in
//! `../shared/bench/` (W1 to W6) in steady state with zero heap allocations, responses
//! included: with inline storage always, with heap storage once warmed up (its buffers grow
//! to what the workload needs, then stay). Allocation counts are deterministic, so this is an
//! exact assertion.

use rpcwire::storage::{Heap, Inline, Slots, Storage};
use rpcwire::Input;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::PathBuf;

use rpcwire::wire::RxBuffer;
use rpcwire::{Connection, Inbound, Instant, Output};

struct Counting;

thread_local! {
    /// Allocations made by this thread: the tests run in parallel, each counts its own.
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn count() {
    ALLOCATIONS.with(|n| n.set(n.get() + 1));
}

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: forwards to the system allocator and only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn bench_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/bench");
    if dir.join("w1.json").exists() {
        return Some(dir);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "../shared/bench is missing under CI=true"
    );
    eprintln!("SKIPPED: zero_alloc: ../shared/bench not found");
    None
}

/// Feeds `stream` (many newline-framed copies of one workload) through a server-role
/// connection in 4 KiB reads, answering with the demo service; returns the bytes written and
/// the number of requests seen.
fn serve<S: Storage, B: Slots<u8>>(
    conn: &mut Connection<S>,
    rx: &mut RxBuffer<B>,
    stream: &[u8],
    sink: &mut [u8],
) -> (usize, usize) {
    let (mut written, mut requests) = (0, 0);
    let mut drain = |conn: &mut Connection<S>| {
        while let Output::Transmit(bytes) = conn.poll_output() {
            let n = bytes.len();
            // A stand-in for a socket: copy into a fixed buffer, reusing it.
            let room = sink.len().min(n);
            sink[..room].copy_from_slice(&bytes[..room]);
            written += n;
            conn.advance_transmit(n);
        }
    };
    for chunk in stream.chunks(4096) {
        let mut input = chunk;
        loop {
            match conn.handle_input(Instant::ZERO, rx, &mut input) {
                Input::Item(Inbound::Request(req)) => {
                    requests += 1;
                    rpcwire_demo::answer(conn, &req).expect("answer fits");
                }
                Input::Item(_) => {}
                Input::Blocked => drain(conn),
                Input::NeedMore | Input::Closed => break,
            }
        }
        drain(conn);
    }
    (written, requests)
}

#[test]
fn steady_state_handling_allocates_nothing() {
    let Some(dir) = bench_dir() else { return };
    let inline = |one: &[u8], stream: &[u8], sink: &mut [u8]| {
        let mut conn: Box<Connection<Inline<16384, 4096, 16, 16>>> = Box::default();
        let mut rx: Box<RxBuffer<[u8; 8192]>> = Box::new(conn.rx_buffer());
        measure(&mut *conn, &mut *rx, one, stream, sink)
    };
    workloads(&dir, "inline storage", inline);
}

#[test]
fn steady_state_handling_allocates_nothing_with_heap_storage() {
    let Some(dir) = bench_dir() else { return };
    let heap = |one: &[u8], stream: &[u8], sink: &mut [u8]| {
        let mut conn: Connection<Heap> = Connection::default();
        let mut rx: RxBuffer<Vec<u8>> = conn.rx_buffer();
        measure(&mut conn, &mut rx, one, stream, sink)
    };
    workloads(&dir, "heap storage", heap);
}

/// Warms a connection up on the first thousand messages (heap storage grows its buffers to
/// what the 4 KiB reads and the workload need), then counts the allocations of serving all of
/// `stream`.
fn measure<S: Storage, B: Slots<u8>>(
    conn: &mut Connection<S>,
    rx: &mut RxBuffer<B>,
    one: &[u8],
    stream: &[u8],
    sink: &mut [u8],
) -> (usize, usize, usize) {
    serve(conn, rx, &stream[..(one.len() + 1) * 1000], sink);
    let before = allocations();
    let (written, requests) = serve(conn, rx, stream, sink);
    let allocations = allocations() - before;
    (written, requests, allocations)
}

/// Runs W1..W6 through `run` and asserts zero allocations for each.
fn workloads(
    dir: &std::path::Path,
    storage: &str,
    run: impl Fn(&[u8], &[u8], &mut [u8]) -> (usize, usize, usize),
) {
    let expected_requests = [1usize, 1, 8, 1, 0, 0];
    for (i, expected) in expected_requests.iter().enumerate() {
        let name = format!("w{}.json", i + 1);
        let one = std::fs::read(dir.join(&name)).unwrap();
        let mut stream = Vec::with_capacity((one.len() + 1) * 10_000);
        for _ in 0..10_000 {
            stream.extend_from_slice(&one);
            stream.push(b'\n');
        }
        let mut sink = vec![0u8; 16384];
        let (written, requests, allocations) = run(&one, &stream, &mut sink);

        assert_eq!(requests, expected * 10_000, "{name}: requests seen");
        if name != "w5.json" {
            assert!(written > 0, "{name}: answered");
        } else {
            assert_eq!(written, 0, "{name}: notifications are never answered");
        }
        assert_eq!(
            allocations, 0,
            "{name} ({storage}): heap allocations while serving 10 000 messages"
        );
        eprintln!(
            "{name} ({storage}): 10 000 messages, {requests} requests, {written} bytes out, 0 allocations"
        );
    }
}
