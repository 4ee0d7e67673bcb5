//! Volatile access to memory-mapped registers, for the images' register-level drivers (shared
//! by `examples/firmware*` through `#[path]` modules).

use core::ptr::{read_volatile, write_volatile};

/// Reads the 32-bit register at `reg`: one of the calling driver's register addresses, which
/// are always readable.
pub fn read(reg: usize) -> u32 {
    // SAFETY: callers pass the address of a memory-mapped register of their peripheral.
    unsafe { read_volatile(reg as *const u32) }
}

/// Writes the 32-bit register at `reg`: one of the calling driver's register addresses, which
/// only that driver (and its interrupt handler) writes.
pub fn write(reg: usize, value: u32) {
    // SAFETY: callers pass the address of a memory-mapped register of their peripheral.
    unsafe { write_volatile(reg as *mut u32, value) }
}
