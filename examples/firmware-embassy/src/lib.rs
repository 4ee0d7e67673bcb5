#![no_std]
//! What the mps2-an386 images share: the board (a Cortex-M4F with CMSDK UARTs, as qemu's
//! `mps2-an386` models it), a UART driver written as a HAL would write it (its own error type,
//! embedded-io 0.7 and embedded-io-async 0.7 implemented directly, an interrupt-driven
//! receiver), the time driver embassy-time runs on (SysTick at 1 kHz), and the clock that
//! rpcwire's drivers read from it.

pub mod clock;
#[path = "../../firmware/src/mmio.rs"]
mod mmio;
pub mod time;
pub mod uart;

/// The core clock of the MPS2 board (qemu models 25 MHz).
pub const CLOCK_HZ: u32 = 25_000_000;

/// Stops for good (a peripheral was already taken, a task could not be spawned: a bug).
pub fn halt() -> ! {
    loop {
        cortex_m::asm::wfi();
    }
}

/// Starts the board: the millisecond time driver and UART0 at 115 200 baud. Halts if a
/// peripheral is already taken.
pub fn start() -> uart::Uart0 {
    let core = cortex_m::Peripherals::take().unwrap_or_else(|| halt());
    time::start(core.SYST, CLOCK_HZ);
    uart::Uart0::take(CLOCK_HZ, 115_200).unwrap_or_else(|| halt())
}
