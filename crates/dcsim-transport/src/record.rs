//! What is known about a flow for results: the record both the flow table and the
//! transports' `record` fill in. Its own module, so that the endpoint API and the flow
//! table can both name it without importing each other.

use dcsim_engine::{Dur, Time};

#[cfg(doc)]
use crate::Transport;

/// The most per-flow counters a transport can report ([`Transport::FLOW_COUNTERS`]).
pub const MAX_FLOW_COUNTERS: usize = 4;

/// What is known about a flow, for results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowRecord {
    /// When the receiver held every byte.
    pub end: Option<Time>,
    /// Completion time alone on its path at line rate (computed by the caller).
    pub unloaded_fct: Option<Dur>,
    /// Bytes the receiver holds in order (kept when the connection is dropped).
    pub delivered_bytes: u64,
    /// Bytes the flow ended up sending, when a stop time cut it short.
    pub sent_bytes_at_stop: Option<u64>,
    /// Packets sent again (however the transport recovers losses).
    pub retransmits: u64,
    /// The transport's own counters, in the order of its [`Transport::FLOW_COUNTERS`]
    /// (TCP: timeouts; ExpressPass: credits sent and wasted).
    pub counters: [u64; MAX_FLOW_COUNTERS],
}
