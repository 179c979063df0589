//! The network as a whole: the [`Network`] that owns every node, port and route, how it is
//! built from a topology [`Graph`], and its accessors.

use dcsim_engine::{Dur, Rate, RngTree, Time};

use crate::cross::Crossings;
use crate::qdisc::{self, Qdisc};
use crate::route::{Fib, RouteTable};
use crate::rules::MarkRules;
use crate::{
    DEFAULT_TX_BUDGET_BYTES, FlowId, Graph, HostId, NodeId, NodeKind, Packet, PacketPool, Port,
    PortId, PortInfo, PortNoise, RoutingMode, RoutingSpec, Telemetry,
};

/// A host or switch, as the network keeps it.
pub(crate) struct Node {
    name: String,
    pub(crate) kind: NodeKind,
    tier: &'static str,
    /// For hosts: the edge switch index; for switches that have hosts: their edge index.
    pub(crate) edge: u32,
}

/// What every port of a noisy network does besides serializing ([`Network::with_jitter`]):
/// how late it hands each packet on, and whether it releases each packet whole when its
/// transmission starts, as an emulator's software shaper does.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shaper {
    /// How late each packet is handed on.
    pub jitter: Lateness,
    /// Each packet reaches the far end a propagation delay after its transmission
    /// started, not after its last bit.
    pub release_at_start: bool,
}

/// How late a noisy port hands each packet on ([`crate::PortNoise`]), drawn for each packet.
#[derive(Clone, Debug, PartialEq)]
pub enum Lateness {
    /// Uniform in [0, the duration].
    Uniform(Dur),
    /// A measured distribution, as points (probability, lateness) of its inverse
    /// cumulative distribution, linear between them: probabilities rise from 0 to 1,
    /// latenesses do not fall ([`Lateness::check`]).
    Quantiles(std::sync::Arc<[(f64, Dur)]>),
}

impl Default for Lateness {
    fn default() -> Self {
        Self::Uniform(Dur::ZERO)
    }
}

impl Lateness {
    /// Whether every packet is on time.
    pub fn is_zero(&self) -> bool {
        match self {
            Self::Uniform(d) => *d == Dur::ZERO,
            Self::Quantiles(q) => q.iter().all(|&(_, d)| d == Dur::ZERO),
        }
    }

    /// What is wrong with a distribution's points, if anything.
    pub fn check(points: &[(f64, Dur)]) -> Result<(), String> {
        if points.len() < 2 {
            return Err(format!("needs at least 2 points, has {}", points.len()));
        }
        let (first, last) = (points[0].0, points[points.len() - 1].0);
        // Exact by definition: the distribution starts at probability 0 and ends at 1.
        #[allow(clippy::float_cmp)]
        if first != 0.0 || last != 1.0 {
            return Err(format!(
                "its probabilities must run from 0 to 1, not {first} to {last}"
            ));
        }
        for (i, w) in points.windows(2).enumerate() {
            // (NaN fails too.)
            if w[1].0.partial_cmp(&w[0].0) != Some(std::cmp::Ordering::Greater) {
                return Err(format!(
                    "probabilities must rise: point {} ({}) after {}",
                    i + 1,
                    w[1].0,
                    w[0].0
                ));
            }
            if w[1].1 < w[0].1 {
                return Err(format!(
                    "latenesses must not fall: point {} ({}) after {}",
                    i + 1,
                    w[1].1,
                    w[0].1
                ));
            }
        }
        Ok(())
    }
}

/// The built network: nodes, ports, routes. Owned by the world; no global state.
pub struct Network {
    pub(crate) ports: Vec<Port>,
    pub(crate) nodes: Vec<Node>,
    pub(crate) hosts: Vec<NodeId>,
    pub(crate) nic: Vec<PortId>,
    /// The edge switch's port toward each host.
    pub(crate) down: Vec<PortId>,
    pub(crate) fib: Fib,
    pub(crate) routes: RouteTable,
    pub(crate) spray_next: Vec<u32>,
    pub(crate) mode: RoutingMode,
    pub(crate) salt: u64,
    pub(crate) hops: u64,
    pub(crate) tx_budget: u64,
    pub(crate) nic_waiting: Vec<bool>,
    /// Of a waiting host: the NIC backlog at which it is woken.
    pub(crate) nic_wake: Vec<u64>,
    telemetry: Telemetry,
    /// Flow-matching CE-marking rules installed by a controller.
    pub(crate) rules: MarkRules,
    /// Packets that crossed a tapped link, not yet taken ([`Network::take_captured`]).
    pub(crate) captured: Vec<Captured>,
    /// The links between the parts of a split run.
    pub(crate) crossings: Crossings,
}

/// A copy of a packet as it crossed a tapped link ([`Network::tap`]): the header as the
/// port sent it, before the next node touched it.
#[derive(Clone, Copy, Debug)]
pub struct Captured {
    /// The port whose link the packet crossed.
    pub port: PortId,
    /// When its last bit reached the far end (the whole packet, from a port that releases
    /// packets at the start).
    pub at: Time,
    /// The packet.
    pub pkt: Packet,
}

/// A network that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A host is not attached to exactly one switch.
    #[error("host {0} must have exactly one link, to a switch")]
    HostLinks(usize),
    /// Two hosts cannot reach each other.
    #[error("{0} cannot reach {1}: the topology is not connected")]
    Disconnected(String, String),
    /// A link has zero rate.
    #[error("link {0} -- {1}: rate must be greater than zero")]
    ZeroRate(String, String),
}

impl Network {
    /// Builds the network of `graph`; `qdisc_for` chooses each port's queue discipline.
    pub fn new(
        graph: &Graph,
        routing: RoutingSpec,
        qdisc_for: impl FnMut(&PortInfo<'_>) -> Qdisc,
    ) -> Result<Self, BuildError> {
        Self::with_jitter(graph, routing, None, qdisc_for)
    }

    /// [`Network::new`] with timing noise on every port: with `shaper = Some((s, rng))`,
    /// each port hands each packet on late by a time drawn from `s.jitter`, and with
    /// `s.release_at_start` hands each packet on whole when its transmission starts (see
    /// [`crate::PortNoise`]), drawing from its own stream of `rng` (`"port-jitter"`, the
    /// port's index).
    pub fn with_jitter(
        graph: &Graph,
        routing: RoutingSpec,
        shaper: Option<(Shaper, &RngTree)>,
        mut qdisc_for: impl FnMut(&PortInfo<'_>) -> Qdisc,
    ) -> Result<Self, BuildError> {
        let host_of_node: Vec<Option<HostId>> = {
            let mut v = vec![None; graph.nodes.len()];
            for (h, &n) in graph.hosts.iter().enumerate() {
                v[n] = Some(HostId::new(h));
            }
            v
        };
        let mut nodes: Vec<Node> = graph
            .nodes
            .iter()
            .map(|n| Node {
                name: n.name.clone(),
                kind: n.kind,
                tier: n.tier,
                edge: u32::MAX,
            })
            .collect();
        let mut ports = Vec::with_capacity(graph.links.len() * 2);
        let mut adj: Vec<Vec<(PortId, usize)>> = vec![Vec::new(); nodes.len()];
        let mut host_ports: Vec<Vec<PortId>> = vec![Vec::new(); graph.hosts.len()];
        for l in &graph.links {
            if l.rate == Rate::ZERO {
                return Err(BuildError::ZeroRate(
                    nodes[l.a].name.clone(),
                    nodes[l.b].name.clone(),
                ));
            }
            let pa = PortId::new(ports.len());
            let pb = PortId::new(ports.len() + 1);
            for (id, from, to, delay) in [(pa, l.a, l.b, l.delay_ab), (pb, l.b, l.a, l.delay_ba)] {
                let info = PortInfo {
                    id,
                    on_host: nodes[from].kind == NodeKind::Host,
                    tier: nodes[from].tier,
                    peer_tier: nodes[to].tier,
                    rate: l.rate,
                };
                let port = Port::new(
                    qdisc_for(&info),
                    l.rate,
                    delay,
                    NodeId::new(from),
                    NodeId::new(to),
                    host_of_node[to],
                    shaper.as_ref().map(|(shaper, rng)| {
                        let rng = rng.stream("port-jitter", u64::from(id.0));
                        let noise = match &shaper.jitter {
                            Lateness::Uniform(max) => PortNoise::new(*max, rng),
                            Lateness::Quantiles(q) => PortNoise::with_quantiles(q, rng),
                        };
                        if shaper.release_at_start {
                            noise.released_at_start()
                        } else {
                            noise
                        }
                    }),
                );
                debug_assert_eq!(id.reverse(), if id == pa { pb } else { pa });
                ports.push(port);
                if nodes[to].kind == NodeKind::Switch && nodes[from].kind == NodeKind::Switch {
                    adj[from].push((id, to));
                }
                if let Some(h) = host_of_node[from] {
                    host_ports[h.index()].push(id);
                }
            }
        }
        let mut nic = Vec::with_capacity(graph.hosts.len());
        let mut down = Vec::with_capacity(graph.hosts.len());
        let mut edge_nodes: Vec<usize> = Vec::new();
        for (h, ps) in host_ports.iter().enumerate() {
            let [p] = ps[..] else {
                return Err(BuildError::HostLinks(h));
            };
            let sw = ports[p.index()].peer_node.index();
            if nodes[sw].kind != NodeKind::Switch {
                return Err(BuildError::HostLinks(h));
            }
            if nodes[sw].edge == u32::MAX {
                nodes[sw].edge = edge_nodes.len() as u32;
                edge_nodes.push(sw);
            }
            nodes[graph.hosts[h]].edge = nodes[sw].edge;
            nic.push(p);
            ports[p.index()].set_from_host(HostId::new(h));
            down.push(p.reverse());
        }
        let is_switch: Vec<bool> = nodes.iter().map(|n| n.kind == NodeKind::Switch).collect();
        let fib = Fib::build(&adj, &edge_nodes, &is_switch).map_err(|(a, b)| {
            BuildError::Disconnected(nodes[a].name.clone(), nodes[b].name.clone())
        })?;
        let n = nodes.len();
        Ok(Self {
            rules: MarkRules::new(ports.len()),
            ports,
            nodes,
            hosts: graph.hosts.iter().map(|&n| NodeId::new(n)).collect(),
            nic,
            down,
            fib,
            routes: RouteTable::default(),
            spray_next: vec![0; n],
            mode: routing.mode,
            salt: routing.salt,
            hops: 0,
            tx_budget: DEFAULT_TX_BUDGET_BYTES,
            nic_waiting: vec![false; graph.hosts.len()],
            nic_wake: vec![DEFAULT_TX_BUDGET_BYTES / 2; graph.hosts.len()],
            telemetry: Telemetry::empty(),
            captured: Vec::new(),
            crossings: Crossings::default(),
        })
    }

    /// Builds with the same discipline spec on every port (tests, examples).
    pub fn uniform(
        graph: &Graph,
        routing: RoutingSpec,
        spec: &qdisc::QdiscSpec,
        rng: &RngTree,
    ) -> Result<Self, BuildError> {
        Self::new(graph, routing, |p| {
            spec.build(rng, u64::from(p.id.0), p.rate)
        })
    }

    /// Installs (or refreshes) a rule at switch port `port` that sets CE on the ECN-capable
    /// packets of `flow` leaving through it, from `now` until its hard timeout `hard` or
    /// until no packet has matched for `idle` (see [`crate::rules`]).
    pub fn install_mark_rule(
        &mut self,
        port: PortId,
        flow: FlowId,
        now: Time,
        hard: Option<Dur>,
        idle: Option<Dur>,
    ) {
        self.rules.install(port, flow, now, hard, idle);
    }

    /// Makes the network keep a copy of every packet that crosses the link of port `p`
    /// (for packet traces), to be taken with [`Network::take_captured`]. The copy is made
    /// when the packet reaches the far end, before the next node forwards or consumes it.
    /// Untapped links cost one predictable branch per hop.
    pub fn tap(&mut self, p: PortId) {
        self.ports[p.index()].marks |= Port::TAPPED;
    }

    /// The packets captured at tapped links since the last call, in order of arrival; the
    /// caller empties the vector (its capacity is kept, so capturing allocates nothing
    /// once it has grown).
    pub fn take_captured(&mut self) -> &mut Vec<Captured> {
        &mut self.captured
    }

    /// The marking rules and their counters.
    pub fn mark_rules(&self) -> &MarkRules {
        &self.rules
    }

    /// Number of nodes, hosts and switches.
    pub fn num_nodes(&self) -> usize {
        self.nodes.len()
    }
    /// Number of hosts.
    pub fn num_hosts(&self) -> usize {
        self.hosts.len()
    }
    /// All ports.
    pub fn ports(&self) -> &[Port] {
        &self.ports
    }
    /// Port `p`.
    pub fn port(&self, p: PortId) -> &Port {
        &self.ports[p.index()]
    }
    /// Port `p`, mutably (for measurement windows).
    pub fn port_mut(&mut self, p: PortId) -> &mut Port {
        &mut self.ports[p.index()]
    }
    /// Name of node `n`.
    pub fn node_name(&self, n: NodeId) -> &str {
        &self.nodes[n.index()].name
    }
    /// The node named `name` (a linear search, for set-up code).
    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .map(NodeId::new)
    }
    /// Tier of node `n`.
    pub fn node_tier(&self, n: NodeId) -> &'static str {
        self.nodes[n.index()].tier
    }
    /// Whether node `n` is a switch.
    pub fn is_switch(&self, n: NodeId) -> bool {
        self.nodes[n.index()].kind == NodeKind::Switch
    }
    /// The NIC port of host `h`.
    pub fn nic(&self, h: HostId) -> PortId {
        self.nic[h.index()]
    }
    /// The port of host `h`'s edge switch toward `h` (the last hop of every packet `h`
    /// receives).
    pub fn host_downlink(&self, h: HostId) -> PortId {
        self.down[h.index()]
    }
    /// The node of host `h`.
    pub fn host_node(&self, h: HostId) -> NodeId {
        self.hosts[h.index()]
    }

    /// The header fields the network fills in.
    pub fn telemetry(&self) -> Telemetry {
        self.telemetry
    }

    /// Turns on the header fields in `t` (see [`Telemetry`]).
    pub fn enable(&mut self, t: Telemetry) {
        self.telemetry |= t;
        if t.contains(Telemetry::QUEUE_DELAY) {
            for p in self.ports.iter_mut().filter(|p| p.from_host().is_none()) {
                p.measure_queue_delay();
            }
        }
    }

    /// The routing mode.
    pub fn routing_mode(&self) -> RoutingMode {
        self.mode
    }
    /// Packet-hops so far: packets (of any class) that crossed a link.
    pub fn hops(&self) -> u64 {
        self.hops
    }
    /// Takes over from `other`, a copy of this network that ran another part of a split
    /// run, the ports `owned` chooses (the ports of that part's nodes: their queues, links
    /// and counters), and adds its packet-hops. Both networks must be built from one
    /// graph.
    pub fn take_ports_from(&mut self, other: &mut Self, mut owned: impl FnMut(PortId) -> bool) {
        assert_eq!(
            self.ports.len(),
            other.ports.len(),
            "networks of different graphs"
        );
        for (i, (mine, theirs)) in self.ports.iter_mut().zip(&mut other.ports).enumerate() {
            if owned(PortId::new(i)) {
                std::mem::swap(mine, theirs);
            }
        }
        self.hops += other.hops;
    }
    /// Memory held by interned routes, in port entries.
    pub fn route_entries(&self) -> usize {
        self.routes.len()
    }

    /// Packets in queues or on links (for conservation checks).
    pub fn packets_inside(&self) -> u64 {
        self.ports.iter().map(Port::packets_inside).sum()
    }

    /// The backlog of port `p` at `now`, in wire bytes (brings a FIFO port up to date).
    pub fn backlog_bytes_at(&mut self, p: PortId, now: Time, pool: &mut PacketPool) -> u64 {
        let port = &mut self.ports[p.index()];
        port.settle(now, pool);
        port.backlog_bytes()
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use dcsim_engine::RngTree;

    use crate::qdisc::{Amount, DropTailConfig, QdiscSpec};
    use crate::{Network, RoutingMode, RoutingSpec, TopologySpec};

    /// The network of `spec` with 100-packet drop-tail queues on every port (for the tests
    /// of forwarding and routing).
    pub(crate) fn net(spec: TopologySpec, mode: RoutingMode) -> Network {
        let g = spec.build().unwrap();
        let q = QdiscSpec::DropTail(DropTailConfig {
            buffer: Amount::Packets(100),
        });
        Network::uniform(&g, RoutingSpec { mode, salt: 0 }, &q, &RngTree::new(0)).unwrap()
    }
}
