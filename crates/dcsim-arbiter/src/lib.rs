//! Fastpass-style central arbiter.
#![warn(missing_docs, unreachable_pub)]

mod allocator;
mod backlog;
mod bitmap;
pub mod check;
mod pairs;
mod types;

pub use allocator::{Allocator, AllocatorConfig, BatchAllocation, ConfigError, Fairness};
pub use backlog::DemandError;
pub use types::{
    Allocation, Demand, Grant, MAX_NODES, MTU_BYTES, NodeId, SLOTS_PER_WORD, TIMESLOT_NS,
    Timeslot, UNIT_LINK_BPS,
};
