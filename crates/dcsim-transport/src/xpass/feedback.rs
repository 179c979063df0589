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
//! | `paper` | SIGCOMM'17 Algorithm 1 | fixed target loss, w halfway to w_max, (1+target) factors |
//! | `code` | ns2-xpass HEAD | dynamic target (1−r/R)·0.125, w += 0.05, delivered-rate decrease, 1 credit/RTT floor |

use serde::{Deserialize, Serialize};

/// Which feedback law.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Law {
    /// Credits at the maximum rate; no feedback.
    None,
    /// The workshop paper's law.
    Workshop,
    /// SIGCOMM'17 Algorithm 1.
    Paper,
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
                    let delivered =
                        (s.total - s.dropped) as f64 * s.credit_size / s.elapsed.max(1e-12);
                    self.rate = delivered;
                } else {
                    self.rate = (self.rate + p.max_rate) / 2.0;
                }
                self.rate = self.rate.clamp(floor.min(p.max_rate), p.max_rate);
            }
            Law::Paper => {
                // SIGCOMM'17 Algorithm 1.
                if loss <= p.target_loss {
                    if self.prev_increase {
                        self.w = (self.w + p.w_max) / 2.0;
                    }
                    self.rate =
                        (1.0 - self.w) * self.rate + self.w * p.max_rate * (1.0 + p.target_loss);
                    self.prev_increase = true;
                } else {
                    self.rate *= (1.0 - loss) * (1.0 + p.target_loss);
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
                        let delivered =
                            (s.total - s.dropped) as f64 * s.credit_size / s.elapsed.max(1e-12);
                        delivered * (1.0 + target)
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
        for law in [Law::Workshop, Law::Paper, Law::Code] {
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
        let mut f = Feedback::new(params(Law::Paper), R);
        f.update(&Period {
            total: 100,
            dropped: 50,
            elapsed: RTT,
            rtt: RTT,
            credit_size: 84.0,
        });
        assert!((f.rate() - R * 0.5 * 1.1).abs() < 1e-6);
        assert!((f.w() - 0.25).abs() < 1e-12);
    }

    /// The paper's convergence property: N flows on one bottleneck converge to the fair
    /// share C/N, with an oscillation of about C·w_min·(1 − 1/N). Checked for the paper
    /// and code laws from unequal starts; for the workshop law only the fairness.
    #[test]
    fn flows_on_one_bottleneck_converge_to_the_fair_share() {
        for law in [Law::Paper, Law::Code, Law::Workshop] {
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
        fn laws_stay_in_bounds(law in 0usize..4, losses in proptest::collection::vec((1u64..200, 0.0f64..=1.0), 1..200)) {
            let law = [Law::None, Law::Workshop, Law::Paper, Law::Code][law];
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
