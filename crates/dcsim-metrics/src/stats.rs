//! Summary statistics of samples: the percentiles and mean of a [`Distribution`] and
//! Jain's fairness index.

use serde::Serialize;

/// Percentiles and mean of a sample. Serialized with every statistic null when the sample
/// is empty (`count` 0), so that no reader averages a zero that was never measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Distribution {
    /// Number of values.
    pub count: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest value.
    pub max: f64,
}

impl Serialize for Distribution {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let v = |x: f64| (self.count > 0).then_some(x);
        let mut st = s.serialize_struct("Distribution", 7)?;
        st.serialize_field("count", &self.count)?;
        st.serialize_field("mean", &v(self.mean))?;
        st.serialize_field("p50", &v(self.p50))?;
        st.serialize_field("p90", &v(self.p90))?;
        st.serialize_field("p99", &v(self.p99))?;
        st.serialize_field("p999", &v(self.p999))?;
        st.serialize_field("max", &v(self.max))?;
        st.end()
    }
}

impl Distribution {
    /// Summarizes `values` (sorted in place). Percentiles use the nearest-rank method.
    pub fn of(values: &mut [f64]) -> Self {
        values.sort_by(f64::total_cmp);
        let mut d = Ascending::new(values.len() as u64);
        for &v in values.iter() {
            d.push(v);
        }
        d.finish()
    }
}

/// A [`Distribution`] of a known number of values met in ascending order
/// ([`f64::total_cmp`]), built without holding them: the percentiles are picked as their
/// ranks pass and the mean is summed in that order, so the result is exactly
/// [`Distribution::of`]'s.
#[derive(Clone, Debug)]
pub struct Ascending {
    n: u64,
    seen: u64,
    sum: f64,
    /// The nearest ranks (1-based) of p50, p90, p99 and p99.9, and the values there.
    ranks: [u64; 4],
    at: [f64; 4],
    last: f64,
}

impl Ascending {
    const QUANTILES: [f64; 4] = [0.5, 0.9, 0.99, 0.999];

    /// A distribution of `n` values, to be pushed in ascending order.
    pub fn new(n: u64) -> Self {
        Self {
            n,
            seen: 0,
            sum: -0.0,
            ranks: Self::QUANTILES.map(|q| ((q * n as f64).ceil() as u64).clamp(1, n.max(1))),
            at: [0.0; 4],
            last: 0.0,
        }
    }

    /// The next value; not below the previous one.
    pub fn push(&mut self, v: f64) {
        debug_assert!(self.seen < self.n, "more values than announced");
        self.seen += 1;
        self.sum += v;
        for (r, a) in self.ranks.iter().zip(&mut self.at) {
            if *r == self.seen {
                *a = v;
            }
        }
        self.last = v;
    }

    /// The distribution of the values pushed (which must be as many as announced).
    pub fn finish(&self) -> Distribution {
        debug_assert_eq!(self.seen, self.n, "fewer values than announced");
        if self.n == 0 {
            return Distribution::default();
        }
        let [p50, p90, p99, p999] = self.at;
        Distribution {
            count: self.n,
            mean: self.sum / self.n as f64,
            p50,
            p90,
            p99,
            p999,
            max: self.last,
        }
    }
}

/// Jain's fairness index (Σx)² / (n·Σx²): 1 when all equal, 1/n when one takes everything.
/// `None` for an empty input or all zeros.
pub fn jain(xs: &[f64]) -> Option<f64> {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    (!xs.is_empty() && s2 > 0.0).then(|| s * s / (xs.len() as f64 * s2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_for_equal_and_one_over_n_for_a_hog() {
        assert!((jain(&[2.0, 2.0, 2.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]).unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(jain(&[]), None);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        let d = Distribution::of(&mut v);
        assert_eq!((d.p50, d.p90, d.p99, d.max), (50.0, 90.0, 99.0, 100.0));
        assert!((d.mean - 50.5).abs() < 1e-12);
    }

    /// The streaming form gives what sorting and indexing give, for every size up to
    /// where each percentile has moved, and sums in ascending order.
    #[test]
    fn ascending_equals_indexing_a_sorted_sample() {
        for n in 0..=2_100usize {
            let v: Vec<f64> = (0..n)
                .map(|i| (i * i % 97) as f64 * 0.1 + i as f64)
                .collect();
            let mut sorted = v.clone();
            sorted.sort_by(f64::total_cmp);
            let d = Distribution::of(&mut v.clone());
            if n == 0 {
                assert_eq!(d, Distribution::default());
                continue;
            }
            let rank = |q: f64| sorted[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
            let mean = sorted.iter().sum::<f64>() / n as f64;
            assert_eq!(
                (d.p50, d.p90, d.p99, d.p999, d.max, d.mean.to_bits()),
                (
                    rank(0.5),
                    rank(0.9),
                    rank(0.99),
                    rank(0.999),
                    sorted[n - 1],
                    mean.to_bits()
                ),
                "n = {n}"
            );
        }
    }
}
