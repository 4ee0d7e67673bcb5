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
