//! Arrival processes and the definition of offered load.
//!
//! # Load
//!
//! A target load is turned into a flow arrival rate by
//!
//! ```text
//! λ [flows/s] = C · load / (mean_size_bytes · 8 · wire_factor)
//! ```
//!
//! where `C` is the capacity the load is relative to ([`LoadBasis`]), `mean_size_bytes` is
//! the analytic mean of the flow-size distribution (or an override) and `wire_factor` is
//! the ratio of wire bytes to payload bytes. With `wire_factor = 1` the load counts payload
//! bytes; the ExpressPass fat-tree script counts wire bytes of 1538-byte frames carrying
//! 1460 payload bytes, `wire_factor = 1538/1460`; pFabric and PIAS use `1500/1460`.
//!
//! - `host-links`: `C = hosts · host_link_rate` over the pattern's hosts. Load 0.5 means the
//!   host links carry, on average, half their capacity in each direction.
//! - `tor-uplinks`: `C` is the aggregate capacity of the ToR uplinks. The pattern states an
//!   `oversubscription` factor `o` (then `C = hosts · host_link_rate / o`), or the caller
//!   supplies the topology's total ToR uplink capacity. This is the ExpressPass fat-tree
//!   script's definition: its λ is `hosts·10 Gb/s·load/(mean·8·1538/1460)` divided by its
//!   `overSub = 3`, so `C` = 192·10 Gb/s/3 = 640 Gb/s, exactly the 32 ToRs × 2 × 10 Gb/s of
//!   uplinks. At load 0.6 the core is offered 60 % and each host link about 20 %.

use core::fmt;

use dcsim_engine::{Dur, Rate, Rng};
use serde::{Deserialize, Serialize};

use crate::unit_f64;

/// What a target load is relative to (see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoadBasis {
    /// The aggregate capacity of the pattern's host links.
    HostLinks,
    /// The aggregate capacity of the ToR uplinks.
    TorUplinks,
}

/// A non-negative factor written as a number (`1.25`) or as a fraction string
/// (`"1538/1460"`), which keeps the intent readable and the value exact to the last bit.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Ratio {
    num: f64,
    den: f64,
    /// Written as a fraction (serialized back as one).
    fraction: bool,
}

impl Ratio {
    /// The factor 1.
    pub const ONE: Self = Self {
        num: 1.0,
        den: 1.0,
        fraction: false,
    };

    /// `num / den`; both must be finite and positive.
    pub fn new(num: f64, den: f64) -> Result<Self, String> {
        if num.is_finite() && den.is_finite() && num > 0.0 && den > 0.0 {
            Ok(Self {
                num,
                den,
                fraction: true,
            })
        } else {
            Err(format!("{num}/{den} must be a positive, finite ratio"))
        }
    }

    /// The value.
    pub fn value(self) -> f64 {
        self.num / self.den
    }

    /// A plain number (not a fraction).
    pub fn from_f64(v: f64) -> Result<Self, String> {
        Self::new(v, 1.0).map(|r| Self {
            fraction: false,
            ..r
        })
    }

    pub(crate) const fn one() -> Self {
        Self::ONE
    }
}

impl Default for Ratio {
    fn default() -> Self {
        Self::ONE
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.fraction {
            write!(f, "{}/{}", self.num, self.den)
        } else {
            write!(f, "{}", self.num)
        }
    }
}

impl Serialize for Ratio {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.fraction {
            s.collect_str(self)
        } else {
            s.serialize_f64(self.num)
        }
    }
}

impl<'de> Deserialize<'de> for Ratio {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Ratio;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a positive number or a fraction such as \"1538/1460\"")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Ratio, E> {
                Ratio::from_f64(v).map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Ratio, E> {
                self.visit_f64(v as f64)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Ratio, E> {
                self.visit_f64(v as f64)
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Ratio, E> {
                let num = |s: &str| {
                    s.trim()
                        .parse::<f64>()
                        .map_err(|_| E::custom(format!("{v:?} is not a number or a fraction a/b")))
                };
                match v.split_once('/') {
                    Some((a, b)) => Ratio::new(num(a)?, num(b)?).map_err(E::custom),
                    None => Ratio::from_f64(num(v)?).map_err(E::custom),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// How a target load becomes an arrival rate: the inputs of the formula in the
/// [module docs](self) and its result. Recorded with the run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct LoadInfo {
    /// Target load (fraction of `capacity_bps`).
    pub load: f64,
    /// What the load is relative to.
    pub relative_to: LoadBasis,
    /// The capacity `C`, bits/s.
    pub capacity_bps: f64,
    /// Wire bytes per payload byte.
    pub wire_factor: f64,
    /// Mean flow size used in the formula, bytes (the analytic mean unless overridden).
    pub mean_size_bytes: f64,
    /// `C · load`: offered wire bits per second.
    pub offered_bps: f64,
    /// The resulting arrival rate λ, flows per second.
    pub flows_per_s: f64,
}

/// The parts of a pattern that define its load.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LoadParams {
    pub load: f64,
    pub relative_to: LoadBasis,
    pub oversubscription: Option<f64>,
    pub wire_factor: Ratio,
    pub mean_size_bytes: f64,
    /// Hosts in the pattern's set.
    pub hosts: u32,
    pub host_link: Option<Rate>,
    pub tor_uplink_capacity: Option<Rate>,
}

impl LoadParams {
    /// Applies the formula. Errors are `"field: message"`.
    pub fn resolve(self) -> Result<LoadInfo, String> {
        if !(self.load.is_finite() && self.load > 0.0) {
            return Err(format!("load: {} must be positive", self.load));
        }
        let host_capacity = || {
            self.host_link
                .map(|r| f64::from(self.hosts) * r.bps() as f64)
                .ok_or_else(|| {
                    "load_relative_to: the host link rate is unknown (the topology must supply it)"
                        .to_string()
                })
        };
        let capacity_bps = match (self.relative_to, self.oversubscription) {
            (LoadBasis::HostLinks, None) => host_capacity()?,
            (LoadBasis::HostLinks, Some(_)) => {
                return Err(
                    "oversubscription: only meaningful with load_relative_to = \"tor-uplinks\""
                        .into(),
                );
            }
            (LoadBasis::TorUplinks, Some(o)) => {
                if !(o.is_finite() && o > 0.0) {
                    return Err(format!("oversubscription: {o} must be positive"));
                }
                host_capacity()? / o
            }
            (LoadBasis::TorUplinks, None) => self
                .tor_uplink_capacity
                .map(|r| r.bps() as f64)
                .ok_or_else(|| {
                    "load_relative_to: \"tor-uplinks\" needs oversubscription = <factor>, or a \
                     topology whose ToR uplink capacity is known"
                        .to_string()
                })?,
        };
        if capacity_bps <= 0.0 {
            return Err("load_relative_to: the capacity is zero".into());
        }
        let offered_bps = capacity_bps * self.load;
        let w = self.wire_factor.value();
        Ok(LoadInfo {
            load: self.load,
            relative_to: self.relative_to,
            capacity_bps,
            wire_factor: w,
            mean_size_bytes: self.mean_size_bytes,
            offered_bps,
            flows_per_s: offered_bps / (self.mean_size_bytes * 8.0 * w),
        })
    }
}

/// An arrival process for events such as incast queries, as written in a scenario.
///
/// - `{ poisson_per_s = 500.0 }`: a Poisson process, 500 events per second on average;
/// - `{ every = "2ms" }`: one event every 2 ms.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ArrivalSpec {
    /// Poisson arrivals at this mean rate, events per second.
    PoissonPerS(f64),
    /// Periodic arrivals with this period.
    Every(Dur),
}

impl ArrivalSpec {
    /// Mean events per second.
    pub fn rate_per_s(self) -> f64 {
        match self {
            Self::PoissonPerS(r) => r,
            Self::Every(d) => 1.0 / d.as_secs_f64(),
        }
    }

    /// Checks the parameters; errors are `"field: message"`.
    pub(crate) fn validate(self) -> Result<(), String> {
        match self {
            Self::PoissonPerS(r) if !(r.is_finite() && r > 0.0) => {
                Err(format!("poisson_per_s: {r} must be positive"))
            }
            Self::Every(d) if d == Dur::ZERO => Err("every: must be greater than zero".into()),
            _ => Ok(()),
        }
    }
}

/// Event times of an arrival process, one at a time, in integer picoseconds.
///
/// A Poisson process that starts at `start` has its first event at `start + gap`; a
/// periodic one has its first event at `start`. Exponential gaps are `−ln(1 − u)·mean`
/// with `u` uniform on `[0, 1)` (53 bits) and `ln` from `libm`, rounded to the nearest
/// picosecond; times add up in integers, so they never drift. O(1) memory.
#[derive(Clone, Debug)]
pub(crate) struct Arrivals {
    next_ps: u64,
    kind: ArrivalKind,
}

#[derive(Clone, Debug)]
enum ArrivalKind {
    Poisson { mean_gap_ps: f64, rng: Rng },
    Periodic { period_ps: u64 },
}

impl Arrivals {
    /// Poisson arrivals at `per_s` events per second from `start`.
    pub fn poisson(start: Dur, per_s: f64, rng: Rng) -> Self {
        debug_assert!(per_s > 0.0, "validated by the caller");
        let mut a = Self {
            next_ps: start.as_ps(),
            kind: ArrivalKind::Poisson {
                mean_gap_ps: 1e12 / per_s,
                rng,
            },
        };
        a.next_ps = a.next_ps.saturating_add(a.gap_ps());
        a
    }

    /// The process for `spec` from `start`; `rng` is used only by Poisson processes.
    pub fn from_spec(spec: ArrivalSpec, start: Dur, rng: Rng) -> Self {
        match spec {
            ArrivalSpec::PoissonPerS(r) => Self::poisson(start, r, rng),
            ArrivalSpec::Every(d) => Self {
                next_ps: start.as_ps(),
                kind: ArrivalKind::Periodic {
                    period_ps: d.as_ps(),
                },
            },
        }
    }

    /// The next event time, without advancing.
    pub const fn peek(&self) -> Dur {
        Dur::from_ps(self.next_ps)
    }

    /// The next event time; advances the process. Saturates at [`Dur::MAX`].
    pub fn next_time(&mut self) -> Dur {
        let t = self.next_ps;
        self.next_ps = t.saturating_add(self.gap_ps());
        Dur::from_ps(t)
    }

    fn gap_ps(&mut self) -> u64 {
        match &mut self.kind {
            ArrivalKind::Poisson { mean_gap_ps, rng } => {
                let g = -libm::log(1.0 - unit_f64(rng)) * *mean_gap_ps;
                // `as` saturates for gaps beyond u64 (rates below 10⁻⁷ per second).
                (g + 0.5) as u64
            }
            ArrivalKind::Periodic { period_ps } => *period_ps,
        }
    }
}

#[cfg(test)]
mod tests {
    use dcsim_engine::RngTree;

    use super::*;
    use crate::BuiltinCdf;
    use crate::testutil::ks_statistic;

    /// 2·10⁶ exponential gaps with mean 1 µs. The sample mean has relative SE 1/√n =
    /// 0.07 %, so 1 % is 14 SE. The sample variance has relative SE √(8/n) = 0.2 % (the
    /// fourth central moment of the exponential is 9σ⁴), so 1 % is 5 SE. A fixed seed
    /// makes both repeatable.
    #[test]
    fn poisson_gaps_have_the_exponential_mean_and_variance() {
        let n = 2_000_000usize;
        let mut a = Arrivals::poisson(Dur::ZERO, 1e6, RngTree::new(9).stream("gap", 0));
        let mut prev = 0u64;
        let gaps: Vec<f64> = (0..n)
            .map(|_| {
                let t = a.next_time().as_ps();
                let g = t - prev;
                prev = t;
                g as f64
            })
            .collect();
        let mean = gaps.iter().sum::<f64>() / n as f64;
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        assert!((mean / 1e6 - 1.0).abs() < 0.01, "mean {mean}");
        assert!((var / 1e12 - 1.0).abs() < 0.01, "variance {var}");
    }

    /// KS of 200,000 gaps (mean 1 µs) against the exponential CDF, below the α = 0.001
    /// critical value 1.9495/√n. Gaps are rounded to whole picoseconds; the CDF at the
    /// integer k is that of the rounded variable, 1 − exp(−(k + 0.5)/mean).
    #[test]
    fn poisson_gaps_pass_a_ks_test() {
        let n = 200_000usize;
        let mean = 1e6;
        let mut a = Arrivals::poisson(Dur::ZERO, 1e6, RngTree::new(10).stream("gap", 0));
        let mut prev = 0u64;
        let mut gaps: Vec<u64> = (0..n)
            .map(|_| {
                let t = a.next_time().as_ps();
                let g = t - prev;
                prev = t;
                g
            })
            .collect();
        gaps.sort_unstable();
        let d = ks_statistic(&gaps, |k| 1.0 - libm::exp(-(k as f64 + 0.5) / mean));
        assert!(d < 1.9495 / (n as f64).sqrt(), "D = {d}");
    }

    #[test]
    fn periodic_arrivals_start_at_start() {
        let mut a = Arrivals::from_spec(
            ArrivalSpec::Every(Dur::from_us(5)),
            Dur::from_us(1),
            RngTree::new(0).stream("x", 0),
        );
        let t: Vec<u64> = (0..3).map(|_| a.next_time().as_ns()).collect();
        assert_eq!(t, [1000, 6000, 11_000]);
        assert_eq!(a.peek(), Dur::from_us(16));
    }

    /// The ExpressPass fat-tree at 10 Gb/s, web search, load 0.6 relative to the ToR
    /// uplinks with oversubscription 3: C = 640 Gb/s and λ = 384·10⁹/(mean·8·1538/1460).
    #[test]
    fn fat_tree_load_matches_the_script() {
        let mean = BuiltinCdf::Websearch.cdf().mean_bytes();
        let p = LoadParams {
            load: 0.6,
            relative_to: LoadBasis::TorUplinks,
            oversubscription: Some(3.0),
            wire_factor: Ratio::new(1538.0, 1460.0).unwrap(),
            mean_size_bytes: mean,
            hosts: 192,
            host_link: Some(Rate::from_gbps(10)),
            tor_uplink_capacity: None,
        };
        let info = p.resolve().unwrap();
        assert!((info.capacity_bps - 640e9).abs() < 1.0);
        let want = 384e9 / (mean * 8.0 * 1538.0 / 1460.0);
        assert!((info.flows_per_s - want).abs() < 1e-9 * want);
        // ≈ 26,647 flows/s: 100,000 flows take about 3.75 s of simulated time.
        assert!(
            (info.flows_per_s - 26_647.0).abs() < 1.0,
            "{}",
            info.flows_per_s
        );
        // The same capacity supplied by the topology instead of a factor.
        let q = LoadParams {
            oversubscription: None,
            tor_uplink_capacity: Some(Rate::from_gbps(640)),
            ..p
        };
        assert_eq!(q.resolve().unwrap(), info);
        let r = LoadParams {
            oversubscription: None,
            ..p
        };
        assert!(
            r.resolve()
                .unwrap_err()
                .starts_with("load_relative_to: \"tor-uplinks\" needs")
        );
    }

    #[test]
    fn ratios_parse_from_numbers_and_fractions() {
        #[derive(Deserialize, Serialize)]
        struct H {
            w: Ratio,
        }
        let r = |s: &str| toml::from_str::<H>(s).map(|h| h.w.value());
        assert!((r("w = \"1538/1460\"").unwrap() - 1538.0 / 1460.0).abs() < 1e-15);
        assert!((r("w = 1.5").unwrap() - 1.5).abs() < 1e-15);
        assert!((r("w = 2").unwrap() - 2.0).abs() < 1e-15);
        assert!(r("w = \"1538/0\"").is_err());
        assert!(r("w = \"x\"").is_err());
        assert!(r("w = -1").is_err());
        let back = toml::to_string(&H {
            w: Ratio::new(1538.0, 1460.0).unwrap(),
        })
        .unwrap();
        assert_eq!(back.trim(), "w = \"1538/1460\"");
    }
}
