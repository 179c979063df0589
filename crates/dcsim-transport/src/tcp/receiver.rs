//! The TCP receiver: cumulative ACKs, an out-of-order buffer, SACK blocks, the receive
//! window, delayed ACKs (every second segment, or Linux's rules in [`super::delack`]) with
//! DCTCP's CE state machine.

use dcsim_engine::{Dur, Time, TimerTable};
use dcsim_net::wire::{TCP_IP_HEADER_BYTES, wire_bytes};
use dcsim_net::{Class, Ecn, FlowId, HostId, IpBits, Packet, RateStamp, RouteId};

use super::delack::{AckNow, DelayedAck, LinuxAcks};
use super::rcvbuf::{RcvBuf, TRUESIZE_OVERHEAD, initial_window};
use super::{
    FLAG_ACK, FLAG_CWR, FLAG_DATA, FLAG_ECE, FLAG_EIN, FLAG_RWND, FLAG_SYN, IctcpConn,
    SACK_BLOCKS_SENT, TcpConfig, TcpHost, control_segment, encode_sack, rcv_window,
};
use crate::endpoint::{EndpointCx, FlowInfo, Receiver, Sched};
use crate::ranges::{advance, insert_range};

const T_DELACK: usize = 0;
/// Linux's SACK compression: the held ACK's deadline.
const T_COMPRESS: usize = 1;

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
    delayed_ack: DelayedAck,
    delack_timeout: Dur,
    /// Linux's delayed-ACK state (`delayed_ack = "linux"`).
    linux: Option<LinuxAcks>,
    mss: u64,
    /// The receive window: the most it advertises and its scale (`rcv_buf`), and the right
    /// edge advertised last, which never moves back (RFC 7323 §2.4).
    window: Option<(u64, u32)>,
    right_edge: u64,
    /// Linux's autotuning of the buffer (`rcv_autotune`), which then sets the window
    /// (boxed: most receivers have none, and a receiver lives as long as its flow).
    tune: Option<Box<RcvBuf>>,
    /// Memory the segment being answered takes until the application reads it.
    unread: u64,
    /// When the first SYN-ACK left (the handshake's round trip times Linux's ACK clock).
    syn_ack_at: Option<Time>,
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
    timers: TimerTable<2>,
}

impl TcpReceiver {
    /// The receiver of `flow` under `cfg`.
    pub fn new(cfg: &TcpConfig, flow: &FlowInfo) -> Self {
        let tune = (cfg.rcv_autotune == Some(true)).then(|| {
            Box::new(RcvBuf::new(
                cfg.rcv_buf.map_or(super::LINUX_RCV_BUF, |b| b.0),
                cfg.mss.0,
            ))
        });
        Self {
            flow: flow.flow,
            route: flow.rev,
            dst: flow.src,
            rcv_nxt: 0,
            ooo: Vec::new(),
            sack: (cfg.sack == Some(true)).then(Vec::new),
            delayed_ack: cfg.delayed_ack.unwrap_or_default(),
            delack_timeout: cfg.delack_timeout,
            linux: (cfg.delayed_ack == Some(DelayedAck::Linux))
                .then(|| LinuxAcks::new(cfg.min_rto())),
            mss: cfg.mss.0,
            window: if tune.is_some() {
                None
            } else {
                cfg.rcv_buf.map(|b| rcv_window(b.0))
            },
            // The SYN-ACK's window.
            right_edge: if tune.is_some() {
                initial_window(cfg.mss.0)
            } else {
                0
            },
            tune,
            unread: 0,
            syn_ack_at: None,
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
        let duplicate = end <= self.rcv_nxt;
        let in_order = seq <= self.rcv_nxt && !duplicate;
        let had_ooo = !self.ooo.is_empty();
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
        if let Some(tune) = &mut self.tune {
            let len = end - seq;
            // The memory this segment and the data held out of order take.
            self.unread = if in_order { len + TRUESIZE_OVERHEAD } else { 0 };
            let held: u64 = self.ooo.iter().map(|r| r.1 - r.0).sum();
            let rmem = self.unread + tune.truesize_of(held);
            // A super-packet's segment size is one segment (Linux's `gso_size`).
            let grew = !duplicate
                && tune.on_segment(
                    len,
                    len.min(self.mss),
                    in_order,
                    self.sack.is_some(),
                    self.rcv_nxt,
                    rmem,
                    p.echo,
                    cx.now(),
                );
            if grew && let Some(acks) = &mut self.linux {
                acks.window_grew();
            }
            if !in_order
                && !duplicate
                && let Some(last) = self.ooo.last()
            {
                tune.on_out_of_order(self.rcv_nxt, last.1);
            }
        }
        let ce = p.ip.ecn() == Ecn::Ce;
        self.ein_pending |= p.ip.ein();
        self.last_echo = p.sent_at;
        let now = cx.now();
        self.last_arrival = now;
        self.last_rate = p.rate;
        self.last_queue_delay_ns = p.queue_delay_ns;
        match self.delayed_ack {
            DelayedAck::Off => self.send_ack(ce, cx),
            DelayedAck::EverySecond => {
                if !in_order || !self.ooo.is_empty() || self.completed {
                    self.send_ack(ce, cx);
                } else {
                    self.hold_ack(ce, cx);
                    if self.pending_acks >= 2 {
                        self.send_ack(ce, cx);
                    } else {
                        cx.arm_in(&mut self.timers, T_DELACK, self.delack_timeout);
                    }
                }
            }
            DelayedAck::Linux => {
                let wnd = self.advertised_window();
                let Some(acks) = &mut self.linux else {
                    unreachable!("Linux ACK state exists with delayed_ack = \"linux\"")
                };
                if p.echo > Time::ZERO {
                    // The data echoes the time of the ACK it answers (the timestamp option).
                    acks.rtt_sample(now.saturating_since(p.echo));
                } else if let Some(t) = self.syn_ack_at.take() {
                    acks.rtt_sample(now.saturating_since(t));
                }
                let cwr = p.flags & FLAG_CWR != 0;
                acks.on_segment(now, in_order, duplicate, ce, cwr, wnd, self.mss);
                let filled = had_ooo && self.ooo.is_empty();
                let deadline = self.timers.deadline(T_DELACK);
                let ofo = !self.ooo.is_empty() && self.sack.is_some();
                let decision =
                    if self.completed || duplicate || (!self.ooo.is_empty() && self.sack.is_none())
                    {
                        AckNow::Send
                    } else {
                        acks.decide(now, self.rcv_nxt, ofo, filled, deadline, self.mss)
                    };
                match decision {
                    AckNow::Send => self.send_ack(ce, cx),
                    AckNow::Delay(at) => {
                        self.hold_ack(ce, cx);
                        cx.arm(&mut self.timers, T_DELACK, at);
                    }
                    AckNow::Compress(at) => {
                        self.hold_ack(ce, cx);
                        if self.timers.deadline(T_COMPRESS).is_none() {
                            cx.arm(&mut self.timers, T_COMPRESS, at);
                        }
                    }
                }
            }
        }
        // The application, woken by data in order, reads it once the segment has been
        // answered.
        if let Some(tune) = &mut self.tune {
            self.unread = 0;
            if in_order {
                tune.on_read(self.rcv_nxt, self.ooo.last().map(|r| r.1), now);
            }
        }
    }

    /// Holds this segment's acknowledgement: DCTCP's receiver state machine first
    /// acknowledges the segments held so far with the old CE state if this one changes
    /// it, so every mark is echoed exactly.
    fn hold_ack<S: Sched, H>(&mut self, ce: bool, cx: &mut EndpointCx<'_, S, H>) {
        if ce != self.ce_state && self.pending_acks > 0 {
            let old = self.ce_state;
            self.send_ack(old, cx);
        }
        self.ce_state = ce;
        self.pending_acks += 1;
    }

    /// With autotuning: the memory the unread segment and the data held out of order take.
    fn rmem(&self, tune: &RcvBuf) -> u64 {
        let held: u64 = self.ooo.iter().map(|r| r.1 - r.0).sum();
        self.unread + tune.truesize_of(held)
    }

    /// The window the next ACK advertises (`rcv_buf`): the free room, rounded down to the
    /// window scale, with the right edge never moving back; with autotuning, Linux's
    /// (see [`super::rcvbuf`]).
    fn advertised_window(&self) -> u64 {
        if let Some(tune) = &self.tune {
            return tune
                .select_window(self.rcv_nxt, self.right_edge, self.rmem(tune))
                .0;
        }
        let Some((max, scale)) = self.window else {
            return u64::from(u16::MAX);
        };
        let held: u64 = self.ooo.iter().map(|r| r.1 - r.0).sum();
        let free = max.saturating_sub(held) >> scale << scale;
        (self.rcv_nxt + free).max(self.right_edge) - self.rcv_nxt
    }

    fn send_ack<S: Sched, H>(&mut self, ece: bool, cx: &mut EndpointCx<'_, S, H>) {
        self.pending_acks = 0;
        self.timers.cancel(T_DELACK);
        self.timers.cancel(T_COMPRESS);
        if let Some(acks) = &mut self.linux {
            acks.ack_sent(self.rcv_nxt);
        }
        let ein = core::mem::take(&mut self.ein_pending);
        // The advertised window: the receive buffer's, ICTCP's if smaller.
        let rwnd = match (self.window.is_some() || self.tune.is_some(), self.rwnd) {
            (false, r) => r,
            (true, r) => {
                let w = match &self.tune {
                    Some(tune) => {
                        let (w, short) =
                            tune.select_window(self.rcv_nxt, self.right_edge, self.rmem(tune));
                        if short && let Some(acks) = &mut self.linux {
                            acks.space_short();
                        }
                        w
                    }
                    None => self.advertised_window(),
                };
                if let Some(tune) = &mut self.tune {
                    tune.advertised(w);
                }
                self.right_edge = self.rcv_nxt + w;
                Some(r.map_or(w, |r| r.min(w)))
            }
        };
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
            seq: rwnd.unwrap_or(0),
            flags: FLAG_ACK
                | if ece { FLAG_ECE } else { 0 }
                | if ein { FLAG_EIN } else { 0 }
                | if rwnd.is_some() { FLAG_RWND } else { 0 },
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
            if self.rcv_nxt == 0 {
                self.syn_ack_at = Some(now);
            }
            let mut syn_ack = control_segment(
                self.flow,
                self.route,
                self.dst,
                now,
                p.sent_at,
                FLAG_SYN | FLAG_ACK,
            );
            // The rates the SYN collected (RCP), echoed; no port stamps the answer.
            syn_ack.rate = p.rate;
            cx.send(syn_ack);
        }
    }

    fn on_timer<S: Sched>(
        &mut self,
        kind: usize,
        generation: u32,
        cx: &mut EndpointCx<'_, S, TcpHost>,
    ) {
        if cx.due(&mut self.timers, kind, generation).is_some() && self.pending_acks > 0 {
            if kind == T_DELACK
                && let Some(acks) = &mut self.linux
            {
                acks.timer_fired();
            }
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
