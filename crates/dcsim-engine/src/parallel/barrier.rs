//! The barrier that ends every window, and the guard that releases it when a thread
//! panics.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A barrier for threads that wait microseconds: spin first, then yield the core (a test
/// runner may have more threads than cores). It stops waiting for good once any thread
/// has panicked.
pub(super) struct SpinBarrier {
    n: usize,
    count: AtomicUsize,
    generation: AtomicUsize,
    aborted: AtomicBool,
}

impl SpinBarrier {
    pub(super) fn new(n: usize) -> Self {
        Self {
            n,
            count: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            aborted: AtomicBool::new(false),
        }
    }
    /// Waits for all `n` threads; `false` if the run was aborted.
    pub(super) fn wait(&self) -> bool {
        let generation = self.generation.load(Ordering::Acquire);
        if self.count.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            self.count.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
            return !self.aborted.load(Ordering::Acquire);
        }
        self.spin_until(|| (self.generation.load(Ordering::Acquire) != generation).then_some(()))
            .is_some()
            && !self.aborted.load(Ordering::Acquire)
    }

    /// Spins until `ready` gives a value, yielding the core after a while; `None` once the
    /// run is aborted.
    pub(super) fn spin_until<T>(&self, mut ready: impl FnMut() -> Option<T>) -> Option<T> {
        let mut spins = 0u32;
        loop {
            if let Some(v) = ready() {
                return Some(v);
            }
            if self.aborted.load(Ordering::Acquire) {
                return None;
            }
            if spins < 1 << 14 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// Aborts the barrier if its thread unwinds, so the other threads stop waiting.
pub(super) struct AbortOnPanic<'a>(pub(super) &'a SpinBarrier);
impl Drop for AbortOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.aborted.store(true, Ordering::Release);
        }
    }
}
