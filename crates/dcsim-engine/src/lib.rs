//! The discrete-event engine of dcsim.
//!
//! This crate knows nothing about networks. It provides:
//!
//! - [`Time`], [`Dur`] and [`Rate`]: integer picoseconds and bits per second, with exact
//!   serialization-time arithmetic ([`Rate::tx_time`]) and unit parsing for scenario files
//!   ([`units`]);
//! - [`Scheduler`]: a min-heap of small `Copy` events ordered by `(time, insertion sequence)`,
//!   so equal-time events run in the order they were scheduled;
//! - [`TimerTable`]: per-owner timers with lazy cancel and lazy re-arm, so a timer costs one
//!   heap entry per firing rather than one per re-arm;
//! - [`RngTree`]: one seed per run, an independent random stream per component;
//! - [`define_id!`]: typed `u32` arena indices;
//! - [`spec`]: how scenario files name and configure plug-ins (`kind = "..."`);
//! - [`parallel`]: a model split into parts run on one thread each, handling events in the
//!   order one [`Scheduler`] would (ADR 0009).
//!
//! There is no global state: two simulations can run in one process at once.
#![warn(missing_docs)]
#![deny(unsafe_code)] // allowed in `prefetch` only (ADR 0007)

mod id;
mod order;
pub mod parallel;
pub mod prefetch;
mod rng;
mod sched;
pub mod spec;
mod time;
mod timer;
pub mod units;

pub use rng::{Rng, RngTree, splitmix, stable_hash};
pub use sched::{SchedStats, Schedule, Scheduler, Upcoming};
pub use time::{Dur, Rate, Time};
pub use timer::{TimerFire, TimerTable};
pub use units::ByteSize;

/// Re-exported so that crates using [`define_id!`] need no direct dependency on serde.
#[doc(hidden)]
pub use serde as __serde;
