//! Asking the processor to start loading a cache line that will be needed soon.
//!
//! On a large fabric the event loop is bound by cache misses. A plain load
//! started early overlaps its miss with other work, but the processor cannot retire past
//! it until the data arrives; a prefetch instruction retires at once. This is the one
//! `unsafe` block outside the arbiter (ADR 0007): a prefetch cannot fault, whatever the
//! address, and changes nothing the program can observe but time.

/// Starts loading the cache line that holds the start of `*value` into every cache level.
/// A no-op where the target has no prefetch instruction that we use.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    prefetch_address(std::ptr::from_ref(value).cast());
}

/// Starts loading every cache line that `*value` spans (for a value that a coming event
/// will touch all over, such as a port).
#[inline(always)]
pub fn prefetch_lines<T: ?Sized>(value: &T) {
    let start = std::ptr::from_ref(value).cast::<u8>();
    let misalign = start.addr() & (LINE - 1);
    let first = start.wrapping_sub(misalign);
    for line in 0..lines_spanned(misalign, size_of_val(value)) {
        prefetch_address(first.wrapping_add(line * LINE));
    }
}

/// How many lines a value of `size` bytes spans when it starts `misalign` bytes into a
/// line (a zero-sized value still names one).
#[inline(always)]
fn lines_spanned(misalign: usize, size: usize) -> usize {
    (misalign + size.max(1)).div_ceil(LINE)
}

/// The cache line size assumed for [`prefetch_lines`].
const LINE: usize = 64;

#[inline(always)]
fn prefetch_address(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: `prefetcht0` has no architectural effect and never faults (Intel SDM,
    // PREFETCHh: "does not affect program behavior"), whatever the address; SSE, which the
    // intrinsic is declared to need, is part of the x86-64 baseline, so it is always present.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(address.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefetch_changes_nothing() {
        let v: Vec<u64> = (0..1024).collect();
        for x in &v {
            prefetch(x);
        }
        prefetch(&v[1023]);
        prefetch_lines(&v[..]);
        prefetch_lines(&v[3..17]);
        prefetch_lines(&[0u8; 0]);
        assert_eq!(v.iter().sum::<u64>(), 1023 * 1024 / 2);
    }

    #[test]
    fn every_line_of_a_value_is_named_once() {
        assert_eq!(lines_spanned(0, 384), 6, "a port: six whole lines");
        assert_eq!(lines_spanned(24, 112), 3);
        assert_eq!(lines_spanned(63, 2), 2);
        assert_eq!(lines_spanned(0, 64), 1);
        assert_eq!(lines_spanned(0, 65), 2);
        assert_eq!(lines_spanned(10, 0), 1);
    }
}
