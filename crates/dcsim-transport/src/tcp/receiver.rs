//! The TCP receiver: cumulative ACKs, an out-of-order buffer, delayed ACKs with DCTCP's
//! CE state machine.

use dcsim_engine::{Dur, Time, TimerTable};
use dcsim_net::wire::{TCP_IP_HEADER_BYTES, wire_bytes};
use dcsim_net::{Class, Ecn, FlowId, HostId, IpBits, Packet, RateStamp, RouteId};

use super::{
    FLAG_ACK, FLAG_DATA, FLAG_ECE, FLAG_EIN, FLAG_RWND, FLAG_SYN, IctcpConn, SACK_BLOCKS_SENT,
    TcpConfig, TcpHost, control_segment, encode_sack,
};
use crate::endpoint::{EndpointCx, FlowInfo, Receiver, Sched};
use crate::ranges::{advance, insert_range};

const T_DELACK: usize = 0;

/// Blocks the receiver remembers (Linux's `TCP_NUM_SACKS`); it sends the first
/// [`SACK_BLOCKS_SENT`].
const SACK_BLOCKS_KEPT: usize = 4;

/// The receiving end of a TCP flow.
pub struct TcpReceiver {
    flow: FlowId,
    route: RouteId,
    dst: HostId,
    rcv_nxt: u64,
    ooo: Vec<(u64, u64)>,
    /// With SACK: the blocks to report, most recently changed first (RFC 2018 §4, as
    /// Linux's `selective_acks`), at most [`SACK_BLOCKS_KEPT`].
    sack: Option<Vec<(u64, u64)>>,
    delayed_ack: bool,
    delack_timeout: Dur,
    pending_acks: u32,
    ce_state: bool,
    /// A segment not yet acknowledged arrived with EIN (echoed on the next ACK).
    ein_pending: bool,
    /// ICTCP's state of this connection, and the receiving link in bytes/s.
    ictcp: Option<(IctcpConn, f64)>,
    /// The window advertised in ACKs (ICTCP), if any.
    rwnd: Option<u64>,
    last_echo: Time,
    /// When the last data packet arrived.
    last_arrival: Time,
    /// What the last data packet carried from the network, echoed in ACKs.
    last_rate: RateStamp,
    last_queue_delay_ns: u32,
    completed: bool,
    timers: TimerTable<1>,
}

impl TcpReceiver {
    /// The receiver of `flow` under `cfg`.
    pub fn new(cfg: &TcpConfig, flow: &FlowInfo) -> Self {
        Self {
            flow: flow.flow,
            route: flow.rev,
            dst: flow.src,
            rcv_nxt: 0,
            ooo: Vec::new(),
            sack: (cfg.sack == Some(true)).then(Vec::new),
            delayed_ack: cfg.delayed_ack,
            delack_timeout: cfg.delack_timeout,
            pending_acks: 0,
            ce_state: false,
            ein_pending: false,
            ictcp: cfg.ictcp.as_ref().map(|i| {
                (
                    IctcpConn::new(i, cfg.mss.0),
                    flow.dst_link.bps() as f64 / 8.0,
                )
            }),
            rwnd: None,
            last_echo: Time::ZERO,
            last_arrival: Time::ZERO,
            last_rate: RateStamp::NONE,
            last_queue_delay_ns: 0,
            completed: false,
            timers: TimerTable::default(),
        }
    }

    fn on_data<S: Sched, H>(&mut self, p: &Packet, cx: &mut EndpointCx<'_, S, H>) {
        let (seq, end) = (p.seq, p.seq + u64::from(p.payload_bytes));
        let in_order = seq == self.rcv_nxt;
        if in_order {
            self.rcv_nxt = end;
            advance(&mut self.rcv_nxt, &mut self.ooo);
            if let Some(blocks) = &mut self.sack {
                // Blocks now below the cumulative acknowledgement are no longer reported.
                let next = self.rcv_nxt;
                blocks.retain(|b| b.0 > next);
            }
        } else if seq > self.rcv_nxt {
            insert_range(&mut self.ooo, seq, end);
            if let Some(blocks) = &mut self.sack {
                // The block that holds this segment goes first; blocks it absorbed go.
                let i = self.ooo.partition_point(|r| r.1 < seq);
                let block = self.ooo[i];
                blocks.retain(|b| b.1 < block.0 || b.0 > block.1);
                blocks.insert(0, block);
                blocks.truncate(SACK_BLOCKS_KEPT);
            }
        }
        if self.rcv_nxt >= cx.shared.limit_bytes {
            self.completed = true;
        }
        let ce = p.ip.ecn() == Ecn::Ce;
        self.ein_pending |= p.ip.ein();
        self.last_echo = p.sent_at;
        self.last_arrival = cx.now();
        self.last_rate = p.rate;
        self.last_queue_delay_ns = p.queue_delay_ns;
        if !self.delayed_ack || !in_order || !self.ooo.is_empty() || self.completed {
            self.send_ack(ce, cx);
            return;
        }
        // DCTCP's receiver state machine: a change of CE state first acknowledges the
        // segments held so far with the old state, so every mark is echoed exactly.
        if ce != self.ce_state && self.pending_acks > 0 {
            let old = self.ce_state;
            self.send_ack(old, cx);
        }
        self.ce_state = ce;
        self.pending_acks += 1;
        if self.pending_acks >= 2 {
            self.send_ack(ce, cx);
        } else {
            cx.arm_in(&mut self.timers, T_DELACK, self.delack_timeout);
        }
    }

    fn send_ack<S: Sched, H>(&mut self, ece: bool, cx: &mut EndpointCx<'_, S, H>) {
        self.pending_acks = 0;
        self.timers.cancel(T_DELACK);
        let ein = core::mem::take(&mut self.ein_pending);
        let ack = Packet {
            ack: self.rcv_nxt,
            sent_at: self.last_arrival,
            echo: self.last_echo,
            rate: self.last_rate,
            queue_delay_ns: self.last_queue_delay_ns,
            flow: self.flow,
            route: self.route,
            dst: self.dst,
            next: dcsim_net::PortId::NONE,
            payload_bytes: 0,
            wire_bytes: dcsim_net::bytes16(wire_bytes(TCP_IP_HEADER_BYTES)),
            hop: 0,
            class: Class::Control,
            ip: IpBits::NOT_ECT,
            seq: self.rwnd.unwrap_or(0),
            flags: FLAG_ACK
                | if ece { FLAG_ECE } else { 0 }
                | if ein { FLAG_EIN } else { 0 }
                | if self.rwnd.is_some() { FLAG_RWND } else { 0 },
        };
        match &self.sack {
            Some(blocks) if !blocks.is_empty() => {
                let n = blocks.len().min(SACK_BLOCKS_SENT);
                cx.send_with_ext(ack, &encode_sack(self.rcv_nxt, &blocks[..n]));
            }
            _ => cx.send(ack),
        }
    }
}

impl Receiver for TcpReceiver {
    type Host = TcpHost;

    fn on_packet<S: Sched>(&mut self, p: &Packet, cx: &mut EndpointCx<'_, S, TcpHost>) {
        if p.flags & FLAG_DATA != 0 {
            if let Some((conn, capacity)) = &mut self.ictcp {
                let now = cx.now();
                // The data echoes the time of the ACK it answers: a receiver RTT sample.
                let rtt = (p.echo > Time::ZERO).then(|| now.saturating_since(p.echo));
                let host = &mut cx.host_state.ictcp;
                self.rwnd = Some(conn.on_data(host, *capacity, now, p.payload_bytes.into(), rtt));
            }
            self.on_data(p, cx);
            if self.completed
                && let Some((conn, _)) = &mut self.ictcp
            {
                conn.close(&mut cx.host_state.ictcp);
            }
        } else if p.flags & FLAG_SYN != 0 {
            // Every SYN (a retransmitted one too) gets a SYN-ACK echoing its timestamp.
            let now = cx.now();
            cx.send(control_segment(
                self.flow,
                self.route,
                self.dst,
                now,
                p.sent_at,
                FLAG_SYN | FLAG_ACK,
            ));
        }
    }

    fn on_timer<S: Sched>(
        &mut self,
        kind: usize,
        generation: u32,
        cx: &mut EndpointCx<'_, S, TcpHost>,
    ) {
        if cx.due(&mut self.timers, kind, generation).is_some() && self.pending_acks > 0 {
            self.send_ack(self.ce_state, cx);
        }
    }

    fn delivered_bytes(&self) -> u64 {
        self.rcv_nxt
    }

    fn is_complete(&self) -> bool {
        self.completed
    }

    fn is_idle(&self) -> bool {
        self.pending_acks == 0
    }
}
