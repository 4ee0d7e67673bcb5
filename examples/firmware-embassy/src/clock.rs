//! rpcwire's clock on embassy-time: the driver reads `embassy_time::Instant::now()` and, as an
//! async [`Timer`], sleeps with `embassy_time::Timer::at`.

use rpcwire::Instant;
use rpcwire_embedded_io::asynch::Timer;
use rpcwire_embedded_io::Clock;

/// embassy-time's clock, for rpcwire's drivers (a unit struct: a nameable driver type).
#[derive(Debug, Clone, Copy, Default)]
pub struct EmbassyClock;

impl Clock for EmbassyClock {
    fn now(&mut self) -> Instant {
        Instant::from_micros(embassy_time::Instant::now().as_micros())
    }
}

impl Timer for EmbassyClock {
    async fn sleep_until(&mut self, at: Instant) {
        embassy_time::Timer::at(embassy_time::Instant::from_micros(at.as_micros())).await
    }
}
