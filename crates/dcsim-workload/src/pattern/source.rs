//! What every pattern shares: the lazy stream [`FlowSource`] around a [`FlowGenerator`], the
//! build context [`SourceCx`], the caps [`Limits`] and the run record [`SourceInfo`].
//!
//! This module knows no individual pattern; the pattern files depend on it, never the
//! other way round.

use core::fmt;
use std::path::Path;

use dcsim_engine::{Dur, Rate, Rng, RngTree};
use rand::RngExt;
use serde::Serialize;

use crate::GenFlow;
use crate::arrival::LoadInfo;

/// What the caller knows about the network, for building a source.
#[derive(Clone, Copy, Debug)]
pub struct SourceCx<'a> {
    /// Hosts in the topology (numbered `0..hosts`).
    pub hosts: u32,
    /// The run's random tree.
    pub rng: &'a RngTree,
    /// The generator's position in the scenario (selects its random streams).
    pub index: u64,
    /// Host link rate; needed by load-based patterns.
    pub host_link: Option<Rate>,
    /// Hosts per rack (ToR); racks are consecutive blocks of host numbers. Needed by
    /// `destinations = "inter-rack"` unless the pattern states `hosts_per_rack`.
    pub hosts_per_rack: Option<u32>,
    /// Aggregate ToR uplink capacity of the topology; used by
    /// `load_relative_to = "tor-uplinks"` when the pattern gives no `oversubscription`.
    pub tor_uplink_capacity: Option<Rate>,
    /// Directory that relative file paths (CDF files, traces) are taken from: the
    /// scenario file's directory. `None`: the current directory.
    pub base_dir: Option<&'a Path>,
}

impl<'a> SourceCx<'a> {
    /// A context that knows only the host count; set the other fields as available.
    pub const fn new(hosts: u32, rng: &'a RngTree, index: u64) -> Self {
        Self {
            hosts,
            rng,
            index,
            host_link: None,
            hosts_per_rack: None,
            tor_uplink_capacity: None,
            base_dir: None,
        }
    }

    /// The generator's random stream for `label` (`"<kind>.<role>"`).
    pub(crate) fn stream(&self, label: &str) -> Rng {
        self.rng.stream(label, self.index)
    }
}

/// A generator of flows for a [`FlowSource`]: the extension point for patterns defined
/// outside this crate.
pub trait FlowGenerator: Send {
    /// The next flow, or `None` when there are no more. Start times must never decrease
    /// from one call to the next, and `src != dst`.
    fn next_flow(&mut self) -> Option<GenFlow>;
}

/// Caps on a source: it ends after `max_flows` flows, or before the first flow that would
/// start at or after `until`, whichever comes first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Most flows to yield.
    pub max_flows: Option<u64>,
    /// No flow starts at or after this time.
    pub until: Option<Dur>,
}

/// What a source does, for recording with the run (`run.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SourceInfo {
    /// The pattern (`kind` in the scenario).
    pub kind: &'static str,
    /// The flow-size distribution, described in one line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<String>,
    /// Analytic mean flow size, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_size_bytes: Option<f64>,
    /// Mean flow arrival rate, flows per second (all flows of the source).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flows_per_s: Option<f64>,
    /// Mean query (incast) arrival rate, per second.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queries_per_s: Option<f64>,
    /// The load definition and the arrival rate it gives.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadInfo>,
    /// For a load relative to the ToR uplinks: the expected share of flows that leave
    /// their rack, and so cross an uplink (not written to summary.json; `dcsim check` warns
    /// when it is well below 1).
    #[serde(skip)]
    pub leaving_rack: Option<f64>,
    /// Number of flows, when known in advance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flows: Option<u64>,
    /// The caps.
    pub limits: Limits,
}

/// A lazy, time-ordered stream of flows (see the [module docs](crate::pattern)).
///
/// Starts never decrease from one flow to the next (checked: a generator that breaks this
/// is a bug and panics with the pattern's name). `peek_start` is O(1); `next` costs one
/// flow's generation.
pub struct FlowSource {
    generator: Box<dyn FlowGenerator>,
    head: Option<GenFlow>,
    pulled: u64,
    emitted: u64,
    done: bool,
    limits: Limits,
    info: SourceInfo,
}

impl FlowSource {
    /// A source around any generator. `info.limits` is set from `limits`.
    pub fn new(generator: Box<dyn FlowGenerator>, limits: Limits, mut info: SourceInfo) -> Self {
        info.limits = limits;
        let mut s = Self {
            generator,
            head: None,
            pulled: 0,
            emitted: 0,
            done: false,
            limits,
            info,
        };
        s.head = s.pull();
        s
    }

    /// A source over flows already in memory, sorted by start (stably, so equal starts keep
    /// their order).
    pub fn from_flows(mut flows: Vec<GenFlow>, limits: Limits, info: SourceInfo) -> Self {
        flows.sort_by_key(|f| f.start);
        Self::new(Box::new(flows.into_iter()), limits, info)
    }

    /// The source of an eager pattern (`pairs`, `permutation`, `incast`): its whole flow
    /// list, sorted by start, without caps.
    pub(crate) fn eager(kind: &'static str, flows: Vec<GenFlow>) -> Self {
        let info = SourceInfo {
            kind,
            flows: Some(flows.len() as u64),
            ..SourceInfo::default()
        };
        Self::from_flows(flows, Limits::default(), info)
    }

    /// Start of the next flow, or `None` when the source is exhausted.
    pub fn peek_start(&self) -> Option<Dur> {
        self.head.map(|f| f.start)
    }

    /// The next flow, without taking it.
    pub const fn peek(&self) -> Option<&GenFlow> {
        self.head.as_ref()
    }

    /// Flows yielded so far.
    pub const fn emitted(&self) -> u64 {
        self.emitted
    }

    /// What the source does, for the run record.
    pub const fn info(&self) -> &SourceInfo {
        &self.info
    }

    fn pull(&mut self) -> Option<GenFlow> {
        if self.done || self.limits.max_flows.is_some_and(|m| self.pulled >= m) {
            self.done = true;
            return None;
        }
        let f = self.generator.next_flow();
        match f {
            Some(f) if self.limits.until.is_none_or(|u| f.start < u) => {
                self.pulled += 1;
                Some(f)
            }
            _ => {
                self.done = true;
                None
            }
        }
    }
}

impl Iterator for FlowSource {
    type Item = GenFlow;

    fn next(&mut self) -> Option<GenFlow> {
        let f = self.head.take()?;
        self.head = self.pull();
        if let Some(n) = &self.head {
            assert!(
                n.start >= f.start,
                "{} source: flow start went back from {} to {}",
                self.info.kind,
                f.start,
                n.start
            );
        }
        self.emitted += 1;
        Some(f)
    }
}

impl fmt::Debug for FlowSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FlowSource")
            .field("info", &self.info)
            .field("head", &self.head)
            .field("emitted", &self.emitted)
            .finish_non_exhaustive()
    }
}

impl FlowGenerator for std::vec::IntoIter<GenFlow> {
    fn next_flow(&mut self) -> Option<GenFlow> {
        self.next()
    }
}

/// The caps of a lazy pattern from its `max_flows` and `until` fields.
pub(crate) fn limits(max_flows: Option<u64>, until: Option<Dur>) -> Result<Limits, String> {
    if max_flows == Some(0) {
        return Err("max_flows: must be at least 1 (leave it out for no cap)".into());
    }
    Ok(Limits { max_flows, until })
}

/// A uniform random delay in `[0, jitter]`, drawn from `r` only when `jitter` is not zero.
pub(crate) fn jitter_of(jitter: Dur, r: &mut Rng) -> Dur {
    if jitter == Dur::ZERO {
        Dur::ZERO
    } else {
        Dur::from_ps(r.random_range(0..=jitter.as_ps()))
    }
}

/// Serde default of counts and steps that default to 1.
pub(crate) fn one() -> u32 {
    1
}
