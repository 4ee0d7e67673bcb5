//! The core's own clock type. The core never reads a clock: every method that needs the time
//! takes an [`Instant`] argument, so tests can run hours of virtual time in microseconds and a
//! firmware can use any hardware timer.

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
