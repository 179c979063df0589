//! Leaf-spine and three-tier fat-tree.

use dcsim_engine::{Dur, Rate};
use serde::{Deserialize, Serialize};

use super::{Graph, LinkSpec, req};

/// Named leaf-spine presets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LeafSpinePreset {
    /// The Pulser evaluation (Almasi et al.): 20 leaves × 20 hosts, 10 spines
    /// (oversubscription 2), every link 10 Gb/s with 10 µs delay.
    #[default]
    Pulser,
}

/// Two-tier leaf-spine: every leaf connects to every spine; hosts `i·hosts_per_leaf ..`
/// hang off leaf `i`. Unset fields come from the preset; `rate` and `delay` apply to both
/// tiers unless `host_link` or `fabric_link` say otherwise.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct LeafSpineSpec {
    /// Preset supplying the unset fields (default `pulser`).
    pub preset: Option<LeafSpinePreset>,
    /// Leaf (ToR) switches.
    pub leaves: Option<u32>,
    /// Hosts per leaf.
    pub hosts_per_leaf: Option<u32>,
    /// Spine switches.
    pub spines: Option<u32>,
    /// Rate of every link unless overridden per tier.
    pub rate: Option<Rate>,
    /// Delay of every link unless overridden per tier.
    pub delay: Option<Dur>,
    /// Host-to-leaf links.
    pub host_link: Option<LinkSpec>,
    /// Leaf-to-spine links.
    pub fabric_link: Option<LinkSpec>,
}

impl LeafSpineSpec {
    pub(crate) fn resolve(&self) -> Result<Self, String> {
        let preset = self.preset.unwrap_or_default();
        let (leaves, hpl, spines, rate, delay) = match preset {
            LeafSpinePreset::Pulser => (20, 20, 10, Rate::from_gbps(10), Dur::from_us(10)),
        };
        let base = LinkSpec {
            rate: self.rate.unwrap_or(rate),
            delay: self.delay.unwrap_or(delay),
        };
        let r = Self {
            preset: Some(preset),
            leaves: Some(self.leaves.unwrap_or(leaves)),
            hosts_per_leaf: Some(self.hosts_per_leaf.unwrap_or(hpl)),
            spines: Some(self.spines.unwrap_or(spines)),
            rate: self.rate,
            delay: self.delay,
            host_link: Some(self.host_link.unwrap_or(base)),
            fabric_link: Some(self.fabric_link.unwrap_or(base)),
        };
        for (v, name) in [
            (r.leaves, "leaves"),
            (r.hosts_per_leaf, "hosts_per_leaf"),
            (r.spines, "spines"),
        ] {
            if req(v) == 0 {
                return Err(format!("{name}: must be at least 1"));
            }
        }
        if req(r.leaves) * req(r.hosts_per_leaf) < 2 {
            return Err("hosts_per_leaf: the topology needs at least 2 hosts".into());
        }
        Ok(r)
    }

    pub(crate) fn build(&self) -> Graph {
        let (nl, hpl, ns) = (req(self.leaves), req(self.hosts_per_leaf), req(self.spines));
        let mut g = Graph::default();
        let hosts: Vec<usize> = (0..nl * hpl).map(|_| g.host()).collect();
        let leaves: Vec<usize> = (0..nl)
            .map(|i| g.switch(format!("leaf{i}"), "leaf"))
            .collect();
        let spines: Vec<usize> = (0..ns)
            .map(|i| g.switch(format!("spine{i}"), "spine"))
            .collect();
        for (i, &h) in hosts.iter().enumerate() {
            g.link(h, leaves[i / hpl as usize], req(self.host_link));
        }
        for &l in &leaves {
            for &s in &spines {
                g.link(l, s, req(self.fabric_link));
            }
        }
        g
    }
}

/// Named fat-tree presets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum FatTreePreset {
    /// The ExpressPass large-scale script: 8 core, 16 aggregation, 32 ToR, 6 hosts per ToR
    /// (192 hosts), 2 uplinks per ToR, 4 per aggregation switch, 10 Gb/s, 4 µs links plus
    /// 1 µs host delay. Oversubscribed 3:1 at the ToR.
    #[default]
    Xpass,
    /// The k-ary fat-tree of Al-Fares et al.: k pods of k/2 ToRs and k/2 aggregation
    /// switches, (k/2)² cores, k/2 hosts per ToR (k³/4 hosts), 10 Gb/s, 1 µs links.
    KAry,
}

/// Three-tier fat-tree. Pods hold `tor_uplinks` aggregation switches and
/// `tors / pods` ToRs; every ToR connects to every aggregation switch of its pod; the j-th
/// aggregation switch of each pod connects to cores `j, j + a, j + 2a, …` (a = aggregation
/// switches per pod), `agg_uplinks` of them, so `cores = a · agg_uplinks`. Hosts
/// `i·hosts_per_tor ..` hang off ToR `i`.
///
/// Setting `k` selects the k-ary preset. `rate` and `delay` apply to every tier unless
/// `host_link`, `tor_link` (ToR–aggregation) or `core_link` (aggregation–core) override them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct FatTreeSpec {
    /// Preset supplying unset fields (default `xpass`, or `k-ary` when `k` is set).
    pub preset: Option<FatTreePreset>,
    /// Arity of a k-ary fat-tree (even).
    pub k: Option<u32>,
    /// Core switches.
    pub cores: Option<u32>,
    /// Aggregation switches.
    pub aggs: Option<u32>,
    /// ToR switches.
    pub tors: Option<u32>,
    /// Hosts per ToR.
    pub hosts_per_tor: Option<u32>,
    /// Uplinks per ToR (= aggregation switches per pod).
    pub tor_uplinks: Option<u32>,
    /// Uplinks per aggregation switch.
    pub agg_uplinks: Option<u32>,
    /// Rate of every link unless overridden per tier.
    pub rate: Option<Rate>,
    /// Delay of every link unless overridden per tier.
    pub delay: Option<Dur>,
    /// Extra delay on the host-to-ToR direction (host stack/NIC latency).
    pub host_delay: Option<Dur>,
    /// Host–ToR links.
    pub host_link: Option<LinkSpec>,
    /// ToR–aggregation links.
    pub tor_link: Option<LinkSpec>,
    /// Aggregation–core links.
    pub core_link: Option<LinkSpec>,
}

impl FatTreeSpec {
    pub(crate) fn resolve(&self) -> Result<Self, String> {
        if self.preset == Some(FatTreePreset::Xpass) && self.k.is_some() {
            return Err(
                "k: only with preset = \"k-ary\" (or no preset); the xpass preset has its own \
                 shape"
                    .into(),
            );
        }
        let preset = self.preset.unwrap_or(if self.k.is_some() {
            FatTreePreset::KAry
        } else {
            FatTreePreset::Xpass
        });
        // (cores, aggs, tors, hosts_per_tor, tor_uplinks, agg_uplinks, rate, delay, host_delay)
        let p = match preset {
            FatTreePreset::Xpass => (
                8,
                16,
                32,
                6,
                2,
                4,
                Rate::from_gbps(10),
                Dur::from_us(4),
                Dur::from_us(1),
            ),
            FatTreePreset::KAry => {
                let k = self.k.unwrap_or(4);
                if k < 2 || !k.is_multiple_of(2) {
                    return Err(format!("k: must be an even number >= 2, got {k}"));
                }
                let h = k / 2;
                (
                    h * h,
                    k * h,
                    k * h,
                    h,
                    h,
                    h,
                    Rate::from_gbps(10),
                    Dur::from_us(1),
                    Dur::ZERO,
                )
            }
        };
        let base = LinkSpec {
            rate: self.rate.unwrap_or(p.6),
            delay: self.delay.unwrap_or(p.7),
        };
        let r = Self {
            preset: Some(preset),
            k: self.k,
            cores: Some(self.cores.unwrap_or(p.0)),
            aggs: Some(self.aggs.unwrap_or(p.1)),
            tors: Some(self.tors.unwrap_or(p.2)),
            hosts_per_tor: Some(self.hosts_per_tor.unwrap_or(p.3)),
            tor_uplinks: Some(self.tor_uplinks.unwrap_or(p.4)),
            agg_uplinks: Some(self.agg_uplinks.unwrap_or(p.5)),
            rate: self.rate,
            delay: self.delay,
            host_delay: Some(self.host_delay.unwrap_or(p.8)),
            host_link: Some(self.host_link.unwrap_or(base)),
            tor_link: Some(self.tor_link.unwrap_or(base)),
            core_link: Some(self.core_link.unwrap_or(base)),
        };
        let (cores, aggs, tors) = (req(r.cores), req(r.aggs), req(r.tors));
        let (hpt, tu, au) = (req(r.hosts_per_tor), req(r.tor_uplinks), req(r.agg_uplinks));
        for (v, name) in [
            (cores, "cores"),
            (aggs, "aggs"),
            (tors, "tors"),
            (hpt, "hosts_per_tor"),
            (tu, "tor_uplinks"),
            (au, "agg_uplinks"),
        ] {
            if v == 0 {
                return Err(format!("{name}: must be at least 1"));
            }
        }
        if aggs % tu != 0 {
            return Err(format!(
                "aggs: {aggs} aggregation switches do not form pods of tor_uplinks = {tu}"
            ));
        }
        let pods = aggs / tu;
        if tors % pods != 0 {
            return Err(format!(
                "tors: {tors} ToRs do not divide evenly into {pods} pods"
            ));
        }
        if cores != tu * au {
            return Err(format!(
                "cores: must equal tor_uplinks x agg_uplinks = {} (each aggregation switch of a pod position reaches its own core plane)",
                tu * au
            ));
        }
        Ok(r)
    }

    pub(crate) fn build(&self) -> Graph {
        let (cores, aggs, tors) = (
            req(self.cores) as usize,
            req(self.aggs) as usize,
            req(self.tors) as usize,
        );
        let (hpt, app, au) = (
            req(self.hosts_per_tor) as usize,
            req(self.tor_uplinks) as usize,
            req(self.agg_uplinks) as usize,
        );
        let tors_per_pod = tors / (aggs / app);
        let mut g = Graph::default();
        let hosts: Vec<usize> = (0..tors * hpt).map(|_| g.host()).collect();
        let tor: Vec<usize> = (0..tors)
            .map(|i| g.switch(format!("tor{i}"), "tor"))
            .collect();
        let agg: Vec<usize> = (0..aggs)
            .map(|i| g.switch(format!("agg{i}"), "agg"))
            .collect();
        let core: Vec<usize> = (0..cores)
            .map(|i| g.switch(format!("core{i}"), "core"))
            .collect();
        for (i, &h) in hosts.iter().enumerate() {
            g.host_link(h, tor[i / hpt], req(self.host_link), req(self.host_delay));
        }
        for (t, &ts) in tor.iter().enumerate() {
            let pod = t / tors_per_pod;
            for j in 0..app {
                g.link(ts, agg[pod * app + j], req(self.tor_link));
            }
        }
        for (a, &as_) in agg.iter().enumerate() {
            let j = a % app;
            for m in 0..au {
                g.link(as_, core[j + app * m], req(self.core_link));
            }
        }
        g
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::TopologySpec;

    fn degree(g: &Graph, n: usize) -> usize {
        g.links.iter().filter(|l| l.a == n || l.b == n).count()
    }

    #[test]
    fn xpass_preset_has_the_published_shape() {
        let g = TopologySpec::FatTree(FatTreeSpec::default())
            .build()
            .unwrap();
        assert_eq!(g.hosts.len(), 192);
        let count = |tier| g.nodes.iter().filter(|n| n.tier == tier).count();
        assert_eq!((count("core"), count("agg"), count("tor")), (8, 16, 32));
        for (i, n) in g.nodes.iter().enumerate() {
            let d = degree(&g, i);
            match n.tier {
                "tor" => assert_eq!(d, 6 + 2),
                "agg" => assert_eq!(d, 4 + 4),
                "core" => assert_eq!(d, 16 / 2),
                _ => assert_eq!(d, 1),
            }
        }
        // ToR 5 (pod 1) uplinks to aggregation switches 2 and 3, as in the script.
        let tor5 = g.nodes.iter().position(|n| n.name == "tor5").unwrap();
        let mut ups: Vec<&str> = g
            .links
            .iter()
            .filter(|l| l.a == tor5)
            .map(|l| g.nodes[l.b].name.as_str())
            .collect();
        ups.sort_unstable();
        assert_eq!(ups, ["agg2", "agg3"]);
    }

    #[test]
    fn k_ary_fat_tree_has_k_cubed_over_four_hosts() {
        let spec = FatTreeSpec {
            k: Some(8),
            ..FatTreeSpec::default()
        };
        let g = TopologySpec::FatTree(spec).build().unwrap();
        assert_eq!(g.hosts.len(), 128);
        assert_eq!(g.nodes.iter().filter(|n| n.tier == "core").count(), 16);
    }

    #[test]
    fn inconsistent_counts_are_rejected_with_the_field() {
        let spec = FatTreeSpec {
            cores: Some(7),
            ..FatTreeSpec::default()
        };
        let e = TopologySpec::FatTree(spec).resolve().unwrap_err();
        assert!(e.starts_with("cores:"), "{e}");
        let spec = FatTreeSpec {
            k: Some(5),
            ..FatTreeSpec::default()
        };
        assert!(
            TopologySpec::FatTree(spec)
                .resolve()
                .unwrap_err()
                .starts_with("k:")
        );
    }
}
