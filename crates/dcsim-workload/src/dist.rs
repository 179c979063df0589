//! Flow-size distributions: the scenario form ([`SizeSpec`]) and the built form
//! ([`SizeDist`]), which draws sizes and knows its exact mean.

use core::fmt;
use std::path::Path;

use dcsim_engine::{ByteSize, Rng};
use rand::RngExt;
use serde::{Deserialize, Serialize};

use crate::cdf::{BuiltinCdf, CdfFormat, EmpiricalCdf};
use crate::unit_f64;

/// A flow-size distribution as written in a scenario: a table with exactly one of the keys
/// below.
///
/// | TOML | meaning |
/// |---|---|
/// | `{ cdf = "websearch" }` | a built-in CDF ([`BuiltinCdf`]) |
/// | `{ cdf_file = "x.txt", format = "hpcc", packet_bytes = "1460B" }` | a CDF file; `format` (default `"dcsim"`) is a [`CdfFormat`]; `packet_bytes`, if given, says the sizes are in packets of that many bytes |
/// | `{ fixed = "10KB" }` | every flow the same size |
/// | `{ uniform = ["8KB", "32KB"] }` | uniform on whole bytes, both ends included |
/// | `{ pareto = { mean = "100KB", shape = 1.2 } }` | Pareto with that mean and shape α > 1 |
///
/// Empirical CDFs are sampled by the rule in [`crate::cdf`]; every other draw is rounded up
/// to whole bytes as well, so sizes are at least 1 byte.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "SizeSpecRaw", into = "SizeSpecRaw")]
pub enum SizeSpec {
    /// A built-in CDF.
    Cdf(BuiltinCdf),
    /// A CDF file.
    CdfFile {
        /// Path; a relative path is taken from the scenario's directory (the `base_dir` of
        /// [`SizeSpec::build`]).
        path: String,
        /// Column layout (default [`CdfFormat::Dcsim`]).
        format: CdfFormat,
        /// If set, sizes in the file are in packets of this many bytes (pFabric and PIAS
        /// tables use 1460 B); draws are then rounded up to whole packets.
        packet_bytes: Option<ByteSize>,
    },
    /// Every flow carries this many bytes.
    Fixed(ByteSize),
    /// Uniform on `min..=max` bytes.
    Uniform {
        /// Smallest size (≥ 1 B).
        min: ByteSize,
        /// Largest size (≥ `min`).
        max: ByteSize,
    },
    /// Pareto (type I) with the given mean and shape: scale `x_m = mean·(α − 1)/α`,
    /// `P(X > x) = (x_m/x)^α` for `x ≥ x_m`, drawn as `x_m·(1 − u)^(−1/α)` (ns-2's
    /// `RandomVariable/Pareto`) and rounded up. α ≤ 2 has infinite variance.
    Pareto {
        /// Mean of the continuous distribution (the drawn mean is about 0.5 B larger).
        mean: ByteSize,
        /// Shape α, > 1 so that the mean is finite.
        shape: f64,
    },
}

impl SizeSpec {
    /// Builds the distribution. `base_dir` anchors a relative `cdf_file` path (the directory
    /// of the scenario file); `None` means the current directory. Errors are
    /// `"field: message"`; file errors name the file and line.
    pub fn build(&self, base_dir: Option<&Path>) -> Result<SizeDist, String> {
        match *self {
            Self::Cdf(b) => Ok(SizeDist::Empirical(b.cdf())),
            Self::CdfFile {
                ref path,
                format,
                packet_bytes,
            } => {
                let p = Path::new(path);
                let full = match base_dir {
                    Some(d) if p.is_relative() => d.join(p),
                    _ => p.to_path_buf(),
                };
                let unit = packet_bytes.map_or(1, ByteSize::bytes);
                if unit == 0 {
                    return Err("packet_bytes: must be at least 1 byte".into());
                }
                EmpiricalCdf::from_file(&full, format, unit)
                    .map(SizeDist::Empirical)
                    .map_err(|e| format!("cdf_file: {e}"))
            }
            Self::Fixed(b) => {
                if b.bytes() == 0 {
                    return Err("fixed: a flow must carry at least 1 byte".into());
                }
                Ok(SizeDist::Fixed(b.bytes()))
            }
            Self::Uniform { min, max } => {
                if min.bytes() == 0 {
                    return Err("uniform: the smallest size must be at least 1 byte".into());
                }
                if min > max {
                    return Err(format!(
                        "uniform: the minimum {min} exceeds the maximum {max}"
                    ));
                }
                Ok(SizeDist::Uniform {
                    min_bytes: min.bytes(),
                    max_bytes: max.bytes(),
                })
            }
            Self::Pareto { mean, shape } => {
                SizeDist::pareto(mean.bytes() as f64, shape).map_err(|e| format!("pareto.{e}"))
            }
        }
    }
}

/// A flow-size distribution ready to draw from.
#[derive(Clone, Debug, PartialEq)]
pub enum SizeDist {
    /// Always this many bytes.
    Fixed(u64),
    /// Uniform on `min_bytes..=max_bytes`.
    Uniform {
        /// Smallest size, bytes.
        min_bytes: u64,
        /// Largest size, bytes.
        max_bytes: u64,
    },
    /// Pareto type I, rounded up to whole bytes (see [`SizeSpec::Pareto`]).
    Pareto {
        /// Scale `x_m`, bytes (the smallest continuous value).
        scale_bytes: f64,
        /// Shape α > 1.
        shape: f64,
    },
    /// An empirical CDF.
    Empirical(EmpiricalCdf),
    /// A mixture of distributions (see [`SizeDist::mix_by_bytes`]).
    Mix(Mix),
}

/// A mixture: each draw first picks a component with its flow probability, then draws from
/// it. Built by [`SizeDist::mix_by_bytes`].
#[derive(Clone, Debug, PartialEq)]
pub struct Mix {
    /// Cumulative flow probability of each component; the last is 1.
    cumulative: Vec<f64>,
    /// Share of bytes of each component, as given.
    byte_shares: Vec<f64>,
    parts: Vec<SizeDist>,
}

impl Mix {
    /// The components and their shares of bytes.
    pub fn parts(&self) -> impl Iterator<Item = (f64, &SizeDist)> {
        self.byte_shares.iter().copied().zip(&self.parts)
    }
}

impl SizeDist {
    /// A Pareto distribution with continuous mean `mean_bytes` and shape `shape` (> 1).
    /// Errors are `"field: message"` with fields `mean` and `shape`.
    pub fn pareto(mean_bytes: f64, shape: f64) -> Result<Self, String> {
        if !(shape.is_finite() && shape > 1.0) {
            return Err(format!(
                "shape: {shape} must be greater than 1 (the mean is infinite otherwise)"
            ));
        }
        if !(mean_bytes.is_finite() && mean_bytes >= 1.0) {
            return Err("mean: must be at least 1 byte".into());
        }
        Ok(Self::Pareto {
            scale_bytes: mean_bytes * (shape - 1.0) / shape,
            shape,
        })
    }

    /// A mixture in which component `k` carries the share `share_k` of all bytes. Its flow
    /// probability is `p_k = (share_k/mean_k) / Σ_j (share_j/mean_j)`. The shares must be
    /// ≥ 0 and add up to 1 (to within 10⁻⁹).
    ///
    /// For example the Pulser background mix: short flows uniform on 8–32 KB carrying 70 %
    /// of the bytes, long flows of 1 MB carrying 30 %, gives `p_long = 0.3/10⁶ /
    /// (0.3/10⁶ + 0.7/20,000.5) ≈ 0.85 %`.
    pub fn mix_by_bytes(parts: Vec<(f64, Self)>) -> Result<Self, String> {
        if parts.is_empty() {
            return Err("a mix needs at least one component".into());
        }
        if parts.iter().any(|(s, _)| !(s.is_finite() && *s >= 0.0)) {
            return Err("byte shares must be finite and ≥ 0".into());
        }
        let total: f64 = parts.iter().map(|(s, _)| s).sum();
        if (total - 1.0).abs() > 1e-9 {
            return Err(format!("byte shares add up to {total}, not 1"));
        }
        let weights: Vec<f64> = parts.iter().map(|(s, d)| s / d.mean_bytes()).collect();
        let wsum: f64 = weights.iter().sum();
        let mut acc = 0.0;
        let mut cumulative: Vec<f64> = weights
            .iter()
            .map(|w| {
                acc += w / wsum;
                acc
            })
            .collect();
        if let Some(last) = cumulative.last_mut() {
            *last = 1.0;
        }
        let (byte_shares, parts) = parts.into_iter().unzip();
        Ok(Self::Mix(Mix {
            cumulative,
            byte_shares,
            parts,
        }))
    }

    /// One size in bytes (≥ 1).
    pub fn sample(&self, r: &mut Rng) -> u64 {
        match self {
            Self::Fixed(b) => *b,
            Self::Uniform {
                min_bytes,
                max_bytes,
            } => r.random_range(*min_bytes..=*max_bytes),
            Self::Pareto { scale_bytes, shape } => {
                // ns-2 RandomVariable/Pareto: scale · (1/u)^(1/shape), with u ∈ (0, 1].
                let x = scale_bytes * libm::pow(1.0 - unit_f64(r), -1.0 / shape);
                // `as` saturates; sizes past 2⁶⁴ B do not occur for any useful shape.
                (x.ceil() as u64).max(1)
            }
            Self::Empirical(c) => c.sample(r),
            Self::Mix(m) => {
                let u = unit_f64(r);
                let k = m
                    .cumulative
                    .partition_point(|&c| c <= u)
                    .min(m.parts.len() - 1);
                m.parts[k].sample(r)
            }
        }
    }

    /// Mean drawn size in bytes, exact for the sampling rule (rounding up included).
    pub fn mean_bytes(&self) -> f64 {
        match self {
            Self::Fixed(b) => *b as f64,
            Self::Uniform {
                min_bytes,
                max_bytes,
            } => (*min_bytes as f64 + *max_bytes as f64) / 2.0,
            Self::Pareto { scale_bytes, shape } => pareto_ceil_mean(*scale_bytes, *shape),
            Self::Empirical(c) => c.mean_bytes(),
            Self::Mix(m) => {
                let mut prev = 0.0;
                m.cumulative
                    .iter()
                    .zip(&m.parts)
                    .map(|(&c, d)| {
                        let p = c - prev;
                        prev = c;
                        p * d.mean_bytes()
                    })
                    .sum()
            }
        }
    }
}

impl fmt::Display for SizeDist {
    /// A one-line description for run records, e.g. `cdf websearch`, `uniform 8000..=32000 B`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fixed(b) => write!(f, "fixed {b} B"),
            Self::Uniform {
                min_bytes,
                max_bytes,
            } => write!(f, "uniform {min_bytes}..={max_bytes} B"),
            Self::Pareto { scale_bytes, shape } => {
                write!(f, "pareto scale {scale_bytes} B shape {shape}")
            }
            Self::Empirical(c) if c.unit_bytes() == 1 => write!(f, "cdf {}", c.source()),
            Self::Empirical(c) => write!(f, "cdf {} ({} B packets)", c.source(), c.unit_bytes()),
            Self::Mix(m) => {
                f.write_str("mix [")?;
                for (i, (s, d)) in m.parts().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{s} of bytes: {d}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// `E[ceil(X)]` for Pareto `X` with scale `s` and shape `a > 1`:
/// `Σ_{k≥0} P(X > k) = N + s^a·Σ_{k≥N} k^(−a)` with `N = ⌈s⌉`. The tail sum (a Hurwitz zeta
/// value) adds terms directly up to k = 16 and finishes with Euler–Maclaurin to the k⁻⁵
/// term, whose error is below 10⁻¹² relative.
fn pareto_ceil_mean(s: f64, a: f64) -> f64 {
    let n = s.ceil().max(1.0);
    let mut k = n;
    let mut tail = 0.0;
    while k < 16.0 {
        tail += libm::pow(k, -a);
        k += 1.0;
    }
    let t = libm::pow(k, -a);
    tail += k * t / (a - 1.0) + t / 2.0 + a * t / (12.0 * k)
        - a * (a + 1.0) * (a + 2.0) * t / (720.0 * k.powi(3))
        + a * (a + 1.0) * (a + 2.0) * (a + 3.0) * (a + 4.0) * t / (30240.0 * k.powi(5));
    n + libm::pow(s, a) * tail
}

/// The serde form of [`SizeSpec`]: one table, exactly one distribution key.
#[derive(Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SizeSpecRaw {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cdf: Option<BuiltinCdf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cdf_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    format: Option<CdfFormat>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    packet_bytes: Option<ByteSize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fixed: Option<ByteSize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uniform: Option<[ByteSize; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pareto: Option<ParetoRaw>,
}

#[derive(Clone, Copy, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ParetoRaw {
    mean: ByteSize,
    shape: f64,
}

impl TryFrom<SizeSpecRaw> for SizeSpec {
    type Error = String;
    fn try_from(r: SizeSpecRaw) -> Result<Self, String> {
        let given = [
            r.cdf.is_some(),
            r.cdf_file.is_some(),
            r.fixed.is_some(),
            r.uniform.is_some(),
            r.pareto.is_some(),
        ];
        if given.iter().filter(|&&g| g).count() != 1 {
            return Err(
                "give exactly one of cdf, cdf_file, fixed, uniform, pareto (e.g. { cdf = \"websearch\" })"
                    .into(),
            );
        }
        if r.cdf_file.is_none() && (r.format.is_some() || r.packet_bytes.is_some()) {
            return Err("format and packet_bytes go with cdf_file only".into());
        }
        Ok(if let Some(b) = r.cdf {
            Self::Cdf(b)
        } else if let Some(path) = r.cdf_file {
            Self::CdfFile {
                path,
                format: r.format.unwrap_or_default(),
                packet_bytes: r.packet_bytes,
            }
        } else if let Some(b) = r.fixed {
            Self::Fixed(b)
        } else if let Some([min, max]) = r.uniform {
            Self::Uniform { min, max }
        } else {
            let p = r.pareto.expect("exactly one key is set and it is pareto");
            Self::Pareto {
                mean: p.mean,
                shape: p.shape,
            }
        })
    }
}

impl From<SizeSpec> for SizeSpecRaw {
    fn from(s: SizeSpec) -> Self {
        match s {
            SizeSpec::Cdf(b) => Self {
                cdf: Some(b),
                ..Self::default()
            },
            SizeSpec::CdfFile {
                path,
                format,
                packet_bytes,
            } => Self {
                cdf_file: Some(path),
                format: Some(format),
                packet_bytes,
                ..Self::default()
            },
            SizeSpec::Fixed(b) => Self {
                fixed: Some(b),
                ..Self::default()
            },
            SizeSpec::Uniform { min, max } => Self {
                uniform: Some([min, max]),
                ..Self::default()
            },
            SizeSpec::Pareto { mean, shape } => Self {
                pareto: Some(ParetoRaw { mean, shape }),
                ..Self::default()
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use dcsim_engine::RngTree;

    use super::*;
    use crate::testutil::ks_statistic;

    #[derive(Debug, Deserialize, Serialize)]
    struct Holder {
        flow_size: SizeSpec,
    }

    fn parse(s: &str) -> Result<SizeSpec, String> {
        toml::from_str::<Holder>(s)
            .map(|h| h.flow_size)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn every_toml_shape_parses_and_round_trips() {
        let cases = [
            (
                r#"flow_size = { cdf = "websearch" }"#,
                SizeSpec::Cdf(BuiltinCdf::Websearch),
            ),
            (
                r#"flow_size = { cdf_file = "w.txt", format = "ns2", packet_bytes = "1460B" }"#,
                SizeSpec::CdfFile {
                    path: "w.txt".into(),
                    format: CdfFormat::Ns2,
                    packet_bytes: Some(ByteSize(1460)),
                },
            ),
            (
                r#"flow_size = { cdf_file = "w.txt" }"#,
                SizeSpec::CdfFile {
                    path: "w.txt".into(),
                    format: CdfFormat::Dcsim,
                    packet_bytes: None,
                },
            ),
            (
                r#"flow_size = { fixed = "10KB" }"#,
                SizeSpec::Fixed(ByteSize(10_000)),
            ),
            (
                r#"flow_size = { uniform = ["8KB", "32KB"] }"#,
                SizeSpec::Uniform {
                    min: ByteSize(8000),
                    max: ByteSize(32_000),
                },
            ),
            (
                r#"flow_size = { pareto = { mean = "100KB", shape = 1.2 } }"#,
                SizeSpec::Pareto {
                    mean: ByteSize(100_000),
                    shape: 1.2,
                },
            ),
        ];
        for (text, want) in cases {
            let got = parse(text).unwrap();
            assert_eq!(got, want, "{text}");
            let back = toml::to_string(&Holder { flow_size: got }).unwrap();
            assert_eq!(parse(&back).unwrap(), want, "{back}");
        }
    }

    #[test]
    fn bad_shapes_are_explained() {
        for (text, want) in [
            (r#"flow_size = { }"#, "give exactly one of"),
            (
                r#"flow_size = { fixed = "1KB", cdf = "websearch" }"#,
                "give exactly one of",
            ),
            (
                r#"flow_size = { cdf = "search" }"#,
                "unknown variant `search`",
            ),
            (
                r#"flow_size = { cdf = "websearch", format = "hpcc" }"#,
                "go with cdf_file only",
            ),
            (r#"flow_size = { fixd = "1KB" }"#, "unknown field `fixd`"),
            (r#"flow_size = { fixed = 100 }"#, "has no unit"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
        assert!(
            SizeSpec::Fixed(ByteSize(0))
                .build(None)
                .unwrap_err()
                .starts_with("fixed:")
        );
        let u = SizeSpec::Uniform {
            min: ByteSize(10),
            max: ByteSize(5),
        };
        assert!(u.build(None).unwrap_err().starts_with("uniform:"));
        let p = SizeSpec::Pareto {
            mean: ByteSize(100),
            shape: 1.0,
        };
        assert!(p.build(None).unwrap_err().starts_with("pareto.shape:"));
        let f = SizeSpec::CdfFile {
            path: "no-such-file.txt".into(),
            format: CdfFormat::Dcsim,
            packet_bytes: None,
        };
        let e = f.build(Some(Path::new("/nonexistent-dir"))).unwrap_err();
        assert!(
            e.starts_with("cdf_file: /nonexistent-dir/no-such-file.txt: cannot read"),
            "{e}"
        );
    }

    #[test]
    fn cdf_file_is_read_relative_to_the_base_dir() {
        let guard = tempfile::Builder::new()
            .prefix("dcsim-dist-")
            .tempdir()
            .unwrap();
        let dir = guard.path();
        std::fs::write(dir.join("t.txt"), "1 0\n1 .5\n3 1\n").unwrap();
        let s = SizeSpec::CdfFile {
            path: "t.txt".into(),
            format: CdfFormat::Ns2,
            packet_bytes: None,
        };
        let e = s.build(Some(dir)).unwrap_err();
        assert!(e.contains("t.txt:1: expected 3 columns"), "{e}");
        let s = SizeSpec::CdfFile {
            path: "t.txt".into(),
            format: CdfFormat::Dcsim,
            packet_bytes: Some(ByteSize(1000)),
        };
        let d = s.build(Some(dir)).unwrap();
        // Half the flows 1 packet; the rest ceil(U(1, 3]) ∈ {2, 3}, mean 2.5 packets.
        assert!((d.mean_bytes() - 1750.0).abs() < 1e-9);
        guard.close().unwrap();
    }

    #[test]
    fn uniform_is_inclusive_with_the_stated_mean() {
        let d = SizeSpec::Uniform {
            min: ByteSize(8000),
            max: ByteSize(32_000),
        }
        .build(None)
        .unwrap();
        assert!((d.mean_bytes() - 20_000.0).abs() < 1e-9);
        let mut r = RngTree::new(2).stream("u", 0);
        let n = 400_000;
        let xs: Vec<u64> = (0..n).map(|_| d.sample(&mut r)).collect();
        assert!(xs.iter().all(|x| (8000..=32_000).contains(x)));
        // σ = 24000/√12 ≈ 6928 B, SE over 400k draws ≈ 11 B; 4 SE ≈ 44 B.
        let mean = xs.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean - 20_000.0).abs() < 44.0, "{mean}");
    }

    /// E[ceil X] by the Euler–Maclaurin formula against brute force: Σ P(X > k) summed to
    /// K = 2·10⁶ plus the integral tail, which for α = 2.5 is exact to 10⁻⁹.
    #[test]
    fn pareto_mean_is_exact() {
        for (s, a) in [(3.0, 2.5), (2.4, 2.5), (1000.7, 2.5)] {
            let k_max = 2_000_000u32;
            let brute: f64 = (0..k_max)
                .map(|k| {
                    let k = f64::from(k);
                    if k < s { 1.0 } else { libm::pow(s / k, a) }
                })
                .sum::<f64>()
                + libm::pow(s, a) * libm::pow(f64::from(k_max) - 0.5, 1.0 - a) / (a - 1.0);
            let m = pareto_ceil_mean(s, a);
            assert!((m - brute).abs() < 1e-6 * brute, "s {s}: {m} vs {brute}");
        }
        // For a large scale the rounding adds almost exactly half a byte.
        let d = SizeDist::pareto(100_000.0, 1.2).unwrap();
        assert!(
            (d.mean_bytes() - 100_000.5).abs() < 0.01,
            "{}",
            d.mean_bytes()
        );
    }

    /// Pareto draws against the exact CDF of ceil(X): P(ceil X ≤ k) = 1 − (x_m/k)^α for
    /// k ≥ x_m. KS over 200,000 draws below the α = 0.001 critical value 1.9495/√n. (The
    /// mean is not tested by sampling: with α = 1.2 the variance is infinite.)
    #[test]
    fn pareto_draws_follow_the_distribution() {
        let d = SizeDist::pareto(100_000.0, 1.2).unwrap();
        let SizeDist::Pareto { scale_bytes, shape } = d else {
            unreachable!()
        };
        let mut r = RngTree::new(4).stream("p", 0);
        let n = 200_000usize;
        let mut xs: Vec<u64> = (0..n).map(|_| d.sample(&mut r)).collect();
        xs.sort_unstable();
        let f = |k: u64| {
            let k = k as f64;
            if k < scale_bytes {
                0.0
            } else {
                1.0 - libm::pow(scale_bytes / k, shape)
            }
        };
        let dstat = ks_statistic(&xs, f);
        assert!(dstat < 1.9495 / (n as f64).sqrt(), "D = {dstat}");
    }

    /// The Pulser mix: 70 % of bytes in 8–32 KB flows, 30 % in 1 MB flows. Over 10⁶ draws
    /// the long flows' share of bytes is 0.3 ± 0.01. The count of long flows is binomial
    /// (p ≈ 0.85 %, ≈ 8500 expected, SE ≈ 1.1 %), so the share has a relative SE of ≈ 0.8 %,
    /// i.e. ≈ 0.0023 absolute; 0.01 is more than 4 SE.
    #[test]
    fn byte_share_mix_carries_the_stated_shares() {
        let short = SizeDist::Uniform {
            min_bytes: 8000,
            max_bytes: 32_000,
        };
        let long = SizeDist::Fixed(1_000_000);
        let d = SizeDist::mix_by_bytes(vec![(0.7, short), (0.3, long)]).unwrap();
        let mean = d.mean_bytes();
        // 1/mean = 0.7/20000 + 0.3/10⁶.
        assert!(
            (mean - 1.0 / (0.7 / 20_000.0 + 0.3 / 1e6)).abs() < 1e-6,
            "{mean}"
        );
        let mut r = RngTree::new(5).stream("mix", 0);
        let (mut long_bytes, mut all) = (0u64, 0u64);
        for _ in 0..1_000_000 {
            let s = d.sample(&mut r);
            assert!((8000..=32_000).contains(&s) || s == 1_000_000);
            all += s;
            if s == 1_000_000 {
                long_bytes += s;
            }
        }
        let share = long_bytes as f64 / all as f64;
        assert!((share - 0.3).abs() < 0.01, "{share}");
        assert!(SizeDist::mix_by_bytes(vec![(0.5, SizeDist::Fixed(1))]).is_err());
    }
}
