//! Random Early Detection (Floyd and Jacobson, "Random Early Detection Gateways for
//! Congestion Avoidance", IEEE/ACM ToN 1993), with the gentle variant and ECN marking.

use dcsim_engine::{ByteSize, Rng, Time};
use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::{
    Amount, BuildCx, Discipline, DropReason, Fifo, QdiscCx, QueueDisc, Verdict, holds_a_frame,
};
use crate::PacketId;

/// RED parameters as written in a scenario file.
///
/// The average and the thresholds are in the unit of `min_th` (bytes or packets);
/// `max_th` must use the same unit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedConfig {
    /// Physical buffer limit; arrivals beyond it are tail-dropped.
    pub buffer: Amount,
    /// Below this average nothing is marked or dropped.
    pub min_th: Amount,
    /// At and above this average every packet is marked or dropped (or, with `gentle`,
    /// the probability ramps from `max_p` to 1 between `max_th` and `2·max_th`).
    pub max_th: Amount,
    /// Marking probability at `max_th` (FJ93 `max_p`; classic 0.1).
    #[serde(default = "default_max_p")]
    pub max_p: f64,
    /// EWMA weight of the instantaneous queue (FJ93 `w_q`; classic 0.002; DCTCP uses 1).
    #[serde(default = "default_weight")]
    pub weight: f64,
    /// Gentle RED (ramp to 1 between `max_th` and `2·max_th` instead of jumping).
    #[serde(default)]
    pub gentle: bool,
    /// Mark ECN-capable packets instead of dropping them (non-ECT packets are dropped).
    #[serde(default = "default_true")]
    pub ecn: bool,
    /// Typical packet size, used to age the average over idle periods (FJ93 `s`).
    #[serde(default = "default_mean_pkt")]
    pub mean_pkt_size: ByteSize,
}

fn default_max_p() -> f64 {
    0.1
}
fn default_weight() -> f64 {
    0.002
}
fn default_true() -> bool {
    true
}
fn default_mean_pkt() -> ByteSize {
    ByteSize(1000)
}

impl Default for RedConfig {
    fn default() -> Self {
        Self {
            buffer: Amount::Bytes(1_000_000),
            min_th: Amount::Packets(5),
            max_th: Amount::Packets(15),
            max_p: default_max_p(),
            weight: default_weight(),
            gentle: false,
            ecn: true,
            mean_pkt_size: default_mean_pkt(),
        }
    }
}

impl RedConfig {
    /// The DCTCP configuration of RED: `w_q = 1`, `min_th = max_th = k`, `max_p = 1`, ECN.
    pub fn dctcp_like(buffer: Amount, k: Amount) -> Self {
        Self {
            buffer,
            min_th: k,
            max_th: k,
            max_p: 1.0,
            weight: 1.0,
            ..Self::default()
        }
    }

    fn validate(&self) -> Result<(), String> {
        holds_a_frame(&self.buffer, "buffer")?;
        let same_unit = matches!(
            (self.min_th, self.max_th),
            (Amount::Bytes(_), Amount::Bytes(_)) | (Amount::Packets(_), Amount::Packets(_))
        );
        if !same_unit {
            return Err("max_th: must use the same unit (bytes or packets) as min_th".into());
        }
        if self.max_th.as_bytes(1) < self.min_th.as_bytes(1) {
            return Err("max_th: must be at least min_th".into());
        }
        if !(self.max_p > 0.0 && self.max_p <= 1.0) {
            return Err(format!("max_p: must be in (0, 1], got {}", self.max_p));
        }
        if !(self.weight > 0.0 && self.weight <= 1.0) {
            return Err(format!("weight: must be in (0, 1], got {}", self.weight));
        }
        if self.mean_pkt_size.0 == 0 {
            return Err("mean_pkt_size: must be greater than zero".into());
        }
        Ok(())
    }
}

/// RED state: the average queue, the count since the last action, and the idle clock.
pub struct Red {
    fifo: Fifo,
    spec: RedConfig,
    in_packets: bool,
    min_th: f64,
    max_th: f64,
    avg: f64,
    /// Packets since the last mark or drop while in the ramp (FJ93 `count`, −1 below min).
    count: i64,
    idle_since: Option<Time>,
    rng: Rng,
}

impl Red {
    /// RED with `spec`, drawing from `rng`.
    pub fn new(spec: RedConfig, rng: Rng) -> Self {
        let in_packets = matches!(spec.min_th, Amount::Packets(_));
        let min_th = spec.min_th.as_bytes(1) as f64;
        let max_th = spec.max_th.as_bytes(1) as f64;
        Self {
            fifo: Fifo::default(),
            spec,
            in_packets,
            min_th,
            max_th,
            avg: 0.0,
            count: -1,
            idle_since: Some(Time::ZERO),
            rng,
        }
    }

    /// The current average queue, in the unit of the thresholds.
    pub fn avg(&self) -> f64 {
        self.avg
    }

    fn update_avg(&mut self, cx: &QdiscCx<'_>) {
        let w = self.spec.weight;
        if let Some(since) = self.idle_since.take() {
            // FJ93: over an idle period, age the average as if m small packets had arrived
            // to an empty queue: avg ← (1 − w_q)^m · avg, m = idle time / transmission time
            // of a typical packet.
            let s = cx
                .line_rate
                .tx_time(self.spec.mean_pkt_size.0)
                .as_ps()
                .max(1) as f64;
            let m = cx.now.saturating_since(since).as_ps() as f64 / s;
            self.avg *= libm::pow(1.0 - w, m);
        }
        let q = if self.in_packets {
            f64::from(self.fifo.len())
        } else {
            self.fifo.bytes() as f64
        };
        self.avg = (1.0 - w) * self.avg + w * q;
    }

    /// FJ93's decision: whether this arrival gets the congestion action.
    fn congested(&mut self) -> bool {
        let (avg, min, max, max_p) = (self.avg, self.min_th, self.max_th, self.spec.max_p);
        let pb = if avg < min {
            self.count = -1;
            return false;
        } else if avg < max {
            max_p * (avg - min) / (max - min)
        } else if self.spec.gentle && avg < 2.0 * max {
            max_p + (1.0 - max_p) * (avg - max) / max
        } else {
            self.count = 0;
            return true;
        };
        self.count += 1;
        // Count-based spacing: p_a = p_b / (1 − count · p_b), so actions are spread out
        // roughly uniformly rather than clustered.
        let denom = 1.0 - self.count as f64 * pb;
        let pa = if denom <= 0.0 {
            1.0
        } else {
            (pb / denom).min(1.0)
        };
        if self.rng.random::<f64>() < pa {
            self.count = 0;
            true
        } else {
            false
        }
    }
}

impl Discipline for Red {
    const NAME: &'static str = "red";
    const ABOUT: &'static str =
        "RED: EWMA average, linear ramp, count spacing, gentle mode, mark or drop";
    type Config = RedConfig;
    fn build(cfg: &RedConfig, cx: &BuildCx<'_>) -> Self {
        Self::new(cfg.clone(), cx.rng.stream("red", cx.port))
    }
    fn validate(cfg: &RedConfig) -> Result<(), String> {
        cfg.validate()
    }
}

impl QueueDisc for Red {
    fn enqueue(&mut self, pkt: PacketId, cx: &mut QdiscCx<'_>) -> Verdict {
        self.update_avg(cx);
        let size = u32::from(cx.pool.get(pkt).wire_bytes);
        let verdict = if !self.fifo.fits(self.spec.buffer, size) {
            Verdict::Drop(DropReason::Overflow)
        } else if self.congested() && !(self.spec.ecn && cx.mark_ce(pkt)) {
            Verdict::Drop(DropReason::Aqm)
        } else {
            self.fifo.push(pkt, size);
            return Verdict::Accept;
        };
        if self.fifo.is_empty() {
            // The arrival was refused and the queue is still empty: the idle period goes
            // on, and the next arrival must see the average aged over all of it. Without
            // this, a queue whose average is above max_th drops every lone retransmission
            // forever, because only arrivals (at w_q each) would lower the average.
            self.idle_since = Some(cx.now);
        }
        verdict
    }
    fn dequeue(&mut self, cx: &mut QdiscCx<'_>) -> Option<PacketId> {
        let p = self.fifo.pop()?;
        if self.fifo.is_empty() {
            self.idle_since = Some(cx.now);
        }
        Some(p)
    }
    fn backlog_bytes(&self) -> u64 {
        self.fifo.bytes()
    }
    fn backlog_pkts(&self) -> u32 {
        self.fifo.len()
    }
    fn is_fifo(&self) -> bool {
        true // dequeue only notes, at the start time the port passes, that the queue empties
    }
    fn port_keeps_order(&mut self) {
        self.fifo.count_only();
    }
    #[inline]
    fn depart(&mut self, wire_bytes: u32, cx: &mut QdiscCx<'_>) {
        let taken = self.fifo.take(wire_bytes);
        debug_assert!(taken, "FIFO discipline lost a packet");
        if self.fifo.is_empty() {
            self.idle_since = Some(cx.now);
        }
    }
}

#[cfg(test)]
mod tests {
    use dcsim_engine::RngTree;
    use proptest::prelude::*;

    use super::super::EcnThreshold;
    use super::*;
    use crate::testkit::QdiscDriver;
    use crate::{Class, Ecn};

    /// A refused arrival to an empty queue keeps the queue idle: after a long enough idle
    /// period the average has decayed and a lone packet passes (regression: a RED port
    /// above max_th used to drop every retransmission of a timed-out flow forever).
    #[test]
    fn red_average_keeps_decaying_while_refused_arrivals_leave_the_queue_empty() {
        let spec = RedConfig {
            weight: 0.002,
            ecn: false,
            ..RedConfig::default()
        };
        let mut q = Red::new(spec, RngTree::new(1).stream("red", 0));
        q.avg = 50.0; // far above max_th = 15 packets
        let mut d = QdiscDriver::new();
        d.now = Time(1_000_000); // 1 us later: still congested
        assert!(matches!(
            d.offer(&mut q, 1000, Class::Data, Ecn::NotEct),
            Verdict::Drop(_)
        ));
        // 1 ms of idleness at 10 Gb/s is m = 1250 small packets: avg x 0.998^1250 = avg x 0.08.
        d.now = Time(1_001_000_000);
        assert_eq!(
            d.offer(&mut q, 1000, Class::Data, Ecn::NotEct),
            Verdict::Accept
        );
        assert!(q.avg() < 5.0, "avg {}", q.avg());
    }

    #[test]
    fn red_below_min_th_never_drops() {
        let spec = RedConfig {
            weight: 1.0,
            ecn: false,
            ..RedConfig::default()
        };
        let mut q = Red::new(spec, RngTree::new(1).stream("red", 0));
        let mut d = QdiscDriver::new();
        for _ in 0..1000 {
            // Keep the queue at 4 packets (< min_th = 5).
            while q.backlog_pkts() < 4 {
                assert_eq!(
                    d.offer(&mut q, 1000, Class::Data, Ecn::NotEct),
                    Verdict::Accept
                );
            }
            let p = d.take(&mut q).unwrap();
            d.pool.free(p);
        }
        assert_eq!(d.dropped, 0);
    }

    /// With the average held at a fixed point in the ramp, the fraction of arrivals that are
    /// marked matches FJ93's count spacing: the gap X between actions (in arrivals) has
    /// P(X > n) = (1 − (n+1)·p_b) / (1 − p_b), so the rate is 1 / Σₙ P(X > n) (≈ 2·p_b, the
    /// uniform-gap result of the paper).
    #[test]
    fn red_mark_rate_matches_linear_ramp_with_count_spacing() {
        for target in [6.0_f64, 10.0, 14.0] {
            let spec = RedConfig {
                weight: 1.0,
                max_p: 0.1,
                ..RedConfig::default()
            };
            let mut q = Red::new(spec, RngTree::new(2).stream("red", target as u64));
            let mut d = QdiscDriver::new();
            let n = 200_000;
            let pb = 0.1 * (target - 5.0) / 10.0;
            for _ in 0..n {
                while f64::from(q.backlog_pkts()) < target {
                    let p = d.pool.alloc(crate::Packet {
                        wire_bytes: 1000,
                        ..Default::default()
                    });
                    q.fifo.push(p, 1000);
                }
                d.offer(&mut q, 1000, Class::Data, Ecn::Ect);
                let p = d.take(&mut q).unwrap();
                d.pool.free(p);
            }
            let rate = d.marks as f64 / f64::from(n);
            let mean_gap: f64 = (0..)
                .map(|n| (1.0 - f64::from(n + 1) * pb) / (1.0 - pb))
                .take_while(|&p| p > 0.0)
                .sum();
            let expect = 1.0 / mean_gap;
            assert!(
                (rate - expect).abs() < 0.05 * expect + 0.002,
                "target {target}: rate {rate}, expected {expect}"
            );
        }
    }

    proptest! {
        /// Differential: RED with w_q = 1, min_th = max_th = K and max_p = 1 marks exactly the
        /// packets that EcnThreshold(K) marks.
        #[test]
        fn red_dctcp_config_marks_like_ecn_threshold(
            ops in proptest::collection::vec((any::<bool>(), 64u32..1600), 1..500), k in 1u64..20
        ) {
            let mut red = Red::new(RedConfig::dctcp_like(Amount::Packets(30), Amount::Packets(k)), RngTree::new(3).stream("red", 0));
            let mut ecn = EcnThreshold::new(Amount::Packets(30), Amount::Packets(k));
            let (mut d1, mut d2) = (QdiscDriver::new(), QdiscDriver::new());
            for (arrive, size) in ops {
                if arrive {
                    let v1 = d1.offer(&mut red, size, Class::Data, Ecn::Ect);
                    let v2 = d2.offer(&mut ecn, size, Class::Data, Ecn::Ect);
                    prop_assert_eq!(v1, v2);
                } else {
                    let a = d1.take(&mut red).map(|p| { let e = d1.ecn_of(p); d1.pool.free(p); e });
                    let b = d2.take(&mut ecn).map(|p| { let e = d2.ecn_of(p); d2.pool.free(p); e });
                    prop_assert_eq!(a, b);
                }
                prop_assert_eq!(d1.marks, d2.marks);
            }
        }
    }
}
