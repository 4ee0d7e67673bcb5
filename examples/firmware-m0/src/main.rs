#![no_std]
#![no_main]
//! rpcwire on a Cortex-M0: a firmware image for the qemu `microbit` board (BBC micro:bit,
//! Nordic nRF51822) that serves the demo methods of `rpcwire serve` (`subtract`, `sum`,
//! `get_data`, `echo`, `update`, `notify_hello`, `notify_sum`) over UART0 with newline
//! framing, with no heap, in 16 KiB of flash and 4 KiB of RAM. For flash it leaves out what
//! the Cortex-M3 image adds to the demo methods: `rpc.stats` (0.5 KiB on this core) and the
//! `booted` notification (0.85 KiB: the only notification, it alone links the sending path).
//!
//! The UART is interrupt-driven: the receive interrupt queues bytes, and the main loop hands
//! them to the driver with `Driver::handle_bytes`, sleeping (`wfi`) while none are queued.
//!
//! Run it: `cargo run --release` (the UART on the terminal).

#[path = "../../firmware/src/mem.rs"]
mod mem;
#[path = "../../firmware/src/methods.rs"]
mod methods;
#[path = "../../firmware/src/mmio.rs"]
mod mmio;
#[path = "../../firmware/src/params.rs"]
mod params;
#[path = "../../firmware/src/text.rs"]
mod text;
mod uart;

use core::mem::MaybeUninit;

use cortex_m_rt::entry;
use panic_halt as _;
use rpcwire::Config;
use rpcwire_embedded_io::clock::NoClock;
use rpcwire_embedded_io::{Context, Driver, Incoming, Inline};

use uart::{RxQueue, Uart0};

/// Storage: 1 KiB receive buffer, 1 KiB transmit buffer, 960 B for batch replies (the
/// specification's six-element batch fits), two pending and two in-flight slots.
type Store = Inline<1024, 960, 2, 2>;
type Firmware = Driver<Uart0, NoClock, Store, 1024>;
/// The handler's context (the name `methods.rs` answers through).
type Ctx<'a> = Context<'a, Uart0, Store>;

#[entry]
fn main() -> ! {
    // `#[entry]` hands out these `static mut`s once, as `&'static mut`, safely: the driver
    // and the receive queue live in `.bss`, not on the stack.
    #[allow(clippy::declare_interior_mutable_const)]
    let (slot, queue): (&'static mut MaybeUninit<Firmware>, &'static mut RxQueue) = {
        static mut DRIVER: MaybeUninit<Firmware> = MaybeUninit::uninit();
        static mut QUEUE: RxQueue = RxQueue::new();
        // SAFETY: `main` runs once and these statics are named nowhere else.
        #[allow(static_mut_refs)]
        unsafe {
            (&mut DRIVER, &mut QUEUE)
        }
    };
    let (uart, mut received) = Uart0::start(queue);
    let driver = Firmware::new_in(slot, uart, NoClock, Config::DEFAULT);

    let mut chunk = [0u8; 64];
    loop {
        // Interrupts masked between the check and `wfi`: a byte that arrives in between
        // still wakes the core (a pending interrupt ends `wfi` even when masked), then the
        // interrupt runs as soon as they are unmasked.
        cortex_m::interrupt::disable();
        if !received.ready() {
            cortex_m::asm::wfi();
        }
        // SAFETY: not inside a critical section (nothing else masks interrupts here).
        unsafe { cortex_m::interrupt::enable() };
        let mut n = 0;
        for slot in chunk.iter_mut() {
            let Some(b) = received.dequeue() else { break };
            *slot = b;
            n += 1;
        }
        uart::resume_receiving();
        let mut fed = &chunk[..n];
        while !fed.is_empty() {
            match driver.handle_bytes(fed, handle) {
                Ok(taken) => fed = &fed[taken..],
                Err(_) => break,
            }
        }
    }
}

/// Answers requests (see `methods`); notifications, problems (already answered by the
/// connection) and events need nothing.
fn handle(ctx: &mut Ctx<'_>, item: Incoming<'_>) {
    if let Incoming::Request(req) = item {
        let _ = methods::answer(ctx, &req);
    }
}

/// UART0's interrupt.
extern "C" fn uart0() {
    uart::on_interrupt();
}

/// The interrupt part of the vector table: the nRF51 has 32 interrupts, the image uses UART0's
/// (number 2) only, so three entries are enough.
#[link_section = ".vector_table.interrupts"]
#[no_mangle]
#[used]
static __INTERRUPTS: [unsafe extern "C" fn(); 3] = [DefaultHandler, DefaultHandler, uart0];

extern "C" {
    /// cortex-m-rt's handler for unexpected interrupts.
    fn DefaultHandler();
}
