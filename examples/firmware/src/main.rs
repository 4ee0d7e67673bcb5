#![no_std]
#![no_main]
//! rpcwire on a microcontroller: a firmware image for the qemu `lm3s6965evb` board (TI
//! Stellaris LM3S6965, Cortex-M3) that serves the demo methods of `rpcwire serve`
//! (`subtract`, `sum`, `get_data`, `echo`, `update`, `notify_hello`, `notify_sum`) over UART0
//! with newline framing, with no heap, plus `rpc.stats` (stack high-water mark and the connection's counters). It
//! sends one `booted` notification when it starts.
//!
//! Run it: `cargo run --release` (UART0 on the terminal), or
//! `qemu-system-arm -M lm3s6965evb -nographic -kernel <elf> -serial pty`.

mod board;
mod clock;
mod mem;
mod methods;
mod mmio;
mod params;
mod slot;
mod stack;
mod stats;
mod text;
mod uart;

use cortex_m_rt::entry;
use panic_halt as _;
use rpcwire::Config;
use rpcwire_embedded_io::{Context, Driver, Incoming, Inline};

use clock::SysTickClock;
use slot::Slot;
use uart::Uart0;

/// Storage: 1 KiB receive buffer, 1 KiB transmit buffer, 960 B for batch replies (each
/// element of a batch reserves up to ~155 bytes: the specification's six-element batch
/// fits), two
/// pending-request slots (the device sends no requests yet) and two in-flight slots (every
/// request is answered before the next is read).
const RX: usize = 1024;
const TX: usize = 1024;
const BATCH: usize = 960;
const PENDING: usize = 2;
const INFLIGHT: usize = 2;

/// The connection's storage.
type Store = Inline<TX, BATCH, PENDING, INFLIGHT>;
type Firmware = Driver<Uart0, SysTickClock, Store, RX>;
type Ctx<'a> = Context<'a, Uart0, Store>;

/// The driver's storage, in `.bss`: built there in place at boot (not on the stack).
static DRIVER: Slot<Firmware> = Slot::new();

/// Params of the `booted` notification sent at start-up.
const BOOTED: &str = concat!(
    r#"{"firmware":""#,
    env!("CARGO_PKG_NAME"),
    r#"","version":""#,
    env!("CARGO_PKG_VERSION"),
    r#""}"#
);

#[entry]
fn main() -> ! {
    let uart = board::start();
    let slot = DRIVER.take().unwrap_or_else(|| board::halt());
    let driver = Firmware::new_in(slot, uart, SysTickClock::default(), Config::DEFAULT);

    // The transport is infallible and this frame always fits: nothing can fail here.
    let _ = driver.send_notification("booted", Some(&text::Raw(BOOTED.as_bytes())));

    board::run(|| {
        let _ = driver.poll(handle);
    })
}

/// Answers requests (see [`methods`]); notifications, problems (already answered by the
/// connection) and events need nothing.
fn handle(ctx: &mut Ctx<'_>, item: Incoming<'_>) {
    if let Incoming::Request(req) = item {
        let _ = methods::answer(ctx, &req);
    }
}
