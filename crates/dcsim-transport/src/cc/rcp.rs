//! The RCP sender (Dukkipati, McKeown, CCR 2006): it sends at the rate the switches on its
//! path offer, the smallest R stamped into its data and echoed by the receiver. The rate
//! computation is the switches' (`queue.kind = "rcp"`, `dcsim_net::qdisc::RcpRouter`).
//!
//! With the handshake (`handshake = true`, or the `ns2` and `linux` profiles) the SYN asks
//! every router on its path for its rate (the paper's "the SYN packet carries the desired
//! rate"), the SYN-ACK carries the smallest back, and the first data goes at that rate.
//!
//! # Deviations
//! - Without the handshake the first RTT is paced at `initial_rate` of the line, the
//!   routers' own initial rate by default; the echoed rate takes over with the first ACK.
//! - RCP has no window; on the shared transport the window is kept at `window_rtts` times
//!   the rate-delay product (at least the minimum window), so pacing, not the window,
//!   sets the sending rate. Losses are retransmitted by the transport and do not change
//!   the rate.

use dcsim_engine::{Dur, Rate, Time};
use dcsim_net::qdisc::PortFeatures;
use serde::{Deserialize, Serialize};

use super::{AckSample, CcSetup, CongestionControl, Controller, WindowLimits};
use crate::endpoint::Needs;

/// RCP sender parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RcpConfig {
    /// Rate before the first echo, as a fraction of the sender's line rate (0.05, the
    /// routers' default `init_rate`).
    pub initial_rate: f64,
    /// The window, in rate-delay products (2: pacing, not the window, is the limit).
    pub window_rtts: f64,
}

impl Default for RcpConfig {
    fn default() -> Self {
        Self {
            initial_rate: 0.05,
            window_rtts: 2.0,
        }
    }
}

/// An RCP sender: paced at the echoed rate.
pub struct Rcp {
    rate: Rate,
    limits: WindowLimits,
    window_rtts: f64,
    cwnd: u64,
    echoes: u64,
}

impl Rcp {
    /// An RCP sender on a link of `line` rate.
    pub fn new(cfg: &RcpConfig, limits: WindowLimits, line: Rate) -> Self {
        let rate = Rate::from_bps((line.bps() as f64 * cfg.initial_rate) as u64);
        Self {
            rate,
            limits,
            window_rtts: cfg.window_rtts,
            cwnd: limits.init_cwnd.max(limits.min_cwnd),
            echoes: 0,
        }
    }
}

impl Controller for Rcp {
    const NAME: &'static str = "rcp";
    const ABOUT: &'static str =
        "RCP sender: paced at the rate the switches stamp (needs rcp ports)";
    type Config = RcpConfig;
    fn build(cfg: &RcpConfig, setup: CcSetup) -> Self {
        Self::new(cfg, setup.limits, setup.line_rate)
    }
    fn validate(cfg: &RcpConfig) -> Result<(), String> {
        if !(cfg.initial_rate > 0.0 && cfg.initial_rate <= 1.0) {
            return Err(format!(
                "initial_rate: must be in (0, 1], got {}",
                cfg.initial_rate
            ));
        }
        if !(cfg.window_rtts >= 1.0 && cfg.window_rtts.is_finite()) {
            return Err(format!(
                "window_rtts: must be at least 1, got {}",
                cfg.window_rtts
            ));
        }
        Ok(())
    }
    fn needs(_cfg: &RcpConfig) -> Needs {
        Needs {
            switch_ports: Some((
                PortFeatures::RATE_STAMPING,
                "the rate an RCP sender uses is computed and stamped by the switches",
            )),
            ..Needs::default()
        }
    }
}

impl CongestionControl for Rcp {
    fn cwnd_bytes(&self) -> u64 {
        self.cwnd
    }
    fn pacing_rate(&self) -> Option<Rate> {
        Some(self.rate)
    }
    fn on_ack(&mut self, a: &AckSample) {
        if let Some(r) = a.rate_echo {
            self.rate = r.max(Rate::from_bps(1));
            self.echoes += 1;
        }
        let rtt = a.rtt.unwrap_or(a.min_rtt).max(Dur::from_ns(1));
        let bdp = self.rate.bps() as f64 / 8.0 * rtt.as_secs_f64();
        self.cwnd = ((bdp * self.window_rtts) as u64).max(self.limits.min_cwnd);
    }
    fn requests_rate(&self) -> bool {
        true
    }
    /// The SYN-ACK's rate, as the first ACK's would be: the first RTT goes at it.
    fn on_syn_ack(&mut self, rate_echo: Option<Rate>, rtt: Dur) {
        if let Some(r) = rate_echo {
            self.rate = r.max(Rate::from_bps(1));
            self.echoes += 1;
        }
        let bdp = self.rate.bps() as f64 / 8.0 * rtt.max(Dur::from_ns(1)).as_secs_f64();
        self.cwnd = ((bdp * self.window_rtts) as u64).max(self.limits.min_cwnd);
    }
    fn on_ecn(&mut self, _now: Time, _in_flight: u64) {}
    fn on_loss(&mut self, _now: Time, _in_flight: u64) {}
    fn on_rto(&mut self, _now: Time, _in_flight: u64) {}
    /// `rate_gbps`: the rate the sender paces at.
    fn sample(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("rate_gbps", self.rate.gbps_f64()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{CcDriver, Round};

    fn limits() -> WindowLimits {
        WindowLimits {
            mss: 1460,
            init_cwnd: 10 * 1460,
            min_cwnd: 2 * 1460,
        }
    }

    /// The sender starts at its initial rate, then paces at whatever rate is echoed, with
    /// a window of two rate-delay products.
    #[test]
    fn rcp_sender_follows_the_echoed_rate() {
        let mut d = CcDriver::new(Rcp::new(
            &RcpConfig::default(),
            limits(),
            Rate::from_gbps(10),
        ))
        .with_limits(limits());
        assert_eq!(d.cc.pacing_rate(), Some(Rate::from_mbps(500)));
        let out = d.round(Round::clean().with_rate(Rate::from_gbps(2)));
        assert_eq!(out.pacing_rate, Some(Rate::from_gbps(2)));
        // 2 Gb/s × 100 µs = 25 KB; twice that.
        assert_eq!(out.cwnd_bytes, 50_000);
        let out = d.round(Round::clean().with_rate(Rate::from_mbps(10)));
        assert_eq!(out.cwnd_bytes, 2 * 1460, "floored at the minimum window");
    }

    /// With the handshake the SYN-ACK's rate replaces the initial rate before any data.
    #[test]
    fn the_syn_acks_rate_sets_the_first_rtt() {
        let mut c = Rcp::new(&RcpConfig::default(), limits(), Rate::from_gbps(10));
        assert!(c.requests_rate());
        c.on_syn_ack(Some(Rate::from_gbps(4)), Dur::from_us(100));
        assert_eq!(c.pacing_rate(), Some(Rate::from_gbps(4)));
        assert_eq!(c.cwnd_bytes(), 100_000, "2 × 4 Gb/s × 100 µs");
        let mut c = Rcp::new(&RcpConfig::default(), limits(), Rate::from_gbps(10));
        c.on_syn_ack(None, Dur::from_us(100));
        assert_eq!(
            c.pacing_rate(),
            Some(Rate::from_mbps(500)),
            "no router: the initial rate"
        );
    }
}
