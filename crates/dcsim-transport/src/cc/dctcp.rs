//! DCTCP (Alizadeh et al., "Data Center TCP", SIGCOMM 2010; RFC 8257).

use dcsim_engine::Time;
use serde::{Deserialize, Serialize};

use super::{AckSample, CcSetup, CongestionControl, Controller, RenoCore, WindowLimits};

/// DCTCP parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DctcpConfig {
    /// EWMA gain g of α (paper: 1/16 at 10 Gb/s; 0.01976 is the published 100 Gb/s setting).
    pub g: f64,
    /// Initial α. The ns-2 DCTCP patch starts at 0 (`dctcp_alpha_ 0.0`), RFC 8257 and Linux
    /// at 1. Unset: from the TCP profile (`simple` and `ns2` 0, the code the reference
    /// experiments ran on; `linux` 1).
    pub alpha_init: Option<f64>,
    /// Linux's arithmetic for the cut (`dctcp_ssthresh`): in whole segments, cwnd less
    /// ⌊cwnd·α/2⌋ with α in 1/1024ths, at least 2; and on a loss or a timeout half the
    /// window, not of the flight (`dctcp_react_to_loss`). Unset: the TCP profile's
    /// (`linux` on).
    pub linux_rules: Option<bool>,
}

impl Default for DctcpConfig {
    fn default() -> Self {
        Self {
            g: 1.0 / 16.0,
            alpha_init: None,
            linux_rules: None,
        }
    }
}

impl DctcpConfig {
    fn validate(&self) -> Result<(), String> {
        if !(self.g > 0.0 && self.g <= 1.0) {
            return Err(format!("g: must be in (0, 1], got {}", self.g));
        }
        if let Some(a) = self.alpha_init
            && !(0.0..=1.0).contains(&a)
        {
            return Err(format!("alpha_init: must be in [0, 1], got {a}"));
        }
        Ok(())
    }
}

/// DCTCP: Reno growth, and on congestion echo a cut proportional to the marked fraction.
#[derive(Clone, Debug)]
pub struct Dctcp {
    core: RenoCore,
    g: f64,
    /// DCTCP §3.1 eq. (1): α, the EWMA of the fraction of bytes marked per window.
    alpha: f64,
    window_acked: u64,
    window_marked: u64,
    /// Linux's cuts in whole segments, from the window (`linux_rules`).
    linux: bool,
}

impl Dctcp {
    /// A DCTCP controller.
    pub fn new(cfg: &DctcpConfig, limits: WindowLimits) -> Self {
        Self {
            core: RenoCore::new(limits).with_whole_acks(cfg.linux_rules == Some(true)),
            g: cfg.g,
            alpha: cfg.alpha_init.unwrap_or(0.0),
            window_acked: 0,
            window_marked: 0,
            linux: cfg.linux_rules == Some(true),
        }
    }
    /// The current α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

impl Controller for Dctcp {
    const NAME: &'static str = "dctcp";
    const ABOUT: &'static str =
        "DCTCP: alpha EWMA of the marked fraction per window, cwnd *= 1 - alpha/2";
    const USES_ECN: bool = true;
    type Config = DctcpConfig;
    fn build(cfg: &DctcpConfig, setup: CcSetup) -> Self {
        Self::new(cfg, setup.limits)
    }
    fn validate(cfg: &DctcpConfig) -> Result<(), String> {
        cfg.validate()
    }
}

impl CongestionControl for Dctcp {
    fn cwnd_bytes(&self) -> u64 {
        self.core.cwnd
    }
    fn ssthresh_bytes(&self) -> u64 {
        self.core.ssthresh
    }
    fn on_ack(&mut self, a: &AckSample) {
        self.window_acked += a.acked_bytes;
        self.window_marked += a.ce_bytes;
        if a.round_start {
            // DCTCP §3.1 eq. (1): α ← (1 − g)·α + g·F, F = marked / acked bytes of the window.
            let f = self.window_marked as f64 / self.window_acked.max(1) as f64;
            self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
            self.window_acked = 0;
            self.window_marked = 0;
        }
        self.core.grow(a);
    }
    /// DCTCP §3.1 eq. (2): cwnd ← cwnd·(1 − α/2), ssthresh likewise; once per window (the
    /// transport calls this at most once per window of data).
    fn on_ecn(&mut self, _now: Time, _in_flight: u64) {
        let w = if self.linux {
            linux_ssthresh(self.core.cwnd, self.alpha, self.core.limits().mss)
        } else {
            (self.core.cwnd as f64 * (1.0 - self.alpha / 2.0)) as u64
        };
        self.core.reduce_to(w);
    }
    /// A loss halves the window: Linux's `dctcp_react_to_loss` halves the window itself (in
    /// whole segments), RFC 5681 the flight.
    fn on_loss(&mut self, _now: Time, in_flight: u64) {
        if self.linux {
            self.core.reduce_to(self.core.linux_half());
        } else {
            self.core.halve(in_flight);
        }
    }
    fn on_rto(&mut self, _now: Time, in_flight: u64) {
        if self.linux {
            self.core.timeout_to(self.core.linux_half());
        } else {
            self.core.timeout(in_flight);
        }
    }
    /// `alpha`: the EWMA of the marked fraction.
    fn sample(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("alpha", self.alpha));
    }
}

/// Linux's `dctcp_ssthresh` (6.x): the window in whole segments less ⌊cwnd·α/2⌋, α kept
/// in 1/1024ths, at least 2 segments; in bytes.
fn linux_ssthresh(cwnd: u64, alpha: f64, mss: u64) -> u64 {
    let segs = cwnd / mss;
    let alpha = (alpha * 1024.0) as u64;
    (segs - ((segs * alpha) >> 11)).max(2) * mss
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

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

    fn driver(spec: CcSpec) -> CcDriver<Cc> {
        CcDriver::new(spec.build(limits())).with_limits(limits())
    }

    /// α follows eq. (1) exactly, once per window, and so converges to the marked fraction
    /// (here one segment in four, rounded by the window size of each round).
    #[test]
    fn dctcp_alpha_converges_to_marking_fraction() {
        let mut d = driver(CcSpec::Dctcp(DctcpConfig::default()));
        let out = d.rounds(200, Round::marked(1, 4));
        let mut reference = 0.0;
        for o in &out {
            reference = (1.0 - 1.0 / 16.0) * reference + o.marked_fraction / 16.0;
            let alpha = o.get("alpha");
            assert!(
                (alpha - reference).abs() < 1e-12,
                "alpha {alpha} vs eq. (1) {reference}"
            );
        }
        let (lo, hi) = out[150..].iter().fold((1.0f64, 0.0f64), |(l, h), o| {
            (l.min(o.marked_fraction), h.max(o.marked_fraction))
        });
        let alpha = out.last().unwrap().get("alpha");
        assert!(
            (0.25..=0.34).contains(&lo) && alpha >= lo - 0.01 && alpha <= hi + 0.01,
            "alpha {alpha}, F in [{lo}, {hi}]"
        );
    }

    /// Linux's cut in whole segments: five segments with α = 1 keep three (5 − ⌊5/2⌋), where
    /// the exact product keeps two and a half; a window's fraction of a segment is dropped
    /// first; two segments at least.
    #[test]
    fn linux_cut_is_in_whole_segments_rounded_up() {
        let mss = 1460;
        assert_eq!(linux_ssthresh(5 * mss, 1.0, mss), 3 * mss);
        assert_eq!(linux_ssthresh(5 * mss + 900, 1.0, mss), 3 * mss);
        assert_eq!(linux_ssthresh(10 * mss, 0.5, mss), 8 * mss);
        assert_eq!(linux_ssthresh(2 * mss, 1.0, mss), 2 * mss);
        assert_eq!(linux_ssthresh(100 * mss, 0.0, mss), 100 * mss);
        let mut cc = Dctcp::new(
            &DctcpConfig {
                alpha_init: Some(1.0),
                linux_rules: Some(true),
                ..DctcpConfig::default()
            },
            limits(),
        );
        cc.core.cwnd = 5 * 1460;
        cc.on_ecn(Time::ZERO, 5 * 1460);
        assert_eq!(cc.cwnd_bytes(), 3 * 1460);
        // A loss halves the window (`dctcp_react_to_loss`), whatever the flight.
        cc.core.cwnd = 41 * 1460;
        cc.on_loss(Time::ZERO, 2 * 1460);
        assert_eq!(cc.cwnd_bytes(), 20 * 1460);
        cc.on_rto(Time::ZERO, 2 * 1460);
        assert_eq!(cc.core.ssthresh_bytes(), 10 * 1460);
    }

    #[test]
    fn dctcp_all_marked_halves_cwnd() {
        let mut cc = Dctcp::new(
            &DctcpConfig {
                alpha_init: Some(1.0),
                ..DctcpConfig::default()
            },
            limits(),
        );
        cc.core.cwnd = 100 * 1460;
        cc.on_ecn(Time::ZERO, 100 * 1460);
        assert_eq!(cc.cwnd_bytes(), 50 * 1460);
    }

    /// Differential: with no marks, DCTCP's window evolves exactly like NewReno's, through
    /// slow start, a loss and congestion avoidance.
    #[test]
    fn dctcp_without_marks_behaves_like_reno() {
        let mut d = driver(CcSpec::Dctcp(DctcpConfig::default()));
        let mut r = driver(CcSpec::Reno(super::super::RenoConfig::default()));
        let windows = |x: &mut CcDriver<Cc>| {
            let mut w: Vec<u64> = x
                .rounds(3, Round::clean())
                .iter()
                .map(|o| o.cwnd_bytes)
                .collect();
            x.loss();
            w.extend(x.rounds(50, Round::clean()).iter().map(|o| o.cwnd_bytes));
            w
        };
        assert_eq!(windows(&mut d), windows(&mut r));
    }

    proptest! {
        /// Whatever the marking pattern, the window stays at or above the minimum (the
        /// driver checks it after every ACK), α stays in [0, 1], and nothing is NaN.
        #[test]
        fn dctcp_invariants_hold_under_random_marking(marked in 0u64..5, of in 1u64..5, n in 1usize..14) {
            let mut d = driver(CcSpec::Dctcp(DctcpConfig::default()));
            for o in d.rounds(n, Round::marked(marked.min(of), of)) {
                prop_assert!(o.cwnd_bytes >= 2 * 1460);
                prop_assert!((0.0..=1.0).contains(&o.get("alpha")));
            }
        }
    }
}
