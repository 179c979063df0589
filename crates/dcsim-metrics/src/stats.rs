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
        if values.is_empty() {
            return Self::default();
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let rank = |q: f64| values[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        Self {
            count: n as u64,
            mean: values.iter().sum::<f64>() / n as f64,
            p50: rank(0.5),
            p90: rank(0.9),
            p99: rank(0.99),
            p999: rank(0.999),
            max: values[n - 1],
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
}
