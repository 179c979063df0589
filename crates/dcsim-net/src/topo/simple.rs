//! Dumbbell, parking lot and star.

use serde::{Deserialize, Serialize};

use super::{Graph, LinkSpec, req};

/// `pairs` senders on the left switch, `pairs` receivers on the right switch, one
/// bottleneck between the switches. Hosts `0..pairs` are on the left, `pairs..2·pairs` on
/// the right. Defaults give a 10 Gb/s bottleneck and a base RTT of 100 µs
/// (2 × (20 + 10 + 20) µs of propagation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DumbbellSpec {
    /// Sender/receiver pairs (default 2).
    pub pairs: Option<u32>,
    /// Host-to-switch links (default 10 Gb/s, 20 µs).
    pub host_link: Option<LinkSpec>,
    /// The switch-to-switch link (default 10 Gb/s, 10 µs).
    pub bottleneck: Option<LinkSpec>,
}

impl DumbbellSpec {
    pub(crate) fn resolve(&self) -> Result<Self, String> {
        let r = Self {
            pairs: Some(self.pairs.unwrap_or(2)),
            host_link: Some(self.host_link.unwrap_or(LinkSpec::new(10, 20))),
            bottleneck: Some(self.bottleneck.unwrap_or(LinkSpec::new(10, 10))),
        };
        if req(r.pairs) == 0 {
            return Err("pairs: must be at least 1".into());
        }
        Ok(r)
    }

    pub(crate) fn build(&self) -> Graph {
        let n = req(self.pairs) as usize;
        let mut g = Graph::default();
        let left: Vec<usize> = (0..n).map(|_| g.host()).collect();
        let right: Vec<usize> = (0..n).map(|_| g.host()).collect();
        let l = g.switch("left".into(), "switch");
        let r = g.switch("right".into(), "switch");
        for h in left {
            g.link(h, l, req(self.host_link));
        }
        for h in right {
            g.link(h, r, req(self.host_link));
        }
        g.link(l, r, req(self.bottleneck));
        g
    }
}

/// `bottlenecks` switch-to-switch links in series (routers `r0..rN`). Host 0 (at `r0`) to
/// host 1 (at `rN`) crosses every bottleneck; for link `i` (from `r_i` to `r_{i+1}`), host
/// `2+2i` (at `r_i`) to host `3+2i` (at `r_{i+1}`) crosses only that link. Defaults follow
/// the ExpressPass parking-lot script: 10 Gb/s and 4 µs everywhere.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParkingLotSpec {
    /// Number of bottleneck links in series (default 2).
    pub bottlenecks: Option<u32>,
    /// Host links (default 10 Gb/s, 4 µs).
    pub host_link: Option<LinkSpec>,
    /// Router-to-router links (default 10 Gb/s, 4 µs).
    pub bottleneck: Option<LinkSpec>,
}

impl ParkingLotSpec {
    pub(crate) fn resolve(&self) -> Result<Self, String> {
        let r = Self {
            bottlenecks: Some(self.bottlenecks.unwrap_or(2)),
            host_link: Some(self.host_link.unwrap_or(LinkSpec::new(10, 4))),
            bottleneck: Some(self.bottleneck.unwrap_or(LinkSpec::new(10, 4))),
        };
        if req(r.bottlenecks) == 0 {
            return Err("bottlenecks: must be at least 1".into());
        }
        Ok(r)
    }

    pub(crate) fn build(&self) -> Graph {
        let n = req(self.bottlenecks) as usize;
        let hl = req(self.host_link);
        let mut g = Graph::default();
        let long_src = g.host();
        let long_dst = g.host();
        let cross: Vec<(usize, usize)> = (0..n).map(|_| (g.host(), g.host())).collect();
        let routers: Vec<usize> = (0..=n)
            .map(|i| g.switch(format!("r{i}"), "switch"))
            .collect();
        g.link(long_src, routers[0], hl);
        g.link(long_dst, routers[n], hl);
        for (i, &(s, d)) in cross.iter().enumerate() {
            g.link(s, routers[i], hl);
            g.link(d, routers[i + 1], hl);
        }
        for w in routers.windows(2) {
            g.link(w[0], w[1], req(self.bottleneck));
        }
        g
    }
}

/// `hosts` hosts on one switch (default 32 hosts, 10 Gb/s, 5 µs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StarSpec {
    /// Number of hosts.
    pub hosts: Option<u32>,
    /// Host links.
    pub host_link: Option<LinkSpec>,
}

impl StarSpec {
    pub(crate) fn resolve(&self) -> Result<Self, String> {
        let r = Self {
            hosts: Some(self.hosts.unwrap_or(32)),
            host_link: Some(self.host_link.unwrap_or(LinkSpec::new(10, 5))),
        };
        if req(r.hosts) < 2 {
            return Err("hosts: must be at least 2".into());
        }
        Ok(r)
    }

    pub(crate) fn build(&self) -> Graph {
        let mut g = Graph::default();
        let hosts: Vec<usize> = (0..req(self.hosts)).map(|_| g.host()).collect();
        let s = g.switch("sw".into(), "tor");
        for h in hosts {
            g.link(h, s, req(self.host_link));
        }
        g
    }
}
