//! Newline framing decoder (`RxBuffer`, `Framing::Line`) against a reference model: any split
//! of the byte stream, any maximum frame length, both ways of filling the buffer (`push`,
//! `spare`/`commit`) give exactly the frames of splitting on `\n` (one `\r` stripped, blank
//! lines skipped) and one `Oversize` per line over the limit, the last line counting at the
//! end of input (`RxBuffer::finish`); the buffer never gets stuck.
//!
//! Input: byte 0 = maximum frame length, bytes 1-2 = chunking seed, the rest = the stream.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcwire::wire::{Framing, RxBuffer};
use rpcwire_fuzz::{decode_all, finish, Chunker, Event};

fuzz_target!(|data: &[u8]| {
    let Some((head, body)) = data.split_first_chunk::<3>() else {
        return;
    };
    let mut rx = RxBuffer::<[u8; 256]>::with_max_frame(Framing::Line, usize::from(head[0]));
    let max = rx.max_frame();
    let seed = u64::from(head[1]) << 8 | u64::from(head[2]);
    let mut chunker = Chunker::new(seed, usize::from(head[2] % 64) + 1);
    let mut got = decode_all(&mut rx, body, &mut chunker);
    finish(&mut rx, &mut got);

    // A line that starts with `Content-Length:` may open a header block, which line framing
    // also reads (see `RxBuffer`): then the reference below does not apply, and decoding must
    // only be independent of the split (the same events as everything at once).
    let header_like = body.split(|&b| b == b'\n').any(|line| {
        line.get(..15)
            .is_some_and(|h| h.eq_ignore_ascii_case(b"content-length:"))
    });
    if header_like {
        let mut whole_rx =
            RxBuffer::<[u8; 256]>::with_max_frame(Framing::Line, usize::from(head[0]));
        let mut one = Chunker::new(0, usize::MAX);
        let mut whole = decode_all(&mut whole_rx, body, &mut one);
        finish(&mut whole_rx, &mut whole);
        assert_eq!(got, whole, "max_frame {max}: split-dependent decoding");
        return;
    }

    // The reference: split on '\n'; at the end of input the last line counts without its
    // newline (`RxBuffer::finish`).
    let mut expected = Vec::new();
    for line in body.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.len() > max {
            expected.push(Event::Oversize);
        } else if !line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            expected.push(Event::Frame(line.to_vec()));
        }
    }
    assert_eq!(got, expected, "max_frame {max}");
});
