//! Workloads: flow-size distributions, arrival processes and traffic patterns that produce
//! plain flow descriptions ([`GenFlow`]). A workload never starts a transport itself; the
//! facade turns its output into flows.
//!
//! - [`cdf`]: empirical CDFs (built-in and from files in four formats), the reference
//!   sampling rule and the exact analytic mean;
//! - [`dist`]: [`SizeSpec`] (scenario form) and [`SizeDist`] (fixed, uniform, Pareto,
//!   empirical, byte-share mixtures);
//! - [`arrival`]: the definition of load ([`LoadBasis`], the load-to-λ formula) and arrival
//!   processes;
//! - [`pattern`]: [`FlowSource`], a lazy, time-ordered stream of flows with O(1) memory, and
//!   the patterns behind it;
//! - trace replay from CSV (`kind = "trace"`).
//!
//! A pattern is written in a scenario as a [`GeneratorSpec`] (`kind = "..."`). The facade
//! builds it with [`GeneratorSpec::source`] and keeps one pending event per source:
//!
//! ```
//! use dcsim_engine::{Dur, Rate, RngTree};
//! use dcsim_workload::{GeneratorSpec, SourceCx};
//!
//! let spec: GeneratorSpec = toml::from_str(r#"
//!     kind = "poisson"
//!     load = 0.6
//!     load_relative_to = "host-links"
//!     flow_size = { cdf = "websearch" }
//!     max_flows = 1000
//! "#).unwrap();
//! let rng = RngTree::new(1);
//! let cx = SourceCx { host_link: Some(Rate::from_gbps(10)), ..SourceCx::new(16, &rng, 0) };
//! let mut src = spec.source(&cx).unwrap();
//! let lambda = src.info().flows_per_s.unwrap(); // record it with the run
//! assert!((lambda - 0.6 * 160e9 / (1_710_004.5 * 8.0)).abs() < 1.0);
//! while let Some(t) = src.peek_start() {
//!     // schedule an event at t; when it fires:
//!     let f = src.next().unwrap();
//!     assert!(f.start == t && f.src != f.dst);
//! }
//! assert_eq!(src.emitted(), 1000);
//! ```
//!
//! `docs/workloads.md` describes every distribution and pattern with its parameters.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod arrival;
pub mod cdf;
pub mod dist;
pub mod pattern;
mod trace;

use core::fmt;
use core::str::FromStr;

use dcsim_engine::units::{SIZE_UNITS, UnitError, parse_quantity};
use dcsim_engine::{ByteSize, Dur, Rng, RngTree};
use rand::{Rng as _, RngExt};
use serde::{Deserialize, Serialize};

pub use crate::arrival::{ArrivalSpec, LoadBasis, LoadInfo, Ratio};
pub use crate::cdf::{BuiltinCdf, CdfError, CdfFormat, EmpiricalCdf};
pub use crate::dist::{SizeDist, SizeSpec};
pub use crate::pattern::{Destinations, FlowGenerator, FlowSource, Limits, SourceCx, SourceInfo};

/// A flow produced by a workload: hosts by number, times relative to the simulation start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenFlow {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Bytes, or `None` for a long-lived flow.
    pub size_bytes: Option<u64>,
    /// Start time.
    pub start: Dur,
    /// Stop time (no new data after it), if any.
    pub stop: Option<Dur>,
}

/// A flow size: bytes with a unit (`"10MB"`), or `"inf"` for a long-lived flow.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowSize(pub Option<u64>);

impl FromStr for FlowSize {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        match s.trim() {
            "inf" | "unbounded" | "infinite" => Ok(Self(None)),
            t => {
                let b = parse_quantity(t, SIZE_UNITS, "size").map_err(|mut e| {
                    e.reason.push_str(", or \"inf\" for a long-lived flow");
                    e
                })?;
                if b == 0 {
                    return Err(UnitError {
                        input: s.into(),
                        reason: "a flow must carry at least 1 byte".into(),
                    });
                }
                Ok(Self(Some(b)))
            }
        }
    }
}
impl fmt::Display for FlowSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("inf"),
            Some(b) => fmt::Display::fmt(&ByteSize(b), f),
        }
    }
}
impl fmt::Debug for FlowSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl Serialize for FlowSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
impl<'de> Deserialize<'de> for FlowSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = FlowSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size such as \"10MB\", or \"inf\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<FlowSize, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<FlowSize, E> {
                Err(E::custom(format!(
                    "{v} has no unit; write a size such as \"{v}B\", or \"inf\""
                )))
            }
        }
        d.deserialize_any(V)
    }
}

/// Order in which staggered flows leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LeaveOrder {
    /// The first to join is the first to leave.
    #[default]
    Fifo,
    /// The last to join is the first to leave.
    Lifo,
}

/// A traffic pattern as written in a scenario (`kind = "..."`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum GeneratorSpec {
    /// `count` flows from host `src + i·src_step` to host `dst + i·dst_step`; flow i starts
    /// at `start + i·start_every` and, if `stop` is set, stops at `stop + j·stop_every`
    /// where j is its position in the leave order.
    Pairs {
        /// Number of flows.
        count: u32,
        /// First sender.
        src: u32,
        /// First receiver.
        dst: u32,
        /// Sender step (default 1).
        #[serde(default = "one")]
        src_step: u32,
        /// Receiver step (default 1).
        #[serde(default = "one")]
        dst_step: u32,
        /// Size of each flow (default `inf`).
        #[serde(default)]
        size: FlowSize,
        /// Start of the first flow (default 0).
        #[serde(default)]
        start: Dur,
        /// Gap between starts (default 0).
        #[serde(default)]
        start_every: Dur,
        /// Stop time of the first flow to leave, if the flows leave.
        #[serde(default)]
        stop: Option<Dur>,
        /// Gap between stops (default 0).
        #[serde(default)]
        stop_every: Dur,
        /// Leave order (default `fifo`).
        #[serde(default)]
        leave_order: LeaveOrder,
    },
    /// Every host (or every host in `first..first+hosts`) sends one flow to a distinct
    /// host of the same set, by a random derangement (no host sends to itself).
    Permutation {
        /// First host of the set (default 0).
        #[serde(default)]
        first: u32,
        /// Hosts in the set (default: all from `first`).
        #[serde(default)]
        hosts: Option<u32>,
        /// Size of each flow (default `inf`).
        #[serde(default)]
        size: FlowSize,
        /// Start time (default 0).
        #[serde(default)]
        start: Dur,
        /// Each start is delayed by a uniform random amount in `[0, jitter]` (default 0).
        #[serde(default)]
        jitter: Dur,
    },
    /// `senders` hosts each send `size` to `receiver` at `start` (plus jitter). Senders are
    /// `first_sender..first_sender+senders`, skipping the receiver.
    Incast {
        /// The receiving host.
        receiver: u32,
        /// Number of senders (default: every other host).
        #[serde(default)]
        senders: Option<u32>,
        /// First sender (default 0).
        #[serde(default)]
        first_sender: u32,
        /// Bytes per sender.
        size: FlowSize,
        /// Start time (default 0).
        #[serde(default)]
        start: Dur,
        /// Each start is delayed by a uniform random amount in `[0, jitter]` (default 0).
        #[serde(default)]
        jitter: Dur,
    },
    /// Poisson flow arrivals at a target load: source uniform over the hosts, destination
    /// by `destinations`, size from `flow_size`. The arrival rate is
    /// `λ = C·load/(mean_size·8·wire_factor)`, with `C` set by `load_relative_to` (see
    /// [`arrival`]). Lazy; endless unless capped.
    Poisson {
        /// Flow-size distribution.
        flow_size: SizeSpec,
        /// Target load, a fraction of the capacity named by `load_relative_to`.
        load: f64,
        /// What the load is relative to (required: `"host-links"` or `"tor-uplinks"`).
        load_relative_to: LoadBasis,
        /// With `"tor-uplinks"`: the ToR oversubscription factor `o`, giving
        /// `C = hosts·host_link_rate/o` (3 for the ExpressPass fat-tree). Without it the
        /// topology's ToR uplink capacity is used.
        #[serde(default)]
        oversubscription: Option<f64>,
        /// Wire bytes per payload byte (default 1; `"1538/1460"` as in the ExpressPass
        /// script, `"1500/1460"` as in pFabric and PIAS).
        #[serde(default = "Ratio::one")]
        wire_factor: Ratio,
        /// Mean flow size to use in the formula instead of the analytic mean (to reproduce
        /// a script that assumed another mean; the ExpressPass script assumes 1,654,275 B
        /// for web search).
        #[serde(default)]
        mean_size_for_load: Option<ByteSize>,
        /// First host of the set (default 0).
        #[serde(default)]
        first: u32,
        /// Hosts in the set (default: all from `first`).
        #[serde(default)]
        hosts: Option<u32>,
        /// Destination choice (default `"uniform"`).
        #[serde(default)]
        destinations: Destinations,
        /// Rack size for `"inter-rack"` (default: from the topology).
        #[serde(default)]
        hosts_per_rack: Option<u32>,
        /// Start of the arrival process (default 0); the first flow arrives one random gap
        /// later.
        #[serde(default)]
        start: Dur,
        /// Most flows to generate.
        #[serde(default)]
        max_flows: Option<u64>,
        /// No flow starts at or after this time.
        #[serde(default)]
        until: Option<Dur>,
    },
    /// Partition/aggregate incast: at each query, `degree` distinct hosts each send a
    /// response to one aggregator; aggregator and responders are uniform over the set.
    /// Lazy; endless unless capped.
    PartitionAggregate {
        /// Responders per query.
        degree: u32,
        /// Size of each response.
        response_size: SizeSpec,
        /// Query arrival process (`{ poisson_per_s = 500.0 }` or `{ every = "2ms" }`).
        queries: ArrivalSpec,
        /// Each response starts a uniform random time in `[0, jitter]` after its query
        /// (default 0).
        #[serde(default)]
        jitter: Dur,
        /// First host of the set (default 0).
        #[serde(default)]
        first: u32,
        /// Hosts in the set (default: all from `first`).
        #[serde(default)]
        hosts: Option<u32>,
        /// Start of the query process (default 0).
        #[serde(default)]
        start: Dur,
        /// Most flows (responses) to generate.
        #[serde(default)]
        max_flows: Option<u64>,
        /// No flow starts at or after this time.
        #[serde(default)]
        until: Option<Dur>,
    },
    /// All-to-all shuffle: each of `hosts` hosts runs `tasks_per_host` tasks, and every task
    /// sends `bytes_per_pair` to every task on the other hosts, so each host sends and
    /// receives `tasks²·(hosts − 1)` flows (2496 for the xpass-shuffle set-up of 40 hosts
    /// and 8 tasks). Lazy, finite.
    Shuffle {
        /// First host of the set (default 0).
        #[serde(default)]
        first: u32,
        /// Hosts in the set (default: all from `first`).
        #[serde(default)]
        hosts: Option<u32>,
        /// Tasks per host (default 1).
        #[serde(default = "one")]
        tasks_per_host: u32,
        /// Bytes each task sends to each task on another host.
        bytes_per_pair: ByteSize,
        /// Start time (default 0).
        #[serde(default)]
        start: Dur,
        /// Each sending task starts a uniform random time in `[0, jitter]` after `start`
        /// (default 0).
        #[serde(default)]
        jitter: Dur,
    },
    /// The Pulser evaluation mix (Almasi et al.; baselines.md §4.6): Poisson background
    /// flows at `load`, uniform source and destination, short flows uniform on
    /// `short_size` and long flows of `long_size` carrying `long_share` of the background
    /// bytes; plus incast queries of `incast_degree` responders. `load` counts the
    /// background only. Lazy; endless unless capped.
    Pulser {
        /// Target load of the background flows.
        load: f64,
        /// What the load is relative to.
        load_relative_to: LoadBasis,
        /// As for `poisson`.
        #[serde(default)]
        oversubscription: Option<f64>,
        /// As for `poisson` (default 1).
        #[serde(default = "Ratio::one")]
        wire_factor: Ratio,
        /// Short flow sizes, uniform (default `["8KB", "32KB"]`).
        #[serde(default = "pulser_short")]
        short_size: [ByteSize; 2],
        /// Long flow size (default `"1MB"`).
        #[serde(default = "pulser_long")]
        long_size: ByteSize,
        /// Share of background bytes in long flows (default 0.3).
        #[serde(default = "pulser_long_share")]
        long_share: f64,
        /// Responders per incast query (default 24; the paper also uses 32 and 40).
        #[serde(default = "pulser_degree")]
        incast_degree: u32,
        /// Bytes per incast response (required: our sources do not give Pulser's value).
        incast_response_size: ByteSize,
        /// Incast query arrival process (required, for the same reason).
        incast_queries: ArrivalSpec,
        /// Jitter of incast responses (default 0).
        #[serde(default)]
        incast_jitter: Dur,
        /// First host of the set (default 0).
        #[serde(default)]
        first: u32,
        /// Hosts in the set (default: all from `first`).
        #[serde(default)]
        hosts: Option<u32>,
        /// Start of both arrival processes (default 0).
        #[serde(default)]
        start: Dur,
        /// Most flows to generate.
        #[serde(default)]
        max_flows: Option<u64>,
        /// No flow starts at or after this time.
        #[serde(default)]
        until: Option<Dur>,
    },
    /// Replays a CSV trace `start_ns,src,dst,size_bytes` (see the `trace` section of
    /// `docs/workloads.md`). Lazy, streamed from the file.
    Trace {
        /// The CSV file; a relative path is taken from the scenario's directory.
        file: String,
        /// Added to every start time (default 0).
        #[serde(default)]
        start: Dur,
        /// Most flows to replay.
        #[serde(default)]
        max_flows: Option<u64>,
        /// No flow starts at or after this time.
        #[serde(default)]
        until: Option<Dur>,
    },
}

fn one() -> u32 {
    1
}
fn pulser_short() -> [ByteSize; 2] {
    [ByteSize(8_000), ByteSize(32_000)]
}
fn pulser_long() -> ByteSize {
    ByteSize(1_000_000)
}
fn pulser_long_share() -> f64 {
    0.3
}
fn pulser_degree() -> u32 {
    24
}

impl GeneratorSpec {
    /// The patterns a scenario can name (for `dcsim list`).
    pub const KINDS: &'static [(&'static str, &'static str)] = &[
        (
            "pairs",
            "count flows src+i*src_step -> dst+i*dst_step, staggered starts, join/leave schedule",
        ),
        (
            "permutation",
            "every host sends one flow to a distinct host (random derangement)",
        ),
        (
            "incast",
            "many senders to one receiver at once, optional start jitter",
        ),
        (
            "poisson",
            "Poisson arrivals at a target load, sizes from a CDF or distribution, uniform, inter-rack or permutation destinations",
        ),
        (
            "partition-aggregate",
            "incast queries: degree responders answer a random aggregator; query arrival process, jitter",
        ),
        (
            "shuffle",
            "all-to-all: every task sends bytes_per_pair to every task on the other hosts",
        ),
        (
            "pulser",
            "Pulser mix: Poisson 8-32 KB short and 1 MB long flows (30 % of bytes) plus incast of degree 24",
        ),
        (
            "trace",
            "replay flows from a CSV file start_ns,src,dst,size_bytes",
        ),
    ];

    /// The pattern's name (`kind` in the scenario).
    pub const fn kind(&self) -> &'static str {
        match self {
            Self::Pairs { .. } => "pairs",
            Self::Permutation { .. } => "permutation",
            Self::Incast { .. } => "incast",
            Self::Poisson { .. } => "poisson",
            Self::PartitionAggregate { .. } => "partition-aggregate",
            Self::Shuffle { .. } => "shuffle",
            Self::Pulser { .. } => "pulser",
            Self::Trace { .. } => "trace",
        }
    }

    /// Expands the pattern for a network of `hosts` hosts into a list of flows. `index` is
    /// the generator's position in the scenario (it selects the random streams). Errors are
    /// `"field: message"`.
    ///
    /// The lazy kinds are collected from [`source`](Self::source) with a context that knows
    /// only the host count, so load-based kinds relative to host links fail here (the rate
    /// is unknown), and endless kinds need `max_flows` or `until`. Prefer `source`: it keeps
    /// memory flat.
    pub fn expand(&self, hosts: u32, rng: &RngTree, index: u64) -> Result<Vec<GenFlow>, String> {
        match self {
            Self::Pairs { .. } | Self::Permutation { .. } | Self::Incast { .. } => {
                self.expand_eager(hosts, rng, index)
            }
            Self::Poisson {
                max_flows, until, ..
            }
            | Self::PartitionAggregate {
                max_flows, until, ..
            }
            | Self::Pulser {
                max_flows, until, ..
            } if max_flows.is_none() && until.is_none() => Err(format!(
                "max_flows: a {} pattern is endless; give max_flows or until",
                self.kind()
            )),
            _ => Ok(self.source(&SourceCx::new(hosts, rng, index))?.collect()),
        }
    }

    /// The eager kinds (`pairs`, `permutation`, `incast`), unchanged since they were added.
    fn expand_eager(&self, hosts: u32, rng: &RngTree, index: u64) -> Result<Vec<GenFlow>, String> {
        let check = |h: u64, field: &str| {
            if h >= u64::from(hosts) {
                Err(format!(
                    "{field}: host {h} is out of range (the topology has {hosts} hosts, 0..{})",
                    hosts - 1
                ))
            } else {
                Ok(h as u32)
            }
        };
        match *self {
            Self::Pairs {
                count,
                src,
                dst,
                src_step,
                dst_step,
                size,
                start,
                start_every,
                stop,
                stop_every,
                leave_order,
            } => {
                let mut out = Vec::with_capacity(count as usize);
                for i in 0..u64::from(count) {
                    let s = check(u64::from(src) + i * u64::from(src_step), "src")?;
                    let d = check(u64::from(dst) + i * u64::from(dst_step), "dst")?;
                    if s == d {
                        return Err(format!("dst: flow {i} would send from host {s} to itself"));
                    }
                    let j = match leave_order {
                        LeaveOrder::Fifo => i,
                        LeaveOrder::Lifo => u64::from(count) - 1 - i,
                    };
                    out.push(GenFlow {
                        src: s,
                        dst: d,
                        size_bytes: size.0,
                        start: start + start_every * i,
                        stop: stop.map(|t| t + stop_every * j),
                    });
                }
                Ok(out)
            }
            Self::Permutation {
                first,
                hosts: n,
                size,
                start,
                jitter,
            } => {
                let n = n.unwrap_or(hosts.saturating_sub(first));
                check(u64::from(first) + u64::from(n.max(1)) - 1, "hosts")?;
                if n < 2 {
                    return Err("hosts: a permutation needs at least 2 hosts".into());
                }
                let mut r = rng.stream("permutation", index);
                let perm = derangement(n as usize, &mut r);
                Ok(perm
                    .iter()
                    .enumerate()
                    .map(|(i, &j)| GenFlow {
                        src: first + i as u32,
                        dst: first + j as u32,
                        size_bytes: size.0,
                        start: start + jitter_of(jitter, &mut r),
                        stop: None,
                    })
                    .collect())
            }
            Self::Incast {
                receiver,
                senders,
                first_sender,
                size,
                start,
                jitter,
            } => {
                check(u64::from(receiver), "receiver")?;
                let n = senders.unwrap_or(hosts - 1);
                if n == 0 {
                    return Err("senders: must be at least 1".into());
                }
                let mut r = rng.stream("incast", index);
                let mut out = Vec::with_capacity(n as usize);
                let mut h = u64::from(first_sender);
                while out.len() < n as usize {
                    if h == u64::from(receiver) {
                        h += 1;
                        continue;
                    }
                    let s = check(h, "senders")?;
                    out.push(GenFlow {
                        src: s,
                        dst: receiver,
                        size_bytes: size.0,
                        start: start + jitter_of(jitter, &mut r),
                        stop: None,
                    });
                    h += 1;
                }
                Ok(out)
            }
            _ => unreachable!("expand_eager is only called for the eager kinds"),
        }
    }
}

/// A uniform draw from `[0, 1)` with 53 random bits: `(x >> 11)·2⁻⁵³` for a 64-bit output
/// `x`. Written out here so the sampling rule does not depend on a `rand` release.
pub(crate) fn unit_f64(r: &mut Rng) -> f64 {
    (r.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

fn jitter_of(jitter: Dur, r: &mut Rng) -> Dur {
    if jitter == Dur::ZERO {
        Dur::ZERO
    } else {
        Dur::from_ps(r.random_range(0..=jitter.as_ps()))
    }
}

/// A uniformly random permutation of `0..n` with no fixed point (rejection sampling of
/// Fisher–Yates shuffles; the expected number of tries is e ≈ 2.72).
fn derangement(n: usize, r: &mut Rng) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    loop {
        for i in (1..n).rev() {
            let j = r.random_range(0..=i);
            p.swap(i, j);
        }
        if p.iter().enumerate().all(|(i, &j)| i != j) {
            return p;
        }
        p.sort_unstable();
    }
}

/// Helpers shared by the statistical tests.
#[cfg(test)]
pub(crate) mod testutil {
    /// Kolmogorov–Smirnov distance between the empirical CDF of sorted integer samples and
    /// the CDF `f` of an integer-valued distribution. Both are step functions that change
    /// only at integers, so the supremum is attained at a sampled value `x` or just below
    /// it (at `x − 1`).
    pub(crate) fn ks_statistic(sorted: &[u64], f: impl Fn(u64) -> f64) -> f64 {
        let n = sorted.len() as f64;
        let mut d: f64 = 0.0;
        let mut i = 0;
        while i < sorted.len() {
            let x = sorted[i];
            let below = i as f64 / n;
            while i < sorted.len() && sorted[i] == x {
                i += 1;
            }
            d = d.max((i as f64 / n - f(x)).abs());
            if x > 0 {
                d = d.max((below - f(x - 1)).abs());
            }
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One TOML example per kind (the same as in docs/workloads.md): each parses, and
    /// serializing it parses back to the same value (the facade prints resolved scenarios).
    #[test]
    fn every_kind_parses_from_toml_and_round_trips() {
        let examples = [
            "kind = \"pairs\"\ncount = 2\nsrc = 0\ndst = 2\nsize = \"1MB\"",
            "kind = \"permutation\"\nsize = \"inf\"\njitter = \"1us\"",
            "kind = \"incast\"\nreceiver = 0\nsenders = 8\nsize = \"64KB\"",
            r#"kind = "poisson"
load = 0.6
load_relative_to = "tor-uplinks"
oversubscription = 3
wire_factor = "1538/1460"
flow_size = { cdf = "datamining" }
start = "100ms"
max_flows = 100000"#,
            r#"kind = "poisson"
load = 0.5
load_relative_to = "host-links"
flow_size = { cdf_file = "CDF_vl2.tcl", format = "ns2", packet_bytes = "1460B" }
destinations = "inter-rack"
hosts_per_rack = 16
until = "1s""#,
            r#"kind = "partition-aggregate"
degree = 32
response_size = { fixed = "64KB" }
queries = { poisson_per_s = 2000 }
jitter = "5us"
until = "50ms""#,
            r#"kind = "shuffle"
hosts = 40
tasks_per_host = 8
bytes_per_pair = "1MB""#,
            r#"kind = "pulser"
load = 0.4
load_relative_to = "host-links"
incast_response_size = "64KB"
incast_queries = { every = "1ms" }
until = "100ms""#,
            r#"kind = "trace"
file = "flows.csv""#,
        ];
        let mut kinds = Vec::new();
        for text in examples {
            let g: GeneratorSpec = toml::from_str(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let back = toml::to_string(&g).unwrap();
            let again: GeneratorSpec =
                toml::from_str(&back).unwrap_or_else(|e| panic!("{e}\n{back}"));
            assert_eq!(g, again, "{back}");
            kinds.push(g.kind());
        }
        let listed: Vec<&str> = GeneratorSpec::KINDS.iter().map(|(k, _)| *k).collect();
        kinds.dedup();
        assert_eq!(kinds, listed);
        let e = toml::from_str::<GeneratorSpec>(
            "kind = \"poisson\"\nload = 0.5\nflow_size = { cdf = \"websearch\" }",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("missing field `load_relative_to`"),
            "{e}"
        );
    }

    #[test]
    fn flow_size_parses_inf_and_units() {
        assert_eq!("inf".parse::<FlowSize>().unwrap(), FlowSize(None));
        assert_eq!(
            "1.5MB".parse::<FlowSize>().unwrap(),
            FlowSize(Some(1_500_000))
        );
        assert!("0B".parse::<FlowSize>().is_err());
        assert!(
            "-1MB"
                .parse::<FlowSize>()
                .unwrap_err()
                .to_string()
                .contains("negative")
        );
    }

    #[test]
    fn permutation_is_a_derangement_and_reproducible() {
        let g = GeneratorSpec::Permutation {
            first: 0,
            hosts: None,
            size: FlowSize(None),
            start: Dur::ZERO,
            jitter: Dur::ZERO,
        };
        let a = g.expand(128, &RngTree::new(5), 0).unwrap();
        let b = g.expand(128, &RngTree::new(5), 0).unwrap();
        assert_eq!(a, b);
        let mut dsts: Vec<u32> = a.iter().map(|f| f.dst).collect();
        assert!(a.iter().all(|f| f.src != f.dst));
        dsts.sort_unstable();
        assert_eq!(dsts, (0..128).collect::<Vec<_>>());
    }

    #[test]
    fn pairs_join_and_leave_on_schedule() {
        let g = GeneratorSpec::Pairs {
            count: 3,
            src: 0,
            dst: 3,
            src_step: 1,
            dst_step: 1,
            size: FlowSize(None),
            start: Dur::ZERO,
            start_every: Dur::from_ms(10),
            stop: Some(Dur::from_ms(50)),
            stop_every: Dur::from_ms(10),
            leave_order: LeaveOrder::Lifo,
        };
        let f = g.expand(6, &RngTree::new(0), 0).unwrap();
        assert_eq!(
            f.iter()
                .map(|x| x.start.as_ns() / 1_000_000)
                .collect::<Vec<_>>(),
            [0, 10, 20]
        );
        assert_eq!(
            f.iter()
                .map(|x| x.stop.unwrap().as_ns() / 1_000_000)
                .collect::<Vec<_>>(),
            [70, 60, 50]
        );
        assert!(
            g.expand(5, &RngTree::new(0), 0)
                .unwrap_err()
                .starts_with("dst: host 5 is out of range")
        );
    }

    #[test]
    fn incast_skips_the_receiver() {
        let g = GeneratorSpec::Incast {
            receiver: 0,
            senders: None,
            first_sender: 0,
            size: FlowSize(Some(64_000)),
            start: Dur::ZERO,
            jitter: Dur::from_us(1),
        };
        let f = g.expand(9, &RngTree::new(0), 0).unwrap();
        assert_eq!(f.len(), 8);
        assert!(
            f.iter()
                .all(|x| x.dst == 0 && x.src != 0 && x.start <= Dur::from_us(1))
        );
    }
}
