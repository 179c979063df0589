//! `dcsim plot RUN_DIR` and `dcsim report DIR`.
//!
//! [`run_plots`] turns a run's results into plot specifications (queues and goodput over
//! time, windows of the sampled flows, the FCT distribution, slowdown per size bucket, link
//! tiers), drawn by the project's one plotting path (`dcsim_metrics::plot`, matplotlib).
//! [`report`] writes one self-contained HTML page for a run, a sweep or a reproduction: its
//! figures embedded as images, its tables and the parameters that ran. [`compare`] puts
//! runs side by side (simulated ones and the real-kernel twin's alike): FCT and slowdown
//! per flow size with intervals ([`stats`]), FCT distributions, queues, on shared axes.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod compare;
mod html;
mod run;
pub mod stats;

pub use compare::{CompareOptions, compare};
pub use html::report;
pub use run::{plot_run, run_plots};
