//! Helpers shared by the fuzz targets in `fuzz_targets/`.

use rpcwire::wire::ser::Sink;
use rpcwire::wire::{FrameEvent, RxBuffer};

/// Splits an input into chunks whose sizes come from a seed (so every split of a byte stream
/// is reachable from the fuzzer's choice of the first bytes).
pub struct Chunker {
    state: u64,
    max: usize,
}

impl Chunker {
    /// Chunks of `1..=max` bytes (`max` 0 means 1), sizes drawn from `seed`.
    pub fn new(seed: u64, max: usize) -> Self {
        Chunker {
            state: seed,
            max: max.max(1),
        }
    }

    /// The next chunk size.
    pub fn next_len(&mut self) -> usize {
        // SplitMix64.
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z % self.max as u64) as usize + 1
    }
}

/// A decoded framing event, owned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A frame's bytes.
    Frame(Vec<u8>),
    /// An oversize frame (its length varies with chunking for lines, so it is not kept).
    Oversize,
    /// A content-length header without a valid length, with nothing else known.
    BadHeader,
}

/// Feeds `data` into `rx` in chunks from `chunker` (alternating `push` and `spare`/`commit`)
/// and collects every event. Panics if the buffer stops making progress.
pub fn decode_all<const N: usize>(
    rx: &mut RxBuffer<[u8; N]>,
    data: &[u8],
    chunker: &mut Chunker,
) -> Vec<Event> {
    let mut events = Vec::new();
    let mut rest = data;
    let mut use_spare = false;
    while !rest.is_empty() {
        let want = chunker.next_len().min(rest.len());
        let mut chunk = &rest[..want];
        rest = &rest[want..];
        while !chunk.is_empty() {
            let taken = if use_spare {
                let spare = rx.spare();
                let n = spare.len().min(chunk.len());
                spare[..n].copy_from_slice(&chunk[..n]);
                rx.commit(n);
                chunk = &chunk[n..];
                n
            } else {
                rx.push(&mut chunk)
            };
            use_spare = !use_spare;
            let before = events.len();
            collect(rx, &mut events);
            assert!(
                taken > 0 || events.len() > before,
                "receive buffer stuck: full ({} bytes) and no event",
                rx.buffered()
            );
        }
    }
    collect(rx, &mut events);
    events
}

/// Marks the end of input ([`RxBuffer::finish`]) and collects the events that follow.
pub fn finish<const N: usize>(rx: &mut RxBuffer<[u8; N]>, events: &mut Vec<Event>) {
    rx.finish();
    collect(rx, events);
}

fn collect<const N: usize>(rx: &mut RxBuffer<[u8; N]>, events: &mut Vec<Event>) {
    let max = rx.max_frame();
    while let Some(ev) = rx.next_frame() {
        events.push(match ev {
            FrameEvent::Frame(f) => {
                assert!(
                    f.len() <= max,
                    "frame of {} bytes over the maximum {max}",
                    f.len()
                );
                Event::Frame(f.to_vec())
            }
            FrameEvent::Oversize { len } => {
                // A JSON line read under content-length framing must also leave room for its
                // line end in the buffer, whose whole size is the maximum frame there.
                let slack = if rx.framing() == rpcwire::wire::Framing::Line {
                    0
                } else {
                    2
                };
                assert!(
                    len > max.saturating_sub(slack),
                    "Oversize of {len} bytes within the maximum {max}"
                );
                Event::Oversize
            }
            FrameEvent::BadHeader => Event::BadHeader,
        });
    }
}

/// A growable sink for the encoder.
#[derive(Default)]
pub struct VecSink(pub Vec<u8>);

impl Sink for VecSink {
    fn put(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
}

/// Deepest nesting of arrays and objects outside strings (for inputs that may not be JSON).
pub fn nesting_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}
