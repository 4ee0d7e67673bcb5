//! The span of each batch a driver connection (stdio, TCP, WebSocket, child processes)
//! receives: `rpc.batch` ([`telemetry::batch_span`], as the
//! HTTP server makes it), the parent of its members' call spans, with `jsonrpc.batch.size`.
//!
//! The core hands a batch out one message at a time; where one starts and ends is told by its
//! counters, as the batch-size histogram tells it (`telemetry::BatchSizer`): a batch opens
//! when `batches_in` moves (and `batch_rejections` does not: a refused batch hands out no
//! member), and ends when another frame comes or the input is drained (a batch frame is
//! handed out whole before the next frame is read). Nothing is done, and nothing is held,
//! while no subscriber listens to spans.
//!
//! The driver drops its handle of the span when the batch ends; the span itself ends when
//! its last member's span does (a span stays open while it has children), so it covers the
//! members that wait in tasks or in the queue too.
//!
//! The same box holds the batch-size histogram's state (`telemetry::BatchSizer`, feature
//! `metrics`) while metrics are recorded: a connection with neither checks one empty pointer
//! per message, with the feature and without.

use std::sync::Arc;

use crate::caller::Caller;
use rpcwire_telemetry as telemetry;

/// The batch being handed out, if any, and the counters it is told by (boxed: every open
/// connection's future holds one; only connections with spans listened to or metrics
/// recorded fill it).
#[derive(Debug, Default)]
pub(crate) struct BatchTrace(Option<Box<Watched>>);

#[derive(Debug, Default)]
struct Watched {
    /// `batches_in` at the last look, and whether a batch was open then: while neither
    /// moves, each message is a frame of its own (nearly every one), and only the sizes'
    /// count of messages moves ([`BatchTrace::observe`]).
    batches: u64,
    open: bool,
    /// The batch spans' state, while spans are listened to.
    seen: Option<Seen>,
    /// The batch sizes' state, while metrics are recorded.
    #[cfg(feature = "metrics")]
    sizes: Option<telemetry::BatchSizer>,
}

#[derive(Debug, Default)]
struct Seen {
    frames: u64,
    batches: u64,
    rejections: u64,
    open: Option<Open>,
}

/// An open batch.
#[derive(Debug)]
struct Open {
    span: tracing::Span,
    /// The caller of its members: the connection's without its W3C trace context, which is
    /// the batch span's parent instead (a member's `_meta.traceparent` still counts).
    caller: Option<Arc<Caller>>,
    /// Messages handed out so far.
    size: u64,
}

impl Open {
    fn close(self) {
        let size = i64::try_from(self.size).unwrap_or(i64::MAX);
        self.span.record("jsonrpc.batch.size", size);
    }
}

/// An open batch's span and its members' caller, kept by a member that waits in the queue.
pub(crate) type Member = Box<(tracing::Span, Option<Arc<Caller>>)>;

impl BatchTrace {
    /// For a connection opening now: batches are traced when `on` (the builder's
    /// `batch_spans`) and a subscriber listens to spans now (as the connection's own span is
    /// made or not); their sizes are counted when metrics are recorded now.
    pub(crate) fn new(on: bool) -> Self {
        let seen = (on && telemetry::spans_enabled()).then(Seen::default);
        #[cfg(feature = "metrics")]
        let sizes = telemetry::metered().then(telemetry::BatchSizer::default);
        #[cfg(feature = "metrics")]
        let any = seen.is_some() || sizes.is_some();
        #[cfg(not(feature = "metrics"))]
        let any = seen.is_some();
        BatchTrace(any.then(|| {
            Box::new(Watched {
                batches: 0,
                open: false,
                seen,
                #[cfg(feature = "metrics")]
                sizes,
            })
        }))
    }

    /// After the core handed out an item (`drained` false) or said it needs more input
    /// (`stats`, the connection's counters, read only on a watched connection).
    #[inline]
    pub(crate) fn observe(&mut self, stats: &rpcwire::Stats, caller: &Arc<Caller>, drained: bool) {
        if let Some(watched) = &mut self.0 {
            if stats.batches_in == watched.batches && !watched.open {
                #[cfg(feature = "metrics")]
                if let Some(sizes) = &mut watched.sizes {
                    sizes.count(stats);
                }
                return;
            }
            watched.track(stats, caller, drained);
        }
    }
}

impl Watched {
    /// A batch came (or was refused) since the last look, or one is open: each tracker
    /// looks.
    #[inline(never)]
    fn track(&mut self, stats: &rpcwire::Stats, caller: &Arc<Caller>, drained: bool) {
        let mut open = false;
        #[cfg(feature = "metrics")]
        if let Some(sizes) = &mut self.sizes {
            sizes.observe(stats, drained);
            open |= sizes.is_open();
        }
        if let Some(seen) = &mut self.seen {
            seen.observe(stats, caller, drained);
            open |= seen.open.is_some();
        }
        self.batches = stats.batches_in;
        self.open = open;
    }
}

impl Seen {
    /// Inline: a frame of one message (nearly every one) costs a few compares here, not a
    /// call.
    #[inline(always)]
    fn observe(&mut self, stats: &rpcwire::Stats, caller: &Arc<Caller>, drained: bool) {
        // No batch open and none come (nor refused) since the last look: a frame of one
        // message, which is no batch's; `frames` may lag then, as a batch is a new frame.
        if self.open.is_none()
            && stats.batches_in == self.batches
            && stats.batch_rejections == self.rejections
        {
            return;
        }
        self.track(stats, caller, drained);
    }

    /// A batch opens, grows or ends.
    #[inline(never)]
    fn track(&mut self, stats: &rpcwire::Stats, caller: &Arc<Caller>, drained: bool) {
        if stats.frames_in != self.frames {
            if let Some(open) = self.open.take() {
                open.close();
            }
            let refused = stats.batch_rejections != self.rejections;
            if stats.batches_in != self.batches && !refused && !drained {
                let span = telemetry::batch_span(caller.remote());
                let caller = caller
                    .trace_context()
                    .map(|_| Arc::new(caller.as_ref().clone().without_trace_context()));
                self.open = Some(Open {
                    span,
                    caller,
                    size: 0,
                });
            }
            self.frames = stats.frames_in;
            self.batches = stats.batches_in;
            self.rejections = stats.batch_rejections;
        }
        if drained {
            if let Some(open) = self.open.take() {
                open.close();
            }
        } else if let Some(open) = &mut self.open {
            open.size += 1;
        }
    }
}

impl BatchTrace {
    /// The open batch's span, to enter while its member is dispatched.
    pub(crate) fn span(&self) -> Option<&tracing::Span> {
        self.open().map(|o| &o.span)
    }

    fn open(&self) -> Option<&Open> {
        self.0.as_ref()?.seen.as_ref()?.open.as_ref()
    }

    /// The caller of the open batch's members, when it is not the connection's.
    pub(crate) fn caller(&self) -> Option<&Arc<Caller>> {
        self.open()?.caller.as_ref()
    }

    /// What a member that waits in the queue keeps of its batch.
    pub(crate) fn member(&self) -> Option<Member> {
        let open = self.open()?;
        Some(Box::new((open.span.clone(), open.caller.clone())))
    }
}
