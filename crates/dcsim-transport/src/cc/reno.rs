//! TCP NewReno window policy (RFC 5681, RFC 6582 recovery in the transport) with the
//! classic ECN reaction of RFC 3168.

use dcsim_engine::Time;

use dcsim_engine::spec::NoParams;

use super::{AckSample, CcSetup, CongestionControl, Controller, WindowLimits};

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
}

impl RenoCore {
    /// Initial state: `init_cwnd`, unbounded `ssthresh`.
    pub fn new(limits: WindowLimits) -> Self {
        Self {
            cwnd: limits.init_cwnd.max(limits.min_cwnd),
            ssthresh: u64::MAX,
            limits,
            ca_acked: 0,
        }
    }

    /// Window growth for `acked` new bytes (not during recovery, and only when the window
    /// was the limit; RFC 7661 §4.1).
    ///
    /// Slow start: `cwnd += min(acked, 2·MSS)` (appropriate byte counting, RFC 3465 with
    /// L = 2). Congestion avoidance: one MSS per window of acknowledged bytes (RFC 5681
    /// §3.1's byte-counting form of "one segment per RTT").
    #[inline]
    pub fn grow(&mut self, a: &AckSample) {
        if a.in_recovery || !a.cwnd_limited {
            return;
        }
        let mss = self.limits.mss;
        if self.cwnd < self.ssthresh {
            self.cwnd += a.acked_bytes.min(2 * mss);
            self.ca_acked = 0;
        } else {
            self.ca_acked += a.acked_bytes;
            if self.ca_acked >= self.cwnd {
                self.ca_acked -= self.cwnd;
                self.cwnd += mss;
            }
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

    /// RFC 5681 §3.1 on timeout: `ssthresh = max(FlightSize / 2, 2·SMSS)`,
    /// `cwnd = 1 MSS` (the loss window), or the minimum window if that is larger.
    pub fn timeout(&mut self, in_flight: u64) {
        self.ssthresh = (in_flight / 2)
            .max(2 * self.limits.mss)
            .max(self.limits.min_cwnd);
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
}

impl Reno {
    /// A NewReno controller.
    pub fn new(limits: WindowLimits) -> Self {
        Self {
            core: RenoCore::new(limits),
        }
    }
}

impl Controller for Reno {
    const NAME: &'static str = "reno";
    const ABOUT: &'static str =
        "TCP NewReno: slow start, AIMD, fast retransmit/recovery; classic ECN halving";
    type Config = NoParams;
    fn build(_cfg: &NoParams, setup: CcSetup) -> Self {
        Self::new(setup.limits)
    }
}

impl CongestionControl for Reno {
    fn cwnd_bytes(&self) -> u64 {
        self.core.cwnd
    }
    fn on_ack(&mut self, a: &AckSample) {
        self.core.grow(a);
    }
    /// RFC 3168 §6.1.2: react to ECE as to a loss, without retransmitting.
    fn on_ecn(&mut self, _now: Time, in_flight: u64) {
        self.core.halve(in_flight);
    }
    fn on_loss(&mut self, _now: Time, in_flight: u64) {
        self.core.halve(in_flight);
    }
    fn on_rto(&mut self, _now: Time, in_flight: u64) {
        self.core.timeout(in_flight);
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
        let mut d = CcDriver::new(CcSpec::Reno(NoParams {}).build(limits())).with_limits(limits());
        let segments = |w: Vec<crate::testkit::RoundOut>| -> Vec<u64> {
            w.iter().map(|x| x.cwnd_bytes / 1460).collect()
        };
        assert_eq!(segments(d.rounds(3, Round::clean())), [20, 40, 80]);
        if let Cc::Reno(r) = &mut d.cc {
            r.core.ssthresh = 80 * 1460;
        }
        assert_eq!(segments(d.rounds(3, Round::clean())), [81, 82, 83]);
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
}
