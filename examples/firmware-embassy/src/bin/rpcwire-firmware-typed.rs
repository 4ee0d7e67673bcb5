#![no_std]
#![no_main]
//! Typed methods on the blocking driver: a firmware for qemu's `mps2-an386` board (Cortex-M4F)
//! with three methods in a dispatch table, `led.set`, `temp.read` (an `f32` result) and `add`,
//! and a `telemetry` notification every second from the driver's own schedule (a `Ticker`
//! clock). Invalid params and unknown methods are answered by the table.
//!
//! With feature `integer-temp`, `temp.read` answers centidegrees as an integer: CI builds both
//! and reports what the `f32` result costs in flash.

use core::time::Duration;

use cortex_m_rt::entry;
use panic_halt as _;
use rpcwire::Config;
use rpcwire_embedded_io::clock::Ticker;
use rpcwire_embedded_io::methods::{MethodError, MethodList, Methods, NoParams};
use rpcwire_embedded_io::{Driver, Incoming, Inline};
use rpcwire_firmware_embassy::clock::EmbassyClock;
use rpcwire_firmware_embassy::uart::Uart0;
use serde::Serialize;
use static_cell::StaticCell;

type Firmware = Driver<Uart0, Ticker<EmbassyClock>, Inline<1024, 960, 2, 2>, 1024>;
static DRIVER: StaticCell<Firmware> = StaticCell::new();

/// What `temp.read` answers: degrees as an `f32`, or with feature `integer-temp` the
/// sensor's centidegrees (the build CI compares, to measure what an `f32` result costs).
#[cfg(not(feature = "integer-temp"))]
fn reading(centi_celsius: i32) -> f32 {
    centi_celsius as f32 / 100.0
}

#[cfg(feature = "integer-temp")]
fn reading(centi_celsius: i32) -> i32 {
    centi_celsius
}

#[entry]
fn main() -> ! {
    let uart = rpcwire_firmware_embassy::start();
    let clock = Ticker::new(EmbassyClock);
    let driver = Firmware::new_in(DRIVER.uninit(), uart, clock, Config::DEFAULT);
    serve(driver)
}

// --- handler code: the device, its three methods and the serve loop (CI counts these lines) ---

/// The device: an LED and a temperature sensor (in centidegrees, as sensors report).
#[derive(Serialize)]
struct Board {
    led: bool,
    centi_celsius: i32,
}

fn methods() -> Methods<Board, impl MethodList<Board>> {
    Methods::new()
        .method("led.set", |b: &mut Board, (on,): (bool,)| {
            b.led = on;
            Ok(on)
        })
        .method("temp.read", |b: &mut Board, _: NoParams| {
            Ok(reading(b.centi_celsius))
        })
        .method("add", |_: &mut Board, (x, y): (i32, i32)| {
            x.checked_add(y).ok_or(MethodError::INVALID_PARAMS)
        })
}

/// Serves the methods, and sends the board's state as `telemetry` every second.
fn serve(driver: &mut Firmware) -> ! {
    driver.clock_mut().set_period(Some(Duration::from_secs(1)));
    let mut board = Board {
        led: false,
        centi_celsius: 2150,
    };
    let mut methods = methods();
    loop {
        let _ = driver.poll(|ctx, item| {
            if let Some(Incoming::Tick(_)) = methods.dispatch(&mut board, ctx, item) {
                let _ = ctx.send_notification("telemetry", Some(&board));
            }
        });
        // SysTick (every millisecond) and the UART's receive interrupt wake the core.
        cortex_m::asm::wfi();
    }
}
// --- end of handler code ---
