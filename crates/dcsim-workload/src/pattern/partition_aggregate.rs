//! The `partition-aggregate` pattern: incast queries, each answered by several responders
//! (lazy). Its generator, [`QueryGen`], also makes the incast traffic of `pulser`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use dcsim_engine::{Dur, Rng};
use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::Pattern;
use super::endpoints::host_set;
use super::source::{FlowGenerator, FlowSource, SourceCx, SourceInfo, jitter_of, limits};
use crate::GenFlow;
use crate::arrival::{ArrivalSpec, Arrivals};
use crate::dist::{SizeDist, SizeSpec};

/// Partition/aggregate incast: at each query, `degree` distinct hosts each send a
/// response to one aggregator; aggregator and responders are uniform over the set.
/// Lazy; endless unless capped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartitionAggregateSpec {
    /// Responders per query.
    pub degree: u32,
    /// Size of each response.
    pub response_size: SizeSpec,
    /// Query arrival process (`{ poisson_per_s = 500.0 }` or `{ every = "2ms" }`).
    pub queries: ArrivalSpec,
    /// Each response starts a uniform random time in `[0, jitter]` after its query
    /// (default 0).
    #[serde(default)]
    pub jitter: Dur,
    /// First host of the set (default 0).
    #[serde(default)]
    pub first: u32,
    /// Hosts in the set (default: all from `first`).
    #[serde(default)]
    pub hosts: Option<u32>,
    /// Start of the query process (default 0).
    #[serde(default)]
    pub start: Dur,
    /// Most flows (responses) to generate.
    #[serde(default)]
    pub max_flows: Option<u64>,
    /// No flow starts at or after this time.
    #[serde(default)]
    pub until: Option<Dur>,
}

impl Pattern for PartitionAggregateSpec {
    const NAME: &'static str = "partition-aggregate";
    const ABOUT: &'static str = concat!(
        "incast queries: degree responders answer a random aggregator; query ",
        "arrival process, jitter",
    );

    fn endless(&self) -> bool {
        self.max_flows.is_none() && self.until.is_none()
    }

    /// Checks the parameters and builds the source. Errors are `"field: message"`.
    fn source(&self, cx: &SourceCx<'_>) -> Result<FlowSource, String> {
        let (first, n) = host_set(self.first, self.hosts, cx.hosts, 2)?;
        let size = self
            .response_size
            .build(cx.base_dir)
            .map_err(|e| format!("response_size.{e}"))?;
        self.queries
            .validate()
            .map_err(|e| format!("queries.{e}"))?;
        let q = self.queries.rate_per_s();
        let info = SourceInfo {
            kind: "partition-aggregate",
            size: Some(size.to_string()),
            mean_size_bytes: Some(size.mean_bytes()),
            flows_per_s: Some(q * f64::from(self.degree)),
            queries_per_s: Some(q),
            ..SourceInfo::default()
        };
        let g = QueryGen::new(
            "partition-aggregate",
            QueryParams {
                first,
                n,
                degree: self.degree,
                size,
                queries: self.queries,
                jitter: self.jitter,
                start: self.start,
            },
            cx,
        )
        .map_err(|e| format!("degree: {e}"))?;
        Ok(FlowSource::new(
            Box::new(g),
            limits(self.max_flows, self.until)?,
            info,
        ))
    }
}

/// What a [`QueryGen`] draws from: the host set `first..first+n`, responders per query,
/// response sizes, the query process and the response jitter.
pub(super) struct QueryParams {
    pub(super) first: u32,
    pub(super) n: u32,
    pub(super) degree: u32,
    pub(super) size: SizeDist,
    pub(super) queries: ArrivalSpec,
    pub(super) jitter: Dur,
    pub(super) start: Dur,
}

/// Partition/aggregate: at each query an aggregator chosen uniformly from the set receives
/// one response from each of `degree` distinct other hosts, chosen uniformly (Floyd's
/// sampling, O(degree²) per query). Each response starts at the query time plus a uniform
/// jitter in `[0, jitter]`. Responses of overlapping queries are merged by start time in a
/// small heap, whose size is bounded by `degree` × (queries within one jitter span + 1).
pub(super) struct QueryGen {
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
    /// A query process for the pattern `kind` (which labels the random streams
    /// `"<kind>.query"`, `"<kind>.pick"`, `"<kind>.size"` and `"<kind>.jitter"`). The error
    /// names the bad degree, without a field name.
    pub(super) fn new(kind: &str, p: QueryParams, cx: &SourceCx<'_>) -> Result<Self, String> {
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

#[cfg(test)]
mod tests {
    use dcsim_engine::RngTree;

    use super::*;
    use crate::pattern::testutil::{assert_ordered_and_distinct, cx, spec};

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
}
