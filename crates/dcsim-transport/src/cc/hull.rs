//! HULL's hosts (Alizadeh, Kabbani, Edsall, Prabhakar, Vahdat, Yasuda, "Less is More:
//! Trading a little Bandwidth for Ultra-Low Latency in the Data Center", NSDI 2012): DCTCP
//! senders that react to the marks of phantom queues (`queue.kind = "phantom"`), with their
//! packets paced by the host's pacer while they are associated with it. A flow becomes
//! associated when an ECN echo arrives, with some probability, and stays associated for a
//! while after the last one.

use dcsim_engine::{Dur, Rng, Time};
use dcsim_net::qdisc::PortFeatures;
use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::{
    AckSample, CcSetup, CongestionControl, Controller, Dctcp, DctcpConfig, PacerParams,
    WindowLimits,
};
use crate::endpoint::Needs;

/// HULL host parameters. Only DCTCP's `g` and `alpha_init` come from DCTCP; the pacer's
/// constants are, as far as we can tell, the paper's, and all of them have low confidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HullConfig {
    /// DCTCP's gain g (1/16).
    pub g: f64,
    /// DCTCP's initial α (0, as ns-2).
    pub alpha_init: f64,
    /// Pace associated flows through the host's pacer (default on; the ExpressPass
    /// comparison may have run HULL without it).
    pub pacer: bool,
    /// Pacer EWMA weight η (0.125).
    pub eta: f64,
    /// Pacer backlog weight β: the backlog counts as β times its bytes of demand (1; the
    /// paper's β = 16 is in units we could not determine, see `HostPacer`).
    pub beta: f64,
    /// Pacer rate update interval T_r (64 µs; "tens of µs").
    pub interval: Dur,
    /// Probability that an ECN-echoed ACK associates its flow with the pacer (0.125).
    pub associate_probability: f64,
    /// How long a flow stays associated after the last ECN echo that associated it (10 ms;
    /// ours).
    pub association: Dur,
}

impl Default for HullConfig {
    fn default() -> Self {
        Self {
            g: 1.0 / 16.0,
            alpha_init: 0.0,
            pacer: true,
            eta: 0.125,
            beta: 1.0,
            interval: Dur::from_us(64),
            associate_probability: 0.125,
            association: Dur::from_ms(10),
        }
    }
}

/// A HULL host's controller: DCTCP plus the pacer association.
pub struct Hull {
    dctcp: Dctcp,
    cfg: HullConfig,
    associated_until: Time,
    rng: Rng,
}

impl Hull {
    /// A HULL sender.
    pub fn new(cfg: &HullConfig, limits: WindowLimits, rng: Rng) -> Self {
        let dctcp = DctcpConfig {
            g: cfg.g,
            alpha_init: Some(cfg.alpha_init),
            linux_rules: None,
        };
        Self {
            dctcp: Dctcp::new(&dctcp, limits),
            cfg: cfg.clone(),
            associated_until: Time::ZERO,
            rng,
        }
    }

    /// Whether the flow is associated with the pacer at `now`.
    pub fn is_associated(&self, now: Time) -> bool {
        self.cfg.pacer && now < self.associated_until
    }
}

impl Controller for Hull {
    const NAME: &'static str = "hull";
    const ABOUT: &'static str =
        "HULL hosts: DCTCP reacting to phantom-queue marks, paced by the host's pacer";
    const USES_ECN: bool = true;
    type Config = HullConfig;
    fn build(cfg: &HullConfig, setup: CcSetup) -> Self {
        Self::new(cfg, setup.limits, setup.rng)
    }
    fn validate(cfg: &HullConfig) -> Result<(), String> {
        let dctcp = DctcpConfig {
            g: cfg.g,
            alpha_init: Some(cfg.alpha_init),
            linux_rules: None,
        };
        <Dctcp as Controller>::validate(&dctcp)?;
        if !(cfg.eta > 0.0 && cfg.eta <= 1.0) {
            return Err(format!("eta: must be in (0, 1], got {}", cfg.eta));
        }
        if !(cfg.beta >= 0.0 && cfg.beta.is_finite()) {
            return Err(format!("beta: must be at least 0, got {}", cfg.beta));
        }
        if !(0.0..=1.0).contains(&cfg.associate_probability) {
            return Err(format!(
                "associate_probability: must be in [0, 1], got {}",
                cfg.associate_probability
            ));
        }
        if cfg.interval == Dur::ZERO {
            return Err("interval: must be greater than zero".into());
        }
        Ok(())
    }
    fn needs(_cfg: &HullConfig) -> Needs {
        Needs {
            switch_ports: Some((
                PortFeatures::PHANTOM_MARKING,
                "HULL's ECN marks come from phantom queues",
            )),
            ..Needs::default()
        }
    }
}

impl CongestionControl for Hull {
    fn cwnd_bytes(&self) -> u64 {
        self.dctcp.cwnd_bytes()
    }
    fn ssthresh_bytes(&self) -> u64 {
        self.dctcp.ssthresh_bytes()
    }
    fn on_ack(&mut self, a: &AckSample) {
        if self.cfg.pacer
            && a.ce_bytes > 0
            && self.rng.random::<f64>() < self.cfg.associate_probability
        {
            self.associated_until = a.now + self.cfg.association;
        }
        self.dctcp.on_ack(a);
    }
    fn on_ecn(&mut self, now: Time, in_flight_bytes: u64) {
        self.dctcp.on_ecn(now, in_flight_bytes);
    }
    fn on_loss(&mut self, now: Time, in_flight_bytes: u64) {
        self.dctcp.on_loss(now, in_flight_bytes);
    }
    fn on_rto(&mut self, now: Time, in_flight_bytes: u64) {
        self.dctcp.on_rto(now, in_flight_bytes);
    }
    fn host_pacer(&self, now: Time) -> Option<PacerParams> {
        self.is_associated(now).then_some(PacerParams {
            eta: self.cfg.eta,
            beta: self.cfg.beta,
            interval: self.cfg.interval,
        })
    }
    /// DCTCP's `alpha`.
    fn sample(&self, out: &mut Vec<(&'static str, f64)>) {
        self.dctcp.sample(out);
    }
}

#[cfg(test)]
mod tests {
    use dcsim_engine::RngTree;

    use super::*;
    use crate::testkit::{CcDriver, Round};

    fn limits() -> WindowLimits {
        WindowLimits {
            mss: 1460,
            init_cwnd: 10 * 1460,
            min_cwnd: 2 * 1460,
        }
    }

    /// Marks associate the flow with the pacer (with probability 1 here) for the
    /// association time; without marks it stays unpaced; the window is DCTCP's.
    #[test]
    fn hull_associates_on_marks_and_otherwise_is_dctcp() {
        let cfg = HullConfig {
            associate_probability: 1.0,
            ..HullConfig::default()
        };
        let rng = || RngTree::new(0).stream("cc", 0);
        let mut h = CcDriver::new(Hull::new(&cfg, limits(), rng())).with_limits(limits());
        let mut d = CcDriver::new(Dctcp::new(&DctcpConfig::default(), limits()));
        let clean: Vec<u64> = h
            .rounds(5, Round::clean())
            .iter()
            .map(|o| o.cwnd_bytes)
            .collect();
        assert!(h.cc.host_pacer(h.now).is_none());
        let marked: Vec<u64> = h
            .rounds(5, Round::marked(1, 4))
            .iter()
            .map(|o| o.cwnd_bytes)
            .collect();
        assert!(h.cc.host_pacer(h.now).is_some());
        let dc: Vec<u64> = d
            .rounds(5, Round::clean())
            .iter()
            .map(|o| o.cwnd_bytes)
            .collect();
        let dm: Vec<u64> = d
            .rounds(5, Round::marked(1, 4))
            .iter()
            .map(|o| o.cwnd_bytes)
            .collect();
        assert_eq!((clean, marked), (dc, dm));
        let t = h.now;
        h.idle(Dur::from_ms(11));
        assert!(
            h.cc.host_pacer(h.now).is_none(),
            "association expired after {:?}",
            t
        );
        let off = HullConfig {
            pacer: false,
            associate_probability: 1.0,
            ..HullConfig::default()
        };
        let mut h = CcDriver::new(Hull::new(&off, limits(), rng()));
        h.rounds(5, Round::marked(1, 1));
        assert!(h.cc.host_pacer(h.now).is_none(), "pacer off");
    }
}
