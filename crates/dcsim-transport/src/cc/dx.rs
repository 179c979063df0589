//! DX: latency-based congestion control (Lee, Park, Jang, Moon, Han, "Accurate
//! Latency-based Congestion Feedback for Datacenters", USENIX ATC 2015).
//!
//! Once per window of data (one RTT), DX looks at the queueing delay Q its packets met:
//! with no queueing it adds one segment to the window; otherwise it cuts the window in
//! proportion to Q, `W ← W·(1 − Q/V)`. The normalizer V is chosen so that the cuts of all
//! senders together remove the standing queue ([`Normalizer`]). DX's argument is that Q
//! must be measured to about a microsecond (one 1500 B packet is 1.2 µs at 10 Gb/s), so
//! the measurement is a parameter: exact (the switch queueing of each data packet, carried
//! back in its ACK), RTT-based, or host timestamps with their errors ([`Measurement`]).
//!
//! # Deviations
//! - The paper's exact V (it adds headroom to the drain-in-one-RTT form) was not available
//!   to us; V is a documented, pluggable function, `rtt` (V = T + Q) by default, and the
//!   headroom is our reading: `headroom` segments cut beyond the drain, so that the next
//!   round's +1 of every sender refills the room instead of rebuilding the queue.
//! - Slow start is TCP's until the first ACK that reports queueing; loss and timeouts are
//!   handled as in NewReno.

use dcsim_engine::{Dur, Rng, Time};
use dcsim_net::Telemetry;
use rand::RngExt;
use serde::{Deserialize, Serialize};

use super::{AckSample, CcSetup, CongestionControl, Controller, RenoCore, WindowLimits};
use crate::endpoint::Needs;

/// DX parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DxConfig {
    /// The normalizer V of the decrease (default `rtt`).
    pub normalizer: Normalizer,
    /// Which delay of a window's packets counts as that window's Q (default `mean`).
    pub estimator: Estimator,
    /// How the queueing delay is measured (default `exact`).
    pub measurement: Measurement,
    /// Delays up to this count as no queueing (default 0: any queueing is congestion).
    pub threshold: Dur,
    /// Segments each cut removes beyond the drain-in-one-RTT share (default 0), so that
    /// the next round's one-segment increases do not rebuild the queue at once.
    pub headroom: u32,
}

impl Default for DxConfig {
    fn default() -> Self {
        Self {
            normalizer: Normalizer::Rtt,
            estimator: Estimator::Mean,
            measurement: Measurement::Exact,
            threshold: Dur::ZERO,
            headroom: 0,
        }
    }
}

/// The normalizer V of DX's decrease `W ← W·(1 − Q/V)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Normalizer {
    /// V = T + Q (T the base RTT): N equal senders keep C·(T + Q) in flight, so if each
    /// cuts W·Q/(T + Q) they remove the C·Q bytes of standing queue in one RTT
    /// (our derivation of the paper's rule).
    Rtt,
    /// V = T: the same cut measured against the base RTT alone (more aggressive).
    BaseRtt,
    /// A fixed V.
    Fixed(Dur),
}

/// Which queueing delay of a window's ACKs DX acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Estimator {
    /// The mean over the window.
    Mean,
    /// The smallest: the standing queue.
    Min,
    /// The largest.
    Max,
    /// The last ACK's.
    Last,
}

/// How DX measures queueing delay.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Measurement {
    /// The time the data packet waited in switch queues, measured by the network and
    /// echoed in its ACK: the accuracy DX's NIC timestamps aim at.
    Exact,
    /// The RTT sample minus the smallest RTT seen, from the sender's own clock: no help
    /// from the network, and the ACK path's and the NIC's queueing count too.
    Rtt,
    /// The exact delay as host timestamps would report it, with their errors
    /// ([`Timestamps`]): the one-way delay minus the smallest one seen.
    Timestamps(Timestamps),
}

/// Errors of host timestamps, each with the calibration that removes it (DX §3: NIC
/// timestamps remove stack delay, link-rate calibration undoes interrupt batching).
/// Every default is zero (no error); the sensitivity experiment sets them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Timestamps {
    /// Mean of the host-stack delay between a packet and its software timestamp, at the
    /// sender and at the receiver (exponentially distributed).
    pub stack_delay: Dur,
    /// Timestamps taken by the NICs: no stack delay.
    pub nic_timestamps: bool,
    /// Receive interrupt coalescing: a packet is timestamped at the end of the interval in
    /// which it arrived (0: every packet on its own interrupt).
    pub batch_interval: Dur,
    /// Undo the batching (DX calibrates batched timestamps by the link's transmission
    /// time).
    pub batch_calibration: bool,
    /// Offset of the receiver's clock from the sender's (cancels in the base delay).
    pub clock_offset: Dur,
    /// Drift of the receiver's clock against the sender's, in parts per million.
    pub clock_drift_ppm: f64,
    /// Remove the drift (clocks kept in sync).
    pub drift_calibration: bool,
    /// Tick of each end's timestamp clock (0: continuous): each end reads its clock
    /// truncated to a tick, so a one-way delay is off by the difference of two
    /// truncations, anywhere in (−tick, +tick). The residual error of hardware timestamps.
    pub resolution: Dur,
}

impl DxConfig {
    fn validate(&self) -> Result<(), String> {
        if let Normalizer::Fixed(v) = self.normalizer
            && v == Dur::ZERO
        {
            return Err("normalizer: a fixed V must be greater than zero".into());
        }
        if let Measurement::Timestamps(t) = &self.measurement
            && !(t.clock_drift_ppm.is_finite() && t.clock_drift_ppm.abs() < 1e6)
        {
            return Err(format!(
                "measurement.clock_drift_ppm: must be a finite number of parts per million, got {}",
                t.clock_drift_ppm
            ));
        }
        Ok(())
    }
}

/// DX: additive increase at zero queueing delay, a cut proportional to it otherwise.
pub struct Dx {
    core: RenoCore,
    cfg: DxConfig,
    rng: Rng,
    /// Delays seen in the current window, in seconds: sum, count, min, max, last.
    sum: f64,
    count: u64,
    min: f64,
    max: f64,
    last: f64,
    /// Smallest measured one-way delay (timestamp mode) or RTT (RTT mode), seconds.
    base: f64,
    /// The Q of the last window, seconds.
    q: f64,
    /// Windows that met queueing.
    congested_rounds: u64,
}

impl Dx {
    /// A DX controller.
    pub fn new(cfg: &DxConfig, limits: WindowLimits, rng: Rng) -> Self {
        Self {
            core: RenoCore::new(limits),
            cfg: cfg.clone(),
            rng,
            sum: 0.0,
            count: 0,
            min: f64::INFINITY,
            max: 0.0,
            last: 0.0,
            base: f64::INFINITY,
            q: 0.0,
            congested_rounds: 0,
        }
    }

    /// The queueing delay of one ACK, as measured, in seconds (`None` without a sample).
    fn measure(&mut self, a: &AckSample) -> Option<f64> {
        match &self.cfg.measurement {
            Measurement::Exact => a.queue_delay.map(Dur::as_secs_f64),
            Measurement::Rtt => {
                let rtt = a.rtt?.as_secs_f64();
                self.base = self.base.min(rtt);
                Some(rtt - self.base)
            }
            Measurement::Timestamps(t) => {
                let q = a.queue_delay?.as_secs_f64();
                let arrival = a.data_arrival.unwrap_or(a.now);
                let mut err = 0.0;
                if !t.nic_timestamps && t.stack_delay > Dur::ZERO {
                    let mean = t.stack_delay.as_secs_f64();
                    err += exponential(&mut self.rng, mean) + exponential(&mut self.rng, mean);
                }
                if !t.batch_calibration && t.batch_interval > Dur::ZERO {
                    let b = t.batch_interval.as_ps();
                    let at = arrival.as_ps();
                    err += Dur::from_ps(at.div_ceil(b) * b - at).as_secs_f64();
                }
                if t.resolution > Dur::ZERO {
                    let tick = t.resolution.as_secs_f64();
                    let (sent, read): (f64, f64) = (
                        self.rng.random_range(0.0..1.0),
                        self.rng.random_range(0.0..1.0),
                    );
                    err += (sent - read) * tick;
                }
                err += t.clock_offset.as_secs_f64();
                if !t.drift_calibration {
                    err += t.clock_drift_ppm
                        * 1e-6
                        * arrival.saturating_since(Time::ZERO).as_secs_f64();
                }
                let measured = q + err;
                self.base = self.base.min(measured);
                Some(measured - self.base)
            }
        }
    }

    /// The window's Q by the estimator, seconds.
    fn round_delay(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        match self.cfg.estimator {
            Estimator::Mean => self.sum / self.count as f64,
            Estimator::Min => self.min,
            Estimator::Max => self.max,
            Estimator::Last => self.last,
        }
    }

    /// V for a queueing delay `q` and base RTT `t`, seconds.
    fn normalizer(&self, q: f64, t: f64) -> f64 {
        match self.cfg.normalizer {
            Normalizer::Rtt => t + q,
            Normalizer::BaseRtt => t,
            Normalizer::Fixed(v) => v.as_secs_f64(),
        }
    }

    /// The queueing delay DX acted on in the last window.
    pub fn queue_delay(&self) -> Dur {
        Dur::from_secs_f64(self.q)
    }
}

/// An exponential sample of mean `mean` (inverse transform; `libm` for portability).
fn exponential(rng: &mut Rng, mean: f64) -> f64 {
    let u: f64 = rng.random_range(f64::MIN_POSITIVE..1.0);
    -libm::log(u) * mean
}

impl Controller for Dx {
    const NAME: &'static str = "dx";
    const ABOUT: &'static str =
        "DX: +1 segment per RTT at zero queueing delay, else cwnd *= 1 - Q/V (latency feedback)";
    type Config = DxConfig;
    fn build(cfg: &DxConfig, setup: CcSetup) -> Self {
        Self::new(cfg, setup.limits, setup.rng)
    }
    fn validate(cfg: &DxConfig) -> Result<(), String> {
        cfg.validate()
    }
    fn needs(cfg: &DxConfig) -> Needs {
        let telemetry = match cfg.measurement {
            Measurement::Rtt => Telemetry::empty(),
            Measurement::Exact | Measurement::Timestamps(_) => Telemetry::QUEUE_DELAY,
        };
        Needs {
            telemetry,
            ..Needs::default()
        }
    }
}

impl CongestionControl for Dx {
    fn cwnd_bytes(&self) -> u64 {
        self.core.cwnd
    }
    fn ssthresh_bytes(&self) -> u64 {
        self.core.ssthresh
    }

    fn on_ack(&mut self, a: &AckSample) {
        let threshold = self.cfg.threshold.as_secs_f64();
        let mut slow_start = self.core.cwnd < self.core.ssthresh;
        if let Some(q) = self.measure(a) {
            self.sum += q;
            self.count += 1;
            self.min = self.min.min(q);
            self.max = self.max.max(q);
            self.last = q;
            if slow_start && q > threshold {
                // The first queueing delay ends slow start (the window of this round is
                // then cut by the rule below).
                self.core.ssthresh = self.core.cwnd;
                slow_start = false;
            }
        }
        if slow_start {
            self.core.grow(a);
        }
        if !a.round_start {
            return;
        }
        let q = self.round_delay();
        self.q = q;
        self.sum = 0.0;
        self.count = 0;
        self.min = f64::INFINITY;
        self.max = 0.0;
        if a.in_recovery {
            return;
        }
        if q > threshold {
            // DX: W ← W·(1 − Q/V), once per RTT.
            self.congested_rounds += 1;
            let t = a.min_rtt.as_secs_f64();
            let v = self.normalizer(q, t);
            let w = self.core.cwnd as f64 * (1.0 - q / v).max(0.0);
            let room = u64::from(self.cfg.headroom) * a.mss;
            self.core.reduce_to((w as u64).saturating_sub(room));
        } else if !slow_start && a.cwnd_limited {
            // DX: W ← W + 1 segment per RTT at zero queueing delay.
            self.core.cwnd += a.mss;
        }
    }

    fn on_ecn(&mut self, _now: Time, _in_flight: u64) {}

    fn on_loss(&mut self, _now: Time, in_flight: u64) {
        self.core.halve(in_flight);
    }

    fn on_rto(&mut self, _now: Time, in_flight: u64) {
        self.core.timeout(in_flight);
    }

    /// `queue_delay_us`: the Q of the last window, µs.
    fn sample(&self, out: &mut Vec<(&'static str, f64)>) {
        out.push(("queue_delay_us", self.q * 1e6));
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

    fn driver(cfg: DxConfig) -> CcDriver<Dx> {
        let rng = RngTree::new(0).stream("cc", 0);
        CcDriver::new(Dx::new(&cfg, limits(), rng)).with_limits(limits())
    }

    /// Past slow start, a window without queueing adds exactly one segment.
    #[test]
    fn dx_grows_one_segment_per_rtt_at_zero_delay() {
        let mut d = driver(DxConfig::default());
        d.round(Round::clean().with_queue_delay(Dur::from_us(5)));
        let w0 = d.cc.cwnd_bytes();
        let out = d.rounds(5, Round::clean().with_queue_delay(Dur::ZERO));
        let w: Vec<u64> = out.iter().map(|o| o.cwnd_bytes).collect();
        assert_eq!(w, (1..=5).map(|k| w0 + k * 1460).collect::<Vec<_>>());
    }

    /// A window that met queueing delay Q is cut by the factor Q/V, V = T + Q: with
    /// T = 100 µs and Q = 25 µs, by 20 %.
    #[test]
    fn dx_cuts_by_q_over_v() {
        let mut d = driver(DxConfig::default());
        d.rounds(3, Round::clean().with_queue_delay(Dur::ZERO));
        d.cc.core.ssthresh = d.cc.core.cwnd; // out of slow start
        let before = d.cc.cwnd_bytes();
        let out = d.round(Round::clean().with_queue_delay(Dur::from_us(25)));
        let expect = before as f64 * (1.0 - 25.0 / 125.0);
        assert!(
            (out.cwnd_bytes as f64 - expect).abs() <= 1.0,
            "{} vs {expect}",
            out.cwnd_bytes
        );
        assert!((out.get("queue_delay_us") - 25.0).abs() < 1e-9);
        // With V = T alone the cut is Q/T = 25 %.
        let mut d = driver(DxConfig {
            normalizer: Normalizer::BaseRtt,
            ..DxConfig::default()
        });
        d.rounds(3, Round::clean().with_queue_delay(Dur::ZERO));
        d.cc.core.ssthresh = d.cc.core.cwnd;
        let before = d.cc.cwnd_bytes();
        let out = d.round(Round::clean().with_queue_delay(Dur::from_us(25)));
        let expect = before as f64 * 0.75;
        assert!(
            (out.cwnd_bytes as f64 - expect).abs() <= 1.0,
            "{} vs {expect}",
            out.cwnd_bytes
        );
    }

    /// A headroom of h segments cuts h segments more than the drain share, so that N
    /// senders' next +1 refills the room: T = 100 µs, Q = 25 µs, W = 40 segments, h = 1:
    /// 40·(1 − 25/125) − 1 = 31 segments (32 without headroom).
    #[test]
    fn dx_headroom_cuts_segments_beyond_the_drain() {
        let cut = |headroom: u32| {
            let mut d = driver(DxConfig {
                headroom,
                ..DxConfig::default()
            });
            d.rounds(3, Round::clean().with_queue_delay(Dur::ZERO));
            d.cc.core.cwnd = 40 * 1460;
            d.cc.core.ssthresh = d.cc.core.cwnd;
            d.round(Round::clean().with_queue_delay(Dur::from_us(25)))
                .cwnd_bytes
        };
        assert_eq!(cut(0), 32 * 1460);
        assert_eq!(cut(1), 31 * 1460);
        assert_eq!(cut(100), 2 * 1460, "never below the minimum window");
    }

    /// A timestamp clock of a coarse tick reads the same 3 µs queue as anything in
    /// (3 − tick, 3 + tick) µs: the windows part from the exact mode's and stay within the
    /// tick's reach. A threshold above the error restores the exact mode's growth at Q = 0.
    #[test]
    fn dx_timestamp_resolution_adds_an_error_within_one_tick() {
        let cfg = |resolution: Dur, threshold: Dur| DxConfig {
            measurement: Measurement::Timestamps(Timestamps {
                resolution,
                ..Timestamps::default()
            }),
            threshold,
            ..DxConfig::default()
        };
        let mut d = driver(cfg(Dur::from_us(2), Dur::ZERO));
        d.rounds(3, Round::clean().with_queue_delay(Dur::ZERO));
        let seen: Vec<f64> = d
            .rounds(30, Round::clean().with_queue_delay(Dur::from_us(3)))
            .iter()
            .map(|o| o.get("queue_delay_us"))
            .collect();
        assert!(seen.iter().any(|&q| (q - 3.0).abs() > 0.01), "{seen:?}");
        // The base is the smallest reading, itself up to a tick low, so readings stay
        // within two ticks of the truth.
        assert!(
            seen.iter().all(|&q| q > -1e-9 && q < 3.0 + 4.0 + 1e-9),
            "{seen:?}"
        );
        // At zero queueing a threshold of two ticks keeps DX growing as exact DX does.
        let grow = |c: DxConfig| {
            let mut d = driver(c);
            d.rounds(3, Round::clean().with_queue_delay(Dur::from_us(1)));
            d.rounds(10, Round::clean().with_queue_delay(Dur::ZERO))
                .iter()
                .map(|o| o.cwnd_bytes)
                .collect::<Vec<_>>()
        };
        let exact = grow(DxConfig {
            threshold: Dur::from_us(4),
            ..DxConfig::default()
        });
        assert_eq!(grow(cfg(Dur::from_us(2), Dur::from_us(4))), exact);
        assert_ne!(grow(cfg(Dur::from_us(2), Dur::ZERO)), exact);
    }

    /// The windows of N equal senders cut with V = T + Q together remove the standing queue
    /// C·Q in one round: Σ W·Q/(T+Q) = C·(T+Q)·Q/(T+Q) = C·Q.
    #[test]
    fn dx_cuts_of_equal_senders_remove_the_queue() {
        let (c, t, q, n) = (1.25e9, 100e-6, 40e-6, 8.0); // bytes/s, s, s, senders
        let w = c * (t + q) / n;
        let cut: f64 = n * w * q / (t + q);
        assert!((cut - c * q).abs() < 1e-6 * c * q);
        // And the controller applies exactly that per-sender cut (the base RTT T comes
        // from an earlier window without queueing).
        let mut d = driver(DxConfig::default());
        d.round(Round::clean().with_queue_delay(Dur::ZERO));
        d.cc.core.cwnd = w as u64;
        d.cc.core.ssthresh = w as u64;
        let out = d.round(
            Round::clean()
                .with_rtt(Dur::from_us(140))
                .with_queue_delay(Dur::from_us(40)),
        );
        let expect = (w as u64) as f64 * (1.0 - q / (t + q));
        assert!(
            (out.cwnd_bytes as f64 - expect).abs() <= 1.0,
            "{} vs {expect}",
            out.cwnd_bytes
        );
    }

    /// In timestamp mode without errors DX sees what the exact mode sees (once a packet
    /// met an empty queue, which sets the base delay); a clock drift makes it see a growing
    /// queue that is not there, stack delay a noisy one, and calibrating either removes it.
    #[test]
    fn dx_timestamp_errors_distort_and_calibrations_remove_them() {
        let ts = |t: Timestamps| DxConfig {
            measurement: Measurement::Timestamps(t),
            ..DxConfig::default()
        };
        let run = |cfg: DxConfig| {
            let mut d = driver(cfg);
            d.rounds(3, Round::clean().with_queue_delay(Dur::ZERO));
            d.rounds(30, Round::clean().with_queue_delay(Dur::from_us(3)))
                .iter()
                .map(|o| o.cwnd_bytes)
                .collect::<Vec<_>>()
        };
        let exact = run(DxConfig::default());
        assert_eq!(
            run(ts(Timestamps::default())),
            exact,
            "no error: the exact mode"
        );
        let drift = Timestamps {
            clock_drift_ppm: 200.0,
            ..Timestamps::default()
        };
        assert_ne!(run(ts(drift.clone())), exact);
        assert_eq!(
            run(ts(Timestamps {
                drift_calibration: true,
                ..drift
            })),
            exact
        );
        let stack = Timestamps {
            stack_delay: Dur::from_us(5),
            ..Timestamps::default()
        };
        assert_ne!(run(ts(stack.clone())), exact);
        assert_eq!(
            run(ts(Timestamps {
                nic_timestamps: true,
                ..stack
            })),
            exact
        );
    }
}
