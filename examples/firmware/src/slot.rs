//! Storage for one value in a `static`, handed out once as `&'static mut` (no `static mut`).

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, Ordering};

/// Uninitialized storage for a `T` (in `.bss`: its initial value is all zeros) that
/// [`take`](Slot::take) hands out once, for the caller to build the value in place.
pub struct Slot<T> {
    taken: AtomicBool,
    value: UnsafeCell<MaybeUninit<T>>,
}

// SAFETY: the storage is reachable only through the one `&mut` that `take` hands out, so
// sharing the `Slot` itself shares nothing but the flag; the `T` may be used from whichever
// context took it.
unsafe impl<T: Send> Sync for Slot<T> {}

impl<T> Slot<T> {
    /// Empty storage.
    pub const fn new() -> Self {
        Slot {
            taken: AtomicBool::new(false),
            value: UnsafeCell::new(MaybeUninit::uninit()),
        }
    }

    /// The storage, the first time; `None` afterwards.
    #[allow(clippy::mut_from_ref)] // the flag makes the one `&mut` unique
    pub fn take(&'static self) -> Option<&'static mut MaybeUninit<T>> {
        if self.taken.swap(true, Ordering::AcqRel) {
            return None;
        }
        // SAFETY: the flag was clear, so this is the only reference ever made to the value.
        Some(unsafe { &mut *self.value.get() })
    }
}

impl<T> Default for Slot<T> {
    fn default() -> Self {
        Self::new()
    }
}
