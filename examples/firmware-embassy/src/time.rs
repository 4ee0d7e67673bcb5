//! embassy-time's time driver on SysTick: a 1 kHz tick (the `tick-hz-1_000` feature), and
//! embassy-time-queue-utils' timer queue, whose due wakers each tick wakes.
//!
//! No HAL supports this board, so the image provides the driver itself, as embassy's
//! documentation describes: `Driver::now` and `Driver::schedule_wake`, registered with
//! `time_driver_impl!`.

use core::cell::{Cell, RefCell};
use core::task::Waker;

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;
use cortex_m_rt::exception;
use critical_section::Mutex;
use embassy_time_driver::Driver;
use embassy_time_queue_utils::Queue;

/// Ticks since boot and the wakers waiting for a later tick.
struct SysTickDriver {
    ticks: Mutex<Cell<u64>>,
    queue: Mutex<RefCell<Queue>>,
}

impl Driver for SysTickDriver {
    fn now(&self) -> u64 {
        critical_section::with(|cs| self.ticks.borrow(cs).get())
    }

    fn schedule_wake(&self, at: u64, waker: &Waker) {
        critical_section::with(|cs| {
            let mut queue = self.queue.borrow_ref_mut(cs);
            // Already due: woken at once (the next tick would do too, a millisecond later).
            if queue.schedule_wake(at, waker) {
                queue.next_expiration(self.ticks.borrow(cs).get());
            }
        });
    }
}

embassy_time_driver::time_driver_impl!(static DRIVER: SysTickDriver = SysTickDriver {
    ticks: Mutex::new(Cell::new(0)),
    queue: Mutex::new(RefCell::new(Queue::new())),
});

/// Starts SysTick at 1 kHz on the core clock (`clock_hz`).
pub fn start(mut syst: SYST, clock_hz: u32) {
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(clock_hz / 1000 - 1);
    syst.clear_current();
    syst.enable_counter();
    syst.enable_interrupt();
}

#[exception]
fn SysTick() {
    critical_section::with(|cs| {
        let ticks = DRIVER.ticks.borrow(cs);
        let now = ticks.get() + 1;
        ticks.set(now);
        DRIVER.queue.borrow_ref_mut(cs).next_expiration(now);
    });
}
