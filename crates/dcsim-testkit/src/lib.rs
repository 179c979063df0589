//! The dcsim test kit: what a plug-in's tests need, without a whole scenario.
//!
//! - [`CcDriver`]: feeds a congestion controller scripted windows of ACKs, ECN echoes,
//!   queueing delays, rate echoes, losses and timeouts, and checks its window and rate
//!   after every step.
//! - [`QdiscDriver`]: offers a queue discipline arrivals and takes departures at chosen
//!   times, counting accepts, drops and marks.
//! - [`LinkPair`]: runs one sender and one receiver of any transport over a small
//!   simulated network (two hosts, two switches, one bottleneck) and records every packet
//!   that reaches a host.
//!
//! Add it as a dev-dependency and use it from integration tests (`tests/`): a crate's own
//! unit tests use the same drivers through its `testkit` module.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod link;

pub use dcsim_net::testkit::QdiscDriver;
pub use dcsim_transport::testkit::{CcDriver, Round, RoundOut};
pub use link::{Delivery, LinkPair, PairRun};
