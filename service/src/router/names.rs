//! The router's table of names: handlers by name in registration order, indexed by the
//! name's bytes.

use std::collections::HashMap;

/// Method names are short and chosen by the application: a multiply-rotate hash over 8-byte
/// words (as rustc's FxHasher) looks them up several times faster than the default SipHash,
/// whose flooding resistance buys nothing for a table the peer cannot add to.
#[derive(Default, Clone, Copy)]
pub(crate) struct NameHasher(u64);

impl std::hash::Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Handlers by name: in registration order, with an index from the name's bytes (method names
/// are looked up as they are on the wire, with no UTF-8 view), so that a driver can also
/// remember the position of the last one it used.
#[derive(Clone)]
pub(crate) struct Names<V> {
    pub(crate) entries: Vec<(String, V)>,
    index: HashMap<Box<[u8]>, usize, std::hash::BuildHasherDefault<NameHasher>>,
}

impl<V> Default for Names<V> {
    fn default() -> Self {
        Names {
            entries: Vec::new(),
            index: HashMap::default(),
        }
    }
}

impl<V> Names<V> {
    pub(crate) fn insert(&mut self, name: &str, value: V) {
        match self.index.get(name.as_bytes()) {
            Some(&at) => {
                if let Some(entry) = self.entries.get_mut(at) {
                    entry.1 = value;
                }
            }
            None => {
                self.index
                    .insert(name.as_bytes().into(), self.entries.len());
                self.entries.push((name.to_owned(), value));
            }
        }
    }

    pub(crate) fn find(&self, name: &[u8]) -> Option<usize> {
        self.index.get(name).copied()
    }

    pub(crate) fn at(&self, position: usize) -> Option<&(String, V)> {
        self.entries.get(position)
    }

    pub(crate) fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.entries.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        names
    }
}

/// `a == b`, eight bytes at a time with no call: a method name is compared with the one
/// called last on every request, and most names are short.
#[inline]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (mut x, mut y) = (a.chunks_exact(8), b.chunks_exact(8));
    let word = |w: &[u8]| u64::from_ne_bytes(w.try_into().unwrap_or([0; 8]));
    x.by_ref().zip(y.by_ref()).all(|(p, q)| word(p) == word(q))
        && x.remainder().iter().zip(y.remainder()).all(|(p, q)| p == q)
}

#[cfg(test)]
mod tests {
    use super::same_bytes;

    /// Equal to slice equality for every length up to three words, with one byte changed at
    /// every place, and for different lengths.
    #[test]
    fn same_bytes_is_slice_equality() {
        let base: Vec<u8> = (0..24u8).map(|b| b.wrapping_mul(37)).collect();
        for len in 0..=base.len() {
            let a = &base[..len];
            assert!(same_bytes(a, a));
            for at in 0..len {
                let mut b = a.to_vec();
                b[at] ^= 0x20;
                assert_eq!(same_bytes(a, &b), a == &b[..], "len {len}, byte {at}");
                assert!(!same_bytes(a, &b));
            }
            if len > 0 {
                assert!(!same_bytes(a, &base[..len - 1]));
            }
        }
    }
}
