//! Confidence intervals for the statistics a comparison shows.
//!
//! Percentiles get distribution-free intervals from order statistics (the number of
//! samples below the true q-quantile is binomial(n, q), so a pair of ranks brackets it with
//! a known probability; Le Boudec, *Performance Evaluation of Computer and Communication
//! Systems*, 2010, section 2.2.1). Unlike a bootstrap they need no random draws, cost
//! nothing beyond the sort, and say plainly when a sample is too small: with 100 flows
//! there is no rank that bounds a 99th percentile from above at 95 %, and the interval is
//! then open on that side instead of pretending. Means get the normal interval.

/// Two-sided confidence level of every interval.
pub const CONFIDENCE: f64 = 0.95;

/// A statistic with its interval; a side is `None` when the sample cannot bound it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// The point estimate.
    pub value: f64,
    /// Lower end of the interval.
    pub lo: Option<f64>,
    /// Upper end of the interval.
    pub hi: Option<f64>,
}

/// The nearest-rank q-quantile of `sorted` (as every dcsim summary computes it) with its
/// order-statistic interval; `None` for an empty sample.
pub fn quantile(sorted: &[f64], q: f64) -> Option<Estimate> {
    let n = sorted.len();
    if n == 0 {
        return None;
    }
    let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
    let (lo, hi) = rank_bounds(n, q, 1.0 - CONFIDENCE);
    Some(Estimate {
        value: sorted[rank - 1],
        lo: lo.map(|j| sorted[j - 1]),
        hi: hi.map(|k| sorted[k - 1]),
    })
}

/// The mean of `xs` with its normal 95 % interval (none for fewer than two values).
pub fn mean(xs: &[f64]) -> Option<Estimate> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let m = xs.iter().sum::<f64>() / n as f64;
    let half = (n > 1).then(|| {
        let var = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1) as f64;
        1.959_963_984_540_054 * (var / n as f64).sqrt()
    });
    Some(Estimate {
        value: m,
        lo: half.map(|h| m - h),
        hi: half.map(|h| m + h),
    })
}

/// Ranks (1-based) `j` and `k` of the order statistics whose interval
/// `[x_(j), x_(k)]` holds the q-quantile with probability at least `1 - alpha`:
/// `j` the largest rank with `P(B ≤ j - 1) ≤ alpha / 2` and `k` the smallest with
/// `P(B ≥ k) ≤ alpha / 2`, where `B ~ binomial(n, q)` counts the samples below the
/// quantile. `None` where no rank of the sample qualifies.
pub fn rank_bounds(n: usize, q: f64, alpha: f64) -> (Option<usize>, Option<usize>) {
    let half = alpha / 2.0;
    let nf = n as f64;
    // The binomial's mass outside mean ± (8 sd + 10) is far below any alpha used here, so
    // the sums start at the window's lower end with the CDF taken as 0 there.
    let sd = (nf * q * (1.0 - q)).sqrt();
    let from = (nf * q - 8.0 * sd - 10.0).floor().max(0.0) as usize;
    let to = ((nf * q + 8.0 * sd + 10.0).ceil() as usize).min(n);
    let ln_n1 = libm::lgamma(nf + 1.0);
    let (lq, lp) = (q.ln(), (1.0 - q).ln());
    let pmf = |k: usize| {
        let kf = k as f64;
        (ln_n1 - libm::lgamma(kf + 1.0) - libm::lgamma(nf - kf + 1.0) + kf * lq + (nf - kf) * lp)
            .exp()
    };
    let (mut lower, mut upper) = (None, None);
    let mut cdf = 0.0; // P(B ≤ k - 1) at the top of each step
    for k in from..=to {
        // P(B ≤ k - 1) ≤ alpha/2: rank k + 1 ... the largest such k gives j = k.
        if cdf <= half && k >= 1 {
            lower = Some(k);
        }
        // P(B ≥ k) = 1 - P(B ≤ k - 1) ≤ alpha/2: the first such k.
        if upper.is_none() && k >= 1 && 1.0 - cdf <= half {
            upper = Some(k);
        }
        cdf += pmf(k);
    }
    (lower, upper.filter(|&k| k <= n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_a_hundred_is_bracketed_by_ranks_40_and_61() {
        // Le Boudec, Table A.1: n = 100, 95 %: [x_(40), x_(61)].
        assert_eq!(rank_bounds(100, 0.5, 0.05), (Some(40), Some(61)));
        // n = 10: [x_(2), x_(9)].
        assert_eq!(rank_bounds(10, 0.5, 0.05), (Some(2), Some(9)));
    }

    #[test]
    fn a_small_sample_cannot_bound_a_high_percentile_from_above() {
        let (lo, hi) = rank_bounds(100, 0.99, 0.05);
        assert_eq!(hi, None);
        assert!(lo.is_some_and(|j| j > 90 && j <= 99), "{lo:?}");
        // 1,000 flows: both sides, around rank 990.
        let (lo, hi) = rank_bounds(1000, 0.99, 0.05);
        let (lo, hi) = (lo.unwrap(), hi.unwrap());
        assert!(lo < 990 && 990 < hi && hi <= 1000, "{lo} {hi}");
    }

    #[test]
    fn the_interval_covers_the_true_quantile_as_often_as_it_says() {
        // Samples of uniform(0,1) from a fixed sequence: the 0.9-quantile is 0.9.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let trials = 2000;
        let mut covered = 0;
        for _ in 0..trials {
            let mut s: Vec<f64> = (0..200).map(|_| next()).collect();
            s.sort_by(f64::total_cmp);
            let e = quantile(&s, 0.9).unwrap();
            if e.lo.unwrap() <= 0.9 && 0.9 <= e.hi.unwrap() {
                covered += 1;
            }
        }
        let rate = f64::from(covered) / f64::from(trials);
        assert!((0.94..=0.99).contains(&rate), "coverage {rate}");
    }

    #[test]
    fn large_samples_are_cheap_and_narrow() {
        let s: Vec<f64> = (0..1_000_000).map(f64::from).collect();
        let e = quantile(&s, 0.99).unwrap();
        assert!((e.value - 989_999.0).abs() < 0.5);
        let (lo, hi) = (e.lo.unwrap(), e.hi.unwrap());
        assert!(989_700.0 < lo && lo < e.value && e.value < hi && hi < 990_300.0);
        let m = mean(&[1.0, 2.0, 3.0]).unwrap();
        assert!((m.value - 2.0).abs() < 1e-12);
        assert!((m.hi.unwrap() - 2.0 - 1.959_963_984_540_054 / 3f64.sqrt()).abs() < 1e-12);
    }
}
