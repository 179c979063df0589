//! Topologies: parameterized builders that produce a [`Graph`] of hosts, switches and
//! full-duplex links, each with a preset from the literature.
//!
//! Hosts are numbered `0..hosts` in the order each topology documents; scenario files
//! refer to hosts by these numbers.

mod fattree;
mod simple;

use dcsim_engine::{Dur, Rate};
use serde::{Deserialize, Serialize};

pub use fattree::{FatTreePreset, FatTreeSpec, LeafSpinePreset, LeafSpineSpec};
pub use simple::{DumbbellSpec, ParkingLotSpec, StarSpec};

/// Rate and propagation delay of a link (both directions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Line rate.
    pub rate: Rate,
    /// One-way propagation delay.
    pub delay: Dur,
}

impl LinkSpec {
    /// A link of `gbps` Gb/s and `delay_us` µs.
    pub const fn new(gbps: u64, delay_us: u64) -> Self {
        Self {
            rate: Rate::from_gbps(gbps),
            delay: Dur::from_us(delay_us),
        }
    }
}

/// What a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// An end host with one NIC.
    Host,
    /// A switch.
    Switch,
}

/// A node of a topology graph.
#[derive(Clone, Debug)]
pub struct GraphNode {
    /// Display name ("h17", "tor3", "core0").
    pub name: String,
    /// Host or switch.
    pub kind: NodeKind,
    /// Tier name for per-tier summaries ("host", "tor", "agg", "core", "leaf", "spine", ...).
    pub tier: &'static str,
}

/// A full-duplex link between nodes `a` and `b`.
#[derive(Clone, Debug)]
pub struct GraphLink {
    /// One end.
    pub a: usize,
    /// The other end.
    pub b: usize,
    /// Line rate (both directions).
    pub rate: Rate,
    /// Propagation delay from `a` to `b`.
    pub delay_ab: Dur,
    /// Propagation delay from `b` to `a`.
    pub delay_ba: Dur,
}

/// A topology: nodes, links and the host numbering.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// All nodes.
    pub nodes: Vec<GraphNode>,
    /// All links.
    pub links: Vec<GraphLink>,
    /// Node index of host `i`.
    pub hosts: Vec<usize>,
}

impl Graph {
    /// Adds a host and returns its node index.
    pub fn host(&mut self) -> usize {
        let i = self.nodes.len();
        self.nodes.push(GraphNode {
            name: format!("h{}", self.hosts.len()),
            kind: NodeKind::Host,
            tier: "host",
        });
        self.hosts.push(i);
        i
    }
    /// Adds a switch and returns its node index.
    pub fn switch(&mut self, name: String, tier: &'static str) -> usize {
        self.nodes.push(GraphNode {
            name,
            kind: NodeKind::Switch,
            tier,
        });
        self.nodes.len() - 1
    }
    /// Links `a` and `b`.
    pub fn link(&mut self, a: usize, b: usize, l: LinkSpec) {
        self.links.push(GraphLink {
            a,
            b,
            rate: l.rate,
            delay_ab: l.delay,
            delay_ba: l.delay,
        });
    }
    /// Links host `h` to switch `s`; the host-to-switch direction gets `host_delay` extra
    /// (a fixed host stack/NIC latency on transmit, as the ExpressPass fat-tree script adds).
    pub fn host_link(&mut self, h: usize, s: usize, l: LinkSpec, host_delay: Dur) {
        self.links.push(GraphLink {
            a: h,
            b: s,
            rate: l.rate,
            delay_ab: l.delay + host_delay,
            delay_ba: l.delay,
        });
    }
}

/// A topology as written in a scenario file (`kind = "..."`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TopologySpec {
    /// N sender/receiver pairs across one bottleneck link.
    Dumbbell(DumbbellSpec),
    /// N bottleneck links in series (parking lot / multi-bottleneck chain).
    ParkingLot(ParkingLotSpec),
    /// N hosts on one switch.
    Star(StarSpec),
    /// Two-tier leaf-spine.
    LeafSpine(LeafSpineSpec),
    /// Three-tier fat-tree (explicit counts, or k-ary).
    FatTree(FatTreeSpec),
}

impl TopologySpec {
    /// Fills every unset field from the preset and checks the structure. The error is a
    /// message that names the field (relative to the topology table).
    pub fn resolve(&self) -> Result<Self, String> {
        Ok(match self {
            Self::Dumbbell(s) => Self::Dumbbell(s.resolve()?),
            Self::ParkingLot(s) => Self::ParkingLot(s.resolve()?),
            Self::Star(s) => Self::Star(s.resolve()?),
            Self::LeafSpine(s) => Self::LeafSpine(s.resolve()?),
            Self::FatTree(s) => Self::FatTree(s.resolve()?),
        })
    }

    /// Builds the graph of a resolved spec.
    pub fn build(&self) -> Result<Graph, String> {
        match self.resolve()? {
            Self::Dumbbell(s) => Ok(s.build()),
            Self::ParkingLot(s) => Ok(s.build()),
            Self::Star(s) => Ok(s.build()),
            Self::LeafSpine(s) => Ok(s.build()),
            Self::FatTree(s) => Ok(s.build()),
        }
    }

    /// The size of the network a resolved spec builds, counted without building it:
    /// (hosts, switches, links, switches that have hosts).
    pub fn size(&self) -> Result<(u64, u64, u64, u64), String> {
        let u = |v: Option<u32>| u64::from(req(v));
        Ok(match self.resolve()? {
            Self::Dumbbell(s) => {
                let p = u(s.pairs);
                (2 * p, 2, 2 * p + 1, 2)
            }
            Self::ParkingLot(s) => {
                let n = u(s.bottlenecks);
                (2 * n + 2, n + 1, 2 * n + 2 + n, n + 1)
            }
            Self::Star(s) => {
                let h = u(s.hosts);
                (h, 1, h, 1)
            }
            Self::LeafSpine(s) => {
                let (l, h, sp) = (u(s.leaves), u(s.hosts_per_leaf), u(s.spines));
                (l * h, l + sp, l * h + l * sp, l)
            }
            Self::FatTree(s) => {
                let (c, a, t, h) = (u(s.cores), u(s.aggs), u(s.tors), u(s.hosts_per_tor));
                let (tu, au) = (u(s.tor_uplinks), u(s.agg_uplinks));
                (t * h, c + a + t, t * h + t * tu + a * au, t)
            }
        })
    }

    /// The kinds a scenario can name, with descriptions (for `dcsim list`).
    pub const KINDS: &'static [(&'static str, &'static str)] = &[
        (
            "dumbbell",
            "N pairs across one bottleneck; hosts 0..N-1 left, N..2N-1 right",
        ),
        (
            "parking-lot",
            "N bottlenecks in series; host 0 -> 1 crosses all, host 2+2i -> 3+2i crosses link i",
        ),
        ("star", "N hosts on one switch (incast, shuffle)"),
        (
            "leaf-spine",
            "leaves x hosts per leaf, full mesh to spines; preset pulser: 20x20, 10 spines, 10G, 10us",
        ),
        (
            "fat-tree",
            "three-tier core/aggregation/ToR; preset xpass: 8/16/32, 192 hosts, 4us + 1us host delay; or k = N",
        ),
    ];
}

/// Reads an option that `resolve` has filled.
pub(crate) fn req<T: Copy>(v: Option<T>) -> T {
    v.expect("topology spec read before resolve()")
}

#[cfg(test)]
mod size_tests {
    use super::*;

    /// `size` counts what `build` makes, for every kind, without building it.
    #[test]
    fn size_counts_what_build_makes() {
        let specs: Vec<TopologySpec> = vec![
            toml::from_str("kind = \"dumbbell\"\npairs = 3").unwrap(),
            toml::from_str("kind = \"parking-lot\"\nbottlenecks = 4").unwrap(),
            toml::from_str("kind = \"star\"\nhosts = 7").unwrap(),
            toml::from_str("kind = \"leaf-spine\"\nleaves = 3\nhosts_per_leaf = 2\nspines = 5")
                .unwrap(),
            toml::from_str("kind = \"fat-tree\"").unwrap(),
            toml::from_str("kind = \"fat-tree\"\nk = 6").unwrap(),
        ];
        for s in specs {
            let g = s.build().unwrap();
            let (hosts, switches, links, edges) = s.size().unwrap();
            let with_hosts: std::collections::BTreeSet<usize> = g
                .links
                .iter()
                .filter_map(|l| {
                    let (a, b) = (g.hosts.contains(&l.a), g.hosts.contains(&l.b));
                    (a != b).then_some(if a { l.b } else { l.a })
                })
                .collect();
            assert_eq!(
                (hosts, switches, links, edges),
                (
                    g.hosts.len() as u64,
                    (g.nodes.len() - g.hosts.len()) as u64,
                    g.links.len() as u64,
                    with_hosts.len() as u64
                ),
                "{s:?}"
            );
        }
    }
}
