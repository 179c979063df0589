//! TCP NewReno window policy (RFC 5681, RFC 6582 recovery in the transport) with the
//! classic ECN reaction of RFC 3168.

use dcsim_engine::Time;
use serde::{Deserialize, Serialize};

use super::{AckSample, CcSetup, CongestionControl, Controller, WindowLimits};

/// NewReno parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RenoConfig {
    /// Linux's threshold (`tcp_reno_ssthresh`): half the congestion window in whole
    /// segments, at least 2, on a loss, an ECN echo or a timeout, where RFC 5681 halves
    /// the flight. Unset: the TCP profile's (`linux` on).
    pub linux_rules: Option<bool>,
}

/// Slow start and congestion avoidance in bytes; shared by Reno and DCTCP.
#[derive(Clone, Debug)]
pub struct RenoCore {
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes.
    pub ssthresh: u64,
    limits: WindowLimits,
    /// Bytes acknowledged in congestion avoidance since the window last grew.
    ca_acked: u64,
    /// Slow start counts every acknowledged byte, as Linux's `tcp_slow_start` does (the
    /// `linux_rules` of Reno, DCTCP and Pulser); otherwise RFC 3465's L = 2.
    whole_acks: bool,
}

impl RenoCore {
    /// Initial state: `init_cwnd`, unbounded `ssthresh`.
    pub fn new(limits: WindowLimits) -> Self {
        Self {
            cwnd: limits.init_cwnd.max(limits.min_cwnd),
            ssthresh: u64::MAX,
            limits,
            ca_acked: 0,
            whole_acks: false,
        }
    }

    /// Slow start as Linux's `tcp_slow_start`: the window grows by everything an ACK
    /// acknowledges, up to the threshold, and what is left over counts towards congestion
    /// avoidance. An ACK of a 64 KB super-packet (`transport.gso`) grows it by 45 segments
    /// where RFC 3465's limit allows 2.
    #[must_use]
    pub fn with_whole_acks(mut self, on: bool) -> Self {
        self.whole_acks = on;
        self
    }

    /// Window growth for `acked` new bytes (not during recovery, and only when the window
    /// was the limit; RFC 7661 §4.1).
    ///
    /// Slow start: `cwnd += min(acked, 2·MSS)` (appropriate byte counting, RFC 3465 with
    /// L = 2), or with [`RenoCore::with_whole_acks`] everything acknowledged up to the
    /// threshold, the rest counting as below. Congestion avoidance: one MSS per window of
    /// acknowledged bytes (RFC 5681 §3.1's byte-counting form of "one segment per RTT").
    #[inline]
    pub fn grow(&mut self, a: &AckSample) {
        if a.in_recovery || !a.may_grow(self.cwnd, self.cwnd < self.ssthresh) {
            return;
        }
        let mss = self.limits.mss;
        let mut acked = a.acked_bytes;
        if self.cwnd < self.ssthresh {
            self.ca_acked = 0;
            if !self.whole_acks {
                self.cwnd += acked.min(2 * mss);
                return;
            }
            let grown = self.cwnd.saturating_add(acked).min(self.ssthresh);
            acked -= grown - self.cwnd;
            self.cwnd = grown;
            if acked == 0 {
                return;
            }
        }
        self.ca_acked += acked;
        if self.ca_acked >= self.cwnd {
            self.ca_acked -= self.cwnd;
            self.cwnd += mss;
        }
    }

    /// Sets the window and threshold to `w` (floored at the minimum window).
    #[inline]
    pub fn reduce_to(&mut self, w: u64) {
        let w = w.max(self.limits.min_cwnd);
        self.ssthresh = w;
        self.cwnd = w;
        self.ca_acked = 0;
    }

    /// RFC 5681 eq. (4): `ssthresh = max(FlightSize / 2, 2·SMSS)`; the window follows.
    pub fn halve(&mut self, in_flight: u64) {
        self.reduce_to((in_flight / 2).max(2 * self.limits.mss));
    }

    /// Linux's `tcp_reno_ssthresh`: half the window in whole segments, at least 2.
    pub fn linux_half(&self) -> u64 {
        let mss = self.limits.mss;
        (self.cwnd / mss / 2).max(2) * mss
    }

    /// RFC 5681 §3.1 on timeout: `ssthresh = max(FlightSize / 2, 2·SMSS)`,
    /// `cwnd = 1 MSS` (the loss window), or the minimum window if that is larger.
    pub fn timeout(&mut self, in_flight: u64) {
        self.timeout_to((in_flight / 2).max(2 * self.limits.mss));
    }

    /// A timeout with threshold `ssthresh` (floored at the minimum window); the window
    /// falls to the loss window as in [`RenoCore::timeout`].
    pub fn timeout_to(&mut self, ssthresh: u64) {
        self.ssthresh = ssthresh.max(self.limits.min_cwnd);
        self.cwnd = self.limits.mss.max(self.limits.min_cwnd);
        self.ca_acked = 0;
    }

    /// Window limits.
    pub fn limits(&self) -> WindowLimits {
        self.limits
    }

    /// Slow-start threshold, bytes.
    pub fn ssthresh_bytes(&self) -> u64 {
        self.ssthresh
    }
}

/// TCP NewReno: halves on three duplicate ACKs and on an ECN echo (once per window).
#[derive(Clone, Debug)]
pub struct Reno {
    core: RenoCore,
    /// Linux's threshold from the window (`linux_rules`), not from the flight.
    linux: bool,
}

impl Reno {
    /// A NewReno controller (RFC 5681's threshold).
    pub fn new(limits: WindowLimits) -> Self {
        Self {
            core: RenoCore::new(limits),
            linux: false,
        }
    }

    /// Halves the window: Linux's half of it, or RFC 5681's half of the flight.
    fn halve(&mut self, in_flight: u64) {
        if self.linux {
            self.core.reduce_to(self.core.linux_half());
        } else {
            self.core.halve(in_flight);
        }
    }
}

impl Controller for Reno {
    const NAME: &'static str = "reno";
    const ABOUT: &'static str =
        "TCP NewReno: slow start, AIMD, fast retransmit/recovery; classic ECN halving";
    type Config = RenoConfig;
    fn build(cfg: &RenoConfig, setup: CcSetup) -> Self {
        let linux = cfg.linux_rules == Some(true);
        Self {
            core: RenoCore::new(setup.limits).with_whole_acks(linux),
            linux,
        }
    }
}

impl CongestionControl for Reno {
    fn cwnd_bytes(&self) -> u64 {
        self.core.cwnd
    }
    fn ssthresh_bytes(&self) -> u64 {
        self.core.ssthresh
    }
    fn on_ack(&mut self, a: &AckSample) {
        self.core.grow(a);
    }
    /// RFC 3168 §6.1.2: react to ECE as to a loss, without retransmitting.
    fn on_ecn(&mut self, _now: Time, in_flight: u64) {
        self.halve(in_flight);
    }
    fn on_loss(&mut self, _now: Time, in_flight: u64) {
        self.halve(in_flight);
    }
    fn on_rto(&mut self, _now: Time, in_flight: u64) {
        if self.linux {
            self.core.timeout_to(self.core.linux_half());
        } else {
            self.core.timeout(in_flight);
        }
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

    #[test]
    fn reno_slow_start_doubles_per_round_then_grows_one_mss() {
        let mut d = CcDriver::new(CcSpec::Reno(RenoConfig::default()).build(limits()))
            .with_limits(limits());
        let segments = |w: Vec<crate::testkit::RoundOut>| -> Vec<u64> {
            w.iter().map(|x| x.cwnd_bytes / 1460).collect()
        };
        assert_eq!(segments(d.rounds(3, Round::clean())), [20, 40, 80]);
        if let Cc::Reno(r) = &mut d.cc {
            r.core.ssthresh = 80 * 1460;
        }
        assert_eq!(segments(d.rounds(3, Round::clean())), [81, 82, 83]);
    }

    /// Not held by its window: slow start still grows it to twice the most that was out
    /// (Linux's `tcp_is_cwnd_limited`), congestion avoidance not at all.
    #[test]
    fn a_window_that_was_not_the_limit_grows_only_in_slow_start_to_twice_the_flight() {
        let mut r = Reno::new(limits());
        let ack = |max_out_segments: u64| AckSample {
            now: Time::ZERO,
            acked_bytes: 1460,
            ce_bytes: 0,
            in_flight_bytes: 0,
            rtt: None,
            min_rtt: dcsim_engine::Dur::ZERO,
            round_start: false,
            snd_una: 0,
            snd_nxt: 0,
            in_recovery: false,
            cwnd_limited: false,
            max_out_bytes: max_out_segments * 1460,
            queue_delay: None,
            rate_echo: None,
            data_arrival: None,
            mss: 1460,
            ein: false,
        };
        // Acknowledges `n` segments with `max_out` segments recorded; the window after.
        let feed = |r: &mut Reno, n: usize, max_out: u64| {
            for _ in 0..n {
                r.on_ack(&ack(max_out));
            }
            r.cwnd_bytes() / 1460
        };
        assert_eq!(
            feed(&mut r, 100, 0),
            10,
            "no record of the flight: no growth"
        );
        assert_eq!(feed(&mut r, 100, 30), 60, "slow start stops at twice 30");
        r.core.ssthresh = 60 * 1460;
        assert_eq!(
            feed(&mut r, 1000, 60),
            60,
            "congestion avoidance does not grow"
        );
    }

    /// An ACK of a 45-segment super-packet in slow start: Linux's `tcp_slow_start` grows
    /// the window by all 45 (`linux_rules`), RFC 3465's limit by 2; up to the threshold,
    /// the rest counting towards congestion avoidance.
    #[test]
    fn linux_slow_start_counts_every_acknowledged_segment() {
        let ack = AckSample {
            acked_bytes: 45 * 1460,
            cwnd_limited: true,
            mss: 1460,
            ..AckSample::default()
        };
        let build = |linux| Reno {
            core: RenoCore::new(limits()).with_whole_acks(linux),
            linux,
        };
        let (mut linux, mut rfc) = (build(true), build(false));
        linux.on_ack(&ack);
        rfc.on_ack(&ack);
        assert_eq!(linux.cwnd_bytes() / 1460, 55);
        assert_eq!(rfc.cwnd_bytes() / 1460, 12);
        // 50 segments to the threshold of 60: 5 of them fill it, 45 go to avoidance.
        let mut capped = build(true);
        capped.core.ssthresh = 60 * 1460;
        capped.core.cwnd = 55 * 1460;
        capped.on_ack(&ack);
        assert_eq!(capped.cwnd_bytes() / 1460, 60);
        assert_eq!(capped.core.ca_acked, 40 * 1460);
    }

    #[test]
    fn reno_loss_halves_and_timeout_resets_to_one_segment_floored_at_minimum() {
        let mut cc = Reno::new(limits());
        cc.on_loss(Time::ZERO, 40 * 1460);
        assert_eq!(cc.cwnd_bytes(), 20 * 1460);
        cc.on_rto(Time::ZERO, 20 * 1460);
        assert_eq!(
            cc.cwnd_bytes(),
            2 * 1460,
            "min_cwnd = 2 MSS floors the loss window"
        );
        assert_eq!(cc.core.ssthresh_bytes(), 10 * 1460);
    }

    /// A loss found right after a recovery, most of the window SACKed or marked lost: RFC
    /// 5681 halves the flight (here 3 segments, so the floor of 2), Linux the window
    /// (`tcp_reno_ssthresh`: 101 segments give 50), and likewise on a timeout.
    #[test]
    fn linux_rules_halve_the_window_not_the_flight() {
        let setup = || CcSetup {
            limits: limits(),
            line_rate: dcsim_engine::Rate::from_gbps(10),
            rng: dcsim_engine::RngTree::new(0).stream("cc", 0),
        };
        let build = |linux: bool| {
            let mut cc = Reno::build(
                &RenoConfig {
                    linux_rules: Some(linux),
                },
                setup(),
            );
            cc.core.cwnd = 101 * 1460;
            cc
        };
        let (mut rfc, mut linux) = (build(false), build(true));
        rfc.on_loss(Time::ZERO, 3 * 1460);
        linux.on_loss(Time::ZERO, 3 * 1460);
        assert_eq!(rfc.cwnd_bytes(), 2 * 1460);
        assert_eq!(linux.cwnd_bytes(), 50 * 1460);
        let (mut rfc, mut linux) = (build(false), build(true));
        rfc.on_rto(Time::ZERO, 3 * 1460);
        linux.on_rto(Time::ZERO, 3 * 1460);
        assert_eq!(rfc.core.ssthresh_bytes(), 2 * 1460);
        assert_eq!(linux.core.ssthresh_bytes(), 50 * 1460);
        assert_eq!(linux.cwnd_bytes(), 2 * 1460, "the loss window, floored");
    }
}
