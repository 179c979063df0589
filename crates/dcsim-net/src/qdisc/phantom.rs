//! HULL's phantom queue (Alizadeh et al., "Less is More: Trading a little Bandwidth for
//! Ultra-Low Latency in the Data Center", NSDI 2012): a counter beside the real queue that
//! the departing packets fill and that drains at γ times the line rate; ECN-capable packets
//! are marked while it is above a threshold, so senders react when the link's utilisation
//! exceeds γ, before any real queue forms.

use dcsim_engine::{Rate, Time};
use serde::{Deserialize, Serialize};

use super::{
    Amount, BuildCx, Discipline, DropTailConfig, PortFeatures, Qdisc, QdiscCx, QdiscSpec,
    QueueDisc, Verdict,
};
use crate::PacketId;
use crate::wire::MAX_WIRE_BYTES;

/// Phantom-queue parameters (`kind = "phantom"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PhantomConfig {
    /// γ: the counter drains at γ times the line rate (HULL: 0.95, "PQ950" on 1 Gb/s).
    pub gamma: f64,
    /// Mark ECN-capable packets that leave while the counter holds more than this, before
    /// they are added (HULL's 1 Gb/s testbed: about 1 KB; low confidence).
    pub mark_threshold: Amount,
    /// The discipline that holds the packets (default drop-tail, 250 packets).
    pub inner: Box<QdiscSpec>,
}

impl Default for PhantomConfig {
    fn default() -> Self {
        Self {
            gamma: 0.95,
            mark_threshold: Amount::Bytes(1000),
            inner: Box::new(QdiscSpec::DropTail(DropTailConfig {
                buffer: Amount::Packets(250),
            })),
        }
    }
}

impl PhantomConfig {
    fn validate(&self) -> Result<(), String> {
        if !(self.gamma > 0.0 && self.gamma <= 1.0) {
            return Err(format!("gamma: must be in (0, 1], got {}", self.gamma));
        }
        self.inner.validate().map_err(|e| format!("inner.{e}"))
    }
}

/// A phantom queue in front of `inner`: it holds no packets, only a byte counter.
///
/// Each departing packet adds its wire size; the counter drains continuously at γ·C;
/// a departing ECN-capable packet is CE-marked if the counter, before it is added,
/// exceeds the threshold. Over a FIFO inner discipline the departure time of each
/// accepted packet is known on arrival (the port works the same way), so the counter is
/// advanced and the mark made then, and the port stays a FIFO port; otherwise both happen
/// at dequeue.
pub struct PhantomQueue {
    inner: Qdisc,
    fifo: bool,
    line: Rate,
    /// γ·C in bytes per picosecond.
    drain: f64,
    threshold: f64,
    /// The counter, bytes, as of `last`.
    level: f64,
    last: Time,
    /// FIFO mode: when the transmitter is free again.
    tx_free: Time,
    peak: f64,
}

impl PhantomQueue {
    /// A phantom queue over `inner` on a link of `line` rate.
    pub fn new(cfg: &PhantomConfig, inner: Qdisc, line: Rate) -> Self {
        Self {
            fifo: inner.is_fifo(),
            inner,
            line,
            drain: cfg.gamma * line.bps() as f64 / 8.0 * 1e-12,
            threshold: cfg.mark_threshold.as_bytes(u64::from(MAX_WIRE_BYTES)) as f64,
            level: 0.0,
            last: Time::ZERO,
            tx_free: Time::ZERO,
            peak: 0.0,
        }
    }

    /// The counter at its last update, bytes.
    pub fn level_bytes(&self) -> f64 {
        self.level
    }
    /// The largest value the counter has had, bytes.
    pub fn peak_bytes(&self) -> f64 {
        self.peak
    }

    /// A packet of `size` wire bytes leaves at `t`: drain to `t`, mark it if the counter is
    /// above the threshold (before it, as DCTCP's K is compared with the queue before an
    /// arrival: a counter that holds one frame after every departure would otherwise mark
    /// everything whenever the threshold is below a frame), then add it.
    fn depart(&mut self, t: Time, size: u32, pkt: PacketId, cx: &mut QdiscCx<'_>) {
        let dt = t.saturating_since(self.last).as_ps() as f64;
        self.level = (self.level - self.drain * dt).max(0.0);
        self.last = self.last.max(t);
        if self.level > self.threshold {
            cx.mark_ce(pkt);
        }
        self.level += f64::from(size);
        self.peak = self.peak.max(self.level);
    }
}

impl Discipline for PhantomQueue {
    const NAME: &'static str = "phantom";
    const ABOUT: &'static str =
        "HULL phantom queue: a counter drained at gamma x line rate marks ECN before a queue forms";
    type Config = PhantomConfig;
    fn build(cfg: &PhantomConfig, cx: &BuildCx<'_>) -> Self {
        Self::new(cfg, cx.inner(&cfg.inner), cx.line)
    }
    fn validate(cfg: &PhantomConfig) -> Result<(), String> {
        cfg.validate()
    }
    fn features(cfg: &PhantomConfig) -> PortFeatures {
        PortFeatures::PHANTOM_MARKING | cfg.inner.features()
    }
}

impl QueueDisc for PhantomQueue {
    fn enqueue(&mut self, pkt: PacketId, cx: &mut QdiscCx<'_>) -> Verdict {
        let v = self.inner.enqueue(pkt, cx);
        if self.fifo && v == Verdict::Accept {
            let size = u32::from(cx.pool.get(pkt).wire_bytes);
            let start = self.tx_free.max(cx.now);
            self.tx_free = start + self.line.tx_time(u64::from(size));
            self.depart(start, size, pkt, cx);
        }
        v
    }
    fn dequeue(&mut self, cx: &mut QdiscCx<'_>) -> Option<PacketId> {
        let pkt = self.inner.dequeue(cx)?;
        if !self.fifo {
            let size = u32::from(cx.pool.get(pkt).wire_bytes);
            self.depart(cx.now, size, pkt, cx);
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
    fn is_fifo(&self) -> bool {
        self.fifo
    }
}

#[cfg(test)]
mod tests {
    use dcsim_engine::{Dur, RngTree};

    use super::*;
    use crate::testkit::QdiscDriver;
    use crate::{Class, Ecn};

    fn phantom(gamma: f64, threshold: Amount) -> PhantomQueue {
        let cfg = PhantomConfig {
            gamma,
            mark_threshold: threshold,
            ..PhantomConfig::default()
        };
        let inner = cfg.inner.build(&RngTree::new(0), 0, Rate::from_gbps(10));
        PhantomQueue::new(&cfg, inner, Rate::from_gbps(10))
    }

    /// Offers `n` full frames spaced `gap` apart, taking each out as soon as it could
    /// leave; returns the marks.
    fn stream(q: &mut PhantomQueue, n: u64, gap: Dur) -> (u64, u64) {
        let mut d = QdiscDriver::new();
        for i in 0..n {
            d.now = Time::ZERO + gap * i;
            d.offer(q, 1538, Class::Data, Ecn::Ect);
            let p = d.take(q).expect("the queue holds at most one packet");
            d.pool.free(p);
        }
        (d.marks, q.backlog_pkts().into())
    }

    /// At line rate the real queue stays empty (each frame leaves as the next arrives) while
    /// the phantom counter gains 5 % of each frame (77 B): after 1 KB, 13 frames, every
    /// frame is marked.
    #[test]
    fn phantom_marks_before_real_queue_builds() {
        let mut q = phantom(0.95, Amount::Bytes(1000));
        let gap = Rate::from_gbps(10).tx_time(1538);
        let (marks, backlog) = stream(&mut q, 200, gap);
        assert_eq!(backlog, 0);
        assert!((185..=188).contains(&marks), "{marks} marks");
    }

    /// Below γ of the line rate the counter drains faster than it fills: no marks; and its
    /// drain rate is γ·C: after a 100-frame burst it empties in (bytes − drained)/(γ·C).
    #[test]
    fn phantom_drains_at_gamma_times_line_rate() {
        let mut q = phantom(0.95, Amount::Bytes(1000));
        let slow = Rate::from_gbps(9).tx_time(1538);
        assert_eq!(stream(&mut q, 500, slow).0, 0);
        let mut q = phantom(0.95, Amount::Bytes(u64::MAX));
        let mut d = QdiscDriver::new();
        for _ in 0..100 {
            d.offer(&mut q, 1538, Class::Data, Ecn::Ect);
        }
        // FIFO: departures back to back at 10 Gb/s from t = 0; the counter at the last one.
        let tx = Rate::from_gbps(10).tx_time(1538).as_secs_f64();
        let expect = 1538.0 * 100.0 - 0.95 * 1.25e9 * tx * 99.0;
        assert!(
            (q.level_bytes() - expect).abs() < 1.0,
            "{} vs {expect}",
            q.level_bytes()
        );
    }

    /// Differential: with γ = 1 and an unreachable threshold it is its inner discipline.
    #[test]
    fn phantom_with_gamma_one_and_no_threshold_is_its_inner_queue() {
        let mut q = phantom(1.0, Amount::Bytes(u64::MAX));
        let gap = Rate::from_gbps(10).tx_time(1538) / 2;
        let mut d = QdiscDriver::new();
        let mut inner = crate::qdisc::DropTail::new(Amount::Packets(250));
        let mut e = QdiscDriver::new();
        for i in 0..400u64 {
            d.now = Time::ZERO + gap * i;
            e.now = d.now;
            assert_eq!(
                d.offer(&mut q, 1538, Class::Data, Ecn::Ect),
                e.offer(&mut inner, 1538, Class::Data, Ecn::Ect)
            );
        }
        assert_eq!((d.marks, d.dropped), (0, e.dropped));
        assert_eq!(q.backlog_bytes(), inner.backlog_bytes());
    }
}
