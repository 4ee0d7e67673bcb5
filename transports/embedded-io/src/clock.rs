//! The driver's source of time.

use rpcwire::Instant;

/// Tells the driver the current time; the connection uses it for request deadlines.
///
/// Implemented for every `FnMut() -> Instant`, so a closure over a tick counter will do:
///
/// ```
/// use rpcwire::Instant;
/// use rpcwire_embedded_io::Clock;
///
/// let mut ticks_ms = 0u64;
/// let mut clock = move || { ticks_ms += 10; Instant::from_millis(ticks_ms) };
/// assert_eq!(clock.now(), Instant::from_millis(10));
/// assert_eq!(Clock::now(&mut clock), Instant::from_millis(20));
/// ```
///
/// A firmware derives it from SysTick or a hardware timer; the origin is arbitrary (boot is
/// usual) but the clock must not go backwards.
pub trait Clock {
    /// The current time.
    fn now(&mut self) -> Instant;
}

impl<F: FnMut() -> Instant> Clock for F {
    fn now(&mut self) -> Instant {
        self()
    }
}

/// A clock that always says [`Instant::ZERO`]: for pure servers, which have no deadlines.
///
/// ```
/// use rpcwire_embedded_io::{clock::NoClock, Clock};
/// assert_eq!(NoClock.now(), rpcwire::Instant::ZERO);
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct NoClock;

impl Clock for NoClock {
    fn now(&mut self) -> Instant {
        Instant::ZERO
    }
}
