//! Milliseconds since boot from SysTick, as an `rpcwire::Instant`.

use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;
use cortex_m_rt::exception;
use rpcwire::Instant;

static MILLIS: AtomicU32 = AtomicU32::new(0);

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
    MILLIS.fetch_add(1, Ordering::Relaxed);
}

/// The driver's clock: the 32-bit tick count, extended to 64 bits so that it never goes
/// backwards (the tick count wraps after 49 days).
#[derive(Default)]
pub struct SysTickClock {
    last: u32,
    high: u64,
}

impl SysTickClock {
    /// Milliseconds since boot.
    pub fn millis(&mut self) -> u64 {
        let now = MILLIS.load(Ordering::Relaxed);
        if now < self.last {
            self.high += 1 << 32;
        }
        self.last = now;
        self.high | u64::from(now)
    }
}

impl rpcwire_embedded_io::Clock for SysTickClock {
    fn now(&mut self) -> Instant {
        Instant::from_millis(self.millis())
    }
}
