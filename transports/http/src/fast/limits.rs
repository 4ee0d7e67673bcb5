//! The fast path's bounds: what it reads of a head, and what a connection keeps between
//! requests.

/// The longest request head the fast path reads; a longer one goes to hyper (which takes
/// heads up to its own, larger limit and answers 431 past it).
pub(crate) const MAX_HEAD: usize = 8 << 10;

/// The most header fields the fast path parses; more go to hyper.
pub(crate) const MAX_HEADERS: usize = 32;

/// The read buffer's capacity kept between requests; a larger one (a large body) is given back
/// once its request is answered.
pub(crate) const KEEP: usize = 2 << 10;
