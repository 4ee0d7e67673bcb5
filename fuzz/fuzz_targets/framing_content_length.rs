//! `Content-Length` framing decoder (`RxBuffer`, `Framing::ContentLength`): decoding is
//! independent of how the stream is split (any chunking, `push` or `spare`/`commit`, gives
//! the same events as feeding everything at once), frames never exceed the maximum, and the
//! buffer never gets stuck. (This target found the chunking dependence of the
//! resynchronisation after header garbage, since fixed and pinned by
//! `tests/tests/regression_core_findings.rs`.)
//!
//! Input: byte 0 = maximum frame length / 8, bytes 1-2 = chunking seed, the rest = stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcwire::wire::{Framing, RxBuffer};
use rpcwire_fuzz::{decode_all, Chunker};

fuzz_target!(|data: &[u8]| {
    let Some((head, body)) = data.split_first_chunk::<3>() else {
        return;
    };
    let max_frame = usize::from(head[0]) * 8;
    let seed = u64::from(head[1]) << 8 | u64::from(head[2]);

    let mut whole = RxBuffer::<[u8; 2048]>::with_max_frame(Framing::ContentLength, max_frame);
    let expected = decode_all(&mut whole, body, &mut Chunker::new(0, usize::MAX));

    let mut split = RxBuffer::<[u8; 2048]>::with_max_frame(Framing::ContentLength, max_frame);
    let mut chunker = Chunker::new(seed, usize::from(head[2] % 32) + 1);
    let got = decode_all(&mut split, body, &mut chunker);
    assert_eq!(got, expected, "max_frame {max_frame}");
});
