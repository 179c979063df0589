//! CUBIC (RFC 9438; Ha, Rhee, Xu, "CUBIC: a new TCP-friendly high-speed TCP variant",
//! 2008), with the classic ECN reaction: an echo is treated as a loss, once per window.
//!
//! Slow start is Reno's, with Linux's HyStart if asked (`hystart`, on in the `linux` TCP
//! profile; `tcp_cubic.c` of Linux 6.x): from a window of 16 segments, slow start ends when
//! a round's ACKs keep arriving close together for longer than half the minimum delay plus
//! a GSO allowance (the ACK train: the pipe is full), or when, after 8 samples of a round,
//! its smallest RTT exceeds the minimum by max(4 ms, min(RTT/8, 16 ms)) (delay increase).
//! In congestion avoidance the window follows
//! W_cubic(t) = C·(t − K)³ + W_max, t the time since the current epoch began (the first
//! ACK after a reduction) and K = ∛((W_max − cwnd_epoch)/C), in segments and seconds: each
//! ACK moves cwnd by (target − cwnd)/cwnd segments toward target = W_cubic(t + RTT), the
//! target held within [cwnd, 1.5·cwnd]. Where Reno would have a larger window (W_est, grown by
//! α_cubic = 3(1 − β)/(1 + β) segments per window until it reaches W_max, then by one), the
//! window is W_est (the Reno-friendly region). A reduction sets ssthresh and cwnd to β·cwnd
//! (β = 0.7) and, with fast convergence, W_max to cwnd·(1 + β)/2 if the window had not
//! reached the previous W_max.
//!
//! Linux's rules (`linux_rules`, on in the `linux` TCP profile; `bictcp_update` and
//! `tcp_friendliness` of `tcp_cubic.c`) differ from the RFC's in four ways: until the first
//! loss (and again after a timeout, which forgets W_max) the window grows by at least 5 %
//! per round trip ("the initial growth of cubic function may be too conservative"), so a
//! window that left slow start by HyStart keeps growing; the target is W_cubic one minimum
//! RTT ahead, not one smoothed RTT; the Reno-friendly estimate grows by α = 8/15 segment
//! per window (Linux's integer form of 3(1 − β)/(1 + β)) throughout, and the window
//! approaches it at the same per-ACK pace as the cubic target instead of jumping to it.

use dcsim_engine::{Dur, Time};
use serde::{Deserialize, Serialize};

use super::{AckSample, CcSetup, CongestionControl, Controller, WindowLimits};

/// CUBIC parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CubicConfig {
    /// C, segments per second³ (RFC 9438: 0.4).
    pub c: f64,
    /// β_cubic, the multiplicative decrease (RFC 9438: 0.7).
    pub beta: f64,
    /// Fast convergence (RFC 9438 §4.7: on).
    pub fast_convergence: bool,
    /// The Reno-friendly region (RFC 9438 §4.3: on).
    pub reno_friendly: bool,
    /// Linux's HyStart, which ends slow start before the queue overflows (default: the
    /// TCP profile's, on with `linux`).
    pub hystart: Option<bool>,
    /// Linux's `tcp_cubic.c` rules where they differ from RFC 9438 (the module's
    /// documentation; default: the TCP profile's, on with `linux`).
    pub linux_rules: Option<bool>,
}

impl Default for CubicConfig {
    fn default() -> Self {
        Self {
            c: 0.4,
            beta: 0.7,
            fast_convergence: true,
            reno_friendly: true,
            hystart: None,
            linux_rules: None,
        }
    }
}

/// CUBIC's state, windows in segments.
#[derive(Clone, Debug)]
pub struct Cubic {
    cfg: CubicConfig,
    limits: WindowLimits,
    /// Congestion window and threshold, segments.
    cwnd: f64,
    ssthresh: f64,
    /// W_max: the window before the last reduction, segments.
    w_max: f64,
    /// The current epoch: its start, K (seconds) and the Reno-friendly estimate.
    epoch: Option<(Time, f64)>,
    w_est: f64,
    cwnd_epoch: f64,
    srtt: Option<Dur>,
    /// Linux's rules, and whether a loss set W_max since the start or the last timeout
    /// (Linux's `last_max_cwnd != 0`).
    linux: bool,
    loss_seen: bool,
    /// HyStart's state, if on.
    hystart: Option<HyStart>,
}

/// Linux's HyStart (`tcp_cubic.c`): the parameters are the kernel's defaults.
#[derive(Clone, Copy, Debug, Default)]
struct HyStart {
    /// Slow start ended by HyStart (until a timeout).
    found: bool,
    /// The current round ends with the first ACK beyond this byte (Linux's `end_seq`:
    /// `snd_nxt` when the round began); `None`: the next ACK begins a round.
    end_seq: Option<u64>,
    /// The current round: its start and the last ACK of its train.
    round_start: Time,
    last_ack: Time,
    /// The smallest RTT of the round's samples so far, and how many.
    curr_rtt: Option<Dur>,
    samples: u32,
    /// The smallest RTT seen.
    delay_min: Option<Dur>,
}

/// `hystart_low_window`: HyStart acts from this window, segments.
const HYSTART_LOW_WINDOW: f64 = 16.0;
/// `hystart_ack_delta_us`: ACKs at most this far apart form a train.
const HYSTART_ACK_DELTA: Dur = Dur::from_ms(2);
/// `HYSTART_MIN_SAMPLES`: RTT samples per round before the delay test.
const HYSTART_MIN_SAMPLES: u32 = 8;
/// `GSO_LEGACY_MAX_SIZE`: the burst a host may send at once, for the train's allowance.
const GSO_MAX_BYTES: f64 = 65_536.0;

impl HyStart {
    /// A new round at `now` (Linux's `bictcp_hystart_reset`).
    fn reset(&mut self, now: Time) {
        self.round_start = now;
        self.last_ack = now;
        self.curr_rtt = None;
        self.samples = 0;
    }

    /// One ACK in slow start (Linux's `hystart_update`), with this ACK's RTT `delay` and a
    /// pacing rate of `rate` bytes/s; whether slow start should end.
    fn update(&mut self, now: Time, delay: Dur, rate: f64) -> bool {
        let delay_min = self.delay_min.unwrap_or(delay);
        // The ACK train: the pipe is full once a round's closely spaced ACKs last longer
        // than half of the minimum delay plus the time to send four GSO bursts (at most
        // 1 ms; halved as without pacing).
        if now.saturating_since(self.last_ack) <= HYSTART_ACK_DELTA {
            self.last_ack = now;
            let ack_delay = if rate > 0.0 {
                Dur::from_ps(((4.0 * GSO_MAX_BYTES / rate) * 1e12) as u64).min(Dur::from_ms(1))
            } else {
                Dur::ZERO
            };
            let threshold = (delay_min + ack_delay) / 2;
            if now.saturating_since(self.round_start) > threshold {
                self.found = true;
            }
        }
        // Delay increase: the round's smallest RTT, after enough samples, above the
        // minimum by an eighth of it, clamped to [4 ms, 16 ms].
        self.curr_rtt = Some(self.curr_rtt.map_or(delay, |c| c.min(delay)));
        if self.samples < HYSTART_MIN_SAMPLES {
            self.samples += 1;
        } else {
            let eta = (delay_min / 8).clamp(Dur::from_ms(4), Dur::from_ms(16));
            if self.curr_rtt.is_some_and(|c| c > delay_min + eta) {
                self.found = true;
            }
        }
        self.found
    }
}

impl Cubic {
    /// A CUBIC controller.
    pub fn new(cfg: &CubicConfig, limits: WindowLimits) -> Self {
        let mss = limits.mss as f64;
        Self {
            cfg: cfg.clone(),
            limits,
            cwnd: limits.init_cwnd.max(limits.min_cwnd) as f64 / mss,
            ssthresh: f64::INFINITY,
            w_max: 0.0,
            epoch: None,
            w_est: 0.0,
            cwnd_epoch: 0.0,
            srtt: None,
            linux: cfg.linux_rules == Some(true),
            loss_seen: false,
            // The first round begins with the first ACK.
            hystart: (cfg.hystart == Some(true)).then(HyStart::default),
        }
    }

    fn floor(&self) -> f64 {
        (self.limits.min_cwnd as f64 / self.limits.mss as f64).max(1.0)
    }

    /// W_cubic(t), segments, for `t` seconds into the epoch with constant `k`.
    fn w_cubic(&self, t: f64, k: f64) -> f64 {
        self.cfg.c * (t - k).powi(3) + self.w_max
    }

    /// RFC 9438 §4.6: multiplicative decrease (with fast convergence, §4.7).
    fn reduce(&mut self) {
        let beta = self.cfg.beta;
        self.w_max = if self.cfg.fast_convergence && self.cwnd < self.w_max {
            self.cwnd * (1.0 + beta) / 2.0
        } else {
            self.cwnd
        };
        self.ssthresh = (self.cwnd * beta).max(self.floor());
        self.cwnd = self.ssthresh;
        self.epoch = None;
        self.loss_seen = true;
    }

    /// Linux's `beta_scale` (`tcp_cubic.c`): the Reno-friendly estimate grows by one
    /// segment per `cwnd · beta_scale / 8` segments acknowledged (15 for β = 0.7).
    fn linux_beta_scale(&self) -> f64 {
        let b = (self.cfg.beta * 1024.0).round();
        (8.0 * (1024.0 + b) / 3.0 / (1024.0 - b)).floor()
    }

    /// Congestion avoidance by Linux's `bictcp_update` (the window per ACK grows by
    /// 1/cnt segment per segment acknowledged), `t` seconds into the epoch with constant `k`.
    fn linux_avoidance(&mut self, t: f64, k: f64, acked: f64, min_rtt: Dur) {
        let cwnd = self.cwnd;
        let target = self.w_cubic(t + min_rtt.as_secs_f64(), k);
        // 1/cnt: toward the target, or 1/(100·cwnd) above it.
        let mut inc = if target > cwnd {
            (target - cwnd) / cwnd
        } else {
            0.01 / cwnd
        };
        if !self.loss_seen {
            inc = inc.max(0.05); // cnt at most 20: 5 % per round trip
        }
        if self.cfg.reno_friendly {
            self.w_est += acked * 8.0 / (self.linux_beta_scale() * cwnd);
            if self.w_est > cwnd {
                inc = inc.max((self.w_est - cwnd) / cwnd);
            }
        }
        self.cwnd += inc.min(0.5) * acked; // cnt at least 2
    }

    /// W_max, segments (for tests and the time series).
    pub fn w_max(&self) -> f64 {
        self.w_max
    }
}

impl Controller for Cubic {
    const NAME: &'static str = "cubic";
    const ABOUT: &'static str =
        "TCP CUBIC (RFC 9438): cubic window growth, beta 0.7, Reno-friendly region, ECN as loss";
    type Config = CubicConfig;
    fn build(cfg: &CubicConfig, setup: CcSetup) -> Self {
        Self::new(cfg, setup.limits)
    }
    fn validate(cfg: &CubicConfig) -> Result<(), String> {
        if !(cfg.c.is_finite() && cfg.c > 0.0) {
            return Err(format!("c: must be positive, got {}", cfg.c));
        }
        if !(cfg.beta > 0.0 && cfg.beta < 1.0) {
            return Err(format!("beta: must be in (0, 1), got {}", cfg.beta));
        }
        Ok(())
    }
}

impl CongestionControl for Cubic {
    fn cwnd_bytes(&self) -> u64 {
        (self.cwnd * self.limits.mss as f64) as u64
    }
    fn ssthresh_bytes(&self) -> u64 {
        if self.ssthresh.is_finite() {
            (self.ssthresh * self.limits.mss as f64) as u64
        } else {
            u64::MAX
        }
    }

    fn on_ack(&mut self, a: &AckSample) {
        if let Some(r) = a.rtt {
            self.srtt = Some(match self.srtt {
                None => r,
                Some(s) => Dur::from_ps((s.as_ps() * 7 + r.as_ps()) / 8),
            });
        }
        if let (Some(h), Some(delay)) = (&mut self.hystart, a.rtt) {
            h.delay_min = Some(h.delay_min.map_or(delay, |d| d.min(delay)));
            // Linux starts a round on the first ACK that moves `snd_una` beyond the byte
            // that was next to send when the last round began (`after`, not at: an ACK of
            // exactly that byte still belongs to the round). With super-packets each ACK
            // acknowledges one, and a round then spans two ACKs, enough for a train.
            if h.end_seq.is_none_or(|e| a.snd_una > e) {
                h.reset(a.now);
                h.end_seq = Some(a.snd_nxt);
            }
            if !h.found && self.cwnd < self.ssthresh && self.cwnd >= HYSTART_LOW_WINDOW {
                // Linux's pacing rate in slow start: twice the window per smoothed RTT.
                let srtt = self.srtt.unwrap_or(delay).as_secs_f64();
                let rate = if srtt > 0.0 {
                    2.0 * self.cwnd * self.limits.mss as f64 / srtt
                } else {
                    0.0
                };
                if h.update(a.now, delay, rate) {
                    self.ssthresh = self.cwnd;
                }
            }
        }
        let cwnd_bytes = (self.cwnd * self.limits.mss as f64) as u64;
        if a.in_recovery || !a.may_grow(cwnd_bytes, self.cwnd < self.ssthresh) {
            return;
        }
        let mut acked = a.acked_bytes as f64 / self.limits.mss as f64;
        if self.cwnd < self.ssthresh {
            if !self.linux {
                // Slow start as Reno (appropriate byte counting, L = 2).
                self.cwnd += acked.min(2.0);
                return;
            }
            // Linux's `tcp_slow_start`: everything acknowledged, up to the threshold; the
            // rest goes to congestion avoidance (an ACK of a whole super-packet with `gso`
            // grows the window by its 45 segments).
            let grown = (self.cwnd + acked).min(self.ssthresh);
            acked -= grown - self.cwnd;
            self.cwnd = grown;
            if acked <= 0.0 {
                return;
            }
        }
        let (start, k) = *self.epoch.get_or_insert_with(|| {
            // §4.2: a new epoch at the first ACK in congestion avoidance.
            self.cwnd_epoch = self.cwnd;
            self.w_est = self.cwnd;
            if self.w_max < self.cwnd {
                self.w_max = self.cwnd;
            }
            (a.now, ((self.w_max - self.cwnd) / self.cfg.c).cbrt())
        });
        let t = a.now.saturating_since(start).as_secs_f64();
        if self.linux {
            self.linux_avoidance(t, k, acked, a.min_rtt);
            return;
        }
        let rtt = self.srtt.unwrap_or(a.min_rtt).as_secs_f64();
        let target = self.w_cubic(t + rtt, k).clamp(self.cwnd, 1.5 * self.cwnd);
        let mut cwnd = self.cwnd + (target - self.cwnd) / self.cwnd * acked;
        if self.cfg.reno_friendly {
            // §4.3: W_est grows as Reno with the same average window would.
            let beta = self.cfg.beta;
            let alpha = if self.w_est >= self.w_max {
                1.0
            } else {
                3.0 * (1.0 - beta) / (1.0 + beta)
            };
            self.w_est += alpha * acked / self.cwnd;
            if self.w_cubic(t, k) < self.w_est {
                cwnd = cwnd.max(self.w_est);
            }
        }
        self.cwnd = cwnd;
    }

    /// RFC 3168 §6.1.2 and RFC 9438 §4.6: an ECN echo reduces as a loss does.
    fn on_ecn(&mut self, _now: Time, _in_flight: u64) {
        self.reduce();
    }
    fn on_loss(&mut self, _now: Time, _in_flight: u64) {
        self.reduce();
    }
    /// RFC 9438 §4.8: as Reno on a timeout (one segment, or the floor), but the threshold
    /// from β_cubic; the epoch restarts.
    fn on_rto(&mut self, _now: Time, in_flight: u64) {
        let flight = in_flight as f64 / self.limits.mss as f64;
        // Linux's `bictcp_reset` on entering Loss forgets W_max.
        self.w_max = if self.linux { 0.0 } else { self.cwnd };
        self.loss_seen = false;
        // Linux's `cubictcp_recalc_ssthresh` takes β of the window, the RFC of the flight.
        let base = if self.linux { self.cwnd } else { flight };
        self.ssthresh = (base * self.cfg.beta).max(self.floor()).max(2.0);
        self.cwnd = self.floor();
        self.epoch = None;
        // Linux's `cubictcp_state` on entering Loss: HyStart may end the next slow start.
        if let Some(h) = &mut self.hystart {
            *h = HyStart {
                delay_min: h.delay_min,
                ..HyStart::default()
            };
        }
    }
    /// `w_max`: the window before the last reduction, segments.
    fn sample(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("w_max", self.w_max));
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Cc, CcSpec};
    use super::*;
    use crate::testkit::{CcDriver, Round};

    fn limits() -> WindowLimits {
        WindowLimits {
            mss: 1460,
            init_cwnd: 10 * 1460,
            min_cwnd: 2 * 1460,
        }
    }

    fn driver(cfg: CubicConfig) -> CcDriver<Cc> {
        CcDriver::new(CcSpec::Cubic(cfg).build(limits())).with_limits(limits())
    }

    fn segments(d: &CcDriver<Cc>) -> f64 {
        d.cc.cwnd_bytes() as f64 / 1460.0
    }

    /// An ACK of a 45-segment super-packet in slow start grows the window by 45 segments
    /// with Linux's rules (`tcp_slow_start`), by 2 with RFC 3465's limit.
    #[test]
    fn linux_slow_start_counts_every_acknowledged_segment() {
        let ack = AckSample {
            acked_bytes: 45 * 1460,
            cwnd_limited: true,
            mss: 1460,
            ..AckSample::default()
        };
        let grown = |linux| {
            let mut cc = CcSpec::Cubic(CubicConfig {
                linux_rules: Some(linux),
                hystart: Some(false),
                ..CubicConfig::default()
            })
            .build(limits());
            cc.on_ack(&ack);
            cc.cwnd_bytes() / 1460
        };
        assert_eq!((grown(true), grown(false)), (55, 12));
    }

    /// HyStart's ACK train: once the window is 16 segments, a round whose closely spaced
    /// ACKs (at most 2 ms apart) last longer than half the minimum delay (plus a GSO
    /// allowance) has filled the pipe, and slow start ends there. Without HyStart the
    /// window doubles each round.
    #[test]
    fn hystart_ends_slow_start_when_a_rounds_acks_fill_the_round_trip() {
        let r = Round::clean().with_rtt(Dur::from_ms(10));
        let mut on = driver(CubicConfig {
            hystart: Some(true),
            ..CubicConfig::default()
        });
        let mut off = driver(CubicConfig::default());
        on.rounds(4, r);
        off.rounds(4, r);
        assert!((segments(&off) - 160.0).abs() < 1e-9, "10, 20, 40, 80, 160");
        assert!(segments(&on) < 40.0, "{}", segments(&on));
    }

    /// HyStart's round ends with the first ACK *beyond* the byte that was next to send
    /// when it began (Linux's `after(snd_una, end_seq)`). A sender of super-packets with
    /// one in flight beyond the one acknowledged gets ACKs that land exactly on that byte:
    /// each round then spans two ACKs 1 ms apart, a train longer than half the minimum
    /// delay plus the GSO allowance, and slow start ends once the window reaches 16
    /// segments. Had each such ACK begun a round, no round would have had a train.
    #[test]
    fn hystart_rounds_end_after_the_byte_not_at_it() {
        let mut cc = CcSpec::Cubic(CubicConfig {
            hystart: Some(true),
            linux_rules: Some(true),
            ..CubicConfig::default()
        })
        .build(limits());
        let seg = 1460;
        let mut now = Time::ZERO;
        // The ends of the super-packets in flight: the initial window as two halves.
        let mut flight = std::collections::VecDeque::from([5 * seg, 10 * seg]);
        let mut cwnd = Vec::new();
        let mut prev = 0;
        for _ in 0..12 {
            // Each ACK covers the oldest super-packet; the next one is still out.
            let una = flight.pop_front().expect("in flight");
            let nxt = *flight.back().expect("one more out");
            now += Dur::from_ms(1);
            cc.on_ack(&AckSample {
                now,
                acked_bytes: una - prev,
                // The first super-packet met an empty path; later ones queue behind one.
                rtt: Some(Dur::from_us(if prev == 0 { 160 } else { 1_200 })),
                min_rtt: Dur::from_us(160),
                snd_una: una,
                snd_nxt: nxt,
                cwnd_limited: true,
                mss: seg,
                ..AckSample::default()
            });
            prev = una;
            // Half the window goes as one super-packet.
            flight.push_back(nxt + (cc.cwnd_bytes() / 2 / seg).max(1) * seg);
            cwnd.push(cc.cwnd_bytes() / seg);
        }
        let last = *cwnd.last().expect("ACKs");
        assert!(
            (16..40).contains(&last),
            "slow start ends soon after 16 segments: {cwnd:?}"
        );
    }

    /// HyStart's delay increase: with ACKs too far apart for a train (100 ms rounds), slow
    /// start ends once a round's smallest RTT, after 8 samples, exceeds the minimum by
    /// min(RTT/8, 16 ms) (12.5 ms here).
    #[test]
    fn hystart_ends_slow_start_when_the_rtt_rises() {
        let base = Round::clean().with_rtt(Dur::from_ms(100));
        let cfg = CubicConfig {
            hystart: Some(true),
            ..CubicConfig::default()
        };
        let mut rising = driver(cfg.clone());
        rising.rounds(2, base);
        rising.round(Round::clean().with_rtt(Dur::from_ms(120)));
        let mut flat = driver(cfg);
        flat.rounds(3, base);
        assert!(
            (segments(&flat) - 80.0).abs() < 1e-9,
            "no train, no rise: still slow start"
        );
        assert!(segments(&rising) < 80.0, "{}", segments(&rising));
    }

    /// After a loss at W_max = 100 segments the window is cut to 70, then follows the cubic:
    /// concave up to W_max, which it reaches K = ∛(30/0.4) = 4.22 s later (RTT 100 ms so
    /// that the cubic, not the Reno-friendly region, sets the window), flat around it,
    /// convex beyond.
    #[test]
    fn the_window_follows_the_cubic_through_w_max() {
        let mut d = driver(CubicConfig::default());
        let rtt = Dur::from_ms(100);
        while segments(&d) < 100.0 {
            d.round(Round::clean().with_rtt(rtt));
        }
        if let Cc::Cubic(c) = &mut d.cc {
            c.cwnd = 100.0;
        }
        d.loss();
        assert!((segments(&d) - 70.0).abs() < 0.01);
        let k = (30.0f64 / 0.4).cbrt();
        let mut at = Vec::new();
        for _ in 0..80 {
            let t0 = d.now;
            d.round(Round::clean().with_rtt(rtt));
            at.push(((d.now - t0).as_secs_f64(), segments(&d)));
        }
        // Time since the epoch began, and the window then: compare with W_cubic(t + RTT).
        let mut t = 0.0;
        for &(dt, w) in &at {
            t += dt;
            let want = (0.4 * (t - k).powi(3) + 100.0).max(70.0);
            assert!(
                (w - want).abs() <= 0.05 * want + 1.0,
                "t {t:.2}: {w:.1} vs {want:.1}"
            );
        }
        let near = at
            .iter()
            .filter(|&&(_, w)| (95.0..=105.0).contains(&w))
            .count();
        assert!(near >= 10, "the plateau around W_max lasts ({near} rounds)");
    }

    /// With a short RTT the cubic grows slower than Reno would, and the window follows the
    /// Reno-friendly estimate: α_cubic = 3·0.3/1.7 ≈ 0.53 segments per RTT below W_max.
    #[test]
    fn at_short_rtts_the_window_is_reno_friendly() {
        let mut d = driver(CubicConfig::default());
        let rtt = Dur::from_us(100);
        d.rounds(3, Round::clean().with_rtt(rtt));
        d.loss();
        let w0 = segments(&d);
        let out = d.rounds(20, Round::clean().with_rtt(rtt));
        let w = out.last().unwrap().cwnd_bytes as f64 / 1460.0;
        let per_rtt = (w - w0) / 20.0;
        assert!(
            (0.45..=0.6).contains(&per_rtt),
            "{per_rtt} segments per RTT"
        );
        let mut d = driver(CubicConfig {
            reno_friendly: false,
            ..CubicConfig::default()
        });
        d.rounds(3, Round::clean().with_rtt(rtt));
        d.loss();
        let out = d.rounds(20, Round::clean().with_rtt(rtt));
        let cubic_only = out.last().unwrap().cwnd_bytes as f64 / 1460.0 - w0;
        assert!(
            cubic_only < 0.1 * (w - w0),
            "pure cubic grew {cubic_only} segments"
        );
    }

    /// Fast convergence: a second loss below the previous W_max lowers W_max further, to
    /// cwnd·(1 + β)/2; an ECN echo reduces as a loss does; a timeout leaves the floor.
    #[test]
    fn fast_convergence_ecn_and_timeout() {
        let mut d = driver(CubicConfig::default());
        d.rounds(3, Round::clean());
        d.loss(); // 80 segments: W_max 80, cwnd 56
        let Cc::Cubic(c) = &d.cc else { unreachable!() };
        assert!((c.w_max() - 80.0).abs() < 0.01);
        d.loss(); // 56 < 80: W_max = 56·1.7/2 = 47.6, cwnd 39.2
        let Cc::Cubic(c) = &d.cc else { unreachable!() };
        assert!((c.w_max() - 47.6).abs() < 0.01, "{}", c.w_max());
        assert!((segments(&d) - 39.2).abs() < 0.01);
        d.cc.on_ecn(d.now, d.cc.cwnd_bytes());
        assert!((segments(&d) - 27.44).abs() < 0.01);
        d.timeout();
        assert_eq!(d.cc.cwnd_bytes(), 2 * 1460);
    }

    /// Linux's rules: a window that left slow start by HyStart, with no loss yet, still
    /// grows by 5 % per round trip (the cubic curve alone, from a W_max equal to the
    /// window, would add about C·t³, nothing in the first rounds; RFC 9438's Reno-friendly
    /// region adds a segment per round); after a loss it does not.
    #[test]
    fn linux_rules_grow_five_percent_per_round_until_the_first_loss() {
        let r = Round::clean().with_rtt(Dur::from_ms(10));
        let cfg = |linux| CubicConfig {
            hystart: Some(true),
            linux_rules: Some(linux),
            ..CubicConfig::default()
        };
        let (mut linux, mut rfc) = (driver(cfg(true)), driver(cfg(false)));
        linux.rounds(4, r);
        rfc.rounds(4, r);
        let (l0, r0) = (segments(&linux), segments(&rfc));
        assert!(
            l0 < 40.0 && r0 < 40.0,
            "{l0} {r0}: HyStart ended both slow starts"
        );
        linux.rounds(10, r);
        rfc.rounds(10, r);
        let grown = segments(&linux) / l0;
        assert!(grown > 1.05f64.powi(10) * 0.97, "{grown}");
        // RFC 9438: Reno-friendly, one segment per round (34 to 44).
        assert!(segments(&rfc) / r0 < 1.35, "{}", segments(&rfc) / r0);
        // After a loss W_max is set: the 5 % floor is gone.
        linux.loss();
        let cut = segments(&linux);
        linux.rounds(3, r);
        assert!(segments(&linux) / cut < 1.05, "{}", segments(&linux) / cut);
    }
}
