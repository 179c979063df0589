//! The row types of the output files: one struct per row of `flows.csv`, `ports.csv`,
//! `timeseries.csv` and `events.csv`, the transport counters a flow row carries, and the
//! version number of the output layout.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// One row of `flows.csv`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FlowRow {
    /// Flow number (order of definition in the scenario).
    pub flow_id: u32,
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Transport label ("dctcp", "reno").
    pub transport: String,
    /// Bytes to deliver; empty for a long-lived flow.
    pub size_bytes: Option<u64>,
    /// Start time, ns.
    pub start_ns: u64,
    /// Completion time (receiver holds every byte), ns; empty if unfinished.
    pub end_ns: Option<u64>,
    /// Flow completion time, ns.
    pub fct_ns: Option<u64>,
    /// Completion time alone on its path at line rate (unloaded), ns. Read as
    /// `ideal_fct_ns` too, its name before output schema 7.
    #[serde(alias = "ideal_fct_ns")]
    pub unloaded_fct_ns: Option<u64>,
    /// `fct_ns / unloaded_fct_ns`.
    pub slowdown: Option<f64>,
    /// Bytes delivered in order to the receiver by the end of the run.
    pub delivered_bytes: u64,
    /// Goodput over the measurement window, Gb/s (bytes delivered in the window / window).
    pub window_goodput_gbps: f64,
    /// Packets sent again.
    pub retransmits: u64,
    /// Whether the flow counts in FCT statistics (it started inside the measurement
    /// window: not before `sim.warmup`, not within `sim.cooldown` of the end of arrivals).
    pub measured: bool,
    /// The counters of the flow's transport (`timeouts` for TCP; `credits_sent`,
    /// `credits_wasted` for ExpressPass): the columns after `measured`, one per counter
    /// of every transport the run uses, empty for flows of other transports.
    #[serde(skip)]
    pub counters: Counters,
}

/// A flow's transport counters by name, in its transport's order: a short list (one or
/// two entries), kept inline with names borrowed where they are static, since a run holds
/// one per flow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters(Vec<(Cow<'static, str>, u64)>);

impl Counters {
    /// Room for `n` counters.
    pub fn with_capacity(n: usize) -> Self {
        Self(Vec::with_capacity(n))
    }

    /// Sets counter `name` (appended if new).
    pub fn insert(&mut self, name: impl Into<Cow<'static, str>>, v: u64) {
        let name = name.into();
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some(e) => e.1 = v,
            None => self.0.push((name, v)),
        }
    }

    /// The value of counter `name`, if the flow's transport has it.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.0.iter().find(|(n, _)| n == name).map(|e| e.1)
    }

    /// Whether the flow's transport has counter `name`.
    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// (name, value) in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|(n, v)| (&**n, *v))
    }
}

impl std::ops::Index<&str> for Counters {
    type Output = u64;
    fn index(&self, name: &str) -> &u64 {
        match self.0.iter().find(|(n, _)| n == name) {
            Some((_, v)) => v,
            None => panic!("no counter {name:?}"),
        }
    }
}

/// One row of `ports.csv` (counters over the measurement window).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PortRow {
    /// Port number.
    pub port: u32,
    /// Node the port belongs to.
    pub node: String,
    /// Node at the far end of its link.
    pub peer: String,
    /// `node->peer`: the port's name in traces, time series and `--port` arguments. Folders
    /// of output schema 5 and before have none: read back, it is empty.
    #[serde(default)]
    pub label: String,
    /// Tier of `node`.
    pub tier: String,
    /// Tier of `peer`.
    pub peer_tier: String,
    /// Line rate, Gb/s.
    pub rate_gbps: f64,
    /// Packets transmitted.
    pub tx_pkts: u64,
    /// Wire bytes transmitted (all classes).
    pub tx_bytes: u64,
    /// Wire bytes of data-class packets transmitted.
    pub tx_data_bytes: u64,
    /// `tx_bytes · 8 / (rate · window)`.
    pub utilization: f64,
    /// Largest backlog, wire bytes.
    pub max_queue_bytes: u64,
    /// Largest backlog of data packets alone, wire bytes.
    pub max_data_queue_bytes: u64,
    /// Largest backlog of credits alone, wire bytes (ExpressPass credit queue).
    pub max_credit_queue_bytes: u64,
    /// Time-weighted mean backlog, wire bytes.
    pub avg_queue_bytes: f64,
    /// Packets dropped (all classes).
    pub drops: u64,
    /// Data packets dropped.
    pub data_drops: u64,
    /// Control packets (ACKs, signalling) dropped.
    pub control_drops: u64,
    /// Credits dropped.
    pub credit_drops: u64,
    /// Of the drops, AQM decisions (not a full buffer).
    pub aqm_drops: u64,
    /// Packets CE-marked.
    pub ecn_marks: u64,
}

/// One row of `timeseries.csv` (long format).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SampleRow {
    /// Sample time, ns.
    pub time_ns: u64,
    /// What was sampled (`throughput_gbps`, `cwnd_bytes`, `alpha`, `queue_bytes`).
    pub kind: Cow<'static, str>,
    /// Flow number or port label (`node->peer`).
    pub id: String,
    /// The value.
    pub value: f64,
}

/// One row of `events.csv`, the per-flow event log: the long format of `timeseries.csv`,
/// with `id` always a flow number.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EventRow {
    /// When, ns.
    pub time_ns: u64,
    /// What changed (`start`, `cwnd_bytes`, `ce_arrived`, `completed`, ...).
    pub kind: String,
    /// Flow number.
    pub id: u32,
    /// The new value, or what the kind says.
    pub value: f64,
}

/// The version of the output files' layout (columns of the CSV and Parquet files, keys of
/// summary.json), written into summary.json, index.json and the Parquet metadata. Changed
/// whenever a column or key is added, removed, renamed or changes meaning; docs/output.md
/// lists what each version changed, and a test holds the columns to the list of the
/// current version (`crates/dcsim-columnar/tests/schema/vN.txt`).
///
/// Version 2: statistics of nothing (an empty bucket, no completed flow) are empty cells
/// and nulls instead of zeros; `schema_version` added to summary.json and index.json.
pub const OUTPUT_SCHEMA_VERSION: u32 = 8;
