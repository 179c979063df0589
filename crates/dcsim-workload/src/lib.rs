//! Workloads: traffic patterns that produce plain flow descriptions ([`GenFlow`]). A
//! workload never starts a transport itself; the facade turns its output into flows.
//!
//! Patterns so far: `pairs` (long-lived or sized flows between numbered hosts, with
//! staggered starts and a join/leave schedule), `permutation` (every host sends to a
//! distinct host) and `incast` (many senders to one receiver at once).
#![warn(missing_docs)]

pub mod cdf;
pub mod dist;

use core::fmt;
use core::str::FromStr;

use dcsim_engine::units::{SIZE_UNITS, UnitError, parse_quantity};
use dcsim_engine::{ByteSize, Dur, Rng, RngTree};
use rand::{Rng as _, RngExt};
use serde::{Deserialize, Serialize};

pub use crate::cdf::{BuiltinCdf, CdfError, CdfFormat, EmpiricalCdf};
pub use crate::dist::{SizeDist, SizeSpec};

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

/// Order in which staggered flows leave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LeaveOrder {
    /// The first to join is the first to leave.
    #[default]
    Fifo,
    /// The last to join is the first to leave.
    Lifo,
}

/// A traffic pattern as written in a scenario (`kind = "..."`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum GeneratorSpec {
    /// `count` flows from host `src + i·src_step` to host `dst + i·dst_step`; flow i starts
    /// at `start + i·start_every` and, if `stop` is set, stops at `stop + j·stop_every`
    /// where j is its position in the leave order.
    Pairs {
        /// Number of flows.
        count: u32,
        /// First sender.
        src: u32,
        /// First receiver.
        dst: u32,
        /// Sender step (default 1).
        #[serde(default = "one")]
        src_step: u32,
        /// Receiver step (default 1).
        #[serde(default = "one")]
        dst_step: u32,
        /// Size of each flow (default `inf`).
        #[serde(default)]
        size: FlowSize,
        /// Start of the first flow (default 0).
        #[serde(default)]
        start: Dur,
        /// Gap between starts (default 0).
        #[serde(default)]
        start_every: Dur,
        /// Stop time of the first flow to leave, if the flows leave.
        #[serde(default)]
        stop: Option<Dur>,
        /// Gap between stops (default 0).
        #[serde(default)]
        stop_every: Dur,
        /// Leave order (default `fifo`).
        #[serde(default)]
        leave_order: LeaveOrder,
    },
    /// Every host (or every host in `first..first+hosts`) sends one flow to a distinct
    /// host of the same set, by a random derangement (no host sends to itself).
    Permutation {
        /// First host of the set (default 0).
        #[serde(default)]
        first: u32,
        /// Hosts in the set (default: all from `first`).
        #[serde(default)]
        hosts: Option<u32>,
        /// Size of each flow (default `inf`).
        #[serde(default)]
        size: FlowSize,
        /// Start time (default 0).
        #[serde(default)]
        start: Dur,
        /// Each start is delayed by a uniform random amount in `[0, jitter]` (default 0).
        #[serde(default)]
        jitter: Dur,
    },
    /// `senders` hosts each send `size` to `receiver` at `start` (plus jitter). Senders are
    /// `first_sender..first_sender+senders`, skipping the receiver.
    Incast {
        /// The receiving host.
        receiver: u32,
        /// Number of senders (default: every other host).
        #[serde(default)]
        senders: Option<u32>,
        /// First sender (default 0).
        #[serde(default)]
        first_sender: u32,
        /// Bytes per sender.
        size: FlowSize,
        /// Start time (default 0).
        #[serde(default)]
        start: Dur,
        /// Each start is delayed by a uniform random amount in `[0, jitter]` (default 0).
        #[serde(default)]
        jitter: Dur,
    },
}

fn one() -> u32 {
    1
}

impl GeneratorSpec {
    /// The patterns a scenario can name (for `dcsim list`).
    pub const KINDS: &'static [(&'static str, &'static str)] = &[
        (
            "pairs",
            "count flows src+i*src_step -> dst+i*dst_step, staggered starts, join/leave schedule",
        ),
        (
            "permutation",
            "every host sends one flow to a distinct host (random derangement)",
        ),
        (
            "incast",
            "many senders to one receiver at once, optional start jitter",
        ),
    ];

    /// Expands the pattern for a network of `hosts` hosts. `index` is the generator's
    /// position in the scenario (it selects the random stream). Errors name the field.
    pub fn expand(&self, hosts: u32, rng: &RngTree, index: u64) -> Result<Vec<GenFlow>, String> {
        let check = |h: u64, field: &str| {
            if h >= u64::from(hosts) {
                Err(format!(
                    "{field}: host {h} is out of range (the topology has {hosts} hosts, 0..{})",
                    hosts - 1
                ))
            } else {
                Ok(h as u32)
            }
        };
        match *self {
            Self::Pairs {
                count,
                src,
                dst,
                src_step,
                dst_step,
                size,
                start,
                start_every,
                stop,
                stop_every,
                leave_order,
            } => {
                let mut out = Vec::with_capacity(count as usize);
                for i in 0..u64::from(count) {
                    let s = check(u64::from(src) + i * u64::from(src_step), "src")?;
                    let d = check(u64::from(dst) + i * u64::from(dst_step), "dst")?;
                    if s == d {
                        return Err(format!("dst: flow {i} would send from host {s} to itself"));
                    }
                    let j = match leave_order {
                        LeaveOrder::Fifo => i,
                        LeaveOrder::Lifo => u64::from(count) - 1 - i,
                    };
                    out.push(GenFlow {
                        src: s,
                        dst: d,
                        size_bytes: size.0,
                        start: start + start_every * i,
                        stop: stop.map(|t| t + stop_every * j),
                    });
                }
                Ok(out)
            }
            Self::Permutation {
                first,
                hosts: n,
                size,
                start,
                jitter,
            } => {
                let n = n.unwrap_or(hosts.saturating_sub(first));
                check(u64::from(first) + u64::from(n.max(1)) - 1, "hosts")?;
                if n < 2 {
                    return Err("hosts: a permutation needs at least 2 hosts".into());
                }
                let mut r = rng.stream("permutation", index);
                let perm = derangement(n as usize, &mut r);
                Ok(perm
                    .iter()
                    .enumerate()
                    .map(|(i, &j)| GenFlow {
                        src: first + i as u32,
                        dst: first + j as u32,
                        size_bytes: size.0,
                        start: start + jitter_of(jitter, &mut r),
                        stop: None,
                    })
                    .collect())
            }
            Self::Incast {
                receiver,
                senders,
                first_sender,
                size,
                start,
                jitter,
            } => {
                check(u64::from(receiver), "receiver")?;
                let n = senders.unwrap_or(hosts - 1);
                if n == 0 {
                    return Err("senders: must be at least 1".into());
                }
                let mut r = rng.stream("incast", index);
                let mut out = Vec::with_capacity(n as usize);
                let mut h = u64::from(first_sender);
                while out.len() < n as usize {
                    if h == u64::from(receiver) {
                        h += 1;
                        continue;
                    }
                    let s = check(h, "senders")?;
                    out.push(GenFlow {
                        src: s,
                        dst: receiver,
                        size_bytes: size.0,
                        start: start + jitter_of(jitter, &mut r),
                        stop: None,
                    });
                    h += 1;
                }
                Ok(out)
            }
        }
    }
}

/// A uniform draw from `[0, 1)` with 53 random bits: `(x >> 11)·2⁻⁵³` for a 64-bit output
/// `x`. Written out here so the sampling rule does not depend on a `rand` release.
pub(crate) fn unit_f64(r: &mut Rng) -> f64 {
    (r.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

fn jitter_of(jitter: Dur, r: &mut Rng) -> Dur {
    if jitter == Dur::ZERO {
        Dur::ZERO
    } else {
        Dur::from_ps(r.random_range(0..=jitter.as_ps()))
    }
}

/// A uniformly random permutation of `0..n` with no fixed point (rejection sampling of
/// Fisher–Yates shuffles; the expected number of tries is e ≈ 2.72).
fn derangement(n: usize, r: &mut Rng) -> Vec<usize> {
    let mut p: Vec<usize> = (0..n).collect();
    loop {
        for i in (1..n).rev() {
            let j = r.random_range(0..=i);
            p.swap(i, j);
        }
        if p.iter().enumerate().all(|(i, &j)| i != j) {
            return p;
        }
        p.sort_unstable();
    }
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

    #[test]
    fn permutation_is_a_derangement_and_reproducible() {
        let g = GeneratorSpec::Permutation {
            first: 0,
            hosts: None,
            size: FlowSize(None),
            start: Dur::ZERO,
            jitter: Dur::ZERO,
        };
        let a = g.expand(128, &RngTree::new(5), 0).unwrap();
        let b = g.expand(128, &RngTree::new(5), 0).unwrap();
        assert_eq!(a, b);
        let mut dsts: Vec<u32> = a.iter().map(|f| f.dst).collect();
        assert!(a.iter().all(|f| f.src != f.dst));
        dsts.sort_unstable();
        assert_eq!(dsts, (0..128).collect::<Vec<_>>());
    }

    #[test]
    fn pairs_join_and_leave_on_schedule() {
        let g = GeneratorSpec::Pairs {
            count: 3,
            src: 0,
            dst: 3,
            src_step: 1,
            dst_step: 1,
            size: FlowSize(None),
            start: Dur::ZERO,
            start_every: Dur::from_ms(10),
            stop: Some(Dur::from_ms(50)),
            stop_every: Dur::from_ms(10),
            leave_order: LeaveOrder::Lifo,
        };
        let f = g.expand(6, &RngTree::new(0), 0).unwrap();
        assert_eq!(
            f.iter()
                .map(|x| x.start.as_ns() / 1_000_000)
                .collect::<Vec<_>>(),
            [0, 10, 20]
        );
        assert_eq!(
            f.iter()
                .map(|x| x.stop.unwrap().as_ns() / 1_000_000)
                .collect::<Vec<_>>(),
            [70, 60, 50]
        );
        assert!(
            g.expand(5, &RngTree::new(0), 0)
                .unwrap_err()
                .starts_with("dst: host 5 is out of range")
        );
    }

    #[test]
    fn incast_skips_the_receiver() {
        let g = GeneratorSpec::Incast {
            receiver: 0,
            senders: None,
            first_sender: 0,
            size: FlowSize(Some(64_000)),
            start: Dur::ZERO,
            jitter: Dur::from_us(1),
        };
        let f = g.expand(9, &RngTree::new(0), 0).unwrap();
        assert_eq!(f.len(), 8);
        assert!(
            f.iter()
                .all(|x| x.dst == 0 && x.src != 0 && x.start <= Dur::from_us(1))
        );
    }
}
