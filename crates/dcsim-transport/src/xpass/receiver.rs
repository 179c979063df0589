//! The ExpressPass receiver: paces credits at the rate its feedback law sets, accounts
//! credit loss from the credit sequence echoed by data, NACKs holes.

use dcsim_engine::{Dur, Rng, Time, TimerTable};
use dcsim_net::{Class, IpBits, Packet, RateStamp};
use rand::RngExt;

use super::{
    FLAG_CREDIT, FLAG_NACK, FLAG_REQUEST, FLAG_STOP, FLAG_XDATA, Feedback, Period, XpassParams,
    XpassStats, control,
};
use crate::endpoint::{EndpointCx, FlowInfo, Receiver, Sched};
use crate::ranges::{advance, insert_range};

const T_CREDIT: usize = 0;
const T_NACK: usize = 1;

/// The receiving end of an ExpressPass flow.
pub struct XpassReceiver {
    flow: FlowInfo,
    p: XpassParams,
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
    timers: TimerTable<2>,
    stats: XpassStats,
}

impl XpassReceiver {
    /// The receiver of `flow` with parameters `p`, a maximum credit rate of `max_rate`
    /// bytes/s and the flow's random stream.
    pub fn new(p: XpassParams, flow: &FlowInfo, max_rate: f64, rng: Rng) -> Self {
        Self {
            flow: *flow,
            p,
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

    /// Counters (credits and NACKs sent).
    pub fn stats(&self) -> XpassStats {
        self.stats
    }
    /// The current credit rate, bytes/s.
    pub fn credit_rate(&self) -> f64 {
        self.fb.rate()
    }
    /// The maximum credit rate, bytes/s.
    pub fn max_credit_rate(&self) -> f64 {
        self.max_rate
    }
    /// The aggressiveness w of the feedback law.
    pub fn w(&self) -> f64 {
        self.fb.w()
    }

    fn on_request<S: Sched, H>(&mut self, p: &Packet, cx: &mut EndpointCx<'_, S, H>) {
        if p.seq != u64::MAX {
            cx.shared.limit_bytes = cx.shared.limit_bytes.min(p.seq);
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
        self.last_update = cx.now();
        self.period_total = 0;
        self.period_dropped = 0;
        // The first credit leaves at once; pacing follows.
        self.send_credit(cx);
    }

    fn send_credit<S: Sched, H>(&mut self, cx: &mut EndpointCx<'_, S, H>) {
        let now = cx.now();
        self.run_feedback(now);
        self.credit_seq += 1;
        let [lo, hi] = self.p.credit_size;
        let size = if lo == hi {
            lo
        } else {
            self.rng.random_range(lo..=hi)
        };
        cx.send(Packet {
            seq: self.credit_seq,
            ack: 0,
            sent_at: now,
            echo: Time::ZERO,
            rate: RateStamp::NONE,
            queue_delay_ns: 0,
            flow: self.flow.flow,
            route: self.flow.rev,
            dst: self.flow.src,
            next: dcsim_net::PortId::NONE,
            payload_bytes: 0,
            wire_bytes: dcsim_net::bytes16(size),
            hop: 0,
            class: Class::Credit,
            ip: IpBits::NOT_ECT,
            flags: FLAG_CREDIT,
        });
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
        cx.arm_in(&mut self.timers, T_CREDIT, gap);
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

    fn on_data<S: Sched, H>(&mut self, p: &Packet, cx: &mut EndpointCx<'_, S, H>) {
        let now = cx.now();
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
        let sample = now.saturating_since(p.echo).as_secs_f64();
        self.rtt = Some(self.rtt.map_or(sample, |r| 0.8 * r + 0.2 * sample));
        self.last_data_at = now;
        let (seq, end) = (p.seq, p.seq + u64::from(p.payload_bytes));
        if seq <= self.rcv_nxt {
            self.rcv_nxt = self.rcv_nxt.max(end);
            advance(&mut self.rcv_nxt, &mut self.ooo);
        } else {
            // A hole: report it at once.
            let had_hole = !self.ooo.is_empty();
            insert_range(&mut self.ooo, seq, end);
            if !had_hole {
                self.send_nack(cx);
            }
        }
        if self.rcv_nxt >= cx.shared.limit_bytes && !self.completed {
            self.completed = true;
            self.timers.cancel(T_NACK);
            if self.stop_seen {
                self.stop_crediting();
            }
        }
    }

    /// NACK the first missing range and re-check after `rto`.
    fn send_nack<S: Sched, H>(&mut self, cx: &mut EndpointCx<'_, S, H>) {
        let to = self.ooo.first().map_or(cx.shared.limit_bytes, |r| r.0);
        if self.rcv_nxt >= to {
            return;
        }
        cx.send(control(
            &self.flow,
            false,
            cx.now(),
            FLAG_NACK,
            self.rcv_nxt,
            to,
        ));
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
        cx.arm_in(&mut self.timers, T_NACK, wait);
    }

    fn stop_crediting(&mut self) {
        self.crediting = false;
        self.timers.cancel(T_CREDIT);
    }

    fn on_stop<S: Sched, H>(&mut self, p: &Packet, cx: &mut EndpointCx<'_, S, H>) {
        cx.shared.limit_bytes = cx.shared.limit_bytes.min(p.seq);
        self.stop_seen = true;
        self.stop_crediting();
        if self.rcv_nxt >= cx.shared.limit_bytes {
            self.completed = true;
            self.timers.cancel(T_NACK);
        } else if self.timers.deadline(T_NACK).is_none() {
            // Data may still be in flight (early stop); if none arrives within rto,
            // whatever is missing is lost: NACK it.
            cx.arm_in(&mut self.timers, T_NACK, self.p.rto);
        }
    }
}

impl Receiver for XpassReceiver {
    type Host = ();

    fn on_packet<S: Sched>(&mut self, p: &Packet, cx: &mut EndpointCx<'_, S, ()>) {
        match p.flags {
            FLAG_XDATA => self.on_data(p, cx),
            FLAG_REQUEST => self.on_request(p, cx),
            FLAG_STOP => self.on_stop(p, cx),
            _ => debug_assert!(false, "ExpressPass receiver got packet flags {}", p.flags),
        }
    }

    fn on_timer<S: Sched>(&mut self, kind: usize, generation: u32, cx: &mut EndpointCx<'_, S, ()>) {
        match cx.due(&mut self.timers, kind, generation) {
            Some(T_CREDIT) if self.crediting => self.send_credit(cx),
            Some(T_NACK) if !self.completed => {
                if cx.now().saturating_since(self.last_data_at) >= self.p.rto
                    || !self.ooo.is_empty()
                {
                    self.send_nack(cx);
                } else {
                    let at = self.last_data_at + self.p.rto;
                    cx.arm(&mut self.timers, T_NACK, at);
                }
            }
            _ => {}
        }
    }

    fn delivered_bytes(&self) -> u64 {
        self.rcv_nxt
    }

    fn is_complete(&self) -> bool {
        self.completed
    }

    fn is_idle(&self) -> bool {
        !self.crediting
    }
}
