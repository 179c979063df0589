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

use dcsim_engine::{Dur, Rate, splitmix};
use serde::{Deserialize, Serialize};

use crate::{HostId, Network, NodeId, NodeKind, PortId};

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

impl Network {
    /// The ports of `route`, from the source NIC onward.
    pub fn path(&self, route: RouteId) -> &[PortId] {
        self.routes.path(route)
    }

    /// Routes for a flow from `src` to `dst` with ECMP key `flow_key`: (forward, reverse).
    /// With spraying both are [`RouteId::NONE`] and packets are forwarded hop by hop; use
    /// [`Network::ecmp_route`] for a representative path.
    pub fn flow_routes(&mut self, flow_key: u64, src: HostId, dst: HostId) -> (RouteId, RouteId) {
        match self.mode {
            RoutingMode::Spray => (RouteId::NONE, RouteId::NONE),
            RoutingMode::SymmetricEcmp => {
                let fwd = self.ecmp_route(flow_key, src, dst);
                let rev: Vec<PortId> = self
                    .routes
                    .path(fwd)
                    .iter()
                    .rev()
                    .map(|p| p.reverse())
                    .collect();
                (fwd, self.routes.intern(&rev))
            }
            RoutingMode::Ecmp => {
                let fwd = self.ecmp_route(flow_key, src, dst);
                (
                    fwd,
                    self.ecmp_route(splitmix(flow_key ^ 0x0072_6576_6572_7365), dst, src),
                )
            }
        }
    }

    /// Whether `rev` crosses exactly the links of `fwd`, in reverse order and direction.
    pub fn is_reverse(&self, fwd: RouteId, rev: RouteId) -> bool {
        if fwd == RouteId::NONE || rev == RouteId::NONE {
            return false;
        }
        let (f, r) = (self.routes.path(fwd), self.routes.path(rev));
        f.len() == r.len() && f.iter().zip(r.iter().rev()).all(|(a, b)| a.reverse() == *b)
    }

    /// The per-flow ECMP route from `src` to `dst` for key `flow_key`.
    pub fn ecmp_route(&mut self, flow_key: u64, src: HostId, dst: HostId) -> RouteId {
        let key = splitmix(flow_key ^ splitmix(self.salt));
        let mut path = vec![self.nic[src.index()]];
        let target = self.nodes[self.hosts[dst.index()].index()].edge as usize;
        let mut at = self.ports[self.nic[src.index()].index()].peer_node.index();
        while self.nodes[at].edge as usize != target || self.nodes[at].kind != NodeKind::Switch {
            let hops = self.fib.next_hops(at, target);
            let p = hops[ecmp_pick(key, at, hops.len())];
            path.push(p);
            at = self.ports[p.index()].peer_node.index();
        }
        path.push(self.down[dst.index()]);
        self.routes.intern(&path)
    }

    /// The route from `src` to `dst` through switch `via`, which must be a neighbour of
    /// `src`'s edge switch (a spine of a leaf-spine fabric, for senders that choose each
    /// packet's path, like Fastpass); from `via` on, the first equal-cost next hop at each
    /// switch. `None` if `via` is not next to `src`'s edge switch or cannot reach `dst`
    /// from there. Interning hashes the path: callers on the packet path keep the result.
    pub fn route_via(&mut self, src: HostId, dst: HostId, via: NodeId) -> Option<RouteId> {
        let nic = self.nic[src.index()];
        let edge = self.ports[nic.index()].peer_node;
        let up = self
            .ports
            .iter()
            .position(|p| p.node == edge && p.peer_node == via)?;
        let mut path = vec![nic, PortId::new(up)];
        let target = self.nodes[self.hosts[dst.index()].index()].edge as usize;
        let mut at = via.index();
        let mut hops = 0;
        while self.nodes[at].edge as usize != target || self.nodes[at].kind != NodeKind::Switch {
            let next = *self.fib.next_hops(at, target).first()?;
            path.push(next);
            at = self.ports[next.index()].peer_node.index();
            hops += 1;
            if hops > self.nodes.len() {
                return None;
            }
        }
        path.push(self.down[dst.index()]);
        Some(self.routes.intern(&path))
    }

    /// The egress ports of `route`, in order (the first is the source host's NIC).
    pub fn route_ports(&self, route: RouteId) -> &[PortId] {
        self.routes.path(route)
    }

    /// Rate and delay of each link along `route` (for unloaded completion times).
    pub fn path_links(&self, route: RouteId) -> impl Iterator<Item = (Rate, Dur)> + '_ {
        self.routes
            .path(route)
            .iter()
            .map(|p| (self.ports[p.index()].rate, self.ports[p.index()].delay))
    }
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

    /// The entry at hop `hop` of route `id`, if the table has one there (for a prefetch
    /// hint, which may read past the end of a route).
    #[inline]
    pub(crate) fn get(&self, id: RouteId, hop: u8) -> Option<PortId> {
        self.ports.get(id.index() + usize::from(hop)).copied()
    }

    /// Number of stored port entries (memory use).
    pub(crate) fn len(&self) -> usize {
        self.ports.len()
    }
}

/// Next hops of every switch toward every edge switch.
///
/// A switch's next hops toward most edge switches are one of a few lists (a ToR's up-links
/// toward every other rack, one down-link toward each of its pod's), so each distinct list
/// of a switch is stored once and the `switches × edge switches` slots point into them: 8 B
/// a slot, about 0.5 GB for a k = 100 fat-tree (whose lists, stored per slot, took about
/// 10 GB).
pub(crate) struct Fib {
    edges: usize,
    /// Each node's row of `slots` (`u32::MAX` for a host).
    row: Vec<u32>,
    /// `(start, len)` into `ports`, indexed by `row · edges + edge`.
    slots: Vec<(u32, u32)>,
    ports: Vec<PortId>,
}

/// Bytes the table takes per (switch, edge switch) slot: what a topology's memory estimate
/// counts (the shared lists are a few per switch).
pub const FIB_SLOT_BYTES: u64 = 8;

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
        let mut row = vec![u32::MAX; n];
        let mut switches = 0usize;
        for (r, _) in row.iter_mut().zip(is_switch).filter(|(_, s)| **s) {
            *r = u32::try_from(switches).expect("fewer than 2^32 switches");
            switches += 1;
        }
        let mut slots = vec![(0, 0); switches * edges];
        let mut ports = Vec::new();
        // Per switch, the lists it has stored (list -> start in `ports`).
        let mut known: Vec<HashMap<Box<[PortId]>, u32>> = vec![HashMap::new(); switches];
        let mut hops: Vec<PortId> = Vec::new();
        let mut last = vec![(0u32, 0u32); switches];
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
                hops.clear();
                hops.extend(
                    adj[s]
                        .iter()
                        .filter(|&&(_, v)| dist[v] + 1 == dist[s])
                        .map(|&(p, _)| p),
                );
                let r = row[s] as usize;
                // Most often the list of the previous edge switch again: no hashing then.
                let (ls, ll) = last[r];
                let start = if ports[ls as usize..(ls + ll) as usize] == hops[..] {
                    ls
                } else if let Some(&start) = known[r].get(hops.as_slice()) {
                    start
                } else {
                    let start = u32::try_from(ports.len()).expect("fewer than 2^32 next hops");
                    ports.extend_from_slice(&hops);
                    known[r].insert(hops.as_slice().into(), start);
                    start
                };
                last[r] = (start, hops.len() as u32);
                slots[r * edges + e] = last[r];
            }
        }
        Ok(Self {
            edges,
            row,
            slots,
            ports,
        })
    }

    /// Equal-cost next hops of switch `node` toward edge switch `edge`.
    #[inline]
    pub(crate) fn next_hops(&self, node: usize, edge: usize) -> &[PortId] {
        let (s, l) = self.slots[self.row[node] as usize * self.edges + edge];
        &self.ports[s as usize..(s + l) as usize]
    }
}

/// The ECMP choice among `fanout` next hops at `node` for flow key `key`.
#[inline]
pub(crate) fn ecmp_pick(key: u64, node: usize, fanout: usize) -> usize {
    (splitmix(key ^ splitmix(node as u64 + 1)) % fanout as u64) as usize
}

#[cfg(test)]
mod tests {
    use crate::network::tests::net;
    use crate::topo::FatTreeSpec;
    use crate::{HostId, RoutingMode, TopologySpec};

    /// A switch's next-hop lists are stored once however many edge switches share them: in
    /// the ExpressPass fat-tree (56 switches, 32 of them edge switches) the 1,792 slots
    /// name 4,096 next hops, which a list per slot stored one by one; shared, 256.
    #[test]
    fn next_hop_lists_are_stored_once_per_switch() {
        let n = net(
            TopologySpec::FatTree(FatTreeSpec::default()),
            RoutingMode::Ecmp,
        );
        let slots = n.fib.slots.len();
        let stored = n.fib.ports.len();
        let per_slot: usize = n.fib.slots.iter().map(|&(_, l)| l as usize).sum();
        assert_eq!((slots, per_slot, stored), (56 * 32, 4096, 256));
    }

    #[test]
    fn symmetric_routes_reverse_the_forward_links_in_a_fat_tree() {
        let mut n = net(
            TopologySpec::FatTree(FatTreeSpec::default()),
            RoutingMode::SymmetricEcmp,
        );
        let mut cores_used = std::collections::BTreeSet::new();
        for f in 0..200u64 {
            let (src, dst) = (HostId(0), HostId(191));
            let (fwd, rev) = n.flow_routes(f, src, dst);
            let fp = n.path(fwd).to_vec();
            let rp = n.path(rev).to_vec();
            assert_eq!(fp.len(), 6, "inter-pod path crosses 6 links");
            for (a, b) in fp.iter().zip(rp.iter().rev()) {
                assert_eq!(a.reverse(), *b);
            }
            cores_used.insert(n.port(fp[2]).peer_node());
        }
        // ECMP spreads 200 flows over all 8 cores.
        assert_eq!(cores_used.len(), 8);
    }

    /// `route_via` goes up to the named spine and down to the destination's leaf; a node
    /// that is not next to the source's leaf gives `None`.
    #[test]
    fn route_via_crosses_the_chosen_spine() {
        use crate::topo::LeafSpineSpec;
        let mut n = net(
            TopologySpec::LeafSpine(LeafSpineSpec {
                leaves: Some(3),
                hosts_per_leaf: Some(2),
                spines: Some(4),
                ..LeafSpineSpec::default()
            }),
            RoutingMode::SymmetricEcmp,
        );
        for s in 0..4 {
            let spine = n.node_by_name(&format!("spine{s}")).unwrap();
            let r = n.route_via(HostId(0), HostId(5), spine).unwrap();
            let names: Vec<String> = n
                .path(r)
                .iter()
                .map(|p| n.node_name(n.port(*p).node()).to_string())
                .collect();
            assert_eq!(names, ["h0", "leaf0", &format!("spine{s}"), "leaf2"]);
            assert_eq!(
                n.port(*n.path(r).last().unwrap()).peer_node(),
                n.host_node(HostId(5))
            );
        }
        let other_leaf = n.node_by_name("leaf1").unwrap();
        assert_eq!(n.route_via(HostId(0), HostId(5), other_leaf), None);
    }
}
