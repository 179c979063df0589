//! Pulser's Explicit Incast Notification (EIN; Almasi, Rezaei, Chaudhry, Vamanan, "Pulser:
//! Fast Congestion Response using Explicit Incast Notifications for Datacenter Networks"):
//! a port that sees its queue grow steeply, as it does when many senders answer one request
//! at once, tells the senders at once with a bit in the departing data packets, long before
//! DCTCP's per-window ECN reaction has cut their windows.
//!
//! At every dequeue the port measures how fast its queue grows and averages over the last N
//! dequeues. Above a threshold (a fraction of the line rate) it sets EIN on the departing
//! data packet and enters the incast state; in that state it keeps marking while the queue
//! is above a high watermark.
//!
//! The paper's Algorithm 1 and its prose differ, and each difference is a parameter
//! (docs/protocols/pulser.md):
//!
//! - `gradient`: the printed algorithm takes each sample as the queue's change since the
//!   previous dequeue over the time since it, and averages N samples unweighted
//!   (`"printed"`). On a busy port that time is the previous packet's transmission, so
//!   with mixed sizes (ACKs in the same FIFO) a flat queue averages well below zero: a
//!   small packet leaving after a large one is a large negative sample over a short time.
//!   The prose describes a rate over time ("building at the rate of 0.25 x LineRate for the
//!   past 50 samples on average"): the change over the last N dequeues divided by their
//!   elapsed time (`"time-weighted"`, the default), which is zero on a flat queue whatever
//!   the sizes, and the queue's real growth rate in an incast.
//! - `count`: the queue in bytes (default) or packets (ns-3's queues, which the paper's
//!   simulations used, may count packets); in packets the threshold is in full frames per
//!   second.
//! - `hysteresis`: the printed algorithm clears its "EIN sent before" flag only when it is
//!   already clear, so after the first incast a port marks whenever its queue is above the
//!   watermark (`"printed"`); the default is the stated intent (`"stated"`): the state ends
//!   at the first departure with the queue at or below the watermark and the average under
//!   the threshold.

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
    /// How the growth is measured: `"time-weighted"` (the change over the last N dequeues
    /// over their elapsed time; default) or `"printed"` (Algorithm 1: N per-dequeue
    /// gradients averaged unweighted).
    pub gradient: Gradient,
    /// What the queue is counted in: `"bytes"` (default) or `"packets"`.
    pub count: QueueCount,
    /// When the incast state ends: `"stated"` (default) or `"printed"` (Algorithm 1's flag,
    /// never cleared once set).
    pub hysteresis: Hysteresis,
    /// The discipline that holds the packets (default: DCTCP marking, K = 65 packets, 250
    /// packets of buffer).
    pub inner: Box<QdiscSpec>,
}

/// How an EIN port ([`EinPort`]) measures its queue's growth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Gradient {
    /// The queue's change over the last N dequeues divided by the time they took.
    #[default]
    TimeWeighted,
    /// Algorithm 1 as printed: per-dequeue gradients, N of them averaged unweighted.
    Printed,
}

/// What an EIN port counts its queue in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueCount {
    /// Wire bytes; the threshold is a fraction of the line rate in bytes per second.
    #[default]
    Bytes,
    /// Packets; the threshold is a fraction of the line rate in full frames per second.
    Packets,
}

/// When an EIN port's incast state ends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hysteresis {
    /// At the first departure that leaves the queue at or below the watermark with the
    /// average under the threshold (the paper's stated intent).
    #[default]
    Stated,
    /// Algorithm 1 as printed: once a port has signalled, it signals whenever its queue is
    /// above the watermark.
    Printed,
}

impl Default for EinConfig {
    fn default() -> Self {
        Self {
            samples: 50,
            threshold: 0.25,
            high_watermark: Amount::Packets(130),
            gradient: Gradient::default(),
            count: QueueCount::default(),
            hysteresis: Hysteresis::default(),
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
    gradient: Gradient,
    count: QueueCount,
    hysteresis: Hysteresis,
    /// `"printed"`: the last N gradients, per second, in a ring, and their sum.
    gradients: Box<[f64]>,
    sum: f64,
    /// `"time-weighted"`: the queue and time at the last N + 1 dequeues, in a ring.
    history: Box<[(f64, Time)]>,
    /// Next slot of the ring in use, and how many slots are filled.
    next: usize,
    filled: usize,
    threshold: f64,
    watermark: Amount,
    /// Queue and time at the previous dequeue.
    prev: Option<(f64, Time)>,
    incast: bool,
    /// Whether the port has ever signalled (`hysteresis = "printed"`).
    signalled: bool,
    /// Since when the port is in the incast state.
    incast_since: Option<Time>,
    stats: EinStats,
}

/// What an EIN port did over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EinStats {
    /// Data packets that left with EIN set.
    pub notified: u64,
    /// Times the port entered the incast state.
    pub episodes: u64,
    /// Time spent in the incast state, up to the last dequeue.
    pub incast_time: dcsim_engine::Dur,
}

impl EinPort {
    /// EIN over `inner` on a link of `line` rate.
    pub fn new(cfg: &EinConfig, inner: Qdisc, line: Rate) -> Self {
        let n = cfg.samples as usize;
        let per_second = line.bps() as f64 / 8.0;
        let threshold = cfg.threshold
            * match cfg.count {
                QueueCount::Bytes => per_second,
                QueueCount::Packets => per_second / f64::from(crate::wire::MAX_WIRE_BYTES),
            };
        let printed = cfg.gradient == Gradient::Printed;
        Self {
            inner,
            gradient: cfg.gradient,
            count: cfg.count,
            hysteresis: cfg.hysteresis,
            gradients: vec![0.0; if printed { n } else { 0 }].into_boxed_slice(),
            sum: 0.0,
            history: vec![(0.0, Time::ZERO); if printed { 0 } else { n + 1 }].into_boxed_slice(),
            next: 0,
            filled: 0,
            threshold,
            watermark: cfg.high_watermark,
            prev: None,
            incast: false,
            signalled: false,
            incast_since: None,
            stats: EinStats::default(),
        }
    }

    /// Data packets that left with EIN set.
    pub fn notified(&self) -> u64 {
        self.stats.notified
    }

    /// What the port did so far.
    pub fn stats(&self) -> EinStats {
        self.stats
    }

    /// Whether the port is in the incast state.
    pub fn in_incast(&self) -> bool {
        self.incast
    }

    /// The growth rate the port compares with its threshold, per second (bytes or
    /// packets); 0 before the second dequeue.
    pub fn average_gradient(&self) -> f64 {
        match self.gradient {
            Gradient::Printed if self.filled > 0 => self.sum / self.filled as f64,
            Gradient::Printed => 0.0,
            Gradient::TimeWeighted => {
                let n = self.history.len();
                if self.filled < 2 {
                    return 0.0;
                }
                let last = self.history[(self.next + n - 1) % n];
                let first = self.history[(self.next + n - self.filled) % n];
                if last.1 > first.1 {
                    (last.0 - first.0) / (last.1 - first.1).as_secs_f64()
                } else {
                    0.0
                }
            }
        }
    }

    /// Records the queue after a dequeue and decides whether the packet leaving now
    /// carries EIN.
    fn decide(&mut self, now: Time, queue_bytes: u64, queue_pkts: u32) -> bool {
        let q = match self.count {
            QueueCount::Bytes => queue_bytes as f64,
            QueueCount::Packets => f64::from(queue_pkts),
        };
        match self.gradient {
            Gradient::Printed => {
                if let Some((pq, t)) = self.prev
                    && now > t
                {
                    let g = (q - pq) / (now - t).as_secs_f64();
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
            }
            Gradient::TimeWeighted => {
                let n = self.history.len();
                self.history[self.next] = (q, now);
                self.next = (self.next + 1) % n;
                self.filled = (self.filled + 1).min(n);
            }
        }
        self.prev = Some((q, now));
        let above = match self.watermark {
            Amount::Bytes(b) => queue_bytes > b,
            Amount::Packets(n) => u64::from(queue_pkts) > n,
        };
        let was = self.incast;
        self.incast = if self.average_gradient() > self.threshold {
            true
        } else {
            match self.hysteresis {
                Hysteresis::Stated => self.incast && above,
                Hysteresis::Printed => self.signalled && above,
            }
        };
        self.signalled |= self.incast;
        match (was, self.incast) {
            (false, true) => {
                self.stats.episodes += 1;
                self.incast_since = Some(now);
            }
            (true, _) => {
                let since = self.incast_since.unwrap_or(now);
                self.stats.incast_time += now.saturating_since(since);
                self.incast_since = self.incast.then_some(now);
            }
            (false, false) => {}
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
                self.stats.notified += 1;
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
    use dcsim_engine::{Dur, RngTree};

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
        assert!(q.average_gradient() < q.threshold);
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

    /// Drives `q` as a busy 10 Gb/s port: `arrivals` (time, wire bytes, class) in time
    /// order; each departure takes its own packet's transmission time, as on a link.
    /// Returns, per departure, whether it carried EIN, and the port's measured growth then
    /// as a fraction of the line rate (bytes or packets per second alike).
    fn busy(q: &mut EinPort, arrivals: &[(Time, u32, Class)]) -> Vec<(bool, f64)> {
        let line = Rate::from_gbps(10);
        let per_s = match q.count {
            QueueCount::Bytes => line.bps() as f64 / 8.0,
            QueueCount::Packets => line.bps() as f64 / 8.0 / 1538.0,
        };
        let mut d = QdiscDriver::new();
        let (mut i, mut free, mut out) = (0, Time::ZERO, Vec::new());
        while i < arrivals.len() || q.backlog_pkts() > 0 {
            if q.backlog_pkts() == 0 {
                free = free.max(arrivals[i].0);
            }
            while i < arrivals.len() && arrivals[i].0 <= free {
                let (t, size, class) = arrivals[i];
                d.now = t;
                d.offer(q, size, class, Ecn::Ect);
                i += 1;
            }
            d.now = free;
            if let Some(p) = d.take(q) {
                let size = u32::from(d.pool.get(p).wire_bytes);
                out.push((d.pool.get(p).ip.ein(), q.average_gradient() / per_s));
                d.pool.free(p);
                free += line.tx_time(u64::from(size));
            }
        }
        out
    }

    /// A stream at `load` times the 10 Gb/s line rate from `start` for `count` packets,
    /// every `ack_every`-th an 84-byte ACK (0: none), the rest 1538-byte data frames.
    fn stream(start: Time, load: f64, count: usize, ack_every: usize) -> Vec<(Time, u32, Class)> {
        let line = Rate::from_gbps(10);
        let mut t = start;
        (0..count)
            .map(|k| {
                let (size, class) = if ack_every > 0 && k % ack_every == 0 {
                    (84u32, Class::Control)
                } else {
                    (1538, Class::Data)
                };
                let at = t;
                t += line.tx_time(u64::from(size)).mul_f64(1.0 / load);
                (at, size, class)
            })
            .collect()
    }

    fn merged(
        mut a: Vec<(Time, u32, Class)>,
        b: Vec<(Time, u32, Class)>,
    ) -> Vec<(Time, u32, Class)> {
        a.extend(b);
        a.sort_by_key(|x| x.0);
        a
    }

    fn port(gradient: Gradient, count: QueueCount) -> EinPort {
        let cfg = EinConfig {
            gradient,
            count,
            ..EinConfig::default()
        };
        let line = Rate::from_gbps(10);
        EinPort::new(&cfg, cfg.inner.build(&RngTree::new(0), 0, line), line)
    }

    /// With ACKs in the FIFO (3, 10 and 25 % of packets) Algorithm 1 as printed measures
    /// a flat queue as shrinking fast and a real incast (the queue growing at half the line
    /// rate) as shrinking too, so it never signals; the time-weighted reading measures the
    /// flat queue as flat and the incast as the incast, and signals it. (Measured: printed
    /// -0.53, -1.73 and -4.33 x line rate on the flat queue.)
    #[test]
    fn with_acks_in_the_queue_only_the_time_weighted_gradient_sees_an_incast() {
        let line_us = |k: u64| Time::ZERO + Dur::from_us(k);
        for ack_every in [33, 10, 4] {
            // A standing queue of 60 frames (its arrival at once is signalled: the first 50
            // departures are left out), then a stream at the line rate.
            let flat = merged(
                stream(Time::ZERO, 1e6, 60, 0),
                stream(Time::ZERO, 1.0, 3000, ack_every),
            );
            let incast = merged(flat.clone(), stream(line_us(200), 0.5, 400, 0));
            let slow = merged(flat.clone(), stream(line_us(200), 0.15, 400, 0));
            let growth = |out: &[(bool, f64)]| {
                let w = &out[100..1000];
                w.iter().map(|x| x.1).sum::<f64>() / w.len() as f64
            };
            let marks = |out: &[(bool, f64)]| out[60..].iter().filter(|x| x.0).count();

            let mut printed = port(Gradient::Printed, QueueCount::Bytes);
            let out = busy(&mut printed, &flat);
            assert!(growth(&out) < -0.2, "1/{ack_every}: {}", growth(&out));
            assert_eq!(marks(&out), 0, "1/{ack_every}");
            let mut printed = port(Gradient::Printed, QueueCount::Bytes);
            assert_eq!(marks(&busy(&mut printed, &incast)), 0, "1/{ack_every}");

            let mut tw = port(Gradient::TimeWeighted, QueueCount::Bytes);
            let out = busy(&mut tw, &flat);
            assert!(growth(&out).abs() < 0.02, "1/{ack_every}: {}", growth(&out));
            assert_eq!(marks(&out), 0, "1/{ack_every}");
            let mut tw = port(Gradient::TimeWeighted, QueueCount::Bytes);
            let out = busy(&mut tw, &incast);
            assert!(marks(&out) > 300, "1/{ack_every}: {}", marks(&out));
            // The standing queue, then the incast (with 25 % ACKs it dips under the
            // threshold and the watermark once and is signalled again).
            assert!(
                (2..=3).contains(&tw.stats().episodes),
                "1/{ack_every}: {:?}",
                tw.stats()
            );
            assert!(
                tw.stats().incast_time > Dur::from_us(300),
                "{:?}",
                tw.stats()
            );
            // A queue growing at 0.15 x line rate is no incast.
            let mut tw = port(Gradient::TimeWeighted, QueueCount::Bytes);
            assert_eq!(marks(&busy(&mut tw, &slow)), 0, "1/{ack_every}");
        }
        // Counted in packets, the time-weighted reading sees the incast too.
        let mut pk = port(Gradient::TimeWeighted, QueueCount::Packets);
        let incast = merged(
            stream(Time::ZERO, 1.0, 3000, 10),
            stream(line_us(200), 0.5, 400, 0),
        );
        assert!(busy(&mut pk, &incast).iter().filter(|x| x.0).count() > 300);
        assert_eq!(pk.stats().episodes, 1);
    }

    /// Algorithm 1's hysteresis as printed never clears its flag: after one incast, a
    /// queue that later rises slowly above the watermark is signalled; the stated intent
    /// signals only a steep rise.
    #[test]
    fn the_printed_hysteresis_signals_any_queue_above_the_watermark_after_an_incast() {
        let slow: Vec<u32> = (0..800).map(|i| if i % 8 == 0 { 2 } else { 1 }).collect();
        for (h, want) in [(Hysteresis::Stated, false), (Hysteresis::Printed, true)] {
            let cfg = EinConfig {
                hysteresis: h,
                ..EinConfig::default()
            };
            let line = Rate::from_gbps(10);
            let mut q = EinPort::new(&cfg, cfg.inner.build(&RngTree::new(0), 0, line), line);
            let mut d = QdiscDriver::new();
            run(&mut q, &mut d, &[2; 200], Class::Data);
            run(&mut q, &mut d, &[0; 150], Class::Data);
            assert!(!q.in_incast(), "{h:?}");
            let later = run(&mut q, &mut d, &slow, Class::Data);
            assert_eq!(q.backlog_pkts(), 150);
            assert_eq!(later.iter().any(|e| e.0 && e.1 > 130), want, "{h:?}");
            assert!(later.iter().all(|e| !e.0 || e.1 > 130), "{h:?}");
        }
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
