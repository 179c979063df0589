//! Two endpoints over one simulated link.

use dcsim_engine::{RngTree, Scheduler, Time};
use dcsim_net::qdisc::QdiscSpec;
use dcsim_net::topo::{DumbbellSpec, LinkSpec};
use dcsim_net::{
    FlowId, HostId, NetCx, NetEvent, Network, Packet, PacketPool, RoutingMode, RoutingSpec,
    Telemetry, TopologySpec,
};
use dcsim_transport::{
    EndpointCx, FlowCx, FlowEvent, FlowInfo, FlowShared, Receiver, Sender, Side,
};

/// A packet that reached a host.
#[derive(Clone, Copy, Debug)]
pub struct Delivery {
    /// When it arrived.
    pub at: Time,
    /// Whether it reached the receiver (else the sender).
    pub to_receiver: bool,
    /// The packet as it arrived.
    pub packet: Packet,
}

/// What a [`LinkPair`] run produced.
pub struct PairRun<Tx, Rx> {
    /// The sender after the run.
    pub tx: Tx,
    /// The receiver after the run.
    pub rx: Rx,
    /// What both ends shared at the end.
    pub shared: FlowShared,
    /// When the receiver first held every byte.
    pub completed_at: Option<Time>,
    /// Every packet that reached a host, in order.
    pub deliveries: Vec<Delivery>,
    /// The time the run ended (all done, or the limit).
    pub end: Time,
    /// Timer events that were stale.
    pub stale_timers: u64,
    /// The network after the run (for port counters).
    pub net: Network,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    Net(NetEvent),
    Flow(FlowEvent),
}
impl From<NetEvent> for Ev {
    fn from(e: NetEvent) -> Self {
        Self::Net(e)
    }
}
impl From<FlowEvent> for Ev {
    fn from(e: FlowEvent) -> Self {
        Self::Flow(e)
    }
}

/// One flow from host 0 to host 1 of a one-pair dumbbell: host 0 — left switch — right
/// switch — host 1. The host links and the bottleneck are set separately, every switch
/// port runs the same discipline, host NICs are drop-tail.
///
/// ```
/// use dcsim_engine::{RngTree, Time};
/// use dcsim_net::topo::LinkSpec;
/// use dcsim_testkit::LinkPair;
/// use dcsim_transport::{TcpConfig, Transport, tcp::Tcp};
///
/// let setup = LinkPair::new(LinkSpec::new(10, 1), LinkSpec::new(10, 1));
/// let cfg = TcpConfig::default();
/// let run = setup.run(Some(100_000), Time::from_dur(dcsim_engine::Dur::from_ms(10)), |info| {
///     Tcp::open(&cfg, info, &RngTree::new(0))
/// });
/// assert!(run.completed_at.is_some());
/// ```
#[derive(Clone, Debug)]
pub struct LinkPair {
    /// Host links (both hosts).
    pub host_link: LinkSpec,
    /// The switch-to-switch link.
    pub bottleneck: LinkSpec,
    /// Discipline of every switch port (default: drop-tail, 1000 packets).
    pub queue: QdiscSpec,
    /// Header fields the network fills in.
    pub telemetry: Telemetry,
    /// Time after which the sender stops, if any.
    pub stop: Option<Time>,
    /// Data packets lost on their first crossing, by sequence number (a packet that
    /// carries payload and whose `seq` is listed is dropped before the receiver the first
    /// time it arrives; a retransmission gets through).
    pub drop_first: Vec<u64>,
}

impl LinkPair {
    /// Host links and bottleneck as given, drop-tail switch ports of 1,000 packets.
    pub fn new(host_link: LinkSpec, bottleneck: LinkSpec) -> Self {
        Self {
            host_link,
            bottleneck,
            queue: QdiscSpec::DropTail(dcsim_net::qdisc::DropTailConfig {
                buffer: dcsim_net::qdisc::Amount::Packets(1000),
            }),
            telemetry: Telemetry::empty(),
            stop: None,
            drop_first: Vec::new(),
        }
    }

    /// The same set-up, losing the data packets with these sequence numbers on their first
    /// crossing ([`LinkPair::drop_first`]).
    pub fn dropping(mut self, seqs: impl IntoIterator<Item = u64>) -> Self {
        self.drop_first = seqs.into_iter().collect();
        self
    }

    /// The same set-up with `queue` on every switch port.
    pub fn with_queue(self, queue: QdiscSpec) -> Self {
        Self { queue, ..self }
    }

    /// The same set-up with these header fields filled in by the network.
    pub fn with_telemetry(self, telemetry: Telemetry) -> Self {
        Self { telemetry, ..self }
    }

    /// Runs one flow of `size_bytes` (`None`: long-lived) until the receiver holds every
    /// byte and both ends are idle, or until `until`. `open` builds the two ends from the
    /// flow's description (routes, link rates, what the network measures).
    ///
    /// # Panics
    /// If the set-up does not build (a zero rate), or the endpoints misbehave (a packet of
    /// the flow freed twice).
    pub fn run<Tx, Rx, H>(
        &self,
        size_bytes: Option<u64>,
        until: Time,
        open: impl FnOnce(&FlowInfo) -> (Tx, Rx),
    ) -> PairRun<Tx, Rx>
    where
        Tx: Sender<Host = H>,
        Rx: Receiver<Host = H>,
        H: Default,
    {
        let graph = TopologySpec::Dumbbell(DumbbellSpec {
            pairs: Some(1),
            host_link: Some(self.host_link),
            bottleneck: Some(self.bottleneck),
        })
        .build()
        .expect("a one-pair dumbbell builds");
        let rng = RngTree::new(0);
        let nic = QdiscSpec::DropTail(dcsim_net::qdisc::DropTailConfig {
            buffer: dcsim_net::qdisc::Amount::Packets(1000),
        });
        let mut net = Network::new(
            &graph,
            RoutingSpec {
                mode: RoutingMode::SymmetricEcmp,
                salt: 0,
            },
            |p| {
                let spec = if p.on_host { &nic } else { &self.queue };
                spec.build(&rng, u64::from(p.id.0), p.rate)
            },
        )
        .expect("a one-pair dumbbell builds");
        net.enable(self.telemetry);
        let (src, dst) = (HostId(0), HostId(1));
        let (fwd, rev) = net.flow_routes(0, src, dst);
        let flow = FlowId(0);
        let info = FlowInfo {
            flow,
            src,
            dst,
            fwd,
            rev,
            size_bytes,
            stop: self.stop,
            src_link: self.host_link.rate,
            dst_link: self.host_link.rate,
            telemetry: net.telemetry(),
        };
        let (mut tx, mut rx) = open(&info);
        let mut shared = FlowShared {
            limit_bytes: size_bytes.unwrap_or(u64::MAX),
            grant: None,
        };
        let mut pool = PacketPool::new();
        let mut sched: Scheduler<Ev> = Scheduler::new();
        let mut stale = 0;
        // The transport's state on host 0 (the sender's) and host 1.
        let mut hosts = [H::default(), H::default()];
        let mut deliveries = Vec::new();
        let mut completed_at = None;
        let mut drops = self.drop_first.clone();
        {
            let mut fcx = FlowCx {
                now: Time::ZERO,
                pool: &mut pool,
                net: &mut net,
                sched: &mut sched,
            };
            let mut cx = EndpointCx::new(
                &mut fcx,
                src,
                flow,
                Side::Sender,
                &mut stale,
                &mut shared,
                &mut hosts[0],
            );
            tx.on_start(&mut cx);
        }
        let mut end = Time::ZERO;
        while let Some((now, ev)) = sched.pop_until(until) {
            end = now;
            let mut fcx = FlowCx {
                now,
                pool: &mut pool,
                net: &mut net,
                sched: &mut sched,
            };
            match ev {
                Ev::Net(NetEvent::LinkArrive(port, _)) => {
                    let mut ncx = NetCx {
                        now,
                        pool: fcx.pool,
                        sched: fcx.sched,
                    };
                    let Some((host, pkt)) = fcx.net.on_link_arrive(port, &mut ncx) else {
                        continue;
                    };
                    let p = *fcx.pool.get(pkt);
                    let ext = fcx.pool.ext(pkt).copied();
                    fcx.pool.free(pkt);
                    let to_receiver = host == dst;
                    if to_receiver
                        && p.payload_bytes > 0
                        && let Some(i) = drops.iter().position(|&s| s == p.seq)
                    {
                        drops.swap_remove(i);
                        continue;
                    }
                    deliveries.push(Delivery {
                        at: now,
                        to_receiver,
                        packet: p,
                    });
                    let side = if to_receiver {
                        Side::Receiver
                    } else {
                        Side::Sender
                    };
                    let mut cx = EndpointCx::new(
                        &mut fcx,
                        host,
                        flow,
                        side,
                        &mut stale,
                        &mut shared,
                        &mut hosts[host.index()],
                    );
                    cx.set_packet_ext(ext.as_ref());
                    if to_receiver {
                        rx.on_packet(&p, &mut cx);
                    } else {
                        tx.on_packet(&p, &mut cx);
                    }
                }
                Ev::Net(NetEvent::PortReady(port)) => {
                    let mut ncx = NetCx {
                        now,
                        pool: fcx.pool,
                        sched: fcx.sched,
                    };
                    if fcx.net.on_port_ready(port, &mut ncx).is_some() {
                        let mut cx = EndpointCx::new(
                            &mut fcx,
                            src,
                            flow,
                            Side::Sender,
                            &mut stale,
                            &mut shared,
                            &mut hosts[0],
                        );
                        tx.on_nic_ready(&mut cx);
                    }
                }
                Ev::Flow(FlowEvent::Timer(_, key, generation)) => {
                    let side = key.side();
                    let host = if side == Side::Sender { src } else { dst };
                    let mut cx = EndpointCx::new(
                        &mut fcx,
                        host,
                        flow,
                        side,
                        &mut stale,
                        &mut shared,
                        &mut hosts[host.index()],
                    );
                    match side {
                        Side::Sender => tx.on_timer(key.kind(), generation, &mut cx),
                        Side::Receiver => rx.on_timer(key.kind(), generation, &mut cx),
                    }
                }
                Ev::Flow(FlowEvent::Start(_)) => {}
            }
            if completed_at.is_none() && rx.is_complete() {
                completed_at = Some(now);
            }
            if completed_at.is_some() && tx.is_done() && rx.is_idle() {
                break;
            }
        }
        PairRun {
            tx,
            rx,
            shared,
            completed_at,
            deliveries,
            end,
            stale_timers: stale,
            net,
        }
    }
}
