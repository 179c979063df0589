//! `[controller] kind = "sdn-ecn"`: the SDN ECN controller of the central-control thesis
//! (`docs/protocols/sdn-ecn.md`). Every probe interval it reads each switch port's byte
//! counter (OpenFlow port statistics) and each flow's byte counter, computes every switch
//! link's utilization over the interval, and for each link above the threshold installs
//! rules that set CE on the packets of the top p % of that link's flows by rate, p growing
//! linearly from 0 at the threshold to `max_fraction` at full utilization. The rules take
//! effect a control-plane delay after the statistics were read and expire after a hard
//! and/or idle timeout. ECN-capable senders (CUBIC or Reno with `transport.ecn = true`)
//! back off as from a switch's mark; hosts and switches are otherwise unchanged.

use dcsim_engine::{Dur, Time};
use dcsim_net::{FlowId, Network, PortId, RouteId};
use dcsim_transport::{FlowInfo, Flows};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::controller::ControllerConfig;
use crate::{BuildCx, CheckCx, ControllerSpec, Service, ServiceCx, ServiceSched};

/// Parameters of the SDN ECN controller; defaults from the thesis where it gives them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SdnEcnConfig {
    /// Time between two readings of the statistics (thesis: 2 s).
    #[serde(default = "default_probe_interval")]
    pub probe_interval: Dur,
    /// A link above this utilization is congested (thesis: 75 %).
    #[serde(default = "default_threshold")]
    pub threshold: f64,
    /// The fraction of a congested link's flows marked at full utilization (thesis: 50 %).
    #[serde(default = "default_max_fraction")]
    pub max_fraction: f64,
    /// A rule is removed this long after its installation (ours: 1 s, the shortest
    /// timeout OpenFlow expresses; the thesis gives no value).
    #[serde(default = "default_hard_timeout")]
    pub hard_timeout: Option<Dur>,
    /// A rule is removed when no packet matched it for this long (default: none).
    #[serde(default)]
    pub idle_timeout: Option<Dur>,
    /// From reading the statistics to the rules acting (ours: 10 ms).
    #[serde(default = "default_control_delay")]
    pub control_delay: Dur,
    /// Named transports (`[transports]`) whose flows are never marked: the
    /// administrator's exempt classes.
    #[serde(default)]
    pub exempt: Vec<String>,
}

fn default_probe_interval() -> Dur {
    Dur::from_secs(2)
}
fn default_threshold() -> f64 {
    0.75
}
fn default_max_fraction() -> f64 {
    0.5
}
#[allow(clippy::unnecessary_wraps)] // serde default of an optional field
fn default_hard_timeout() -> Option<Dur> {
    Some(Dur::from_secs(1))
}
fn default_control_delay() -> Dur {
    Dur::from_ms(10)
}

impl Default for SdnEcnConfig {
    fn default() -> Self {
        Self {
            probe_interval: default_probe_interval(),
            threshold: default_threshold(),
            max_fraction: default_max_fraction(),
            hard_timeout: default_hard_timeout(),
            idle_timeout: None,
            control_delay: default_control_delay(),
            exempt: Vec::new(),
        }
    }
}

impl ControllerConfig for SdnEcnConfig {
    const NAME: &'static str = "sdn-ecn";
    const ABOUT: &'static str = "polls switch port counters and marks ECN on the fastest flows of congested \
         links with timed rules (docs/protocols/sdn-ecn.md)";

    /// Checks the values; the error names the key (relative to `[controller]`).
    fn validate(&self) -> Result<(), String> {
        if self.probe_interval == Dur::ZERO {
            return Err("probe_interval: must be greater than zero".into());
        }
        if !(self.threshold > 0.0 && self.threshold < 1.0) {
            return Err(format!(
                "threshold: {} is not a utilization strictly between 0 and 1",
                self.threshold
            ));
        }
        if !(0.0..=1.0).contains(&self.max_fraction) {
            return Err(format!(
                "max_fraction: {} is not a fraction between 0 and 1",
                self.max_fraction
            ));
        }
        if self.control_delay >= self.probe_interval {
            return Err(format!(
                "control_delay: {} must be shorter than probe_interval ({})",
                self.control_delay, self.probe_interval
            ));
        }
        if self.hard_timeout == Some(Dur::ZERO) || self.idle_timeout == Some(Dur::ZERO) {
            return Err(
                "hard_timeout / idle_timeout: a timeout must be greater than zero \
                        (leave it out for none)"
                    .into(),
            );
        }
        Ok(())
    }
}

impl SdnEcnConfig {
    /// The fraction of a link's flows to mark at utilization `util`: 0 up to the
    /// threshold, then linear to `max_fraction` at 1 (and no more above).
    pub fn fraction(&self, util: f64) -> f64 {
        if util <= self.threshold {
            return 0.0;
        }
        let x = ((util - self.threshold) / (1.0 - self.threshold)).min(1.0);
        self.max_fraction * x
    }

    /// The flows to mark on a link at utilization `util`, given its flows as
    /// `(rate, flow, exempt)`: the ⌊p·n + ½⌋ fastest of its n flows (ties by flow number),
    /// skipping exempt ones, which count in n but are never marked.
    pub fn pick(&self, util: f64, flows: &mut [(f64, FlowId, bool)], out: &mut Vec<FlowId>) {
        let k = (self.fraction(util) * flows.len() as f64 + 0.5).floor() as usize;
        if k == 0 {
            return;
        }
        flows.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        out.extend(flows.iter().filter(|f| !f.2).take(k).map(|f| f.1));
    }
}

/// The running controller.
pub struct SdnEcn {
    cfg: SdnEcnConfig,
    /// Per transport index: whether its flows are exempt.
    exempt: Vec<bool>,
    last_probe: Time,
    /// Per port: transmitted bytes at the last probe.
    last_tx: Vec<u64>,
    /// Per flow: its forward route once started, and delivered bytes at the last probe.
    routes: Vec<RouteId>,
    last_bytes: Vec<u64>,
    /// Rules waiting for the control-plane delay.
    pending: Vec<(PortId, FlowId)>,
    // Scratch.
    util: Vec<f64>,
    on_port: Vec<(u32, f64, FlowId, bool)>,
    group: Vec<(f64, FlowId, bool)>,
    picked: Vec<FlowId>,
    // Figures for the summary.
    probes: u64,
    congested: u64,
    rules: u64,
}

/// The controller's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SdnEcnEvent {
    /// Read the network's statistics.
    Probe,
    /// The rules decided at the last probe take effect.
    Apply,
}

impl SdnEcn {
    fn new(cfg: SdnEcnConfig, exempt: Vec<bool>, ports: usize) -> Self {
        Self {
            cfg,
            exempt,
            last_probe: Time::ZERO,
            last_tx: vec![0; ports],
            routes: Vec::new(),
            last_bytes: Vec::new(),
            pending: Vec::new(),
            util: vec![0.0; ports],
            on_port: Vec::new(),
            group: Vec::new(),
            picked: Vec::new(),
            probes: 0,
            congested: 0,
            rules: 0,
        }
    }

    /// Flow `f` started on route `fwd`.
    fn on_start(&mut self, f: FlowId, fwd: RouteId) {
        if self.routes.len() <= f.index() {
            self.routes.resize(f.index() + 1, RouteId::NONE);
            self.last_bytes.resize(f.index() + 1, 0);
        }
        self.routes[f.index()] = fwd;
    }

    /// Reads the statistics at `now` and decides the rules (installed by [`Self::apply`]).
    fn probe(&mut self, now: Time, net: &Network, flows: &Flows) {
        self.probes += 1;
        let secs = (now - self.last_probe).as_secs_f64();
        self.last_probe = now;
        for (i, p) in net.ports().iter().enumerate() {
            let tx: u64 = p.stats().tx_bytes.iter().sum();
            let bits = (tx - self.last_tx[i]) as f64 * 8.0;
            self.last_tx[i] = tx;
            self.util[i] = if net.is_switch(p.node()) && secs > 0.0 {
                bits / (p.rate().bps() as f64 * secs)
            } else {
                0.0
            };
        }
        self.on_port.clear();
        for (f, &route) in self.routes.iter().enumerate() {
            if route == RouteId::NONE {
                continue;
            }
            let id = FlowId::new(f);
            let bytes = flows.delivered_bytes(id);
            let rate = (bytes - self.last_bytes[f]) as f64 * 8.0 / secs.max(f64::MIN_POSITIVE);
            self.last_bytes[f] = bytes;
            if rate <= 0.0 {
                continue;
            }
            let exempt = self.exempt[flows.spec(id).transport as usize];
            for p in net.route_ports(route) {
                if self.util[p.index()] > self.cfg.threshold {
                    self.on_port.push((p.0, rate, id, exempt));
                }
            }
        }
        self.on_port.sort_by_key(|e| e.0);
        let mut i = 0;
        while i < self.on_port.len() {
            let port = self.on_port[i].0;
            let j = i + self.on_port[i..].partition_point(|e| e.0 == port);
            self.congested += 1;
            self.group.clear();
            self.group
                .extend(self.on_port[i..j].iter().map(|e| (e.1, e.2, e.3)));
            self.picked.clear();
            self.cfg
                .pick(self.util[port as usize], &mut self.group, &mut self.picked);
            self.pending
                .extend(self.picked.iter().map(|&f| (PortId(port), f)));
            i = j;
        }
    }

    /// Installs the rules decided at the last probe; returns how many.
    fn apply(&mut self, now: Time, net: &mut Network) -> usize {
        let n = self.pending.len();
        for (port, flow) in self.pending.drain(..) {
            net.install_mark_rule(
                port,
                flow,
                now,
                self.cfg.hard_timeout,
                self.cfg.idle_timeout,
            );
        }
        self.rules += n as u64;
        n
    }
}

impl Service for SdnEcn {
    type Event = SdnEcnEvent;
    const SUMMARY_KEY: &'static str = "controller";
    const CONFIGURED_BY: &'static str = "[controller]";

    /// Its values, that the run has a duration (the controller probes until the end), and
    /// that every exempt class names a transport.
    fn check(cx: &CheckCx<'_>) -> Result<(), String> {
        let Some(ControllerSpec::SdnEcn(c)) = cx.controller else {
            return Ok(());
        };
        c.validate().map_err(|e| format!("controller.{e}"))?;
        if cx.duration.is_none() {
            return Err(
                "controller: needs sim.duration (it probes the network until the end)".into(),
            );
        }
        for name in &c.exempt {
            if (cx.transport_index)(name).is_none() {
                return Err(format!(
                    "controller.exempt: no transport named {name:?} in [transports] (defined: {:?})",
                    cx.transport_names
                ));
            }
        }
        Ok(())
    }

    fn wanted(cx: &CheckCx<'_>) -> bool {
        matches!(cx.controller, Some(ControllerSpec::SdnEcn(_)))
    }

    fn build<S: ServiceSched>(cx: &mut BuildCx<'_, S>) -> Result<Option<Self>, String> {
        let Some(ControllerSpec::SdnEcn(cfg)) = cx.controller else {
            return Ok(None);
        };
        let exempt = (0..cx.transports.len())
            .map(|i| {
                cfg.exempt
                    .iter()
                    .any(|name| (cx.transport_index)(name) == Some(i as u32))
            })
            .collect();
        let c = Self::new(cfg.clone(), exempt, cx.net.ports().len());
        crate::at(
            cx.sched,
            Time::from_dur(c.cfg.probe_interval),
            SdnEcnEvent::Probe,
        );
        Ok(Some(c))
    }

    fn on_event<S: ServiceSched>(&mut self, ev: SdnEcnEvent, cx: &mut ServiceCx<'_, S>) {
        let now = cx.now;
        match ev {
            SdnEcnEvent::Probe => {
                self.probe(now, cx.net, cx.flows);
                let (every, delay) = (self.cfg.probe_interval, self.cfg.control_delay);
                if delay == Dur::ZERO {
                    self.apply(now, cx.net);
                } else {
                    cx.at(now + delay, SdnEcnEvent::Apply);
                }
                cx.at(now + every, SdnEcnEvent::Probe);
            }
            SdnEcnEvent::Apply => {
                self.apply(now, cx.net);
            }
        }
    }

    fn on_flow_start<S: ServiceSched>(&mut self, info: &FlowInfo, _cx: &mut ServiceCx<'_, S>) {
        self.on_start(info.flow, info.fwd);
    }

    /// Probes, congested links seen, rules installed, packets its rules marked.
    fn summary(&self, net: &Network, _flows: &Flows) -> Value {
        json!({
            "probes": self.probes,
            "congested_link_probes": self.congested,
            "rules_installed": self.rules,
            "packets_marked": net.mark_rules().marked,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No flow is marked at or below the threshold; above it the fastest flows are marked
    /// first, p growing linearly to half of them at full utilization; exempt flows count
    /// but are never marked.
    #[test]
    fn marks_the_largest_flows_first_and_none_below_the_threshold() {
        let c = SdnEcnConfig::default();
        let flows = |rates: &[f64]| -> Vec<(f64, FlowId, bool)> {
            rates
                .iter()
                .enumerate()
                .map(|(i, &r)| (r, FlowId::new(i), false))
                .collect()
        };
        let pick = |util: f64, fl: &mut Vec<(f64, FlowId, bool)>| {
            let mut out = Vec::new();
            c.pick(util, fl, &mut out);
            out
        };
        let rates = [5.0, 40.0, 10.0, 30.0, 1.0, 20.0, 2.0, 8.0, 3.0, 4.0];
        assert!(pick(0.75, &mut flows(&rates)).is_empty());
        assert!(pick(0.5, &mut flows(&rates)).is_empty());
        assert!((c.fraction(0.875) - 0.25).abs() < 1e-12);
        // 25 % of 10 flows, rounded: 3 (2.5 rounds up), the fastest: 40, 30, 20.
        assert_eq!(
            pick(0.875, &mut flows(&rates)),
            vec![FlowId(1), FlowId(3), FlowId(5)]
        );
        // Full (and beyond): half, the five fastest.
        assert_eq!(
            pick(1.2, &mut flows(&rates)),
            vec![FlowId(1), FlowId(3), FlowId(5), FlowId(2), FlowId(7)]
        );
        // Just above the threshold with few flows: nothing until p·n reaches one half.
        assert!(pick(0.8, &mut flows(&[10.0, 20.0, 30.0])).is_empty());
        assert_eq!(pick(0.9, &mut flows(&[10.0, 20.0, 30.0])), vec![FlowId(2)]);
        // The fastest flow exempt: the next one is marked instead.
        let mut fl = flows(&[10.0, 20.0, 30.0]);
        fl[2].2 = true;
        assert_eq!(pick(0.9, &mut fl), vec![FlowId(1)]);
    }

    #[test]
    fn bad_values_name_their_key() {
        let bad = |c: SdnEcnConfig| c.validate().unwrap_err();
        assert!(
            bad(SdnEcnConfig {
                threshold: 1.0,
                ..SdnEcnConfig::default()
            })
            .starts_with("threshold:")
        );
        assert!(
            bad(SdnEcnConfig {
                control_delay: Dur::from_secs(3),
                ..SdnEcnConfig::default()
            })
            .starts_with("control_delay:")
        );
        assert!(
            bad(SdnEcnConfig {
                max_fraction: 1.5,
                ..SdnEcnConfig::default()
            })
            .starts_with("max_fraction:")
        );
    }
}
