//! Fastpass-style central arbiter.
#![warn(missing_docs, unreachable_pub)]

mod allocator;
mod backlog;
pub mod bench;
mod bitmap;
pub mod check;
pub mod engine;
mod pairs;
pub mod path;
mod trace;
mod types;

pub use allocator::{Allocator, AllocatorConfig, BatchAllocation, ConfigError, Fairness};
pub use backlog::DemandError;
pub use engine::{Architecture, Collect, Engine, EngineConfig, RunOutput};
pub use path::{Clos, Path, PathAssigner, PathError, PathViolation, verify_paths};
pub use trace::{Feed, Trace, source_groups};
pub use types::{
    Allocation, Demand, Grant, MAX_NODES, MTU_BYTES, NodeId, SLOTS_PER_WORD, TIMESLOT_NS, Timeslot,
    UNIT_LINK_BPS,
};
