#![no_std]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
//! # rpcwire-memory
//!
//! In-memory byte links for rpcwire, to wire two endpoints together in one program:
//!
//! - [`Link`] (no_std, no heap, the default): a **deterministic** full-duplex link between
//!   two [`Connection`](rpcwire::Connection)s for simulations. It is driven by a virtual clock
//!   (every call takes an [`Instant`](rpcwire::Instant)) and one seed, which decides how
//!   writes are split into reads (chunking, from 1 byte up to everything), merged (coalescing),
//!   delayed, and which faults happen (a corrupted byte, a lost tail, a dropped connection).
//!   The same seed and the same calls give the same bytes, so a failing simulation replays
//!   from its seed. [`flush`] and [`fill`] move bytes between a connection and the link.
//! - `pipe` (feature `std`): blocking pipes implementing `std::io::Read + Write`.
//! - `channel` (feature `tokio`): async streams implementing tokio's `AsyncRead +
//!   AsyncWrite`, optionally split into seeded chunks.
//!
//! [`SplitMix64`] is the small seeded generator everything here uses; simulations may use it
//! too, so that one seed determines a whole scenario.
//!
//! ## A simulation step
//!
//! ```
//! use core::time::Duration;
//! use rpcwire::{Connection, Inbound, Input, Instant, Token};
//! use rpcwire::wire::RxBuffer;
//! use rpcwire_memory::{fill, flush, Link, LinkConfig, Side};
//!
//! let config = LinkConfig {
//!     max_chunk: 5,
//!     max_delay: Duration::from_millis(3),
//!     ..LinkConfig::IDEAL
//! };
//! let mut link: Link<512, 8> = Link::new(2024, config);
//! let mut a: Connection = Connection::default();
//! let mut b: Connection = Connection::default();
//! let mut rx_b: RxBuffer<[u8; 512]> = b.rx_buffer();
//!
//! let mut now = Instant::ZERO;
//! a.send_notification("tick", Some(&[1, 2, 3])).unwrap();
//! flush(&mut link, now, Side::A, &mut a).unwrap();
//!
//! let mut got = None;
//! while got.is_none() {
//!     // Jump the virtual clock to the next moment bytes arrive.
//!     now = now.max(link.next_ready(Side::B).unwrap());
//!     fill(&mut link, now, Side::B, &mut rx_b).unwrap();
//!     while let Input::Item(item) = b.handle_input(now, &mut rx_b, &mut &[][..]) {
//!         if let Inbound::Notification(n) = item {
//!             got = Some(n.params.unwrap().as_str().to_owned());
//!         }
//!     }
//! }
//! assert_eq!(got.as_deref(), Some("[1,2,3]"));
//! assert!(now <= Instant::from_millis(3));
//! ```

#[cfg(feature = "std")]
extern crate std;

mod link;
mod rng;

#[cfg(feature = "tokio")]
pub mod channel;
#[cfg(feature = "std")]
pub mod pipe;

pub use link::{fill, flush, Faults, Link, LinkConfig, LinkError, LinkStats, Side};
pub use rng::SplitMix64;
