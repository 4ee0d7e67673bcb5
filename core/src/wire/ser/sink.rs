//! Where encoded bytes go: a [`Sink`], which never fails; a bounded one keeps counting past
//! its end, so that one pass says how many bytes a value needs.

/// A destination for encoded bytes. `put` never fails: a bounded sink keeps counting past its end
/// so that the caller learns the exact size required.
pub trait Sink {
    /// Append bytes.
    fn put(&mut self, bytes: &[u8]);
}

/// A sink over a caller's slice that counts bytes beyond its end instead of failing.
///
/// Once a `put` does not fit, nothing more is copied (the buffer's content is then unspecified),
/// but [`len`](Self::len) keeps growing to the total that was asked for.
#[derive(Debug)]
pub struct SliceSink<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> SliceSink<'a> {
    /// A sink that writes from the start of `buf`.
    #[inline]
    pub fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, len: 0 }
    }

    /// Bytes that were (or would have been) written.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing has been written.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when everything written fit in the buffer.
    #[inline]
    pub fn fits(&self) -> bool {
        self.len <= self.buf.len()
    }

    /// The written bytes when they all fit, `None` otherwise.
    #[inline]
    pub fn written(&self) -> Option<&[u8]> {
        self.buf.get(..self.len)
    }
}

impl Sink for SliceSink<'_> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        let start = self.len;
        self.len = start.saturating_add(bytes.len());
        // Once `len` is past the end nothing fits any more and only the count moves.
        if let Some(dst) = self
            .buf
            .get_mut(start..)
            .and_then(|rest| rest.get_mut(..bytes.len()))
        {
            dst.copy_from_slice(bytes);
        }
    }
}

/// A sink that only counts.
#[derive(Debug, Default, Clone, Copy)]
pub struct CountingSink {
    /// Bytes put so far.
    pub len: usize,
}

impl Sink for CountingSink {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.len = self.len.saturating_add(bytes.len());
    }
}

/// A growable `Vec<u8>` as a sink (feature `alloc`): the encoders' output on a host.
#[cfg(feature = "alloc")]
#[derive(Debug)]
pub struct VecSink<'a>(pub &'a mut alloc::vec::Vec<u8>);

#[cfg(feature = "alloc")]
impl Sink for VecSink<'_> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }
}
