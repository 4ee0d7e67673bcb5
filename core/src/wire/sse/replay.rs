//! [`Replay`]: the last events of a stream, numbered, kept for clients that resume with
//! `Last-Event-ID` (feature `alloc`).

use alloc::collections::VecDeque;

/// The events of one stream, numbered from 1 in the order pushed, the last of them kept for
/// resumption in a buffer bounded in count and in bytes: past either bound the oldest go
/// first, and the newest is always kept. A client that comes back after event `n` gets the
/// events after it ([`after`](Replay::after)), unless some of them were dropped already.
/// Pushing, and finding where a resumption starts, cost the same however many are held.
///
/// ```
/// use rpcwire::wire::sse::Replay;
///
/// let mut events = Replay::new();
/// assert_eq!(events.push(&b"one"[..], 2, 1024), (1, true));
/// assert_eq!(events.push(&b"two"[..], 2, 1024), (2, true));
/// assert_eq!(events.push(&b"three"[..], 2, 1024), (3, false)); // "one" was dropped
/// let after_two: Vec<_> = events.after(2).unwrap().collect();
/// assert_eq!(after_two, [(3, &&b"three"[..])]);
/// assert!(events.after(0).is_none()); // event 1 is gone: the client would miss it
/// ```
#[derive(Debug, Clone)]
pub struct Replay<T> {
    /// (number, event), oldest first; the numbers have no gaps.
    events: VecDeque<(u64, T)>,
    bytes: usize,
    last: u64,
}

impl<T> Default for Replay<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Replay<T> {
    /// No event yet.
    pub const fn new() -> Self {
        Replay {
            events: VecDeque::new(),
            bytes: 0,
            last: 0,
        }
    }

    /// The number of the last event pushed (0 before the first).
    pub fn last(&self) -> u64 {
        self.last
    }

    /// The number of the oldest event held (`last() + 1` when none is).
    pub fn oldest(&self) -> u64 {
        self.events.front().map_or(self.last + 1, |e| e.0)
    }

    /// How many events are held.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// True when no event is held.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The bytes the events held take.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The events after number `after`, oldest first; `None` when some of them were dropped
    /// already (a client resuming there would miss events).
    pub fn after(&self, after: u64) -> Option<impl Iterator<Item = (u64, &T)>> {
        let oldest = self.oldest();
        let next = after.saturating_add(1);
        if next < oldest {
            return None;
        }
        let skip = usize::try_from(next - oldest).unwrap_or(usize::MAX);
        let skip = skip.min(self.events.len());
        Some(self.events.range(skip..).map(|(n, e)| (*n, e)))
    }
}

impl<T: AsRef<[u8]>> Replay<T> {
    /// Numbers and keeps `event`, then drops the oldest while more than `max_events` are held
    /// or more than `max_bytes` (but the newest is kept): its number, and false when an event
    /// was dropped.
    pub fn push(&mut self, event: T, max_events: usize, max_bytes: usize) -> (u64, bool) {
        self.last += 1;
        self.bytes += event.as_ref().len();
        self.events.push_back((self.last, event));
        let mut whole = true;
        while self.events.len() > max_events || (self.bytes > max_bytes && self.events.len() > 1) {
            if let Some((_, old)) = self.events.pop_front() {
                self.bytes -= old.as_ref().len();
                whole = false;
            }
        }
        (self.last, whole)
    }
}
