//! `rpc.stats` (shared by the firmware images): the stack high-water mark and the
//! connection's counters ([`rpcwire::Stats`]) as one JSON object, for example
//! `{"stack_used":3056,"frames_in":12,"requests_in":9,...}`.

use rpcwire::Stats;

use crate::text::Text;

/// The method's name (the MCP image answers it outside MCP; `methods.rs` lists it too).
#[allow(dead_code)] // the JSON-RPC image matches it in its method table
pub const METHOD: &str = "rpc.stats";

/// The members, each followed by a comma, in the order of [`render`]'s values: one string
/// scanned byte by byte costs less flash than a table of names (the JSON-RPC image has a few
/// bytes of its 16 KiB to spare, so the counters it shows are those a host can check against
/// what it sent; `busy_rejections` is left out, as the image answers each call before it reads
/// the next and so never refuses one as busy).
const NAMES: &[u8] = b"stack_used,frames_in,requests_in,notifications_in,\
responses_out,batches_in,parse_errors,invalid_messages,oversize_frames,";

/// Renders the result into `text` (see [`crate::text::TEXT_LEN`] for its longest).
pub fn render<'t>(s: &Stats, text: &'t mut Text) -> &'t [u8] {
    let values: [u64; 9] = [
        crate::stack::used() as u64,
        s.frames_in,
        s.requests_in,
        s.notifications_in,
        s.responses_out,
        s.batches_in,
        s.parse_errors,
        s.invalid_messages,
        s.oversize_frames,
    ];
    let mut values = values.iter();
    text.put(b"{\"");
    for &b in NAMES {
        if b == b',' {
            let value = values.next().copied().unwrap_or(0);
            text.put(b"\":").int(value as i64).put(b",\"");
        } else {
            text.put(&[b]);
        }
    }
    // The last member's `,"` becomes the closing brace.
    text.truncate(2).put(b"}").bytes()
}
