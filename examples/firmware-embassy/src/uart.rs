//! UART0 of the MPS2 board (an Arm CMSDK APB UART), written as a HAL writes a UART driver: a
//! type of its own with its own error type, implementing embedded-io 0.7 (`Read`, `ReadReady`,
//! `Write`) and embedded-io-async 0.7 (`Read`, `Write`) directly, which rpcwire-embedded-io
//! takes as they are. Receiving is interrupt-driven: the receive interrupt moves bytes into
//! an embassy-sync pipe that `read` takes them from (awaiting it, or spinning on it in the
//! blocking `read`).

use core::fmt;
use core::sync::atomic::{AtomicBool, Ordering};

use cortex_m::peripheral::NVIC;

use crate::mmio::{read, write};
use embassy_sync::blocking_mutex::raw::CriticalSectionRawMutex;
use embassy_sync::pipe::Pipe;

const UART0: usize = 0x4000_4000;
const DATA: usize = UART0;
const STATE: usize = UART0 + 0x004;
const CTRL: usize = UART0 + 0x008;
const INTCLEAR: usize = UART0 + 0x00C;
const BAUDDIV: usize = UART0 + 0x010;

const STATE_TXFULL: u32 = 1 << 0;
const STATE_RXFULL: u32 = 1 << 1;
const STATE_RXOVERRUN: u32 = 1 << 3;
const CTRL_TX_EN: u32 = 1 << 0;
const CTRL_RX_EN: u32 = 1 << 1;
const CTRL_RX_INTEN: u32 = 1 << 3;
const INT_RX: u32 = 1 << 1;

/// UART0's receive interrupt (number 0 on the AN385/AN386 images).
#[derive(Debug, Clone, Copy)]
struct Uart0Rx;

// SAFETY: interrupt number 0 is UART0's receive interrupt on this board.
unsafe impl cortex_m::interrupt::InterruptNumber for Uart0Rx {
    fn number(self) -> u16 {
        0
    }
}

/// Received bytes not yet read. When it is full the interrupt leaves bytes in the UART (whose
/// one-byte buffer then holds the sender back) until `read` makes room.
static RX: Pipe<CriticalSectionRawMutex, 256> = Pipe::new();
/// The UART lost a byte (a byte arrived before the previous one was taken).
static OVERRUN: AtomicBool = AtomicBool::new(false);
static TAKEN: AtomicBool = AtomicBool::new(false);

/// Why a read failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UartError {
    /// A received byte was lost: the receiver was not read in time.
    Overrun,
}

impl fmt::Display for UartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("UART receive overrun")
    }
}

impl core::error::Error for UartError {}

impl embedded_io::Error for UartError {
    fn kind(&self) -> embedded_io::ErrorKind {
        embedded_io::ErrorKind::Other
    }
}

/// UART0, 8N1.
pub struct Uart0 {
    _owned: (),
}

impl Uart0 {
    /// Takes UART0 and starts it at `baud` on a `clock_hz` peripheral clock, with its
    /// receive interrupt; `None` if already taken.
    pub fn take(clock_hz: u32, baud: u32) -> Option<Self> {
        if TAKEN.swap(true, Ordering::AcqRel) {
            return None;
        }
        write(BAUDDIV, clock_hz / baud);
        write(CTRL, CTRL_TX_EN | CTRL_RX_EN | CTRL_RX_INTEN);
        // SAFETY: the handler below is ready; no mask-based critical section is in use.
        unsafe { NVIC::unmask(Uart0Rx) };
        Some(Uart0 { _owned: () })
    }

    /// After a read made room: lets the receive interrupt take bytes again, and runs it once
    /// for a byte that arrived while it was off (the UART raises it only on arrival).
    fn resume() {
        if read(CTRL) & CTRL_RX_INTEN == 0 {
            write(CTRL, CTRL_TX_EN | CTRL_RX_EN | CTRL_RX_INTEN);
            NVIC::pend(Uart0Rx);
        }
    }

    fn check_overrun() -> Result<(), UartError> {
        match OVERRUN.swap(false, Ordering::AcqRel) {
            true => Err(UartError::Overrun),
            false => Ok(()),
        }
    }

    fn send(buf: &[u8]) -> usize {
        for &b in buf {
            while read(STATE) & STATE_TXFULL != 0 {}
            write(DATA, u32::from(b));
        }
        buf.len()
    }
}

/// UART0's receive interrupt: moves every received byte into the pipe, or, with the pipe
/// full, switches itself off until a read resumes it.
#[no_mangle]
extern "C" fn UART0RX() {
    write(INTCLEAR, INT_RX);
    if read(STATE) & STATE_RXOVERRUN != 0 {
        write(STATE, STATE_RXOVERRUN);
        OVERRUN.store(true, Ordering::Release);
    }
    while read(STATE) & STATE_RXFULL != 0 {
        if RX.free_capacity() == 0 {
            write(CTRL, CTRL_TX_EN | CTRL_RX_EN);
            return;
        }
        let _ = RX.try_write(&[read(DATA) as u8]);
    }
}

impl embedded_io::ErrorType for Uart0 {
    type Error = UartError;
}

impl embedded_io::Read for Uart0 {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, UartError> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            Self::check_overrun()?;
            if let Ok(n) = RX.try_read(buf) {
                Self::resume();
                return Ok(n);
            }
        }
    }
}

impl embedded_io::ReadReady for Uart0 {
    fn read_ready(&mut self) -> Result<bool, UartError> {
        Self::check_overrun()?;
        Ok(!RX.is_empty())
    }
}

impl embedded_io::Write for Uart0 {
    /// Waits for room in the one-byte transmit buffer before each byte (the transmitter
    /// drains it at the baud rate): writes all of `buf`.
    fn write(&mut self, buf: &[u8]) -> Result<usize, UartError> {
        Ok(Self::send(buf))
    }

    fn flush(&mut self) -> Result<(), UartError> {
        while read(STATE) & STATE_TXFULL != 0 {}
        Ok(())
    }
}

impl embedded_io_async::Read for Uart0 {
    /// Cancel-safe (as rpcwire's async driver asks): the pipe hands out bytes only when the
    /// read completes.
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, UartError> {
        if buf.is_empty() {
            return Ok(0);
        }
        Self::check_overrun()?;
        let n = RX.read(buf).await;
        Self::resume();
        Ok(n)
    }
}

impl embedded_io_async::Write for Uart0 {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, UartError> {
        Ok(Self::send(buf))
    }

    async fn flush(&mut self) -> Result<(), UartError> {
        embedded_io::Write::flush(self)
    }
}

/// The vector table's interrupt part: UART0's receive interrupt is number 0 on this board.
#[link_section = ".vector_table.interrupts"]
#[no_mangle]
#[used]
static __INTERRUPTS: [unsafe extern "C" fn(); 1] = [UART0RX];
