//! The deterministic link: two byte queues of fixed capacity between side A and side B, with
//! seeded chunking, coalescing, delay and faults, driven by a virtual clock.

use core::time::Duration;
use rpcwire::storage::Inline;

use rpcwire::wire::RxBuffer;
use rpcwire::{Connection, Instant};

use crate::SplitMix64;

/// One end of a [`Link`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The first end.
    A,
    /// The second end.
    B,
}

impl Side {
    /// The other end.
    pub const fn peer(self) -> Side {
        match self {
            Side::A => Side::B,
            Side::B => Side::A,
        }
    }

    /// Both ends, A first.
    pub const BOTH: [Side; 2] = [Side::A, Side::B];

    const fn index(self) -> usize {
        match self {
            Side::A => 0,
            Side::B => 1,
        }
    }
}

/// Faults the link injects, each decided by the seeded generator. Probabilities are in parts
/// per million and are rolled once per accepted write.
///
/// The default is no faults at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Faults {
    /// Probability that one byte of a write is corrupted (XORed with a random non-zero value)
    /// before delivery.
    pub corrupt_ppm: u32,
    /// Probability that a write loses a random-length tail (at least one byte): the writer is
    /// told everything was written, the reader never sees the tail.
    pub truncate_ppm: u32,
    /// Probability that a write breaks the link instead: everything in flight is lost and
    /// both ends get [`LinkError::Broken`] from then on.
    pub drop_ppm: u32,
    /// Breaks the link at this instant (checked by every call that takes the time).
    pub drop_at: Option<Instant>,
}

impl Faults {
    /// No faults.
    pub const NONE: Faults = Faults {
        corrupt_ppm: 0,
        truncate_ppm: 0,
        drop_ppm: 0,
        drop_at: None,
    };

    /// True when no fault can ever happen.
    pub fn is_none(&self) -> bool {
        *self == Faults::NONE
    }
}

/// How a [`Link`] moves bytes.
///
/// ```
/// use core::time::Duration;
/// use rpcwire_memory::{Faults, LinkConfig};
/// let config = LinkConfig {
///     max_chunk: 7,
///     max_delay: Duration::from_millis(20),
///     faults: Faults { corrupt_ppm: 1_000, ..Faults::NONE },
///     ..LinkConfig::IDEAL
/// };
/// assert!(!config.faults.is_none());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkConfig {
    /// Largest number of bytes one read returns; every read returns a random size in
    /// `1..=max_chunk` of what is ready (so a write can arrive split in many pieces).
    /// 0 means no limit: everything ready arrives at once.
    pub max_chunk: usize,
    /// Probability (parts per million) that a read ignores `max_chunk` and returns everything
    /// ready at once, coalescing several writes.
    pub coalesce_ppm: u32,
    /// Shortest delay between a write and the moment its bytes can be read.
    pub min_delay: Duration,
    /// Longest such delay; each write draws one in `min_delay..=max_delay`. Bytes stay in
    /// order: a write is never readable before an earlier one.
    pub max_delay: Duration,
    /// Injected faults.
    pub faults: Faults,
}

impl LinkConfig {
    /// Whole writes (coalesced), no delay, no faults.
    pub const IDEAL: LinkConfig = LinkConfig {
        max_chunk: 0,
        coalesce_ppm: 0,
        min_delay: Duration::ZERO,
        max_delay: Duration::ZERO,
        faults: Faults::NONE,
    };

    /// Reads of at most `max_chunk` bytes (1 gives a byte at a time), no delay, no faults.
    pub const fn chunked(max_chunk: usize) -> LinkConfig {
        LinkConfig {
            max_chunk,
            ..LinkConfig::IDEAL
        }
    }
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig::IDEAL
    }
}

/// Why a link operation failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkError {
    /// The writing side shut its direction down ([`Link::shutdown`]) and every byte has been
    /// read: end of stream. Writing to a shut direction also fails with this.
    Closed,
    /// The link broke ([`Link::break_link`] or a drop fault): bytes in flight are lost.
    Broken,
}

impl core::fmt::Display for LinkError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            LinkError::Closed => "link closed",
            LinkError::Broken => "link broken",
        })
    }
}

#[cfg(feature = "std")]
impl std::error::Error for LinkError {}

/// What a link did, for assertions and for checking that faults were actually exercised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkStats {
    /// Bytes accepted by writes, per direction (index 0: written by A).
    pub written: [u64; 2],
    /// Bytes returned by reads, per direction (index 0: written by A, read by B).
    pub delivered: [u64; 2],
    /// Reads that returned data.
    pub reads: u64,
    /// Writes that had a byte corrupted.
    pub corrupted: u64,
    /// Writes that lost a tail.
    pub truncated: u64,
    /// Bytes lost to truncation.
    pub truncated_bytes: u64,
    /// True once the link broke.
    pub broken: bool,
}

#[derive(Debug, Clone, Copy)]
struct Segment {
    len: usize,
    ready: Instant,
}

const NO_SEGMENT: Segment = Segment {
    len: 0,
    ready: Instant::ZERO,
};

/// One direction: a ring of `CAP` bytes and a ring of `SEGS` write records (ready times).
#[derive(Debug, Clone)]
struct Direction<const CAP: usize, const SEGS: usize> {
    buf: [u8; CAP],
    head: usize,
    len: usize,
    segs: [Segment; SEGS],
    seg_head: usize,
    seg_count: usize,
    last_ready: Instant,
    shut: bool,
}

impl<const CAP: usize, const SEGS: usize> Direction<CAP, SEGS> {
    const fn new() -> Self {
        Direction {
            buf: [0; CAP],
            head: 0,
            len: 0,
            segs: [NO_SEGMENT; SEGS],
            seg_head: 0,
            seg_count: 0,
            last_ready: Instant::ZERO,
            shut: false,
        }
    }

    fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
        self.seg_head = 0;
        self.seg_count = 0;
    }

    fn free(&self) -> usize {
        CAP - self.len
    }

    /// Appends bytes (the caller checked the room) readable from `ready` on.
    fn push(&mut self, bytes: &[u8], ready: Instant) {
        if bytes.is_empty() {
            return;
        }
        for (i, &b) in bytes.iter().enumerate() {
            self.buf[(self.head + self.len + i) % CAP] = b;
        }
        self.len += bytes.len();
        let ready = ready.max(self.last_ready);
        self.last_ready = ready;
        if self.seg_count == SEGS {
            // Out of write records: the bytes join the last write (delivered no earlier than
            // both would have been), so memory stays bounded.
            let last = (self.seg_head + self.seg_count - 1) % SEGS;
            self.segs[last].len += bytes.len();
            self.segs[last].ready = ready;
        } else {
            let at = (self.seg_head + self.seg_count) % SEGS;
            self.segs[at] = Segment {
                len: bytes.len(),
                ready,
            };
            self.seg_count += 1;
        }
    }

    /// Bytes readable at `now` (segments are in ready order).
    fn ready_len(&self, now: Instant) -> usize {
        let mut total = 0;
        for i in 0..self.seg_count {
            let seg = self.segs[(self.seg_head + i) % SEGS];
            if seg.ready > now {
                break;
            }
            total += seg.len;
        }
        total
    }

    fn next_ready(&self) -> Option<Instant> {
        (self.seg_count > 0).then(|| self.segs[self.seg_head].ready)
    }

    /// Moves `out.len()` bytes (all ready) out of the queue.
    fn pop(&mut self, out: &mut [u8]) {
        for (i, b) in out.iter_mut().enumerate() {
            *b = self.buf[(self.head + i) % CAP];
        }
        let mut n = out.len();
        self.head = (self.head + n) % CAP;
        self.len -= n;
        while n > 0 {
            let seg = &mut self.segs[self.seg_head];
            let take = n.min(seg.len);
            seg.len -= take;
            n -= take;
            if seg.len == 0 {
                self.seg_head = (self.seg_head + 1) % SEGS;
                self.seg_count -= 1;
            }
        }
        if self.len == 0 {
            self.head = 0;
        }
    }

    /// Flips one byte among the last `n` written.
    fn corrupt_tail(&mut self, n: usize, rng: &mut SplitMix64) {
        if n == 0 {
            return;
        }
        let offset = self.len - n + rng.index(n);
        let mask = 1 + rng.below(255) as u8;
        self.buf[(self.head + offset) % CAP] ^= mask;
    }
}

/// A deterministic, in-memory, full-duplex byte link between side [`Side::A`] and side
/// [`Side::B`], for simulations. No heap, no clock, no I/O: every call takes the virtual time,
/// and every random decision (read sizes, delays, faults) comes from one seed, so a run is
/// reproduced exactly by its seed and its sequence of calls.
///
/// - `CAP`: bytes each direction holds (a full direction makes [`write`](Link::write) accept
///   fewer bytes, which is backpressure for the writer).
/// - `SEGS`: write records each direction keeps for delays; past it, writes coalesce.
///
/// Two [`Connection`]s are wired with [`flush`] (transmit buffer to link) and [`fill`] (link
/// to receive buffer):
///
/// ```
/// use rpcwire::{Config, Connection, Inbound, Input, Instant, Token};
/// use rpcwire::wire::{RxBuffer, NO_PARAMS};
/// use rpcwire_memory::{fill, flush, Link, LinkConfig, Side};
///
/// let mut link: Link = Link::new(7, LinkConfig::chunked(3)); // reads of 1..=3 bytes
/// let (mut a, mut b): (Connection, Connection) = Default::default();
/// let (mut rx_a, mut rx_b): (RxBuffer<[u8; 1024]>, RxBuffer<[u8; 1024]>) = (a.rx_buffer(), b.rx_buffer());
/// let now = Instant::ZERO;
///
/// a.send_request(now, Token(1), "ping", NO_PARAMS, None).unwrap();
/// flush(&mut link, now, Side::A, &mut a).unwrap();
///
/// // B receives the request in small chunks and answers it.
/// let mut answered = false;
/// while !answered {
///     fill(&mut link, now, Side::B, &mut rx_b).unwrap();
///     while let Input::Item(item) = b.handle_input(now, &mut rx_b, &mut &[][..]) {
///         if let Inbound::Request(req) = item {
///             assert!(req.method.eq_str("ping"));
///             b.respond(req.handle, "pong").unwrap();
///             answered = true;
///         }
///     }
/// }
/// flush(&mut link, now, Side::B, &mut b).unwrap();
///
/// // A gets its token back with the result.
/// let mut result = None;
/// while result.is_none() {
///     fill(&mut link, now, Side::A, &mut rx_a).unwrap();
///     while let Input::Item(item) = a.handle_input(now, &mut rx_a, &mut &[][..]) {
///         if let Inbound::Response(resp) = item {
///             assert_eq!(resp.token, Token(1));
///             result = Some(resp.outcome.unwrap().as_str().to_owned());
///         }
///     }
/// }
/// assert_eq!(result.as_deref(), Some("\"pong\""));
/// assert!(link.is_idle());
/// ```
#[derive(Debug, Clone)]
pub struct Link<const CAP: usize = 4096, const SEGS: usize = 32> {
    config: LinkConfig,
    rng: SplitMix64,
    /// Index 0 carries bytes written by A (read by B).
    dirs: [Direction<CAP, SEGS>; 2],
    stats: LinkStats,
}

impl<const CAP: usize, const SEGS: usize> Link<CAP, SEGS> {
    const CAPACITY_OK: () = {
        assert!(CAP >= 1, "CAP must be at least 1");
        assert!(SEGS >= 1, "SEGS must be at least 1");
    };

    /// A link whose random decisions all come from `seed`.
    pub fn new(seed: u64, config: LinkConfig) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::CAPACITY_OK;
        Link {
            config,
            rng: SplitMix64::new(seed),
            dirs: [Direction::new(), Direction::new()],
            stats: LinkStats::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// Changes the configuration from now on (for example to stop injecting faults so that a
    /// simulation can settle). Bytes in flight keep their ready times.
    pub fn set_config(&mut self, config: LinkConfig) {
        self.config = config;
    }

    /// What happened so far.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// True once the link broke.
    pub fn is_broken(&self) -> bool {
        self.stats.broken
    }

    /// Bytes in flight towards `to` (written by the other side, not yet read).
    pub fn queued(&self, to: Side) -> usize {
        self.dirs[to.peer().index()].len
    }

    /// Bytes `from` can write now without being refused.
    pub fn free(&self, from: Side) -> usize {
        self.dirs[from.index()].free()
    }

    /// True when no byte is in flight in either direction.
    pub fn is_idle(&self) -> bool {
        self.dirs.iter().all(|d| d.len == 0)
    }

    /// When the next bytes towards `to` become readable (`None`: nothing in flight). It may
    /// be in the past: they are readable now.
    pub fn next_ready(&self, to: Side) -> Option<Instant> {
        self.dirs[to.peer().index()].next_ready()
    }

    /// The earliest instant at which something changes by itself: bytes becoming readable in
    /// either direction, or a scheduled drop. A simulation advances its clock to the minimum
    /// of this and its connections' deadlines.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let ready = self.dirs.iter().filter_map(|d| d.next_ready()).min();
        let drop = if self.stats.broken {
            None
        } else {
            self.config.faults.drop_at
        };
        match (ready, drop) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Breaks the link: everything in flight is lost and every later call fails with
    /// [`LinkError::Broken`] (like a reset connection).
    pub fn break_link(&mut self) {
        self.stats.broken = true;
        for d in self.dirs.iter_mut() {
            d.clear();
        }
    }

    /// Gracefully shuts down the direction `from` writes: the other side reads the bytes in
    /// flight, then [`LinkError::Closed`] (end of stream).
    pub fn shutdown(&mut self, from: Side) {
        self.dirs[from.index()].shut = true;
    }

    fn check(&mut self, now: Instant) -> Result<(), LinkError> {
        if let Some(at) = self.config.faults.drop_at {
            if now >= at && !self.stats.broken {
                self.break_link();
            }
        }
        if self.stats.broken {
            Err(LinkError::Broken)
        } else {
            Ok(())
        }
    }

    /// Writes from `from` as many bytes of `bytes` as fit and returns how many were accepted
    /// (0 when the direction is full: backpressure). The bytes become readable by the other
    /// side after a random delay, possibly corrupted or truncated as configured.
    pub fn write(&mut self, now: Instant, from: Side, bytes: &[u8]) -> Result<usize, LinkError> {
        self.check(now)?;
        let dir = from.index();
        if self.dirs[dir].shut {
            return Err(LinkError::Closed);
        }
        let n = bytes.len().min(self.dirs[dir].free());
        if n == 0 {
            return Ok(0);
        }
        let faults = self.config.faults;
        if self.rng.chance(faults.drop_ppm) {
            self.break_link();
            return Err(LinkError::Broken);
        }
        let mut keep = n;
        if self.rng.chance(faults.truncate_ppm) {
            keep = self.rng.index(n);
            self.stats.truncated += 1;
            self.stats.truncated_bytes += (n - keep) as u64;
        }
        let span = self
            .config
            .max_delay
            .saturating_sub(self.config.min_delay)
            .as_micros();
        let jitter = self
            .rng
            .range_inclusive(0, u64::try_from(span).unwrap_or(u64::MAX));
        let ready = now + self.config.min_delay + Duration::from_micros(jitter);
        self.dirs[dir].push(&bytes[..keep], ready);
        if keep > 0 && self.rng.chance(faults.corrupt_ppm) {
            self.dirs[dir].corrupt_tail(keep, &mut self.rng);
            self.stats.corrupted += 1;
        }
        self.stats.written[dir] += n as u64;
        Ok(n)
    }

    /// Reads into `buf` bytes written by the other side that are readable at `now`: a random
    /// amount up to [`LinkConfig::max_chunk`] (or everything ready when coalescing). `Ok(0)`
    /// means nothing is readable yet (or `buf` is empty); see [`next_ready`](Link::next_ready).
    pub fn read(&mut self, now: Instant, to: Side, buf: &mut [u8]) -> Result<usize, LinkError> {
        self.check(now)?;
        let dir = to.peer().index();
        let ready = self.dirs[dir].ready_len(now);
        if ready == 0 {
            let d = &self.dirs[dir];
            return if d.shut && d.len == 0 {
                Err(LinkError::Closed)
            } else {
                Ok(0)
            };
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let max = self.config.max_chunk;
        let chunk = if max == 0 || self.rng.chance(self.config.coalesce_ppm) {
            ready
        } else {
            self.rng.range_inclusive(1, max as u64) as usize
        };
        let n = chunk.min(ready).min(buf.len());
        self.dirs[dir].pop(&mut buf[..n]);
        self.stats.delivered[dir] += n as u64;
        self.stats.reads += 1;
        Ok(n)
    }
}

/// Moves `conn`'s queued output into the link as written by `side`, and reports how many
/// bytes the link accepted (fewer than queued when the link is full). Events are left for
/// [`Connection::poll_event`]; call it after every command or input, like any driver drains
/// [`Connection::poll_output`].
///
/// The link is written through the core's drain, [`Connection::transmit_with`], like the
/// other blocking drivers: it goes on writing while the link takes bytes, so replies that
/// waited for transmit room are moved too.
pub fn flush<
    const TX: usize,
    const BATCH: usize,
    const PENDING: usize,
    const INFLIGHT: usize,
    const CAP: usize,
    const SEGS: usize,
>(
    link: &mut Link<CAP, SEGS>,
    now: Instant,
    side: Side,
    conn: &mut Connection<Inline<TX, BATCH, PENDING, INFLIGHT>>,
) -> Result<usize, LinkError> {
    conn.transmit_with(|bytes| link.write(now, side, bytes))
}

/// Reads what the link has ready for `side` straight into the spare room of `rx` (one read:
/// a random chunk) and reports how many bytes arrived. Then call
/// [`Connection::handle_input`] with an empty input until it returns `None`.
pub fn fill<const CAP: usize, const SEGS: usize, const N: usize>(
    link: &mut Link<CAP, SEGS>,
    now: Instant,
    side: Side,
    rx: &mut RxBuffer<[u8; N]>,
) -> Result<usize, LinkError> {
    let n = link.read(now, side, rx.spare())?;
    rx.commit(n);
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all<const CAP: usize, const SEGS: usize>(
        link: &mut Link<CAP, SEGS>,
        now: Instant,
        to: Side,
        out: &mut [u8],
    ) -> (usize, usize) {
        let (mut total, mut reads) = (0, 0);
        loop {
            match link.read(now, to, &mut out[total..]) {
                Ok(0) | Err(_) => return (total, reads),
                Ok(n) => {
                    total += n;
                    reads += 1;
                }
            }
        }
    }

    #[test]
    fn bytes_arrive_in_order_in_chunks() {
        let mut link: Link<64, 4> = Link::new(1, LinkConfig::chunked(3));
        let now = Instant::ZERO;
        assert_eq!(link.write(now, Side::A, b"hello "), Ok(6));
        assert_eq!(link.write(now, Side::A, b"world"), Ok(5));
        let mut out = [0u8; 32];
        let (n, reads) = read_all(&mut link, now, Side::B, &mut out);
        assert_eq!(&out[..n], b"hello world");
        assert!(reads >= 4, "11 bytes in chunks of at most 3");
        assert_eq!(link.read(now, Side::A, &mut out), Ok(0));
        assert!(link.is_idle());
    }

    #[test]
    fn capacity_is_backpressure() {
        let mut link: Link<8, 2> = Link::new(1, LinkConfig::IDEAL);
        let now = Instant::ZERO;
        assert_eq!(link.write(now, Side::A, b"0123456789"), Ok(8));
        assert_eq!(link.write(now, Side::A, b"x"), Ok(0));
        assert_eq!(link.free(Side::A), 0);
        assert_eq!(link.free(Side::B), 8);
        // More writes than write records: they coalesce, nothing is lost.
        let mut out = [0u8; 8];
        assert_eq!(link.read(now, Side::B, &mut out), Ok(8));
        for b in b"abc" {
            assert_eq!(link.write(now, Side::A, &[*b]), Ok(1));
        }
        assert_eq!(link.read(now, Side::B, &mut out), Ok(3));
        assert_eq!(&out[..3], b"abc");
    }

    #[test]
    fn flush_moves_what_the_link_takes_and_keeps_the_rest() {
        let mut link: Link<16, 4> = Link::new(1, LinkConfig::IDEAL);
        let now = Instant::ZERO;
        let mut conn: Connection<Inline<256, 128, 2, 2>> = Connection::new(Default::default());
        assert_eq!(conn.send_notification("n", Some(&[1])), Ok(()));
        let queued = conn.transmit_len();
        assert!(queued > 16);
        // The link takes 16 bytes, then nothing: the rest stays queued, without an error.
        assert_eq!(flush(&mut link, now, Side::A, &mut conn), Ok(16));
        assert_eq!(conn.transmit_len(), queued - 16);
        assert_eq!(flush(&mut link, now, Side::A, &mut conn), Ok(0));
        let mut out = [0u8; 16];
        let mut moved = 16;
        while moved < queued {
            assert_eq!(link.read(now, Side::B, &mut out), Ok(16));
            moved += flush(&mut link, now, Side::A, &mut conn).unwrap_or(0);
        }
        assert_eq!(conn.transmit_len(), 0);
        assert_eq!(flush(&mut link, now, Side::A, &mut conn), Ok(0));
    }

    #[test]
    fn delay_keeps_order() {
        let config = LinkConfig {
            max_delay: Duration::from_millis(10),
            ..LinkConfig::IDEAL
        };
        let mut link: Link<64, 8> = Link::new(99, config);
        let mut out = [0u8; 64];
        for (i, b) in (b'a'..=b'h').enumerate() {
            link.write(Instant::from_millis(i as u64), Side::B, &[b])
                .unwrap();
        }
        let mut got = 0;
        let mut t = 0;
        while got < 8 {
            let next = link.next_ready(Side::A).unwrap();
            assert!(next.as_micros() >= t);
            t = next.as_micros();
            got += link.read(next, Side::A, &mut out[got..]).unwrap();
        }
        assert_eq!(&out[..8], b"abcdefgh");
        assert!(t <= 17_000);
    }

    #[test]
    fn faults_are_deterministic_and_counted() {
        let config = LinkConfig {
            faults: Faults {
                corrupt_ppm: 500_000,
                truncate_ppm: 200_000,
                ..Faults::NONE
            },
            ..LinkConfig::IDEAL
        };
        let run = |seed| {
            let mut link: Link<4096, 64> = Link::new(seed, config);
            let mut out = [0u8; 4096];
            let mut total = 0;
            for _ in 0..40 {
                link.write(Instant::ZERO, Side::A, b"0123456789").unwrap();
                total += link
                    .read(Instant::ZERO, Side::B, &mut out[total..])
                    .unwrap();
            }
            (link.stats(), out[..total].to_vec())
        };
        let (stats, bytes) = run(5);
        assert_eq!(run(5), (stats, bytes.clone()));
        assert!(stats.corrupted > 0 && stats.truncated > 0);
        assert_eq!(bytes.len() as u64, 400 - stats.truncated_bytes);
        assert_eq!(stats.written[0], 400);
    }

    #[test]
    fn drop_and_shutdown() {
        let config = LinkConfig {
            faults: Faults {
                drop_at: Some(Instant::from_millis(5)),
                ..Faults::NONE
            },
            ..LinkConfig::IDEAL
        };
        let mut link: Link<64, 4> = Link::new(0, config);
        let mut out = [0u8; 8];
        link.write(Instant::ZERO, Side::A, b"abc").unwrap();
        link.shutdown(Side::A);
        assert_eq!(
            link.write(Instant::ZERO, Side::A, b"x"),
            Err(LinkError::Closed)
        );
        assert_eq!(link.read(Instant::ZERO, Side::B, &mut out), Ok(3));
        assert_eq!(
            link.read(Instant::ZERO, Side::B, &mut out),
            Err(LinkError::Closed)
        );
        assert_eq!(link.poll_timeout(), Some(Instant::from_millis(5)));
        link.write(Instant::ZERO, Side::B, b"abc").unwrap();
        let at = Instant::from_millis(5);
        assert_eq!(link.read(at, Side::A, &mut out), Err(LinkError::Broken));
        assert_eq!(link.write(at, Side::B, b"x"), Err(LinkError::Broken));
        assert!(link.is_idle() && link.stats().broken);
    }
}
