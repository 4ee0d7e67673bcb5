//! What the driver hands to the handler.

use rpcwire::methods::{Call, Item};
use rpcwire::wire::Notification;
use rpcwire::{Event, Inbound, InboundRequest, InboundResponse, Instant, Problem};

/// One thing for the handler: an inbound message from the peer, or an event of the
/// connection. Everything borrowed points into the driver's receive buffer and lives for
/// one handler call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incoming<'a> {
    /// A request: answer it through the [`Context`](crate::Context) (`respond`,
    /// `respond_error`, `reject`), now or later with its handle.
    Request(InboundRequest<'a>),
    /// A notification (never answered).
    Notification(Notification<'a>),
    /// The response to one of our requests; its token is done.
    Response(InboundResponse<'a>),
    /// Peer garbage, already answered as the specification requires.
    Problem(Problem<'a>),
    /// An event of the connection, such as an outgoing request that timed out.
    Event(Event),
    /// The clock's schedule ([`Ticker`](crate::clock::Ticker)) is due (the instant it was
    /// due for): the time to send the device's periodic notifications through the context.
    /// The driver's deadline ([`Driver::poll`](crate::Driver::poll)'s result,
    /// `next_deadline`) includes the next tick.
    Tick(Instant),
}

impl<'a> From<Inbound<'a>> for Incoming<'a> {
    fn from(item: Inbound<'a>) -> Self {
        match item {
            Inbound::Request(r) => Incoming::Request(r),
            Inbound::Notification(n) => Incoming::Notification(n),
            Inbound::Response(r) => Incoming::Response(r),
            Inbound::Problem(p) => Incoming::Problem(p),
        }
    }
}

impl From<Event> for Incoming<'_> {
    fn from(event: Event) -> Self {
        Incoming::Event(event)
    }
}

/// What a dispatch table ([`Methods::dispatch`](crate::Methods::dispatch)) takes: requests and
/// notifications; the rest comes back to the handler.
impl<'a> Item<'a> for Incoming<'a> {
    fn into_call(self) -> Result<Call<'a>, Self> {
        match self {
            Incoming::Request(req) => Ok(Call::Request(req)),
            Incoming::Notification(n) => Ok(Call::Notification(n)),
            other => Err(other),
        }
    }

    fn from_call(call: Call<'a>) -> Self {
        match call {
            Call::Request(req) => Incoming::Request(req),
            Call::Notification(n) => Incoming::Notification(n),
        }
    }
}
