//! Workloads: flow-size distributions, arrival processes and traffic patterns that produce
//! plain flow descriptions ([`GenFlow`]). A workload never starts a transport itself; the
//! facade turns its output into flows.
//!
//! - [`cdf`]: empirical CDFs (built-in and from files in four formats), the reference
//!   sampling rule and the exact analytic mean;
//! - [`dist`]: [`SizeSpec`] (scenario form) and [`SizeDist`] (fixed, uniform, Pareto,
//!   empirical, byte-share mixtures);
//! - [`arrival`]: the definition of load ([`LoadBasis`], the load-to-λ formula) and arrival
//!   processes;
//! - [`pattern`]: [`FlowSource`], a lazy, time-ordered stream of flows with O(1) memory, and
//!   the patterns behind it, one file each, trace replay from CSV (`kind = "trace"`)
//!   included.
//!
//! A pattern is written in a scenario as a [`GeneratorSpec`] (`kind = "..."`). The facade
//! builds it with [`GeneratorSpec::source`] and keeps one pending event per source:
//!
//! ```
//! use dcsim_engine::{Dur, Rate, RngTree};
//! use dcsim_workload::{GeneratorSpec, SourceCx};
//!
//! let spec: GeneratorSpec = toml::from_str(r#"
//!     kind = "poisson"
//!     load = 0.6
//!     load_relative_to = "host-links"
//!     flow_size = { cdf = "websearch" }
//!     max_flows = 1000
//! "#).unwrap();
//! let rng = RngTree::new(1);
//! let cx = SourceCx { host_link: Some(Rate::from_gbps(10)), ..SourceCx::new(16, &rng, 0) };
//! let mut src = spec.source(&cx).unwrap();
//! let lambda = src.info().flows_per_s.unwrap(); // record it with the run
//! assert!((lambda - 0.6 * 160e9 / (1_710_004.5 * 8.0)).abs() < 1.0);
//! while let Some(t) = src.peek_start() {
//!     // schedule an event at t; when it fires:
//!     let f = src.next().unwrap();
//!     assert!(f.start == t && f.src != f.dst);
//! }
//! assert_eq!(src.emitted(), 1000);
//! ```
//!
//! `docs/workloads.md` describes every distribution and pattern with its parameters.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod arrival;
pub mod cdf;
pub mod dist;
pub mod pattern;

use core::fmt;
use core::str::FromStr;

use dcsim_engine::units::{SIZE_UNITS, UnitError, parse_quantity};
use dcsim_engine::{ByteSize, Dur, Rng};
use rand::Rng as _;
use serde::{Deserialize, Serialize};

pub use crate::arrival::{ArrivalSpec, LoadBasis, LoadInfo, Ratio};
pub use crate::cdf::{BuiltinCdf, CdfError, CdfFormat, EmpiricalCdf};
pub use crate::dist::{SizeDist, SizeSpec};
pub use crate::pattern::{
    Destinations, FlowGenerator, FlowSource, GeneratorSpec, IncastSpec, LeaveOrder, Limits,
    PairsSpec, PartitionAggregateSpec, Pattern, PermutationSpec, PoissonSpec, PulserSpec,
    ShuffleSpec, SourceCx, SourceInfo, TraceSpec,
};

/// A flow produced by a workload: hosts by number, times relative to the simulation start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GenFlow {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Bytes, or `None` for a long-lived flow.
    pub size_bytes: Option<u64>,
    /// Start time.
    pub start: Dur,
    /// Stop time (no new data after it), if any.
    pub stop: Option<Dur>,
}

/// A flow size: bytes with a unit (`"10MB"`), or `"inf"` for a long-lived flow.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct FlowSize(pub Option<u64>);

impl FromStr for FlowSize {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        match s.trim() {
            "inf" | "unbounded" | "infinite" => Ok(Self(None)),
            t => {
                let b = parse_quantity(t, SIZE_UNITS, "size").map_err(|mut e| {
                    e.reason.push_str(", or \"inf\" for a long-lived flow");
                    e
                })?;
                if b == 0 {
                    return Err(UnitError {
                        input: s.into(),
                        reason: "a flow must carry at least 1 byte".into(),
                    });
                }
                Ok(Self(Some(b)))
            }
        }
    }
}
impl fmt::Display for FlowSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("inf"),
            Some(b) => fmt::Display::fmt(&ByteSize(b), f),
        }
    }
}
impl fmt::Debug for FlowSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl Serialize for FlowSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
impl<'de> Deserialize<'de> for FlowSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = FlowSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a size such as \"10MB\", or \"inf\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<FlowSize, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<FlowSize, E> {
                Err(E::custom(format!(
                    "{v} has no unit; write a size such as \"{v}B\", or \"inf\""
                )))
            }
        }
        d.deserialize_any(V)
    }
}

/// A uniform draw from `[0, 1)` with 53 random bits: `(x >> 11)·2⁻⁵³` for a 64-bit output
/// `x`. Written out here so the sampling rule does not depend on a `rand` release.
pub(crate) fn unit_f64(r: &mut Rng) -> f64 {
    (r.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Helpers shared by the statistical tests.
#[cfg(test)]
pub(crate) mod testutil {
    /// Kolmogorov–Smirnov distance between the empirical CDF of sorted integer samples and
    /// the CDF `f` of an integer-valued distribution. Both are step functions that change
    /// only at integers, so the supremum is attained at a sampled value `x` or just below
    /// it (at `x − 1`).
    pub(crate) fn ks_statistic(sorted: &[u64], f: impl Fn(u64) -> f64) -> f64 {
        let n = sorted.len() as f64;
        let mut d: f64 = 0.0;
        let mut i = 0;
        while i < sorted.len() {
            let x = sorted[i];
            let below = i as f64 / n;
            while i < sorted.len() && sorted[i] == x {
                i += 1;
            }
            d = d.max((i as f64 / n - f(x)).abs());
            if x > 0 {
                d = d.max((below - f(x - 1)).abs());
            }
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flow_size_parses_inf_and_units() {
        assert_eq!("inf".parse::<FlowSize>().unwrap(), FlowSize(None));
        assert_eq!(
            "1.5MB".parse::<FlowSize>().unwrap(),
            FlowSize(Some(1_500_000))
        );
        assert!("0B".parse::<FlowSize>().is_err());
        assert!(
            "-1MB"
                .parse::<FlowSize>()
                .unwrap_err()
                .to_string()
                .contains("negative")
        );
    }
}
