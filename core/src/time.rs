//! The core's own clock type, and a periodic [`Schedule`] on it. The core never reads a clock:
//! every method that needs the time takes an [`Instant`] argument, so tests can run hours of
//! virtual time in microseconds and a firmware can use any hardware timer.

use core::time::Duration;

/// A point in time, in microseconds since an origin the caller chooses (boot, process start,
/// the start of a simulation). Only differences between instants are meaningful.
///
/// ```
/// use core::time::Duration;
/// use rpcwire::Instant;
///
/// let boot = Instant::ZERO;
/// let later = boot + Duration::from_millis(1500);
/// assert_eq!(later.as_micros(), 1_500_000);
/// assert_eq!(later.saturating_duration_since(boot), Duration::from_millis(1500));
/// assert_eq!(boot.saturating_duration_since(later), Duration::ZERO);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Instant(u64);

impl Instant {
    /// The origin.
    pub const ZERO: Instant = Instant(0);
    /// The latest representable instant; used as "never".
    pub const MAX: Instant = Instant(u64::MAX);

    /// An instant `micros` microseconds after the origin.
    pub const fn from_micros(micros: u64) -> Self {
        Instant(micros)
    }

    /// An instant `millis` milliseconds after the origin (saturating).
    pub const fn from_millis(millis: u64) -> Self {
        Instant(millis.saturating_mul(1000))
    }

    /// Microseconds since the origin.
    pub const fn as_micros(self) -> u64 {
        self.0
    }

    /// Time elapsed from `earlier` to `self`, or zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_micros(self.0.saturating_sub(earlier.0))
    }

    /// `self + d`, saturating at [`Instant::MAX`].
    pub fn saturating_add(self, d: Duration) -> Instant {
        let micros = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        Instant(self.0.saturating_add(micros))
    }
}

impl core::ops::Add<Duration> for Instant {
    type Output = Instant;
    /// Saturating addition: an instant never wraps around.
    fn add(self, d: Duration) -> Instant {
        self.saturating_add(d)
    }
}

#[cfg(feature = "std")]
impl Instant {
    /// Converts a `std::time::Instant` given the `origin` that maps to [`Instant::ZERO`].
    /// Instants before the origin map to the origin. Needs the `std` feature (a firmware
    /// builds its instants from a timer with [`Instant::from_micros`]).
    pub fn from_std(origin: std::time::Instant, at: std::time::Instant) -> Instant {
        let d = at.saturating_duration_since(origin);
        Instant(u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
    }

    /// The `std::time::Instant` this instant corresponds to, given the same `origin`. Needs
    /// the `std` feature.
    pub fn to_std(self, origin: std::time::Instant) -> std::time::Instant {
        origin + Duration::from_micros(self.0)
    }
}

/// A periodic schedule: one tick every period, on the period's grid. It reads no clock: the
/// caller gives it the time, as to the connection. A driver asks [`tick`](Schedule::tick)
/// whether a tick is due (and hands it to its handler), and includes
/// [`next_tick`](Schedule::next_tick) in the deadline it sleeps until
/// (rpcwire-embedded-io's `clock::Ticker` is a clock with one).
///
/// Ticks stay on the period's grid and are never delivered in a burst: a tick served late
/// (the device was busy) is delivered once, and when the grid's next point has passed too,
/// the next tick is due a period from now.
///
/// ```
/// use core::time::Duration;
/// use rpcwire::{Instant, Schedule};
///
/// let mut schedule = Schedule::new();
/// assert_eq!(schedule.tick(Instant::from_millis(400)), None); // no period yet
/// schedule.set_period(Instant::from_millis(400), Some(Duration::from_secs(1)));
/// assert_eq!(schedule.next_tick(), Some(Instant::from_millis(1400)));
/// assert_eq!(schedule.tick(Instant::from_millis(1000)), None);
/// assert_eq!(schedule.tick(Instant::from_millis(1500)), Some(Instant::from_millis(1400)));
/// assert_eq!(schedule.next_tick(), Some(Instant::from_millis(2400)));
/// // Late by more than a period: one tick, and the next a period after now.
/// assert_eq!(schedule.tick(Instant::from_millis(5000)), Some(Instant::from_millis(2400)));
/// assert_eq!(schedule.next_tick(), Some(Instant::from_millis(6000)));
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Schedule {
    /// When the next tick is due, in microseconds (`Instant`'s unit).
    next: u64,
    /// The period in microseconds, at least [`Schedule::MIN_PERIOD`]; 0: no schedule.
    /// Converted once, when set: adding a `Duration` to an `Instant` on every driver call
    /// would link a 64-bit division.
    period: u64,
}

impl Schedule {
    /// The shortest period: a tick is due only once the clock has moved, so a driver call
    /// that ticks always ends, however fast the clock's resolution lets it run.
    pub const MIN_PERIOD: Duration = Duration::from_millis(1);

    /// No schedule yet ([`set_period`](Schedule::set_period) starts one).
    pub const fn new() -> Self {
        Schedule { next: 0, period: 0 }
    }

    /// Starts a schedule of one tick every `period` (at least
    /// [`MIN_PERIOD`](Self::MIN_PERIOD)), the first a period after `now`, or stops it with
    /// `None`.
    pub fn set_period(&mut self, now: Instant, period: Option<Duration>) {
        self.period = match period {
            Some(p) => u64::try_from(p.max(Self::MIN_PERIOD).as_micros()).unwrap_or(u64::MAX),
            None => 0,
        };
        self.next = now.0.saturating_add(self.period);
    }

    /// The period, if a schedule runs.
    pub fn period(&self) -> Option<Duration> {
        (self.period > 0).then(|| Duration::from_micros(self.period))
    }

    /// The tick due at `now`, if any (the instant it was due for); the next is then due a
    /// period later on the grid, or a period after `now` when that has passed too.
    pub fn tick(&mut self, now: Instant) -> Option<Instant> {
        let now = now.0;
        if self.period == 0 || now < self.next {
            return None;
        }
        let due = self.next;
        // On the period's grid, so that a tick served a little late does not make the
        // schedule drift; a period from now when the grid's next point has passed already.
        self.next = due.saturating_add(self.period);
        if self.next <= now {
            self.next = now.saturating_add(self.period);
        }
        Some(Instant(due))
    }

    /// When the next tick is due, if a schedule runs.
    pub fn next_tick(&self) -> Option<Instant> {
        (self.period > 0).then_some(Instant(self.next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_keeps_its_shortest_period_and_stops() {
        let mut s = Schedule::new();
        s.set_period(Instant::ZERO, Some(Duration::ZERO));
        assert_eq!(s.period(), Some(Schedule::MIN_PERIOD));
        assert_eq!(s.tick(Instant::from_micros(999)), None);
        assert_eq!(
            s.tick(Instant::from_millis(1)),
            Some(Instant::from_millis(1))
        );
        s.set_period(Instant::from_millis(1), None);
        assert_eq!((s.period(), s.next_tick()), (None, None));
        assert_eq!(s.tick(Instant::MAX), None);
    }
}
