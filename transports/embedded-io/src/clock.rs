//! The driver's source of time.

use core::time::Duration;

use rpcwire::{Instant, Schedule};

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

    /// A tick of the device's own schedule that is due at `now` (the instant it was due
    /// for), which the driver hands to the handler as [`Incoming::Tick`](crate::Incoming::Tick).
    /// Plain clocks keep no schedule and say `None`, inline, so that images which never tick
    /// carry no code for it; [`Ticker`] keeps one.
    fn tick(&mut self, now: Instant) -> Option<Instant> {
        let _ = now;
        None
    }

    /// When the next tick is due, if any (the driver's deadline covers it).
    fn next_tick(&self) -> Option<Instant> {
        None
    }
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

/// A clock with a periodic schedule (the core's [`Schedule`]): every `period` the driver hands
/// the handler an [`Incoming::Tick`](crate::Incoming::Tick), with a context to send the
/// device's own notifications from (telemetry, a heartbeat), and the driver's deadline
/// ([`Driver::poll`](crate::Driver::poll)'s result) covers the next tick, so a main loop that
/// sleeps until that deadline wakes in time.
///
/// Ticks stay on the period's grid and are never delivered in a burst: a tick served late
/// (the device was busy) is delivered once, and when the grid's next point has passed too,
/// the next tick is due a period from now.
///
/// ```
/// use core::time::Duration;
/// use rpcwire::Instant;
/// use rpcwire_embedded_io::clock::Ticker;
/// use rpcwire_embedded_io::Clock;
///
/// let mut ms = 0u64;
/// let mut clock = Ticker::new(move || { ms += 400; Instant::from_millis(ms) });
/// clock.set_period(Some(Duration::from_secs(1))); // reads 400 ms: first tick at 1 400 ms
/// assert_eq!(clock.next_tick(), Some(Instant::from_millis(1400)));
/// assert_eq!(clock.tick(Instant::from_millis(1000)), None);
/// assert_eq!(clock.tick(Instant::from_millis(1500)), Some(Instant::from_millis(1400)));
/// assert_eq!(clock.next_tick(), Some(Instant::from_millis(2400)));
/// // Late by more than a period: one tick, and the next a period after now.
/// assert_eq!(clock.tick(Instant::from_millis(5000)), Some(Instant::from_millis(2400)));
/// assert_eq!(clock.next_tick(), Some(Instant::from_millis(6000)));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Ticker<C> {
    clock: C,
    schedule: Schedule,
}

/// The shortest period of a [`Ticker`]: a tick is due only once the clock has moved, so a
/// driver call that ticks always ends, however fast the clock's resolution lets it run.
pub const MIN_TICK: Duration = Schedule::MIN_PERIOD;

impl<C: Clock> Ticker<C> {
    /// `clock` with no schedule yet ([`set_period`](Ticker::set_period) starts one).
    pub const fn new(clock: C) -> Self {
        Ticker {
            clock,
            schedule: Schedule::new(),
        }
    }

    /// Starts a schedule of one tick every `period` (at least [`MIN_TICK`]), the first a
    /// period from now, or stops it with `None`.
    pub fn set_period(&mut self, period: Option<Duration>) {
        let now = self.clock.now();
        self.schedule.set_period(now, period);
    }

    /// The period, if a schedule runs.
    pub fn period(&self) -> Option<Duration> {
        self.schedule.period()
    }

    /// The clock inside.
    pub fn inner(&mut self) -> &mut C {
        &mut self.clock
    }
}

/// The core's [`Schedule`] over a clock.
impl<C: Clock> Clock for Ticker<C> {
    fn now(&mut self) -> Instant {
        self.clock.now()
    }

    fn tick(&mut self, now: Instant) -> Option<Instant> {
        self.schedule.tick(now)
    }

    fn next_tick(&self) -> Option<Instant> {
        self.schedule.next_tick()
    }
}
