//! The connection's counters: plain integers bumped where the connection already decides what
//! a message is (no work of their own in the byte loops), read with
//! [`Connection::stats`](super::Connection::stats) by a firmware's `rpc.stats` method or a
//! host's metrics.

/// Counters a firmware can print. 64 bits wide, so none wraps in practice (at a million
/// messages a second, after half a million years).
///
/// Messages are counted by kind once taken (a frame retried for lack of transmit room counts
/// once); a batch counts as one frame and each of its members as a message. Rejections are
/// counted by reason: [`oversize_frames`](Stats::oversize_frames) (a limit),
/// [`parse_errors`](Stats::parse_errors), [`invalid_messages`](Stats::invalid_messages),
/// [`busy_rejections`](Stats::busy_rejections) (overload),
/// [`duplicate_ids`](Stats::duplicate_ids) and [`batch_rejections`](Stats::batch_rejections).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Stats {
    /// Frames received (including invalid ones).
    pub frames_in: u64,
    /// Frames queued for transmission.
    pub frames_out: u64,
    /// Times the decoder skipped bytes to find the next frame (oversize frames, bad headers).
    pub resyncs: u64,
    /// Frames over the maximum length.
    pub oversize_frames: u64,
    /// Frames that were not valid JSON.
    pub parse_errors: u64,
    /// Valid JSON that was not a valid message (an empty batch, a refused batch, an id too
    /// long to keep included).
    pub invalid_messages: u64,
    /// Outgoing requests that timed out.
    pub timeouts: u64,
    /// Inbound requests whose id was already in flight.
    pub duplicate_ids: u64,
    /// Responses matching no pending request.
    pub unknown_responses: u64,
    /// Inbound requests answered with Server busy.
    pub busy_rejections: u64,
    /// Errors with id `null` from the peer (it could not read one of our messages).
    pub peer_errors: u64,
    /// Valid requests received (alone or in a batch; those then rejected included).
    pub requests_in: u64,
    /// Valid notifications received.
    pub notifications_in: u64,
    /// Valid responses received (matched or not).
    pub responses_in: u64,
    /// Requests sent (alone or in a batch).
    pub requests_out: u64,
    /// Notifications sent (alone or in a batch).
    pub notifications_out: u64,
    /// Answers the application gave to inbound requests (results and errors; the
    /// connection's own automatic error replies are counted by reason above).
    pub responses_out: u64,
    /// Batches received (accepted, answered busy or refused).
    pub batches_in: u64,
    /// Batches sent.
    pub batches_out: u64,
    /// Batches refused whole (too large, or batches not accepted).
    pub batch_rejections: u64,
    /// The most outgoing requests awaiting a response at once.
    pub pending_high_water: u64,
    /// The most inbound requests awaiting an answer at once.
    pub inflight_high_water: u64,
}

impl Stats {
    /// All counters at zero.
    pub const ZERO: Stats = Stats {
        frames_in: 0,
        frames_out: 0,
        resyncs: 0,
        oversize_frames: 0,
        parse_errors: 0,
        invalid_messages: 0,
        timeouts: 0,
        duplicate_ids: 0,
        unknown_responses: 0,
        busy_rejections: 0,
        peer_errors: 0,
        requests_in: 0,
        notifications_in: 0,
        responses_in: 0,
        requests_out: 0,
        notifications_out: 0,
        responses_out: 0,
        batches_in: 0,
        batches_out: 0,
        batch_rejections: 0,
        pending_high_water: 0,
        inflight_high_water: 0,
    };
}

/// Adds one to a counter (a plain add: a 64-bit counter bumped once per message cannot reach
/// its limit, so a saturating add's check would be flash spent for nothing).
///
/// Out of line where a `u64` is not native: a 64-bit add with its loads and stores is several
/// instructions on a 32-bit microcontroller, and there are some forty call sites. On 64-bit
/// hosts it is one instruction, left to the compiler.
#[cfg_attr(not(target_pointer_width = "64"), inline(never))]
pub(crate) fn bump(counter: &mut u64) {
    *counter = counter.wrapping_add(1);
}

/// Raises a high-water mark to `now` if it is higher.
pub(crate) fn high_water(mark: &mut u64, now: usize) {
    let now = now as u64;
    if now > *mark {
        *mark = now;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use crate::storage::Inline;
    use crate::wire::{RxBuffer, NO_PARAMS};
    use crate::{Config, Connection, Inbound, Input, Instant, Token};

    type Conn = Connection<Inline<4096, 2048, 8, 8>>;

    /// Feeds `bytes`, answering every request with `null` when `answer` (else leaving them
    /// open), and writes out what is queued.
    fn feed(conn: &mut Conn, rx: &mut RxBuffer<[u8; 1024]>, bytes: &[u8], answer: bool) {
        let mut input = bytes;
        loop {
            match conn.handle_input(Instant::ZERO, rx, &mut input) {
                Input::Item(Inbound::Request(req)) if answer => {
                    conn.respond(req.handle, &()).unwrap();
                }
                Input::Item(_) => {}
                Input::Blocked => {
                    let n = conn.poll_transmit().len();
                    conn.advance_transmit(n);
                }
                Input::NeedMore | Input::Closed => break,
            }
        }
        let n = conn.poll_transmit().len();
        conn.advance_transmit(n);
    }

    #[test]
    fn counts_messages_by_kind_batches_and_high_water_marks() {
        let mut conn = Conn::new(Config {
            max_batch_len: 2,
            ..Config::default()
        });
        let mut rx = conn.rx_buffer();
        feed(
            &mut conn,
            &mut rx,
            concat!(
                r#"{"jsonrpc":"2.0","method":"a","id":1}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"n"}"#,
                "\n",
                r#"[{"jsonrpc":"2.0","method":"a","id":2},{"jsonrpc":"2.0","method":"n"}]"#,
                "\n",
                r#"[1,2,3]"#,
                "\n",
                r#"{"jsonrpc":"2.0","result":1,"id":99}"#,
                "\n",
                "nonsense\n",
            )
            .as_bytes(),
            true,
        );
        // Three requests left open at once.
        feed(
            &mut conn,
            &mut rx,
            concat!(
                r#"{"jsonrpc":"2.0","method":"a","id":3}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"a","id":4}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"a","id":5}"#,
                "\n",
            )
            .as_bytes(),
            false,
        );
        conn.send_request(Instant::ZERO, Token(1), "x", NO_PARAMS, None)
            .unwrap();
        conn.send_notification("y", NO_PARAMS).unwrap();
        let mut batch = conn.start_batch(Instant::ZERO).unwrap();
        batch.request(Token(2), "x", NO_PARAMS, None).unwrap();
        batch.request(Token(3), "x", NO_PARAMS, None).unwrap();
        batch.notification("y", NO_PARAMS).unwrap();
        batch.finish();

        let s = conn.stats();
        assert_eq!(s.requests_in, 5);
        assert_eq!(s.notifications_in, 2);
        assert_eq!(s.responses_in, 1);
        assert_eq!(s.unknown_responses, 1);
        assert_eq!(s.responses_out, 2);
        assert_eq!(s.batches_in, 2);
        assert_eq!(s.batch_rejections, 1);
        assert_eq!(s.parse_errors, 1);
        assert_eq!(s.invalid_messages, 1, "the refused batch");
        assert_eq!(s.inflight_high_water, 3);
        assert_eq!(s.requests_out, 3);
        assert_eq!(s.notifications_out, 2);
        assert_eq!(s.batches_out, 1);
        assert_eq!(s.pending_high_water, 3);
        assert_eq!(s.frames_in, 9);
    }
}
