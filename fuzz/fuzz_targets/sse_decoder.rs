//! The Server-Sent Events decoder (`rpcwire::wire::sse`): any bytes, split anywhere, decode to
//! the same items as fed whole, within the buffer, without a panic; and events written by the
//! encoder decode back to what was written (line breaks in data as LF).
//!
//! Input: byte 0 = chunking seed, byte 1 = where the encoder part starts, the rest = bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcwire::wire::sse::{write_event, SseDecoder, SseItem};
use rpcwire_fuzz::{Chunker, VecSink};

/// Every item, owned, feeding `bytes` in the chunks `chunker` picks.
fn decode(bytes: &[u8], chunker: &mut Chunker) -> Vec<String> {
    let mut dec: SseDecoder<[u8; 512]> = SseDecoder::new();
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let n = chunker.next_len().min(rest.len());
        let mut input = &rest[..n];
        rest = &rest[n..];
        while let Some(item) = dec.next(&mut input) {
            out.push(match item {
                SseItem::Event(e) => {
                    assert!(
                        e.data.len() < 512 && e.event.len() <= 512,
                        "event over the buffer"
                    );
                    format!("event {:?} {:?} {:?}", e.event, e.id, e.data)
                }
                other => format!("{other:?}"),
            });
        }
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((head, body)) = data.split_first_chunk::<2>() else {
        return;
    };
    // Split independence on arbitrary bytes.
    let whole = decode(body, &mut Chunker::new(0, usize::MAX));
    let split = decode(
        body,
        &mut Chunker::new(u64::from(head[0]), usize::from(head[0] % 16) + 1),
    );
    assert_eq!(whole, split, "split-dependent decoding");

    // What the encoder writes decodes back.
    let text = String::from_utf8_lossy(body);
    let cut = usize::from(head[1]).min(text.len());
    let cut = (0..=cut)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let (name, data_text) = text.split_at(cut);
    let event = name.split(['\r', '\n']).next().unwrap_or("");
    let mut sink = VecSink::default();
    let event_field = (!event.is_empty()).then_some(event);
    write_event(&mut sink, event_field, Some("1"), data_text);
    let back = decode(&sink.0, &mut Chunker::new(7, 5));
    let expected_data = data_text.replace("\r\n", "\n").replace('\r', "\n");
    let expected_type = if event.is_empty() { "message" } else { event };
    // Whatever the decoder holds at once is part of what was written: when all of it fits
    // the buffer, the event must come back whole.
    if sink.0.len() <= 512 {
        assert_eq!(
            back,
            [format!("event {expected_type:?} \"1\" {expected_data:?}")],
            "round trip"
        );
    }
});
