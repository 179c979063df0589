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
//! and the host choice ([`Destinations`]). A pattern implements [`Pattern`] (its name, one
//! line for `dcsim list`, its source); the `patterns!` registry below, one line per
//! pattern, generates [`GeneratorSpec`], its scenario syntax and its dispatch. Adding a
//! pattern means one new file plus one registry line.

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

use core::fmt;

use dcsim_engine::RngTree;
use dcsim_engine::spec::{self, Kind};
use serde::de::{self, DeserializeOwned};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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

/// A traffic pattern: its scenario parameters (this type, deserialized from the keys of
/// `pattern = { kind = "...", ... }` other than `kind`) and how it makes flows.
pub trait Pattern: Clone + fmt::Debug + PartialEq + Serialize + DeserializeOwned {
    /// Its name in scenario files (`kind = "poisson"`).
    const NAME: &'static str;
    /// One line for `dcsim list`.
    const ABOUT: &'static str;

    /// The pattern as a lazy source. Errors are `"field: message"`.
    ///
    /// # Errors
    /// A parameter that does not fit the network (a host out of range, an unknown rate).
    fn source(&self, cx: &SourceCx<'_>) -> Result<FlowSource, String>;

    /// The pattern's flows as a list: by default the source's, collected.
    ///
    /// # Errors
    /// As [`Pattern::source`].
    fn flows(&self, cx: &SourceCx<'_>) -> Result<Vec<GenFlow>, String> {
        Ok(self.source(cx)?.collect())
    }

    /// Whether, as configured, it never stops making flows (a list of its flows is then
    /// refused).
    fn endless(&self) -> bool {
        false
    }

    /// The flows a pattern that builds them all at once will build, among `hosts` hosts,
    /// known without building anything (None for a lazy pattern): so that a scenario can
    /// be refused before a list of 10^8 flows is allocated.
    fn planned_flows(&self, _hosts: u32) -> Option<u64> {
        None
    }
}

/// The registry: one line per pattern, `Variant(path::Type)`. Generates [`GeneratorSpec`]
/// (the scenario syntax, through `dcsim_engine::spec`), its `KINDS` and the dispatch.
macro_rules! patterns {
    ($($(#[$doc:meta])* $V:ident($T:ty)),+ $(,)?) => {
        /// A traffic pattern as written in a scenario: `pattern = { kind = "...", ... }`.
        #[derive(Clone, Debug, PartialEq)]
        pub enum GeneratorSpec {
            $($(#[$doc])* $V($T),)+
        }

        impl GeneratorSpec {
            /// The patterns a scenario can name (for `dcsim list`).
            pub const KINDS: &'static [Kind] = &[$(Kind {
                name: <$T as Pattern>::NAME,
                about: <$T as Pattern>::ABOUT,
            }),+];
            const NAMES: &'static [&'static str] = &[$(<$T as Pattern>::NAME),+];

            /// The pattern's name (`kind` in the scenario).
            pub const fn kind(&self) -> &'static str {
                match self { $(Self::$V(_) => <$T as Pattern>::NAME,)+ }
            }

            /// Builds the pattern as a lazy source. Errors are `"field: message"`, as for
            /// [`expand`](Self::expand).
            ///
            /// # Errors
            /// A parameter that does not fit the network.
            pub fn source(&self, cx: &SourceCx<'_>) -> Result<FlowSource, String> {
                match self { $(Self::$V(p) => p.source(cx),)+ }
            }

            fn flows(&self, cx: &SourceCx<'_>) -> Result<Vec<GenFlow>, String> {
                match self { $(Self::$V(p) => p.flows(cx),)+ }
            }

            fn endless(&self) -> bool {
                match self { $(Self::$V(p) => p.endless(),)+ }
            }

            /// See [`Pattern::planned_flows`].
            pub fn planned_flows(&self, hosts: u32) -> Option<u64> {
                match self { $(Self::$V(p) => p.planned_flows(hosts),)+ }
            }
        }

        impl Serialize for GeneratorSpec {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(Self::$V(p) => spec::serialize_tagged(<$T as Pattern>::NAME, p, s),)+
                }
            }
        }

        impl<'de> Deserialize<'de> for GeneratorSpec {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                spec::deserialize_tagged(d, Self::NAMES, |kind, params| {
                    $(if kind == <$T as Pattern>::NAME {
                        return spec::params(params).map(Self::$V);
                    })+
                    Err(de::Error::custom(format_args!("no traffic pattern {kind:?}")))
                })
            }
        }
    };
}

patterns! {
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
    /// Expands the pattern for a network of `hosts` hosts into a list of flows. `index` is
    /// the generator's position in the scenario (it selects the random streams). Errors are
    /// `"field: message"`.
    ///
    /// The lazy kinds are collected from [`source`](Self::source) with a context that knows
    /// only the host count, so load-based kinds relative to host links fail here (the rate
    /// is unknown), and endless kinds need `max_flows` or `until`. Prefer `source`: it keeps
    /// memory flat.
    ///
    /// # Errors
    /// An endless pattern, or a parameter that does not fit the network.
    pub fn expand(&self, hosts: u32, rng: &RngTree, index: u64) -> Result<Vec<GenFlow>, String> {
        if self.endless() {
            return Err(format!(
                "max_flows: a {} pattern is endless; give max_flows or until",
                self.kind()
            ));
        }
        self.flows(&SourceCx::new(hosts, rng, index))
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
        let listed: Vec<&str> = GeneratorSpec::KINDS.iter().map(|k| k.name).collect();
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
