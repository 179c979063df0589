//! The per-packet path: a packet offered to its sender's NIC, ports that finish
//! serializing, links that deliver, and switches that forward at once (by route or by
//! spraying).

use dcsim_engine::Schedule;

use crate::{Captured, HostId, NetCx, NetEvent, Network, PacketId, PacketPool, PortId, RouteId};

impl Network {
    /// Offers `pkt` to the NIC of host `src`. The transport has filled in the header,
    /// including `route` (or `dst` for hop-by-hop forwarding); a routed packet is given
    /// its first switch's egress port (`next`).
    #[inline]
    pub fn send<S: Schedule<NetEvent>>(
        &mut self,
        src: HostId,
        pkt: PacketId,
        cx: &mut NetCx<'_, S>,
    ) {
        let nic = self.nic[src.index()];
        let p = cx.pool.get_mut(pkt);
        p.hop = 0;
        debug_assert!(
            p.route == RouteId::NONE || self.routes.hop(p.route, 0) == nic,
            "route does not start at the sender's NIC"
        );
        if p.route != RouteId::NONE {
            p.next = self.routes.get(p.route, 1).unwrap_or(PortId::NONE);
        }
        self.enqueue(nic, pkt, cx);
    }

    #[inline]
    fn enqueue<S: Schedule<NetEvent>>(
        &mut self,
        port: PortId,
        pkt: PacketId,
        cx: &mut NetCx<'_, S>,
    ) {
        let p = &mut self.ports[port.index()];
        let s = p.enqueue(pkt, cx.now, cx.pool);
        if let Some(t) = s.ready_at {
            cx.sched.at(t, NetEvent::PortReady(port));
        }
        if p.crossing() {
            self.copy_out(port, cx);
        } else if let Some((t, head)) = s.arrive_at {
            cx.sched.at(t, NetEvent::LinkArrive(port, head));
        }
    }

    /// Handles [`NetEvent::PortReady`]. Returns a host whose NIC queue has drained enough
    /// for its waiting senders to continue (see [`Network::nic_room`]).
    #[inline]
    pub fn on_port_ready<S: Schedule<NetEvent>>(
        &mut self,
        port: PortId,
        cx: &mut NetCx<'_, S>,
    ) -> Option<HostId> {
        let p = &mut self.ports[port.index()];
        let s = p.on_ready(cx.now, cx.pool);
        if let Some(t) = s.ready_at {
            cx.sched.at(t, NetEvent::PortReady(port));
        }
        if p.crossing() {
            self.copy_out(port, cx);
            return None; // a link between parts leaves a switch, never a host
        } else if let Some((t, head)) = s.arrive_at {
            cx.sched.at(t, NetEvent::LinkArrive(port, head));
        }
        let h = p.from_host()?;
        if !self.nic_waiting[h.index()] {
            return None;
        }
        if p.backlog_bytes() <= self.nic_wake[h.index()] {
            self.nic_waiting[h.index()] = false;
            return Some(h);
        }
        // Packets joined the queue after the wake-up was planned (ACKs need no room).
        self.wake_when_drained(port, h, cx);
        None
    }

    /// Handles [`NetEvent::LinkArrive`]. A packet reaching a switch is forwarded at once;
    /// a packet reaching a host is returned for the transport.
    #[inline]
    pub fn on_link_arrive<S: Schedule<NetEvent>>(
        &mut self,
        port: PortId,
        cx: &mut NetCx<'_, S>,
    ) -> Option<(HostId, PacketId)> {
        let link = &mut self.ports[port.index()];
        let (pkt, next) = link.on_arrive(cx.now, cx.pool);
        if let Some((t, head)) = next {
            cx.sched.at(t, NetEvent::LinkArrive(port, head));
        } else if link.crossing() {
            // The next packet's arrival is this handler's to create, at this place, if the
            // copy of the packet is late (`Network::take_copy`).
            self.crossings.emptied(port, cx.now, cx.sched.reserve());
        }
        self.hops += 1;
        let (to_host, node) = (link.to_host, link.peer_node.index());
        if link.tapped() {
            self.captured.push(Captured {
                port,
                at: cx.now,
                pkt: *cx.pool.get(pkt),
            });
        }
        if let Some(h) = to_host {
            return Some((h, pkt));
        }
        let p = cx.pool.get_mut(pkt);
        p.hop += 1;
        let egress = if p.route == RouteId::NONE {
            let dst = p.dst.index();
            self.spray_next_hop(node, dst)
        } else {
            // The egress was looked up one hop ago (the packet's line is already here);
            // the next switch's is looked up now, off the path to the egress port. Past
            // the route's last switch the entry read is another route's and never used:
            // the last port leads to a host.
            let egress = p.next;
            debug_assert_eq!(egress, self.routes.hop(p.route, p.hop), "stale next hop");
            p.next = self.routes.get(p.route, p.hop + 1).unwrap_or(PortId::NONE);
            egress
        };
        debug_assert_eq!(
            self.ports[egress.index()].node.index(),
            node,
            "route leaves from the wrong node"
        );
        if self.rules.any() && self.rules.apply(egress, p, cx.now) {
            self.ports[egress.index()].stats.ecn_marks += 1;
        }
        self.enqueue(egress, pkt, cx);
        None
    }

    /// Starts loading the packet and the link end that a `LinkArrive` of `pkt` at `port`
    /// will touch, so that these loads overlap the handling of the current event. The
    /// event names the packet, so its load does not wait for the port's (ADR 0006).
    ///
    /// Prefetch instructions (ADR 0007), not loads: a load that misses holds up the
    /// retirement of everything after it until its data arrives, and an event's handling is
    /// longer than the processor's reorder window. Only the port's first line (the link
    /// FIFO's descriptor, to find the head entry) is a real load. Measured: plain loads of
    /// the packet and the head entry instead cost the k = 24 fat-tree about 11 % more time
    /// per hop; following the chain to the packet's route and next port (with loads) made
    /// the fat-tree benchmark 10 % slower, unless the first links of the chain were
    /// prefetched an event earlier ([`Network::prefetch_arrival_early`]).
    #[inline]
    pub fn prefetch_arrival(&self, port: PortId, pkt: PacketId, pool: &PacketPool) {
        self.ports[port.index()].prefetch_arrival();
        if let Some(p) = pool.peek(pkt) {
            dcsim_engine::prefetch::prefetch(p);
        }
    }

    /// The first step of a look-ahead two events deep: starts loading what a `LinkArrive`
    /// of `pkt` at `port`, the event after the next one, will touch (the packet and the
    /// port's first three lines: the link FIFO's descriptor, the far end, the counters),
    /// so that [`Network::prefetch_arrival_and_next_hop`] can read them one event later
    /// without waiting.
    #[inline]
    pub fn prefetch_arrival_early(&self, port: PortId, pkt: PacketId, pool: &PacketPool) {
        if let Some(p) = self.ports.get(port.index()) {
            p.prefetch_arrival_early();
        }
        if let Some(p) = pool.peek(pkt) {
            dcsim_engine::prefetch::prefetch(p);
        }
    }

    /// The second step of a look-ahead two events deep, for the next event, a `LinkArrive`
    /// of `pkt` at `port`: as [`Network::prefetch_arrival`], and every line of the port the
    /// packet will leave by: the NIC of the host it reaches (which the transport's answer,
    /// an ACK or the next packet, leaves by), or the next hop (`next`) of a source-routed packet
    /// (the egress port's counters, backlog and discipline are the other half of a hop's
    /// misses). It reads the port's first two lines, then the host's NIC or the packet
    /// (for its `next`); call it where [`Network::prefetch_arrival_early`] ran for this
    /// arrival one event earlier.
    /// A sprayed packet's next hop is chosen on arrival, and nothing is loaded for it.
    /// Returns the host the packet reaches, if it reaches one.
    #[inline]
    pub fn prefetch_arrival_and_next_hop(
        &self,
        port: PortId,
        pkt: PacketId,
        pool: &PacketPool,
    ) -> Option<HostId> {
        let link = &self.ports[port.index()];
        link.prefetch_arrival();
        if let Some(h) = link.to_host {
            if let Some(nic) = self.nic.get(h.index())
                && let Some(nic) = self.ports.get(nic.index())
            {
                dcsim_engine::prefetch::prefetch_lines(nic);
            }
            return Some(h);
        }
        let p = pool.peek(pkt)?;
        if p.route != RouteId::NONE
            && let Some(next) = self.ports.get(p.next.index())
        {
            dcsim_engine::prefetch::prefetch_lines(next);
        }
        None
    }

    /// Per-packet spraying: round-robin over the equal-cost next hops at `node`.
    #[inline]
    fn spray_next_hop(&mut self, node: usize, dst: usize) -> PortId {
        let target = self.nodes[self.hosts[dst].index()].edge as usize;
        if self.nodes[node].edge as usize == target {
            return self.down[dst];
        }
        let hops = self.fib.next_hops(node, target);
        let i = self.spray_next[node] as usize % hops.len();
        self.spray_next[node] = self.spray_next[node].wrapping_add(1);
        hops[i]
    }
}

#[cfg(test)]
mod tests {
    use dcsim_engine::{Dur, Rate, RngTree, Scheduler, Time};

    use crate::network::tests::net;
    use crate::qdisc::{self, Amount, Qdisc, QdiscSpec};
    use crate::topo::{self, DumbbellSpec, FatTreeSpec};
    use crate::{
        Ecn, HostId, IpBits, NetCx, NetEvent, Network, Packet, PacketId, PacketPool, PortId,
        PortStats, RouteId, RoutingMode, RoutingSpec, Telemetry, TopologySpec,
    };

    /// Runs the network until idle; returns (arrival time, host, packet) for each delivery.
    fn drain(
        n: &mut Network,
        pool: &mut PacketPool,
        s: &mut Scheduler<NetEvent>,
    ) -> Vec<(Time, HostId, PacketId)> {
        let mut out = Vec::new();
        while let Some((now, ev)) = s.pop() {
            let mut cx = NetCx {
                now,
                pool,
                sched: s,
            };
            match ev {
                NetEvent::PortReady(p) => {
                    n.on_port_ready(p, &mut cx);
                }
                NetEvent::LinkArrive(p, _) => {
                    if let Some((h, pkt)) = n.on_link_arrive(p, &mut cx) {
                        out.push((now, h, pkt));
                    }
                }
            }
        }
        out
    }

    /// Offers `count` full-size packets from host 0 to `dst` (by `route`, or by spraying
    /// with `RouteId::NONE`) at time zero.
    fn send_burst(
        n: &mut Network,
        pool: &mut PacketPool,
        s: &mut Scheduler<NetEvent>,
        route: RouteId,
        dst: HostId,
        count: usize,
    ) {
        for _ in 0..count {
            let pkt = pool.alloc(Packet {
                route,
                dst,
                wire_bytes: 1538,
                ..Packet::default()
            });
            let mut cx = NetCx {
                now: Time::ZERO,
                pool,
                sched: s,
            };
            n.send(HostId(0), pkt, &mut cx);
        }
    }

    /// The look-ahead's second step names the host a packet reaches exactly when the
    /// packet leaves the network there, at every arrival of a one-way trip.
    #[test]
    fn the_look_ahead_names_the_host_a_packet_reaches() {
        let mut n = net(
            TopologySpec::Dumbbell(DumbbellSpec {
                pairs: Some(2),
                host_link: None,
                bottleneck: None,
            }),
            RoutingMode::SymmetricEcmp,
        );
        let (fwd, _) = n.flow_routes(1, HostId(0), HostId(2));
        let mut pool = PacketPool::new();
        let mut s = Scheduler::new();
        send_burst(&mut n, &mut pool, &mut s, fwd, HostId(2), 4);
        let (mut at_hosts, mut at_switches) = (0, 0);
        while let Some((now, ev)) = s.pop() {
            let NetEvent::LinkArrive(p, pkt) = ev else {
                continue;
            };
            let named = n.prefetch_arrival_and_next_hop(p, pkt, &pool);
            let mut cx = NetCx {
                now,
                pool: &mut pool,
                sched: &mut s,
            };
            let delivered = n.on_link_arrive(p, &mut cx);
            assert_eq!(named, delivered.map(|(h, _)| h));
            match delivered {
                Some((_, pkt)) => {
                    at_hosts += 1;
                    pool.free(pkt);
                }
                None => at_switches += 1,
            }
        }
        assert_eq!((at_hosts, at_switches), (4, 8));
    }

    #[test]
    fn back_to_back_packets_arrive_after_store_and_forward_and_pipelining() {
        let mut n = net(
            TopologySpec::Dumbbell(DumbbellSpec {
                pairs: Some(1),
                host_link: None,
                bottleneck: None,
            }),
            RoutingMode::SymmetricEcmp,
        );
        let (fwd, rev) = n.flow_routes(1, HostId(0), HostId(1));
        assert_eq!(n.path(fwd).len(), 3);
        assert_eq!(n.path(rev).len(), 3);
        let mut pool = PacketPool::new();
        let mut s = Scheduler::new();
        send_burst(&mut n, &mut pool, &mut s, fwd, HostId(1), 3);
        let got = drain(&mut n, &mut pool, &mut s);
        let tx = Rate::from_gbps(10).tx_time(1538);
        let prop = Dur::from_us(20 + 10 + 20);
        let times: Vec<Time> = got.iter().map(|g| g.0).collect();
        // First packet: 3 serializations + propagation; then one serialization apart.
        assert_eq!(
            times,
            [
                Time::ZERO + prop + tx * 3,
                Time::ZERO + prop + tx * 4,
                Time::ZERO + prop + tx * 5
            ]
        );
        assert!(got.iter().all(|g| g.1 == HostId(1)));
        assert_eq!(n.hops(), 9);
        for g in got {
            pool.free(g.2);
        }
        assert_eq!(pool.live(), 0);
        // Each port has at most one pending event; 3 packets x 3 hops took at most 2 events per
        // hop.
        assert!(s.stats().pushes <= 18, "{:?}", s.stats());
    }

    /// Hides that the inner discipline is a FIFO, so its port dequeues with events.
    struct Evented(Qdisc);
    impl qdisc::QueueDisc for Evented {
        fn enqueue(&mut self, pkt: PacketId, cx: &mut qdisc::QdiscCx<'_>) -> qdisc::Verdict {
            self.0.enqueue(pkt, cx)
        }
        fn dequeue(&mut self, cx: &mut qdisc::QdiscCx<'_>) -> Option<PacketId> {
            self.0.dequeue(cx)
        }
        fn backlog_bytes(&self) -> u64 {
            self.0.backlog_bytes()
        }
        fn backlog_pkts(&self) -> u32 {
            self.0.backlog_pkts()
        }
    }

    /// The disciplines of the differential tests: ECN at 4 packets, and RED (marking half
    /// the ECT packets, dropping the others early) from 2 to 6 packets, with 12-packet
    /// buffers; ECN at 3 packets in a buffer of 6 full frames (9,228 bytes), and drop-tail at
    /// 3 full frames (4,614 bytes, so that a full buffer is reached exactly).
    /// A FIFO port applies the thresholds of the ECN and drop-tail ones itself
    /// ([`qdisc::QueueDisc::thresholds`]), in either unit; an evented port asks the
    /// discipline.
    fn fifo_specs() -> [QdiscSpec; 4] {
        [
            QdiscSpec::Ecn(qdisc::EcnConfig {
                buffer: Amount::Packets(12),
                mark_threshold: Amount::Packets(4),
            }),
            QdiscSpec::Ecn(qdisc::EcnConfig {
                buffer: Amount::Bytes(9_228),
                mark_threshold: Amount::Packets(3),
            }),
            QdiscSpec::DropTail(qdisc::DropTailConfig {
                buffer: Amount::Bytes(4_614),
            }),
            QdiscSpec::Red(qdisc::RedConfig {
                buffer: Amount::Packets(12),
                min_th: Amount::Packets(2),
                max_th: Amount::Packets(6),
                weight: 0.2,
                ..qdisc::RedConfig::default()
            }),
        ]
    }

    /// A delivered packet: (arrival, host, sequence number, queueing delay in ns).
    type Delivery = (Time, HostId, u64, u32);

    /// Sends `(time_ps, sender, wire_bytes, ect)` from the left hosts of a 3-pair dumbbell
    /// (a bottleneck of about 10 Gb/s behind three 10 Gb/s senders, discipline `spec` on
    /// every port) and returns the deliveries, every port's counters settled at the
    /// end, and the scheduler's counters.
    ///
    /// The bottleneck runs at 9,999,999,937 b/s, not 10 Gb/s: with equal rates a packet
    /// sent back to back behind another reaches the bottleneck at the very picosecond the
    /// other leaves it, and where a third waits, which of the start and the arrival counts
    /// first depends, with events, on the order of scheduling (the FIFO port takes the
    /// start first). An odd rate keeps this test free of such exact ties.
    fn run_dumbbell(
        spec: &QdiscSpec,
        fifo: bool,
        sends: &[(u64, u32, u32, bool)],
    ) -> (Vec<Delivery>, Vec<PortStats>, dcsim_engine::SchedStats) {
        run_dumbbell_with(spec, fifo, None, sends)
    }

    /// [`run_dumbbell`] with every port shaped by `shaper` (timing noise, release at the
    /// start), if any.
    fn run_dumbbell_with(
        spec: &QdiscSpec,
        fifo: bool,
        shaper: Option<crate::Shaper>,
        sends: &[(u64, u32, u32, bool)],
    ) -> (Vec<Delivery>, Vec<PortStats>, dcsim_engine::SchedStats) {
        let g = TopologySpec::Dumbbell(DumbbellSpec {
            pairs: Some(3),
            host_link: None,
            bottleneck: Some(topo::LinkSpec {
                rate: Rate::from_bps(9_999_999_937),
                delay: Dur::from_us(10),
            }),
        })
        .build()
        .unwrap();
        let rng = RngTree::new(0);
        let noisy = shaper.is_some();
        let mut n =
            Network::with_jitter(&g, RoutingSpec::default(), shaper.map(|s| (s, &rng)), |p| {
                let q = spec.build(&rng, u64::from(p.id.0), p.rate);
                if fifo {
                    q
                } else {
                    Qdisc::Custom(Box::new(Evented(q)))
                }
            })
            .unwrap();
        n.enable(Telemetry::QUEUE_DELAY);
        assert!(n.ports().iter().all(|p| p.is_fifo() == (fifo && !noisy)));
        let routes: Vec<RouteId> = (0..3)
            .map(|i| n.flow_routes(u64::from(i), HostId(i), HostId(i + 3)).0)
            .collect();
        let mut pool = PacketPool::new();
        let mut s: Scheduler<NetEvent> = Scheduler::new();
        let mut out = Vec::new();
        let mut next = 0;
        loop {
            let due = s.peek_time();
            if next < sends.len() && due.is_none_or(|t| Time(sends[next].0) < t) {
                let (t, from, wire, ect) = sends[next];
                let pkt = pool.alloc(Packet {
                    route: routes[from as usize],
                    dst: HostId(from + 3),
                    wire_bytes: crate::bytes16(wire),
                    seq: next as u64,
                    ip: IpBits::new(if ect { Ecn::Ect } else { Ecn::NotEct }),
                    ..Packet::default()
                });
                let mut cx = NetCx {
                    now: Time(t),
                    pool: &mut pool,
                    sched: &mut s,
                };
                n.send(HostId(from), pkt, &mut cx);
                next += 1;
                continue;
            }
            let Some((now, ev)) = s.pop() else { break };
            let mut cx = NetCx {
                now,
                pool: &mut pool,
                sched: &mut s,
            };
            match ev {
                NetEvent::PortReady(p) => {
                    n.on_port_ready(p, &mut cx);
                }
                NetEvent::LinkArrive(p, _) => {
                    if let Some((h, pkt)) = n.on_link_arrive(p, &mut cx) {
                        let p = pool.get(pkt);
                        out.push((now, h, p.seq, p.queue_delay_ns));
                        pool.free(pkt);
                    }
                }
            }
        }
        let end = s.now();
        let stats = (0..n.ports().len())
            .map(|i| {
                let p = n.port_mut(PortId::new(i));
                p.settle(end, &mut pool);
                *p.stats()
            })
            .collect();
        assert_eq!(pool.live(), 0, "every packet delivered or dropped");
        assert_eq!(n.packets_inside(), 0);
        (out, stats, s.stats())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// A FIFO port that computes departures on arrival behaves exactly like the same
        /// discipline dequeued by events: same deliveries at the same times, same drops,
        /// marks, bytes, maxima and time-weighted backlog, with one event per hop instead of
        /// up to two. (Random picosecond send times make other exact ties, where the two
        /// may order differently, vanishingly unlikely.)
        #[test]
        fn fifo_ports_match_evented_ports_exactly(
            mut sends in proptest::collection::vec(
                (
                    0u64..200_000_000,
                    0u32..3,
                    proptest::sample::select(vec![84u32, 600, 1538]),
                    proptest::bool::ANY,
                ),
                1..300,
            )
        ) {
            sends.sort_unstable();
            for spec in fifo_specs() {
                let (got_fifo, stats_fifo, sched_fifo) = run_dumbbell(&spec, true, &sends);
                let (got_ev, stats_ev, sched_ev) = run_dumbbell(&spec, false, &sends);
                proptest::prop_assert_eq!(&got_fifo, &got_ev);
                proptest::prop_assert_eq!(&stats_fifo, &stats_ev);
                let hops = stats_fifo.iter().map(|p| p.tx_pkts).sum::<u64>();
                proptest::prop_assert_eq!(sched_fifo.pops, hops);
                proptest::prop_assert!(sched_ev.pops >= hops);
            }
        }
    }

    /// Two full frames reach the bottleneck together: the second waits one serialization
    /// there and carries that wait; packets of other classes carry nothing; host NICs add
    /// nothing.
    #[test]
    fn queue_delay_is_the_wait_at_switch_ports() {
        let sends = [(0, 0, 1538, true), (0, 1, 1538, true), (1, 2, 1538, true)];
        for spec in fifo_specs() {
            for fifo in [true, false] {
                let (got, _, _) = run_dumbbell(&spec, fifo, &sends);
                let mut delays: Vec<u32> = got.iter().map(|g| g.3).collect();
                delays.sort_unstable();
                // The three arrive within 1 ps at the left switch: the second waits one
                // frame time at 9,999,999,937 b/s (1230.4 ns), the third two; the
                // receivers' switch forwards each at once (its host links are as fast).
                let tx = Rate::from_bps(9_999_999_937).tx_time(1538).as_ps();
                assert_eq!(delays[0], 0, "{spec:?}");
                assert!(
                    (u64::from(delays[1]) * 1000).abs_diff(tx) <= 1000,
                    "{delays:?}"
                );
                assert!(
                    (u64::from(delays[2]) * 1000).abs_diff(2 * tx) <= 1000,
                    "{delays:?}"
                );
            }
        }
    }

    /// The differential test above on a fixed burst that surely marks and drops.
    #[test]
    fn fifo_ports_match_evented_ports_under_overload() {
        let sends: Vec<(u64, u32, u32, bool)> = (0..600u64)
            .map(|i| {
                let size = [1538, 84, 600][(i % 5 % 3) as usize];
                (i * 400_000 + i % 7, (i % 3) as u32, size, i % 4 != 0)
            })
            .collect();
        for spec in fifo_specs() {
            let (got_fifo, stats_fifo, _) = run_dumbbell(&spec, true, &sends);
            let (got_ev, stats_ev, _) = run_dumbbell(&spec, false, &sends);
            assert_eq!(got_fifo, got_ev);
            assert_eq!(stats_fifo, stats_ev);
            let total = |f: fn(&PortStats) -> u64| stats_fifo.iter().map(f).sum::<u64>();
            assert!(total(|p| p.drops_total()) > 0, "{spec:?}");
            let marks = !matches!(spec, QdiscSpec::DropTail(_));
            assert_eq!(total(|p| p.ecn_marks) > 0, marks, "{spec:?}");
        }
    }

    /// Timing noise of at most J per port delays each packet by at most J per port it
    /// crosses (a FIFO queue's departures move by no more than its arrivals do), never
    /// makes it earlier, keeps every packet and the order, and keeps the links' rates:
    /// 400 packets sent back to back still leave within 3J of their exact times, where a
    /// lateness that accumulated would have added hundreds of J.
    #[test]
    fn port_jitter_delays_within_its_bound_and_keeps_order_and_rate() {
        let spec = QdiscSpec::DropTail(qdisc::DropTailConfig {
            buffer: Amount::Packets(10_000),
        });
        let sends: Vec<(u64, u32, u32, bool)> = (0..400u64).map(|_| (0, 0, 1538, false)).collect();
        let jitter = Dur::from_us(5);
        let shaper = Some(crate::Shaper {
            jitter: crate::Lateness::Uniform(jitter),
            release_at_start: false,
        });
        let (exact, _, _) = run_dumbbell_with(&spec, true, None, &sends);
        let (noisy, stats, _) = run_dumbbell_with(&spec, true, shaper.clone(), &sends);
        assert_eq!(exact.len(), 400);
        assert_eq!(noisy.len(), 400);
        assert!(stats.iter().all(|p| p.drops_total() == 0));
        let mut later = 0;
        for (e, n) in exact.iter().zip(&noisy) {
            assert_eq!((e.1, e.2), (n.1, n.2), "order kept");
            assert!(n.0 >= e.0, "{n:?} before {e:?}");
            assert!(
                n.0 - e.0 <= jitter * 3 + Dur::from_ps(400),
                "{n:?} vs {e:?}"
            );
            later += u32::from(n.0 > e.0);
        }
        assert!(later > 300, "only {later} packets late");
        let (again, _, _) = run_dumbbell_with(&spec, true, shaper, &sends);
        assert_eq!(noisy, again, "the same streams, the same run");
    }

    /// Every packet 50 µs late at every port, from a one-value distribution.
    fn late_50us() -> Option<crate::Shaper> {
        let us50 = Dur::from_us(50);
        Some(crate::Shaper {
            jitter: crate::Lateness::Quantiles(vec![(0.0, us50), (1.0, us50)].into()),
            release_at_start: false,
        })
    }

    /// A late packet keeps its place in the queue until it is handed on, as htb's queue
    /// holds a packet until its timer fires: behind a buffer of one packet, a packet sent
    /// 10 µs after another (whose transmission took 1.2 µs) is dropped when the first is
    /// 50 µs late, and the first arrives 50 µs late at each of its three ports.
    #[test]
    fn a_late_packet_holds_its_place_in_the_queue() {
        let spec = QdiscSpec::DropTail(qdisc::DropTailConfig {
            buffer: Amount::Packets(1),
        });
        let sends = [(0, 0, 1538, false), (10_000_000, 0, 1538, false)];
        let (exact, exact_stats, _) = run_dumbbell_with(&spec, false, None, &sends);
        let (late, stats, _) = run_dumbbell_with(&spec, true, late_50us(), &sends);
        assert_eq!(exact.len(), 2);
        assert!(exact_stats.iter().all(|p| p.drops_total() == 0));
        assert_eq!(late.len(), 1, "{late:?}");
        assert_eq!(late[0].2, 0);
        assert_eq!(late[0].0, exact[0].0 + Dur::from_us(150));
        assert_eq!(stats.iter().map(PortStats::drops_total).sum::<u64>(), 1);
    }

    /// Lateness longer than a transmission does not slow the link: the shaper catches up,
    /// handing each next packet on at its own slot plus its lateness, so 20 back-to-back
    /// packets, each 50 µs late at every port, arrive as far apart as on time.
    #[test]
    fn lateness_beyond_a_transmission_keeps_the_rate() {
        let spec = QdiscSpec::DropTail(qdisc::DropTailConfig {
            buffer: Amount::Packets(10_000),
        });
        let sends: Vec<(u64, u32, u32, bool)> = (0..20u64).map(|_| (0, 0, 1538, false)).collect();
        // Evented ports on time: the noisy ports' own arithmetic (a FIFO port derives its
        // starts from arrivals, which can round a picosecond apart at this odd rate).
        let (exact, _, _) = run_dumbbell_with(&spec, false, None, &sends);
        let (late, _, _) = run_dumbbell_with(&spec, true, late_50us(), &sends);
        assert_eq!(late.len(), 20);
        for (e, l) in exact.iter().zip(&late) {
            assert_eq!(l.0, e.0 + Dur::from_us(150), "{l:?} against {e:?}");
        }
    }

    /// The inverse of a measured distribution, linear between its points.
    #[test]
    fn lateness_quantiles_interpolate() {
        let points = [(0.0, 0), (0.5, 10_000), (1.0, 100_000)];
        assert_eq!(crate::port::inverse_cdf(&points, 0.0), 0);
        assert_eq!(crate::port::inverse_cdf(&points, 0.25), 5_000);
        assert_eq!(crate::port::inverse_cdf(&points, 0.5), 10_000);
        assert_eq!(crate::port::inverse_cdf(&points, 0.75), 55_000);
        assert!(crate::port::inverse_cdf(&points, 0.999_999) <= 100_000);
        let check = |p: &[(f64, Dur)]| crate::Lateness::check(p);
        let us = Dur::from_us;
        assert_eq!(check(&[(0.0, us(0)), (1.0, us(5))]), Ok(()));
        assert!(check(&[(0.0, us(0))]).is_err());
        assert!(check(&[(0.1, us(0)), (1.0, us(5))]).is_err());
        assert!(check(&[(0.0, us(0)), (0.5, us(5)), (0.5, us(6)), (1.0, us(7))]).is_err());
        assert!(check(&[(0.0, us(9)), (1.0, us(5))]).is_err());
    }

    /// Ports that release each packet at the start of its transmission (an emulator's
    /// shaper) deliver it one transmission time earlier per port it crosses than a wire
    /// does, and keep the links' rates and the order: of 100 back-to-back 1,538-byte
    /// frames across the dumbbell's three ports, each arrives exactly three transmission
    /// times earlier than with wires (the rates are equal, so the queue is at the first
    /// port, whose schedule both share). Without noise nothing is drawn, so two runs agree.
    #[test]
    fn ports_released_at_the_start_save_a_transmission_time_per_hop() {
        let spec = QdiscSpec::DropTail(qdisc::DropTailConfig {
            buffer: Amount::Packets(10_000),
        });
        let sends: Vec<(u64, u32, u32, bool)> = (0..100u64).map(|_| (0, 0, 1538, false)).collect();
        let shaper = Some(crate::Shaper {
            jitter: crate::Lateness::Uniform(Dur::ZERO),
            release_at_start: true,
        });
        let (wire, _, _) = run_dumbbell_with(&spec, true, None, &sends);
        let (shaped, stats, _) = run_dumbbell_with(&spec, true, shaper.clone(), &sends);
        assert_eq!(wire.len(), 100);
        assert_eq!(shaped.len(), 100);
        assert!(stats.iter().all(|p| p.drops_total() == 0));
        // Host links are 10 Gb/s: 1,538 bytes take 1,230.4 ns there, and 1,230.4 ns (plus
        // a fraction of a picosecond) at the bottleneck's 9,999,999,937 b/s.
        let host = Dur::from_ps(1_230_400);
        for (k, (w, s)) in wire.iter().zip(&shaped).enumerate() {
            assert_eq!((w.1, w.2), (s.1, s.2), "order kept");
            let saved = w.0 - s.0;
            assert!(
                saved >= host * 3 && saved <= host * 3 + Dur::from_ps(10),
                "packet {k}: {saved:?} earlier"
            );
        }
        let gaps = |d: &[Delivery]| d.windows(2).map(|p| p[1].0 - p[0].0).collect::<Vec<_>>();
        assert_eq!(gaps(&wire)[10..], gaps(&shaped)[10..], "the rate is kept");
        let (again, _, _) = run_dumbbell_with(&spec, true, shaper, &sends);
        assert_eq!(shaped, again);
    }

    #[test]
    fn spraying_delivers_over_every_core() {
        let mut n = net(
            TopologySpec::FatTree(FatTreeSpec::default()),
            RoutingMode::Spray,
        );
        let mut pool = PacketPool::new();
        let mut s = Scheduler::new();
        send_burst(&mut n, &mut pool, &mut s, RouteId::NONE, HostId(191), 64);
        let got = drain(&mut n, &mut pool, &mut s);
        assert_eq!(got.len(), 64);
        assert!(got.iter().all(|g| g.1 == HostId(191)));
        let core_ports_used = n
            .ports()
            .iter()
            .filter(|p| n.node_tier(p.node()) == "core" && p.stats().tx_pkts > 0)
            .count();
        assert_eq!(core_ports_used, 8);
    }
}
