//! The `pulser` pattern: the Pulser evaluation mix of Poisson background flows and incast
//! queries (lazy). It reuses the generators of `poisson` and `partition-aggregate`.

use dcsim_engine::{ByteSize, Dur};
use serde::{Deserialize, Serialize};

use super::Pattern;
use super::endpoints::{Destinations, Endpoints, host_set};
use super::partition_aggregate::{QueryGen, QueryParams};
use super::poisson::PoissonGen;
use super::source::{FlowGenerator, FlowSource, SourceCx, SourceInfo, limits};
use crate::GenFlow;
use crate::arrival::{ArrivalSpec, LoadBasis, LoadParams, Ratio};
use crate::dist::SizeDist;

/// The Pulser evaluation mix (Almasi et al.): Poisson background
/// flows at `load`, uniform source and destination, short flows uniform on
/// `short_size` and long flows of `long_size` carrying `long_share` of the background
/// bytes; plus incast queries of `incast_degree` responders. `load` counts the
/// background only. Lazy; endless unless capped.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PulserSpec {
    /// Target load of the background flows.
    pub load: f64,
    /// What the load is relative to.
    pub load_relative_to: LoadBasis,
    /// As for `poisson`.
    #[serde(default)]
    pub oversubscription: Option<f64>,
    /// As for `poisson` (default 1).
    #[serde(default = "Ratio::one")]
    pub wire_factor: Ratio,
    /// Short flow sizes, uniform (default `["8KB", "32KB"]`).
    #[serde(default = "default_short_size")]
    pub short_size: [ByteSize; 2],
    /// Long flow size (default `"1MB"`).
    #[serde(default = "default_long_size")]
    pub long_size: ByteSize,
    /// Share of background bytes in long flows (default 0.3).
    #[serde(default = "default_long_share")]
    pub long_share: f64,
    /// Responders per incast query (default 24; the paper also uses 32 and 40).
    #[serde(default = "default_incast_degree")]
    pub incast_degree: u32,
    /// Bytes per incast response (required: our sources do not give Pulser's value).
    pub incast_response_size: ByteSize,
    /// Incast query arrival process (required, for the same reason).
    pub incast_queries: ArrivalSpec,
    /// Jitter of incast responses (default 0).
    #[serde(default)]
    pub incast_jitter: Dur,
    /// First host of the set (default 0).
    #[serde(default)]
    pub first: u32,
    /// Hosts in the set (default: all from `first`).
    #[serde(default)]
    pub hosts: Option<u32>,
    /// Start of both arrival processes (default 0).
    #[serde(default)]
    pub start: Dur,
    /// Most flows to generate.
    #[serde(default)]
    pub max_flows: Option<u64>,
    /// No flow starts at or after this time.
    #[serde(default)]
    pub until: Option<Dur>,
}

impl Pattern for PulserSpec {
    const NAME: &'static str = "pulser";
    const ABOUT: &'static str = concat!(
        "Pulser mix: Poisson 8-32 KB short and 1 MB long flows (30 % of bytes) ",
        "plus incast of degree 24",
    );

    fn endless(&self) -> bool {
        self.max_flows.is_none() && self.until.is_none()
    }

    /// Checks the parameters and builds the source. Errors are `"field: message"`.
    fn source(&self, cx: &SourceCx<'_>) -> Result<FlowSource, String> {
        let (first, n) = host_set(self.first, self.hosts, cx.hosts, 2)?;
        let [lo, hi] = self.short_size;
        if lo.bytes() == 0 || lo > hi {
            return Err(format!(
                "short_size: [{lo}, {hi}] must be an interval of at least 1 byte"
            ));
        }
        if self.long_size.bytes() == 0 {
            return Err("long_size: must be at least 1 byte".into());
        }
        let long_share = self.long_share;
        if !(0.0..=1.0).contains(&long_share) {
            return Err(format!("long_share: {long_share} must be in [0, 1]"));
        }
        if self.incast_response_size.bytes() == 0 {
            return Err("incast_response_size: must be at least 1 byte".into());
        }
        self.incast_queries
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
            (long_share, SizeDist::Fixed(self.long_size.bytes())),
        ])
        .map_err(|e| format!("long_share: {e}"))?;
        let load = LoadParams {
            load: self.load,
            relative_to: self.load_relative_to,
            oversubscription: self.oversubscription,
            wire_factor: self.wire_factor,
            mean_size_bytes: size.mean_bytes(),
            hosts: n,
            host_link: cx.host_link,
            tor_uplink_capacity: cx.tor_uplink_capacity,
        }
        .resolve()?;
        let q = self.incast_queries.rate_per_s();
        let info = SourceInfo {
            kind: "pulser",
            size: Some(format!(
                "{size}; incast {} x {} B",
                self.incast_degree,
                self.incast_response_size.bytes()
            )),
            mean_size_bytes: Some(size.mean_bytes()),
            flows_per_s: Some(load.flows_per_s + q * f64::from(self.incast_degree)),
            queries_per_s: Some(q),
            load: Some(load),
            ..SourceInfo::default()
        };
        let ends = Endpoints::new("pulser", first, n, Destinations::Uniform, None, cx)?;
        let info = SourceInfo {
            leaving_rack: ends.leaving_rack(cx.hosts_per_rack),
            ..info
        };
        let background = PoissonGen::new("pulser", self.start, load.flows_per_s, ends, size, cx);
        let incast = QueryGen::new(
            "pulser.incast",
            QueryParams {
                first,
                n,
                degree: self.incast_degree,
                size: SizeDist::Fixed(self.incast_response_size.bytes()),
                queries: self.incast_queries,
                jitter: self.incast_jitter,
                start: self.start,
            },
            cx,
        )
        .map_err(|e| format!("incast_degree: {e}"))?;
        let g = MergeGen::new(vec![Box::new(background), Box::new(incast)]);
        Ok(FlowSource::new(
            Box::new(g),
            limits(self.max_flows, self.until)?,
            info,
        ))
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

fn default_short_size() -> [ByteSize; 2] {
    [ByteSize(8_000), ByteSize(32_000)]
}
fn default_long_size() -> ByteSize {
    ByteSize(1_000_000)
}
fn default_long_share() -> f64 {
    0.3
}
fn default_incast_degree() -> u32 {
    24
}

#[cfg(test)]
mod tests {
    use dcsim_engine::RngTree;

    use super::*;
    use crate::pattern::testutil::{assert_ordered_and_distinct, cx, spec};

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
}
