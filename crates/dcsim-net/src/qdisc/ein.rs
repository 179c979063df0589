//! Pulser's Explicit Incast Notification (EIN; Almasi, Rezaei, Chaudhry, Vamanan, "Pulser:
//! Fast Congestion Response using Explicit Incast Notifications for Datacenter Networks"):
//! a port that sees its queue grow steeply, as it does when many senders answer one request
//! at once, tells the senders at once with a bit in the departing data packets, long before
//! DCTCP's per-window ECN reaction has cut their windows.
//!
//! At every dequeue the port takes the gradient of its queue since the previous dequeue
//! (bytes per second) and averages the last N gradients. Above a threshold (a fraction of
//! the line rate) it sets EIN on the departing data packet and stays in the incast state;
//! in that state it keeps marking while the queue is above a high watermark, and leaves the
//! state once the queue is below it with the average back under the threshold. The paper's
//! Algorithm 1, read literally, clears its state flag only when it is already clear (so
//! marking would continue as long as the queue stays above the watermark, forever after the
//! first incast); we implement its stated intent (see docs/protocols/pulser.md).

use dcsim_engine::{Rate, Time};
use serde::{Deserialize, Serialize};

use super::{
    Amount, BuildCx, Discipline, EcnConfig, PortFeatures, Qdisc, QdiscCx, QdiscSpec, QueueDisc,
    Verdict, nonzero,
};
use crate::{Class, PacketId};

/// EIN parameters (`kind = "ein"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EinConfig {
    /// N: the number of gradients averaged (Pulser: 50).
    pub samples: u32,
    /// The average gradient above which the port signals, as a fraction of the line rate
    /// (Pulser: 0.25, the queue growing at a quarter of the line rate).
    pub threshold: f64,
    /// After a steep rise the port keeps signalling while its queue is above this (the
    /// paper's HighWaterMark, not given: twice DCTCP's K at 10 Gb/s, 130 packets).
    pub high_watermark: Amount,
    /// The discipline that holds the packets (default: DCTCP marking, K = 65 packets, 250
    /// packets of buffer).
    pub inner: Box<QdiscSpec>,
}

impl Default for EinConfig {
    fn default() -> Self {
        Self {
            samples: 50,
            threshold: 0.25,
            high_watermark: Amount::Packets(130),
            inner: Box::new(QdiscSpec::Ecn(EcnConfig {
                buffer: Amount::Packets(250),
                mark_threshold: Amount::Packets(65),
            })),
        }
    }
}

impl EinConfig {
    fn validate(&self) -> Result<(), String> {
        if self.samples == 0 {
            return Err("samples: must be at least 1".into());
        }
        if !(self.threshold.is_finite() && self.threshold > 0.0) {
            return Err(format!(
                "threshold: must be a positive fraction of the line rate, got {}",
                self.threshold
            ));
        }
        nonzero(&self.high_watermark, "high_watermark")?;
        self.inner.validate().map_err(|e| format!("inner.{e}"))
    }
}

/// EIN generation in front of `inner`. Decisions are made at dequeue, so a port with this
/// discipline dequeues by event (it is never a lazy FIFO port).
pub struct EinPort {
    inner: Qdisc,
    /// The last N gradients, bytes per second, in a ring.
    gradients: Box<[f64]>,
    next: usize,
    filled: usize,
    sum: f64,
    threshold_bps: f64,
    watermark: Amount,
    /// Queue (bytes) and time at the previous dequeue.
    prev: Option<(u64, Time)>,
    incast: bool,
    notified: u64,
}

impl EinPort {
    /// EIN over `inner` on a link of `line` rate.
    pub fn new(cfg: &EinConfig, inner: Qdisc, line: Rate) -> Self {
        Self {
            inner,
            gradients: vec![0.0; cfg.samples as usize].into_boxed_slice(),
            next: 0,
            filled: 0,
            sum: 0.0,
            threshold_bps: cfg.threshold * line.bps() as f64 / 8.0,
            watermark: cfg.high_watermark,
            prev: None,
            incast: false,
            notified: 0,
        }
    }

    /// Data packets that left with EIN set.
    pub fn notified(&self) -> u64 {
        self.notified
    }

    /// Whether the port is in the incast state.
    pub fn in_incast(&self) -> bool {
        self.incast
    }

    /// The average of the gradients held, bytes per second (0 before the first).
    pub fn average_gradient(&self) -> f64 {
        if self.filled == 0 {
            0.0
        } else {
            self.sum / self.filled as f64
        }
    }

    /// Records the gradient since the previous dequeue and decides whether the packet
    /// leaving now carries EIN.
    fn decide(&mut self, now: Time, queue_bytes: u64, queue_pkts: u32) -> bool {
        if let Some((q, t)) = self.prev
            && now > t
        {
            let g = (queue_bytes as f64 - q as f64) / (now - t).as_secs_f64();
            let n = self.gradients.len();
            self.sum += g - self.gradients[self.next];
            self.gradients[self.next] = g;
            self.next = (self.next + 1) % n;
            self.filled = (self.filled + 1).min(n);
            if self.next == 0 {
                // Re-add from scratch once per lap so rounding never accumulates.
                self.sum = self.gradients.iter().sum();
            }
        }
        self.prev = Some((queue_bytes, now));
        if self.average_gradient() > self.threshold_bps {
            self.incast = true;
        } else if self.incast {
            self.incast = match self.watermark {
                Amount::Bytes(b) => queue_bytes > b,
                Amount::Packets(n) => u64::from(queue_pkts) > n,
            };
        }
        self.incast
    }
}

impl Discipline for EinPort {
    const NAME: &'static str = "ein";
    const ABOUT: &'static str =
        "Pulser: explicit incast notification when the queue's gradient over N dequeues is steep";
    type Config = EinConfig;
    fn build(cfg: &EinConfig, cx: &BuildCx<'_>) -> Self {
        Self::new(cfg, cx.inner(&cfg.inner), cx.line)
    }
    fn validate(cfg: &EinConfig) -> Result<(), String> {
        cfg.validate()
    }
    fn features(cfg: &EinConfig) -> PortFeatures {
        PortFeatures::INCAST_NOTIFICATION | cfg.inner.features()
    }
}

impl QueueDisc for EinPort {
    fn enqueue(&mut self, pkt: PacketId, cx: &mut QdiscCx<'_>) -> Verdict {
        self.inner.enqueue(pkt, cx)
    }
    fn dequeue(&mut self, cx: &mut QdiscCx<'_>) -> Option<PacketId> {
        let pkt = self.inner.dequeue(cx)?;
        let (bytes, pkts) = (self.inner.backlog_bytes(), self.inner.backlog_pkts());
        if self.decide(cx.now, bytes, pkts) {
            let p = cx.pool.get_mut(pkt);
            if p.class == Class::Data {
                p.ip.set_ein();
                self.notified += 1;
            }
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

    fn ein(samples: u32) -> EinPort {
        let cfg = EinConfig {
            samples,
            ..EinConfig::default()
        };
        let line = Rate::from_gbps(10);
        EinPort::new(&cfg, cfg.inner.build(&RngTree::new(0), 0, line), line)
    }

    /// Drives `q` as a 10 Gb/s port: at each serialization slot `arrivals[i]` frames of
    /// `class` arrive and one packet leaves; returns, per departure, its EIN bit and the
    /// packets left behind it.
    fn run(
        q: &mut EinPort,
        d: &mut QdiscDriver,
        arrivals: &[u32],
        class: Class,
    ) -> Vec<(bool, u32)> {
        let slot = Rate::from_gbps(10).tx_time(1538);
        let mut out = Vec::new();
        for &a in arrivals {
            for _ in 0..a {
                d.offer(q, 1538, class, Ecn::Ect);
            }
            if let Some(p) = d.take(q) {
                out.push((d.pool.get(p).ip.ein(), q.backlog_pkts()));
                d.pool.free(p);
            }
            d.now += slot;
        }
        out
    }

    /// A queue that grows by a frame per slot (its gradient is the line rate, four times the
    /// threshold) is signalled from the first gradient on; one that grows by a frame every
    /// eight slots (an eighth of the line rate, averaged) never is, however long it grows.
    #[test]
    fn a_steep_rise_is_signalled_and_a_slow_one_is_not() {
        let mut q = ein(50);
        let mut d = QdiscDriver::new();
        let steep = run(&mut q, &mut d, &[2; 60], Class::Data);
        assert!(!steep[0].0, "no gradient before the second dequeue");
        assert!(steep[1..].iter().all(|e| e.0), "{steep:?}");
        let mut q = ein(50);
        let mut d = QdiscDriver::new();
        let slow: Vec<u32> = (0..800).map(|i| if i % 8 == 0 { 2 } else { 1 }).collect();
        assert!(run(&mut q, &mut d, &slow, Class::Data).iter().all(|e| !e.0));
        assert_eq!(q.backlog_pkts(), 100);
        assert_eq!(q.notified(), 0);
    }

    /// After a steep rise the port keeps signalling while its queue is above the high
    /// watermark (130 packets) though it has stopped growing or is draining, and stops at
    /// the first departure that leaves 130 or fewer behind.
    #[test]
    fn hysteresis_holds_above_the_watermark_and_releases_below() {
        let mut q = ein(50);
        let mut d = QdiscDriver::new();
        run(&mut q, &mut d, &[2; 200], Class::Data);
        assert_eq!(q.backlog_pkts(), 200);
        // Flat (one in, one out): the average gradient falls to 0, the queue stays high.
        let flat = run(&mut q, &mut d, &[1; 100], Class::Data);
        assert!(flat.iter().all(|e| e.0), "{flat:?}");
        assert!(q.average_gradient() < q.threshold_bps);
        // Draining at the line rate.
        let drain = run(&mut q, &mut d, &[0; 150], Class::Data);
        for &(marked, left) in &drain {
            assert_eq!(marked, left > 130, "{left} packets left");
        }
        assert!(!q.in_incast());
        // A new steep rise is signalled again once its gradients (+C) outweigh the drain's
        // (−C) in the average over the quarter-rate threshold: 32 of the 50.
        let again = run(&mut q, &mut d, &[2; 40], Class::Data);
        let first = again.iter().position(|e| e.0).expect("signalled");
        assert_eq!(first, 31, "{again:?}");
        assert!(again[first..].iter().all(|e| e.0));
    }

    /// EIN goes on data packets only: control packets leave a steeply growing queue
    /// unmarked.
    #[test]
    fn only_data_packets_are_notified() {
        let mut q = ein(50);
        let mut d = QdiscDriver::new();
        let control = run(&mut q, &mut d, &[2; 20], Class::Control);
        assert!(control.iter().all(|e| !e.0));
        assert!(q.in_incast());
        assert_eq!(q.notified(), 0);
    }
}
