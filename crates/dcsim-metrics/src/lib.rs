//! Metrics of dcsim: summary statistics, the row types of the output files (schemas in
//! `docs/output.md`) and atomic writers.
//!
//! Results are written atomically: to a temporary file in the same directory, flushed and
//! synced, then renamed over the target, so a killed run never leaves a half-written file
//! that looks complete.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod analysis;
mod digest;
pub mod plot;
pub mod reference;
mod rows;
pub mod sorted;
pub mod spill;
mod stats;
mod store;
mod tables;

pub use digest::{Fnv, digest};
pub use rows::{Counters, EventRow, FlowRow, OUTPUT_SCHEMA_VERSION, PortRow, SampleRow};
pub use spill::{Body, SampleSpill};
pub use stats::{Ascending, Distribution, jain};
pub use store::{DirLock, MANIFEST, atomic_write, commit_dir, commit_files, verify_dir};
pub use tables::{text_table, to_csv};
