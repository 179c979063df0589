//! The RCP router (Dukkipati, McKeown, "Why flow-completion time is the right metric for
//! congestion control", CCR 2006; the ns-2 `rcp.cc` of Rui Zhang and Nandita Dukkipati):
//! every control interval the port computes one rate R that it offers every flow, from the
//! spare capacity and the queue, and stamps it into the data packets it sends.

use dcsim_engine::{Dur, Rate, Rng, Time};
use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::{
    Amount, BuildCx, Discipline, DropTailConfig, PortFeatures, Qdisc, QdiscCx, QdiscSpec,
    QueueDisc, Verdict,
};
use crate::wire::MAX_WIRE_BYTES;
use crate::{Class, PacketId, RateStamp};

/// RCP router parameters (`kind = "rcp"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RcpRouterConfig {
    /// α, the weight of the spare capacity (RCP paper: 0.1; the code's scripts 0.4).
    pub alpha: f64,
    /// β, the weight of the queue (RCP paper: 1; scripts 0.2 to 1).
    pub beta: f64,
    /// γ, the target utilisation: R aims at γ·C (`gamma_`, 1 = the whole link).
    pub gamma: f64,
    /// The average RTT d̄ of the flows (fixed here; the code averages RTT fields carried by
    /// packets). Default 100 µs, the RTT of the dumbbell presets.
    pub rtt: Dur,
    /// The control interval T; default d̄ (the code: min(d̄, a user time slot)).
    pub interval: Option<Dur>,
    /// Initial R as a fraction of the line rate (`init_rate_fact_`; third-party scripts
    /// use 0.05 to 0.1).
    pub init_rate: f64,
    /// The smallest R, in full (1538 B) packets per d̄ (the code's `min_pprtt`; its value
    /// in the ExpressPass runs is not known, 1 here).
    pub min_pkts_per_rtt: f64,
    /// The discipline that holds the packets (default drop-tail, 250 packets).
    pub inner: Box<QdiscSpec>,
}

impl Default for RcpRouterConfig {
    fn default() -> Self {
        Self {
            alpha: 0.1,
            beta: 1.0,
            gamma: 1.0,
            rtt: Dur::from_us(100),
            interval: None,
            init_rate: 0.05,
            min_pkts_per_rtt: 1.0,
            inner: Box::new(QdiscSpec::DropTail(DropTailConfig {
                buffer: Amount::Packets(250),
            })),
        }
    }
}

/// An RCP router port: a rate controller in front of `inner`.
///
/// Every interval T (the first one jittered, Normal(T, 0.2·T), as in the code):
/// `R ← R·[1 + (T/d̄)·(α·(γC − y) − β·q/d̄)/(γC)]`, clamped to
/// `[min_pkts_per_rtt full packets per d̄, γC]`, where y is the rate of the bytes that arrived in the
/// interval and q the queue at its end. Data packets leaving the port carry
/// `min(their stamp, R)`.
///
/// The updates are computed lazily, at the port's next enqueue or dequeue: nothing changes
/// the counters or the queue between the port's own events, so this is exact and needs no
/// timer.
///
/// # Deviations
/// - d̄ is a parameter, not the byte-weighted mean of RTT fields carried by packets (the
///   header has no room for one, ADR 0004).
/// - A packet's bytes count in the interval in which it arrives whole (the code splits a
///   packet that straddles a boundary pro rata).
pub struct RcpRouter {
    cfg: RcpRouterConfig,
    inner: Qdisc,
    /// Target γ·C, bytes/s.
    target: f64,
    /// Smallest rate: one full packet per d̄, bytes/s.
    floor: f64,
    /// R, bytes/s.
    rate: f64,
    interval: Dur,
    next_update: Time,
    arrived_bytes: u64,
    updates: u64,
}

impl RcpRouter {
    /// The router of a port of `line` rate; `rng` jitters the first update.
    pub fn new(cfg: &RcpRouterConfig, inner: Qdisc, line: Rate, mut rng: Rng) -> Self {
        let c = line.bps() as f64 / 8.0;
        let interval = cfg.interval.unwrap_or(cfg.rtt);
        // Normal(T, 0.2·T) by Box-Muller, kept within [0.2·T, 1.8·T].
        let u1: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
        let u2: f64 = rng.random();
        let z = libm::sqrt(-2.0 * libm::log(u1)) * libm::cos(std::f64::consts::TAU * u2);
        let first = interval.mul_f64((1.0 + 0.2 * z).clamp(0.2, 1.8));
        Self {
            target: cfg.gamma * c,
            floor: (cfg.min_pkts_per_rtt * f64::from(MAX_WIRE_BYTES) / cfg.rtt.as_secs_f64())
                .min(cfg.gamma * c),
            rate: cfg.init_rate * c,
            interval,
            next_update: Time::from_dur(first),
            arrived_bytes: 0,
            updates: 0,
            cfg: cfg.clone(),
            inner,
        }
    }

    /// The rate R offered now.
    pub fn rate(&self) -> Rate {
        Rate::from_bps((self.rate * 8.0) as u64)
    }

    /// Rate updates done so far.
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// Runs every update due by `now`.
    fn catch_up(&mut self, now: Time) {
        while self.next_update <= now {
            let t = self.interval.as_secs_f64();
            let d = self.cfg.rtt.as_secs_f64();
            let y = self.arrived_bytes as f64 / t;
            let q = self.inner.backlog_bytes() as f64;
            // RCP: R ← R·[1 + (T/d̄)·(α(γC − y) − β·q/d̄)/(γC)]
            let change = (t / d) * (self.cfg.alpha * (self.target - y) - self.cfg.beta * q / d)
                / self.target;
            self.rate = (self.rate * (1.0 + change)).clamp(self.floor, self.target);
            self.arrived_bytes = 0;
            self.updates += 1;
            self.next_update += self.interval;
            if q == 0.0 && self.rate >= self.target {
                // Idle at the ceiling: later empty intervals change nothing.
                let behind = now.saturating_since(self.next_update).as_ps() / self.interval.as_ps();
                self.next_update += self.interval * behind;
                self.updates += behind;
            }
        }
    }
}

impl RcpRouterConfig {
    fn validate(&self) -> Result<(), String> {
        for (name, v, lo) in [("alpha", self.alpha, 0.0), ("beta", self.beta, 0.0)] {
            if !(v > lo && v.is_finite()) {
                return Err(format!("{name}: must be greater than zero, got {v}"));
            }
        }
        if !(self.gamma > 0.0 && self.gamma <= 1.0) {
            return Err(format!("gamma: must be in (0, 1], got {}", self.gamma));
        }
        if !(self.min_pkts_per_rtt > 0.0 && self.min_pkts_per_rtt.is_finite()) {
            return Err(format!(
                "min_pkts_per_rtt: must be greater than zero, got {}",
                self.min_pkts_per_rtt
            ));
        }
        if !(self.init_rate > 0.0 && self.init_rate <= 1.0) {
            return Err(format!(
                "init_rate: must be in (0, 1], got {}",
                self.init_rate
            ));
        }
        if self.rtt == Dur::ZERO || self.interval == Some(Dur::ZERO) {
            return Err("rtt, interval: must be greater than zero".into());
        }
        self.inner.validate().map_err(|e| format!("inner.{e}"))
    }
}

impl Discipline for RcpRouter {
    const NAME: &'static str = "rcp";
    const ABOUT: &'static str =
        "RCP router: a rate from spare capacity and queue every interval, stamped into data";
    type Config = RcpRouterConfig;
    fn build(cfg: &RcpRouterConfig, cx: &BuildCx<'_>) -> Self {
        Self::new(
            cfg,
            cx.inner(&cfg.inner),
            cx.line,
            cx.rng.stream("rcp", cx.port),
        )
    }
    fn validate(cfg: &RcpRouterConfig) -> Result<(), String> {
        cfg.validate()
    }
    fn features(cfg: &RcpRouterConfig) -> PortFeatures {
        PortFeatures::RATE_STAMPING | cfg.inner.features()
    }
}

impl QueueDisc for RcpRouter {
    fn enqueue(&mut self, pkt: PacketId, cx: &mut QdiscCx<'_>) -> Verdict {
        self.catch_up(cx.now);
        self.arrived_bytes += u64::from(cx.pool.get(pkt).wire_bytes);
        self.inner.enqueue(pkt, cx)
    }
    fn dequeue(&mut self, cx: &mut QdiscCx<'_>) -> Option<PacketId> {
        self.catch_up(cx.now);
        let pkt = self.inner.dequeue(cx)?;
        let p = cx.pool.get_mut(pkt);
        if p.class == Class::Data || p.ip.wants_rate() {
            p.rate = p.rate.min(RateStamp::of(self.rate()));
        }
        Some(pkt)
    }
    fn backlog_bytes(&self) -> u64 {
        self.inner.backlog_bytes()
    }
    fn backlog_pkts(&self) -> u32 {
        self.inner.backlog_pkts()
    }
    fn next_wakeup(&self, now: Time) -> Option<Time> {
        self.inner.next_wakeup(now)
    }
}

#[cfg(test)]
mod tests {
    use dcsim_engine::RngTree;

    use super::*;
    use crate::Ecn;
    use crate::testkit::QdiscDriver;

    fn router(cfg: &RcpRouterConfig) -> RcpRouter {
        let inner = cfg.inner.build(&RngTree::new(0), 0, Rate::from_gbps(10));
        RcpRouter::new(
            cfg,
            inner,
            Rate::from_gbps(10),
            RngTree::new(0).stream("rcp", 0),
        )
    }

    /// N flows that each send at the offered rate make the router settle at the fair
    /// share γC/N: the fixed point of the update is y = γC with an empty queue. Fluid
    /// drive: every 10 µs each flow offers R·10 µs of full packets, the port sends at
    /// line rate.
    #[test]
    fn rcp_rate_converges_to_capacity_over_n() {
        for n in [1u64, 4, 16] {
            let cfg = RcpRouterConfig::default();
            let mut q = router(&cfg);
            let mut d = QdiscDriver::new();
            let c = 10e9 / 8.0;
            let mut owed = 0.0;
            let mut credit = 0.0; // bytes the line can send
            for step in 0..20_000u64 {
                d.now = Time(step * 10_000_000);
                owed += n as f64 * q.rate().bps() as f64 / 8.0 * 10e-6;
                while owed >= 1538.0 {
                    d.offer(&mut q, 1538, Class::Data, Ecn::NotEct);
                    owed -= 1538.0;
                }
                credit += c * 10e-6;
                while credit >= 1538.0 {
                    match d.take(&mut q) {
                        Some(p) => {
                            d.pool.free(p);
                            credit -= 1538.0;
                        }
                        None => {
                            credit = 0.0;
                            break;
                        }
                    }
                }
            }
            let share = q.rate().bps() as f64 / (10e9 / n as f64);
            assert!(
                (0.93..=1.05).contains(&share),
                "{n} flows: R = {share} of C/N"
            );
            assert!(q.updates() > 1000);
        }
    }

    /// Data packets, and control packets that ask (RCP's SYN), leave with the smaller of
    /// their stamp and R; other packets, the answers echoing a stamp among them, untouched.
    #[test]
    fn rcp_stamps_data_with_the_smaller_rate() {
        let mut q = router(&RcpRouterConfig::default());
        let mut d = QdiscDriver::new();
        let r = RateStamp::of(q.rate());
        let ask = crate::IpBits::NOT_ECT.with_rate_request();
        for (class, stamp, ip) in [
            (Class::Data, RateStamp::NONE, crate::IpBits::NOT_ECT),
            (Class::Data, RateStamp(1), crate::IpBits::NOT_ECT),
            (Class::Control, RateStamp::NONE, crate::IpBits::NOT_ECT),
            (Class::Control, RateStamp::NONE, ask),
            (
                Class::Control,
                RateStamp(u32::MAX - 1),
                crate::IpBits::NOT_ECT,
            ),
        ] {
            d.offer_packet(
                &mut q,
                crate::Packet {
                    wire_bytes: 100,
                    class,
                    rate: stamp,
                    ip,
                    ..crate::Packet::default()
                },
            );
        }
        let ids: Vec<PacketId> = std::iter::from_fn(|| d.take(&mut q)).collect();
        let got: Vec<RateStamp> = ids.iter().map(|&p| d.pool.get(p).rate).collect();
        assert_eq!(
            got,
            [r, RateStamp(1), RateStamp::NONE, r, RateStamp(u32::MAX - 1)]
        );
    }
}
