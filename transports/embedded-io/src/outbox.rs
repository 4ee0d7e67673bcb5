//! Notifications that other tasks send while the async driver serves (feature `async`).
//!
//! The driver is borrowed by [`serve_with_outbox`](crate::asynch::AsyncDriver::serve_with_outbox)
//! for as long as it serves, so other tasks (a sensor task, a button's interrupt-driven task)
//! cannot call its `send_notification`. They put notifications in an [`Outbox`] instead, a
//! `static` shared by reference: [`notify`](Outbox::notify) renders the params at once into
//! one of the outbox's `N` fixed slots of `P` bytes and wakes the driver, which sends them in
//! order between the host's calls. No heap; a full outbox makes `notify` wait (or
//! [`try_notify`](Outbox::try_notify) fail), never grow.
//!
//! ```
//! use embassy_sync::blocking_mutex::raw::CriticalSectionRawMutex;
//! use rpcwire_embedded_io::outbox::Outbox;
//!
//! /// Four notifications of up to 64 bytes of params, shared by every task.
//! static OUTBOX: Outbox<CriticalSectionRawMutex, 4, 64> = Outbox::new();
//!
//! async fn sensor_task() {
//!     loop {
//!         let celsius = 21.5f32; // read the sensor
//!         let _ = OUTBOX.notify("telemetry", Some(&[celsius])).await;
//!         // Timer::after_secs(1).await;
//! #       break;
//!     }
//! }
//! # rpcwire_embedded_io::asynch::block_on(sensor_task());
//! # assert_eq!(OUTBOX.len(), 1);
//! // The driver's task: driver.serve_with_outbox(&OUTBOX, handler).await
//! ```

use embassy_sync::blocking_mutex::raw::RawMutex;
use embassy_sync::channel::{Channel, TrySendError};
use rpcwire::wire::ser::{to_slice, Rendered, SerializeError, ToSliceError};
use serde::Serialize;

/// Why a notification was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum NotifyError {
    /// The params take more than the outbox's `P` bytes.
    TooLarge {
        /// Bytes the params need.
        required: usize,
    },
    /// The params cannot be written as JSON (a NaN float).
    Serialize(SerializeError),
    /// Every slot is taken ([`Outbox::try_notify`] only; `notify` waits instead).
    Full,
}

impl core::fmt::Display for NotifyError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            NotifyError::TooLarge { required } => {
                write!(f, "notification params too large ({required} bytes)")
            }
            NotifyError::Serialize(e) => write!(f, "notification params: {e}"),
            NotifyError::Full => f.write_str("the outbox is full"),
        }
    }
}

impl core::error::Error for NotifyError {}

/// One queued notification: its method and its params, rendered.
pub(crate) struct Note<const P: usize> {
    pub(crate) method: &'static str,
    params: [u8; P],
    /// Bytes of `params` used; `None`: the notification has no params.
    len: Option<usize>,
}

impl<const P: usize> Note<P> {
    /// The params as JSON text to send verbatim.
    pub(crate) fn params(&self) -> Option<Rendered<'_>> {
        self.len.map(|len| Rendered(&self.params[..len]))
    }
}

/// A queue of up to `N` notifications with up to `P` bytes of params each, filled by any
/// task and sent by the async driver; `M` is the embassy-sync mutex that guards it
/// (`CriticalSectionRawMutex` when tasks or interrupts of other priorities send,
/// `NoopRawMutex` within one executor). See the [module documentation](self).
pub struct Outbox<M: RawMutex, const N: usize = 4, const P: usize = 128> {
    queue: Channel<M, Note<P>, N>,
}

impl<M: RawMutex, const N: usize, const P: usize> Outbox<M, N, P> {
    /// An empty outbox (a `const fn`, for a `static`).
    pub const fn new() -> Self {
        Outbox {
            queue: Channel::new(),
        }
    }

    /// Renders a notification of `method` with `params` and queues it, waiting while the
    /// outbox is full; the driver sends it after what it is writing now.
    pub async fn notify<T: Serialize + ?Sized>(
        &self,
        method: &'static str,
        params: Option<&T>,
    ) -> Result<(), NotifyError> {
        let note = render(method, params)?;
        self.queue.send(note).await;
        Ok(())
    }

    /// Like [`notify`](Outbox::notify), but fails with [`NotifyError::Full`] instead of
    /// waiting (from an interrupt handler, say).
    pub fn try_notify<T: Serialize + ?Sized>(
        &self,
        method: &'static str,
        params: Option<&T>,
    ) -> Result<(), NotifyError> {
        let note = render(method, params)?;
        self.queue
            .try_send(note)
            .map_err(|TrySendError::Full(_)| NotifyError::Full)
    }

    /// Notifications queued and not yet taken by the driver.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The next notification, waiting for one (the driver's side; cancel-safe: dropped
    /// before it completes, it takes nothing).
    pub(crate) async fn next(&self) -> Note<P> {
        self.queue.receive().await
    }
}

impl<M: RawMutex, const N: usize, const P: usize> Default for Outbox<M, N, P> {
    fn default() -> Self {
        Self::new()
    }
}

/// Renders `params` into a note.
fn render<T: Serialize + ?Sized, const P: usize>(
    method: &'static str,
    params: Option<&T>,
) -> Result<Note<P>, NotifyError> {
    let mut note = Note {
        method,
        params: [0; P],
        len: None,
    };
    if let Some(params) = params {
        let len = to_slice(params, &mut note.params).map_err(|e| match e {
            ToSliceError::BufferTooSmall { required } => NotifyError::TooLarge { required },
            ToSliceError::Serialize(e) => NotifyError::Serialize(e),
        })?;
        note.len = Some(len);
    }
    Ok(note)
}
