//! Simulated time and link rates.
//!
//! Time is an integer count of picoseconds since the start of the simulation (`u64`, about
//! 213 days). Floats never hold time; conversion to seconds happens only at output.

use core::fmt;
use core::ops::{Add, AddAssign, Div, Mul, Sub};

const PS_PER_NS: u64 = 1_000;
const PS_PER_US: u64 = 1_000_000;
const PS_PER_MS: u64 = 1_000_000_000;
const PS_PER_S: u64 = 1_000_000_000_000;

/// A point in simulated time: picoseconds since the simulation started.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct Time(pub u64);

/// A span of simulated time in picoseconds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct Dur(pub u64);

/// A data rate in bits per second.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(transparent)]
pub struct Rate(pub u64);

impl Time {
    /// The start of the simulation.
    pub const ZERO: Self = Self(0);
    /// A time later than any event; used as "never".
    pub const MAX: Self = Self(u64::MAX);

    /// Picoseconds since the start.
    #[inline]
    pub const fn as_ps(self) -> u64 {
        self.0
    }
    /// Nanoseconds since the start, rounded down (for output columns named `*_ns`).
    #[inline]
    pub const fn as_ns(self) -> u64 {
        self.0 / PS_PER_NS
    }
    /// Seconds since the start as `f64` (output only).
    #[inline]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
    /// The span since `earlier`, or zero if `earlier` is later.
    #[inline]
    pub const fn saturating_since(self, earlier: Self) -> Dur {
        Dur(self.0.saturating_sub(earlier.0))
    }
    /// `self + d`, saturating at [`Time::MAX`].
    #[inline]
    pub const fn saturating_add(self, d: Dur) -> Self {
        Self(self.0.saturating_add(d.0))
    }
    /// The time `d` after the start of the simulation.
    #[inline]
    pub const fn from_dur(d: Dur) -> Self {
        Self(d.0)
    }
}

impl Dur {
    /// No time.
    pub const ZERO: Self = Self(0);
    /// Longer than any simulation.
    pub const MAX: Self = Self(u64::MAX);

    /// `n` picoseconds.
    #[inline]
    pub const fn from_ps(n: u64) -> Self {
        Self(n)
    }
    /// `n` nanoseconds.
    #[inline]
    pub const fn from_ns(n: u64) -> Self {
        Self(n * PS_PER_NS)
    }
    /// `n` microseconds.
    #[inline]
    pub const fn from_us(n: u64) -> Self {
        Self(n * PS_PER_US)
    }
    /// `n` milliseconds.
    #[inline]
    pub const fn from_ms(n: u64) -> Self {
        Self(n * PS_PER_MS)
    }
    /// `n` seconds.
    #[inline]
    pub const fn from_secs(n: u64) -> Self {
        Self(n * PS_PER_S)
    }
    /// The nearest whole number of picoseconds to `s` seconds (setup and controller
    /// arithmetic only; negative or NaN inputs give zero).
    pub fn from_secs_f64(s: f64) -> Self {
        if s.is_nan() || s <= 0.0 {
            return Self::ZERO;
        }
        let ps = (s * PS_PER_S as f64).round();
        if ps >= u64::MAX as f64 {
            Self::MAX
        } else {
            Self(ps as u64)
        }
    }
    /// Picoseconds.
    #[inline]
    pub const fn as_ps(self) -> u64 {
        self.0
    }
    /// Nanoseconds, rounded down.
    #[inline]
    pub const fn as_ns(self) -> u64 {
        self.0 / PS_PER_NS
    }
    /// Seconds as `f64` (output and controller arithmetic only).
    #[inline]
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / PS_PER_S as f64
    }
    /// Microseconds as `f64` (output only).
    #[inline]
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / PS_PER_US as f64
    }
    /// `self + o`, saturating at [`Dur::MAX`].
    #[inline]
    pub const fn saturating_add(self, o: Self) -> Self {
        Self(self.0.saturating_add(o.0))
    }
    /// `self - o`, or zero.
    #[inline]
    pub const fn saturating_sub(self, o: Self) -> Self {
        Self(self.0.saturating_sub(o.0))
    }
    /// `self * k`, saturating at [`Dur::MAX`].
    #[inline]
    pub const fn saturating_mul(self, k: u64) -> Self {
        Self(self.0.saturating_mul(k))
    }
    /// `self` scaled by a non-negative factor, rounded to the nearest picosecond.
    pub fn mul_f64(self, k: f64) -> Self {
        Self::from_secs_f64(self.as_secs_f64() * k)
    }
}

impl Rate {
    /// No bandwidth.
    pub const ZERO: Self = Self(0);
    /// "No limit"; also the "no stamp" value of RCP-style rate fields.
    pub const MAX: Self = Self(u64::MAX);

    /// `n` bits per second.
    #[inline]
    pub const fn from_bps(n: u64) -> Self {
        Self(n)
    }
    /// `n` megabits per second (10⁶).
    #[inline]
    pub const fn from_mbps(n: u64) -> Self {
        Self(n * 1_000_000)
    }
    /// `n` gigabits per second (10⁹).
    #[inline]
    pub const fn from_gbps(n: u64) -> Self {
        Self(n * 1_000_000_000)
    }
    /// Bits per second.
    #[inline]
    pub const fn bps(self) -> u64 {
        self.0
    }
    /// Gigabits per second as `f64` (output only).
    #[inline]
    pub fn gbps_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }

    /// Time to serialize `bytes` at this rate: the exact ceiling of
    /// `bytes · 8 · 10¹² / bps` picoseconds, computed in `u128`.
    ///
    /// Rounding up by less than 1 ps per packet means the summed serialization time of any
    /// packet sequence exceeds the ideal by less than 1 ps per packet and never falls short
    /// of it, so a port can never transmit faster than its rate.
    ///
    /// # Panics
    /// In debug builds, if the rate is zero (scenario validation rejects zero rates).
    #[inline]
    pub fn tx_time(self, bytes: u64) -> Dur {
        debug_assert!(self.0 > 0, "tx_time at zero rate");
        // Fast path: any packet up to 2.3 MB fits the numerator in u64, and a hardware
        // 64-bit division is several times cheaper than the software 128-bit one.
        if bytes <= u64::MAX / (8 * PS_PER_S) {
            return Dur((bytes * 8 * PS_PER_S).div_ceil(self.0));
        }
        let num = u128::from(bytes) * 8 * u128::from(PS_PER_S);
        Dur(num.div_ceil(u128::from(self.0)) as u64)
    }

    /// Whole bytes that can be sent in `d` at this rate (rounded down).
    #[inline]
    pub fn bytes_in(self, d: Dur) -> u64 {
        let bits = u128::from(self.0) * u128::from(d.0) / u128::from(PS_PER_S);
        (bits / 8) as u64
    }

    /// This rate scaled by `num / den` (exact, rounded down).
    #[inline]
    pub fn scale(self, num: u64, den: u64) -> Self {
        Self((u128::from(self.0) * u128::from(num) / u128::from(den)) as u64)
    }

    /// The rate that moves `bytes` in `d` (rounded down); zero if `d` is zero.
    pub fn from_bytes_per(bytes: u64, d: Dur) -> Self {
        if d.0 == 0 {
            return Self::ZERO;
        }
        Self((u128::from(bytes) * 8 * u128::from(PS_PER_S) / u128::from(d.0)) as u64)
    }
}

impl Add<Dur> for Time {
    type Output = Self;
    #[inline]
    fn add(self, d: Dur) -> Self {
        Self(self.0 + d.0)
    }
}
impl AddAssign<Dur> for Time {
    #[inline]
    fn add_assign(&mut self, d: Dur) {
        self.0 += d.0;
    }
}
impl Sub for Time {
    type Output = Dur;
    /// The span from `o` to `self`. Debug builds assert `o <= self`.
    #[inline]
    fn sub(self, o: Self) -> Dur {
        debug_assert!(o.0 <= self.0, "negative duration: {} - {}", self.0, o.0);
        Dur(self.0.wrapping_sub(o.0))
    }
}
impl Sub<Dur> for Time {
    type Output = Self;
    #[inline]
    fn sub(self, d: Dur) -> Self {
        Self(self.0 - d.0)
    }
}
impl Add for Dur {
    type Output = Self;
    #[inline]
    fn add(self, o: Self) -> Self {
        Self(self.0 + o.0)
    }
}
impl AddAssign for Dur {
    #[inline]
    fn add_assign(&mut self, o: Self) {
        self.0 += o.0;
    }
}
impl Sub for Dur {
    type Output = Self;
    #[inline]
    fn sub(self, o: Self) -> Self {
        Self(self.0 - o.0)
    }
}
impl Mul<u64> for Dur {
    type Output = Self;
    #[inline]
    fn mul(self, k: u64) -> Self {
        Self(self.0 * k)
    }
}
impl Div<u64> for Dur {
    type Output = Self;
    #[inline]
    fn div(self, k: u64) -> Self {
        Self(self.0 / k)
    }
}

fn fmt_ps(ps: u64, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    // The largest unit that represents the value exactly, so that printing and parsing
    // round-trip (`dcsim show` relies on this).
    for (unit, scale) in [
        ("s", PS_PER_S),
        ("ms", PS_PER_MS),
        ("us", PS_PER_US),
        ("ns", PS_PER_NS),
    ] {
        if ps != 0 && ps.is_multiple_of(scale) {
            return write!(f, "{}{unit}", ps / scale);
        }
    }
    write!(f, "{ps}ps")
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ps(self.0, f)
    }
}
impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "t={self}")
    }
}
impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt_ps(self.0, f)
    }
}
impl fmt::Debug for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bps = self.0;
        for (unit, scale) in [
            ("Tbps", 1_000_000_000_000u64),
            ("Gbps", 1_000_000_000),
            ("Mbps", 1_000_000),
            ("Kbps", 1_000),
        ] {
            if bps != 0 && bps.is_multiple_of(scale) {
                return write!(f, "{}{unit}", bps / scale);
            }
        }
        write!(f, "{bps}bps")
    }
}
impl fmt::Debug for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn tx_time_of_full_frame_at_10g_is_1230_4_ns_rounded_up() {
        // 1538 B · 8 / 10 Gb/s = 1230.4 ns exactly.
        assert_eq!(Rate::from_gbps(10).tx_time(1538), Dur::from_ps(1_230_400));
        // 84 B at 100 Gb/s = 6.72 ns.
        assert_eq!(Rate::from_gbps(100).tx_time(84), Dur::from_ps(6_720));
        // 1 B at 3 bps = 2.666… s, rounded up to the next picosecond.
        assert_eq!(
            Rate::from_bps(3).tx_time(1),
            Dur::from_ps(2_666_666_666_667)
        );
    }

    #[test]
    fn display_round_trips_through_largest_exact_unit() {
        assert_eq!(Dur::from_us(100).to_string(), "100us");
        assert_eq!(Dur::from_ps(1_230_400).to_string(), "1230400ps");
        assert_eq!(Rate::from_gbps(10).to_string(), "10Gbps");
        assert_eq!(Rate::from_bps(64_734_895 * 8).to_string(), "517879160bps");
    }

    proptest! {
        /// Over any packet sequence, summed serialization time is never below the ideal
        /// and exceeds it by less than 1 ps per packet.
        #[test]
        fn tx_time_sum_within_one_ps_per_packet(
            bps in 1_000u64..400_000_000_000,
            sizes in proptest::collection::vec(1u64..10_000, 1..200),
        ) {
            let r = Rate::from_bps(bps);
            let sum: u128 = sizes.iter().map(|&b| u128::from(r.tx_time(b).as_ps())).sum();
            let total_bytes: u128 = sizes.iter().map(|&b| u128::from(b)).sum();
            // ideal = total·8·10¹²/bps; compare sum·bps with total·8·10¹² to stay exact.
            let lhs = sum * u128::from(bps);
            let ideal = total_bytes * 8 * 1_000_000_000_000;
            prop_assert!(lhs >= ideal);
            prop_assert!(lhs < ideal + sizes.len() as u128 * u128::from(bps));
        }

        #[test]
        fn bytes_in_inverts_tx_time(bps in 1_000u64..400_000_000_000, bytes in 1u64..100_000_000) {
            let r = Rate::from_bps(bps);
            prop_assert!(r.bytes_in(r.tx_time(bytes)) >= bytes);
        }
    }
}
