//! UART0 of the Nordic nRF51822 (the micro:bit's, modelled by qemu's `microbit` board), with
//! no PAC: the transmit side implements `embedded_io::Write` (blocking, a byte at a time);
//! the receive side is interrupt-driven: [`on_interrupt`] moves each received byte into a
//! queue that the main loop hands to `Driver::handle_bytes`.

use core::cell::RefCell;
use core::convert::Infallible;

use critical_section::Mutex;
use heapless::spsc::{Consumer, Producer, Queue};

use crate::mmio::{read, write};

const UART0: usize = 0x4000_2000;
const STARTRX: usize = UART0;
const STARTTX: usize = UART0 + 0x008;
const RXDRDY: usize = UART0 + 0x108;
const TXDRDY: usize = UART0 + 0x11C;
const INTENSET: usize = UART0 + 0x304;
const INTENCLR: usize = UART0 + 0x308;
const ENABLE: usize = UART0 + 0x500;
const PSELTXD: usize = UART0 + 0x50C;
const PSELRXD: usize = UART0 + 0x514;
const RXD: usize = UART0 + 0x518;
const TXD: usize = UART0 + 0x51C;
const BAUDRATE: usize = UART0 + 0x524;
/// The RXDRDY event's bit in INTENSET/INTENCLR.
const INT_RXDRDY: u32 = 1 << 2;
/// The micro:bit's USB serial pins.
const PIN_TX: u32 = 24;
const PIN_RX: u32 = 25;
const BAUD_115200: u32 = 0x01D7_E000;
/// UART0's interrupt number, and the NVIC's set-enable register.
pub const IRQ: u32 = 2;
const NVIC_ISER: usize = 0xE000_E100;

/// Bytes received and not yet handed to the driver. 128 is several FIFO-loads of the host's
/// fastest bursts; when it is full the interrupt stops taking bytes (they wait in the UART,
/// whose own FIFO then stops the sender) until the main loop drains it.
pub type RxQueue = Queue<u8, 128>;

/// The interrupt's end of the queue.
static PRODUCER: Mutex<RefCell<Option<Producer<'static, u8>>>> = Mutex::new(RefCell::new(None));

/// UART0's transmit side.
pub struct Uart0 {
    _owned: (),
}

impl Uart0 {
    /// Configures UART0 (115 200 baud, 8N1), starts both directions and the receive interrupt,
    /// which fills `queue`; returns the transmit side and the main loop's end of the queue.
    pub fn start(queue: &'static mut RxQueue) -> (Self, Consumer<'static, u8>) {
        let (producer, consumer) = queue.split();
        critical_section::with(|cs| PRODUCER.borrow_ref_mut(cs).replace(producer));
        write(PSELTXD, PIN_TX);
        write(PSELRXD, PIN_RX);
        write(BAUDRATE, BAUD_115200);
        write(ENABLE, 4);
        write(STARTTX, 1);
        write(STARTRX, 1);
        write(INTENSET, INT_RXDRDY);
        write(NVIC_ISER, 1 << IRQ);
        (Uart0 { _owned: () }, consumer)
    }
}

/// Lets the receive interrupt take bytes again (after [`on_interrupt`] stopped it because
/// the queue was full); the main loop calls it once it has drained the queue.
pub fn resume_receiving() {
    write(INTENSET, INT_RXDRDY);
}

/// The receive interrupt: moves every byte the UART holds into the queue. With the queue
/// full it masks itself and leaves the bytes in the UART until [`resume_receiving`].
pub fn on_interrupt() {
    critical_section::with(|cs| {
        let mut producer = PRODUCER.borrow_ref_mut(cs);
        let Some(producer) = producer.as_mut() else {
            return;
        };
        while read(RXDRDY) != 0 {
            if !producer.ready() {
                write(INTENCLR, INT_RXDRDY);
                return;
            }
            // The event first, then the byte: a byte still waiting raises it again.
            write(RXDRDY, 0);
            let _ = producer.enqueue(read(RXD) as u8);
        }
    });
}

impl embedded_io::ErrorType for Uart0 {
    type Error = Infallible;
}

impl embedded_io::Write for Uart0 {
    /// Sends the first byte and waits until it has left.
    fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        let Some(&b) = buf.first() else {
            return Ok(0);
        };
        write(TXDRDY, 0);
        write(TXD, u32::from(b));
        while read(TXDRDY) == 0 {}
        Ok(1)
    }

    fn flush(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}
