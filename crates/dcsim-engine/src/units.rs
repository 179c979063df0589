//! Parsing of quantities with units, as written in scenario files.
//!
//! - durations: `ps`, `ns`, `us` (or `µs`), `ms`, `s` — `"10us"`, `"1.5ms"`;
//! - rates: `bps`, `Kbps`, `Mbps`, `Gbps`, `Tbps` (powers of 1000) — `"10Gbps"`;
//! - sizes: `B`, `KB`, `MB`, `GB`, `TB` (powers of 1000) and `KiB`, `MiB`, `GiB` (powers of
//!   1024) — `"1.5MB"`, `"64KiB"`.
//!
//! Numbers are decimal, optionally with a fraction, and are converted exactly: a value that
//! is not a whole number of the base unit (picoseconds, bits per second, bytes) is an error,
//! not silently rounded. Units are case-sensitive where case carries meaning (`ms` vs `Ms`
//! does not exist; `MB` is bytes, `Mb` is not accepted) and a space between number and unit
//! is allowed.

use core::fmt;
use core::str::FromStr;

use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::{Serialize, Serializer};

use crate::{Dur, Rate};

/// A quantity that could not be parsed. The message names what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError {
    /// The text that was parsed.
    pub input: String,
    /// What went wrong, in words.
    pub reason: String,
}

impl fmt::Display for UnitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {:?}: {}", self.input, self.reason)
    }
}
impl std::error::Error for UnitError {}

/// Duration units and their size in picoseconds.
pub const DUR_UNITS: &[(&str, u64)] = &[
    ("ps", 1),
    ("ns", 1_000),
    ("us", 1_000_000),
    ("µs", 1_000_000),
    ("ms", 1_000_000_000),
    ("s", 1_000_000_000_000),
];
/// Rate units and their size in bits per second.
pub const RATE_UNITS: &[(&str, u64)] = &[
    ("bps", 1),
    ("Kbps", 1_000),
    ("kbps", 1_000),
    ("Mbps", 1_000_000),
    ("Gbps", 1_000_000_000),
    ("Tbps", 1_000_000_000_000),
];
/// Size units and their size in bytes.
pub const SIZE_UNITS: &[(&str, u64)] = &[
    ("B", 1),
    ("KB", 1_000),
    ("kB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
];

/// Parses `"<decimal><unit>"` into a whole number of the base unit, using `units`.
///
/// `what` names the kind of quantity in error messages ("duration", "rate", "size").
pub fn parse_quantity(s: &str, units: &[(&str, u64)], what: &str) -> Result<u64, UnitError> {
    let err = |reason: String| UnitError {
        input: s.to_string(),
        reason,
    };
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let unit = unit.trim();
    let names = || units.iter().map(|(u, _)| *u).collect::<Vec<_>>().join(", ");
    if num.is_empty() {
        if t.starts_with('-') {
            return Err(err(format!("a {what} cannot be negative")));
        }
        return Err(err(format!(
            "expected a number followed by a unit ({})",
            names()
        )));
    }
    let Some(&(_, scale)) = units.iter().find(|(u, _)| *u == unit) else {
        return Err(err(if unit.is_empty() {
            format!("missing unit; expected one of {}", names())
        } else {
            format!("unknown {what} unit {unit:?}; expected one of {}", names())
        }));
    };
    let num = num.replace('_', "");
    let (int, frac) = match num.split_once('.') {
        Some((i, f)) => (i, f),
        None => (num.as_str(), ""),
    };
    if frac.contains('.') || (int.is_empty() && frac.is_empty()) {
        return Err(err("malformed number".into()));
    }
    let digits = format!("{int}{frac}");
    let mantissa: u128 = digits.parse().map_err(|_| err("number too large".into()))?;
    let pow = 10u128
        .checked_pow(u32::try_from(frac.len()).unwrap_or(u32::MAX))
        .ok_or_else(|| err("too many decimal places".into()))?;
    let value = mantissa
        .checked_mul(u128::from(scale))
        .ok_or_else(|| err("number too large".into()))?;
    if value % pow != 0 {
        return Err(err(format!(
            "not a whole number of the smallest {what} unit"
        )));
    }
    u64::try_from(value / pow).map_err(|_| err("number too large".into()))
}

impl FromStr for Dur {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        parse_quantity(s, DUR_UNITS, "duration").map(Dur)
    }
}

impl FromStr for Rate {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        parse_quantity(s, RATE_UNITS, "rate").map(Rate)
    }
}

/// A size in bytes as written in scenario files (`"1.5MB"`, `"64KiB"`, `"1538B"`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct ByteSize(pub u64);

impl ByteSize {
    /// The number of bytes.
    #[inline]
    pub const fn bytes(self) -> u64 {
        self.0
    }
}

impl FromStr for ByteSize {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        parse_quantity(s, SIZE_UNITS, "size").map(ByteSize)
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        for (unit, scale) in [("GB", 1_000_000_000u64), ("MB", 1_000_000), ("KB", 1_000)] {
            if b != 0 && b.is_multiple_of(scale) {
                return write!(f, "{}{unit}", b / scale);
            }
        }
        write!(f, "{b}B")
    }
}
impl fmt::Debug for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Implements serde for a type that is written as a string with a unit.
macro_rules! serde_via_str {
    ($t:ty, $expecting:literal) => {
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $t;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$t, E> {
                        v.parse().map_err(E::custom)
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$t, E> {
                        if v == 0 {
                            return Ok(<$t>::default());
                        }
                        Err(E::custom(format!(
                            "{v} has no unit; write it as a string with a unit, e.g. {}",
                            $expecting
                        )))
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<$t, E> {
                        Err(E::custom(format!(
                            "{v} has no unit; write it as a string with a unit, e.g. {}",
                            $expecting
                        )))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

serde_via_str!(Dur, "a duration such as \"10us\"");
serde_via_str!(Rate, "a rate such as \"10Gbps\"");
serde_via_str!(ByteSize, "a size such as \"1.5MB\"");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units_exactly() {
        assert_eq!("10us".parse::<Dur>().unwrap(), Dur::from_us(10));
        assert_eq!("1.5 ms".parse::<Dur>().unwrap(), Dur::from_us(1500));
        assert_eq!("0.001ns".parse::<Dur>().unwrap(), Dur::from_ps(1));
        assert_eq!("10Gbps".parse::<Rate>().unwrap(), Rate::from_gbps(10));
        assert_eq!(
            "2.5Gbps".parse::<Rate>().unwrap(),
            Rate::from_bps(2_500_000_000)
        );
        assert_eq!("1.5MB".parse::<ByteSize>().unwrap(), ByteSize(1_500_000));
        assert_eq!("64KiB".parse::<ByteSize>().unwrap(), ByteSize(65_536));
        assert_eq!("1_000B".parse::<ByteSize>().unwrap(), ByteSize(1000));
    }

    #[test]
    fn rejects_bad_units_with_a_reason() {
        let e = "10Gbs".parse::<Rate>().unwrap_err();
        assert!(e.to_string().contains("unknown rate unit \"Gbs\""), "{e}");
        let e = "-5MB".parse::<ByteSize>().unwrap_err();
        assert!(e.to_string().contains("negative"), "{e}");
        let e = "10".parse::<Dur>().unwrap_err();
        assert!(e.to_string().contains("missing unit"), "{e}");
        let e = "0.0001ps".parse::<Dur>().unwrap_err();
        assert!(e.to_string().contains("whole number"), "{e}");
        assert!("1.2.3s".parse::<Dur>().is_err());
        assert!("ms".parse::<Dur>().is_err());
        assert!("99999999999999999999999s".parse::<Dur>().is_err());
    }

    #[test]
    fn display_parses_back() {
        for s in ["10Gbps", "517879160bps", "100Mbps"] {
            assert_eq!(s.parse::<Rate>().unwrap().to_string(), s);
        }
        for s in ["100us", "1230400ps", "2s"] {
            assert_eq!(s.parse::<Dur>().unwrap().to_string(), s);
        }
        for s in ["1538B", "1MB", "153800B"] {
            assert_eq!(s.parse::<ByteSize>().unwrap().to_string(), s);
        }
    }
}
