//! dcsim: a fast, deterministic packet-level simulator for datacenter transports.
//!
//! This crate is the facade: it turns a scenario file into a [`World`], runs it, and
//! collects [`Results`]. The layers underneath are `dcsim-engine` (time, scheduler,
//! timers, random streams), `dcsim-net` (packets, ports, queue disciplines, routing,
//! topologies), `dcsim-transport` (TCP with pluggable congestion control), `dcsim-workload`
//! (traffic patterns), `dcsim-metrics` (statistics and writers) and `dcsim-control`
//! (control-plane services beside the packet path).
//!
//! ```text
//!   h0 ─┐                    ┌─ h2        a dumbbell: hosts 0..N-1 on the left switch,
//!       ├─ left ═══════ right┤            N..2N-1 on the right, one bottleneck between
//!   h1 ─┘                    └─ h3
//! ```
//!
//! ```
//! let text = r#"
//!     [sim]
//!     duration = "5ms"
//!     [topology]
//!     kind = "dumbbell"
//!     pairs = 2
//!     [transport]
//!     kind = "tcp"
//!     cc = "dctcp"
//!     [[flows]]
//!     src = 0
//!     dst = 2
//!     [[flows]]
//!     src = 1
//!     dst = 3
//! "#;
//! let spec = dcsim::ScenarioSpec::parse(text, "example", &[]).unwrap();
//! let mut world = dcsim::World::new(spec.build("example").unwrap()).unwrap();
//! world.run(&mut |_| {});
//! let results = dcsim::Results::collect(&mut world);
//! assert_eq!(results.flows().unwrap().len(), 2);
//! assert_eq!(results.summary["data_drops"], 0);
//! ```
#![warn(missing_docs)]
#![forbid(unsafe_code)]
// summary.json is one `json!` literal with more keys than the default limit expands.
#![recursion_limit = "256"]

pub mod estimate;
mod events;
mod partition;
mod results;
mod samplers;
mod scenario;
pub mod split;
mod split_error;
pub mod trace;
mod unloaded;
mod world;

pub use results::{Results, label};
pub use scenario::{
    ConfigError, EventsSpec, FlowEntry, FlowKeyword, FlowSelection, GeneratorEntry, Jitter,
    OutputSpec, PortsSpec, Release, SCHEMA_VERSION, Scenario, ScenarioSpec, SimSpec,
    TimeseriesSpec, TraceSpec, default_nic, default_queue, port_by_label,
};
pub use unloaded::unloaded_fct;
pub use world::{Event, RunProgress, RunStats, World};

pub use dcsim_control as control;
/// `[controller]`: the controllers a scenario can ask for (`dcsim_control::controller`).
pub use dcsim_control::controller;
pub use dcsim_engine as engine;
pub use dcsim_metrics as metrics;
pub use dcsim_net as net;
pub use dcsim_transport as transport;
pub use dcsim_workload as workload;

/// Loads, builds and runs a scenario file; a convenience for tests and tools.
pub fn run_file(path: &std::path::Path, sets: &[String]) -> Result<Results, ConfigError> {
    let spec = ScenarioSpec::load(path, sets)?;
    let mut world = World::new(spec.build(&path.display().to_string())?)?;
    world.run(&mut |_| {});
    Ok(Results::collect(&mut world))
}
