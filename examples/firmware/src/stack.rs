//! Stack high-water mark: the stack is painted with a pattern at boot; the deepest word no
//! longer holding it tells how much stack was ever used.

use core::ptr::{addr_of, read_volatile, write_volatile};

const PAINT: u32 = 0xDEAD_BEEF;

extern "C" {
    /// Top of the stack (cortex-m-rt: the end of RAM).
    static _stack_start: u32;
    /// Bottom of the stack (cortex-m-rt: after .bss and .uninit).
    static _stack_end: u32;
}

fn bounds() -> (usize, usize) {
    (
        addr_of!(_stack_end) as usize,
        addr_of!(_stack_start) as usize,
    )
}

/// Paints the free part of the stack (below the caller's frame, with a margin).
pub fn paint() {
    let (bottom, _) = bounds();
    let sp = cortex_m::register::msp::read() as usize;
    let mut p = bottom;
    while p + 64 < sp {
        // SAFETY: [bottom, sp - 64) is unused stack memory: nothing lives there yet.
        unsafe { write_volatile(p as *mut u32, PAINT) };
        p += 4;
    }
}

/// Bytes of stack used so far (from the top down to the deepest overwritten word).
pub fn used() -> usize {
    let (bottom, top) = bounds();
    let mut p = bottom;
    // SAFETY: reads of stack memory between the linker's bounds.
    while p < top && unsafe { read_volatile(p as *const u32) } == PAINT {
        p += 4;
    }
    top - p
}

/// Bytes of stack available.
#[allow(dead_code)] // not used by every image
pub fn size() -> usize {
    let (bottom, top) = bounds();
    top - bottom
}
