//! Routing: shortest-path forwarding tables with ECMP, per-flow interned routes, and
//! per-packet spraying.
//!
//! Every host has one NIC attached to one switch (its *edge* switch). For each edge switch
//! `e`, a breadth-first search over the switch graph gives every switch its next hops
//! toward `e` (all neighbours one step closer), in port-creation order. Routing between
//! hosts is therefore by edge switch, and the table has `switches × edge switches` entries.
//!
//! - **Per-flow ECMP** picks, at each switch, next hop `hash(flow key, switch) mod fan-out`
//!   once at flow start and interns the resulting path; packets carry a [`RouteId`] and a
//!   hop index, so forwarding is one array read.
//! - **Symmetric** ECMP makes the reverse route the exact reverse of the forward one (ACKs
//!   and credits cross the same links as the data, in the other direction).
//! - **Spraying** picks the next hop per packet, round-robin per switch, from the same table.
//!
//! The hash is SplitMix64 over (flow, salt, switch): fixed and platform-independent.

use std::collections::HashMap;
use std::collections::VecDeque;

use dcsim_engine::splitmix;
use serde::{Deserialize, Serialize};

use crate::PortId;

dcsim_engine::define_id!(
    /// An interned route: the offset of its first port in the route table.
    RouteId
);

impl RouteId {
    /// "No route": the packet is forwarded hop by hop from the forwarding table.
    pub const NONE: Self = Self(u32::MAX);
}

/// How packets choose among equal-cost paths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum RoutingMode {
    /// Per-flow ECMP; the reverse direction hashes independently.
    Ecmp,
    /// Per-flow ECMP; reverse packets take exactly the reverse links of the forward path.
    #[default]
    SymmetricEcmp,
    /// Per-packet spraying, round-robin over equal-cost next hops at each switch.
    Spray,
}

/// Routing settings of a scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RoutingSpec {
    /// ECMP mode (default `symmetric-ecmp`).
    #[serde(default)]
    pub mode: RoutingMode,
    /// Salt of the ECMP hash: changing it re-rolls every flow's path (default 0).
    #[serde(default)]
    pub salt: u64,
}

/// Interned routes in one flat array. A route is stored as its length followed by its
/// ports; its [`RouteId`] is the offset of the first port.
#[derive(Default)]
pub(crate) struct RouteTable {
    ports: Vec<PortId>,
    index: HashMap<u64, Vec<RouteId>>,
}

impl RouteTable {
    /// Interns `path` (allocation happens only for a path not seen before).
    pub(crate) fn intern(&mut self, path: &[PortId]) -> RouteId {
        let h = path
            .iter()
            .fold(0x5151_u64, |h, p| splitmix(h ^ u64::from(p.0)));
        if let Some(ids) = self.index.get(&h)
            && let Some(&id) = ids.iter().find(|&&id| self.path(id) == path)
        {
            return id;
        }
        self.ports.push(PortId::new(path.len()));
        let id = RouteId::new(self.ports.len());
        self.ports.extend_from_slice(path);
        self.index.entry(h).or_default().push(id);
        id
    }

    /// The ports of route `id`, from the source NIC to the last switch's egress.
    pub(crate) fn path(&self, id: RouteId) -> &[PortId] {
        let len = self.ports[id.index() - 1].index();
        &self.ports[id.index()..id.index() + len]
    }

    /// The egress port at hop `hop` of route `id`.
    #[inline]
    pub(crate) fn hop(&self, id: RouteId, hop: u8) -> PortId {
        self.ports[id.index() + usize::from(hop)]
    }

    /// Number of stored port entries (memory use).
    pub(crate) fn len(&self) -> usize {
        self.ports.len()
    }
}

/// Next hops of every switch toward every edge switch.
pub(crate) struct Fib {
    edges: usize,
    /// `(start, len)` into `ports`, indexed by `node · edges + edge`.
    slots: Vec<(u32, u32)>,
    ports: Vec<PortId>,
}

impl Fib {
    /// Builds the table. `adj[n]` lists `(port, peer node)` of node `n` toward switches
    /// only; `edge_nodes[e]` is the node of edge switch `e`. Returns, on failure, a pair of
    /// nodes that cannot reach each other.
    pub(crate) fn build(
        adj: &[Vec<(PortId, usize)>],
        edge_nodes: &[usize],
        is_switch: &[bool],
    ) -> Result<Self, (usize, usize)> {
        let n = adj.len();
        let edges = edge_nodes.len();
        let mut slots = vec![(0, 0); n * edges];
        let mut ports = Vec::new();
        let mut dist = vec![u32::MAX; n];
        let mut queue = VecDeque::new();
        for (e, &target) in edge_nodes.iter().enumerate() {
            dist.fill(u32::MAX);
            dist[target] = 0;
            queue.push_back(target);
            while let Some(u) = queue.pop_front() {
                for &(_, v) in &adj[u] {
                    if dist[v] == u32::MAX {
                        dist[v] = dist[u] + 1;
                        queue.push_back(v);
                    }
                }
            }
            for s in 0..n {
                if !is_switch[s] || s == target {
                    continue;
                }
                if dist[s] == u32::MAX {
                    if edge_nodes.contains(&s) {
                        return Err((s, target));
                    }
                    continue;
                }
                let start = ports.len() as u32;
                for &(p, v) in &adj[s] {
                    if dist[v] + 1 == dist[s] {
                        ports.push(p);
                    }
                }
                slots[s * edges + e] = (start, ports.len() as u32 - start);
            }
        }
        Ok(Self {
            edges,
            slots,
            ports,
        })
    }

    /// Equal-cost next hops of switch `node` toward edge switch `edge`.
    #[inline]
    pub(crate) fn next_hops(&self, node: usize, edge: usize) -> &[PortId] {
        let (s, l) = self.slots[node * self.edges + edge];
        &self.ports[s as usize..(s + l) as usize]
    }
}

/// The ECMP choice among `fanout` next hops at `node` for flow key `key`.
#[inline]
pub(crate) fn ecmp_pick(key: u64, node: usize, fanout: usize) -> usize {
    (splitmix(key ^ splitmix(node as u64 + 1)) % fanout as u64) as usize
}
