#![no_std]
#![no_main]
//! MCP on a microcontroller: a second firmware image for the qemu `lm3s6965evb` board that
//! serves the Model Context Protocol over UART0 (newline framing, as MCP's stdio transport),
//! with no heap, on the no_std part of `rpcwire-mcp`: `initialize` (version negotiation),
//! `ping`, `tools/list` and `tools/call` for four device tools (`read_counter`, `set_led`,
//! `add`, `blink`, the last with `notifications/progress` when the call carries a progress
//! token). MCP 2026-07-28 is spoken beside it, request by request (no `initialize`;
//! `server/discover`; `resultType` on results): the profile's `Server` does it all. Batches are
//! refused, as MCP 2025-06-18 and later require. It sends one `booted`
//! notification when it starts (`rpcwire bridge` reports it as a device reset and keeps it
//! from the host).
//!
//! A host reaches it through `rpcwire bridge --serial /dev/ttyACM0` (see the README).

#[path = "../../board.rs"]
mod board;
#[path = "../../clock.rs"]
mod clock;
#[path = "../../mem.rs"]
mod mem;
#[path = "../../mmio.rs"]
mod mmio;
#[path = "../../slot.rs"]
mod slot;
#[path = "../../stack.rs"]
mod stack;
#[path = "../../stats.rs"]
mod stats;
#[path = "../../text.rs"]
mod text;
mod tools;
#[path = "../../uart.rs"]
mod uart;

use cortex_m_rt::entry;
use panic_halt as _;
use rpcwire::Config;
use rpcwire_embedded_io::{Context, Driver, Inline};

use clock::SysTickClock;
use slot::Slot;
use uart::Uart0;

/// Storage: 1 KiB receive buffer (an MCP host's requests to this device are small: the
/// longest, `initialize`, is a few hundred bytes); 1 KiB transmit buffer (the `tools/list`
/// answer, the largest frame this image sends, is 849 bytes; it is rendered in the MCP
/// server's 1 KiB stack buffer first); batches are refused, so the batch-reply storage is
/// minimal; two pending-request slots (the device sends no requests) and two in-flight slots
/// (every request is answered before the next is read).
const RX: usize = 1024;
const TX: usize = 1024;
const BATCH: usize = 8;
const PENDING: usize = 2;
/// In-flight requests, and the MCP request-tracking table's size.
pub const INFLIGHT: usize = 2;

/// The connection's storage.
type Store = Inline<TX, BATCH, PENDING, INFLIGHT>;
type Firmware = Driver<Uart0, SysTickClock, Store, RX>;
/// The driver's context inside the handler.
pub type Ctx<'a> = Context<'a, Uart0, Store>;

/// The driver's storage, in `.bss`: built there in place at boot (not on the stack).
static DRIVER: Slot<Firmware> = Slot::new();

/// MCP 2025-06-18 and later refuse JSON-RPC batches.
const CONFIG: Config = Config {
    batches: false,
    ..Config::DEFAULT
};

/// Params of the `booted` notification sent at start-up.
const BOOTED: &str = concat!(
    r#"{"firmware":"rpcwire-firmware-mcp","version":""#,
    env!("CARGO_PKG_VERSION"),
    r#""}"#
);

#[entry]
fn main() -> ! {
    let uart = board::start();
    let slot = DRIVER.take().unwrap_or_else(|| board::halt());
    let driver = Firmware::new_in(slot, uart, SysTickClock::default(), CONFIG);

    // The transport is infallible and this frame always fits: nothing can fail here.
    let _ = driver.send_notification("booted", Some(&rpcwire_mcp::Raw(BOOTED.as_bytes())));

    let mut device = tools::Device::new();
    board::run(|| {
        let _ = driver.poll(|ctx, item| device.handle(ctx, item));
    })
}
