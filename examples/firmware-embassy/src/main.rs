#![no_std]
#![no_main]
//! rpcwire on embassy: a firmware image for qemu's `mps2-an386` board (Cortex-M4F) that serves
//! the demo methods of `rpcwire serve` over UART0 with the async driver, in one embassy task,
//! while a second task sends a `telemetry` notification every second through an outbox.
//!
//! Tasks: `main` (the driver: `serve_with_outbox`, a typed dispatch table for the methods,
//! embassy-time for deadlines) and `telemetry` (an embassy-time ticker). The UART's receive
//! interrupt wakes the driver; SysTick drives embassy-time.
//!
//! Run it: `cargo run --release` (UART0 on the terminal).

mod demo;
#[path = "../../firmware/src/params.rs"]
mod params;
// Only `int`, for `params`.
#[allow(dead_code)]
#[path = "../../firmware/src/text.rs"]
mod text;

use embassy_executor::Spawner;
use embassy_sync::blocking_mutex::raw::CriticalSectionRawMutex;
use panic_halt as _;
use rpcwire::Config;
use rpcwire_embedded_io::asynch::AsyncDriver;
use rpcwire_embedded_io::outbox::Outbox;
use rpcwire_embedded_io::{Incoming, Inline};
use rpcwire_firmware_embassy::clock::EmbassyClock;
use rpcwire_firmware_embassy::uart::Uart0;
use serde::Serialize;
use static_cell::StaticCell;

/// Storage: 1 KiB receive and transmit buffers, 960 B of batch replies (the specification's
/// six-element batch fits), two pending and two in-flight slots.
type Firmware = AsyncDriver<Uart0, EmbassyClock, Inline<1024, 960, 2, 2>, 1024>;

/// The driver, in `.bss` (built in place at boot: not on the main task's stack).
static DRIVER: StaticCell<Firmware> = StaticCell::new();

/// Notifications other tasks send while the driver serves: four of up to 64 bytes of params.
static OUTBOX: Outbox<CriticalSectionRawMutex, 4, 64> = Outbox::new();

#[embassy_executor::main]
async fn main(spawner: Spawner) {
    let uart = rpcwire_firmware_embassy::start();
    match telemetry() {
        Ok(task) => spawner.spawn(task),
        Err(_) => rpcwire_firmware_embassy::halt(),
    }
    let driver = Firmware::new_in(DRIVER.uninit(), uart, EmbassyClock, Config::DEFAULT);
    let mut methods = demo::methods();
    let mut state = demo::Demo;
    // Returns only on a UART error (an overrun): then serve on.
    loop {
        let _ = driver
            .serve_with_outbox(&OUTBOX, async |ctx, item| match item {
                Incoming::Request(req) if req.method.eq_str("echo") => {
                    let _ = ctx.respond(req.handle, &req.params).await;
                }
                item => {
                    ctx.dispatch(&mut methods, &mut state, item).await;
                }
            })
            .await;
    }
}

/// The params of a `telemetry` notification.
#[derive(Serialize)]
struct Telemetry {
    /// Counts the notifications sent: a host sees whether one went missing.
    seq: u32,
    uptime_ms: u64,
}

/// Sends `{"jsonrpc":"2.0","method":"telemetry","params":{"seq":N,"uptime_ms":M}}` every
/// second, from its own task, while the driver serves calls.
#[embassy_executor::task]
async fn telemetry() {
    let mut every_second = embassy_time::Ticker::every(embassy_time::Duration::from_secs(1));
    let mut seq = 0;
    loop {
        every_second.next().await;
        seq += 1;
        let uptime_ms = embassy_time::Instant::now().as_millis();
        let _ = OUTBOX
            .notify("telemetry", Some(&Telemetry { seq, uptime_ms }))
            .await;
    }
}
