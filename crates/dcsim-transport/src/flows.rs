//! The flow table: specs, per-flow connection state (built at flow start, dropped when the
//! flow is finished) and the records that results are made from.

use dcsim_engine::{Dur, Rate, RngTree, Schedule, Time, splitmix};
use dcsim_net::wire::{TCP_IP_HEADER_BYTES, wire_bytes};
use dcsim_net::{Class, FlowId, HostId, NetEvent, PacketId, RouteId};

use crate::cc::{CcMetrics, CongestionControl};
use crate::tcp::{Endpoints, Progress, TcpConn};
use crate::xpass::XpassConn;
use crate::{FlowCx, FlowEvent, TransportSpec};

/// A flow to simulate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    /// Sending host.
    pub src: HostId,
    /// Receiving host.
    pub dst: HostId,
    /// Bytes to deliver; `None` for a long-lived flow.
    pub size_bytes: Option<u64>,
    /// Start time.
    pub start: Time,
    /// Time after which no new data is sent, if any.
    pub stop: Option<Time>,
    /// Index of the transport in the flow table's transport list.
    pub transport: u32,
}

/// What is known about a flow, for results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowRecord {
    /// When the receiver held every byte.
    pub end: Option<Time>,
    /// Completion time alone on its path at line rate.
    pub ideal_fct: Option<Dur>,
    /// Bytes the receiver holds in order (kept when the connection is dropped).
    pub delivered_bytes: u64,
    /// Bytes the flow ended up sending, when a stop time cut it short.
    pub sent_bytes_at_stop: Option<u64>,
    /// Retransmitted packets.
    pub retransmits: u64,
    /// Retransmission timeouts (TCP).
    pub timeouts: u64,
    /// Credits the receiver sent (ExpressPass).
    pub credits_sent: u64,
    /// Credits that reached the sender with nothing to send, including those that arrived
    /// after the flow had finished (ExpressPass).
    pub credits_wasted: u64,
}

/// Per-flow connection state, statically dispatched.
enum Conn {
    Tcp(TcpConn),
    Xpass(XpassConn),
}

/// Forwards a call to the connection, whatever its transport.
macro_rules! conn {
    ($c:expr, $t:ident => $e:expr) => {
        match $c {
            Conn::Tcp($t) => $e,
            Conn::Xpass($t) => $e,
        }
    };
}

impl Conn {
    /// Copies the live counters into `r`.
    fn fold_into(&self, r: &mut FlowRecord, long_lived: bool) {
        match self {
            Self::Tcp(t) => {
                r.retransmits = t.stats().retransmits;
                r.timeouts = t.stats().timeouts;
            }
            Self::Xpass(x) => {
                let s = x.stats();
                r.retransmits = s.retransmits;
                r.credits_sent = s.credits_sent;
                // Stragglers already counted by the flow table stay counted.
                r.credits_wasted = r.credits_wasted.max(s.credits_wasted);
            }
        }
        r.delivered_bytes = conn!(self, t => t.delivered_bytes());
        if long_lived {
            r.sent_bytes_at_stop = conn!(self, t => t.limit_bytes());
        }
    }
}

struct Flow {
    spec: FlowSpec,
    record: FlowRecord,
    conn: Option<Box<Conn>>,
    waiting_nic: bool,
}

/// All flows of a simulation.
pub struct Flows {
    transports: Vec<TransportSpec>,
    flows: Vec<Flow>,
    /// Per host: flows waiting for room in the NIC queue, in the order they blocked.
    nic_waiters: Vec<Vec<FlowId>>,
    rng: RngTree,
    completed: u64,
    active: u64,
    delivered_pkts: u64,
    stale_timers: u64,
}

impl Flows {
    /// A flow table for `hosts` hosts using the given transports (flows refer to them by
    /// index); flows that need randomness draw from `rng`'s stream `("flow", id)`.
    pub fn new(transports: Vec<TransportSpec>, hosts: usize, rng: RngTree) -> Self {
        Self {
            transports,
            flows: Vec::new(),
            nic_waiters: vec![Vec::new(); hosts],
            rng,
            completed: 0,
            active: 0,
            delivered_pkts: 0,
            stale_timers: 0,
        }
    }

    /// Adds a flow; the caller schedules [`FlowEvent::Start`] at its start time.
    pub fn add(&mut self, spec: FlowSpec) -> FlowId {
        self.flows.push(Flow {
            spec,
            record: FlowRecord::default(),
            conn: None,
            waiting_nic: false,
        });
        FlowId::new(self.flows.len() - 1)
    }

    /// Number of flows.
    pub fn len(&self) -> usize {
        self.flows.len()
    }
    /// Whether there are no flows.
    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }
    /// The spec of flow `f`.
    pub fn spec(&self, f: FlowId) -> &FlowSpec {
        &self.flows[f.index()].spec
    }
    /// The transports.
    pub fn transports(&self) -> &[TransportSpec] {
        &self.transports
    }
    /// The record of flow `f`, with live counters folded in.
    pub fn record(&self, f: FlowId) -> FlowRecord {
        let fl = &self.flows[f.index()];
        let mut r = fl.record;
        if let Some(c) = &fl.conn {
            c.fold_into(&mut r, fl.spec.size_bytes.is_none());
        }
        r
    }
    /// Bytes delivered in order to the receiver of `f`.
    pub fn delivered_bytes(&self, f: FlowId) -> u64 {
        let fl = &self.flows[f.index()];
        fl.conn.as_deref().map_or(
            fl.record.delivered_bytes,
            |c| conn!(c, t => t.delivered_bytes()),
        )
    }
    /// Sender state of `f` for samplers, while it runs: `(kind, value)` pairs
    /// (`cwnd_bytes`, `alpha` for TCP; `credit_rate_gbps`, `w` for ExpressPass).
    pub fn sample(&self, f: FlowId) -> Vec<(&'static str, f64)> {
        match self.flows[f.index()].conn.as_deref() {
            Some(Conn::Tcp(t)) => {
                let m = t.cc().metrics();
                vec![("cwnd_bytes", m.cwnd_bytes as f64), ("alpha", m.alpha)]
            }
            Some(Conn::Xpass(x)) => vec![
                ("credit_rate_gbps", x.credit_rate() * 8.0 / 1e9),
                ("w", x.w()),
            ],
            None => Vec::new(),
        }
    }
    /// Controller state of TCP flow `f`, while it is running.
    pub fn cc_metrics(&self, f: FlowId) -> Option<CcMetrics> {
        match self.flows[f.index()].conn.as_deref() {
            Some(Conn::Tcp(t)) => Some(t.cc().metrics()),
            _ => None,
        }
    }
    /// Flows whose receiver has every byte.
    pub fn completed(&self) -> u64 {
        self.completed
    }
    /// Flows started and not yet finished.
    pub fn active(&self) -> u64 {
        self.active
    }
    /// Packets consumed by endpoints.
    pub fn delivered_pkts(&self) -> u64 {
        self.delivered_pkts
    }
    /// Timer events that were stale when they fired.
    pub fn stale_timers(&self) -> u64 {
        self.stale_timers
    }

    /// Handles [`FlowEvent::Start`]: routes the flow, builds its connection, starts it.
    ///
    /// # Panics
    /// If a credit-based flow got routes that are not each other's reverse (the scenario
    /// check rejects non-symmetric routing for ExpressPass, so this is a bug).
    pub fn on_start<S>(&mut self, f: FlowId, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        let fl = &mut self.flows[f.index()];
        let spec = fl.spec;
        let key = splitmix(u64::from(f.0));
        let (fwd, rev) = cx.net.flow_routes(key, spec.src, spec.dst);
        let t = &self.transports[spec.transport as usize];
        fl.record.ideal_fct = spec.size_bytes.map(|size| {
            let route = if fwd == RouteId::NONE {
                cx.net.ecmp_route(key, spec.src, spec.dst)
            } else {
                fwd
            };
            ideal_fct(
                cx.net.path_links(route),
                size,
                t.payload_per_packet(),
                t.full_packet_wire_bytes(),
            )
        });
        let ep = Endpoints {
            flow: f,
            src: spec.src,
            dst: spec.dst,
            fwd,
            rev,
        };
        let mut conn = match t {
            TransportSpec::Tcp(c) => Conn::Tcp(TcpConn::new(c, ep, spec.size_bytes)),
            TransportSpec::Expresspass(c) => {
                // ExpressPass: data must cross exactly the reverse links of its credits.
                assert!(
                    cx.net.is_reverse(fwd, rev),
                    "flow {f}: ExpressPass needs symmetric routes"
                );
                let link = cx.net.port(cx.net.nic(spec.dst)).rate();
                Conn::Xpass(XpassConn::new(
                    c,
                    ep,
                    spec.size_bytes,
                    link,
                    self.rng.stream("flow", u64::from(f.0)),
                ))
            }
        };
        self.active += 1;
        let p = conn!(&mut conn, c => c.on_start(spec.stop, cx));
        fl.conn = Some(Box::new(conn));
        self.after(f, p, cx.now);
    }

    /// Handles a packet that reached host `_host` for its flow. Frees it.
    #[inline]
    pub fn on_packet<S>(&mut self, _host: HostId, pkt: PacketId, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        self.delivered_pkts += 1;
        let f = cx.pool.get(pkt).flow;
        let fl = &mut self.flows[f.index()];
        let Some(conn) = fl.conn.as_deref_mut() else {
            // A straggler for a finished flow: a duplicate ACK, or a credit that was in
            // flight when the receiver stopped (wasted).
            if cx.pool.get(pkt).class == Class::Credit {
                fl.record.credits_wasted += 1;
            }
            cx.pool.free(pkt);
            return;
        };
        let p = conn!(conn, c => c.on_packet(pkt, cx));
        self.after(f, p, cx.now);
    }

    /// Handles [`FlowEvent::Timer`].
    pub fn on_timer<S>(&mut self, f: FlowId, kind: u8, generation: u32, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        let Some(conn) = self.flows[f.index()].conn.as_deref_mut() else {
            self.stale_timers += 1;
            return;
        };
        let (p, stale) = conn!(conn, c => c.on_timer(kind, generation, cx));
        self.stale_timers += u64::from(stale);
        self.after(f, p, cx.now);
    }

    /// Host `host`'s NIC queue has drained: let its waiting senders continue, in the order
    /// they blocked.
    pub fn on_nic_ready<S>(&mut self, host: HostId, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        // Index-based, because a flow that blocks again re-registers at the end of the same
        // list while we walk it; the handled prefix is drained afterwards (no allocation).
        // Once one flow blocks again the NIC is full, and the flows behind it would only
        // block too: stop there, so a wake-up costs the flows it lets send, not every
        // waiter (thousands per host in a shuffle). The order stays round-robin.
        let n = self.nic_waiters[host.index()].len();
        let mut done = 0;
        while done < n {
            let f = self.nic_waiters[host.index()][done];
            done += 1;
            let fl = &mut self.flows[f.index()];
            fl.waiting_nic = false;
            if let Some(Conn::Tcp(t)) = fl.conn.as_deref_mut() {
                let p = t.on_nic_ready(cx);
                self.after(f, p, cx.now);
                if p.nic_blocked {
                    break;
                }
            }
        }
        self.nic_waiters[host.index()].drain(..done);
    }

    fn after(&mut self, f: FlowId, p: Progress, now: Time) {
        let fl = &mut self.flows[f.index()];
        if p.nic_blocked && !fl.waiting_nic {
            fl.waiting_nic = true;
            self.nic_waiters[fl.spec.src.index()].push(f);
        }
        if p.completed && fl.record.end.is_none() {
            fl.record.end = Some(now);
            self.completed += 1;
        }
        if p.finished
            && let Some(c) = fl.conn.take()
        {
            c.fold_into(&mut fl.record, fl.spec.size_bytes.is_none());
            self.active -= 1;
        }
    }
}

/// Completion time of `size_bytes` sent alone at line rate along links `(rate, delay)`,
/// packetized into `payload`-byte packets of `full_wire` wire bytes (the last one smaller):
/// the arrival of the last byte at the receiver, counting store-and-forward at every hop
/// and pipelining behind the slowest link.
///
/// For equal packets through a tandem of links, packet k leaves hop i at
/// `Σ_{j≤i} tx_j + Σ_{j<i} d_j + k·max_{j≤i} tx_j`; the last (possibly shorter) packet is
/// then followed hop by hop.
pub fn ideal_fct(
    links: impl Iterator<Item = (Rate, Dur)>,
    size_bytes: u64,
    payload: u64,
    full_wire: u32,
) -> Dur {
    let n = size_bytes.div_ceil(payload).max(1);
    let last_payload = size_bytes - (n - 1) * payload;
    let last_wire = u64::from(wire_bytes(last_payload as u32 + TCP_IP_HEADER_BYTES))
        .min(u64::from(full_wire).max(1));
    let last_wire = if n == 1 || last_payload < payload {
        last_wire
    } else {
        u64::from(full_wire)
    };
    let (mut sum_tx, mut sum_d, mut max_tx) = (Dur::ZERO, Dur::ZERO, Dur::ZERO);
    let mut t_last = Dur::ZERO;
    for (rate, delay) in links {
        let tx = rate.tx_time(u64::from(full_wire));
        sum_tx += tx;
        max_tx = max_tx.max(tx);
        let prev_dep = if n >= 2 {
            sum_tx + sum_d + max_tx * (n - 2)
        } else {
            Dur::ZERO
        };
        t_last = t_last.max(prev_dep) + rate.tx_time(last_wire) + delay;
        sum_d += delay;
    }
    t_last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideal_fct_of_one_packet_is_store_and_forward_plus_propagation() {
        let links = [(Rate::from_gbps(10), Dur::from_us(1)); 3];
        let d = ideal_fct(links.into_iter(), 100, 1460, 1538);
        // 100 B payload + 40 B TCP/IP + 38 B framing = 178 wire bytes per hop.
        assert_eq!(d, Rate::from_gbps(10).tx_time(178) * 3 + Dur::from_us(3));
    }

    #[test]
    fn ideal_fct_pipelines_behind_the_bottleneck() {
        // 10 full packets, 10G then 1G then 10G: the last arrives after the first packet's
        // path time plus 9 serializations at 1G.
        let links = [
            (Rate::from_gbps(10), Dur::from_us(1)),
            (Rate::from_gbps(1), Dur::from_us(1)),
            (Rate::from_gbps(10), Dur::from_us(1)),
        ];
        let d = ideal_fct(links.into_iter(), 14600, 1460, 1538);
        let first = Rate::from_gbps(10).tx_time(1538) * 2
            + Rate::from_gbps(1).tx_time(1538)
            + Dur::from_us(3);
        assert_eq!(d, first + Rate::from_gbps(1).tx_time(1538) * 9);
    }
}
