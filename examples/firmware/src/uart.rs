//! A minimal register driver for UART0 of the TI Stellaris LM3S6965 (a PL011 derivative; qemu
//! models it for the `lm3s6965evb` board), implementing `embedded_io` Read, ReadReady and
//! Write. No PAC: six registers are enough.

use core::convert::Infallible;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::mmio::{read, write};

/// UART0 registers.
const UART0: usize = 0x4000_C000;
const DR: usize = UART0;
const FR: usize = UART0 + 0x018;
const IBRD: usize = UART0 + 0x024;
const FBRD: usize = UART0 + 0x028;
const LCRH: usize = UART0 + 0x02C;
const CTL: usize = UART0 + 0x030;

/// Flag register bits.
const FR_BUSY: u32 = 1 << 3;
const FR_RXFE: u32 = 1 << 4;
const FR_TXFF: u32 = 1 << 5;

/// System control: clock gating of UART0 and GPIO port A (whose pins PA0/PA1 carry it).
const RCGC1: usize = 0x400F_E104;
const RCGC2: usize = 0x400F_E108;
const GPIOA_AFSEL: usize = 0x4000_4420;
const GPIOA_DEN: usize = 0x4000_451C;

static TAKEN: AtomicBool = AtomicBool::new(false);

/// UART0, 8N1 with the 16-byte FIFOs enabled.
pub struct Uart0 {
    _owned: (),
}

impl Uart0 {
    /// Takes and configures UART0 for `baud` at a `clock_hz` system clock; `None` if taken.
    pub fn take(clock_hz: u32, baud: u32) -> Option<Self> {
        if TAKEN.swap(true, Ordering::AcqRel) {
            return None;
        }
        write(RCGC1, read(RCGC1) | 1);
        write(RCGC2, read(RCGC2) | 1);
        write(GPIOA_AFSEL, read(GPIOA_AFSEL) | 0b11);
        write(GPIOA_DEN, read(GPIOA_DEN) | 0b11);
        write(CTL, 0);
        // Divisor in 1/64ths of the 16x-oversampled baud clock, rounded.
        let div64 = (clock_hz * 4 + baud / 2) / baud;
        write(IBRD, div64 >> 6);
        write(FBRD, div64 & 0x3F);
        // 8 data bits, FIFOs on.
        write(LCRH, 0x60 | 0x10);
        // UARTEN, TXE, RXE.
        write(CTL, 1 | (1 << 8) | (1 << 9));
        Some(Uart0 { _owned: () })
    }

    fn rx_empty() -> bool {
        read(FR) & FR_RXFE != 0
    }

    fn tx_full() -> bool {
        read(FR) & FR_TXFF != 0
    }
}

impl embedded_io::ErrorType for Uart0 {
    /// Framing, parity and overrun flags are not reported: the byte is delivered as received
    /// and rpcwire answers whatever garbage results.
    type Error = Infallible;
}

impl embedded_io::Read for Uart0 {
    /// Blocks until a byte is received, then takes every byte waiting in the FIFO.
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Infallible> {
        if buf.is_empty() {
            return Ok(0);
        }
        while Self::rx_empty() {}
        let mut n = 0;
        for slot in buf.iter_mut() {
            if Self::rx_empty() {
                break;
            }
            *slot = read(DR) as u8;
            n += 1;
        }
        Ok(n)
    }
}

impl embedded_io::ReadReady for Uart0 {
    fn read_ready(&mut self) -> Result<bool, Infallible> {
        Ok(!Self::rx_empty())
    }
}

impl embedded_io::Write for Uart0 {
    /// Blocks until the FIFO has room, then fills it: a few bytes per call.
    fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        if buf.is_empty() {
            return Ok(0);
        }
        while Self::tx_full() {}
        let mut n = 0;
        for &b in buf {
            if Self::tx_full() {
                break;
            }
            write(DR, u32::from(b));
            n += 1;
        }
        Ok(n)
    }

    /// Waits until the last byte has left the shift register.
    fn flush(&mut self) -> Result<(), Infallible> {
        while read(FR) & FR_BUSY != 0 {}
        Ok(())
    }
}
