//! Empirical flow-size distributions: CDF tables, their file formats and the sampling rule.
//!
//! # Sampling rule
//!
//! This is the rule of ns-2's `RandomVariable/Empirical` with `interpolation_ 2`, which the
//! ExpressPass, pFabric and PIAS scripts use:
//!
//! 1. draw `u` uniformly from `[0, 1)` (53 random bits);
//! 2. take the first row `i` whose cumulative probability `p_i ≥ u`;
//! 3. if `i = 0`, or `u = p_i`, the value is `v_i`; otherwise it is the linear interpolation
//!    `v_{i-1} + (u − p_{i-1})·(v_i − v_{i-1})/(p_i − p_{i-1})`;
//! 4. round up to a whole unit of the table (a byte, or a packet for tables in packets) and
//!    multiply by the unit size;
//! 5. redraw if the result is 0 (the ExpressPass fat-tree script redraws zero sizes).
//!
//! A first row with `p_0 > 0` is a point mass at `v_0`; rows with equal sizes are point
//! masses; rows with equal probabilities are never selected after the first of them.
//!
//! # Analytic mean
//!
//! Under that rule the size is `ceil(X)` where, on each segment, `X` is uniform on
//! `(v_{i-1}, v_i]` with probability `p_i − p_{i-1}`. [`EmpiricalCdf::mean_bytes`] adds up
//! the exact expectation of `ceil(X)` segment by segment (see `mean_ceil_uniform`) and
//! conditions on a non-zero result, so it is the mean of the sizes that are actually drawn.
//! For the built-in tables it reproduces the means stated in the files' headers.

use core::fmt;
use std::path::Path;

use dcsim_engine::Rng;
use serde::{Deserialize, Serialize};

use crate::unit_f64;

/// The largest CDF file read: far beyond any measured distribution (a million rows).
pub const MAX_CDF_FILE_BYTES: u64 = 16 << 20;
/// The longest line of a CDF file, as of a trace file.
pub const MAX_CDF_LINE_BYTES: usize = 4096;

/// The column layout of a CDF file. In every format, blank lines and everything after a `#`
/// are ignored, and columns are separated by white space or commas.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CdfFormat {
    /// `size cumulative_probability`, probability in `[0, 1]`: this repository's files.
    #[default]
    Dcsim,
    /// `size cumulative_percent`, percent in `[0, 100]`: HPCC's ns-3 `traffic_gen` files
    /// (for example `traffic_gen/WebSearch_distribution.txt`).
    Hpcc,
    /// `size unused cumulative_probability`: ns-2 `RandomVariable/Empirical loadCDF` files
    /// (ns2-xpass `workloads/*.tcl`, pFabric and PIAS `CDF_*.tcl`). The middle column is
    /// ignored, as ns-2 ignores it.
    Ns2,
}

impl CdfFormat {
    /// Number of columns per row.
    const fn columns(self) -> usize {
        match self {
            Self::Dcsim | Self::Hpcc => 2,
            Self::Ns2 => 3,
        }
    }
    /// The layout, for error messages.
    const fn layout(self) -> &'static str {
        match self {
            Self::Dcsim => "size cumulative_probability",
            Self::Hpcc => "size cumulative_percent",
            Self::Ns2 => "size unused cumulative_probability",
        }
    }
    /// Column holding the cumulative probability.
    const fn prob_column(self) -> usize {
        match self {
            Self::Dcsim | Self::Hpcc => 1,
            Self::Ns2 => 2,
        }
    }
    /// What a cumulative probability of 1 is written as.
    const fn prob_scale(self) -> f64 {
        match self {
            Self::Hpcc => 100.0,
            Self::Dcsim | Self::Ns2 => 1.0,
        }
    }
}

/// A CDF file or table that could not be read. `Display` gives `file:line: reason`, or
/// `file: reason` when no single line is at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CdfError {
    /// The file (or the name of the table).
    pub file: String,
    /// The 1-based line at fault, if any.
    pub line: Option<usize>,
    /// What is wrong, in words.
    pub reason: String,
}

impl fmt::Display for CdfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{l}: {}", self.file, self.reason),
            None => write!(f, "{}: {}", self.file, self.reason),
        }
    }
}
impl std::error::Error for CdfError {}

/// The CDFs that ship with dcsim (`data/*.txt`, embedded in the binary). All four come from
/// `kaist-ina/ns2-xpass` `workloads/*.tcl` at commit f4e38bc; each file's header names its
/// origin. See `docs/workloads.md` for their shapes and means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BuiltinCdf {
    /// Web search (DCTCP, SIGCOMM'10): 9 KB to 30 MB, mean 1,710,004 B.
    Websearch,
    /// Data mining (VL2, SIGCOMM'09): 100 B to 1 GB, mean 7,487,884 B; heavy-tailed.
    Datamining,
    /// Facebook cache follower (Roy et al., SIGCOMM'15): 70 B to 3 MB, mean 712,574 B.
    Cachefollower,
    /// Facebook web server (Roy et al., SIGCOMM'15): 150 B to 500 KB, mean 66,121 B.
    Webserver,
}

impl BuiltinCdf {
    /// Every built-in table.
    pub const ALL: [Self; 4] = [
        Self::Websearch,
        Self::Datamining,
        Self::Cachefollower,
        Self::Webserver,
    ];

    /// The name used in scenario files (`flow_size = { cdf = "websearch" }`).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Websearch => "websearch",
            Self::Datamining => "datamining",
            Self::Cachefollower => "cachefollower",
            Self::Webserver => "webserver",
        }
    }

    /// The table's text, in [`CdfFormat::Dcsim`], with its provenance header.
    pub const fn text(self) -> &'static str {
        match self {
            Self::Websearch => include_str!("../data/websearch.txt"),
            Self::Datamining => include_str!("../data/datamining.txt"),
            Self::Cachefollower => include_str!("../data/cachefollower.txt"),
            Self::Webserver => include_str!("../data/webserver.txt"),
        }
    }

    /// The parsed table.
    pub fn cdf(self) -> EmpiricalCdf {
        EmpiricalCdf::parse(self.text(), CdfFormat::Dcsim, 1, self.name())
            .expect("built-in CDFs are well formed (checked by builtin_means_match_file_headers)")
    }
}

/// An empirical size distribution: a table of `(size, cumulative probability)` rows sampled
/// by the rule in the [module docs](self).
///
/// Sizes and probabilities never decrease, and the last probability is exactly 1. Memory is
/// 16 bytes per row; a draw costs one binary search over the rows.
#[derive(Clone, Debug, PartialEq)]
pub struct EmpiricalCdf {
    /// Where the table came from (a file path or a built-in name), for messages and records.
    source: String,
    /// `(size in units, cumulative probability)`.
    points: Vec<(f64, f64)>,
    /// Bytes per table unit: 1, or the packet size for tables in packets.
    unit_bytes: u64,
    /// Probability that a draw is 0 (such draws are redrawn).
    p_zero: f64,
    /// Exact mean of the drawn sizes, bytes.
    mean_bytes: f64,
}

impl EmpiricalCdf {
    /// Parses a table in `format`. Sizes are in units of `unit_bytes` bytes (1 for tables in
    /// bytes, the packet size for tables in packets). `source` names the table in errors.
    ///
    /// Rejected, with the line named: a wrong number of columns, a value that is not a
    /// finite number, a negative size, a probability outside `[0, 1]` (`[0, 100]` for
    /// [`CdfFormat::Hpcc`]), a size or probability smaller than the row before, and a last
    /// probability other than 1 (to within 10⁻⁶). Also rejected: no rows, and a table
    /// whose every draw would be 0.
    pub fn parse(
        text: &str,
        format: CdfFormat,
        unit_bytes: u64,
        source: &str,
    ) -> Result<Self, CdfError> {
        let err = |line: Option<usize>, reason: String| CdfError {
            file: source.to_string(),
            line,
            reason,
        };
        if unit_bytes == 0 {
            return Err(err(
                None,
                "the unit (packet) size must be at least 1 byte".into(),
            ));
        }
        let scale = format.prob_scale();
        let mut points: Vec<(f64, f64)> = Vec::new();
        let mut last_line = 0;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let content = raw.split('#').next().unwrap_or_default().trim();
            if content.is_empty() {
                continue;
            }
            let cols: Vec<&str> = content
                .split(|c: char| c.is_whitespace() || c == ',')
                .filter(|c| !c.is_empty())
                .collect();
            if cols.len() != format.columns() {
                return Err(err(
                    Some(line),
                    format!(
                        "expected {} columns ({}), found {}",
                        format.columns(),
                        format.layout(),
                        cols.len()
                    ),
                ));
            }
            let num = |s: &str, what: &str| -> Result<f64, CdfError> {
                match s.parse::<f64>() {
                    Ok(x) if x.is_finite() => Ok(x),
                    _ => Err(err(
                        Some(line),
                        format!("{what} {s:?} is not a finite number"),
                    )),
                }
            };
            let size = num(cols[0], "size")?;
            let raw_p = num(cols[format.prob_column()], "cumulative probability")?;
            if size < 0.0 {
                return Err(err(Some(line), format!("size {size} is negative")));
            }
            if !(0.0..=scale).contains(&raw_p) {
                return Err(err(
                    Some(line),
                    format!("cumulative probability {raw_p} is outside [0, {scale}]"),
                ));
            }
            let p = raw_p / scale;
            if let Some(&(prev_size, prev_p)) = points.last() {
                if size < prev_size {
                    return Err(err(
                        Some(line),
                        format!(
                            "size {size} is smaller than {prev_size} on the row before; sizes must not decrease"
                        ),
                    ));
                }
                if p < prev_p {
                    return Err(err(
                        Some(line),
                        format!(
                            "cumulative probability {raw_p} is smaller than {} on the row before; probabilities must not decrease",
                            prev_p * scale
                        ),
                    ));
                }
            }
            points.push((size, p));
            last_line = line;
        }
        let Some(last) = points.last_mut() else {
            return Err(err(None, "no data rows".into()));
        };
        if (last.1 - 1.0).abs() > 1e-6 {
            return Err(err(
                Some(last_line),
                format!(
                    "the last cumulative probability is {}; it must be {scale}",
                    last.1 * scale
                ),
            ));
        }
        last.1 = 1.0;
        Self::from_points(points, unit_bytes, source).map_err(|reason| err(None, reason))
    }

    /// Reads and parses a file (see [`parse`](Self::parse)). Errors name the path. The file
    /// is read up to [`MAX_CDF_FILE_BYTES`] and its lines up to [`MAX_CDF_LINE_BYTES`], as
    /// traces are, so that a wrong path (`/dev/zero`, a disk image) is refused at once
    /// instead of filling memory.
    pub fn from_file(path: &Path, format: CdfFormat, unit_bytes: u64) -> Result<Self, CdfError> {
        use std::io::Read as _;
        let name = path.display().to_string();
        let err = |line: Option<usize>, reason: String| CdfError {
            file: name.clone(),
            line,
            reason,
        };
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_CDF_FILE_BYTES + 1).read_to_end(&mut bytes))
            .map_err(|e| err(None, format!("cannot read: {e}")))?;
        if bytes.len() as u64 > MAX_CDF_FILE_BYTES {
            return Err(err(
                None,
                format!(
                    "larger than {} MiB; is this a CDF file?",
                    MAX_CDF_FILE_BYTES >> 20
                ),
            ));
        }
        if let Some((i, _)) = bytes
            .split(|&b| b == b'\n')
            .enumerate()
            .find(|(_, l)| l.len() > MAX_CDF_LINE_BYTES)
        {
            return Err(err(
                Some(i + 1),
                format!("a line longer than {MAX_CDF_LINE_BYTES} bytes; is this a CDF file?"),
            ));
        }
        let text =
            String::from_utf8(bytes).map_err(|e| err(None, format!("not text (UTF-8): {e}")))?;
        Self::parse(&text, format, unit_bytes, &name)
    }

    /// A table from rows already in memory (same rules as [`parse`](Self::parse), but the
    /// last probability must be exactly 1).
    pub fn from_points(
        points: Vec<(f64, f64)>,
        unit_bytes: u64,
        source: &str,
    ) -> Result<Self, String> {
        if points.is_empty() {
            return Err("no data rows".into());
        }
        if unit_bytes == 0 {
            return Err("the unit (packet) size must be at least 1 byte".into());
        }
        for (i, w) in points.windows(2).enumerate() {
            if !(w[1].0 >= w[0].0 && w[1].1 >= w[0].1) {
                return Err(format!(
                    "row {}: sizes and probabilities must not decrease",
                    i + 2
                ));
            }
        }
        if points
            .iter()
            .any(|&(v, p)| !(v.is_finite() && v >= 0.0 && (0.0..=1.0).contains(&p)))
        {
            return Err("sizes must be finite and ≥ 0, probabilities in [0, 1]".into());
        }
        if points.last().map(|&(_, p)| p) != Some(1.0) {
            return Err("the last cumulative probability must be 1".into());
        }
        let p_zero = points
            .iter()
            .take_while(|&&(v, _)| v == 0.0)
            .map(|&(_, p)| p)
            .last()
            .unwrap_or(0.0);
        if p_zero >= 1.0 {
            return Err("every draw would be 0".into());
        }
        let mut sum = points[0].1 * points[0].0.ceil();
        for w in points.windows(2) {
            let ((a, p0), (b, p1)) = (w[0], w[1]);
            if p1 > p0 {
                sum += (p1 - p0) * mean_ceil_uniform(a, b);
            }
        }
        let mean_bytes = sum / (1.0 - p_zero) * unit_bytes as f64;
        Ok(Self {
            source: source.to_string(),
            points,
            unit_bytes,
            p_zero,
            mean_bytes,
        })
    }

    /// One size in bytes (≥ 1), drawn by the rule in the [module docs](self).
    ///
    /// A draw of 0 is drawn again. When zero is likely (P(0) above one half) the variate is
    /// drawn directly from above P(0) instead, the same distribution without the expected
    /// 1 / (1 − P(0)) redraws (a CDF with P(0) = 0.99999999 took a second per sample);
    /// below one half the redraw is kept, so the random streams of ordinary CDFs, and
    /// every result drawn from them, are unchanged.
    pub fn sample(&self, r: &mut Rng) -> u64 {
        let from = if self.p_zero > 0.5 { self.p_zero } else { 0.0 };
        loop {
            let s = self.quantile(from + (1.0 - from) * unit_f64(r));
            if s > 0 {
                return s;
            }
        }
    }

    /// The size in bytes that the uniform variate `u ∈ [0, 1]` maps to (steps 2–4 of the
    /// rule, before the zero redraw). Non-decreasing in `u`.
    pub fn quantile(&self, u: f64) -> u64 {
        let last = self.points.len() - 1;
        let i = self.points.partition_point(|&(_, p)| p < u).min(last);
        let (v1, p1) = self.points[i];
        let v = if i == 0 || u >= p1 {
            v1
        } else {
            // ns-2 EmpiricalRandomVariable::interpolate, same operation order.
            let (v0, p0) = self.points[i - 1];
            v0 + (u - p0) * (v1 - v0) / (p1 - p0)
        };
        // Saturating conversion: sizes beyond u64 cannot occur for finite tables in bytes.
        (v.ceil() as u64).saturating_mul(self.unit_bytes)
    }

    /// `P(size ≤ bytes)` for a drawn size (zero draws excluded), exact under the rule.
    pub fn cdf(&self, bytes: u64) -> f64 {
        let x = (bytes / self.unit_bytes) as f64;
        let j = self.points.partition_point(|&(v, _)| v <= x);
        let f = if j == 0 {
            0.0
        } else if j == self.points.len() {
            1.0
        } else {
            let ((v0, p0), (v1, p1)) = (self.points[j - 1], self.points[j]);
            p0 + (x - v0) / (v1 - v0) * (p1 - p0)
        };
        ((f - self.p_zero) / (1.0 - self.p_zero)).max(0.0)
    }

    /// Mean drawn size in bytes, exact under the sampling rule (including the rounding up,
    /// which adds about half a unit, and the zero redraw).
    pub const fn mean_bytes(&self) -> f64 {
        self.mean_bytes
    }

    /// Largest size that can be drawn, bytes.
    pub fn max_bytes(&self) -> u64 {
        self.quantile(1.0)
    }

    /// The rows, `(size in units, cumulative probability)`.
    pub fn points(&self) -> &[(f64, f64)] {
        &self.points
    }

    /// Bytes per table unit (1 unless the table is in packets).
    pub const fn unit_bytes(&self) -> u64 {
        self.unit_bytes
    }

    /// The file path or built-in name the table came from.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// `E[X²]` in bytes² of the continuous interpolated size, without the rounding up: close
    /// enough to the second moment of the drawn sizes to set tolerances in tests.
    #[cfg(test)]
    pub(crate) fn second_moment_bytes2(&self) -> f64 {
        let (v0, p0) = self.points[0];
        let mut m = p0 * v0 * v0;
        for w in self.points.windows(2) {
            let ((a, p0), (b, p1)) = (w[0], w[1]);
            m += (p1 - p0) * (a * a + a * b + b * b) / 3.0;
        }
        let u = self.unit_bytes as f64;
        m / (1.0 - self.p_zero) * u * u
    }
}

/// `E[ceil(X)]` for `X` uniform on `(a, b]`, `0 ≤ a ≤ b`, exactly: `E[X] + E[ceil(X) − X]`,
/// where `∫ (ceil(x) − x) dx = G(b) − G(a)` with `G(x) = ⌊x⌋/2 + f − f²/2`, `f = x − ⌊x⌋`
/// (the integrand is `1 − f` on every open unit interval). Splitting off `E[X]` keeps full
/// precision for sizes up to 10⁹ and more.
fn mean_ceil_uniform(a: f64, b: f64) -> f64 {
    if b <= a {
        return a.ceil();
    }
    let g = |x: f64| {
        let n = x.floor();
        let f = x - n;
        n / 2.0 + f - f * f / 2.0
    };
    (a + b) / 2.0 + (g(b) - g(a)) / (b - a)
}

#[cfg(test)]
mod tests {
    use dcsim_engine::RngTree;

    use super::*;

    /// A wrong path is refused at once with a bounded read: a file without line ends, one
    /// larger than any distribution, and one that is not text.
    #[test]
    fn cdf_files_are_read_within_bounds() {
        let e =
            EmpiricalCdf::from_file(Path::new("/dev/zero"), CdfFormat::default(), 1).unwrap_err();
        assert!(e.to_string().contains("larger than 16 MiB"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.cdf");
        let row = "1000 0.5\n".repeat((MAX_CDF_FILE_BYTES / 9 + 1) as usize);
        std::fs::write(&big, row).unwrap();
        let e = EmpiricalCdf::from_file(&big, CdfFormat::default(), 1).unwrap_err();
        assert!(e.to_string().contains("larger than 16 MiB"), "{e}");
        let long = dir.path().join("long.cdf");
        std::fs::write(&long, format!("1000 0.5\n{}\n", "1".repeat(5000))).unwrap();
        let e = EmpiricalCdf::from_file(&long, CdfFormat::default(), 1).unwrap_err();
        assert!(
            e.to_string().contains("a line longer than 4096 bytes"),
            "{e}"
        );
        let bin = dir.path().join("bin.cdf");
        std::fs::write(&bin, [0xff, 0xfe, b'\n']).unwrap();
        let e = EmpiricalCdf::from_file(&bin, CdfFormat::default(), 1).unwrap_err();
        assert!(e.to_string().contains("not text"), "{e}");
    }
    use crate::testutil::ks_statistic;

    /// The means stated in the built-in files' headers ("mean = N B under that rule"),
    /// which expresspass.md §3 computed independently.
    const HEADER_MEANS: [(BuiltinCdf, f64); 4] = [
        (BuiltinCdf::Websearch, 1_710_004.0),
        (BuiltinCdf::Datamining, 7_487_884.0),
        (BuiltinCdf::Cachefollower, 712_574.0),
        (BuiltinCdf::Webserver, 66_121.0),
    ];

    /// Two-sided 0.1 % critical value of the Kolmogorov distribution, `sqrt(ln(2/α)/2)`
    /// for α = 0.001. For a distribution with atoms (ours are integer-valued) the test is
    /// conservative: the true false-alarm rate is at most α.
    const KS_K_001: f64 = 1.9495;

    #[test]
    fn builtin_means_match_file_headers() {
        for (b, want) in HEADER_MEANS {
            let c = b.cdf();
            let got = c.mean_bytes();
            assert!((got - want).abs() <= 1.0, "{}: {got} vs {want}", b.name());
            let header = b
                .text()
                .split("mean = ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .and_then(|s| s.parse::<f64>().ok())
                .expect("each header states its mean");
            assert!((got - header).abs() <= 1.0, "{}: header {header}", b.name());
        }
    }

    #[test]
    fn mean_of_rounded_uniform_is_exact() {
        // X uniform on (0, 10]: ceil(X) is uniform on 1..=10, mean 5.5.
        assert!((mean_ceil_uniform(0.0, 10.0) - 5.5).abs() < 1e-12);
        // (0.5, 1]: always 1. (2.25, 3.25]: 3 w.p. 0.75, 4 w.p. 0.25.
        assert!((mean_ceil_uniform(0.5, 1.0) - 1.0).abs() < 1e-12);
        assert!((mean_ceil_uniform(2.25, 3.25) - 3.25).abs() < 1e-12);
        assert!((mean_ceil_uniform(7.0, 7.0) - 7.0).abs() < 1e-12);
        // Large values keep their precision.
        let m = mean_ceil_uniform(1e8, 1e9);
        assert!((m - (5.5e8 + 0.5)).abs() < 1e-3, "{m}");
    }

    /// The quantile function is non-decreasing, so its left and right Riemann sums over N
    /// equal steps bracket its integral (the mean, absent zeros) exactly. A rigorous,
    /// sampling-free cross-check of the analytic mean.
    #[test]
    fn analytic_mean_lies_between_riemann_sums() {
        const N: u32 = 1 << 18;
        for b in BuiltinCdf::ALL {
            let c = b.cdf();
            let (mut left, mut right) = (0.0, 0.0);
            for k in 0..N {
                left += c.quantile(f64::from(k) / f64::from(N)) as f64;
                right += c.quantile(f64::from(k + 1) / f64::from(N)) as f64;
            }
            let (left, right) = (left / f64::from(N), right / f64::from(N));
            let m = c.mean_bytes();
            assert!(left <= m && m <= right, "{}: {left} {m} {right}", b.name());
        }
    }

    /// n = 10⁶ draws per table; the sample mean must lie within 4 standard errors of the
    /// analytic mean (two-sided p ≈ 6·10⁻⁵ under normality). The standard error uses the
    /// analytic second moment. Data mining is heavy-tailed (1 % of flows in 100 MB–1 GB, CV
    /// ≈ 8) but bounded at 1 GB, so its variance is finite and the CLT applies: the
    /// skewness of the mean is γ/√n ≈ 12/1000, small enough for the normal bound to hold,
    /// and its 4-SE band is still only ±3.3 % of the mean. The tail is checked separately,
    /// and without moment assumptions, by the quantile and KS tests.
    #[test]
    fn sampled_means_match_analytic_means() {
        let n = 1_000_000u32;
        for b in BuiltinCdf::ALL {
            let c = b.cdf();
            let mut r = RngTree::new(11).stream("cdf-mean", b as u64);
            let sum: f64 = (0..n).map(|_| c.sample(&mut r) as f64).sum();
            let mean = sum / f64::from(n);
            let mu = c.mean_bytes();
            let se = ((c.second_moment_bytes2() - mu * mu) / f64::from(n)).sqrt();
            assert!(
                (mean - mu).abs() < 4.0 * se,
                "{}: sampled {mean}, analytic {mu}, se {se}",
                b.name()
            );
        }
    }

    /// KS statistic of 200,000 draws against the exact CDF of the drawn (integer) sizes,
    /// below the α = 0.001 critical value 1.9495/√n = 0.00436. Both functions are step
    /// functions that only change at integers, so the supremum is attained at the left or
    /// right limit of a sampled value.
    #[test]
    fn ks_statistic_below_critical_value() {
        let n = 200_000usize;
        for b in BuiltinCdf::ALL {
            let c = b.cdf();
            let mut r = RngTree::new(12).stream("cdf-ks", b as u64);
            let mut xs: Vec<u64> = (0..n).map(|_| c.sample(&mut r)).collect();
            xs.sort_unstable();
            let d = ks_statistic(&xs, |x| c.cdf(x));
            let crit = KS_K_001 / (n as f64).sqrt();
            assert!(d < crit, "{}: D = {d}, critical {crit}", b.name());
        }
    }

    /// Sample quantiles of 200,000 draws. The rank of the sample p-quantile is binomial, so
    /// it lies within p ± 4·sqrt(p(1−p)/n) in probability (two-sided p ≈ 6·10⁻⁵); the test
    /// checks that the sample quantile lies between the analytic quantiles at those two
    /// probabilities. Quantiles need no moments, so this also covers the data-mining tail.
    #[test]
    fn sample_quantiles_match_analytic_quantiles() {
        let n = 200_000usize;
        for b in BuiltinCdf::ALL {
            let c = b.cdf();
            let mut r = RngTree::new(13).stream("cdf-q", b as u64);
            let mut xs: Vec<u64> = (0..n).map(|_| c.sample(&mut r)).collect();
            xs.sort_unstable();
            for p in [0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999] {
                let s = 4.0 * (p * (1.0 - p) / n as f64).sqrt();
                let got = xs[((p * n as f64) as usize).min(n - 1)];
                let (lo, hi) = (c.quantile(p - s), c.quantile((p + s).min(1.0)));
                assert!(
                    lo <= got && got <= hi,
                    "{} p{p}: {got} not in [{lo}, {hi}]",
                    b.name()
                );
            }
        }
    }

    #[test]
    fn quantile_follows_the_reference_rule() {
        let c = BuiltinCdf::Websearch.cdf();
        // u ≤ 0.15 is the 9000 B point mass; the top is 30 MB.
        assert_eq!(c.quantile(0.0), 9000);
        assert_eq!(c.quantile(0.15), 9000);
        assert_eq!(c.quantile(1.0), 30_000_000);
        // Between (9000, 0.15) and (18582, 0.2): 9000 + 0.5·9582 = 13791.
        assert_eq!(c.quantile(0.175), 13_791);
        // Round up: 9000 + 0.01/0.05·9582 = 10916.4 → 10917.
        assert_eq!(c.quantile(0.16), 10_917);
        assert!((c.cdf(8999)).abs() < 1e-12);
        assert!((c.cdf(9000) - 0.15).abs() < 1e-12);
        assert!((c.cdf(30_000_000) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn formats_parse_to_the_same_table() {
        let dcsim = "# comment\n\n0 0\n10000 0.15 # inline\n30000000 1\n";
        let hpcc = "0 0\n10000 15\n30000000 100\n";
        let ns2 = "0 1 0\n10000 1 0.15\n30000000 1 1\n";
        let csv = "0,0\n10000,0.15\r\n30000000,1\r\n";
        let a = EmpiricalCdf::parse(dcsim, CdfFormat::Dcsim, 1, "a").unwrap();
        for (t, f) in [
            (hpcc, CdfFormat::Hpcc),
            (ns2, CdfFormat::Ns2),
            (csv, CdfFormat::Dcsim),
        ] {
            let b = EmpiricalCdf::parse(t, f, 1, "a").unwrap();
            assert_eq!(a.points(), b.points(), "{f:?}");
        }
    }

    /// HPCC's web-search file (alibaba-edu/High-Precision-Congestion-Control
    /// traffic_gen/WebSearch_distribution.txt); expresspass.md §3 gives its mean as
    /// 1,711,250 B (continuous; rounding up adds half a byte).
    #[test]
    fn hpcc_websearch_mean_matches_reference() {
        let t = "0 0\n10000 15\n20000 20\n30000 30\n50000 40\n80000 53\n200000 60\n\
                 1000000 70\n2000000 80\n5000000 90\n10000000 97\n30000000 100\n";
        let c = EmpiricalCdf::parse(t, CdfFormat::Hpcc, 1, "hpcc").unwrap();
        assert!(
            (c.mean_bytes() - 1_711_250.5).abs() < 0.01,
            "{}",
            c.mean_bytes()
        );
    }

    /// PIAS `CDF_dctcp.tcl` (sizes in 1460 B packets, ns-2 format); expresspass.md §3
    /// gives its mean as 1141 packets. Draws are whole packets.
    #[test]
    fn packet_tables_draw_whole_packets() {
        let t = "6 1 0\n6 1 .15\n13 1 .2\n19 1 .3\n33 1 .4\n53 1 .53\n133 1 .6\n667 1 .7\n\
                 1333 1 .8\n3333 1 .9\n6667 1 .97\n20000 1 1\n";
        let c = EmpiricalCdf::parse(t, CdfFormat::Ns2, 1460, "pias").unwrap();
        let pkts = c.mean_bytes() / 1460.0;
        assert!((pkts - 1141.0).abs() < 1.0, "{pkts}");
        let mut r = RngTree::new(3).stream("pkts", 0);
        for _ in 0..1000 {
            let s = c.sample(&mut r);
            assert!(s.is_multiple_of(1460) && (6 * 1460..=20_000 * 1460).contains(&s));
        }
    }

    #[test]
    fn zero_sizes_are_redrawn_and_excluded_from_the_mean() {
        // Half the mass at 0, the rest uniform on (0, 10] → ceil uniform on 1..=10.
        let c = EmpiricalCdf::parse("0 0.5\n10 1\n", CdfFormat::Dcsim, 1, "z").unwrap();
        assert!((c.mean_bytes() - 5.5).abs() < 1e-9);
        let mut r = RngTree::new(1).stream("z", 0);
        assert!((0..10_000).all(|_| (1..=10).contains(&c.sample(&mut r))));
        assert!(c.cdf(0).abs() < 1e-12);
        assert!((c.cdf(5) - 0.5).abs() < 1e-12);
    }

    /// With almost all the mass at 0 a draw still costs one variate, not 1 / (1 − P(0))
    /// of them, and sizes keep the conditional distribution (ceil uniform on 1..=10: mean
    /// 5.5, each value a tenth).
    #[test]
    fn a_cdf_almost_all_at_zero_samples_in_one_draw() {
        let c = EmpiricalCdf::parse("0 0.99999999\n10 1\n", CdfFormat::Dcsim, 1, "z").unwrap();
        assert!((c.mean_bytes() - 5.5).abs() < 1e-6);
        let mut r = RngTree::new(1).stream("z", 0);
        let n = 100_000;
        let mut counts = [0u32; 11];
        for _ in 0..n {
            counts[c.sample(&mut r) as usize] += 1;
        }
        assert_eq!(counts[0], 0);
        for (v, &k) in counts.iter().enumerate().skip(1) {
            // Binomial(1e5, 0.1): standard deviation 95; 5 of them.
            assert!((f64::from(k) - 10_000.0).abs() < 475.0, "{v}: {k}");
        }
    }

    #[test]
    fn malformed_tables_name_the_line() {
        let cases: &[(&str, CdfFormat, &str)] = &[
            (
                "10 0\n20 0.5 7\n",
                CdfFormat::Dcsim,
                "f:2: expected 2 columns",
            ),
            ("10 1 0\n20 1\n", CdfFormat::Ns2, "f:2: expected 3 columns"),
            ("# h\n10 0\nabc 1\n", CdfFormat::Dcsim, "f:3: size \"abc\""),
            (
                "10 0\n20 nan\n",
                CdfFormat::Dcsim,
                "f:2: cumulative probability \"nan\"",
            ),
            ("-5 0\n10 1\n", CdfFormat::Dcsim, "f:1: size -5 is negative"),
            (
                "10 0\n20 1.5\n",
                CdfFormat::Dcsim,
                "f:2: cumulative probability 1.5",
            ),
            (
                "10 0\n20 120\n",
                CdfFormat::Hpcc,
                "f:2: cumulative probability 120",
            ),
            ("10 0\n5 1\n", CdfFormat::Dcsim, "f:2: size 5 is smaller"),
            (
                "10 0.5\n20 0.4\n30 1\n",
                CdfFormat::Dcsim,
                "f:2: cumulative probability 0.4",
            ),
            (
                "10 0\n\n20 0.9\n# end\n",
                CdfFormat::Dcsim,
                "f:3: the last cumulative",
            ),
            ("# nothing\n", CdfFormat::Dcsim, "f: no data rows"),
            ("0 0\n0 1\n", CdfFormat::Dcsim, "f: every draw would be 0"),
        ];
        for &(text, format, want) in cases {
            let e = EmpiricalCdf::parse(text, format, 1, "f").unwrap_err();
            assert!(e.to_string().starts_with(want), "{e} (wanted {want})");
        }
    }

    #[test]
    fn file_errors_name_the_file() {
        let guard = tempfile::Builder::new()
            .prefix("dcsim-cdf-")
            .tempdir()
            .unwrap();
        let dir = guard.path();
        let p = dir.join("bad.cdf");
        std::fs::write(&p, "100 0\n200 0.5\n150 1\n").unwrap();
        let e = EmpiricalCdf::from_file(&p, CdfFormat::Dcsim, 1).unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(
            e.to_string().starts_with(&format!("{}:3:", p.display())),
            "{e}"
        );
        let missing = dir.join("missing.cdf");
        let e = EmpiricalCdf::from_file(&missing, CdfFormat::Dcsim, 1).unwrap_err();
        assert!(e.to_string().contains("missing.cdf: cannot read"), "{e}");
        guard.close().unwrap();
    }
}
