//! Which framing a byte stream uses, and the default maximum frame every framing shares.

/// How messages are delimited on the byte stream.
///
/// Non-exhaustive: `Framing::ContentLength` exists only with the `content-length` feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[non_exhaustive]
pub enum Framing {
    /// One compact JSON text per line (`\n` or `\r\n`); blank lines are skipped. MCP stdio and
    /// most TCP peers.
    #[default]
    Line,
    /// `Content-Length: N\r\n\r\n` followed by N bytes (LSP). `Content-Type` and other headers
    /// are accepted and ignored. Requires the `content-length` feature.
    #[cfg(feature = "content-length")]
    ContentLength,
}

/// The maximum frame length when none is configured: 1 MiB ([`Config::DEFAULT`]'s, and a
/// growing [`RxBuffer`](super::RxBuffer)'s unless told otherwise).
///
/// [`Config::DEFAULT`]: crate::Config::DEFAULT
pub const DEFAULT_MAX_FRAME: usize = 1 << 20;
