//! Pulser's sender (Almasi, Rezaei, Chaudhry, Vamanan, "Pulser: Fast Congestion Response
//! using Explicit Incast Notifications for Datacenter Networks"): DCTCP plus a reaction to
//! the switches' Explicit Incast Notification (EIN, `dcsim_net::qdisc::EinPort`), echoed
//! by the receiver.
//!
//! On an ACK that echoes EIN the sender drops its window at once to a small safe window,
//! keeping the window it had; it stays there while notifications keep coming, and when a
//! whole window of ACKs has arrived without one it restores the kept window at once (no slow
//! ramp) and goes on as DCTCP. DCTCP's α keeps following the ECN marks throughout.

use dcsim_engine::Time;
use dcsim_net::qdisc::PortFeatures;
use serde::{Deserialize, Serialize};

use super::{AckSample, CcSetup, CongestionControl, Controller, Dctcp, DctcpConfig};
use crate::endpoint::Needs;

/// Pulser parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PulserConfig {
    /// DCTCP's EWMA gain g (1/16).
    pub g: f64,
    /// DCTCP's initial α; unset, from the TCP profile (as DCTCP's).
    pub alpha_init: Option<f64>,
    /// DCTCP's cut by Linux's arithmetic; unset, from the TCP profile (as DCTCP's).
    pub linux_rules: Option<bool>,
    /// cwnd_safe: the window during an incast, in segments (Pulser: 4).
    pub safe_cwnd_pkts: u32,
}

impl Default for PulserConfig {
    fn default() -> Self {
        Self {
            g: 1.0 / 16.0,
            alpha_init: None,
            linux_rules: None,
            safe_cwnd_pkts: 4,
        }
    }
}

impl PulserConfig {
    /// The DCTCP part.
    pub fn dctcp(&self) -> DctcpConfig {
        DctcpConfig {
            g: self.g,
            alpha_init: self.alpha_init,
            linux_rules: self.linux_rules,
        }
    }
}

/// Pulser: DCTCP, and the safe window while the network signals an incast.
#[derive(Clone, Debug)]
pub struct Pulser {
    dctcp: Dctcp,
    safe: u64,
    /// During an incast: bytes acknowledged without EIN since the last notification. The
    /// window kept for afterwards is DCTCP's, frozen meanwhile.
    incast: Option<u64>,
    episodes: u64,
}

impl Pulser {
    /// Whether the sender is holding its safe window now.
    pub fn in_incast(&self) -> bool {
        self.incast.is_some()
    }
    /// Incast episodes so far (notifications that found the sender outside one).
    pub fn episodes(&self) -> u64 {
        self.episodes
    }
}

impl Controller for Pulser {
    const NAME: &'static str = "pulser";
    const ABOUT: &'static str =
        "Pulser: DCTCP that drops to a safe window on explicit incast notification, then restores";
    const USES_ECN: bool = true;
    type Config = PulserConfig;
    fn build(cfg: &PulserConfig, setup: CcSetup) -> Self {
        Self {
            safe: u64::from(cfg.safe_cwnd_pkts) * setup.limits.mss,
            dctcp: Dctcp::new(&cfg.dctcp(), setup.limits),
            incast: None,
            episodes: 0,
        }
    }
    fn validate(cfg: &PulserConfig) -> Result<(), String> {
        if cfg.safe_cwnd_pkts == 0 {
            return Err("safe_cwnd_pkts: must be at least 1".into());
        }
        Dctcp::validate(&cfg.dctcp())
    }
    fn needs(_cfg: &PulserConfig) -> Needs {
        Needs {
            switch_ports: Some((
                PortFeatures::INCAST_NOTIFICATION,
                "Pulser's senders react to the switches' explicit incast notifications",
            )),
            ..Needs::default()
        }
    }
}

impl CongestionControl for Pulser {
    fn ssthresh_bytes(&self) -> u64 {
        self.dctcp.ssthresh_bytes()
    }
    fn cwnd_bytes(&self) -> u64 {
        let w = self.dctcp.cwnd_bytes();
        // A sender already below the safe window is not raised by a notification.
        if self.incast.is_some() {
            w.min(self.safe)
        } else {
            w
        }
    }
    fn on_ack(&mut self, a: &AckSample) {
        if a.ein {
            if self.incast.is_none() {
                self.episodes += 1;
            }
            self.incast = Some(0);
        } else if let Some(clean) = &mut self.incast {
            *clean += a.acked_bytes;
            if *clean >= self.safe {
                // A whole (safe) window without a notification: restore at once.
                self.incast = None;
            }
        }
        if self.incast.is_some() {
            // α follows the marks; the kept window neither grows nor shrinks.
            self.dctcp.on_ack(&AckSample {
                cwnd_limited: false,
                max_out_bytes: 0,
                ..*a
            });
        } else {
            self.dctcp.on_ack(a);
        }
    }
    /// During an incast the ECN echo is not applied to the kept window: the notification
    /// already answered the congestion the marks report, and Pulser restores the window it
    /// had before.
    fn on_ecn(&mut self, now: Time, in_flight: u64) {
        if self.incast.is_none() {
            self.dctcp.on_ecn(now, in_flight);
        }
    }
    /// A loss ends an incast episode and halves the kept window.
    fn on_loss(&mut self, now: Time, in_flight: u64) {
        let flight = match self.incast.take() {
            Some(_) => self.dctcp.cwnd_bytes(),
            None => in_flight,
        };
        self.dctcp.on_loss(now, flight);
    }
    fn on_rto(&mut self, now: Time, in_flight: u64) {
        self.incast = None;
        self.dctcp.on_rto(now, in_flight);
    }
    /// `alpha` (DCTCP's) and `incast` (1 while holding the safe window).
    fn sample(&self, out: &mut Vec<(&'static str, f64)>) {
        self.dctcp.sample(out);
        out.push(("incast", if self.incast.is_some() { 1.0 } else { 0.0 }));
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Cc, CcSpec, WindowLimits};
    use super::*;
    use crate::testkit::{CcDriver, Round};

    fn limits() -> WindowLimits {
        WindowLimits {
            mss: 1460,
            init_cwnd: 10 * 1460,
            min_cwnd: 2 * 1460,
        }
    }

    fn driver() -> CcDriver<Cc> {
        CcDriver::new(CcSpec::Pulser(PulserConfig::default()).build(limits())).with_limits(limits())
    }

    /// A notification drops the window to 4 segments at once; it stays there while
    /// notifications come; one clean window later the window before the incast is back,
    /// exactly, and DCTCP goes on from it.
    #[test]
    fn a_notification_drops_to_the_safe_window_and_a_clean_window_restores() {
        let mut d = driver();
        d.rounds(3, Round::clean());
        let before = d.cc.cwnd_bytes();
        assert_eq!(before, 80 * 1460, "slow start");
        let out = d.round(Round::clean().with_ein());
        assert_eq!(out.cwnd_bytes, 4 * 1460);
        assert!(out.get("incast") > 0.5, "holding the safe window");
        // Marked and notified for a while: α rises, the window stays safe.
        let out = d.rounds(5, Round::marked(1, 1).with_ein());
        assert!(out.iter().all(|o| o.cwnd_bytes == 4 * 1460));
        assert!(out.last().unwrap().get("alpha") > 0.2);
        // One clean (safe) window: restored to the window before the incast.
        let out = d.round(Round::clean());
        assert!(out.get("incast") < 0.5, "restored");
        assert_eq!(
            d.cc.cwnd_bytes(),
            before + 1460,
            "restored, then one ACK of slow start"
        );
        let Cc::Pulser(p) = &d.cc else { unreachable!() };
        assert_eq!(p.episodes(), 1);
    }

    /// Without notifications Pulser is DCTCP, ACK for ACK.
    #[test]
    fn without_notifications_it_is_dctcp() {
        let mut p = driver();
        let mut q = CcDriver::new(CcSpec::Dctcp(DctcpConfig::default()).build(limits()))
            .with_limits(limits());
        for r in [
            Round::clean(),
            Round::marked(1, 3),
            Round::marked(2, 5),
            Round::clean(),
        ] {
            for _ in 0..6 {
                let (a, b) = (p.round(r), q.round(r));
                assert_eq!(a.cwnd_bytes, b.cwnd_bytes);
                assert_eq!(a.get("alpha").to_bits(), b.get("alpha").to_bits());
            }
        }
        p.loss();
        q.loss();
        assert_eq!(p.cc.cwnd_bytes(), q.cc.cwnd_bytes());
    }

    /// A loss during an incast ends it and halves the kept window; a timeout ends it too.
    #[test]
    fn a_loss_during_an_incast_halves_the_kept_window() {
        let mut d = driver();
        d.rounds(3, Round::clean());
        d.round(Round::clean().with_ein());
        d.loss();
        assert_eq!(d.cc.cwnd_bytes(), 40 * 1460);
        d.round(Round::clean().with_ein());
        d.timeout();
        let Cc::Pulser(p) = &d.cc else { unreachable!() };
        assert!(!p.in_incast());
    }
}
