//! Synchronisation helpers for the multi-core engines (std atomics and crossbeam only).

use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam::utils::Backoff;

/// A reusable barrier that spins, then yields, instead of parking on a futex: the phases it
/// separates last microseconds, and a futex wake-up costs about as much. Yielding after a
/// short spin keeps it usable when there are more threads than cores (tests).
#[derive(Debug)]
pub(crate) struct SpinBarrier {
    parties: usize,
    arrived: AtomicUsize,
    generation: AtomicUsize,
}

impl SpinBarrier {
    pub(crate) fn new(parties: usize) -> Self {
        Self {
            parties,
            arrived: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
        }
    }

    /// Blocks until all parties have called `wait`. Everything a thread wrote before `wait`
    /// is visible to every thread after it returns.
    pub(crate) fn wait(&self) {
        let generation = self.generation.load(Ordering::Acquire);
        if self.arrived.fetch_add(1, Ordering::AcqRel) + 1 == self.parties {
            // Reset before releasing: a thread can only re-enter after it has seen the new
            // generation, and the Release below orders this store before that.
            self.arrived.store(0, Ordering::Relaxed);
            self.generation.fetch_add(1, Ordering::Release);
        } else {
            let backoff = Backoff::new();
            while self.generation.load(Ordering::Acquire) == generation {
                backoff.snooze();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn barrier_separates_phases() {
        let barrier = SpinBarrier::new(3);
        let sum = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for round in 1..=50u64 {
                        sum.fetch_add(round, Ordering::Relaxed);
                        barrier.wait();
                        // Every party has added this round's value before anyone goes on.
                        let expect: u64 = 3 * (1..=round).sum::<u64>();
                        assert_eq!(sum.load(Ordering::Relaxed), expect);
                        barrier.wait();
                    }
                });
            }
        });
    }
}
