//! CUBIC (RFC 9438; Ha, Rhee, Xu, "CUBIC: a new TCP-friendly high-speed TCP variant",
//! 2008), with the classic ECN reaction: an echo is treated as a loss, once per window.
//!
//! Slow start is Reno's (no HyStart). In congestion avoidance the window follows
//! W_cubic(t) = C·(t − K)³ + W_max, t the time since the current epoch began (the first
//! ACK after a reduction) and K = ∛((W_max − cwnd_epoch)/C), in segments and seconds: each
//! ACK moves cwnd by (target − cwnd)/cwnd segments toward target = W_cubic(t + RTT), the
//! target held within [cwnd, 1.5·cwnd]. Where Reno would have a larger window (W_est, grown by
//! α_cubic = 3(1 − β)/(1 + β) segments per window until it reaches W_max, then by one), the
//! window is W_est (the Reno-friendly region). A reduction sets ssthresh and cwnd to β·cwnd
//! (β = 0.7) and, with fast convergence, W_max to cwnd·(1 + β)/2 if the window had not
//! reached the previous W_max.

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
}

impl Default for CubicConfig {
    fn default() -> Self {
        Self {
            c: 0.4,
            beta: 0.7,
            fast_convergence: true,
            reno_friendly: true,
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

    fn on_ack(&mut self, a: &AckSample) {
        if let Some(r) = a.rtt {
            self.srtt = Some(match self.srtt {
                None => r,
                Some(s) => Dur::from_ps((s.as_ps() * 7 + r.as_ps()) / 8),
            });
        }
        if a.in_recovery || !a.cwnd_limited {
            return;
        }
        let acked = a.acked_bytes as f64 / self.limits.mss as f64;
        if self.cwnd < self.ssthresh {
            // Slow start as Reno (appropriate byte counting, L = 2).
            self.cwnd += acked.min(2.0);
            return;
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
        let rtt = self.srtt.unwrap_or(a.min_rtt).as_secs_f64();
        let t = a.now.saturating_since(start).as_secs_f64();
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
        self.w_max = self.cwnd;
        self.ssthresh = (flight * self.cfg.beta).max(self.floor()).max(2.0);
        self.cwnd = self.floor();
        self.epoch = None;
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
}
