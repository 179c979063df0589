//! A measure of the machine for parallel runs: the round trip of a cache line between two
//! threads ([`line_round_trip`]).

use std::sync::atomic::{AtomicU64, Ordering};

/// The time, in nanoseconds, for a cache line to go from one thread to another and back:
/// two threads pass a counter to and fro through one atomic, `rounds` times in five
/// batches, and the median batch's mean is returned (a batch can catch a stray pause). A
/// measuring aid for parallel runs, whose windows move lines between the cores: on this
/// project's 2-vCPU virtual machine (an AMD EPYC) it is 53–190 ns most of the time and
/// 270–380 ns in spells during which a two-thread run is half again as slow while one
/// thread, or two separate processes, keep their speed (docs/design/parallel-engine.md),
/// which fits the two cores being placed, for a while, where their caches are far apart.
/// So `parbench` and `enginecost` print it next to their two-thread figures.
/// On a single core the threads take turns and it measures the scheduler instead.
pub fn line_round_trip(rounds: u64) -> f64 {
    #[repr(align(128))]
    struct Line(AtomicU64);
    let line = Line(AtomicU64::new(0));
    // Spins for a while, then yields, so that one core is enough to finish.
    let wait_for = |v: u64| {
        let mut spins = 0u32;
        while line.0.load(Ordering::Acquire) != v {
            if spins < 1 << 14 {
                spins += 1;
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    };
    let per_batch = rounds.div_ceil(5).max(1);
    let mut batches = std::thread::scope(|s| {
        s.spawn(|| {
            for i in 0..5 * per_batch {
                wait_for(2 * i + 1);
                line.0.store(2 * i + 2, Ordering::Release);
            }
        });
        let mut batches = [0.0; 5];
        for (b, mean) in batches.iter_mut().enumerate() {
            let start = std::time::Instant::now();
            for i in b as u64 * per_batch..(b as u64 + 1) * per_batch {
                line.0.store(2 * i + 1, Ordering::Release);
                wait_for(2 * i + 2);
            }
            *mean = start.elapsed().as_secs_f64() * 1e9 / per_batch as f64;
        }
        batches
    });
    batches.sort_by(f64::total_cmp);
    batches[2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_round_trip_is_measured() {
        // Two threads of a test runner may share one core: only the figure's sense is
        // checked, not its size.
        let t = line_round_trip(1_000);
        assert!(t.is_finite() && t > 0.0, "{t}");
    }
}
