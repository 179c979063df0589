//! Instruction-set variants of the allocation pass: the crate's only `unsafe` code.
//!
//! The unit-link batch pass gives each backlogged pair the `k` lowest slots free at both its
//! ends: the `k` lowest set bits of a 64-bit word. x86-64 with BMI2 does that in one
//! instruction, `pdep` (deposit the `k` low ones of a mask into the set bits of the word);
//! without it a popcount, a comparison and, when the word has more than `k` bits, a loop, all
//! branches that the CPU cannot predict because they depend on the bitmaps. Measured on the
//! development machine (AMD EPYC, Zen 5; serial allocator, 1024 nodes, load 0.9, whole runs):
//! 177-182 ms with the portable code compiled for `popcnt`, 122-123 ms with `pdep`.
//! A branch-free portable form (rank by binary search over popcounts) took 165 ms.
//!
//! Both variants compute exactly the same function, so the schedule, and everything downstream
//! of it, does not depend on which one a machine runs (a test compares them, and
//! `.ci/extended miri` runs it under Miri). Which one runs is decided once per backlog:
//! * [`Isa::Bmi2`] when the CPU reports BMI1, BMI2 and POPCNT and its `pdep` is fast: AMD
//!   (and Hygon) processors before family 19h (Zen 3) implement it in microcode at tens of
//!   cycles per bit, slower than the loop, so they get the portable code;
//! * [`Isa::Portable`] otherwise, and on every other architecture.
//!
//! Why `unsafe` (see `docs/adr/0003-unsafe-for-bit-deposit.md`): calling a function compiled
//! for features the baseline target lacks is `unsafe` in Rust whatever the run-time check, and
//! no safe wrapper in `std` or a well-kept crate covers this case (`multiversion` cannot select
//! an intrinsic per clone without it). The two `unsafe` blocks below are sound because a
//! [`Bmi2`] value can only be made by [`Bmi2::detect`], after the run-time check.

/// Selects the `k` lowest set bits of a word; implemented by each instruction-set variant.
pub(crate) trait Take: Copy {
    /// The `k` lowest set bits of `m` (all of `m` if it has at most `k`) and how many that is.
    fn take(self, m: u64, k: u32) -> (u64, u32);
}

/// Which variant of the pass a backlog runs. Public for dcsim-arbiter-bench.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    /// Baseline instructions only.
    Portable,
    /// BMI2 `pdep` (x86-64).
    #[cfg(target_arch = "x86_64")]
    Bmi2(Bmi2),
}

impl Isa {
    /// The fastest variant this CPU runs correctly.
    pub(crate) fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        if let Some(b) = Bmi2::detect() {
            return Self::Bmi2(b);
        }
        Self::Portable
    }

    /// Short name for reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Portable => "portable",
            #[cfg(target_arch = "x86_64")]
            Self::Bmi2(_) => "bmi2-pdep",
        }
    }
}

/// The baseline variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Portable;

impl Take for Portable {
    /// All of `m` when it has at most `k` bits (blocked entries, and most entries at high load),
    /// else [`lowest_bits`]. Tried and not kept: selecting between "all of `m`" and "a
    /// contiguous run" without a branch (9-14 % slower).
    #[inline(always)]
    fn take(self, m: u64, k: u32) -> (u64, u32) {
        let count = m.count_ones();
        if count <= k {
            return (m, count);
        }
        lowest_bits(m, k)
    }
}

/// The `k` lowest set bits of `m` (all of `m` if it has at most `k`) and how many that is.
///
/// A loop of `min(k, popcount(m))` steps rather than a popcount: the default x86-64 target has
/// no `popcnt` instruction, and demands are small (mean 10), so the loop is the cheaper way.
///
/// Public for dcsim-arbiter-bench.
#[inline(always)]
pub fn lowest_bits(m: u64, k: u32) -> (u64, u32) {
    // Fast path: the k slots from the lowest free one are all free (the usual case while the
    // batch is still empty). `k < 64` keeps the shift in range.
    if k < 64 && m != 0 {
        let (tz, ones) = (m.trailing_zeros(), (1u64 << k) - 1);
        let run = ones << tz;
        if run >> tz == ones && run & m == run {
            return (run, k);
        }
    }
    let mut rest = m;
    let mut n = 0;
    while n < k && rest != 0 {
        rest &= rest - 1;
        n += 1;
    }
    (m ^ rest, n)
}

/// Proof that this CPU has fast BMI1, BMI2 and POPCNT: made only by `Bmi2::detect`.
/// Public (as a part of [`Isa`]) for dcsim-arbiter-bench; only `Bmi2::detect` makes one and
/// only this crate runs code with it.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bmi2 {
    _proof: (),
}

#[cfg(target_arch = "x86_64")]
impl Bmi2 {
    /// `Some` when the CPU has the features and a fast `pdep`.
    pub(crate) fn detect() -> Option<Self> {
        let has = std::is_x86_feature_detected!("bmi1")
            && std::is_x86_feature_detected!("bmi2")
            && std::is_x86_feature_detected!("popcnt");
        (has && !slow_pdep()).then_some(Self { _proof: () })
    }

    /// `Some` when the CPU has the features, fast `pdep` or not (for tests of what the
    /// variant computes, which do not depend on its speed).
    #[cfg(test)]
    fn detect_any() -> Option<Self> {
        let has = std::is_x86_feature_detected!("bmi1")
            && std::is_x86_feature_detected!("bmi2")
            && std::is_x86_feature_detected!("popcnt");
        has.then_some(Self { _proof: () })
    }

    /// Runs `f` inside a function compiled with the features, so that `f`'s inlined body
    /// (the pass, with [`Take::take`] inlined into it) uses them.
    #[inline(always)]
    pub(crate) fn run<R>(self, f: impl FnOnce(Self) -> R) -> R {
        #[target_feature(enable = "bmi1,bmi2,popcnt")]
        fn with_features<R>(isa: Bmi2, f: impl FnOnce(Bmi2) -> R) -> R {
            f(isa)
        }
        #[allow(unsafe_code)]
        // SAFETY: `self` exists, so `detect` found BMI1, BMI2 and POPCNT on this CPU.
        unsafe {
            with_features(self, f)
        }
    }
}

#[cfg(target_arch = "x86_64")]
impl Take for Bmi2 {
    #[inline(always)]
    fn take(self, m: u64, k: u32) -> (u64, u32) {
        let ones = if k >= 64 { u64::MAX } else { (1u64 << k) - 1 };
        #[allow(unsafe_code)]
        // SAFETY: `self` exists, so `detect` found BMI2 on this CPU.
        let take = unsafe { core::arch::x86_64::_pdep_u64(ones, m) };
        (take, take.count_ones())
    }
}

/// Whether this CPU implements `pdep` in microcode: AMD and Hygon before family 19h.
#[cfg(target_arch = "x86_64")]
fn slow_pdep() -> bool {
    // Miri does not run `cpuid`; it has no slow instructions anyway.
    if cfg!(miri) {
        return false;
    }
    let v = core::arch::x86_64::__cpuid(0);
    let mut vendor = [0u8; 12];
    for (i, r) in [v.ebx, v.edx, v.ecx].into_iter().enumerate() {
        vendor[4 * i..4 * i + 4].copy_from_slice(&r.to_le_bytes());
    }
    microcoded_pdep(&vendor, core::arch::x86_64::__cpuid(1).eax)
}

/// [`slow_pdep`] for a vendor string and a processor signature (`cpuid` leaf 1, `eax`).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
fn microcoded_pdep(vendor: &[u8; 12], signature: u32) -> bool {
    let base = (signature >> 8) & 0xf;
    let family = if base == 0xf {
        base + ((signature >> 20) & 0xff)
    } else {
        base
    };
    (vendor == b"AuthenticAMD" || vendor == b"HygonGenuine") && family < 0x19
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference: the `k` lowest set bits, one at a time.
    fn reference(m: u64, k: u32) -> (u64, u32) {
        let (mut take, mut n) = (0u64, 0u32);
        for b in 0..64 {
            if n < k && m >> b & 1 == 1 {
                take |= 1 << b;
                n += 1;
            }
        }
        (take, n)
    }

    /// Words with runs, gaps, the ends and every count; `k` across and beyond 64.
    fn cases() -> impl Iterator<Item = (u64, u32)> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let words = (0..150).map(move |i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            match i % 5 {
                0 => x,
                1 => x & (x >> 1) & (x >> 2),
                2 => x | (x << 1),
                3 => !0 << (i % 64),
                _ => 1u64.rotate_left(i),
            }
        });
        words
            .chain([0, u64::MAX, 1 << 63, 0x8000_0000_0000_0001])
            .flat_map(|m| [0, 1, 2, 3, 7, 10, 31, 32, 33, 63, 64, 65, u32::MAX].map(|k| (m, k)))
    }

    #[test]
    fn portable_takes_the_k_lowest_bits() {
        for (m, k) in cases() {
            assert_eq!(Portable.take(m, k), reference(m, k), "m={m:#x} k={k}");
            assert_eq!(lowest_bits(m, k), reference(m, k), "m={m:#x} k={k}");
        }
    }

    /// The `pdep` variant computes exactly what the portable one does, on any CPU with the
    /// instructions, a slow `pdep` too (this machine's Zen 2 has one, and the test was
    /// skipped on it); CI also runs it under Miri. A CPU without BMI2 (before 2013) fails it.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn bmi2_takes_what_portable_takes() {
        let isa = Bmi2::detect_any().expect("this CPU has no BMI2: the pdep variant is untested");
        isa.run(|isa| {
            for (m, k) in cases() {
                assert_eq!(isa.take(m, k), Portable.take(m, k), "m={m:#x} k={k}");
            }
        });
    }

    #[test]
    fn microcoded_pdep_is_recognised_by_family() {
        // Signatures of real parts: Zen 2 (EPYC 7002), Hygon Dhyana, Zen 3, Zen 5, Haswell.
        assert!(microcoded_pdep(b"AuthenticAMD", 0x0083_0f10));
        assert!(microcoded_pdep(b"HygonGenuine", 0x0090_0f01));
        assert!(!microcoded_pdep(b"AuthenticAMD", 0x00a0_0f11));
        assert!(!microcoded_pdep(b"AuthenticAMD", 0x00b0_0f21));
        assert!(!microcoded_pdep(b"GenuineIntel", 0x0003_06c3));
    }
}
