//! Multi-core allocator engines for the Fastpass-style arbiter of `dcsim-arbiter`, and the
//! thesis's stress benchmark that measures how far each sustains real-time allocation.
//!
//! `dcsim-arbiter` holds what the simulator uses: the deterministic single-threaded
//! [`Allocator`](dcsim_arbiter::Allocator), path assignment and the schedule checker. This
//! crate builds on its [`internals`](dcsim_arbiter::internals) (backlog, allocation pass,
//! bitmaps):
//! * the [`engine`]s spread allocation over cores in five architectures (serial, pipelined,
//!   parallel, random shuffle, ring) and replay a recorded demand [`Trace`] as fast as they
//!   can, cut into batches and source ranges by a [`Feed`];
//! * [`bench`](mod@bench) finds the highest offered load each architecture sustains, with
//!   latency and fairness at that load, and the speed of path assignment. The CLI's
//!   `dcsim arbiter-bench` and `examples/arbiter_bench.rs` are thin wrappers around it.
//!
//! See `docs/arbiter.md` for the architectures and measured results.
//!
//! # Guarantees
//! * Every engine's batches are valid and maximal allocations (the tests check them with
//!   [`dcsim_arbiter::check`]). All but `Pipelined` are deterministic for a given thread count.
//! * No `unsafe` code.
#![warn(missing_docs, unreachable_pub)]
#![forbid(unsafe_code)]

pub mod bench;
pub mod engine;
mod trace;

pub use engine::{Architecture, Collect, Engine, EngineConfig, RunOutput};
pub use trace::{Feed, Trace, source_groups};
