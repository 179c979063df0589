//! A Fastpass-style central arbiter: timeslot allocation, path assignment and an independent
//! schedule checker. The multi-core allocator engines and their stress benchmark are in the
//! `dcsim-arbiter-bench` crate.
//!
//! In Fastpass (Perry et al., SIGCOMM 2014) every host asks a central arbiter *when* and
//! *where* to send each MTU-sized packet. The arbiter allocates timeslots (one MTU at 10 Gbps,
//! 1.2 us) so that no host sends or receives two packets in one slot, and then a path through
//! the fabric so that no fabric link carries two packets in one slot; switch queues stay
//! empty. See `docs/arbiter.md` for the algorithms, the architectures and measured results.
//!
//! ```text
//!  hosts --demand (src, dst, packets)--> Allocator --(slot, src, dst)--> PathAssigner
//!                                          ^ per-pair backlog,            | spine per packet
//!                                          | LRA order, bitmaps           v
//!  hosts <------------- grants: "send to dst in these slots, via spine s" -+
//! ```
//!
//! # Use
//! The deterministic single-threaded [`Allocator`] is the API a simulator transport calls:
//! submit demands as they arrive, call [`Allocator::allocate_batch`] once per batch of
//! timeslots, hand each slot's allocations to a [`PathAssigner`].
//!
//! ```
//! use dcsim_arbiter::{Allocator, AllocatorConfig, Clos, Demand, NodeId, PathAssigner};
//!
//! // 8 hosts under 2 ToRs, 4 spines.
//! let clos = Clos { tors: 2, spines: 4, hosts_per_tor: 4 };
//! let mut arbiter = Allocator::new(&AllocatorConfig::new(clos.hosts())).unwrap();
//! let mut paths = PathAssigner::new(clos).unwrap();
//!
//! arbiter.submit(Demand { src: NodeId(0), dst: NodeId(5), slots: 3 }).unwrap();
//! arbiter.submit(Demand { src: NodeId(1), dst: NodeId(5), slots: 2 }).unwrap();
//! arbiter.submit(Demand { src: NodeId(6), dst: NodeId(2), slots: 1 }).unwrap();
//!
//! let batch = arbiter.allocate_batch(); // timeslots 0..64
//! assert_eq!(batch.allocated_slots(), 6);
//! let mut routes = Vec::new();
//! for (i, packets) in batch.by_slot().iter().enumerate() {
//!     paths.assign(packets, &mut routes).unwrap();
//!     for (&(src, dst), route) in packets.iter().zip(&routes) {
//!         println!("slot {i}: {} -> {} via {route:?}", src.0, dst.0);
//!     }
//! }
//! assert_eq!(arbiter.outstanding_slots(), 0);
//! ```
//!
//! The multi-core engines of `dcsim-arbiter-bench` replay a recorded demand trace as fast as
//! they can; they exist to measure how allocation scales over cores, and are built from the
//! pieces in [`internals`]. [`check`] and [`verify_paths`] are independent verifiers used by
//! the tests.
//!
//! # Guarantees
//! * Every batch is a valid and maximal allocation: no host sends or receives more packets per
//!   slot than it has unit links, no pair gets more than it asked for, and no pair with demand
//!   left has a slot free at both its ends.
//! * [`Allocator`] is deterministic: the same calls give the same allocations. Of the engines
//!   (`dcsim-arbiter-bench`), all but `Pipelined` are deterministic for a given thread count.
//! * No global state, and no `unsafe` code except two blocks in the private `isa` module
//!   that call a BMI2 instruction after checking the CPU has it (see that module and
//!   `docs/adr/0003-unsafe-for-bit-deposit.md`); every other crate forbids `unsafe`, but for
//!   dcsim-engine's one prefetch instruction (`docs/adr/0007-prefetch-instruction.md`).
#![warn(missing_docs, unreachable_pub)]
#![deny(unsafe_code)]

mod allocator;
mod backlog;
mod bitmap;
pub mod check;
mod isa;
mod pairs;
pub mod path;
mod types;

pub use allocator::{Allocator, AllocatorConfig, BatchAllocation, ConfigError, Fairness};
pub use backlog::DemandError;
pub use path::{Clos, Path, PathAssigner, PathError, PathViolation, verify_paths};
pub use types::{
    Allocation, Demand, Grant, MAX_NODES, MTU_BYTES, NodeId, SLOTS_PER_WORD, TIMESLOT_NS, Timeslot,
    UNIT_LINK_BPS,
};

/// The allocator's building blocks that the multi-core engines reuse: the per-pair backlog and
/// its allocation pass, the free-slot bitmaps and the lowest-bits selection. Public for
/// dcsim-arbiter-bench; not part of the API the simulator uses, and not stable.
pub mod internals {
    pub use crate::allocator::allocate_dyn;
    pub use crate::backlog::{Backlog, Entry, Fate, GrantSink, serve, sweep_filtered};
    pub use crate::bitmap::SlotBitmaps;
    #[cfg(target_arch = "x86_64")]
    pub use crate::isa::Bmi2;
    pub use crate::isa::{Isa, lowest_bits};
}
