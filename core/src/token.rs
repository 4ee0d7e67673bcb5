//! How an outgoing request is named ([`Token`]) and how it can end without a response
//! ([`Failure`]): values the connection hands out, kept below it because the records of its
//! pending table ([`PendingSlot`](crate::conn::PendingSlot)) hold them too.

/// The caller's name for an outgoing request; it comes back exactly once: with the response
/// ([`Inbound::Response`](crate::Inbound::Response)), or as
/// [`Event::RequestFailed`](crate::Event::RequestFailed) (timeout, close), or as the `Ok` of
/// [`cancel`](crate::Connection::cancel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Token(pub u64);

/// Why an outgoing request ended without a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Failure {
    /// Its deadline passed ([`handle_timeout`](crate::Connection::handle_timeout)).
    TimedOut,
    /// The connection was closed.
    Closed,
}
