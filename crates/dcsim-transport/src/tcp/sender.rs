//! The TCP sender: window, loss recovery, RTO, RTT estimation.
//!
//! Two ways to recover from loss:
//!
//! - **NewReno** (RFC 6582): three duplicate ACKs, one hole repaired per round trip; with
//!   SACK on, a timeout resends only what the receiver does not hold (profile `simple`).
//! - **The scoreboard** (RFC 6675, with RACK-TLP of RFC 8985 as Linux runs it): every
//!   segment in flight is tracked ([`Scoreboard`]); SACK blocks mark what arrived, RACK (or
//!   RFC 6675's duplicate threshold) what is lost, and the sender sends while the bytes in
//!   flight (`pipe`) are below the window, lost segments first, then new data (profiles
//!   `linux`, with RACK-TLP and PRR, and `ns2`, which forgets the SACKed segments after a
//!   timeout as ns-2's FullTcp/Sack does).

use dcsim_engine::{Dur, Rate, Time, TimerTable};
use dcsim_net::wire::{FRAMING_BYTES, TCP_IP_HEADER_BYTES, wire_bytes};
use dcsim_net::{Class, FlowId, HostId, IpBits, Packet, RateStamp, RouteId, Telemetry};

use super::rcvbuf;
use super::scoreboard::Scoreboard;
use super::{
    FLAG_ACK, FLAG_CWR, FLAG_DATA, FLAG_ECE, FLAG_EIN, FLAG_RWND, FLAG_SYN, GSO_HEADER_ROOM,
    GSO_MAX_BYTES, HostPacer, TcpConfig, TcpHost, TcpProfile, control_segment, decode_sack,
};
use crate::cc::{AckSample, Cc, CongestionControl, PacerParams};
use crate::endpoint::{EndpointCx, FlowInfo, Sched, Sender};
use crate::ranges::insert_range;
use dcsim_engine::Rng;
use rand::RngExt;

const T_RTO: usize = 0;
const T_STOP: usize = 1;
const T_PACE: usize = 2;
/// RACK's reordering timer: a segment will count as lost then.
const T_REO: usize = 3;
/// The tail-loss probe (RFC 8985 §7).
const T_TLP: usize = 4;

/// What Linux charges a packet in its NIC's queue beyond the frame's wire bytes (its
/// buffer's true size less the frame): a 1,448-byte segment's buffer is about 2.2 KB (head,
/// `sk_buff` and shared info with the payload in a page fragment). Measured on the kernel
/// twin: two Reno senders held 10.6-11.0 packets on average (11-12 at most; 8.6 and 13.1
/// in a third run) in their htb queues while TCP small queues allowed them about 24 KB
/// each (docs/protocols/tcp.md).
const SKB_OVERHEAD_BYTES: u64 = 680;
/// Linux's `tcp_limit_output_bytes` (4 MiB in 6.x): the most TCP small queues allows.
const LIMIT_OUTPUT_BYTES: u64 = 4 << 20;

/// Linux's `TCP_RTO_MIN` (200 ms): what a loss probe waits beyond two round trips when one
/// segment is out (the receiver may be delaying its ACK), whatever the route's minimum RTO.
const TLP_DELACK_ALLOWANCE: Dur = Dur::from_ms(200);
/// Linux's `TCP_TIMEOUT_MIN` (2 ms): a loss probe's margin otherwise, and the reordering
/// timer's beyond the last segment's wait (`tcp_rack_mark_lost`).
const TIMEOUT_MIN: Dur = Dur::from_ms(2);
/// RFC 6675's DupThresh.
const DUPTHRESH: u32 = 3;

/// Counters of one sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpStats {
    /// Segments sent again (fast retransmit, partial ACKs, go-back-N after a timeout); a
    /// super-packet (`gso`) counts its segments.
    pub retransmits: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Tail-loss probes sent (RACK-TLP).
    pub loss_probes: u64,
    /// Times the receiver's advertised window held back new data.
    pub rwnd_limited: u64,
    /// Times the send buffer held back new data.
    pub sndbuf_limited: u64,
}

/// One window reduction by proportional rate reduction (RFC 6937): the sender spreads the
/// reduction to the controller's new window over the ACKs of a round trip, sending in
/// proportion to what is delivered, instead of cutting at once and waiting.
#[derive(Clone, Copy, Debug)]
struct Prr {
    /// The target: the controller's reduced window (ssthresh).
    ssthresh: u64,
    /// Flight size when the reduction began (RecoverFS).
    recover_fs: u64,
    /// Bytes delivered since (newly acknowledged, one segment per duplicate ACK).
    delivered: u64,
    /// Bytes sent since (retransmissions included).
    out: u64,
    /// Bytes the sender may still send on the current ACK.
    sndcnt: u64,
    /// An ECN reduction ends when everything sent before it is acknowledged; a loss
    /// recovery ends with NewReno's recovery.
    end: u64,
    /// Bytes counted as delivered by duplicate ACKs since `snd_una` last advanced (taken
    /// off the next advance, which acknowledges them again).
    dup_delivered: u64,
    /// Linux sends at least one segment on the first ACK of a reduction that delivered
    /// something ("force a fast retransmit upon entering fast recovery").
    force_first: bool,
}

impl Prr {
    /// RFC 6937 §3 on an ACK that delivered `delivered` bytes with `pipe` bytes still in
    /// flight: while the flight is above the target, send in proportion to what was
    /// delivered (ssthresh/RecoverFS of it); below it, slow-start back up to the target but
    /// never more than what was delivered, plus one segment where `extra` (PRR-SSRB).
    fn on_ack(&mut self, delivered: u64, pipe: u64, mss: u64, extra: bool) {
        self.delivered += delivered;
        self.sndcnt = if pipe > self.ssthresh {
            (self.delivered * self.ssthresh)
                .div_ceil(self.recover_fs)
                .saturating_sub(self.out)
        } else {
            let limit = self.delivered.saturating_sub(self.out).max(delivered)
                + if extra { mss } else { 0 };
            (self.ssthresh - pipe).min(limit)
        };
        if self.force_first && self.out == 0 && delivered > 0 {
            self.sndcnt = self.sndcnt.max(1);
        }
    }

    /// Records `bytes` sent.
    fn sent(&mut self, bytes: u64) {
        self.out += bytes;
        self.sndcnt = self.sndcnt.saturating_sub(bytes);
    }
}

/// How a sender recovers from loss.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Recovery {
    /// NewReno; with `sack`, a timeout skips what the receiver holds.
    NewReno { sack: bool },
    /// The SACK scoreboard: RACK-TLP (`rack`) or RFC 6675's duplicate threshold; after a
    /// timeout the SACK marks are kept, or cleared (`clear_on_timeout`, ns-2).
    Scoreboard { rack: bool, clear_on_timeout: bool },
}

/// Linux's RTT estimator (`tcp_rtt_estimator`, `__tcp_set_rto`, Linux 6.x), in
/// microseconds as the kernel keeps it: `srtt8` is 8 × SRTT and `mdev` 4 × the mean
/// deviation; `rttvar` is the largest `mdev` of the last round trip, never below the
/// minimum RTO, and RTO = SRTT + `rttvar`.
#[derive(Clone, Copy, Debug, Default)]
struct LinuxRtt {
    srtt8: i64,
    mdev: i64,
    mdev_max: i64,
    rttvar: i64,
    /// The estimator decays `rttvar` once this sequence is acknowledged (once per RTT).
    rtt_seq: u64,
}

impl LinuxRtt {
    /// One sample of `m` µs with `snd_una` and `snd_nxt` as they are; returns the RTO in µs.
    fn sample(&mut self, m: i64, rto_min: i64, snd_una: u64, snd_nxt: u64) -> i64 {
        if self.srtt8 != 0 {
            let mut m = m - (self.srtt8 >> 3);
            self.srtt8 += m;
            if m < 0 {
                m = -m - (self.mdev >> 2);
                // RTT falling: a smaller gain on mdev, so RTO does not grow (Eifel).
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= self.mdev >> 2;
            }
            self.mdev += m;
            if self.mdev > self.mdev_max {
                self.mdev_max = self.mdev;
                if self.mdev_max > self.rttvar {
                    self.rttvar = self.mdev_max;
                }
            }
            if snd_una > self.rtt_seq {
                if self.mdev_max < self.rttvar {
                    self.rttvar -= (self.rttvar - self.mdev_max) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max = rto_min;
            }
        } else {
            self.srtt8 = m << 3;
            self.mdev = m << 1;
            self.rttvar = self.mdev.max(rto_min);
            self.mdev_max = self.rttvar;
            self.rtt_seq = snd_nxt;
        }
        self.srtt8 = self.srtt8.max(1);
        (self.srtt8 >> 3) + self.rttvar
    }
}

/// The sending end of a TCP flow.
pub struct TcpSender {
    flow: FlowId,
    route: RouteId,
    dst: HostId,
    mss: u64,
    ecn: bool,
    stop: Option<Time>,
    snd_una: u64,
    snd_nxt: u64,
    high_tx: u64,
    recover: Option<u64>,
    in_recovery: bool,
    partial_acks: u32,
    dupacks: u32,
    cwnd_limited: bool,
    /// Linux's record of the window's use (profile `linux`).
    usage: Option<CwndUsage>,
    nic_blocked: bool,
    /// Linux's TCP small queues (`small_queues`): see [`TcpSender::small_queue`].
    small_queues: bool,
    /// Waiting for the SYN-ACK (with the handshake): no data yet.
    syn_pending: bool,
    /// Waits for room in the NIC queue (back-pressure); if not, a full NIC queue drops.
    backpressure: bool,
    /// Window reductions by proportional rate reduction (`prr`): whether, and the current
    /// one.
    prr_enabled: bool,
    prr: Option<Prr>,
    inflation: u64,
    cwr_end: Option<u64>,
    /// The window before the last reduction began (Linux's `prior_cwnd`).
    prior_cwnd: u64,
    /// Linux's reductions (profile `linux`): an ECN reduction (CWR) lasts until data sent
    /// after it is acknowledged, not only all that was sent before it (`tcp_fastretrans_alert`
    /// holds CWR until `snd_una` passes `high_seq`), and PRR's RecoverFS is the window
    /// before the reduction (`prior_cwnd`), or the flight where that is larger.
    linux_reduction: bool,
    /// The next new data segment carries CWR (RFC 3168 §6.1.2; Linux's
    /// `TCP_ECN_QUEUE_CWR`): the window was reduced since the last one.
    queue_cwr: bool,
    round_end: u64,
    cc: Cc,
    max_window: u64,
    /// The most payload held unacknowledged (`snd_buf`; unlimited without it); with
    /// `snd_buf_overhead`, the memory its segments take (see [`TcpSender::buf_end`]).
    snd_buf: u64,
    /// What the send buffer charges a segment beyond its payload until it is SACKed
    /// (`snd_buf_overhead`; 0: payload only).
    buf_overhead: u64,
    /// The application's write size (`app_write`; 0: it writes everything at once), what
    /// it has written, and where the write queue's buffers are cut: every `gso_max` bytes
    /// from `anchor` (a write tops up the unsent last buffer, as `tcp_sendmsg` does).
    app_write: u64,
    written: u64,
    anchor: u64,
    /// The largest super-packet's payload in whole segments (`gso`); 0: one segment per
    /// packet.
    gso_max: u64,
    /// With `gso`: when the last packet left (deferral's one-millisecond rule).
    last_sent: Time,
    /// The receiver's advertised window (ICTCP, `rcv_buf`), from the newest ACK's number:
    /// new data may go up to `snd_una + rwnd`. Unlimited without either.
    rwnd: u64,
    /// When the receiver sent the newest ACK (its `sent_at`), echoed in data so the receiver
    /// can time a round trip (as TCP's timestamp option).
    ack_stamp: Time,
    srtt: Option<Dur>,
    rttvar: Dur,
    rto: Dur,
    min_rtt: Dur,
    min_rto: Dur,
    max_rto: Dur,
    /// Linux's estimator, or RFC 6298's (`None`).
    linux_rtt: Option<LinuxRtt>,
    recovery: Recovery,
    board: Scoreboard,
    /// NewReno with SACK: the ranges the receiver holds above `snd_una`.
    sacked: Vec<(u64, u64)>,
    /// After a timeout, until everything sent before it is acknowledged (Linux's Loss
    /// state).
    in_loss: bool,
    /// A tail-loss probe is out and unanswered: the highest byte sent when it left, and
    /// whether it resent data (rather than sending new data).
    tlp_high: Option<u64>,
    tlp_retrans: bool,
    done: bool,
    /// Whether the network measures switch queueing delay for this flow's controller.
    queue_delay: bool,
    /// With pacing: the earliest time the next segment may leave.
    next_send_at: Time,
    /// Line rate of the sender's NIC.
    line: Rate,
    /// Bytes the window holds back while waiting for the host pacer (0: not waiting).
    pacer_waiting: u64,
    /// The host's processing noise (`stack_jitter`) and its random stream.
    jitter: Option<(Dur, Rng)>,
    timers: TimerTable<5>,
    stats: TcpStats,
}

impl TcpSender {
    /// The sender of `flow` under `cfg`, with controller `cc`, answering ACKs after a
    /// random delay of at most `jitter`'s duration, drawn from its stream, if given.
    pub fn new(cfg: &TcpConfig, cc: Cc, flow: &FlowInfo, jitter: Option<(Dur, Rng)>) -> Self {
        Self {
            flow: flow.flow,
            route: flow.fwd,
            dst: flow.dst,
            mss: cfg.mss.0,
            ecn: cfg.ecn_enabled(),
            stop: flow.stop,
            snd_una: 0,
            snd_nxt: 0,
            high_tx: 0,
            recover: None,
            in_recovery: false,
            partial_acks: 0,
            dupacks: 0,
            cwnd_limited: false,
            usage: (cfg.profile == Some(TcpProfile::Linux)).then(CwndUsage::default),
            nic_blocked: false,
            small_queues: cfg.small_queues == Some(true),
            syn_pending: cfg.handshake_enabled(),
            backpressure: cfg.backpressure_enabled(),
            prr_enabled: cfg.prr_enabled(),
            prr: None,
            inflation: 0,
            cwr_end: None,
            prior_cwnd: 0,
            linux_reduction: cfg.profile == Some(TcpProfile::Linux),
            queue_cwr: false,
            round_end: 0,
            cc,
            max_window: cfg.max_window.map_or(u64::MAX, |w| w.0),
            snd_buf: cfg.snd_buf.map_or(u64::MAX, |b| b.0),
            buf_overhead: cfg.snd_buf_overhead.map_or(0, |b| b.0),
            app_write: cfg.app_write.map_or(0, |w| w.0),
            written: 0,
            anchor: 0,
            last_sent: Time::ZERO,
            gso_max: cfg.gso.map_or(0, |g| {
                // Whole segments, within what a packet's 16-bit wire size can say.
                let fits = u64::from(u16::MAX - (TCP_IP_HEADER_BYTES + FRAMING_BYTES) as u16);
                let cap = (g.0 - GSO_HEADER_ROOM).min(fits);
                cap / cfg.mss.0 * cfg.mss.0
            }),
            // The receiver's first advertised window (ICTCP starts every connection at its
            // smallest), as the SYN-ACK would carry it.
            rwnd: match &cfg.ictcp {
                Some(i) => u64::from(i.min_rwnd_pkts) * cfg.mss.0,
                None if cfg.rcv_autotune == Some(true) => rcvbuf::initial_window(cfg.mss.0),
                None => u64::MAX,
            },
            ack_stamp: Time::ZERO,
            srtt: None,
            rttvar: Dur::ZERO,
            rto: cfg.init_rto(),
            min_rtt: Dur::MAX,
            min_rto: cfg.min_rto(),
            max_rto: cfg.max_rto(),
            linux_rtt: (cfg.profile == Some(TcpProfile::Linux)).then(LinuxRtt::default),
            recovery: match (cfg.profile, cfg.sack == Some(true)) {
                (Some(TcpProfile::Linux | TcpProfile::Ns2), true) => Recovery::Scoreboard {
                    rack: cfg.rack == Some(true),
                    clear_on_timeout: cfg.profile == Some(TcpProfile::Ns2),
                },
                (_, sack) => Recovery::NewReno { sack },
            },
            board: Scoreboard::default(),
            sacked: Vec::new(),
            in_loss: false,
            tlp_high: None,
            tlp_retrans: false,
            done: false,
            queue_delay: flow.telemetry.contains(Telemetry::QUEUE_DELAY),
            next_send_at: Time::ZERO,
            line: flow.src_link,
            pacer_waiting: 0,
            jitter,
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
    /// Smoothed RTT, if sampled.
    pub fn srtt(&self) -> Option<Dur> {
        self.srtt
    }

    /// Answers an ACK: sends what the window allows, at once or, with `stack_jitter`, after
    /// a random delay (unless a send is already due then).
    fn answer_ack<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, TcpHost>) {
        let Some((most, rng)) = &mut self.jitter else {
            self.try_send(cx);
            return;
        };
        if self.timers.deadline(T_PACE).is_none() {
            let at = cx.now() + Dur::from_ps(rng.random_range(0..=most.as_ps()));
            cx.arm(&mut self.timers, T_PACE, at);
        }
    }

    /// The congestion window, under the fixed cap (`max_window`). The receiver's window
    /// limits new data separately, by its right edge.
    fn window(&self) -> u64 {
        (self.cc.cwnd_bytes() + self.inflation).min(self.max_window)
    }

    fn try_send<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, TcpHost>) {
        let wnd = self.window();
        // New data may go up to the end of what the application has handed over: all of
        // it, or with `app_write` what its writes have (see `written_end`).
        let end = if self.app_write == 0 {
            cx.shared.limit_bytes
        } else {
            self.written_end(cx.shared.limit_bytes)
        };
        self.cwnd_limited = false;
        // The controller's state cannot change while this call sends.
        let pacing = self.cc.pacing_rate();
        let host_paced = self.cc.host_pacer(cx.now());
        let board = matches!(self.recovery, Recovery::Scoreboard { .. });
        // Bytes the window holds back for the host pacer after this call (0: none); what
        // was registered before stays in the pacer's backlog until then, so that its rate
        // update sees it.
        let mut held_back = 0;
        let mut sent = false;
        // Linux restarts the retransmission timer when it resends the oldest data out
        // (`tcp_xmit_retransmit_queue`), unless the reordering timer holds it.
        let mut rearm = false;
        loop {
            // What goes next: with the scoreboard, a segment marked lost before new data
            // (RFC 6675's NextSeg); otherwise the next new byte, skipping what the receiver
            // is known to hold after a timeout.
            let lost = if board { self.board.next_lost() } else { None };
            let (seq, len) = match lost {
                Some((s, e)) => (s, e - s),
                None => {
                    // Only after a timeout is `snd_nxt` below data already sent.
                    if self.snd_nxt < self.high_tx && !board {
                        self.skip_sacked();
                    }
                    if self.snd_nxt >= end {
                        break;
                    }
                    (self.snd_nxt, self.mss.min(end - self.snd_nxt))
                }
            };
            let in_flight = if board {
                self.board.pipe()
            } else {
                self.snd_nxt - self.snd_una
            };
            let (seq, len) = if self.gso_max > 0 {
                match self.super_packet(seq, len, lost.is_some(), end, wnd, in_flight, cx.now()) {
                    Some(p) => p,
                    None => {
                        // Deferred for a bigger super-packet: the next ACK decides.
                        self.cwnd_limited = true;
                        break;
                    }
                }
            } else {
                (seq, len)
            };
            if let Some(prr) = &self.prr {
                // During a reduction PRR, not the window, says how much may leave.
                if prr.sndcnt == 0 {
                    self.cwnd_limited = true;
                    break;
                }
            } else if in_flight > 0 && in_flight + len > wnd {
                // Only a sender held back by its congestion window (or the fixed cap: ns-2
                // grows its window under it too) may grow it (RFC 7661).
                self.cwnd_limited = true;
                break;
            }
            // New data beyond the receiver's right edge waits (one segment may go when
            // nothing is out, as a window probe would).
            if lost.is_none()
                && self.snd_nxt > self.snd_una
                && seq + len > self.snd_una.saturating_add(self.rwnd)
            {
                self.stats.rwnd_limited += 1;
                break;
            }
            // And beyond what the send buffer holds (with `app_write`, the writes hold it).
            if lost.is_none()
                && self.snd_nxt > self.snd_una
                && seq + len > self.buf_end()
                && self.app_write == 0
            {
                self.stats.sndbuf_limited += 1;
                break;
            }
            let wire = wire_bytes(len as u32 + TCP_IP_HEADER_BYTES);
            if pacing.is_some() && cx.now() < self.next_send_at {
                let at = self.next_send_at;
                cx.arm(&mut self.timers, T_PACE, at);
                break;
            }
            if let Some(params) = host_paced
                && let Some(at) = self.host_pacer_busy(params, cx)
            {
                held_back = (end - self.snd_nxt).min(wnd.saturating_sub(in_flight));
                cx.arm(&mut self.timers, T_PACE, at);
                break;
            }
            if self.backpressure {
                let room = if self.small_queues {
                    let small = self.small_queue(wire, lost.is_some(), len);
                    cx.nic_room_within(wire, small)
                } else {
                    cx.nic_room(wire)
                };
                if !room {
                    self.nic_blocked = true;
                    break;
                }
            }
            if host_paced.is_some() {
                let now = cx.now();
                if let Some(pacer) = cx.host_state.pacer.as_mut() {
                    pacer.send(now, wire);
                }
            }
            self.send_segment(seq, len, cx);
            sent = true;
            if lost.is_some() {
                self.board.retransmitted(seq, cx.now());
                rearm |= seq == self.snd_una
                    && self.linux_rtt.is_some()
                    && self.timers.deadline(T_REO).is_none();
            } else {
                if board {
                    self.board.sent_new(seq, seq + len, cx.now());
                }
                self.snd_nxt += len;
            }
            if let Some(rate) = pacing {
                let gap = rate.max(Rate::from_bps(1)).tx_time(u64::from(wire));
                self.next_send_at = cx.now() + gap;
            }
        }
        if held_back != self.pacer_waiting {
            self.hold_back(held_back, cx.host_state);
        }
        if self.app_write > 0 && self.gso_max > 0 {
            self.sent_from_writes();
        }
        if let Some(u) = &mut self.usage {
            let in_flight = if board {
                self.board.pipe()
            } else {
                self.snd_nxt - self.snd_una
            };
            let limited = self.cwnd_limited || in_flight >= wnd;
            if sent || limited {
                u.validate(limited, self.snd_una, self.snd_nxt);
            }
        }
        if self.snd_una < self.snd_nxt && (rearm || self.timers.deadline(T_RTO).is_none()) {
            cx.arm_in(&mut self.timers, T_RTO, self.rto);
        }
        if board {
            self.schedule_loss_probe(cx);
        }
    }

    /// NewReno with SACK after a timeout: moves `snd_nxt` past data the receiver holds, so
    /// that only what it lacks is sent again.
    #[inline]
    fn skip_sacked(&mut self) {
        while let Some(&(s, e)) = self.sacked.first() {
            if e <= self.snd_una {
                self.sacked.remove(0);
            } else if s <= self.snd_nxt && self.snd_nxt < e {
                self.snd_nxt = e;
            } else {
                break;
            }
        }
    }

    /// RFC 8985 §7.2 as Linux's `tcp_schedule_loss_probe` (Linux 6.x): with RACK-TLP, in
    /// neither recovery nor loss and with data out, a probe in two round trips (plus 200 ms
    /// if one segment is out, for the receiver's delayed ACK, else plus 2 ms), no later than
    /// the retransmission timer.
    fn schedule_loss_probe<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, TcpHost>) {
        let Recovery::Scoreboard { rack: true, .. } = self.recovery else {
            return;
        };
        if self.in_recovery || self.in_loss || self.tlp_high.is_some() || self.board.is_empty() {
            self.timers.cancel(T_TLP);
            return;
        }
        let now = cx.now();
        let mut pto = match self.srtt {
            Some(srtt) => {
                let one_out = self.snd_nxt - self.snd_una <= self.mss;
                srtt * 2
                    + if one_out {
                        TLP_DELACK_ALLOWANCE
                    } else {
                        TIMEOUT_MIN
                    }
            }
            None => Dur::from_secs(1),
        };
        if let Some(rto_at) = self.timers.deadline(T_RTO) {
            pto = pto.min(rto_at.saturating_since(now));
        }
        cx.arm(&mut self.timers, T_TLP, now + pto);
    }

    /// With the host pacer: when it lets the next packet out, if not now (the pacer is
    /// created with the first flow that asks). Out of line: only HULL flows come here.
    #[inline(never)]
    fn host_pacer_busy<S: Sched>(
        &self,
        params: PacerParams,
        cx: &mut EndpointCx<'_, S, TcpHost>,
    ) -> Option<Time> {
        let now = cx.now();
        let line = self.line;
        let pacer = cx
            .host_state
            .pacer
            .get_or_insert_with(|| HostPacer::new(params, line));
        let at = pacer.ready_at(now);
        (at > now).then_some(at)
    }

    /// Registers `bytes` held back for the host pacer (0: none) instead of what was.
    #[cold]
    fn hold_back(&mut self, bytes: u64, host: &mut TcpHost) {
        if let Some(pacer) = host.pacer.as_mut() {
            pacer.unwait(self.pacer_waiting);
            pacer.wait(bytes);
        }
        self.pacer_waiting = bytes;
    }

    /// Linux's TCP small queues (`tcp_small_queue_check`) for a packet of `wire` bytes and
    /// `len` of payload: how many bytes the NIC queue may hold for the sender to hand it
    /// this packet. Linux allows a socket's buffers in the queue (their true size) up to a
    /// millisecond (2⁻¹⁰ s) of its pacing rate, two packets at least and
    /// `tcp_limit_output_bytes` at most, twice that for a retransmission, and throttles
    /// nothing while at most one packet is out. The pacing rate is `tcp_update_pacing_rate`'s:
    /// the window (or the data out, if more) per smoothed RTT, doubled below half the
    /// slow-start threshold and 1.2 times above. dcsim compares the limit, converted to
    /// wire bytes, with its host's whole NIC queue: exact for one sender per host, stricter
    /// than Linux for several (where, at data-centre RTTs, the limit is far above a window
    /// and never binds).
    #[inline(never)]
    fn small_queue(&self, wire: u32, retransmit: bool, len: u64) -> u64 {
        let out = self.snd_nxt.max(self.high_tx) - self.snd_una;
        if out <= len {
            return u64::MAX;
        }
        let truesize = u64::from(wire) + SKB_OVERHEAD_BYTES;
        // Bytes per second: the window per smoothed RTT (whole microseconds in `linux`)
        // times the ratio in per cent; no RTT yet, no limit but the largest.
        let cwnd = self.cc.cwnd_bytes();
        let pct = if cwnd < self.cc.ssthresh_bytes() / 2 {
            200
        } else {
            120
        };
        let rate_bytes_per_s = cwnd
            .max(out)
            .saturating_mul(pct * 10_000_000)
            .checked_div(self.srtt.map_or(0, |s| s.as_ns()))
            .unwrap_or(u64::MAX);
        let limit = (2 * truesize)
            .max(rate_bytes_per_s >> 10)
            .min(LIMIT_OUTPUT_BYTES)
            << u32::from(retransmit);
        limit * u64::from(wire) / truesize
    }

    /// The end of what the send buffer holds. Without an overhead, `snd_buf` bytes of
    /// payload from `snd_una`. With one, `snd_buf` is memory as Linux counts it against
    /// `tcp_wmem` (`sk_wmem_queued`): a segment costs its payload plus the overhead (its
    /// buffer's true size) until it is SACKed; then Linux merges it into the SACKed buffer
    /// before it (`tcp_shift_skb_data`, `skb_shift` moving only the payload's share), so
    /// it costs its payload. A sender in recovery, its first hole unrepaired and much of
    /// its window SACKed, so holds more than the buffer holds of unSACKed segments.
    #[inline]
    fn buf_end(&self) -> u64 {
        if self.buf_overhead == 0 {
            return self.snd_una.saturating_add(self.snd_buf);
        }
        let sacked = self.board.sacked_bytes().min(self.snd_buf);
        let rest = u128::from(self.snd_buf - sacked) * u128::from(self.mss)
            / u128::from(self.mss + self.buf_overhead);
        self.snd_una + sacked + rest as u64
    }

    /// With `app_write`: the application writes whole writes while what it wrote and is
    /// unacknowledged is under the send buffer; returns where new data may go up to.
    /// While more is to come, Nagle holds less than a segment at the end when anything is
    /// out (when nothing is, all of it may go).
    #[inline(never)]
    fn written_end(&mut self, limit: u64) -> u64 {
        let room = self.buf_end();
        let target = room.div_ceil(self.app_write).saturating_mul(self.app_write);
        self.written = self.written.max(target.min(limit));
        let (end, from) = (self.written, self.snd_nxt.min(self.written));
        if end == limit || (self.snd_nxt == self.snd_una && end - from < self.mss) {
            return end;
        }
        from + (end - from) / self.mss * self.mss
    }

    /// With `app_write` and `gso`, after a send: what stays of the last written buffer is
    /// a buffer of its own, which the next write tops up (`tcp_sendmsg` appends to the
    /// write queue's tail), so the buffers are cut from there on.
    #[inline(never)]
    fn sent_from_writes(&mut self) {
        let written = self.written;
        if written > self.anchor {
            let last = self.anchor + (written - 1 - self.anchor) / self.gso_max * self.gso_max;
            if self.snd_nxt > last {
                self.anchor = self.snd_nxt;
            }
        }
    }

    /// With `gso`: the packet to send instead of one segment at `seq` of `len` bytes, or
    /// `None` to wait for the next ACK. New data: Linux's `tcp_tso_autosize` goal (6.x: a
    /// millisecond of the pacing rate, plus `gso_max_size` halved for every 512 µs of the
    /// minimum RTT, at least two segments), cut to the data left, to the buffer at the head
    /// of the write queue (grown into the next one as 6.10's `tcp_grow_skb` does) and to
    /// the room the congestion window, PRR, the receive window and the send buffer leave,
    /// in whole segments, one segment at least (the checks after this decide whether that
    /// one may go); deferred as `tcp_tso_should_defer` defers when the room is short of
    /// the goal and does not take that buffer whole.
    /// A lost super-packet goes again whole if the window holds it, else its first part is
    /// split off to fit, as `tcp_retransmit_skb` fragments to the window. Out of line: only
    /// `gso` comes here.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn super_packet(
        &mut self,
        seq: u64,
        len: u64,
        lost: bool,
        end: u64,
        wnd: u64,
        in_flight: u64,
        now: Time,
    ) -> Option<(u64, u64)> {
        let mss = self.mss;
        let mut room = match &self.prr {
            Some(prr) => prr.sndcnt.next_multiple_of(mss),
            None => wnd.saturating_sub(in_flight),
        };
        if lost {
            let whole = len;
            let fit = (room / mss).max(1) * mss;
            // After a timeout too (nothing in flight, a window of one or two segments).
            if whole > fit {
                self.board.split(seq, seq + fit);
                return Some((seq, fit));
            }
            return Some((seq, whole));
        }
        // Linux's sk_pacing_rate: 120 % of cwnd per smoothed RTT (its 200 % in early slow
        // start only matters above 512 µs of minimum RTT, where the goal's second term fades).
        let pacing = match self.srtt {
            Some(srtt) if srtt > Dur::ZERO => {
                (self.cc.cwnd_bytes() as f64 * 1.2 / srtt.as_secs_f64()) as u64
            }
            _ => 0,
        };
        let mut goal = pacing >> 10;
        let r = if self.min_rtt == Dur::MAX {
            0
        } else {
            (self.min_rtt.as_ps() / 1_000_000) >> 9
        };
        if r < 32 {
            goal += GSO_MAX_BYTES >> r;
        }
        let goal = (goal.min(self.gso_max) / mss).max(2) * mss;
        if self.snd_nxt > self.snd_una {
            room = room.min((self.snd_una.saturating_add(self.rwnd)).saturating_sub(seq));
            if self.app_write == 0 {
                room = room.min(self.buf_end().saturating_sub(seq));
            }
        }
        // Linux's `tcp_cwnd_test` gives at most half the window to one super-packet, so
        // that at least two are in flight (with PRR, its window is the flight plus sndcnt).
        let cwnd = match &self.prr {
            Some(prr) => in_flight + prr.sndcnt,
            None => wnd,
        };
        let half = (cwnd / 2 / mss).max(1) * mss;
        let quota = goal.min((room / mss).max(1) * mss).min(half);
        let left = end - seq;
        let (head, tail) = write_queue_head(seq, end, self.anchor, self.gso_max, quota);
        // `tcp_tso_should_defer` runs for a buffer of two segments or more that the room
        // does not take whole: the last one (no buffer after it to wait for) or one longer
        // than the room ("middle in queue won't get any more data").
        if head > mss
            && room < goal
            && room < left
            && (tail || room < head)
            && self.tso_should_defer(room, goal, now)
        {
            return None;
        }
        Some((seq, head.min(quota)))
    }

    /// Linux's `tcp_tso_should_defer` (6.18, with October 2025's "tcp: fix
    /// tcp_tso_should_defer() vs large RTT") with room `limit` short of the goal: wait for
    /// the next ACK unless in loss recovery, the last packet left over a millisecond ago, a
    /// third of the window is free (`tcp_tso_win_divisor` = 3), or the oldest packet out's
    /// ACK is expected (a smoothed RTT after it left) more than min(half that RTT, 1 ms)
    /// from now. Before that fix the last rule was "left less than half a smoothed RTT
    /// ago", which defers through most of a long RTT.
    fn tso_should_defer(&self, limit: u64, goal: u64, now: Time) -> bool {
        if self.in_recovery || self.in_loss || limit >= goal {
            return false;
        }
        if now.saturating_since(self.last_sent) > Dur::from_ms(1) {
            return false;
        }
        let chunk = self.rwnd.min(self.cc.cwnd_bytes()) / 3;
        if limit >= chunk {
            return false;
        }
        let Some(srtt) = self.srtt else {
            return false;
        };
        match self.board.first_sent() {
            Some(head) => !ack_too_far(head, srtt, now),
            None => false,
        }
    }

    /// One segment's length at `seq`: a full one, or what is left of the flow.
    fn seg_len<S: Sched, H>(&self, seq: u64, cx: &EndpointCx<'_, S, H>) -> u64 {
        self.mss.min(cx.shared.limit_bytes - seq)
    }

    fn send_segment<S: Sched, H>(&mut self, seq: u64, len: u64, cx: &mut EndpointCx<'_, S, H>) {
        if self.gso_max > 0 {
            self.last_sent = cx.now();
        }
        let len = len as u32;
        let mut flags = FLAG_DATA;
        if seq < self.high_tx {
            // A super-packet counts its segments, as Linux's `total_retrans` does.
            self.stats.retransmits += u64::from(len).div_ceil(self.mss);
        } else if self.queue_cwr {
            self.queue_cwr = false;
            flags |= FLAG_CWR;
        }
        self.high_tx = self.high_tx.max(seq + u64::from(len));
        if let Some(prr) = &mut self.prr {
            prr.sent(u64::from(len));
        }
        cx.send(Packet {
            seq,
            ack: 0,
            sent_at: cx.now(),
            echo: self.ack_stamp,
            rate: RateStamp::NONE,
            queue_delay_ns: 0,
            flow: self.flow,
            route: self.route,
            dst: self.dst,
            next: dcsim_net::PortId::NONE,
            payload_bytes: dcsim_net::bytes16(len),
            wire_bytes: dcsim_net::bytes16(wire_bytes(len + TCP_IP_HEADER_BYTES)),
            hop: 0,
            class: Class::Data,
            ip: if self.ecn {
                IpBits::ECT
            } else {
                IpBits::NOT_ECT
            },
            flags,
        });
    }

    fn on_ack<S: Sched>(&mut self, p: &Packet, cx: &mut EndpointCx<'_, S, TcpHost>) {
        if self.done {
            return;
        }
        match self.recovery {
            Recovery::Scoreboard { rack, .. } => self.on_ack_board(p, rack, cx),
            Recovery::NewReno { sack } => {
                if sack && let Some(ext) = cx.packet_ext() {
                    for (s, e) in decode_sack(p.ack, ext) {
                        insert_range(&mut self.sacked, s, e);
                    }
                }
                self.on_ack_newreno(p, cx);
                if !self.sacked.is_empty() {
                    // Ranges now below the cumulative acknowledgement are done with.
                    let una = self.snd_una;
                    let below = self.sacked.partition_point(|r| r.1 <= una);
                    self.sacked.drain(..below);
                }
            }
        }
    }

    /// An ACK under NewReno recovery (RFC 6582).
    fn on_ack_newreno<S: Sched>(&mut self, p: &Packet, cx: &mut EndpointCx<'_, S, TcpHost>) {
        let now = cx.now();
        let a = p.ack;
        let ece = p.flags & FLAG_ECE != 0;
        if p.flags & FLAG_RWND != 0 {
            self.rwnd = p.seq;
        }
        self.ack_stamp = p.sent_at;
        if a > self.snd_nxt {
            // Data the receiver buffered beyond a go-back-N restart.
            self.snd_nxt = a;
        }
        if a > self.snd_una {
            let acked = a - self.snd_una;
            // What this ACK newly delivered, less what its duplicate ACKs already counted.
            let delivered = match &mut self.prr {
                Some(prr) => acked.saturating_sub(core::mem::take(&mut prr.dup_delivered)),
                None => acked,
            };
            self.snd_una = a;
            self.dupacks = 0;
            let rtt = now.saturating_since(p.echo);
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
                    self.prr = None;
                } else {
                    // Partial acknowledgement: retransmit the next hole, deflate by the
                    // newly acknowledged amount and add back one segment (with PRR the
                    // retransmission counts as sent and there is no inflation).
                    self.send_segment(self.snd_una, self.seg_len(self.snd_una, cx), cx);
                    if !self.prr_enabled {
                        self.inflation = self.inflation.saturating_sub(acked) + self.mss;
                    }
                    self.partial_acks += 1;
                }
            }
            if self
                .prr
                .is_some_and(|p| !self.in_recovery && self.snd_una >= p.end)
            {
                self.prr = None; // the ECN reduction is over
            }
            if ece && !self.in_recovery && self.cwr_end.is_none_or(|e| self.snd_una >= e) {
                self.prior_cwnd = self.cc.cwnd_bytes();
                self.cc.on_ecn(now, self.snd_nxt - self.snd_una);
                let end = self.cwr_end_after(self.snd_nxt);
                self.cwr_end = Some(end);
                self.queue_cwr = self.ecn;
                if self.prr_enabled {
                    self.start_prr(self.snd_nxt - self.snd_una, end, 0);
                }
            }
            // Without SACK, after an advance every unacknowledged byte counts as in flight;
            // a partial acknowledgement marks the next hole lost, as Linux marks the head.
            self.prr_update(
                delivered,
                self.snd_nxt - self.snd_una,
                true,
                self.in_recovery,
            );
            let sample = AckSample {
                now,
                acked_bytes: acked,
                ce_bytes: if ece { acked } else { 0 },
                in_flight_bytes: self.snd_nxt - self.snd_una,
                rtt: Some(rtt),
                min_rtt: self.min_rtt,
                round_start,
                snd_una: self.snd_una,
                snd_nxt: self.snd_nxt.max(self.high_tx),
                // No growth during a reduction, as Linux in its CWR and Recovery states.
                in_recovery: self.in_recovery || self.prr.is_some(),
                cwnd_limited: self.usage.as_ref().map_or(self.cwnd_limited, |u| u.limited),
                max_out_bytes: self.usage.as_ref().map_or(0, |u| u.max_out),
                mss: self.mss,
                queue_delay: self
                    .queue_delay
                    .then(|| Dur::from_ns(u64::from(p.queue_delay_ns))),
                rate_echo: p.rate.rate(),
                data_arrival: Some(p.sent_at),
                ein: p.flags & FLAG_EIN != 0,
            };
            self.cc.on_ack(&sample);
            if self.snd_una >= cx.shared.limit_bytes {
                // Bytes held back for the host pacer may be acknowledged without being
                // sent again (the receiver kept them across a go-back-N restart): they no
                // longer wait.
                if self.pacer_waiting != 0 {
                    self.hold_back(0, cx.host_state);
                }
                self.finish();
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
            // Without SACK: each duplicate ACK says one segment left the network.
            let pipe =
                (self.snd_nxt - self.snd_una).saturating_sub(u64::from(self.dupacks) * self.mss);
            if self.in_recovery {
                if let Some(prr) = &mut self.prr {
                    prr.dup_delivered += self.mss;
                    prr.on_ack(self.mss, pipe, self.mss, !self.linux_reduction);
                } else {
                    self.inflation += self.mss;
                }
            } else if self.dupacks == 3 && self.recover.is_none_or(|r| a > r) {
                // RFC 6582 §3.2 step 2: fast retransmit, enter recovery.
                self.in_recovery = true;
                self.partial_acks = 0;
                self.recover = Some(self.high_tx);
                self.prior_cwnd = self.cc.cwnd_bytes();
                self.cc.on_loss(now, self.snd_nxt - self.snd_una);
                self.cwr_end = Some(self.high_tx);
                self.queue_cwr = self.ecn;
                if self.prr_enabled {
                    // The three duplicate ACKs' segments will be acknowledged again.
                    self.start_prr(self.snd_nxt - self.snd_una, self.high_tx, 3 * self.mss);
                    self.prr_update(self.mss, pipe, false, true);
                } else {
                    self.inflation = 3 * self.mss;
                }
                self.send_segment(self.snd_una, self.seg_len(self.snd_una, cx), cx);
                self.timers.cancel(T_RTO);
            }
        }
        self.answer_ack(cx);
    }

    /// An ACK with the SACK scoreboard (RFC 6675; RACK-TLP of RFC 8985 with `rack`).
    fn on_ack_board<S: Sched>(
        &mut self,
        p: &Packet,
        rack: bool,
        cx: &mut EndpointCx<'_, S, TcpHost>,
    ) {
        let now = cx.now();
        let a = p.ack;
        let ece = p.flags & FLAG_ECE != 0;
        if p.flags & FLAG_RWND != 0 {
            self.rwnd = p.seq;
        }
        self.ack_stamp = p.sent_at;
        let flight_before = self.board.pipe();
        let res = match cx.packet_ext() {
            Some(ext) => self
                .board
                .on_ack(a, decode_sack(a, ext), now, self.min_rtt, p.echo),
            None => self
                .board
                .on_ack(a, core::iter::empty(), now, self.min_rtt, p.echo),
        };
        let mut rtt = None;
        let mut round_start = false;
        let acked = a.saturating_sub(self.snd_una);
        if acked > 0 {
            self.snd_una = a;
            // The newest data acknowledged (the echo) gives the controller's sample and the
            // minimum; Linux's estimator takes the oldest (`first_ackt`: an ACK that
            // covers a piece held by the receiver's delayed ACK measures from that piece).
            let r = now.saturating_since(p.echo);
            let first = res.first_sent.filter(|_| self.linux_rtt.is_some());
            let min_rtt = self.min_rtt.min(r);
            self.sample_rtt(first.map_or(r, |t| now.saturating_since(t)));
            self.min_rtt = min_rtt;
            rtt = Some(r);
            round_start = self.snd_una >= self.round_end;
            if round_start {
                self.round_end = self.snd_nxt;
            }
            if (self.in_recovery || self.in_loss) && self.recover.is_some_and(|r| a >= r) {
                self.in_recovery = false;
                self.in_loss = false;
                self.prr = None;
            }
            if self
                .prr
                .is_some_and(|p| !self.in_recovery && self.snd_una >= p.end)
            {
                self.prr = None; // the ECN reduction is over
            }
            self.tlp_acked(a, now);
        }
        if ece
            && !self.in_recovery
            && !self.in_loss
            && self.cwr_end.is_none_or(|e| self.snd_una >= e)
        {
            self.prior_cwnd = self.cc.cwnd_bytes();
            self.cc.on_ecn(now, self.board.pipe());
            let end = self.cwr_end_after(self.snd_nxt);
            self.cwr_end = Some(end);
            self.queue_cwr = self.ecn;
            if self.prr_enabled {
                self.start_prr(self.board.pipe(), end, 0);
            }
        }
        // Loss detection: RACK (RFC 8985 §6.2) or RFC 6675's duplicate threshold. After a
        // timeout everything outstanding is already marked.
        let mut newly_lost = false;
        if !self.in_loss {
            // RACK looks again only when an ACK moved its reference (Linux's
            // `tcp_rack_mark_lost`); segments still inside their window wait for the
            // reordering timer, armed for the last of them with Linux's margin. An ACK that
            // moves `snd_una` and arms nothing re-arms Linux's one transmit timer for the
            // RTO or a probe, which ends a reordering wait.
            let mut reo_armed = false;
            let marked = if !rack {
                self.board.mark_lost_by_dupthresh(DUPTHRESH, self.mss)
            } else if res.rack_advanced {
                let (marked, last) = self.board.rack_detect(now, self.reo_wnd());
                if let Some(t) = last {
                    cx.arm(&mut self.timers, T_REO, t + TIMEOUT_MIN);
                    reo_armed = true;
                }
                marked
            } else {
                0
            };
            if rack && acked > 0 && !reo_armed {
                self.timers.cancel(T_REO);
            }
            // Linux's `tcp_time_to_recover`: data marked lost and not yet delivered proves
            // a loss, so a recovery that ends with some outstanding (lost, and perhaps
            // resent, after the recovery began) starts the next one at once, with its own
            // reduction: behind a queue that keeps dropping, cuts follow one another.
            newly_lost = marked > 0;
            let proven = marked > 0 || (self.linux_reduction && self.board.lost_bytes() > 0);
            if proven && !self.in_recovery {
                self.enter_recovery(now, flight_before);
            }
        }
        self.prr_update(res.delivered, self.board.pipe(), acked > 0, newly_lost);
        if acked > 0 {
            self.controller_ack(p, acked, ece, rtt, round_start, now);
            if self.snd_una >= cx.shared.limit_bytes {
                if self.pacer_waiting != 0 {
                    self.hold_back(0, cx.host_state);
                }
                self.finish();
                return;
            }
            // Linux restarts the retransmission timer on every ACK that moves `snd_una`.
            self.timers.cancel(T_RTO);
        }
        self.answer_ack(cx);
    }

    /// The controller's share of an ACK that acknowledged `acked` new bytes.
    fn controller_ack(
        &mut self,
        p: &Packet,
        acked: u64,
        ece: bool,
        rtt: Option<Dur>,
        round_start: bool,
        now: Time,
    ) {
        let in_flight = self.board.pipe();
        let sample = AckSample {
            now,
            acked_bytes: acked,
            ce_bytes: if ece { acked } else { 0 },
            in_flight_bytes: in_flight,
            rtt,
            min_rtt: self.min_rtt,
            round_start,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt.max(self.high_tx),
            // No growth during a reduction, as Linux in its CWR and Recovery states.
            in_recovery: self.in_recovery || self.prr.is_some(),
            cwnd_limited: self.usage.as_ref().map_or(self.cwnd_limited, |u| u.limited),
            max_out_bytes: self.usage.as_ref().map_or(0, |u| u.max_out),
            mss: self.mss,
            queue_delay: self
                .queue_delay
                .then(|| Dur::from_ns(u64::from(p.queue_delay_ns))),
            rate_echo: p.rate.rate(),
            data_arrival: Some(p.sent_at),
            ein: p.flags & FLAG_EIN != 0,
        };
        self.cc.on_ack(&sample);
    }

    /// Enters fast recovery with `flight` bytes out: the controller's cut, once per window.
    fn enter_recovery(&mut self, now: Time, flight: u64) {
        self.in_recovery = true;
        self.recover = Some(self.high_tx);
        self.prior_cwnd = self.cc.cwnd_bytes();
        self.cc.on_loss(now, flight);
        self.cwr_end = Some(self.high_tx);
        self.queue_cwr = self.ecn;
        if self.prr_enabled {
            self.start_prr(flight, self.high_tx, 0);
        }
    }

    /// RACK's reordering window (Linux's `tcp_rack_reo_wnd` with no reordering seen, which
    /// this network only shows with packet spraying): none in recovery or once three
    /// segments are SACKed, else a quarter of the minimum RTT, at most the smoothed RTT.
    fn reo_wnd(&self) -> Dur {
        if self.in_recovery || self.board.sacked_bytes() >= u64::from(DUPTHRESH) * self.mss {
            return Dur::ZERO;
        }
        let quarter = if self.min_rtt == Dur::MAX {
            Dur::ZERO
        } else {
            self.min_rtt / 4
        };
        self.srtt.map_or(quarter, |s| quarter.min(s))
    }

    /// Linux's `tcp_process_tlp_ack`: an ACK beyond a probe that resent data means the
    /// probe repaired a loss, and the window is cut once (without DSACK the sender cannot
    /// tell a probe that only duplicated a delivered segment).
    fn tlp_acked(&mut self, ack: u64, now: Time) {
        let Some(high) = self.tlp_high else {
            return;
        };
        if ack < high {
            return;
        }
        if !self.tlp_retrans {
            // A probe of new data: acknowledged, nothing was lost.
            self.tlp_high = None;
        } else if ack > high {
            self.tlp_high = None;
            self.tlp_retrans = false;
            self.prior_cwnd = self.cc.cwnd_bytes();
            self.cc.on_loss(now, self.board.pipe());
            self.cwr_end = Some(self.snd_nxt);
            self.queue_cwr = self.ecn;
        }
        // An ACK of exactly the probe leaves the episode open, as Linux does: the next ACK
        // beyond it decides.
    }

    /// The tail-loss probe (Linux's `tcp_send_loss_probe`): one new segment if there is
    /// one, whatever the window, else the highest segment not SACKed again; then the
    /// retransmission timer.
    fn send_loss_probe<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, TcpHost>) {
        if self.tlp_high.is_none() && !self.in_recovery && !self.in_loss {
            let end = cx.shared.limit_bytes;
            let now = cx.now();
            if self.snd_nxt < end {
                let len = self.mss.min(end - self.snd_nxt);
                let wire = wire_bytes(len as u32 + TCP_IP_HEADER_BYTES);
                if !self.backpressure || cx.nic_room(wire) {
                    let seq = self.snd_nxt;
                    self.send_segment(seq, len, cx);
                    self.board.sent_new(seq, seq + len, now);
                    self.snd_nxt += len;
                    self.tlp_high = Some(self.snd_nxt);
                    self.tlp_retrans = false;
                    self.stats.loss_probes += 1;
                } else {
                    self.nic_blocked = true;
                }
            } else if let Some((mut s, e)) = self.board.last_unsacked() {
                // Of a super-packet, only its last segment (as Linux fragments it).
                if e - s > self.mss {
                    let at = s + (e - s - 1) / self.mss * self.mss;
                    self.board.split(s, at);
                    s = at;
                }
                self.send_segment(s, e - s, cx);
                self.board.retransmitted(s, now);
                self.tlp_high = Some(self.snd_nxt);
                self.tlp_retrans = true;
                self.stats.loss_probes += 1;
            }
        }
        self.timers.cancel(T_RTO);
        if self.snd_una < self.snd_nxt {
            cx.arm_in(&mut self.timers, T_RTO, self.rto);
        }
    }

    /// Starts a reduction to the controller's (already reduced) window, from a flight of
    /// `flight` bytes, ending at `end` (RFC 6937: prr_delivered = prr_out = 0).
    fn start_prr(&mut self, flight: u64, end: u64, dup_delivered: u64) {
        // Linux divides by the window before the cut; a window already below its flight
        // (Pulser's safe window, set outside any reduction) divides by the flight, so that
        // the flight still drains in proportion.
        let recover_fs = if self.linux_reduction {
            self.prior_cwnd.max(flight)
        } else {
            flight
        };
        self.prr = Some(Prr {
            ssthresh: self.cc.cwnd_bytes(),
            recover_fs: recover_fs.max(1),
            delivered: 0,
            out: 0,
            sndcnt: 0,
            end,
            dup_delivered,
            force_first: self.linux_reduction,
        });
    }

    /// Where an ECN reduction begun with `snd_nxt` ends: once `snd_una` reaches it (with
    /// Linux's rule, once it passes it, so that the CWR flag has reached the receiver).
    fn cwr_end_after(&self, snd_nxt: u64) -> u64 {
        snd_nxt + u64::from(self.linux_reduction)
    }

    /// The current reduction, if any, on an ACK (see [`Prr::on_ack`]) that moved
    /// `snd_una` (`advanced`) and found `newly_lost` segments lost. RFC 6937's slow start
    /// below the target always allows one segment more than was delivered; Linux (since
    /// 5.19, `tcp_cwnd_reduction`) only on an ACK that moves `snd_una` and marks no new
    /// loss, so that a recovery that keeps losing does not grow back into the loss.
    fn prr_update(&mut self, delivered: u64, pipe: u64, advanced: bool, newly_lost: bool) {
        let mss = self.mss;
        let extra = !self.linux_reduction || (advanced && !newly_lost);
        if let Some(prr) = &mut self.prr {
            prr.on_ack(delivered, pipe, mss, extra);
        }
    }

    /// RFC 6298 §2: SRTT, RTTVAR and RTO from one sample.
    fn sample_rtt(&mut self, r: Dur) {
        self.min_rtt = self.min_rtt.min(r);
        if let Some(est) = &mut self.linux_rtt {
            // Linux's estimator, in whole microseconds as the kernel keeps them.
            let us = |d: Dur| (d.as_ns() / 1000) as i64;
            let rto = est.sample(us(r), us(self.min_rto), self.snd_una, self.snd_nxt);
            self.srtt = Some(Dur::from_us((est.srtt8 >> 3) as u64));
            self.rto = Dur::from_us(rto as u64).min(self.max_rto);
            return;
        }
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

    /// Sends the SYN and arms the retransmission timer for it.
    fn send_syn<S: Sched, H>(&mut self, cx: &mut EndpointCx<'_, S, H>) {
        let now = cx.now();
        let mut syn = control_segment(self.flow, self.route, self.dst, now, Time::ZERO, FLAG_SYN);
        if self.cc.requests_rate() {
            syn.ip = syn.ip.with_rate_request();
        }
        cx.send(syn);
        cx.arm_in(&mut self.timers, T_RTO, self.rto);
    }

    /// The SYN-ACK: the connection is open; its round trip is the first RTT sample.
    fn on_syn_ack<S: Sched>(&mut self, p: &Packet, cx: &mut EndpointCx<'_, S, TcpHost>) {
        if !self.syn_pending {
            return; // a duplicate
        }
        self.syn_pending = false;
        self.timers.cancel(T_RTO);
        let rtt = cx.now().saturating_since(p.echo);
        self.sample_rtt(rtt);
        self.cc.on_syn_ack(p.rate.rate(), rtt);
        self.try_send(cx);
    }

    fn on_rto<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, TcpHost>) {
        if self.syn_pending && !self.done {
            // RFC 6298 §5.5 for the SYN too: back off and send it again.
            self.stats.timeouts += 1;
            self.rto = (self.rto * 2).min(self.max_rto);
            self.send_syn(cx);
            return;
        }
        if self.done || self.snd_una >= self.snd_nxt {
            return;
        }
        self.stats.timeouts += 1;
        self.prr = None;
        let flight = match self.recovery {
            Recovery::Scoreboard { .. } => self.board.pipe(),
            Recovery::NewReno { .. } => self.snd_nxt - self.snd_una,
        };
        self.cc.on_rto(cx.now(), flight);
        // RFC 6298 §5.5: back off; RFC 6582 §4: remember the highest sequence sent so that
        // duplicate ACKs for data sent before the timeout do not trigger fast retransmit.
        self.rto = (self.rto * 2).min(self.max_rto);
        self.recover = Some(self.high_tx);
        self.in_recovery = false;
        self.inflation = 0;
        self.dupacks = 0;
        self.cwr_end = Some(self.high_tx);
        self.queue_cwr = self.ecn;
        self.round_end = self.snd_una;
        match self.recovery {
            Recovery::Scoreboard {
                clear_on_timeout, ..
            } => {
                // Linux's `tcp_enter_loss`: everything not SACKed is lost and resent in
                // order; ns-2's FullTcp/Sack forgets the SACKs too (`clear_on_timeout_`).
                self.board.on_timeout(clear_on_timeout);
                self.in_loss = true;
                self.tlp_high = None;
                self.tlp_retrans = false;
                self.timers.cancel(T_REO);
                self.timers.cancel(T_TLP);
            }
            // Go back to the first byte not acknowledged; with SACK the sender then skips
            // what the receiver holds.
            Recovery::NewReno { .. } => self.snd_nxt = self.snd_una,
        }
        self.try_send(cx);
    }

    /// RACK's reordering timer: segments that were waiting out the reordering window may
    /// now count as lost.
    fn on_reorder_timeout<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, TcpHost>) {
        if self.done || self.in_loss {
            return;
        }
        let now = cx.now();
        let flight = self.board.pipe();
        // Linux's `tcp_rack_reo_timeout`: what is due is lost; the timer is not armed again.
        let (marked, _) = self.board.rack_detect(now, self.reo_wnd());
        if marked > 0 {
            if !self.in_recovery {
                self.enter_recovery(now, flight);
            }
            // Linux counts one segment delivered here (`tcp_cwnd_reduction(sk, 1, 0, 0)`),
            // without the extra one; RFC 6937 counts none, with it.
            let delivered = if self.linux_reduction { self.mss } else { 0 };
            self.prr_update(delivered, self.board.pipe(), false, false);
            self.try_send(cx);
        }
    }

    /// The stop time: no new data beyond what has been sent.
    fn on_stop<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, TcpHost>) {
        let sent = self.snd_nxt.max(self.high_tx);
        if sent < cx.shared.limit_bytes {
            cx.shared.limit_bytes = sent;
            // Nothing is held back for the pacer any more.
            if let Some(pacer) = cx.host_state.pacer.as_mut() {
                pacer.unwait(self.pacer_waiting);
            }
            self.pacer_waiting = 0;
            if self.snd_una >= sent {
                self.finish();
            }
        }
    }

    fn finish(&mut self) {
        self.done = true;
        self.board.clear();
        self.sacked.clear();
        self.timers.cancel(T_REO);
        self.timers.cancel(T_TLP);
        debug_assert_eq!(
            self.pacer_waiting, 0,
            "finished while waiting for the pacer"
        );
        self.timers.cancel(T_RTO);
        self.timers.cancel(T_STOP);
    }
}

impl Sender for TcpSender {
    type Host = TcpHost;

    /// Starts sending; arms the stop timer if the flow has a stop time.
    fn on_start<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, TcpHost>) {
        if let Some(t) = self.stop {
            let at = t.max(cx.now());
            cx.arm(&mut self.timers, T_STOP, at);
        }
        self.round_end = 0;
        if self.syn_pending {
            self.send_syn(cx);
        } else {
            self.try_send(cx);
        }
    }

    fn on_packet<S: Sched>(&mut self, p: &Packet, cx: &mut EndpointCx<'_, S, TcpHost>) {
        if p.flags & FLAG_SYN != 0 {
            self.on_syn_ack(p, cx);
        } else if p.flags & FLAG_ACK != 0 {
            self.on_ack(p, cx);
        }
    }

    fn on_timer<S: Sched>(
        &mut self,
        kind: usize,
        generation: u32,
        cx: &mut EndpointCx<'_, S, TcpHost>,
    ) {
        match cx.due(&mut self.timers, kind, generation) {
            Some(T_RTO) => self.on_rto(cx),
            Some(T_STOP) => self.on_stop(cx),
            Some(T_PACE) if !self.done => self.try_send(cx),
            Some(T_REO) => self.on_reorder_timeout(cx),
            Some(T_TLP) if !self.done => self.send_loss_probe(cx),
            _ => {}
        }
    }

    /// The host NIC has room again: continue sending.
    fn on_nic_ready<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, TcpHost>) {
        self.nic_blocked = false;
        if !self.done {
            self.try_send(cx);
        }
    }

    fn is_done(&self) -> bool {
        self.done
    }

    fn is_nic_blocked(&self) -> bool {
        self.nic_blocked
    }
}

/// The buffer at the head of a bulk sender's write queue with `gso` (`gso_max` bytes each,
/// as `tcp_sendmsg` fills them to `tcp_xmit_size_goal`), about to send from `seq` with
/// `quota` bytes allowed: its length, and whether it is the last (holds `end`). The
/// buffers end at multiples of `gso_max` (splitting one keeps its end); since Linux 6.10
/// `tcp_write_xmit` first grows a head shorter than the quota with bytes of the next
/// buffer (`tcp_grow_skb`), so a super-packet may cross one boundary.
fn write_queue_head(seq: u64, end: u64, anchor: u64, gso_max: u64, quota: u64) -> (u64, bool) {
    // Data sent again after a timeout (`seq` behind the cut) counts from its own start.
    let anchor = anchor.min(seq);
    let boundary = anchor + ((seq - anchor) / gso_max + 1) * gso_max;
    let rest = boundary.min(end) - seq;
    if rest >= quota || boundary >= end {
        return (rest, boundary >= end);
    }
    let next_end = (boundary + gso_max).min(end);
    let grown = quota.min(next_end - seq);
    (grown, seq + grown >= end)
}

/// Whether the ACK of a packet sent at `head`, expected a smoothed RTT later, is due more
/// than min(half that RTT, 1 ms) after `now`: too far to wait for (`tcp_tso_should_defer`).
fn ack_too_far(head: Time, srtt: Dur, now: Time) -> bool {
    (head + srtt).saturating_since(now) > (srtt / 2).min(Dur::from_ms(1))
}

/// How the window was used over the last window of data, kept as Linux's
/// `tcp_cwnd_validate` keeps it: whether the window was the limit at some send, and the
/// most bytes out at once. A window of data ends when `snd_una` passes the `snd_nxt` at
/// which the record began; a send held by the window, or more out than recorded while the
/// window was not the limit, begins a new record at once.
#[derive(Clone, Copy, Debug, Default)]
struct CwndUsage {
    limited: bool,
    max_out: u64,
    until: u64,
}

impl CwndUsage {
    fn validate(&mut self, limited: bool, snd_una: u64, snd_nxt: u64) {
        let out = snd_nxt - snd_una;
        if snd_una >= self.until || limited || (!self.limited && out > self.max_out) {
            self.limited = limited;
            self.max_out = out;
            self.until = snd_nxt;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn prr(ssthresh: u64, flight: u64) -> Prr {
        Prr {
            ssthresh: ssthresh * MSS,
            recover_fs: flight * MSS,
            delivered: 0,
            out: 0,
            sndcnt: 0,
            end: 0,
            dup_delivered: 0,
            force_first: false,
        }
    }

    /// Linux's record of the window's use: a send held by the window counts until a whole
    /// window of data is acknowledged; the most out grows at once while the window is not
    /// the limit, and a new window of data starts a new record.
    #[test]
    fn the_window_use_is_kept_over_a_window_of_data_as_linux() {
        let mut u = CwndUsage::default();
        u.validate(true, 0, 10_000);
        assert!(u.limited && u.max_out == 10_000);
        // Not held now, but the window that was held is not yet acknowledged.
        u.validate(false, 5_000, 12_000);
        assert!(u.limited && u.max_out == 10_000);
        // Acknowledged past its end: a new record.
        u.validate(false, 10_000, 13_000);
        assert!(!u.limited && u.max_out == 3_000 && u.until == 13_000);
        // More out while not held: recorded at once.
        u.validate(false, 10_500, 15_000);
        assert_eq!(u.max_out, 4_500);
        // Less out: kept.
        u.validate(false, 12_000, 14_000);
        assert_eq!(u.max_out, 4_500);
    }

    /// Linux's estimator: the minimum RTO bounds the variation term, not the whole timer,
    /// so RTO = SRTT + max(4·mdev, min_rto); RFC 6298 clamps SRTT + 4·RTTVAR from below.
    #[test]
    fn linux_rto_adds_the_minimum_to_the_smoothed_rtt() {
        let mut e = LinuxRtt::default();
        // A 100 µs RTT with Linux's 200 ms minimum: 200.1 ms, not 200 ms.
        assert_eq!(e.sample(100, 200_000, 0, 10), 200_100);
        // Steady samples keep it there; the variation term never falls below the minimum.
        for k in 1..50 {
            assert_eq!(e.sample(100, 200_000, k * 10, (k + 1) * 10), 200_100);
        }
        // With a 1 ms minimum (a data-centre route), 1.1 ms.
        let mut d = LinuxRtt::default();
        assert_eq!(d.sample(100, 1_000, 0, 10), 1_100);
        // A jump to 5 ms: SRTT moves by an eighth of the error, and the deviation above
        // the minimum lifts the timer at once.
        let rto = d.sample(5_000, 1_000, 0, 10);
        assert_eq!(d.srtt8 >> 3, 100 + (5_000 - 100) / 8);
        assert!(rto > 100 + (5_000 - 100) / 8 + 1_000, "{rto}");
    }

    /// RFC 6937's example: a window of 20 segments halved to 10 after one loss. While the
    /// flight is above 10, every other delivered segment lets one leave (10/20 of what
    /// arrives), spreading the cut over the round trip instead of pausing for half of it.
    #[test]
    fn prr_sends_in_proportion_while_the_flight_is_above_the_target() {
        let mut p = prr(10, 20);
        let mut pipe = 19 * MSS; // one segment lost
        let mut sent = Vec::new();
        for _ in 0..18 {
            p.on_ack(MSS, pipe, MSS, true);
            let n = p.sndcnt.div_ceil(MSS); // the sender rounds up to whole segments
            p.sent(n * MSS);
            pipe = pipe - MSS + n * MSS;
            sent.push(n);
        }
        // 1 of every 2 ACKs: ceil(k·10/20) − sent after the k-th ACK.
        assert_eq!(sent, [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0]);
        assert_eq!(
            pipe,
            10 * MSS,
            "the flight has come down to the target exactly"
        );
    }

    /// Below the target (more was lost than the cut), PRR-SSRB grows back by at most one
    /// segment beyond what each ACK delivered, and never beyond the target.
    #[test]
    fn prr_slow_starts_back_to_the_target_below_it() {
        let mut p = prr(10, 20);
        p.on_ack(MSS, 4 * MSS, MSS, true);
        assert_eq!(p.sndcnt, 2 * MSS, "delivered one, may send two");
        p.sent(2 * MSS);
        p.on_ack(MSS, 5 * MSS, MSS, true);
        assert_eq!(p.sndcnt, 2 * MSS);
        p.on_ack(5 * MSS, 9 * MSS, MSS, true);
        assert_eq!(p.sndcnt, MSS, "capped at the target: 10 − 9 segments");
    }

    /// Linux's rule below the target: the extra segment only on an ACK that moved
    /// `snd_una` without a new loss; an ACK that SACKs while the recovery keeps losing
    /// sends what it delivered and no more, and the first ACK that delivered anything
    /// sends at least one segment.
    #[test]
    fn linux_prr_adds_the_extra_segment_only_on_a_clean_advance() {
        let mut p = prr(10, 20);
        p.force_first = true;
        p.on_ack(MSS, 4 * MSS, MSS, false);
        assert_eq!(p.sndcnt, MSS, "a SACK with a new loss: what it delivered");
        p.sent(MSS);
        p.on_ack(MSS, 4 * MSS, MSS, true);
        assert_eq!(
            p.sndcnt,
            2 * MSS,
            "snd_una moved, nothing newly lost: one more"
        );
        // At the target already, nothing may go but the first segment of the reduction.
        let mut q = prr(10, 20);
        q.force_first = true;
        q.on_ack(MSS, 10 * MSS, MSS, false);
        assert!(q.sndcnt > 0, "the fast retransmission is forced");
        q.sent(MSS);
        q.on_ack(MSS, 10 * MSS, MSS, false);
        assert_eq!(q.sndcnt, 0);
    }

    /// Write-queue buffers of 45 segments: a head shorter than the quota grows into the
    /// next buffer (never past it), a longer one is what deferral weighs; the last buffer
    /// is the tail.
    #[test]
    fn the_write_queue_head_grows_into_the_next_buffer_only() {
        let buf = 45 * MSS;
        let end = 1000 * MSS;
        assert_eq!(
            write_queue_head(0, end, 0, buf, 10 * MSS),
            (buf, false),
            "a whole buffer"
        );
        assert_eq!(
            write_queue_head(40 * MSS, end, 0, buf, 10 * MSS),
            (10 * MSS, false),
            "5 left in the head, 5 more from the next"
        );
        assert_eq!(
            write_queue_head(40 * MSS, end, 0, buf, 45 * MSS),
            (45 * MSS, false),
            "grown to the quota, across one boundary"
        );
        assert_eq!(
            write_queue_head(30 * MSS, end, 0, buf, 5 * MSS),
            (15 * MSS, false),
            "no growth: the head is longer than the quota"
        );
        assert_eq!(
            write_queue_head(980 * MSS, end, 0, buf, 45 * MSS),
            (20 * MSS, true),
            "the head holds the last byte"
        );
        assert_eq!(
            write_queue_head(930 * MSS, end, 0, buf, 45 * MSS),
            (45 * MSS, false),
            "grown into the last buffer, which keeps some"
        );
        // Buffers cut from an application's write: every 45 segments from there on; data
        // behind the cut (sent again after a timeout) counts from its own start.
        assert_eq!(
            write_queue_head(50 * MSS, end, 47 * MSS, buf, 40 * MSS),
            (42 * MSS, false),
            "the head ends at the first cut after the anchor"
        );
        assert_eq!(
            write_queue_head(10 * MSS, end, 47 * MSS, buf, 45 * MSS),
            (45 * MSS, false),
            "behind the anchor"
        );
    }

    /// Linux 6.18's deferral bound: the sender waits for an ACK expected within min(half
    /// the smoothed RTT, 1 ms), and no longer. Before the October 2025 fix the rule was
    /// "the oldest packet left at least half a smoothed RTT ago", which with a 200 ms RTT
    /// waited for an ACK still 50 ms away.
    #[test]
    fn tso_deferral_waits_for_an_ack_at_most_a_millisecond_away() {
        let at = |us: u64| Time::ZERO + Dur::from_us(us);
        // A short RTT (100 µs): half of it bounds the wait.
        let srtt = Dur::from_us(100);
        assert!(!ack_too_far(at(0), srtt, at(60)), "due in 40 µs: wait");
        assert!(ack_too_far(at(0), srtt, at(40)), "due in 60 µs: send");
        // A long RTT (200 ms, a deep queue): 1 ms bounds it.
        let srtt = Dur::from_ms(200);
        assert!(ack_too_far(at(0), srtt, at(150_000)), "due in 50 ms: send");
        assert!(
            !ack_too_far(at(0), srtt, at(199_500)),
            "due in 0.5 ms: wait"
        );
        assert!(!ack_too_far(at(0), srtt, at(250_000)), "overdue: wait");
    }
}
