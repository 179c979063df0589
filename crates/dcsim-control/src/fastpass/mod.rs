//! Fastpass in the network (Perry et al., SIGCOMM 2014; docs/protocols/fastpass.md): the
//! hosts' side of the Fastpass Control Protocol, the arbiter, and the timeslot clock. The
//! flows' ends are `dcsim_transport::fastpass`; they send one packet when granted a slot
//! ([`Grant::Slot`]).
//!
//! - **Hosts** keep, per destination, the slots they have asked for in all (`requested`,
//!   cumulative, so a lost or repeated report does no harm) and the slots granted to them
//!   (`got`). A new flow, a granted slot that arrived too late to use, or a long-lived
//!   flow's use of its slots raises `requested`; the host then reports every changed
//!   destination in one request packet to the arbiter host, with the grants it has received
//!   since its last acknowledged report. A report not acknowledged within the request
//!   timeout is sent again (with the state of that moment).
//! - **The arbiter** turns each report's increase into demand for its allocator
//!   (`dcsim_arbiter::Allocator`: greedy maximal matching, least recently allocated first,
//!   batch processing mode), and `lead` before each batch of timeslots begins it allocates
//!   the batch, assigns every packet a spine (`PathAssigner`: no fabric link carries two
//!   packets in a slot), and sends each source one grant packet listing its slots,
//!   destinations and spines, and acknowledging its latest report. A grant that its host
//!   has not acknowledged within the grant timeout is taken as lost and its slots are
//!   demanded again.
//! - **Timeslots** are one full frame (1538 bytes on the wire) at the host link rate; slot
//!   `s` begins at `lead + s · slot`. A host sends each granted packet at the start of its
//!   slot on the route through its granted spine.
//!
//! Control packets are real packets of class `Control` (strict priority where the switch
//! ports have it) from and to the arbiter host, routed by ECMP; their contents are kept
//! beside the network in a table indexed by the packet's `seq`.

use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;

use dcsim_arbiter::{
    Allocator, AllocatorConfig, Clos, Demand, NodeId as ArbNode, Path, PathAssigner,
};
use dcsim_engine::{Dur, Rng, RngTree, Time};
use dcsim_net::wire::{MAX_WIRE_BYTES, TCP_MSS_BYTES, wire_bytes};
use dcsim_net::{Class, FlowId, HostId, IpBits, Network, Packet, RateStamp, RouteId, TopologySpec};
use dcsim_transport::fastpass::FastpassConfig;
use dcsim_transport::{FlowInfo, Flows, Grant, TransportSpec};
use hdrhistogram::Histogram;
use rand::RngExt as _;
use serde_json::{Value, json};

use crate::service::Registered;
use crate::{BuildCx, CheckCx, Service, ServiceCx, ServiceSched};

/// The flow number control packets carry: no flow has it.
const FCP_FLOW: FlowId = crate::control_flow(<Fastpass as Registered>::INDEX);

/// Fastpass's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FastpassEvent {
    /// The arbiter allocates its next batch.
    Tick,
    /// A host's report timer.
    Host(u32),
    /// A host's next granted slot begins.
    Send(u32),
}

/// IP + UDP headers of a control packet, and its fixed FCP header.
const CONTROL_HEADER_BYTES: u32 = 28 + 8;
/// Bytes per destination in a report (destination, cumulative count).
const REQUEST_ENTRY_BYTES: u32 = 6;
/// Bytes per acknowledged grant in a report.
const ACK_ENTRY_BYTES: u32 = 2;
/// Bytes per granted slot in a grant (destination, slot offset, spine).
const GRANT_ENTRY_BYTES: u32 = 4;

const FLAG_REQUEST: u8 = 1;
const FLAG_GRANT: u8 = 2;

/// What the topology gives Fastpass: the leaf-spine shape, the spines' nodes and the slot.
struct Fabric {
    /// The arbiter's view: leaves, virtual spines, hosts per leaf.
    clos: Clos,
    /// Virtual spines per physical spine: uplinks this many times faster than host links
    /// carry this many packets per slot.
    per_spine: u32,
    spines: Vec<dcsim_net::NodeId>,
    slot: Dur,
}

impl Fabric {
    /// Checks that `topology` is a leaf-spine fabric Fastpass can schedule and returns its
    /// shape; the error names the key.
    fn of(topology: &TopologySpec, slot_bytes: u32) -> Result<(Clos, u32, Dur), String> {
        let TopologySpec::LeafSpine(ls) = topology.resolve()? else {
            return Err(
                "transport.kind = \"fastpass\" needs topology.kind = \"leaf-spine\" (its arbiter \
                 assigns spines)"
                    .into(),
            );
        };
        let (leaves, hpl, spines) = (
            ls.leaves.unwrap_or(1),
            ls.hosts_per_leaf.unwrap_or(1),
            ls.spines.unwrap_or(1),
        );
        let host = ls.host_link.map(|l| l.rate).unwrap_or_default();
        let fabric = ls.fabric_link.map(|l| l.rate).unwrap_or_default();
        if host.bps() == 0 || fabric.bps() % host.bps() != 0 {
            return Err(format!(
                "topology.fabric_link: Fastpass needs uplinks a whole multiple of the host link \
                 rate ({fabric} against {host})"
            ));
        }
        let per_spine = (fabric.bps() / host.bps()) as u32;
        if spines * per_spine > 64 {
            return Err(format!(
                "topology.spines: {spines} spines x {per_spine} slots each exceed the path \
                 assigner's 64"
            ));
        }
        if spines * per_spine < hpl {
            return Err(format!(
                "topology.spines: {spines} spines x {per_spine} packets per slot cannot carry \
                 {hpl} hosts per leaf (Fastpass needs a full-bisection fabric)"
            ));
        }
        let clos = Clos {
            tors: leaves,
            spines: spines * per_spine,
            hosts_per_tor: hpl,
        };
        Ok((clos, per_spine, host.tx_time(u64::from(slot_bytes))))
    }
}

/// A host's state for one destination.
#[derive(Default)]
struct DstState {
    /// Slots asked for in all (reported cumulatively).
    requested: u64,
    /// Slots granted in all that were used or came too late (slots granted for nothing
    /// are not counted).
    got: u64,
    /// Flows with packets not yet given a slot, oldest first: (flow, packets left, stop,
    /// start while it waits for its first slot).
    flows: VecDeque<(FlowId, u64, Option<Time>, Option<Time>)>,
    /// Sum of their packets left (saturating; long-lived flows count as `u64::MAX`).
    pending: u64,
}

/// A host's side of the protocol.
#[derive(Default)]
struct Host {
    dsts: BTreeMap<u32, DstState>,
    /// Destinations whose `requested` changed since the last report.
    changed: bool,
    /// Last report sent, and the highest one the arbiter acknowledged.
    req_seq: u64,
    req_acked: u64,
    /// Reports in flight: (sequence, grants acknowledged in it, sent at).
    in_flight: VecDeque<(u64, usize, Time)>,
    /// Grants received and not yet confirmed by an acknowledged report.
    acks: Vec<u32>,
    /// The host's timer (report retransmission), if armed.
    timer: Option<Time>,
    /// Granted sends: (slot start, flow, route), in time order.
    tx: VecDeque<(Time, FlowId, RouteId)>,
    tx_armed: bool,
}

/// The contents of a control packet in flight.
enum Msg {
    Request {
        host: u32,
        seq: u64,
        entries: Vec<(u32, u64)>,
        acks: Vec<u32>,
    },
    Grant {
        id: u32,
        req_ack: u64,
        entries: Vec<(u64, u32, u32)>,
    },
    Free,
}

/// A grant the arbiter sent: its host, when, and per destination the slots it held.
struct SentGrant {
    host: u32,
    sent_at: Time,
    acked: bool,
    /// Generation of the table entry, so that an acknowledgement of an entry's earlier
    /// grant does not acknowledge the next one.
    generation: u32,
    counts: Vec<(u32, u32)>,
}

/// Grant ids: the entry's index in the low bits, its generation above.
const GRANT_INDEX_BITS: u32 = 20;
const GRANT_INDEX_MASK: u32 = (1 << GRANT_INDEX_BITS) - 1;

/// Fastpass counters for the summary.
struct Counters {
    requests: u64,
    request_retransmits: u64,
    grants: u64,
    ack_only: u64,
    control_packets_delivered: u64,
    control_wire_bytes: u64,
    slots_granted: u64,
    slots_late: u64,
    slots_unused: u64,
    grants_lost: u64,
    batches: u64,
    control_lost: u64,
    compute_ns: u128,
    /// Per flow, the time from its start to the start of its first granted slot, ns.
    first_slot_wait: Histogram<u64>,
}

impl Default for Counters {
    fn default() -> Self {
        Self {
            requests: 0,
            request_retransmits: 0,
            grants: 0,
            ack_only: 0,
            control_packets_delivered: 0,
            control_wire_bytes: 0,
            slots_granted: 0,
            slots_late: 0,
            slots_unused: 0,
            grants_lost: 0,
            batches: 0,
            control_lost: 0,
            compute_ns: 0,
            // Three significant digits, growing to the longest wait recorded.
            first_slot_wait: Histogram::new(3).expect("3 significant digits are valid"),
        }
    }
}

/// Fastpass: hosts, arbiter and slot clock.
pub struct Fastpass {
    cfg: FastpassConfig,
    arbiter: HostId,
    fabric: Fabric,
    lead: Dur,
    batch: Dur,
    alloc: Allocator,
    /// Real batch number minus the allocator's batch number (batches skipped while idle).
    batch_offset: u64,
    assigner: PathAssigner,
    /// Data routes: `(src · hosts + dst) · (spines + 1) + spine`, the last for same-leaf
    /// pairs; filled on first use.
    routes: Vec<RouteId>,
    up: Vec<RouteId>,
    down: Vec<RouteId>,
    hosts: Vec<Host>,
    /// Arbiter: per pair, the cumulative demand it has seen.
    seen: Vec<u64>,
    /// Arbiter: per host, the highest report seen, and whether it is owed an acknowledgement.
    req_seen: Vec<u64>,
    ack_due: Vec<bool>,
    /// Arbiter: grants sent and not yet acknowledged or timed out (a table with a free
    /// list), oldest first.
    sent: Vec<SentGrant>,
    free_sent: Vec<u32>,
    unacked: VecDeque<u32>,
    ticking: bool,
    msgs: Vec<Msg>,
    free_msgs: Vec<u32>,
    // Buffers of messages that arrived, for the next ones (nothing allocated in steady
    // state).
    req_pool: Vec<Vec<(u32, u64)>>,
    ack_pool: Vec<Vec<u32>>,
    grant_pool: Vec<Vec<(u64, u32, u32)>>,
    counts_pool: Vec<Vec<(u32, u32)>>,
    // Scratch.
    per_slot: Vec<Vec<(ArbNode, ArbNode)>>,
    paths: Vec<Path>,
    out: Vec<Vec<(u64, u32, u32)>>,
    touched: Vec<u32>,
    counters: Counters,
    hosts_n: u32,
    /// Control-packet loss injection (`control_loss`).
    loss: Rng,
}

impl Fastpass {
    /// Builds Fastpass for `net`, whose topology is `topology` (checked by the scenario
    /// builder).
    fn new(
        cfg: FastpassConfig,
        net: &mut Network,
        topology: &TopologySpec,
        rng: &RngTree,
    ) -> Result<Self, String> {
        let (clos, per_spine, slot) = Fabric::of(topology, cfg.slot_bytes)?;
        let n = net.num_hosts() as u32;
        let arbiter = HostId(cfg.arbiter.unwrap_or(n - 1));
        if arbiter.0 >= n {
            return Err(format!(
                "transport.arbiter: host {} is out of range (0..{n})",
                arbiter.0
            ));
        }
        let phys = clos.spines / per_spine;
        let spines = (0..phys)
            .map(|i| {
                net.node_by_name(&format!("spine{i}"))
                    .ok_or_else(|| format!("topology: no node spine{i}"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let up: Vec<RouteId> = (0..n)
            .map(|h| net.ecmp_route(u64::from(h), HostId(h), arbiter))
            .collect();
        let down: Vec<RouteId> = (0..n)
            .map(|h| net.ecmp_route(u64::from(h), arbiter, HostId(h)))
            .collect();
        // Lead: the arbiter's NIC sending a full grant to every host, the slowest
        // arbiter-to-host path (propagation and serialization of a full grant, plus one full
        // frame of head-of-line blocking per hop), and one slot.
        let lead = cfg.lead.unwrap_or_else(|| {
            let grant = u64::from(wire_bytes(
                CONTROL_HEADER_BYTES + GRANT_ENTRY_BYTES * cfg.batch_slots,
            ));
            let fan_out = net
                .port(net.nic(arbiter))
                .rate()
                .tx_time(grant * u64::from(n));
            let worst = down
                .iter()
                .map(|&r| {
                    net.path_links(r)
                        .map(|(rate, delay)| delay + rate.tx_time(2 * u64::from(MAX_WIRE_BYTES)))
                        .fold(Dur::ZERO, |a, b| a + b)
                })
                .max()
                .unwrap_or(Dur::ZERO);
            fan_out + worst + slot
        });
        let mut acfg = AllocatorConfig::new(n);
        acfg.batch_slots = cfg.batch_slots;
        let alloc = Allocator::new(&acfg).map_err(|e| format!("transport: {e}"))?;
        let assigner = PathAssigner::new(clos).map_err(|e| format!("topology: {e}"))?;
        let batch = slot * u64::from(cfg.batch_slots);
        Ok(Self {
            arbiter,
            fabric: Fabric {
                clos,
                per_spine,
                spines,
                slot,
            },
            lead,
            batch,
            alloc,
            batch_offset: 0,
            assigner,
            routes: vec![RouteId::NONE; (n as usize).pow(2) * (phys as usize + 1)],
            up,
            down,
            hosts: (0..n).map(|_| Host::default()).collect(),
            seen: vec![0; (n as usize).pow(2)],
            req_seen: vec![0; n as usize],
            ack_due: vec![false; n as usize],
            sent: Vec::new(),
            free_sent: Vec::new(),
            unacked: VecDeque::new(),
            req_pool: Vec::new(),
            ack_pool: Vec::new(),
            grant_pool: Vec::new(),
            counts_pool: Vec::new(),
            ticking: false,
            msgs: Vec::new(),
            free_msgs: Vec::new(),
            per_slot: vec![Vec::new(); cfg.batch_slots as usize],
            paths: Vec::new(),
            out: vec![Vec::new(); n as usize],
            touched: Vec::new(),
            counters: Counters::default(),
            hosts_n: n,
            loss: rng.stream("fastpass-control-loss", 0),
            cfg,
        })
    }

    /// Start of timeslot `s`.
    fn slot_start(&self, s: u64) -> Time {
        Time::from_dur(self.lead + self.fabric.slot * s)
    }

    /// The arbiter's tick for real batch `b`: `lead` before its first slot.
    fn tick_time(&self, b: u64) -> Time {
        Time::from_dur(self.batch * b)
    }

    /// Flow `f` (a Fastpass flow) starts: its host asks for its packets' slots.
    fn start_flow<S: ServiceSched>(&mut self, f: FlowId, cx: &mut ServiceCx<'_, S>) {
        let spec = *cx.flows.spec(f);
        let packets = match spec.size_bytes {
            Some(0) => return,
            Some(b) => b.div_ceil(u64::from(TCP_MSS_BYTES)),
            None => u64::MAX,
        };
        let cap = u64::from(self.cfg.max_outstanding);
        let h = &mut self.hosts[spec.src.index()];
        let d = h.dsts.entry(spec.dst.0).or_default();
        d.flows.push_back((f, packets, spec.stop, Some(cx.now)));
        d.pending = d.pending.saturating_add(packets);
        let target = d.got + d.pending.min(cap);
        if target > d.requested {
            d.requested = target;
            h.changed = true;
        }
        self.report(spec.src.0, cx);
    }

    /// Sends host `h`'s report if something changed.
    fn report<S: ServiceSched>(&mut self, h: u32, cx: &mut ServiceCx<'_, S>) {
        let host = &mut self.hosts[h as usize];
        if !host.changed && host.acks.is_empty() {
            return;
        }
        self.send_report(h, cx);
    }

    /// Sends host `h`'s report now: every destination with demand, every unconfirmed ack.
    fn send_report<S: ServiceSched>(&mut self, h: u32, cx: &mut ServiceCx<'_, S>) {
        let now = cx.now;
        let (mut entries, mut acks) = self.take_msg_buffers();
        let host = &mut self.hosts[h as usize];
        entries.extend(
            host.dsts
                .iter()
                .filter(|(_, d)| d.requested > d.got)
                .map(|(&dst, d)| (dst, d.requested)),
        );
        acks.extend_from_slice(&host.acks);
        host.changed = false;
        host.req_seq += 1;
        let seq = host.req_seq;
        host.in_flight.push_back((seq, acks.len(), now));
        let payload = CONTROL_HEADER_BYTES
            + REQUEST_ENTRY_BYTES * entries.len() as u32
            + ACK_ENTRY_BYTES * acks.len() as u32;
        let id = self.store(Msg::Request {
            host: h,
            seq,
            entries,
            acks,
        });
        self.counters.requests += 1;
        let route = self.up[h as usize];
        let arbiter = self.arbiter;
        self.send_control(HostId(h), arbiter, route, id, FLAG_REQUEST, payload, cx);
        let at = now + self.cfg.request_timeout;
        let host = &mut self.hosts[h as usize];
        if host.timer.is_none() {
            host.timer = Some(at);
            cx.at(at, FastpassEvent::Host(h));
        }
    }

    /// Host `h`'s timer: a report unacknowledged for the request timeout is sent again.
    fn on_host_timer<S: ServiceSched>(&mut self, h: u32, cx: &mut ServiceCx<'_, S>) {
        let now = cx.now;
        let timeout = self.cfg.request_timeout;
        let host = &mut self.hosts[h as usize];
        host.timer = None;
        let Some(&(_, _, sent)) = host.in_flight.back() else {
            return;
        };
        if sent + timeout > now {
            host.timer = Some(sent + timeout);
            cx.at(sent + timeout, FastpassEvent::Host(h));
            return;
        }
        // The latest report is overdue: the arbiter has not heard from this host. Repeat
        // the state of now (older reports in flight stay counted for their acks).
        self.counters.request_retransmits += 1;
        self.send_report(h, cx);
    }

    /// A control packet `pkt` arrived at host `at`.
    fn on_control<S: ServiceSched>(&mut self, at: HostId, pkt: &Packet, cx: &mut ServiceCx<'_, S>) {
        self.counters.control_packets_delivered += 1;
        let id = pkt.seq as u32;
        let msg = std::mem::replace(&mut self.msgs[id as usize], Msg::Free);
        self.free_msgs.push(id);
        if self.cfg.control_loss > 0.0 && self.loss.random::<f64>() < self.cfg.control_loss {
            self.counters.control_lost += 1;
            match msg {
                Msg::Request { entries, acks, .. } => self.recycle(entries, acks),
                Msg::Grant { entries, .. } => self.recycle_grant(entries),
                Msg::Free => {}
            }
            return;
        }
        match msg {
            Msg::Request {
                host,
                seq,
                entries,
                acks,
            } => {
                debug_assert_eq!(at, self.arbiter);
                self.on_request(host, seq, &entries, &acks, cx);
                self.recycle(entries, acks);
            }
            Msg::Grant {
                id: gid,
                req_ack,
                entries,
            } => {
                self.on_grant(at.0, gid, req_ack, &entries, cx);
                self.recycle_grant(entries);
            }
            Msg::Free => unreachable!("a control packet's message was freed twice"),
        }
    }

    /// The arbiter reads a report.
    fn on_request<S: ServiceSched>(
        &mut self,
        host: u32,
        seq: u64,
        entries: &[(u32, u64)],
        acks: &[u32],
        cx: &mut ServiceCx<'_, S>,
    ) {
        let n = self.hosts_n as usize;
        for &(dst, cum) in entries {
            let k = host as usize * n + dst as usize;
            if cum > self.seen[k] {
                let more = cum - self.seen[k];
                self.seen[k] = cum;
                self.alloc
                    .submit(Demand {
                        src: ArbNode(host),
                        dst: ArbNode(dst),
                        slots: more.min(u64::from(u32::MAX)) as u32,
                    })
                    .expect("hosts are nodes of the allocator");
            }
        }
        for &g in acks {
            let e = &mut self.sent[(g & GRANT_INDEX_MASK) as usize];
            if e.generation == g >> GRANT_INDEX_BITS {
                e.acked = true;
            }
        }
        self.req_seen[host as usize] = self.req_seen[host as usize].max(seq);
        self.ack_due[host as usize] = true;
        self.start_ticking(cx);
    }

    /// Schedules the arbiter's next tick if it is idle.
    fn start_ticking<S: ServiceSched>(&mut self, cx: &mut ServiceCx<'_, S>) {
        if self.ticking {
            return;
        }
        self.ticking = true;
        // The first batch whose tick is not in the past; the allocator's next batch maps
        // to it.
        let b = cx.now.as_ps().div_ceil(self.batch.as_ps());
        self.batch_offset = b - self.alloc.next_batch();
        cx.at(self.tick_time(b), FastpassEvent::Tick);
    }

    /// The arbiter's tick: time out unacknowledged grants, allocate the batch that begins
    /// `lead` from now, assign spines, send grants and acknowledgements.
    fn on_tick<S: ServiceSched>(&mut self, cx: &mut ServiceCx<'_, S>) {
        let now = cx.now;
        // Lost grants: their slots are demanded again.
        while let Some(&g) = self.unacked.front() {
            let s = &self.sent[g as usize];
            if !s.acked && s.sent_at + self.cfg.grant_timeout > now {
                break;
            }
            self.unacked.pop_front();
            self.free_sent.push(g);
            if !s.acked {
                self.counters.grants_lost += 1;
                for &(dst, count) in &s.counts {
                    self.alloc
                        .submit(Demand {
                            src: ArbNode(s.host),
                            dst: ArbNode(dst),
                            slots: count,
                        })
                        .expect("hosts are nodes of the allocator");
                }
            }
            let mut counts = std::mem::take(&mut self.sent[g as usize].counts);
            counts.clear();
            self.counts_pool.push(counts);
        }
        let wall = Instant::now();
        let real = self.alloc.next_batch() + self.batch_offset;
        let batch = self.alloc.allocate_batch();
        let first = real * u64::from(self.cfg.batch_slots);
        for v in &mut self.per_slot {
            v.clear();
        }
        for g in batch.grants() {
            for s in g.slots(dcsim_arbiter::Timeslot(0)) {
                self.per_slot[s.0 as usize].push((g.src(), g.dst()));
            }
        }
        self.counters.slots_granted += batch.allocated_slots();
        for (k, pairs) in self.per_slot.iter().enumerate() {
            if pairs.is_empty() {
                continue;
            }
            self.assigner
                .assign(pairs, &mut self.paths)
                .expect("a maximal matching on a full-bisection Clos is routable");
            debug_assert!(
                dcsim_arbiter::verify_paths(&self.fabric.clos, pairs, &self.paths).is_ok(),
                "two packets on one fabric link in slot {}",
                first + k as u64
            );
            for (&(s, d), p) in pairs.iter().zip(&self.paths) {
                let spine = match p {
                    Path::Local => self.fabric.spines.len() as u32,
                    Path::Spine(v) => v / self.fabric.per_spine,
                };
                self.out[s.0 as usize].push((first + k as u64, d.0, spine));
            }
        }
        self.counters.compute_ns += wall.elapsed().as_nanos();
        self.counters.batches += 1;
        // One packet per host: its grants and its acknowledgement.
        for h in 0..self.hosts_n {
            let grants = !self.out[h as usize].is_empty();
            if !grants && !self.ack_due[h as usize] {
                continue;
            }
            self.ack_due[h as usize] = false;
            let spare = self.grant_pool.pop().unwrap_or_default();
            let entries = std::mem::replace(&mut self.out[h as usize], spare);
            let payload = CONTROL_HEADER_BYTES + GRANT_ENTRY_BYTES * entries.len() as u32;
            let mut gid = u32::MAX;
            if grants {
                let mut counts = self.counts_pool.pop().unwrap_or_default();
                for &(_, d, _) in &entries {
                    match counts.iter_mut().find(|c| c.0 == d) {
                        Some(c) => c.1 += 1,
                        None => counts.push((d, 1)),
                    }
                }
                let i = match self.free_sent.pop() {
                    Some(i) => {
                        let e = &mut self.sent[i as usize];
                        e.generation = (e.generation + 1) & (u32::MAX >> GRANT_INDEX_BITS);
                        (e.host, e.sent_at, e.acked, e.counts) = (h, now, false, counts);
                        i
                    }
                    None => {
                        self.sent.push(SentGrant {
                            host: h,
                            sent_at: now,
                            acked: false,
                            generation: 0,
                            counts,
                        });
                        (self.sent.len() - 1) as u32
                    }
                };
                assert!(i <= GRANT_INDEX_MASK, "more than 2^20 grants in flight");
                gid = i | (self.sent[i as usize].generation << GRANT_INDEX_BITS);
                self.unacked.push_back(i);
                self.counters.grants += 1;
            } else {
                self.counters.ack_only += 1;
            }
            let id = self.store(Msg::Grant {
                id: gid,
                req_ack: self.req_seen[h as usize],
                entries,
            });
            let (route, arbiter) = (self.down[h as usize], self.arbiter);
            self.send_control(arbiter, HostId(h), route, id, FLAG_GRANT, payload, cx);
        }
        if self.alloc.outstanding_slots() > 0 || !self.unacked.is_empty() {
            cx.at(now + self.batch, FastpassEvent::Tick);
        } else {
            self.ticking = false;
        }
    }

    /// Host `h` reads a grant.
    fn on_grant<S: ServiceSched>(
        &mut self,
        h: u32,
        gid: u32,
        req_ack: u64,
        entries: &[(u64, u32, u32)],
        cx: &mut ServiceCx<'_, S>,
    ) {
        let now = cx.now;
        let cap = u64::from(self.cfg.max_outstanding);
        let n = self.hosts_n as usize;
        let stride = self.fabric.spines.len() + 1;
        // Acknowledged reports confirm the grant acks they carried.
        {
            let host = &mut self.hosts[h as usize];
            if req_ack > host.req_acked {
                host.req_acked = req_ack;
                while let Some(&(seq, k, _)) = host.in_flight.front() {
                    if seq > req_ack {
                        break;
                    }
                    host.in_flight.pop_front();
                    let k = k.min(host.acks.len());
                    host.acks.drain(..k);
                    for r in &mut host.in_flight {
                        r.1 = r.1.saturating_sub(k);
                    }
                }
            }
            if gid != u32::MAX {
                host.acks.push(gid);
            }
        }
        self.touched.clear();
        for &(slot, dst, spine) in entries {
            let t = self.slot_start(slot);
            let host = &mut self.hosts[h as usize];
            let d = host.dsts.entry(dst).or_default();
            if t < now {
                // Counted as granted, so that the demand it was for is asked for again.
                d.got += 1;
                // Too late to use: the demand stays and is asked for again.
                self.counters.slots_late += 1;
                self.touched.push(dst);
                continue;
            }
            // The flows to this destination take the slots in turn (round robin, as the
            // packets of several connections to one host interleave in its queue), skipping
            // those that have stopped.
            let mut chosen = None;
            while let Some(mut front) = d.flows.pop_front() {
                if front.1 == 0 || front.2.is_some_and(|stop| stop <= t) {
                    d.pending = d.pending.saturating_sub(front.1);
                    continue;
                }
                if front.1 != u64::MAX {
                    front.1 -= 1;
                    d.pending -= 1;
                }
                chosen = Some(front.0);
                if let Some(started) = front.3.take() {
                    // The flow's first slot: what it waited from its start, through its
                    // host's report, the arbiter's batch and the grant's way back.
                    let wait = (t - started).as_ns();
                    let h = &mut self.counters.first_slot_wait;
                    // The histogram grows to the value (`saturating_record` would clamp it
                    // to the present range instead).
                    if h.record(wait.max(1)).is_err() {
                        h.saturating_record(wait.max(1));
                    }
                }
                if front.1 > 0 {
                    d.flows.push_back(front);
                }
                break;
            }
            let Some(f) = chosen else {
                // A slot for nothing (a grant allocated again after its acknowledgement
                // was lost): not counted, so it does not offset later demand.
                self.counters.slots_unused += 1;
                continue;
            };
            d.got += 1;
            self.touched.push(dst);
            let k = (h as usize * n + dst as usize) * stride + spine as usize;
            if self.routes[k] == RouteId::NONE {
                self.routes[k] = if spine as usize == self.fabric.spines.len() {
                    cx.net.ecmp_route(0, HostId(h), HostId(dst))
                } else {
                    cx.net
                        .route_via(HostId(h), HostId(dst), self.fabric.spines[spine as usize])
                        .expect("every spine reaches every leaf")
                };
            }
            let route = self.routes[k];
            let host = &mut self.hosts[h as usize];
            if host.tx.back().is_some_and(|b| b.0 > t) {
                // Out of order (a grant overtaken by a later one): keep the queue sorted.
                let i = host.tx.partition_point(|e| e.0 <= t);
                host.tx.insert(i, (t, f, route));
            } else {
                host.tx.push_back((t, f, route));
            }
        }
        // Top up: late slots are asked for again, long-lived flows keep a window of asks.
        let host = &mut self.hosts[h as usize];
        for &dst in &self.touched {
            let d = host.dsts.get_mut(&dst).expect("touched above");
            let target = d.got + d.pending.min(cap);
            if target > d.requested {
                d.requested = target;
                host.changed = true;
            }
        }
        self.arm_tx(h, cx);
        self.report(h, cx);
    }

    /// Makes sure host `h`'s next granted send is scheduled.
    fn arm_tx<S: ServiceSched>(&mut self, h: u32, cx: &mut ServiceCx<'_, S>) {
        let host = &mut self.hosts[h as usize];
        if host.tx_armed {
            return;
        }
        if let Some(&(t, _, _)) = host.tx.front() {
            host.tx_armed = true;
            if t <= cx.now {
                self.on_send(h, cx);
            } else {
                cx.at(t, FastpassEvent::Send(h));
            }
        }
    }

    /// Host `h`'s granted slot begins: its flow sends one packet on the granted route.
    fn on_send<S: ServiceSched>(&mut self, h: u32, cx: &mut ServiceCx<'_, S>) {
        let now = cx.now;
        let host = &mut self.hosts[h as usize];
        host.tx_armed = false;
        while let Some(&(t, f, route)) = host.tx.front() {
            if t > now {
                break;
            }
            debug_assert_eq!(t, now, "a packet sent outside its slot");
            host.tx.pop_front();
            let (flows, mut fcx) = cx.flows();
            flows.grant(f, Grant::Slot(route), &mut fcx);
        }
        let host = &mut self.hosts[h as usize];
        if let Some(&(t, _, _)) = host.tx.front() {
            host.tx_armed = true;
            cx.at(t, FastpassEvent::Send(h));
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn send_control<S: ServiceSched>(
        &mut self,
        from: HostId,
        to: HostId,
        route: RouteId,
        msg: u32,
        flags: u8,
        payload: u32,
        cx: &mut ServiceCx<'_, S>,
    ) {
        let wire = wire_bytes(payload);
        self.counters.control_wire_bytes += u64::from(wire);
        let pkt = Packet {
            seq: u64::from(msg),
            ack: 0,
            sent_at: cx.now,
            echo: Time::ZERO,
            rate: RateStamp::NONE,
            queue_delay_ns: 0,
            flow: FCP_FLOW,
            route,
            dst: to,
            next: dcsim_net::PortId::NONE,
            payload_bytes: 0,
            wire_bytes: dcsim_net::bytes16(wire),
            hop: 0,
            class: Class::Control,
            ip: IpBits::NOT_ECT,
            flags,
        };
        cx.send(from, pkt);
    }

    fn store(&mut self, m: Msg) -> u32 {
        if let Some(i) = self.free_msgs.pop() {
            self.msgs[i as usize] = m;
            i
        } else {
            self.msgs.push(m);
            (self.msgs.len() - 1) as u32
        }
    }

    fn take_msg_buffers(&mut self) -> (Vec<(u32, u64)>, Vec<u32>) {
        (
            self.req_pool.pop().unwrap_or_default(),
            self.ack_pool.pop().unwrap_or_default(),
        )
    }
    fn recycle(&mut self, mut entries: Vec<(u32, u64)>, mut acks: Vec<u32>) {
        entries.clear();
        acks.clear();
        self.req_pool.push(entries);
        self.ack_pool.push(acks);
    }
    fn recycle_grant(&mut self, mut entries: Vec<(u64, u32, u32)>) {
        entries.clear();
        self.grant_pool.push(entries);
    }

    /// Figures for summary.json (the arbiter's compute time is wall-clock time measured on
    /// the side: it varies from run to run).
    fn summary_with(&self, data_wire_bytes: u64) -> Value {
        let c = &self.counters;
        let slots = c.slots_granted.max(1);
        json!({
            "arbiter_host": self.arbiter.0,
            "slot_ps": self.fabric.slot.as_ps(),
            "lead_ns": self.lead.as_ns(),
            "batch_slots": self.cfg.batch_slots,
            "batches": c.batches,
            "requests": c.requests,
            "request_retransmits": c.request_retransmits,
            "grants": c.grants,
            "ack_only": c.ack_only,
            "grants_lost": c.grants_lost,
            "control_lost_injected": c.control_lost,
            "slots_granted": c.slots_granted,
            "slots_late": c.slots_late,
            "slots_unused": c.slots_unused,
            "control_wire_bytes": c.control_wire_bytes,
            "control_overhead": c.control_wire_bytes as f64 / (c.control_wire_bytes + data_wire_bytes).max(1) as f64,
            "arbiter_compute_ns_per_slot": c.compute_ns as f64 / slots as f64,
            "arbiter_compute_ns_per_batch": c.compute_ns as f64 / c.batches.max(1) as f64,
            "first_slot_wait_us": first_slot_wait(&c.first_slot_wait),
        })
    }
}

/// The summary of flows' waits for their first slot, µs: how many, mean, median, 99th
/// percentile and largest (to the histogram's three significant digits).
fn first_slot_wait(h: &Histogram<u64>) -> Value {
    let us = |ns: u64| ns as f64 / 1e3;
    if h.is_empty() {
        return json!({"flows": 0});
    }
    json!({
        "flows": h.len(),
        "mean": h.mean() / 1e3,
        "p50": us(h.value_at_quantile(0.5)),
        "p99": us(h.value_at_quantile(0.99)),
        "max": us(h.max()),
    })
}

impl Service for Fastpass {
    type Event = FastpassEvent;
    const SUMMARY_KEY: &'static str = "fastpass";
    const CONFIGURED_BY: &'static str = "transport \"fastpass\"";

    /// One arbiter (one Fastpass configuration), on a host that exists, on a leaf-spine
    /// fabric it can schedule.
    fn check(cx: &CheckCx<'_>) -> Result<(), String> {
        let mut configs = cx.transports.iter().filter_map(|t| match t {
            TransportSpec::Fastpass(c) => Some(c),
            _ => None,
        });
        let Some(first) = configs.next() else {
            return Ok(());
        };
        if configs.any(|c| c != first) {
            return Err(
                "transports: every Fastpass transport must have the same settings (one arbiter \
                 per network)"
                    .into(),
            );
        }
        Fabric::of(cx.topology, first.slot_bytes)?;
        if let Some(a) = first.arbiter
            && a >= cx.hosts
        {
            return Err(format!(
                "transport.arbiter: host {a} is out of range (0..{})",
                cx.hosts
            ));
        }
        Ok(())
    }

    fn wanted(cx: &CheckCx<'_>) -> bool {
        cx.transports
            .iter()
            .any(|t| matches!(t, TransportSpec::Fastpass(_)))
    }

    fn build<S: ServiceSched>(cx: &mut BuildCx<'_, S>) -> Result<Option<Self>, String> {
        let Some(cfg) = cx.transports.iter().find_map(|t| match t {
            TransportSpec::Fastpass(c) => Some(c.clone()),
            _ => None,
        }) else {
            return Ok(None);
        };
        Self::new(cfg, cx.net, cx.topology, cx.rng).map(Some)
    }

    fn on_event<S: ServiceSched>(&mut self, ev: FastpassEvent, cx: &mut ServiceCx<'_, S>) {
        match ev {
            FastpassEvent::Tick => self.on_tick(cx),
            FastpassEvent::Host(h) => self.on_host_timer(h, cx),
            FastpassEvent::Send(h) => self.on_send(h, cx),
        }
    }

    fn on_flow_start<S: ServiceSched>(&mut self, info: &FlowInfo, cx: &mut ServiceCx<'_, S>) {
        if matches!(cx.flows.transport_of(info.flow), TransportSpec::Fastpass(_)) {
            self.start_flow(info.flow, cx);
        }
    }

    fn on_packet<S: ServiceSched>(
        &mut self,
        host: HostId,
        pkt: &Packet,
        cx: &mut ServiceCx<'_, S>,
    ) {
        self.on_control(host, pkt, cx);
    }

    /// Control packets delivered (the flow table counts the others).
    fn packets_delivered(&self) -> u64 {
        self.counters.control_packets_delivered
    }

    /// Control traffic, slots, the arbiter's compute time (wall clock), and the control
    /// overhead against the data bytes the hosts sent.
    fn summary(&self, net: &Network, _flows: &Flows) -> Value {
        let data: u64 = net
            .ports()
            .iter()
            .filter(|p| !net.is_switch(p.node()))
            .map(|p| p.stats().tx_bytes[Class::Data as usize])
            .sum();
        self.summary_with(data)
    }
}
