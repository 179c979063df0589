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
//!
//! Each pattern is one file of this module: its scenario parameters (a `…Spec` struct),
//! their checks, its generator and its unit tests. The files share only the source
//! machinery ([`FlowSource`], [`SourceCx`], [`SourceInfo`], [`Limits`], [`FlowGenerator`])
//! and the host choice ([`Destinations`]); [`GeneratorSpec`], here, names every pattern and
//! dispatches to it. Adding a pattern means one new file plus one variant and its match
//! arms in [`GeneratorSpec`].

mod endpoints;
mod incast;
mod pairs;
mod partition_aggregate;
mod permutation;
mod poisson;
mod pulser;
mod shuffle;
mod source;
#[cfg(test)]
mod testutil;
mod trace;

use dcsim_engine::RngTree;
use serde::{Deserialize, Serialize};

pub use self::endpoints::Destinations;
pub use self::incast::IncastSpec;
pub use self::pairs::{LeaveOrder, PairsSpec};
pub use self::partition_aggregate::PartitionAggregateSpec;
pub use self::permutation::PermutationSpec;
pub use self::poisson::PoissonSpec;
pub use self::pulser::PulserSpec;
pub use self::shuffle::ShuffleSpec;
pub use self::source::{FlowGenerator, FlowSource, Limits, SourceCx, SourceInfo};
pub use self::trace::TraceSpec;
use crate::GenFlow;

/// A traffic pattern as written in a scenario (`kind = "..."`): the tag picks the variant,
/// and the other keys are the fields of its parameter struct.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum GeneratorSpec {
    /// `count` flows between fixed pairs of hosts with a join/leave schedule
    /// ([`PairsSpec`]).
    Pairs(PairsSpec),
    /// One flow from every host of a set to another, by a random derangement
    /// ([`PermutationSpec`]).
    Permutation(PermutationSpec),
    /// Many senders to one receiver at once ([`IncastSpec`]).
    Incast(IncastSpec),
    /// Poisson flow arrivals at a target load ([`PoissonSpec`]).
    Poisson(PoissonSpec),
    /// Incast queries answered by `degree` responders each ([`PartitionAggregateSpec`]).
    PartitionAggregate(PartitionAggregateSpec),
    /// All-to-all transfers between tasks ([`ShuffleSpec`]).
    Shuffle(ShuffleSpec),
    /// The Pulser mix of Poisson background flows and incast queries ([`PulserSpec`]).
    Pulser(PulserSpec),
    /// Replay of a CSV trace ([`TraceSpec`]).
    Trace(TraceSpec),
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
            concat!(
                "Poisson arrivals at a target load, sizes from a CDF or distribution, uniform, ",
                "inter-rack or permutation destinations",
            ),
        ),
        (
            "partition-aggregate",
            concat!(
                "incast queries: degree responders answer a random aggregator; query arrival ",
                "process, jitter",
            ),
        ),
        (
            "shuffle",
            "all-to-all: every task sends bytes_per_pair to every task on the other hosts",
        ),
        (
            "pulser",
            concat!(
                "Pulser mix: Poisson 8-32 KB short and 1 MB long flows (30 % of bytes) plus ",
                "incast of degree 24",
            ),
        ),
        (
            "trace",
            "replay flows from a CSV file start_ns,src,dst,size_bytes",
        ),
    ];

    /// The pattern's name (`kind` in the scenario).
    pub const fn kind(&self) -> &'static str {
        match self {
            Self::Pairs(_) => "pairs",
            Self::Permutation(_) => "permutation",
            Self::Incast(_) => "incast",
            Self::Poisson(_) => "poisson",
            Self::PartitionAggregate(_) => "partition-aggregate",
            Self::Shuffle(_) => "shuffle",
            Self::Pulser(_) => "pulser",
            Self::Trace(_) => "trace",
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
        let cx = SourceCx::new(hosts, rng, index);
        match self {
            // The eager kinds, unchanged since they were added.
            Self::Pairs(p) => p.flows(&cx),
            Self::Permutation(p) => p.flows(&cx),
            Self::Incast(p) => p.flows(&cx),
            Self::Poisson(PoissonSpec {
                max_flows, until, ..
            })
            | Self::PartitionAggregate(PartitionAggregateSpec {
                max_flows, until, ..
            })
            | Self::Pulser(PulserSpec {
                max_flows, until, ..
            }) if max_flows.is_none() && until.is_none() => Err(format!(
                "max_flows: a {} pattern is endless; give max_flows or until",
                self.kind()
            )),
            _ => Ok(self.source(&cx)?.collect()),
        }
    }

    /// Builds the pattern as a lazy source. Errors are `"field: message"`, as for
    /// [`expand`](Self::expand).
    pub fn source(&self, cx: &SourceCx<'_>) -> Result<FlowSource, String> {
        match self {
            Self::Pairs(p) => p.source(cx),
            Self::Permutation(p) => p.source(cx),
            Self::Incast(p) => p.source(cx),
            Self::Poisson(p) => p.source(cx),
            Self::PartitionAggregate(p) => p.source(cx),
            Self::Shuffle(p) => p.source(cx),
            Self::Pulser(p) => p.source(cx),
            Self::Trace(p) => p.source(cx),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::spec;
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
}
