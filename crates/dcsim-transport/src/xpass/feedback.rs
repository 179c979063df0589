//! ExpressPass receiver feedback: the credit-rate control laws.
//!
//! Every law runs once per update period (about one RTT) on what the receiver saw in the
//! period: credits accounted for by arriving data (`total`), of which `dropped` never
//! produced data, the data packets received, and the period's length. Rates are in bytes
//! of credit per second, as in the ns-2 code.
//!
//! | law | source | rule |
//! |---|---|---|
//! | `none` | naive | credits at the maximum rate |
//! | `workshop` | HotNets-style workshop paper | loss → rate = credit rate that produced data; else halfway to max |
//! | `paper` | SIGCOMM'17 Algorithm 1, lag-robust | fixed target loss, w halfway to w_max, decrease to the delivered rate·(1+target) |
//! | `paper-literal` | SIGCOMM'17 Algorithm 1 as printed | as `paper`, but decrease rate·(1−loss)·(1+target) |
//! | `code` | ns2-xpass HEAD | dynamic target (1−r/R)·0.125, w += 0.05, delivered-rate decrease, 1 credit/RTT floor |
//!
//! **The measurement lag.** A receiver learns of a credit's loss only when the data it
//! should have produced fails to arrive, one round trip after the credit left. The loss
//! measured at the end of period k is therefore the loss of the credits sent in period
//! k − 1, at that period's rate. Algorithm 1 as printed multiplies the *current* rate by
//! (1 − loss): when the rate was already cut in period k − 1, the same congestion is
//! charged twice, and the cuts compound. A fluid model with this one-period lag gives
//! 80 % and 72 % utilization at 4 and 16 flows (what the literal law measured in our
//! parking lot and flow-scalability runs), and 100 % without the lag. Every version of
//! the authors' ns-2 code instead decreases to the credit rate that *produced data* in
//! the period times (1 + target): the delivered rate is (1 − loss) times the rate the
//! measured credits were sent at, so the product is what the paper's rule means, computed
//! from the right period. `paper` does that; `paper-literal` keeps the printed form, as a
//! named variant that shows what a verbatim reading of Algorithm 1 costs.

use serde::{Deserialize, Serialize};

/// Which feedback law.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Law {
    /// Credits at the maximum rate; no feedback.
    None,
    /// The workshop paper's law.
    Workshop,
    /// SIGCOMM'17 Algorithm 1, with the decrease computed from the delivered credit rate
    /// (robust to the one-period measurement lag; what the authors' code does).
    Paper,
    /// SIGCOMM'17 Algorithm 1 as printed: the decrease multiplies the current rate by the
    /// lagged loss.
    PaperLiteral,
    /// The authors' ns-2 code at HEAD.
    Code,
}

/// Parameters of the laws (fractions are of the maximum credit rate).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LawParams {
    /// The law.
    pub law: Law,
    /// Maximum credit rate, bytes/s (the credit share of the host link).
    pub max_rate: f64,
    /// Initial aggressiveness w.
    pub w_init: f64,
    /// Upper bound of w (paper: 0.5; the code hard-codes 0.5).
    pub w_max: f64,
    /// Lower bound of w (0.01).
    pub w_min: f64,
    /// Paper law: the fixed target loss (0.1).
    pub target_loss: f64,
    /// Code law: the dynamic target is (1 − r/R)·scaling (0.125).
    pub target_loss_scaling: f64,
    /// Code law: additive increase of w per non-congested period after the first (0.05).
    pub w_step: f64,
}

/// What the receiver saw during one update period.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Period {
    /// Credits accounted for by the data that arrived (sequence gaps included).
    pub total: u64,
    /// Of those, credits that produced no data (lost, or reached a sender with nothing
    /// to send).
    pub dropped: u64,
    /// Length of the period, seconds.
    pub elapsed: f64,
    /// The receiver's RTT estimate, seconds.
    pub rtt: f64,
    /// Average credit wire size, bytes.
    pub credit_size: f64,
}

impl Period {
    /// The credit rate that produced data in the period, bytes/s.
    pub fn delivered_rate(&self) -> f64 {
        (self.total - self.dropped) as f64 * self.credit_size / self.elapsed.max(1e-12)
    }
}

/// The state of one receiver's rate control.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Feedback {
    p: LawParams,
    /// Current credit rate, bytes/s.
    rate: f64,
    w: f64,
    /// The previous period was an increasing one (paper) / w may grow (code).
    prev_increase: bool,
}

impl Feedback {
    /// Starts at `initial_rate` bytes/s.
    pub fn new(p: LawParams, initial_rate: f64) -> Self {
        let rate = if p.law == Law::None {
            p.max_rate
        } else {
            initial_rate.min(p.max_rate).max(0.0)
        };
        Self {
            p,
            rate,
            w: p.w_init,
            prev_increase: false,
        }
    }

    /// Current credit rate, bytes/s.
    pub fn rate(&self) -> f64 {
        self.rate
    }
    /// Current aggressiveness.
    pub fn w(&self) -> f64 {
        self.w
    }
    /// The parameters.
    pub fn params(&self) -> &LawParams {
        &self.p
    }

    /// Applies the law to one period and returns the new rate.
    pub fn update(&mut self, s: &Period) -> f64 {
        let p = self.p;
        let loss = if s.total == 0 {
            0.0
        } else {
            s.dropped as f64 / s.total as f64
        };
        // A rate below one credit per RTT would stall the feedback loop (no data, no
        // samples); every law is floored there (the code law's own floor; a documented
        // addition for the others, whose papers leave the case open).
        let floor = if s.rtt > 0.0 {
            s.credit_size / s.rtt
        } else {
            0.0
        };
        match p.law {
            Law::None => self.rate = p.max_rate,
            Law::Workshop => {
                if s.dropped > 0 {
                    // The rate that actually produced data in the period.
                    self.rate = s.delivered_rate();
                } else {
                    self.rate = (self.rate + p.max_rate) / 2.0;
                }
                self.rate = self.rate.clamp(floor.min(p.max_rate), p.max_rate);
            }
            Law::Paper | Law::PaperLiteral => {
                // SIGCOMM'17 Algorithm 1.
                if loss <= p.target_loss {
                    if self.prev_increase {
                        self.w = (self.w + p.w_max) / 2.0;
                    }
                    self.rate =
                        (1.0 - self.w) * self.rate + self.w * p.max_rate * (1.0 + p.target_loss);
                    self.prev_increase = true;
                } else {
                    self.rate = if p.law == Law::PaperLiteral {
                        self.rate * (1.0 - loss) * (1.0 + p.target_loss)
                    } else {
                        // (1 − loss) × the rate the measured credits were sent at, never
                        // above the current rate (which may already have been cut).
                        (s.delivered_rate() * (1.0 + p.target_loss)).min(self.rate)
                    };
                    self.w = (self.w / 2.0).max(p.w_min);
                    self.prev_increase = false;
                }
                self.rate = self
                    .rate
                    .clamp(floor.min(p.max_rate), p.max_rate * (1.0 + p.target_loss));
            }
            Law::Code => {
                let target = (1.0 - self.rate / p.max_rate) * p.target_loss_scaling;
                if loss > target {
                    let old = self.rate;
                    self.rate = if loss >= 1.0 {
                        floor
                    } else {
                        s.delivered_rate() * (1.0 + target)
                    };
                    self.rate = self.rate.min(old);
                    self.w = (self.w / 2.0).max(p.w_min);
                    self.prev_increase = false;
                } else {
                    if self.prev_increase {
                        self.w = (self.w + p.w_step).min(p.w_max);
                    } else {
                        self.prev_increase = true;
                    }
                    if self.rate < p.max_rate {
                        self.rate = self.w * p.max_rate + (1.0 - self.w) * self.rate;
                    }
                }
                self.rate = self.rate.clamp(floor.min(p.max_rate), p.max_rate);
            }
        }
        self.rate
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const R: f64 = 64_734_895.0; // 10 Gb/s credit share, B/s
    const RTT: f64 = 100e-6;

    fn params(law: Law) -> LawParams {
        LawParams {
            law,
            max_rate: R,
            w_init: 0.5,
            w_max: 0.5,
            w_min: 0.01,
            target_loss: 0.1,
            target_loss_scaling: 0.125,
            w_step: 0.05,
        }
    }

    /// A credit bottleneck of capacity `cap` B/s shared by flows sending at their rates:
    /// each flow loses the same fraction of its credits, the excess over the capacity.
    ///
    /// The period is 10 ms so that a flow sends thousands of credits per period and the
    /// integer rounding of credit counts does not matter (the fluid model of the paper's
    /// analysis). With 100 µs periods and a few credits per flow per period, rounding alone
    /// makes two flows measure different loss fractions, and the paper law then settles
    /// with the two rates up to ~13 % apart: a real effect at small per-flow credit counts.
    fn step(flows: &mut [Feedback], cap: f64) {
        const PERIOD: f64 = 10e-3;
        let sum: f64 = flows.iter().map(|f| f.rate()).sum();
        let loss = if sum > cap { (sum - cap) / sum } else { 0.0 };
        for f in flows.iter_mut() {
            let sent = (f.rate() * PERIOD / 84.0).round().max(1.0) as u64;
            let dropped = (sent as f64 * loss).round() as u64;
            f.update(&Period {
                total: sent,
                dropped,
                elapsed: PERIOD,
                rtt: PERIOD,
                credit_size: 84.0,
            });
        }
    }

    #[test]
    fn no_loss_grows_to_max_and_none_stays_there() {
        for law in [Law::Workshop, Law::Paper, Law::PaperLiteral, Law::Code] {
            let mut f = Feedback::new(params(law), R / 16.0);
            for _ in 0..30 {
                f.update(&Period {
                    total: 10,
                    dropped: 0,
                    elapsed: RTT,
                    rtt: RTT,
                    credit_size: 84.0,
                });
            }
            assert!(f.rate() >= 0.99 * R, "{law:?}: {}", f.rate());
        }
        let mut f = Feedback::new(params(Law::None), R / 16.0);
        assert!((f.rate() - R).abs() < 1e-9);
        f.update(&Period {
            total: 10,
            dropped: 9,
            elapsed: RTT,
            rtt: RTT,
            credit_size: 84.0,
        });
        assert!((f.rate() - R).abs() < 1e-9);
    }

    #[test]
    fn workshop_reaches_over_90_percent_in_4_periods() {
        let mut f = Feedback::new(params(Law::Workshop), 0.0);
        for _ in 0..4 {
            f.update(&Period {
                total: 10,
                dropped: 0,
                elapsed: RTT,
                rtt: RTT,
                credit_size: 84.0,
            });
        }
        assert!(f.rate() > 0.9 * R);
    }

    #[test]
    fn paper_decrease_follows_algorithm_1() {
        // 100 credits accounted for in one RTT at 84 B: they were sent at 84 MB/s; half
        // produced data, so the delivered rate is 42 MB/s.
        let lossy = Period {
            total: 100,
            dropped: 50,
            elapsed: RTT,
            rtt: RTT,
            credit_size: 84.0,
        };
        let mut f = Feedback::new(params(Law::PaperLiteral), R);
        f.update(&lossy);
        assert!((f.rate() - R * 0.5 * 1.1).abs() < 1e-6);
        assert!((f.w() - 0.25).abs() < 1e-12);
        let mut f = Feedback::new(params(Law::Paper), R);
        f.update(&lossy);
        assert!((f.rate() - 42e6 * 1.1).abs() < 1e-6, "{}", f.rate());
        assert!((f.w() - 0.25).abs() < 1e-12);
        // Never above the current rate: a rate already cut is not raised by a decrease.
        let mut f = Feedback::new(params(Law::Paper), 20e6);
        f.update(&lossy);
        assert!((f.rate() - 20e6).abs() < 1e-6, "{}", f.rate());
    }

    /// One period of a credit bottleneck of capacity `cap` B/s, with the measurement lag
    /// of a real receiver: the loss a flow measures at the end of a period is that of the
    /// credits it sent in the period before, at that period's rate. `prev` holds those
    /// rates. Returns the bottleneck's utilization in the period.
    fn step_lagged(flows: &mut [Feedback], prev: &mut [f64], cap: f64) -> f64 {
        const PERIOD: f64 = 10e-3;
        let sent: f64 = prev.iter().sum();
        let loss = if sent > cap { (sent - cap) / sent } else { 0.0 };
        for (f, r) in flows.iter_mut().zip(prev.iter_mut()) {
            let total = (*r * PERIOD / 84.0).round().max(1.0) as u64;
            let dropped = (total as f64 * loss).round() as u64;
            *r = f.rate();
            f.update(&Period {
                total,
                dropped,
                elapsed: PERIOD,
                rtt: PERIOD,
                credit_size: 84.0,
            });
        }
        sent.min(cap) / cap
    }

    /// Mean utilization of `n` flows of law `law` on one credit bottleneck of `cap`, with
    /// the measurement lag, after 1,000 periods of warm-up, over 1,000 periods.
    fn lagged_utilization(law: Law, n: usize, cap: f64) -> f64 {
        let mut flows: Vec<Feedback> = (0..n)
            .map(|_| Feedback::new(params(law), R / 16.0))
            .collect();
        let mut prev = vec![R / 16.0; n];
        for _ in 0..1000 {
            step_lagged(&mut flows, &mut prev, cap);
        }
        (0..1000)
            .map(|_| step_lagged(&mut flows, &mut prev, cap))
            .sum::<f64>()
            / 1000.0
    }

    /// The lag-robust law keeps a credit bottleneck full for any number of flows; the
    /// literal reading of Algorithm 1 compounds its decreases under the lag and leaves
    /// a fifth of the link idle at a few flows (the figure our parking lot measured).
    #[test]
    fn paper_law_fills_the_bottleneck_under_the_measurement_lag() {
        for n in [2usize, 4, 8, 16, 32, 64] {
            let u = lagged_utilization(Law::Paper, n, R);
            assert!(u > 0.97, "paper n={n}: utilization {u}");
            let c = lagged_utilization(Law::Code, n, R);
            assert!(c > 0.97, "code n={n}: utilization {c}");
        }
        for n in [4usize, 16] {
            let u = lagged_utilization(Law::PaperLiteral, n, R);
            assert!(u < 0.9, "paper-literal n={n}: utilization {u}");
        }
    }

    /// The paper's convergence property: N flows on one bottleneck converge to the fair
    /// share C/N, with an oscillation of about C·w_min·(1 − 1/N). Checked for the paper
    /// and code laws from unequal starts; for the workshop law only the fairness.
    #[test]
    fn flows_on_one_bottleneck_converge_to_the_fair_share() {
        for law in [Law::Paper, Law::PaperLiteral, Law::Code, Law::Workshop] {
            for n in [2usize, 4, 8, 16] {
                let cap = 0.5 * R * n as f64 / 2.0; // a bottleneck below the sum of maxima
                let cap = cap.min(R);
                let mut flows: Vec<Feedback> = (0..n)
                    .map(|i| Feedback::new(params(law), R * (i + 1) as f64 / n as f64))
                    .collect();
                for _ in 0..2000 {
                    step(&mut flows, cap);
                }
                // Average over many periods: the oscillation averages out.
                let mut avg = vec![0.0; n];
                for _ in 0..400 {
                    step(&mut flows, cap);
                    for (a, f) in avg.iter_mut().zip(&flows) {
                        *a += f.rate() / 400.0;
                    }
                }
                let share = cap / n as f64;
                // The workshop law alternates between the delivered rate and halfway to
                // the maximum, so its average *sending* rate sits well above the share
                // (the waste the SIGCOMM law was designed to remove); only its fairness is
                // checked.
                for (i, a) in avg.iter().enumerate().filter(|_| law != Law::Workshop) {
                    // The laws run the bottleneck at a small target loss, so each flow's
                    // *sending* rate is a little above C/N: up to (1 + 12.5 %) for the code
                    // law's dynamic target and (1 + 10 %) for the paper's, plus the
                    // oscillation. 25 % bounds both; unfairness would show as a spread.
                    assert!(
                        (a / share - 1.0).abs() < 0.25,
                        "{law:?} n={n} flow {i}: {a} vs share {share}"
                    );
                }
                let spread = avg.iter().cloned().fold(f64::MIN, f64::max)
                    / avg.iter().cloned().fold(f64::MAX, f64::min);
                assert!(
                    spread < 1.05,
                    "{law:?} n={n}: max/min of average rates {spread}"
                );
            }
        }
    }

    proptest! {
        /// Whatever the loss pattern: the rate stays within [one credit per RTT, max·(1 +
        /// target)], w within [w_min, w_max], nothing is NaN.
        #[test]
        fn laws_stay_in_bounds(law in 0usize..5, losses in proptest::collection::vec((1u64..200, 0.0f64..=1.0), 1..200)) {
            let law = [Law::None, Law::Workshop, Law::Paper, Law::PaperLiteral, Law::Code][law];
            let mut f = Feedback::new(params(law), R / 16.0);
            for (total, frac) in losses {
                let dropped = (total as f64 * frac).round() as u64;
                let r = f.update(&Period { total, dropped, elapsed: RTT, rtt: RTT, credit_size: 84.0 });
                prop_assert!(r.is_finite() && (84.0 / RTT - 1e-6..=R * 1.1 + 1e-6).contains(&r), "{law:?}: {r}");
                prop_assert!(f.w() >= 0.01 - 1e-12 && f.w() <= 0.5 + 1e-12);
            }
        }
    }
}
