//! The shared reliable transport: TCP NewReno mechanics with a pluggable congestion
//! controller ([`crate::cc`]).
//!
//! The sender and receiver of one flow live in one [`TcpConn`]; they talk only through
//! packets. Sequence numbers count payload bytes from 0. There is no handshake: the first
//! window leaves at the flow's start time (like ns-2's one-way TCP agents and htsim).
//!
//! Sender: slow start, congestion avoidance (policy in the controller), fast retransmit
//! after three duplicate ACKs and NewReno fast recovery with partial ACKs (RFC 6582),
//! retransmission timeout with exponential backoff and go-back-N (RFC 6298), RTT from
//! echoed timestamps (like the TCP timestamp option), and the ECN echo handled at most once
//! per window (RFC 3168's CWR state) by calling the controller's `on_ecn`.
//!
//! Receiver: cumulative ACKs with an out-of-order range buffer, one ACK per segment by
//! default, or delayed ACKs (every second segment or a timeout, immediate on reordering)
//! with DCTCP's two-state CE machine so that marks are echoed exactly.
//!
//! # Header usage
//! Data: `seq` = first byte, `payload_bytes`, `sent_at`; ACK: `ack` = next expected byte,
//! `echo` = `sent_at` of the segment that triggered it, flag `ECE`.
//!
//! # Deviations
//! No SYN/FIN, no SACK, no receiver window (unless `max_window` is set), no Nagle.

use dcsim_engine::{ByteSize, Dur, Rate, Schedule, Time, TimerTable};
use dcsim_net::wire::{TCP_IP_HEADER_BYTES, TCP_MSS_BYTES, wire_bytes};
use dcsim_net::{Class, Ecn, FlowId, HostId, NetEvent, Packet, PacketId, RouteId};
use serde::{Deserialize, Serialize};

use crate::cc::{AckSample, Cc, CcSpec, CongestionControl, WindowLimits};
use crate::{Due, FlowCx, FlowEvent, arm_timer, timer_due};

/// Packet flag: carries data.
pub const FLAG_DATA: u8 = 1;
/// Packet flag: an acknowledgement.
pub const FLAG_ACK: u8 = 2;
/// Packet flag: ECN echo.
pub const FLAG_ECE: u8 = 4;

const T_RTO: usize = 0;
const T_DELACK: usize = 1;
const T_STOP: usize = 2;
/// Timer kinds of a TCP connection.
pub(crate) const TIMERS: usize = 3;

/// Parameters of the reliable transport. Defaults are data-centre values, each with its
/// source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    /// Congestion controller (`"reno"`, `"dctcp"` or a table with parameters).
    pub cc: CcSpec,
    /// Maximum payload per segment (1460 B for a 1500 B MTU).
    pub mss: ByteSize,
    /// Initial window in segments (10, RFC 6928).
    pub init_cwnd_pkts: u32,
    /// Floor of the window in segments after any decrease (2, as Linux and RFC 5681's
    /// `2·SMSS` ssthresh floor; ns-2 allows 1).
    pub min_cwnd_pkts: u32,
    /// Minimum retransmission timeout (1 ms; data-centre studies use 200 µs – 4 ms, Linux
    /// 200 ms).
    pub min_rto: Dur,
    /// Retransmission timeout before the first RTT sample (1 ms, as FlexPass's scripts).
    pub init_rto: Dur,
    /// Largest retransmission timeout after backoff (1 s).
    pub max_rto: Dur,
    /// ECN-capable transport. Default: on for controllers that use ECN (DCTCP).
    pub ecn: Option<bool>,
    /// Delayed ACKs: acknowledge every second segment or after `delack_timeout`.
    /// Off by default, as in the reference data-centre simulations (one ACK per segment).
    pub delayed_ack: bool,
    /// Delayed-ACK timeout (50 µs, about one data-centre RTT).
    pub delack_timeout: Dur,
    /// Cap on the window (a receiver window), if any.
    pub max_window: Option<ByteSize>,
}

impl Default for TcpConfig {
    fn default() -> Self {
        Self {
            cc: CcSpec::default(),
            mss: ByteSize(u64::from(TCP_MSS_BYTES)),
            init_cwnd_pkts: 10,
            min_cwnd_pkts: 2,
            min_rto: Dur::from_ms(1),
            init_rto: Dur::from_ms(1),
            max_rto: Dur::from_secs(1),
            ecn: None,
            delayed_ack: false,
            delack_timeout: Dur::from_us(50),
            max_window: None,
        }
    }
}

impl TcpConfig {
    /// Checks parameter ranges; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.mss.0 == 0 || self.mss.0 > 9000 {
            return Err(format!(
                "mss: must be between 1B and 9000B, got {}",
                self.mss
            ));
        }
        if self.init_cwnd_pkts == 0 {
            return Err("init_cwnd_pkts: must be at least 1".into());
        }
        if self.min_cwnd_pkts == 0 {
            return Err("min_cwnd_pkts: must be at least 1".into());
        }
        if self.min_rto == Dur::ZERO {
            return Err("min_rto: must be greater than zero".into());
        }
        if self.max_rto < self.min_rto {
            return Err("max_rto: must be at least min_rto".into());
        }
        if self.init_rto == Dur::ZERO {
            return Err("init_rto: must be greater than zero".into());
        }
        if self.delayed_ack && self.delack_timeout == Dur::ZERO {
            return Err("delack_timeout: must be greater than zero".into());
        }
        self.cc.validate().map_err(|e| format!("cc.{e}"))
    }

    /// Whether data packets are ECN-capable.
    pub fn ecn_enabled(&self) -> bool {
        self.ecn.unwrap_or_else(|| self.cc.uses_ecn())
    }

    /// Wire bytes of a full-size data segment.
    pub fn full_segment_wire_bytes(&self) -> u32 {
        wire_bytes(self.mss.0 as u32 + TCP_IP_HEADER_BYTES)
    }
}

/// Identity and routes of the flow a connection serves.
#[derive(Clone, Copy, Debug)]
pub struct Endpoints {
    /// The flow.
    pub flow: FlowId,
    /// Sending host.
    pub src: HostId,
    /// Receiving host.
    pub dst: HostId,
    /// Route of data packets.
    pub fwd: RouteId,
    /// Route of ACKs.
    pub rev: RouteId,
}

/// Counters of one connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpStats {
    /// Segments sent again (fast retransmit, partial ACKs, go-back-N after a timeout).
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
}

/// What happened to the flow as a result of an event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// The receiver now holds every byte (completion time = now).
    pub completed: bool,
    /// The connection has nothing left to do and can be dropped.
    pub finished: bool,
    /// The sender is waiting for room in its host's NIC queue.
    pub nic_blocked: bool,
}

/// One TCP flow: both endpoints.
pub struct TcpConn {
    ep: Endpoints,
    mss: u64,
    ecn: bool,
    /// Bytes to deliver (`u64::MAX`: until stopped).
    end: u64,
    // Sender.
    snd_una: u64,
    snd_nxt: u64,
    high_tx: u64,
    recover: Option<u64>,
    in_recovery: bool,
    partial_acks: u32,
    dupacks: u32,
    cwnd_limited: bool,
    nic_blocked: bool,
    inflation: u64,
    cwr_end: Option<u64>,
    round_end: u64,
    cc: Cc,
    max_window: u64,
    srtt: Option<Dur>,
    rttvar: Dur,
    rto: Dur,
    min_rtt: Dur,
    min_rto: Dur,
    max_rto: Dur,
    sender_done: bool,
    // Receiver.
    rcv_nxt: u64,
    ooo: Vec<(u64, u64)>,
    delayed_ack: bool,
    delack_timeout: Dur,
    pending_acks: u32,
    ce_state: bool,
    last_echo: Time,
    completed: bool,
    timers: TimerTable<TIMERS>,
    stats: TcpStats,
}

impl TcpConn {
    /// A connection for `size_bytes` (`None`: unbounded) under `cfg`.
    pub fn new(cfg: &TcpConfig, ep: Endpoints, size_bytes: Option<u64>) -> Self {
        let mss = cfg.mss.0;
        let limits = WindowLimits {
            mss,
            init_cwnd: u64::from(cfg.init_cwnd_pkts) * mss,
            min_cwnd: u64::from(cfg.min_cwnd_pkts) * mss,
        };
        Self {
            ep,
            mss,
            ecn: cfg.ecn_enabled(),
            end: size_bytes.unwrap_or(u64::MAX),
            snd_una: 0,
            snd_nxt: 0,
            high_tx: 0,
            recover: None,
            in_recovery: false,
            partial_acks: 0,
            dupacks: 0,
            cwnd_limited: false,
            nic_blocked: false,
            inflation: 0,
            cwr_end: None,
            round_end: 0,
            cc: cfg.cc.build(limits),
            max_window: cfg.max_window.map_or(u64::MAX, |w| w.0),
            srtt: None,
            rttvar: Dur::ZERO,
            rto: cfg.init_rto,
            min_rtt: Dur::MAX,
            min_rto: cfg.min_rto,
            max_rto: cfg.max_rto,
            sender_done: false,
            rcv_nxt: 0,
            ooo: Vec::new(),
            delayed_ack: cfg.delayed_ack,
            delack_timeout: cfg.delack_timeout,
            pending_acks: 0,
            ce_state: false,
            last_echo: Time::ZERO,
            completed: false,
            timers: TimerTable::default(),
            stats: TcpStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> TcpStats {
        self.stats
    }
    /// The controller.
    pub fn cc(&self) -> &Cc {
        &self.cc
    }
    /// Bytes the receiver holds in order.
    pub fn delivered_bytes(&self) -> u64 {
        self.rcv_nxt
    }
    /// Bytes the flow will deliver: its size, or what it had sent when its stop time came;
    /// `None` while a long-lived flow runs.
    pub fn limit_bytes(&self) -> Option<u64> {
        (self.end != u64::MAX).then_some(self.end)
    }
    /// Smoothed RTT, if sampled.
    pub fn srtt(&self) -> Option<Dur> {
        self.srtt
    }

    /// Starts sending at `now`; arms the stop timer if the flow has a stop time.
    pub fn on_start<S>(&mut self, stop: Option<Time>, cx: &mut FlowCx<'_, S>) -> Progress
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        if let Some(t) = stop {
            self.arm(T_STOP, t.max(cx.now), cx);
        }
        self.round_end = 0;
        self.try_send(cx);
        self.progress()
    }

    /// Handles a packet of this flow that arrived at one of its hosts. Frees it.
    pub fn on_packet<S>(&mut self, pkt: PacketId, cx: &mut FlowCx<'_, S>) -> Progress
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        let p = *cx.pool.get(pkt);
        cx.pool.free(pkt);
        if p.flags & FLAG_DATA != 0 {
            self.on_data(&p, cx);
        } else if p.flags & FLAG_ACK != 0 {
            self.on_ack(&p, cx);
        }
        self.progress()
    }

    /// Handles a timer event.
    pub fn on_timer<S>(
        &mut self,
        kind: u8,
        generation: u32,
        cx: &mut FlowCx<'_, S>,
    ) -> (Progress, bool)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        let kind = match timer_due(&mut self.timers, self.ep.flow, kind, generation, cx) {
            Due::Fire(kind) => kind,
            Due::Stale => return (self.progress(), true),
            Due::Later => return (self.progress(), false),
        };
        match kind {
            T_RTO => self.on_rto(cx),
            T_DELACK => {
                if self.pending_acks > 0 {
                    self.send_ack(self.ce_state, cx);
                }
            }
            _ => {
                // Stop: no new data beyond what has been sent.
                let sent = self.snd_nxt.max(self.high_tx);
                if sent < self.end {
                    self.end = sent;
                    if self.snd_una >= self.end {
                        self.finish_sender();
                    }
                }
            }
        }
        (self.progress(), false)
    }

    fn progress(&self) -> Progress {
        let completed = self.completed;
        Progress {
            completed,
            finished: completed && self.sender_done && self.pending_acks == 0,
            nic_blocked: self.nic_blocked && !self.sender_done,
        }
    }

    /// The host NIC has room again: continue sending.
    pub fn on_nic_ready<S>(&mut self, cx: &mut FlowCx<'_, S>) -> Progress
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        self.nic_blocked = false;
        if !self.sender_done {
            self.try_send(cx);
        }
        self.progress()
    }

    fn arm<S: Schedule<FlowEvent>>(&mut self, kind: usize, at: Time, cx: &mut FlowCx<'_, S>) {
        arm_timer(&mut self.timers, self.ep.flow, kind, at, cx);
    }

    // ---- sender ----

    fn window(&self) -> u64 {
        (self.cc.cwnd_bytes() + self.inflation).min(self.max_window)
    }

    fn try_send<S>(&mut self, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        let wnd = self.window();
        self.cwnd_limited = false;
        while self.snd_nxt < self.end {
            let len = self.mss.min(self.end - self.snd_nxt);
            let in_flight = self.snd_nxt - self.snd_una;
            if in_flight > 0 && in_flight + len > wnd {
                self.cwnd_limited = true;
                break;
            }
            if !cx.nic_room(self.ep.src, wire_bytes(len as u32 + TCP_IP_HEADER_BYTES)) {
                self.nic_blocked = true;
                break;
            }
            self.send_segment(self.snd_nxt, cx);
            self.snd_nxt += len;
        }
        if self.snd_una < self.snd_nxt && self.timers.deadline(T_RTO).is_none() {
            self.arm(T_RTO, cx.now + self.rto, cx);
        }
    }

    fn send_segment<S>(&mut self, seq: u64, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        let len = self.mss.min(self.end - seq) as u32;
        let pkt = cx.pool.alloc(Packet {
            seq,
            ack: 0,
            sent_at: cx.now,
            echo: Time::ZERO,
            rate: Rate::MAX,
            flow: self.ep.flow,
            route: self.ep.fwd,
            dst: self.ep.dst,
            payload_bytes: len,
            wire_bytes: wire_bytes(len + TCP_IP_HEADER_BYTES),
            hop: 0,
            class: Class::Data,
            ecn: if self.ecn { Ecn::Ect } else { Ecn::NotEct },
            flags: FLAG_DATA,
        });
        if seq < self.high_tx {
            self.stats.retransmits += 1;
        }
        self.high_tx = self.high_tx.max(seq + u64::from(len));
        cx.send(self.ep.src, pkt);
    }

    fn on_ack<S>(&mut self, p: &Packet, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        if self.sender_done {
            return;
        }
        let a = p.ack;
        let ece = p.flags & FLAG_ECE != 0;
        if a > self.snd_nxt {
            // Data the receiver buffered beyond a go-back-N restart.
            self.snd_nxt = a;
        }
        if a > self.snd_una {
            let acked = a - self.snd_una;
            self.snd_una = a;
            self.dupacks = 0;
            let rtt = cx.now.saturating_since(p.echo);
            self.sample_rtt(rtt);
            let round_start = self.snd_una >= self.round_end;
            if round_start {
                self.round_end = self.snd_nxt;
            }
            if self.in_recovery {
                if self.recover.is_some_and(|r| a >= r) {
                    // RFC 6582 §3.2 step 3: full acknowledgement; deflate the window.
                    self.in_recovery = false;
                    self.inflation = 0;
                } else {
                    // Partial acknowledgement: retransmit the next hole, deflate by the
                    // newly acknowledged amount and add back one segment.
                    self.send_segment(self.snd_una, cx);
                    self.inflation = self.inflation.saturating_sub(acked) + self.mss;
                    self.partial_acks += 1;
                }
            }
            if ece && !self.in_recovery && self.cwr_end.is_none_or(|e| self.snd_una >= e) {
                self.cc.on_ecn(cx.now, self.snd_nxt - self.snd_una);
                self.cwr_end = Some(self.snd_nxt);
            }
            let sample = AckSample {
                now: cx.now,
                acked_bytes: acked,
                ce_bytes: if ece { acked } else { 0 },
                in_flight_bytes: self.snd_nxt - self.snd_una,
                rtt: Some(rtt),
                min_rtt: self.min_rtt,
                round_start,
                in_recovery: self.in_recovery,
                cwnd_limited: self.cwnd_limited,
                mss: self.mss,
            };
            self.cc.on_ack(&sample);
            if self.snd_una >= self.end {
                self.finish_sender();
                return;
            }
            // RFC 6298 §5.3: restart the timer on new data acknowledged; in recovery, only
            // on the first partial ACK (RFC 6582's "Impatient" variant), so that a window
            // with many losses falls back to a timeout instead of one hole per RTT.
            if !self.in_recovery || self.partial_acks <= 1 {
                self.timers.cancel(T_RTO);
            }
        } else if a == self.snd_una && self.snd_una < self.snd_nxt {
            self.dupacks += 1;
            if self.in_recovery {
                self.inflation += self.mss;
            } else if self.dupacks == 3 && self.recover.is_none_or(|r| a > r) {
                // RFC 6582 §3.2 step 2: fast retransmit, enter recovery.
                self.in_recovery = true;
                self.partial_acks = 0;
                self.recover = Some(self.high_tx);
                self.cc.on_loss(cx.now, self.snd_nxt - self.snd_una);
                self.cwr_end = Some(self.high_tx);
                self.inflation = 3 * self.mss;
                self.send_segment(self.snd_una, cx);
                self.timers.cancel(T_RTO);
            }
        }
        self.try_send(cx);
    }

    /// RFC 6298 §2: SRTT, RTTVAR and RTO from one sample.
    fn sample_rtt(&mut self, r: Dur) {
        self.min_rtt = self.min_rtt.min(r);
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                let diff = if s > r { s - r } else { r - s };
                self.rttvar = (self.rttvar * 3 + diff) / 4;
                self.srtt = Some((s * 7 + r) / 8);
            }
        }
        let rto = self.srtt.unwrap_or(r) + self.rttvar * 4;
        self.rto = rto.max(self.min_rto).min(self.max_rto);
    }

    fn on_rto<S>(&mut self, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        if self.sender_done || self.snd_una >= self.snd_nxt {
            return;
        }
        self.stats.timeouts += 1;
        self.cc.on_rto(cx.now, self.snd_nxt - self.snd_una);
        // RFC 6298 §5.5: back off; RFC 6582 §4: remember the highest sequence sent so that
        // duplicate ACKs for data sent before the timeout do not trigger fast retransmit.
        self.rto = (self.rto * 2).min(self.max_rto);
        self.recover = Some(self.high_tx);
        self.in_recovery = false;
        self.inflation = 0;
        self.dupacks = 0;
        self.cwr_end = Some(self.high_tx);
        self.snd_nxt = self.snd_una;
        self.round_end = self.snd_una;
        self.try_send(cx);
    }

    fn finish_sender(&mut self) {
        self.sender_done = true;
        self.timers.cancel(T_RTO);
        self.timers.cancel(T_STOP);
    }

    // ---- receiver ----

    fn on_data<S>(&mut self, p: &Packet, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        let (seq, end) = (p.seq, p.seq + u64::from(p.payload_bytes));
        let in_order = seq == self.rcv_nxt;
        if in_order {
            self.rcv_nxt = end;
            while let Some(&(s, e)) = self.ooo.first() {
                if s > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(e);
                self.ooo.remove(0);
            }
        } else if seq > self.rcv_nxt {
            insert_range(&mut self.ooo, seq, end);
        }
        if self.rcv_nxt >= self.end {
            self.completed = true;
        }
        let ce = p.ecn == Ecn::Ce;
        self.last_echo = p.sent_at;
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
            self.arm(T_DELACK, cx.now + self.delack_timeout, cx);
        }
    }

    fn send_ack<S>(&mut self, ece: bool, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        self.pending_acks = 0;
        self.timers.cancel(T_DELACK);
        let pkt = cx.pool.alloc(Packet {
            seq: 0,
            ack: self.rcv_nxt,
            sent_at: cx.now,
            echo: self.last_echo,
            rate: Rate::MAX,
            flow: self.ep.flow,
            route: self.ep.rev,
            dst: self.ep.src,
            payload_bytes: 0,
            wire_bytes: wire_bytes(TCP_IP_HEADER_BYTES),
            hop: 0,
            class: Class::Control,
            ecn: Ecn::NotEct,
            flags: FLAG_ACK | if ece { FLAG_ECE } else { 0 },
        });
        cx.send(self.ep.dst, pkt);
    }
}

/// Inserts `[s, e)` into sorted, disjoint, non-adjacent ranges, merging as needed.
pub(crate) fn insert_range(v: &mut Vec<(u64, u64)>, s: u64, e: u64) {
    let i = v.partition_point(|r| r.1 < s);
    let mut j = i;
    let (mut ns, mut ne) = (s, e);
    while j < v.len() && v[j].0 <= ne {
        ns = ns.min(v[j].0);
        ne = ne.max(v[j].1);
        j += 1;
    }
    v.splice(i..j, [(ns, ne)]);
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::insert_range;

    proptest! {
        /// The out-of-order buffer holds exactly the union of the inserted ranges, sorted,
        /// disjoint and non-adjacent.
        #[test]
        fn ooo_ranges_are_the_union(ranges in proptest::collection::vec((0u64..200, 1u64..20), 0..50)) {
            let mut v = Vec::new();
            let mut covered = [false; 220];
            for (s, l) in ranges {
                insert_range(&mut v, s, s + l);
                for b in s..s + l { covered[b as usize] = true; }
            }
            for w in v.windows(2) { prop_assert!(w[0].1 < w[1].0); }
            let mut got = [false; 220];
            for &(s, e) in &v { for b in s..e { got[b as usize] = true; } }
            prop_assert_eq!(got, covered);
        }
    }
}
