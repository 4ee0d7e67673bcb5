//! The board both firmware images run on (qemu's `lm3s6965evb`, a TI Stellaris LM3S6965,
//! Cortex-M3): start-up, the main loop's sleep, the vector table and halting.

use crate::clock;
use crate::stack;
use crate::uart::Uart0;

/// The core clock after reset (the 12 MHz internal oscillator; qemu models about that).
const CLOCK_HZ: u32 = 12_000_000;
const BAUD: u32 = 115_200;

/// Starts the board: paints the stack (for the high-water mark), opens UART0 at 115 200 baud
/// and starts the millisecond SysTick clock. Halts if a peripheral is already taken.
///
/// `start` and `run` are inlined into `main` on purpose: as calls they cost the images 272
/// and 200 bytes of flash (measured), and the demo image has 148 bytes to spare.
#[inline(always)]
pub fn start() -> Uart0 {
    stack::paint();
    let mut core = cortex_m::Peripherals::take().unwrap_or_else(|| halt());
    let uart = Uart0::take(CLOCK_HZ, BAUD).unwrap_or_else(|| halt());
    clock::start(core.SYST, CLOCK_HZ);
    core.SCB.clear_sleepdeep();
    uart
}

/// Runs `poll` for ever, sleeping until the next interrupt after each turn (SysTick wakes the
/// core every millisecond). `poll` must never block: it reads what the FIFO holds, answers
/// and writes out.
#[inline(always)]
pub fn run(mut poll: impl FnMut()) -> ! {
    loop {
        poll();
        cortex_m::asm::wfi();
    }
}

/// Stops for good (a peripheral or the driver's storage was already taken: a bug).
pub fn halt() -> ! {
    loop {
        cortex_m::asm::wfi();
    }
}

/// The interrupt part of the vector table: the LM3S6965 has 38 interrupts, the images enable
/// none (they poll UART0 and wake on SysTick), so eight default entries are enough.
/// cortex-m-rt's default table has 240 entries: 928 bytes more flash.
#[link_section = ".vector_table.interrupts"]
#[no_mangle]
#[used]
static __INTERRUPTS: [unsafe extern "C" fn(); 8] = [DefaultHandler; 8];

extern "C" {
    /// cortex-m-rt's handler for unexpected interrupts.
    fn DefaultHandler();
}
