//! Lazy flow sources: traffic patterns that yield one flow at a time, in start order.
//!
//! A [`FlowSource`] holds the next flow (its *head*) and produces the one after it only
//! when the head is taken, so the facade can keep one pending event per source: schedule
//! at [`FlowSource::peek_start`], and on that event take the flow with
//! [`Iterator::next`] and schedule again. Memory per source is O(1) in the number of flows
//! (the eager kinds hold at most one flow per host; see each pattern), so millions of flows
//! cost no memory.
//!
//! Every source draws from its own [`RngTree`] streams, labelled `"<kind>.<role>"` and
//! indexed by the generator's position in the scenario, with one stream per role (arrival
//! times, sources, destinations, sizes, …). Changing the size distribution therefore
//! leaves the arrival times and endpoints unchanged, and adding a generator leaves the
//! others' flows unchanged.

use core::fmt;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;

use dcsim_engine::{ByteSize, Dur, Rate, Rng, RngTree};
use rand::RngExt;
use serde::{Deserialize, Serialize};

use crate::arrival::{ArrivalSpec, Arrivals, LoadInfo, LoadParams};
use crate::dist::SizeDist;
use crate::trace::TraceGen;
use crate::{GenFlow, GeneratorSpec, derangement, jitter_of};

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

    fn stream(&self, label: &str) -> Rng {
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
    /// Number of flows, when known in advance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flows: Option<u64>,
    /// The caps.
    pub limits: Limits,
}

/// A lazy, time-ordered stream of flows (see the [module docs](self)).
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

/// Where flows of a Poisson pattern go.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Destinations {
    /// Uniform over the pattern's hosts other than the source.
    #[default]
    Uniform,
    /// Uniform over the pattern's hosts outside the source's rack.
    InterRack,
    /// A fixed random derangement: each source always sends to the same host, and every
    /// host receives from exactly one source.
    Permutation,
}

impl GeneratorSpec {
    /// Builds the pattern as a lazy source. Errors are `"field: message"`, as for
    /// [`expand`](Self::expand).
    pub fn source(&self, cx: &SourceCx<'_>) -> Result<FlowSource, String> {
        match self {
            Self::Pairs { .. } | Self::Permutation { .. } | Self::Incast { .. } => {
                let flows = self.expand_eager(cx.hosts, cx.rng, cx.index)?;
                let info = SourceInfo {
                    kind: self.kind(),
                    flows: Some(flows.len() as u64),
                    ..SourceInfo::default()
                };
                Ok(FlowSource::from_flows(flows, Limits::default(), info))
            }
            Self::Poisson {
                flow_size,
                load,
                load_relative_to,
                oversubscription,
                wire_factor,
                mean_size_for_load,
                first,
                hosts,
                destinations,
                hosts_per_rack,
                start,
                max_flows,
                until,
            } => {
                let (first, n) = host_set(*first, *hosts, cx.hosts, 2)?;
                let size = flow_size
                    .build(cx.base_dir)
                    .map_err(|e| format!("flow_size.{e}"))?;
                let mean = mean_size_for_load.map_or(size.mean_bytes(), |b| b.bytes() as f64);
                if mean <= 0.0 {
                    return Err("mean_size_for_load: must be at least 1 byte".into());
                }
                let load = LoadParams {
                    load: *load,
                    relative_to: *load_relative_to,
                    oversubscription: *oversubscription,
                    wire_factor: *wire_factor,
                    mean_size_bytes: mean,
                    hosts: n,
                    host_link: cx.host_link,
                    tor_uplink_capacity: cx.tor_uplink_capacity,
                }
                .resolve()?;
                let ends = Endpoints::new(
                    "poisson",
                    first,
                    n,
                    *destinations,
                    hosts_per_rack.or(cx.hosts_per_rack),
                    cx,
                )?;
                let info = SourceInfo {
                    kind: "poisson",
                    size: Some(size.to_string()),
                    mean_size_bytes: Some(size.mean_bytes()),
                    flows_per_s: Some(load.flows_per_s),
                    load: Some(load),
                    ..SourceInfo::default()
                };
                let g = PoissonGen {
                    arrivals: Arrivals::poisson(
                        *start,
                        load.flows_per_s,
                        cx.stream("poisson.arrival"),
                    ),
                    ends,
                    size,
                    size_rng: cx.stream("poisson.size"),
                };
                Ok(FlowSource::new(
                    Box::new(g),
                    limits(*max_flows, *until)?,
                    info,
                ))
            }
            Self::PartitionAggregate {
                degree,
                response_size,
                queries,
                jitter,
                first,
                hosts,
                start,
                max_flows,
                until,
            } => {
                let (first, n) = host_set(*first, *hosts, cx.hosts, 2)?;
                let size = response_size
                    .build(cx.base_dir)
                    .map_err(|e| format!("response_size.{e}"))?;
                queries.validate().map_err(|e| format!("queries.{e}"))?;
                let q = queries.rate_per_s();
                let info = SourceInfo {
                    kind: "partition-aggregate",
                    size: Some(size.to_string()),
                    mean_size_bytes: Some(size.mean_bytes()),
                    flows_per_s: Some(q * f64::from(*degree)),
                    queries_per_s: Some(q),
                    ..SourceInfo::default()
                };
                let g = QueryGen::new(
                    "partition-aggregate",
                    QueryParams {
                        first,
                        n,
                        degree: *degree,
                        size,
                        queries: *queries,
                        jitter: *jitter,
                        start: *start,
                    },
                    cx,
                )
                .map_err(|e| format!("degree: {e}"))?;
                Ok(FlowSource::new(
                    Box::new(g),
                    limits(*max_flows, *until)?,
                    info,
                ))
            }
            Self::Shuffle {
                first,
                hosts,
                tasks_per_host,
                bytes_per_pair,
                start,
                jitter,
            } => {
                let (first, n) = host_set(*first, *hosts, cx.hosts, 2)?;
                if *tasks_per_host == 0 {
                    return Err("tasks_per_host: must be at least 1".into());
                }
                if bytes_per_pair.bytes() == 0 {
                    return Err("bytes_per_pair: a flow must carry at least 1 byte".into());
                }
                let t = u64::from(*tasks_per_host);
                let total = u64::from(n) * t * u64::from(n - 1) * t;
                let info = SourceInfo {
                    kind: "shuffle",
                    size: Some(format!("fixed {} B", bytes_per_pair.bytes())),
                    mean_size_bytes: Some(bytes_per_pair.bytes() as f64),
                    flows: Some(total),
                    ..SourceInfo::default()
                };
                let g = ShuffleGen::new(
                    first,
                    n,
                    *tasks_per_host,
                    *bytes_per_pair,
                    *start,
                    *jitter,
                    cx,
                );
                Ok(FlowSource::new(Box::new(g), Limits::default(), info))
            }
            Self::Pulser {
                load,
                load_relative_to,
                oversubscription,
                wire_factor,
                short_size,
                long_size,
                long_share,
                incast_degree,
                incast_response_size,
                incast_queries,
                incast_jitter,
                first,
                hosts,
                start,
                max_flows,
                until,
            } => {
                let (first, n) = host_set(*first, *hosts, cx.hosts, 2)?;
                let [lo, hi] = *short_size;
                if lo.bytes() == 0 || lo > hi {
                    return Err(format!(
                        "short_size: [{lo}, {hi}] must be an interval of at least 1 byte"
                    ));
                }
                if long_size.bytes() == 0 {
                    return Err("long_size: must be at least 1 byte".into());
                }
                if !(0.0..=1.0).contains(long_share) {
                    return Err(format!("long_share: {long_share} must be in [0, 1]"));
                }
                if incast_response_size.bytes() == 0 {
                    return Err("incast_response_size: must be at least 1 byte".into());
                }
                incast_queries
                    .validate()
                    .map_err(|e| format!("incast_queries.{e}"))?;
                let size = SizeDist::mix_by_bytes(vec![
                    (
                        1.0 - long_share,
                        SizeDist::Uniform {
                            min_bytes: lo.bytes(),
                            max_bytes: hi.bytes(),
                        },
                    ),
                    (*long_share, SizeDist::Fixed(long_size.bytes())),
                ])
                .map_err(|e| format!("long_share: {e}"))?;
                let load = LoadParams {
                    load: *load,
                    relative_to: *load_relative_to,
                    oversubscription: *oversubscription,
                    wire_factor: *wire_factor,
                    mean_size_bytes: size.mean_bytes(),
                    hosts: n,
                    host_link: cx.host_link,
                    tor_uplink_capacity: cx.tor_uplink_capacity,
                }
                .resolve()?;
                let q = incast_queries.rate_per_s();
                let info = SourceInfo {
                    kind: "pulser",
                    size: Some(format!(
                        "{size}; incast {incast_degree} x {} B",
                        incast_response_size.bytes()
                    )),
                    mean_size_bytes: Some(size.mean_bytes()),
                    flows_per_s: Some(load.flows_per_s + q * f64::from(*incast_degree)),
                    queries_per_s: Some(q),
                    load: Some(load),
                    ..SourceInfo::default()
                };
                let background = PoissonGen {
                    arrivals: Arrivals::poisson(
                        *start,
                        load.flows_per_s,
                        cx.stream("pulser.arrival"),
                    ),
                    ends: Endpoints::new("pulser", first, n, Destinations::Uniform, None, cx)?,
                    size,
                    size_rng: cx.stream("pulser.size"),
                };
                let incast = QueryGen::new(
                    "pulser.incast",
                    QueryParams {
                        first,
                        n,
                        degree: *incast_degree,
                        size: SizeDist::Fixed(incast_response_size.bytes()),
                        queries: *incast_queries,
                        jitter: *incast_jitter,
                        start: *start,
                    },
                    cx,
                )
                .map_err(|e| format!("incast_degree: {e}"))?;
                let g = MergeGen::new(vec![Box::new(background), Box::new(incast)]);
                Ok(FlowSource::new(
                    Box::new(g),
                    limits(*max_flows, *until)?,
                    info,
                ))
            }
            Self::Trace {
                file,
                start,
                max_flows,
                until,
            } => {
                let p = Path::new(file);
                let full = match cx.base_dir {
                    Some(d) if p.is_relative() => d.join(p),
                    _ => p.to_path_buf(),
                };
                let (g, count) =
                    TraceGen::open(&full, cx.hosts, *start).map_err(|e| format!("file: {e}"))?;
                let info = SourceInfo {
                    kind: "trace",
                    flows: Some(count),
                    ..SourceInfo::default()
                };
                Ok(FlowSource::new(
                    Box::new(g),
                    limits(*max_flows, *until)?,
                    info,
                ))
            }
        }
    }
}

fn limits(max_flows: Option<u64>, until: Option<Dur>) -> Result<Limits, String> {
    if max_flows == Some(0) {
        return Err("max_flows: must be at least 1 (leave it out for no cap)".into());
    }
    Ok(Limits { max_flows, until })
}

/// The host set `first..first+n` of a pattern, checked against the topology.
fn host_set(first: u32, hosts: Option<u32>, total: u32, min: u32) -> Result<(u32, u32), String> {
    if first >= total {
        return Err(format!(
            "first: host {first} is out of range (the topology has {total} hosts)"
        ));
    }
    let n = hosts.unwrap_or(total - first);
    if u64::from(first) + u64::from(n) > u64::from(total) {
        return Err(format!(
            "hosts: hosts {first}..{} exceed the topology's {total} hosts",
            u64::from(first) + u64::from(n)
        ));
    }
    if n < min {
        return Err(format!(
            "hosts: the pattern needs at least {min} hosts, not {n}"
        ));
    }
    Ok((first, n))
}

/// Source and destination choice for flows among hosts `first..first+n`.
#[derive(Clone, Debug)]
struct Endpoints {
    first: u32,
    n: u32,
    mode: DstMode,
    src_rng: Rng,
    dst_rng: Rng,
}

#[derive(Clone, Debug)]
enum DstMode {
    Uniform,
    InterRack { per_rack: u32 },
    Permutation(Vec<u32>),
}

impl Endpoints {
    fn new(
        kind: &str,
        first: u32,
        n: u32,
        d: Destinations,
        per_rack: Option<u32>,
        cx: &SourceCx<'_>,
    ) -> Result<Self, String> {
        let mode = match d {
            Destinations::Uniform => DstMode::Uniform,
            Destinations::InterRack => {
                let per_rack = per_rack.ok_or(
                    "hosts_per_rack: \"inter-rack\" destinations need the rack size (state \
                     hosts_per_rack, or use a topology with racks)",
                )?;
                if per_rack == 0 {
                    return Err("hosts_per_rack: must be at least 1".into());
                }
                if first / per_rack == (first + n - 1) / per_rack {
                    return Err(format!(
                        "destinations: hosts {first}..{} are all in one rack of {per_rack}, so \
                         no flow can leave its rack",
                        first + n
                    ));
                }
                DstMode::InterRack { per_rack }
            }
            Destinations::Permutation => {
                let mut r = cx.stream(&format!("{kind}.perm"));
                let p = derangement(n as usize, &mut r);
                DstMode::Permutation(
                    p.into_iter()
                        .map(|j| u32::try_from(j).expect("j < n, which is a u32"))
                        .collect(),
                )
            }
        };
        Ok(Self {
            first,
            n,
            mode,
            src_rng: cx.stream(&format!("{kind}.src")),
            dst_rng: cx.stream(&format!("{kind}.dst")),
        })
    }

    /// A source uniform over the set and a distinct destination by the mode. O(1).
    fn draw(&mut self) -> (u32, u32) {
        let s = self.src_rng.random_range(0..self.n);
        let d = match &self.mode {
            DstMode::Uniform => {
                let k = self.dst_rng.random_range(0..self.n - 1);
                if k >= s { k + 1 } else { k }
            }
            DstMode::InterRack { per_rack } => {
                // The source's rack, as a block of positions [lo, hi) within the set.
                let abs = u64::from(self.first + s);
                let rack_lo = abs / u64::from(*per_rack) * u64::from(*per_rack);
                let set_hi = u64::from(self.first) + u64::from(self.n);
                let lo = rack_lo.max(u64::from(self.first)) - u64::from(self.first);
                let hi = (rack_lo + u64::from(*per_rack)).min(set_hi) - u64::from(self.first);
                let (lo, hi) = (to_u32(lo), to_u32(hi));
                let k = self.dst_rng.random_range(0..self.n - (hi - lo));
                if k >= lo { k + (hi - lo) } else { k }
            }
            DstMode::Permutation(p) => p[s as usize],
        };
        (self.first + s, self.first + d)
    }
}

fn to_u32(x: u64) -> u32 {
    u32::try_from(x).expect("a position within a host set of at most u32::MAX hosts")
}

/// Poisson arrivals, endpoints by [`Endpoints`], sizes from a distribution.
struct PoissonGen {
    arrivals: Arrivals,
    ends: Endpoints,
    size: SizeDist,
    size_rng: Rng,
}

impl FlowGenerator for PoissonGen {
    fn next_flow(&mut self) -> Option<GenFlow> {
        let start = self.arrivals.next_time();
        let (src, dst) = self.ends.draw();
        Some(GenFlow {
            src,
            dst,
            size_bytes: Some(self.size.sample(&mut self.size_rng)),
            start,
            stop: None,
        })
    }
}

struct QueryParams {
    first: u32,
    n: u32,
    degree: u32,
    size: SizeDist,
    queries: ArrivalSpec,
    jitter: Dur,
    start: Dur,
}

/// Partition/aggregate: at each query an aggregator chosen uniformly from the set receives
/// one response from each of `degree` distinct other hosts, chosen uniformly (Floyd's
/// sampling, O(degree²) per query). Each response starts at the query time plus a uniform
/// jitter in `[0, jitter]`. Responses of overlapping queries are merged by start time in a
/// small heap, whose size is bounded by `degree` × (queries within one jitter span + 1).
struct QueryGen {
    arrivals: Arrivals,
    first: u32,
    n: u32,
    degree: u32,
    size: SizeDist,
    jitter: Dur,
    pick_rng: Rng,
    size_rng: Rng,
    jitter_rng: Rng,
    /// Responses not yet yielded, earliest first.
    pending: BinaryHeap<Reverse<Pending>>,
    seq: u64,
    chosen: Vec<u32>,
}

/// A response waiting in [`QueryGen`]'s heap. Ordered by start, then by the sequence
/// number, which keeps equal starts in generation order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    start_ps: u64,
    seq: u64,
    src: u32,
    dst: u32,
    size_bytes: u64,
}

impl QueryGen {
    fn new(kind: &str, p: QueryParams, cx: &SourceCx<'_>) -> Result<Self, String> {
        if p.degree == 0 || p.degree >= p.n {
            return Err(format!(
                "{} must be between 1 and {} (the other hosts of the set)",
                p.degree,
                p.n - 1
            ));
        }
        Ok(Self {
            arrivals: Arrivals::from_spec(p.queries, p.start, cx.stream(&format!("{kind}.query"))),
            first: p.first,
            n: p.n,
            degree: p.degree,
            size: p.size,
            jitter: p.jitter,
            pick_rng: cx.stream(&format!("{kind}.pick")),
            size_rng: cx.stream(&format!("{kind}.size")),
            jitter_rng: cx.stream(&format!("{kind}.jitter")),
            pending: BinaryHeap::new(),
            seq: 0,
            chosen: Vec::with_capacity(p.degree as usize),
        })
    }

    fn query(&mut self) {
        let t = self.arrivals.next_time();
        let agg = self.pick_rng.random_range(0..self.n);
        // Floyd's algorithm: a uniform `degree`-subset of the n − 1 other hosts.
        let m = self.n - 1;
        self.chosen.clear();
        for j in (m - self.degree)..m {
            let x = self.pick_rng.random_range(0..=j);
            let x = if self.chosen.contains(&x) { j } else { x };
            self.chosen.push(x);
        }
        for &x in &self.chosen {
            let src = if x >= agg { x + 1 } else { x };
            let start = t.saturating_add(jitter_of(self.jitter, &mut self.jitter_rng));
            let size = self.size.sample(&mut self.size_rng);
            self.pending.push(Reverse(Pending {
                start_ps: start.as_ps(),
                seq: self.seq,
                src: self.first + src,
                dst: self.first + agg,
                size_bytes: size,
            }));
            self.seq += 1;
        }
    }
}

impl FlowGenerator for QueryGen {
    fn next_flow(&mut self) -> Option<GenFlow> {
        loop {
            // Later queries start no earlier than the next query time, so the heap's
            // minimum is final once it is not after that time.
            if let Some(&Reverse(p)) = self.pending.peek()
                && p.start_ps <= self.arrivals.peek().as_ps()
            {
                self.pending.pop();
                return Some(GenFlow {
                    src: p.src,
                    dst: p.dst,
                    size_bytes: Some(p.size_bytes),
                    start: Dur::from_ps(p.start_ps),
                    stop: None,
                });
            }
            self.query();
        }
    }
}

/// All-to-all shuffle: every task sends `bytes` to every task on the other hosts. A sending
/// task starts at `start` plus a uniform jitter in `[0, jitter]` and opens all its flows at
/// once; tasks are sorted by start time. Destinations are visited from the next host on
/// (`src + 1, src + 2, …` modulo the set), so simultaneous senders do not all begin with the
/// same receiver. O(hosts × tasks) memory, independent of the (hosts × tasks)² flows.
struct ShuffleGen {
    /// `(start_ps, host position)` per sending task, sorted by start.
    tasks: Vec<(u64, u32)>,
    task: usize,
    peer: u32,
    dst_task: u32,
    first: u32,
    n: u32,
    tasks_per_host: u32,
    bytes: u64,
}

impl ShuffleGen {
    fn new(
        first: u32,
        n: u32,
        tasks_per_host: u32,
        bytes: ByteSize,
        start: Dur,
        jitter: Dur,
        cx: &SourceCx<'_>,
    ) -> Self {
        let mut r = cx.stream("shuffle.jitter");
        let mut tasks: Vec<(u64, u32)> = (0..n)
            .flat_map(|h| (0..tasks_per_host).map(move |_| h))
            .map(|h| (start.saturating_add(jitter_of(jitter, &mut r)).as_ps(), h))
            .collect();
        tasks.sort_by_key(|&(t, _)| t);
        Self {
            tasks,
            task: 0,
            peer: 1,
            dst_task: 0,
            first,
            n,
            tasks_per_host,
            bytes: bytes.bytes(),
        }
    }
}

impl FlowGenerator for ShuffleGen {
    fn next_flow(&mut self) -> Option<GenFlow> {
        let &(start, h) = self.tasks.get(self.task)?;
        let dst = (h + self.peer) % self.n;
        self.dst_task += 1;
        if self.dst_task == self.tasks_per_host {
            self.dst_task = 0;
            self.peer += 1;
            if self.peer == self.n {
                self.peer = 1;
                self.task += 1;
            }
        }
        Some(GenFlow {
            src: self.first + h,
            dst: self.first + dst,
            size_bytes: Some(self.bytes),
            start: Dur::from_ps(start),
            stop: None,
        })
    }
}

/// Merges generators by start time; on equal starts the earlier generator goes first.
struct MergeGen {
    parts: Vec<(Option<GenFlow>, Box<dyn FlowGenerator>)>,
}

impl MergeGen {
    fn new(gens: Vec<Box<dyn FlowGenerator>>) -> Self {
        Self {
            parts: gens.into_iter().map(|mut g| (g.next_flow(), g)).collect(),
        }
    }
}

impl FlowGenerator for MergeGen {
    fn next_flow(&mut self) -> Option<GenFlow> {
        let (i, _) = self
            .parts
            .iter()
            .enumerate()
            .filter_map(|(i, (h, _))| h.map(|f| (i, f.start)))
            .min_by_key(|&(i, t)| (t, i))?;
        let (head, g) = &mut self.parts[i];
        let f = head.take();
        *head = g.next_flow();
        f
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::BuiltinCdf;

    fn spec(s: &str) -> GeneratorSpec {
        toml::from_str(s).unwrap_or_else(|e| panic!("{e}\n{s}"))
    }

    fn cx(hosts: u32, rng: &RngTree) -> SourceCx<'_> {
        SourceCx {
            host_link: Some(Rate::from_gbps(10)),
            ..SourceCx::new(hosts, rng, 0)
        }
    }

    fn assert_ordered_and_distinct(flows: &[GenFlow], hosts: u32) {
        for w in flows.windows(2) {
            assert!(w[0].start <= w[1].start, "{:?} then {:?}", w[0], w[1]);
        }
        for f in flows {
            assert!(f.src != f.dst && f.src < hosts && f.dst < hosts, "{f:?}");
            assert!(f.size_bytes.is_some_and(|b| b > 0));
        }
    }

    /// Chi-square statistic of counts against equal expected counts.
    fn chi_square(counts: &[u64]) -> f64 {
        let n: u64 = counts.iter().sum();
        let e = n as f64 / counts.len() as f64;
        counts.iter().map(|&o| (o as f64 - e).powi(2) / e).sum()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Any seed, host set and destination mode: starts never decrease, endpoints are
        /// distinct and in the set, inter-rack flows leave their rack, permutation sources
        /// keep their destination.
        #[test]
        fn poisson_flows_are_ordered_and_valid(
            seed in any::<u64>(),
            first in 0u32..8,
            n in 2u32..40,
            per_rack in 1u32..8,
            mode in 0usize..3,
        ) {
            let d = ["uniform", "inter-rack", "permutation"][mode];
            prop_assume!(mode != 1 || first / per_rack != (first + n - 1) / per_rack);
            let g = spec(&format!(
                "kind = \"poisson\"\nload = 0.5\nload_relative_to = \"host-links\"\n\
                 flow_size = {{ cdf = \"webserver\" }}\nfirst = {first}\nhosts = {n}\n\
                 destinations = \"{d}\"\nhosts_per_rack = {per_rack}\nmax_flows = 300\n"
            ));
            let rng = RngTree::new(seed);
            let flows: Vec<GenFlow> = g.source(&cx(first + n, &rng)).unwrap().collect();
            prop_assert_eq!(flows.len(), 300);
            assert_ordered_and_distinct(&flows, first + n);
            let mut dst_of = vec![None; (first + n) as usize];
            for f in &flows {
                prop_assert!(f.src >= first && f.dst >= first);
                if mode == 1 {
                    prop_assert_ne!(f.src / per_rack, f.dst / per_rack);
                }
                if mode == 2 {
                    let seen = dst_of[f.src as usize].get_or_insert(f.dst);
                    prop_assert_eq!(*seen, f.dst);
                }
            }
        }
    }

    #[test]
    fn same_seed_gives_the_same_flows() {
        let g = spec(
            "kind = \"poisson\"\nload = 0.3\nload_relative_to = \"host-links\"\n\
             flow_size = { cdf = \"datamining\" }\nmax_flows = 2000\n",
        );
        let run = |seed: u64, index: u64| -> Vec<GenFlow> {
            let rng = RngTree::new(seed);
            let c = SourceCx {
                index,
                ..cx(32, &rng)
            };
            g.source(&c).unwrap().collect()
        };
        assert_eq!(run(7, 0), run(7, 0));
        assert_ne!(run(7, 0), run(8, 0));
        assert_ne!(run(7, 0), run(7, 1));
        // Separate streams: another size distribution leaves times and endpoints alone.
        let h = spec(
            "kind = \"poisson\"\nload = 0.3\nload_relative_to = \"host-links\"\n\
             flow_size = { fixed = \"7487884B\" }\nmean_size_for_load = \"7487884B\"\n\
             max_flows = 2000\n",
        );
        let rng = RngTree::new(7);
        let a = run(7, 0);
        let mut c = cx(32, &rng);
        c.index = 0;
        let b: Vec<GenFlow> = h.source(&c).unwrap().collect();
        assert!(
            a.iter()
                .zip(&b)
                .all(|(x, y)| (x.src, x.dst) == (y.src, y.dst))
        );
    }

    /// The xpass-fattree set-up: 192 hosts at 10 Gb/s, web search, load 0.6 of the ToR
    /// uplinks (oversubscription 3), wire bytes 1538/1460. Over T = 40 s (λT ≈ 1.07·10⁶
    /// flows) the offered wire bits divided by C·T must be 0.6 within 1 %. The bytes
    /// offered in T form a compound Poisson sum with variance λT·E[S²], so the relative
    /// SD is √(E[S²]/(λT))/E[S] ≈ 0.25 % here: 1 % is 4 SD. The flow count is checked
    /// against λT within 4 Poisson SDs.
    #[test]
    fn realized_load_matches_the_target() {
        let g = spec(
            "kind = \"poisson\"\nload = 0.6\nload_relative_to = \"tor-uplinks\"\n\
             oversubscription = 3\nwire_factor = \"1538/1460\"\n\
             flow_size = { cdf = \"websearch\" }\nuntil = \"40s\"\n",
        );
        let rng = RngTree::new(21);
        let src = g.source(&cx(192, &rng)).unwrap();
        let info = *src.info().load.as_ref().unwrap();
        let (mut count, mut bytes) = (0u64, 0u64);
        for f in src {
            count += 1;
            bytes += f.size_bytes.unwrap();
        }
        let t = 40.0;
        let expect = info.flows_per_s * t;
        assert!(
            (count as f64 - expect).abs() < 4.0 * expect.sqrt(),
            "{count} flows, expected {expect}"
        );
        let realized = bytes as f64 * 8.0 * 1538.0 / 1460.0 / (info.capacity_bps * t);
        let c = BuiltinCdf::Websearch.cdf();
        let sd = (c.second_moment_bytes2() / expect).sqrt() / c.mean_bytes();
        assert!(sd < 0.0026, "{sd}");
        assert!(
            (realized / 0.6 - 1.0).abs() < 0.01,
            "realized load {realized}"
        );
    }

    /// 24 hosts in racks of 6, inter-rack destinations, 240,000 flows: sources and
    /// destinations are each uniform over the 24 hosts by a chi-square test (23 degrees of
    /// freedom, 0.1 % critical value 49.73), and no flow stays in its rack. (Racks of equal
    /// size make the destination marginal uniform too.)
    #[test]
    fn inter_rack_endpoints_are_uniform() {
        let g = spec(
            "kind = \"poisson\"\nload = 0.5\nload_relative_to = \"host-links\"\n\
             flow_size = { fixed = \"1KB\" }\ndestinations = \"inter-rack\"\nmax_flows = 240000\n",
        );
        let rng = RngTree::new(3);
        let c = SourceCx {
            hosts_per_rack: Some(6),
            ..cx(24, &rng)
        };
        let (mut srcs, mut dsts) = (vec![0u64; 24], vec![0u64; 24]);
        for f in g.source(&c).unwrap() {
            assert_ne!(f.src / 6, f.dst / 6);
            srcs[f.src as usize] += 1;
            dsts[f.dst as usize] += 1;
        }
        assert!(chi_square(&srcs) < 49.73, "{}", chi_square(&srcs));
        assert!(chi_square(&dsts) < 49.73, "{}", chi_square(&dsts));
        let e = g.source(&cx(24, &rng)).unwrap_err();
        assert!(e.starts_with("hosts_per_rack:"), "{e}");
    }

    #[test]
    fn permutation_destinations_form_a_derangement() {
        let g = spec(
            "kind = \"poisson\"\nload = 0.5\nload_relative_to = \"host-links\"\n\
             flow_size = { fixed = \"1KB\" }\ndestinations = \"permutation\"\nmax_flows = 20000\n",
        );
        let rng = RngTree::new(4);
        let mut dst_of = [u32::MAX; 16];
        for f in g.source(&cx(16, &rng)).unwrap() {
            let d = &mut dst_of[f.src as usize];
            assert!(*d == u32::MAX || *d == f.dst);
            *d = f.dst;
        }
        let mut d = dst_of.to_vec();
        d.sort_unstable();
        assert_eq!(d, (0..16).collect::<Vec<_>>());
    }

    #[test]
    fn caps_end_the_source() {
        let rng = RngTree::new(5);
        let base = "kind = \"poisson\"\nload = 0.5\nload_relative_to = \"host-links\"\n\
                    flow_size = { fixed = \"100KB\" }\nstart = \"1ms\"\n";
        let s = spec(&format!("{base}max_flows = 10\n"))
            .source(&cx(8, &rng))
            .unwrap();
        assert_eq!(s.count(), 10);
        let mut s = spec(&format!("{base}until = \"2ms\"\n"))
            .source(&cx(8, &rng))
            .unwrap();
        assert!(s.peek_start().unwrap() > Dur::from_ms(1));
        let flows: Vec<GenFlow> = s.by_ref().collect();
        // λ = 0.5·80 Gb/s/(100 KB·8) = 50,000 flows/s: about 50 flows in the 1 ms window.
        assert!((20..90).contains(&flows.len()), "{}", flows.len());
        assert!(flows.iter().all(|f| f.start < Dur::from_ms(2)));
        assert_eq!(s.peek_start(), None);
        assert_eq!(s.next(), None);
        let e = spec(&format!("{base}max_flows = 0\n"))
            .source(&cx(8, &rng))
            .unwrap_err();
        assert!(e.starts_with("max_flows:"), "{e}");
    }

    /// Periodic queries every 100 µs with 20 µs jitter: each query's 24 responses start in
    /// [t, t + 20 µs], go to one aggregator from 24 distinct other hosts.
    #[test]
    fn partition_aggregate_queries_have_distinct_responders() {
        let g = spec(
            "kind = \"partition-aggregate\"\ndegree = 24\nresponse_size = { fixed = \"20KB\" }\n\
             queries = { every = \"100us\" }\njitter = \"20us\"\nmax_flows = 24000\n",
        );
        let rng = RngTree::new(6);
        let src = g.source(&cx(40, &rng)).unwrap();
        assert!((src.info().flows_per_s.unwrap() - 240_000.0).abs() < 1e-6);
        let flows: Vec<GenFlow> = src.collect();
        assert_eq!(flows.len(), 24_000);
        assert_ordered_and_distinct(&flows, 40);
        let mut by_query = vec![Vec::new(); 1000];
        for f in &flows {
            let q = (f.start.as_ps() / Dur::from_us(100).as_ps()) as usize;
            assert!(f.start.as_ps() - q as u64 * Dur::from_us(100).as_ps() <= 20_000_000);
            by_query[q].push(*f);
        }
        for q in by_query {
            assert_eq!(q.len(), 24);
            assert!(q.iter().all(|f| f.dst == q[0].dst));
            let mut s: Vec<u32> = q.iter().map(|f| f.src).collect();
            s.sort_unstable();
            s.dedup();
            assert_eq!(s.len(), 24);
        }
        let e = spec(
            "kind = \"partition-aggregate\"\ndegree = 40\nresponse_size = { fixed = \"20KB\" }\n\
             queries = { poisson_per_s = 100 }\n",
        )
        .source(&cx(40, &rng))
        .unwrap_err();
        assert!(e.starts_with("degree: 40 must be between 1 and 39"), "{e}");
    }

    /// Poisson queries with a jitter longer than the mean gap overlap; the merge keeps the
    /// starts ordered and loses no response.
    #[test]
    fn overlapping_queries_stay_ordered() {
        let g = spec(
            "kind = \"partition-aggregate\"\ndegree = 8\nresponse_size = { cdf = \"webserver\" }\n\
             queries = { poisson_per_s = 100000 }\njitter = \"50us\"\nmax_flows = 80000\n",
        );
        let rng = RngTree::new(7);
        let flows: Vec<GenFlow> = g.source(&cx(16, &rng)).unwrap().collect();
        assert_eq!(flows.len(), 80_000);
        assert_ordered_and_distinct(&flows, 16);
    }

    /// xpass-shuffle (experiments.md): 40 hosts × 8 tasks, 1 MB per task pair: each host
    /// sends and receives 2496 flows, 99,840 in all.
    #[test]
    fn shuffle_matches_the_xpass_setup() {
        let g = spec(
            "kind = \"shuffle\"\ntasks_per_host = 8\nbytes_per_pair = \"1MB\"\njitter = \"10us\"\n",
        );
        let rng = RngTree::new(8);
        let src = g.source(&SourceCx::new(40, &rng, 0)).unwrap();
        assert_eq!(src.info().flows, Some(99_840));
        let flows: Vec<GenFlow> = src.collect();
        assert_eq!(flows.len(), 99_840);
        assert_ordered_and_distinct(&flows, 40);
        let (mut sent, mut recv) = ([0u32; 40], [0u32; 40]);
        for f in &flows {
            sent[f.src as usize] += 1;
            recv[f.dst as usize] += 1;
            assert_eq!(f.size_bytes, Some(1_000_000));
        }
        assert!(sent.iter().chain(&recv).all(|&c| c == 2496));
    }

    /// The Pulser mix at load 0.5 on 400 hosts over 45.5 ms (≈ 400,000 background flows):
    /// background sizes are 8–32 KB or 1 MB, the 1 MB flows carry 30 % of background bytes,
    /// and incast responses come in whole queries of 24.
    #[test]
    fn pulser_mix_has_the_stated_shares() {
        let g = spec(
            "kind = \"pulser\"\nload = 0.5\nload_relative_to = \"host-links\"\n\
             incast_response_size = \"40KB\"\nincast_queries = { every = \"1ms\" }\n\
             until = \"45500us\"\n",
        );
        let rng = RngTree::new(9);
        let src = g.source(&cx(400, &rng)).unwrap();
        let flows: Vec<GenFlow> = src.collect();
        assert_ordered_and_distinct(&flows, 400);
        let (mut long, mut short, mut incast) = (0u64, 0u64, 0u64);
        for f in &flows {
            match f.size_bytes.unwrap() {
                40_000 => incast += 1,
                1_000_000 => long += 1_000_000,
                s => {
                    assert!((8_000..=32_000).contains(&s));
                    short += s;
                }
            }
        }
        // Of ≈ 400,000 background flows ≈ 0.85 % are long (≈ 3,400, binomial relative SE
        // 1.7 %), so the long share 0.3 has an SE of ≈ 0.3·0.7·0.017 ≈ 0.0036: 0.015 is 4 SE.
        let share = long as f64 / (long + short) as f64;
        assert!((share - 0.3).abs() < 0.015, "long share {share}");
        assert_eq!(incast % 24, 0, "incast responses come in whole queries");
        assert!(incast > 0);
    }

    #[test]
    fn expand_collects_bounded_sources_and_refuses_endless_ones() {
        let rng = RngTree::new(10);
        let g = spec(
            "kind = \"partition-aggregate\"\ndegree = 3\nresponse_size = { fixed = \"2KB\" }\n\
             queries = { every = \"1ms\" }\nmax_flows = 30\n",
        );
        let a = g.expand(8, &rng, 2).unwrap();
        let b: Vec<GenFlow> = g.source(&SourceCx::new(8, &rng, 2)).unwrap().collect();
        assert_eq!(a, b);
        assert_eq!(a.len(), 30);
        let p = spec(
            "kind = \"poisson\"\nload = 0.5\nload_relative_to = \"host-links\"\n\
             flow_size = { fixed = \"1KB\" }\n",
        );
        let e = p.expand(8, &rng, 0).unwrap_err();
        assert!(
            e.starts_with("max_flows: a poisson pattern is endless"),
            "{e}"
        );
        let p = spec(
            "kind = \"poisson\"\nload = 0.5\nload_relative_to = \"host-links\"\n\
             flow_size = { fixed = \"1KB\" }\nmax_flows = 5\n",
        );
        let e = p.expand(8, &rng, 0).unwrap_err();
        assert!(
            e.starts_with("load_relative_to: the host link rate is unknown"),
            "{e}"
        );
    }

    #[test]
    fn eager_kinds_become_sorted_sources() {
        let g = GeneratorSpec::Permutation {
            first: 0,
            hosts: None,
            size: crate::FlowSize(Some(1000)),
            start: Dur::ZERO,
            jitter: Dur::from_us(5),
        };
        let rng = RngTree::new(11);
        let eager = g.expand(32, &rng, 0).unwrap();
        let lazy: Vec<GenFlow> = g.source(&SourceCx::new(32, &rng, 0)).unwrap().collect();
        let mut sorted = eager.clone();
        sorted.sort_by_key(|f| f.start);
        assert_eq!(lazy, sorted);
    }
}
