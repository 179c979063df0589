//! Asking the processor to start loading a cache line that will be needed soon.
//!
//! On a large fabric the event loop is bound by cache misses (issue 23). A plain load
//! started early overlaps its miss with other work, but the processor cannot retire past
//! it until the data arrives; a prefetch instruction retires at once. This is the one
//! `unsafe` block outside the arbiter (ADR 0007): a prefetch cannot fault, whatever the
//! address, and changes nothing the program can observe but time.

/// Starts loading the cache line that holds the start of `*value` into every cache level.
/// A no-op where the target has no prefetch instruction that we use.
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: `prefetcht0` has no architectural effect and never faults (Intel SDM,
    // PREFETCHh: "does not affect program behavior"); SSE, which the intrinsic is
    // declared to need, is part of the x86-64 baseline, so it is always present.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
            std::ptr::from_ref(value).cast(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
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
        assert_eq!(v.iter().sum::<u64>(), 1023 * 1024 / 2);
    }
}
