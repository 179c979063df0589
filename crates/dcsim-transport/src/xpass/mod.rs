//! ExpressPass: end-to-end credit-based congestion control (Cho, Jang, Han, SIGCOMM 2017,
//! and the earlier workshop paper; ns-2 reference code kaist-ina/ns2-xpass).
//!
//! The receiver paces small credit packets toward the sender; every port shapes credits to
//! the credit share of its link ([`dcsim_net::qdisc::CreditShaper`]) and drops the excess;
//! each credit that reaches the sender releases one data packet, which takes the reverse
//! path of the credit. The receiver's feedback law ([`feedback`]) sets its credit rate from
//! the credit loss it infers from the credit sequence numbers echoed by data.
//!
//! # Messages (header use)
//! | packet | class | wire | fields |
//! |---|---|---|---|
//! | request | control | 84 B | `seq` = flow size (`u64::MAX` long-lived), `ack` = packets to send, `sent_at` |
//! | credit | credit | 84 B (or uniform in a range) | `seq` = credit sequence (from 1), `sent_at` |
//! | data | data | payload + 78 B, ≥ 84 B | `seq` = first byte, `payload_bytes`, `ack` = credit sequence, `echo` = credit's `sent_at` |
//! | stop | control | 84 B | `seq` = final flow size |
//! | NACK | control | 84 B | `seq`..`ack` = a missing byte range |
//!
//! # Loss recovery (better than the reference, which cannot recover tail loss)
//! The receiver knows the flow size from the request (or the stop). It keeps out-of-order
//! data (no go-back-N): a gap in the byte stream is reported at once by a NACK naming the
//! missing range, repeated every `rto` while the hole persists, and also after a stop that
//! leaves the flow incomplete (tail loss). The sender retransmits NACKed ranges first, on
//! the next credits, and re-requests credits if it had stopped. A lost stop is repeated
//! when credits keep arriving more than two RTTs after it; a lost request after `rto`.

pub mod feedback;

use dcsim_engine::{Dur, Rate, Rng, Schedule, Time, TimerTable};
use dcsim_net::wire::{
    MAX_WIRE_BYTES, MIN_WIRE_BYTES, TCP_IP_HEADER_BYTES, TCP_MSS_BYTES, wire_bytes,
};
use dcsim_net::{Class, Ecn, NetEvent, Packet, PacketId};
use rand::RngExt;
use serde::{Deserialize, Serialize};

pub use feedback::{Feedback, Law, LawParams, Period};

use crate::tcp::{Endpoints, Progress, insert_range};
use crate::{Due, FlowCx, FlowEvent, arm_timer, timer_due};

/// Packet flag: credit request.
pub const FLAG_REQUEST: u8 = 8;
/// Packet flag: credit stop.
pub const FLAG_STOP: u8 = 16;
/// Packet flag: credit.
pub const FLAG_CREDIT: u8 = 32;
/// Packet flag: data.
pub const FLAG_XDATA: u8 = 64;
/// Packet flag: negative acknowledgement of a byte range.
pub const FLAG_NACK: u8 = 128;

const T_REQ: usize = 0;
const T_CREDIT: usize = 1;
const T_NACK: usize = 2;
const T_STOP: usize = 3;
const TIMERS: usize = 4;

/// Named parameter sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// SIGCOMM'17 paper: Algorithm 1, target loss 10 %, w_max 0.5, w_min 0.01,
    /// α = w_init = 1/16, no AIR or ECS.
    #[default]
    Paper,
    /// The ns-2 code at HEAD (f4e38bc): the code law (dynamic target 0.125·(1 − r/R),
    /// w += 0.05), α = w_init = 0.5, w_min 0.01, AIR and ECS on.
    Code,
}

/// ExpressPass parameters as written in a scenario; unset fields come from `profile`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct XpassConfig {
    /// Parameter profile (default `paper`).
    pub profile: Option<Profile>,
    /// Feedback law: `none`, `workshop`, `paper` or `code`.
    pub law: Option<Law>,
    /// Initial credit rate as a fraction of the maximum (α).
    pub alpha: Option<f64>,
    /// Initial aggressiveness w.
    pub w_init: Option<f64>,
    /// Upper bound of w.
    pub w_max: Option<f64>,
    /// Lower bound of w.
    pub w_min: Option<f64>,
    /// Paper law: target credit loss.
    pub target_loss: Option<f64>,
    /// Code law: scaling of the dynamic target.
    pub target_loss_scaling: Option<f64>,
    /// Adaptive initial rate: flows of fewer than 40 packets start at α·max·packets/40.
    pub air: Option<bool>,
    /// Early credit stop: stop credits once the credits of the last RTT cover what is
    /// left (at most once per RTT).
    pub ecs: Option<bool>,
    /// Relative jitter of the inter-credit gap: uniform in `[min, max]` (±0.1).
    pub jitter: Option<[f64; 2]>,
    /// Credit wire size range in bytes, uniform (84..84; the fat-tree script uses 76..92).
    pub credit_size: Option<[u32; 2]>,
    /// Maximum credit rate (default: the credit share of the receiver's link,
    /// link · avg credit / (avg credit + 1538)).
    pub max_credit_rate: Option<Rate>,
    /// Retransmission timeout of requests and NACKs (100 µs, the fat-tree script's).
    pub rto: Option<Dur>,
}

/// Resolved parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct XpassParams {
    /// Feedback law and its constants (`max_rate` filled per flow).
    pub law: LawParams,
    /// α.
    pub alpha: f64,
    /// AIR on.
    pub air: bool,
    /// ECS on.
    pub ecs: bool,
    /// Jitter range.
    pub jitter: [f64; 2],
    /// Credit size range.
    pub credit_size: [u32; 2],
    /// Explicit maximum credit rate.
    pub max_credit_rate: Option<Rate>,
    /// Request/NACK timeout.
    pub rto: Dur,
}

impl XpassConfig {
    /// Fills unset fields from the profile.
    pub fn resolve(&self) -> Self {
        let profile = self.profile.unwrap_or_default();
        let (law, alpha, w_init, air, ecs) = match profile {
            Profile::Paper => (Law::Paper, 1.0 / 16.0, 1.0 / 16.0, false, false),
            Profile::Code => (Law::Code, 0.5, 0.5, true, true),
        };
        Self {
            profile: Some(profile),
            law: Some(self.law.unwrap_or(law)),
            alpha: Some(self.alpha.unwrap_or(alpha)),
            w_init: Some(self.w_init.unwrap_or(w_init)),
            w_max: Some(self.w_max.unwrap_or(0.5)),
            w_min: Some(self.w_min.unwrap_or(0.01)),
            target_loss: Some(self.target_loss.unwrap_or(0.1)),
            target_loss_scaling: Some(self.target_loss_scaling.unwrap_or(0.125)),
            air: Some(self.air.unwrap_or(air)),
            ecs: Some(self.ecs.unwrap_or(ecs)),
            jitter: Some(self.jitter.unwrap_or([-0.1, 0.1])),
            credit_size: Some(self.credit_size.unwrap_or([MIN_WIRE_BYTES, MIN_WIRE_BYTES])),
            max_credit_rate: self.max_credit_rate,
            rto: Some(self.rto.unwrap_or(Dur::from_us(100))),
        }
    }

    /// Checks ranges; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        let r = self.resolve();
        let frac = |v: Option<f64>, name: &str, lo: f64| match v {
            Some(x) if x > lo && x <= 1.0 => Ok(()),
            Some(x) => Err(format!("{name}: must be in ({lo}, 1], got {x}")),
            None => Ok(()),
        };
        frac(r.alpha, "alpha", 0.0)?;
        frac(r.w_init, "w_init", 0.0)?;
        frac(r.w_max, "w_max", 0.0)?;
        frac(r.w_min, "w_min", 0.0)?;
        frac(r.target_loss, "target_loss", -1e-300)?;
        frac(r.target_loss_scaling, "target_loss_scaling", -1e-300)?;
        if r.w_min > r.w_max {
            return Err("w_min: must not exceed w_max".into());
        }
        let [a, b] = r.jitter.unwrap_or_default();
        if !(a <= b && a > -1.0 && b < 10.0) {
            return Err(format!(
                "jitter: expected [min, max] with -1 < min <= max, got [{a}, {b}]"
            ));
        }
        let [lo, hi] = r.credit_size.unwrap_or_default();
        if !(lo > 0 && lo <= hi && hi <= MAX_WIRE_BYTES) {
            return Err(format!(
                "credit_size: expected [min, max] bytes with 0 < min <= max <= 1538, got [{lo}, {hi}]"
            ));
        }
        if r.rto == Some(Dur::ZERO) {
            return Err("rto: must be greater than zero".into());
        }
        if r.max_credit_rate == Some(Rate::ZERO) {
            return Err("max_credit_rate: must be greater than zero".into());
        }
        Ok(())
    }

    /// The resolved parameters.
    pub fn params(&self) -> XpassParams {
        let r = self.resolve();
        let f = |v: Option<f64>| v.expect("resolved");
        XpassParams {
            law: LawParams {
                law: r.law.expect("resolved"),
                max_rate: 0.0,
                w_init: f(r.w_init),
                w_max: f(r.w_max),
                w_min: f(r.w_min),
                target_loss: f(r.target_loss),
                target_loss_scaling: f(r.target_loss_scaling),
                w_step: 0.05,
            },
            alpha: f(r.alpha),
            air: r.air.expect("resolved"),
            ecs: r.ecs.expect("resolved"),
            jitter: r.jitter.expect("resolved"),
            credit_size: r.credit_size.expect("resolved"),
            max_credit_rate: r.max_credit_rate,
            rto: r.rto.expect("resolved"),
        }
    }
}

/// Counters of one ExpressPass flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XpassStats {
    /// Credits the receiver sent.
    pub credits_sent: u64,
    /// Credits that reached the sender.
    pub credits_received: u64,
    /// Credits that reached the sender with nothing to send.
    pub credits_wasted: u64,
    /// Data packets sent again after a NACK.
    pub retransmits: u64,
    /// Requests sent (1 plus re-requests).
    pub requests: u64,
    /// NACKs sent.
    pub nacks: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SendState {
    Requested,
    Sending,
    Stopped,
}

/// One ExpressPass flow: both endpoints.
pub struct XpassConn {
    ep: Endpoints,
    p: XpassParams,
    /// Bytes to deliver (`u64::MAX` while a long-lived flow runs).
    size: u64,
    // Sender.
    state: SendState,
    req_backoff: u32,
    next_seq: u64,
    retx: Vec<(u64, u64)>,
    request_sent_at: Time,
    sender_rtt: Option<Dur>,
    stop_sent_at: Time,
    ecs_checked_at: Time,
    credits_this_rtt: u64,
    // Receiver.
    crediting: bool,
    fb: Feedback,
    credit_seq: u64,
    c_recv_next: u64,
    period_total: u64,
    period_dropped: u64,
    last_update: Time,
    rtt: Option<f64>,
    rcv_nxt: u64,
    ooo: Vec<(u64, u64)>,
    last_data_at: Time,
    nack_at: u64,
    nack_backoff: u32,
    stop_seen: bool,
    completed: bool,
    max_rate: f64,
    rng: Rng,
    timers: TimerTable<TIMERS>,
    stats: XpassStats,
}

impl XpassConn {
    /// A connection for `size_bytes` (`None`: long-lived) whose receiver's link runs at
    /// `receiver_link`; `rng` is the flow's own stream.
    pub fn new(
        cfg: &XpassConfig,
        ep: Endpoints,
        size_bytes: Option<u64>,
        receiver_link: Rate,
        rng: Rng,
    ) -> Self {
        let mut p = cfg.params();
        let avg = f64::from(p.credit_size[0] + p.credit_size[1]) / 2.0;
        let max_rate = match p.max_credit_rate {
            Some(r) => r.bps() as f64 / 8.0,
            None => receiver_link.bps() as f64 / 8.0 * avg / (avg + f64::from(MAX_WIRE_BYTES)),
        };
        p.law.max_rate = max_rate;
        Self {
            ep,
            p,
            size: size_bytes.unwrap_or(u64::MAX),
            state: SendState::Requested,
            req_backoff: 0,
            next_seq: 0,
            retx: Vec::new(),
            request_sent_at: Time::ZERO,
            sender_rtt: None,
            stop_sent_at: Time::ZERO,
            ecs_checked_at: Time::ZERO,
            credits_this_rtt: 0,
            crediting: false,
            fb: Feedback::new(p.law, max_rate),
            credit_seq: 0,
            c_recv_next: 1,
            period_total: 0,
            period_dropped: 0,
            last_update: Time::ZERO,
            rtt: None,
            rcv_nxt: 0,
            ooo: Vec::new(),
            last_data_at: Time::ZERO,
            nack_at: u64::MAX,
            nack_backoff: 0,
            stop_seen: false,
            completed: false,
            max_rate,
            rng,
            timers: TimerTable::default(),
            stats: XpassStats::default(),
        }
    }

    /// Counters.
    pub fn stats(&self) -> XpassStats {
        self.stats
    }
    /// Bytes the receiver holds in order.
    pub fn delivered_bytes(&self) -> u64 {
        self.rcv_nxt
    }
    /// The receiver's current credit rate, bytes/s.
    pub fn credit_rate(&self) -> f64 {
        self.fb.rate()
    }
    /// The maximum credit rate, bytes/s.
    pub fn max_credit_rate(&self) -> f64 {
        self.max_rate
    }
    /// The receiver's aggressiveness w.
    pub fn w(&self) -> f64 {
        self.fb.w()
    }
    /// The flow's size once known (a stopped long-lived flow's bytes sent).
    pub fn limit_bytes(&self) -> Option<u64> {
        (self.size != u64::MAX).then_some(self.size)
    }

    fn progress(&self) -> Progress {
        Progress {
            completed: self.completed,
            finished: self.completed && !self.crediting && self.state == SendState::Stopped,
            nic_blocked: false,
        }
    }

    fn arm<S: Schedule<FlowEvent>>(&mut self, kind: usize, at: Time, cx: &mut FlowCx<'_, S>) {
        arm_timer(&mut self.timers, self.ep.flow, kind, at, cx);
    }

    fn control(
        &self,
        cx: &mut FlowCx<'_, impl Schedule<NetEvent>>,
        from_sender: bool,
        flags: u8,
        seq: u64,
        ack: u64,
    ) -> PacketId {
        cx.pool.alloc(Packet {
            seq,
            ack,
            sent_at: cx.now,
            echo: Time::ZERO,
            rate: Rate::MAX,
            flow: self.ep.flow,
            route: if from_sender {
                self.ep.fwd
            } else {
                self.ep.rev
            },
            dst: if from_sender {
                self.ep.dst
            } else {
                self.ep.src
            },
            payload_bytes: 0,
            wire_bytes: MIN_WIRE_BYTES,
            hop: 0,
            class: Class::Control,
            ecn: Ecn::NotEct,
            flags,
        })
    }

    /// Starts the flow: the sender asks for credits.
    pub fn on_start<S>(&mut self, stop: Option<Time>, cx: &mut FlowCx<'_, S>) -> Progress
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        if let Some(t) = stop {
            self.arm(T_STOP, t.max(cx.now), cx);
        }
        self.send_request(cx);
        self.progress()
    }

    fn send_request<S>(&mut self, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        let left = self.size.saturating_sub(self.next_seq)
            + self.retx.iter().map(|r| r.1 - r.0).sum::<u64>();
        let pkts = left.div_ceil(u64::from(TCP_MSS_BYTES));
        let pkt = self.control(cx, true, FLAG_REQUEST, self.size, pkts);
        cx.send(self.ep.src, pkt);
        self.stats.requests += 1;
        self.state = SendState::Requested;
        self.request_sent_at = cx.now;
        // Exponential backoff while no credit comes back: when thousands of flows start at
        // once, their first credits are mostly dropped, and fixed 100 µs retries would fill
        // the data queues with requests.
        let wait = self.p.rto.saturating_mul(1 << self.req_backoff.min(6));
        self.req_backoff += 1;
        self.arm(T_REQ, cx.now + wait, cx);
    }

    /// Handles a packet of this flow. Frees it.
    pub fn on_packet<S>(&mut self, pkt: PacketId, cx: &mut FlowCx<'_, S>) -> Progress
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        let p = *cx.pool.get(pkt);
        cx.pool.free(pkt);
        match p.flags {
            FLAG_CREDIT => self.on_credit(&p, cx),
            FLAG_XDATA => self.on_data(&p, cx),
            FLAG_REQUEST => self.on_request(&p, cx),
            FLAG_STOP => self.on_stop(&p, cx),
            FLAG_NACK => self.on_nack(&p, cx),
            _ => debug_assert!(false, "unknown ExpressPass packet flags {}", p.flags),
        }
        self.progress()
    }

    // ---- sender ----

    fn has_data(&self) -> bool {
        !self.retx.is_empty() || self.next_seq < self.size
    }

    fn on_credit<S>(&mut self, c: &Packet, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        self.stats.credits_received += 1;
        self.credits_this_rtt += 1;
        if self.state == SendState::Requested {
            self.timers.cancel(T_REQ);
            self.req_backoff = 0;
            self.sender_rtt = Some(cx.now - self.request_sent_at);
            self.ecs_checked_at = cx.now;
            self.state = SendState::Sending;
        }
        if !self.has_data() {
            self.stats.credits_wasted += 1;
            // Nothing (left) to send: stop the credits. Either no stop went out yet (a
            // long-lived flow stopped before its first credit), or it got lost and credits
            // still arrive long after it.
            let rtt = self.sender_rtt.unwrap_or(self.p.rto);
            if self.state != SendState::Stopped || cx.now >= self.stop_sent_at + rtt * 2 {
                self.send_stop(cx);
            }
            return;
        }
        // One data packet per credit: retransmissions first.
        let (seq, len) = if let Some(r) = self.retx.first_mut() {
            let len = (r.1 - r.0).min(u64::from(TCP_MSS_BYTES));
            let seq = r.0;
            r.0 += len;
            if r.0 >= r.1 {
                self.retx.remove(0);
            }
            self.stats.retransmits += 1;
            (seq, len)
        } else {
            let len = (self.size - self.next_seq).min(u64::from(TCP_MSS_BYTES));
            let seq = self.next_seq;
            self.next_seq += len;
            (seq, len)
        };
        let len = len as u32;
        let pkt = cx.pool.alloc(Packet {
            seq,
            ack: c.seq,
            sent_at: cx.now,
            echo: c.sent_at,
            rate: Rate::MAX,
            flow: self.ep.flow,
            route: self.ep.fwd,
            dst: self.ep.dst,
            payload_bytes: len,
            wire_bytes: wire_bytes(len + TCP_IP_HEADER_BYTES),
            hop: 0,
            class: Class::Data,
            ecn: Ecn::NotEct,
            flags: FLAG_XDATA,
        });
        cx.send(self.ep.src, pkt);
        if !self.has_data() {
            self.send_stop(cx);
        } else if self.p.ecs && self.state == SendState::Sending {
            self.early_credit_stop(cx);
        }
    }

    /// ECS (ns2-xpass, April 2018): once per sender RTT, if the credits of the last RTT
    /// cover the packets left, stop now; the credits in flight will carry the rest.
    fn early_credit_stop<S>(&mut self, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        let Some(rtt) = self.sender_rtt else { return };
        if cx.now < self.ecs_checked_at + rtt {
            return;
        }
        self.ecs_checked_at = cx.now;
        let left = (self.size - self.next_seq).div_ceil(u64::from(TCP_MSS_BYTES));
        if self.credits_this_rtt >= left {
            self.send_stop(cx);
        }
        self.credits_this_rtt = 0;
    }

    fn send_stop<S>(&mut self, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        let pkt = self.control(cx, true, FLAG_STOP, self.size, 0);
        cx.send(self.ep.src, pkt);
        self.state = SendState::Stopped;
        self.stop_sent_at = cx.now;
        if self.has_data() {
            // Early stop: if the credits in flight fall short, ask again after 2 RTTs.
            let rtt = self.sender_rtt.unwrap_or(self.p.rto);
            self.arm(T_REQ, cx.now + rtt * 2, cx);
        } else {
            self.timers.cancel(T_REQ);
        }
    }

    fn on_nack<S>(&mut self, p: &Packet, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        let (from, to) = (p.seq, p.ack.min(self.next_seq));
        if from < to {
            insert_range(&mut self.retx, from, to);
        }
        if self.state == SendState::Stopped && self.has_data() {
            self.send_request(cx);
        }
    }

    // ---- receiver ----

    fn on_request<S>(&mut self, p: &Packet, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        if p.seq != u64::MAX {
            self.size = self.size.min(p.seq);
        }
        if self.crediting {
            return; // a duplicate
        }
        self.crediting = true;
        self.stop_seen = false;
        let mut initial = self.p.alpha * self.max_rate;
        if self.p.air && p.ack < 40 {
            // AIR (ns2-xpass, April 2018): short flows start proportionally slower.
            initial *= p.ack.max(1) as f64 / 40.0;
        }
        let mut law = self.p.law;
        law.max_rate = self.max_rate;
        self.fb = Feedback::new(law, initial);
        self.last_update = cx.now;
        self.period_total = 0;
        self.period_dropped = 0;
        // The first credit leaves at once; pacing follows.
        self.send_credit(cx);
    }

    fn send_credit<S>(&mut self, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        self.run_feedback(cx.now);
        self.credit_seq += 1;
        let [lo, hi] = self.p.credit_size;
        let size = if lo == hi {
            lo
        } else {
            self.rng.random_range(lo..=hi)
        };
        let pkt = cx.pool.alloc(Packet {
            seq: self.credit_seq,
            ack: 0,
            sent_at: cx.now,
            echo: Time::ZERO,
            rate: Rate::MAX,
            flow: self.ep.flow,
            route: self.ep.rev,
            dst: self.ep.src,
            payload_bytes: 0,
            wire_bytes: size,
            hop: 0,
            class: Class::Credit,
            ecn: Ecn::NotEct,
            flags: FLAG_CREDIT,
        });
        cx.send(self.ep.dst, pkt);
        self.stats.credits_sent += 1;
        // gap = average credit / rate · (1 + U[jitter])
        let avg = f64::from(lo + hi) / 2.0;
        let [jl, jh] = self.p.jitter;
        let u = if jl >= jh {
            jl
        } else {
            self.rng.random_range(jl..=jh)
        };
        let gap =
            Dur::from_secs_f64(avg / self.fb.rate().max(1.0) * (1.0 + u)).max(Dur::from_ps(1));
        self.arm(T_CREDIT, cx.now + gap, cx);
    }

    /// The feedback runs before each credit but acts at most once per RTT (and only once
    /// data has given an RTT and credit-loss samples), as in the reference code.
    fn run_feedback(&mut self, now: Time) {
        let Some(rtt) = self.rtt else { return };
        let elapsed = now.saturating_since(self.last_update).as_secs_f64();
        if elapsed < rtt || self.period_total == 0 {
            return;
        }
        let [lo, hi] = self.p.credit_size;
        self.fb.update(&Period {
            total: self.period_total,
            dropped: self.period_dropped,
            elapsed,
            rtt,
            credit_size: f64::from(lo + hi) / 2.0,
        });
        self.period_total = 0;
        self.period_dropped = 0;
        self.last_update = now;
    }

    fn on_data<S>(&mut self, p: &Packet, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        // Credit-loss accounting from the echoed credit sequence (§1.6.1 of the
        // reference notes): a gap is credits that produced no data.
        if p.ack >= self.c_recv_next {
            let d = p.ack - self.c_recv_next;
            self.period_total += d + 1;
            self.period_dropped += d;
            self.c_recv_next = p.ack + 1;
        } else {
            debug_assert!(
                false,
                "credit sequence went backwards: routes are not symmetric FIFO"
            );
        }
        // Receiver RTT: EWMA (0.8 old, 0.2 new) of credit departure to data arrival.
        let sample = cx.now.saturating_since(p.echo).as_secs_f64();
        self.rtt = Some(self.rtt.map_or(sample, |r| 0.8 * r + 0.2 * sample));
        self.last_data_at = cx.now;
        let (seq, end) = (p.seq, p.seq + u64::from(p.payload_bytes));
        if seq <= self.rcv_nxt {
            self.rcv_nxt = self.rcv_nxt.max(end);
            while let Some(&(s, e)) = self.ooo.first() {
                if s > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(e);
                self.ooo.remove(0);
            }
        } else {
            // A hole: report it at once.
            let had_hole = !self.ooo.is_empty();
            insert_range(&mut self.ooo, seq, end);
            if !had_hole {
                self.send_nack(cx);
            }
        }
        if self.rcv_nxt >= self.size && !self.completed {
            self.completed = true;
            self.timers.cancel(T_NACK);
            if self.stop_seen {
                self.stop_crediting();
            }
        }
    }

    /// NACK the first missing range and re-check after `rto`.
    fn send_nack<S>(&mut self, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        let to = self.ooo.first().map_or(self.size, |r| r.0);
        if self.rcv_nxt >= to {
            return;
        }
        let pkt = self.control(cx, false, FLAG_NACK, self.rcv_nxt, to);
        cx.send(self.ep.dst, pkt);
        self.stats.nacks += 1;
        // Re-check after the timeout, but never sooner than two RTTs (the retransmission
        // needs a credit round trip and a data trip), backing off exponentially while the
        // same hole persists: a flow with a small share of a crowded link gets few credits.
        let base = self
            .p
            .rto
            .max(Dur::from_secs_f64(2.0 * self.rtt.unwrap_or(0.0)));
        if self.rcv_nxt != self.nack_at {
            self.nack_at = self.rcv_nxt;
            self.nack_backoff = 0;
        }
        let wait = base.saturating_mul(1 << self.nack_backoff.min(6));
        self.nack_backoff += 1;
        self.arm(T_NACK, cx.now + wait, cx);
    }

    fn stop_crediting(&mut self) {
        self.crediting = false;
        self.timers.cancel(T_CREDIT);
    }

    fn on_stop<S>(&mut self, p: &Packet, cx: &mut FlowCx<'_, S>)
    where
        S: Schedule<NetEvent> + Schedule<FlowEvent>,
    {
        self.size = self.size.min(p.seq);
        self.stop_seen = true;
        self.stop_crediting();
        if self.rcv_nxt >= self.size {
            self.completed = true;
            self.timers.cancel(T_NACK);
        } else if self.timers.deadline(T_NACK).is_none() {
            // Data may still be in flight (early stop); if none arrives within rto,
            // whatever is missing is lost: NACK it.
            self.arm(T_NACK, cx.now + self.p.rto, cx);
        }
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
            T_CREDIT => {
                if self.crediting {
                    self.send_credit(cx);
                }
            }
            T_REQ => {
                // A lost request, or an early stop whose credits fell short.
                if self.has_data() && self.state != SendState::Sending {
                    self.send_request(cx);
                }
            }
            T_NACK => {
                if !self.completed {
                    if cx.now.saturating_since(self.last_data_at) >= self.p.rto
                        || !self.ooo.is_empty()
                    {
                        self.send_nack(cx);
                    } else {
                        self.arm(T_NACK, self.last_data_at + self.p.rto, cx);
                    }
                }
            }
            _ => {
                // Stop time of a long-lived flow: no new data from now on.
                if self.size == u64::MAX {
                    self.size = self.next_seq;
                    if self.state != SendState::Requested && !self.has_data() {
                        self.send_stop(cx);
                    }
                }
            }
        }
        (self.progress(), false)
    }
}
