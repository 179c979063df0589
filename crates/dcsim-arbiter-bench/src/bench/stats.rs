//! Allocation latency and fairness, computed after a run from the trace and the sampled grants
//! (never inside the timed part).
//!
//! Both use the grants of a sample of destinations (every `k`-th node, [`Collect`]); every pair
//! into a sampled destination is then complete, so per-pair queues can be rebuilt exactly.
//!
//! * **Latency** of a packet: start of its allocated timeslot minus the arrival time of its
//!   demand, in microseconds, with packets of a pair served first-in first-out (which is what
//!   a merged per-pair backlog does). It includes the engine's lead (batches between arrival
//!   and the first batch that may serve a demand). Packets still waiting when the run ends are
//!   not counted (they are reported as `censored`).
//! * **Jain fairness among contending pairs**: time is cut into windows of
//!   [`FAIR_WINDOW`] batches. For each sampled destination and window, the *contending* pairs
//!   are those with demand waiting at the start of every batch of the window and still waiting
//!   after it, i.e. pairs that wanted more than they got throughout. With at least two such
//!   pairs, Jain's index `(sum x)^2 / (n sum x^2)` of their allocated slots in the window is one
//!   sample; the report gives the mean over samples. 1 is perfectly even; `1/n` is one pair
//!   taking everything. Pairs limited at their source by other destinations count too, so
//!   a max-min fair allocator need not score exactly 1.
//!
//! [`Collect`]: crate::Collect

use std::collections::BTreeMap;

use dcsim_arbiter::TIMESLOT_NS;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::engine::RunOutput;
use crate::trace::{Trace, batch_of};

/// Batches per fairness window (512 slots, about 0.6 ms at 64-slot batches): long enough for
/// batch-mode pairs to take turns, short enough that pairs contend throughout.
pub const FAIR_WINDOW: u64 = 8;

/// Latency percentiles of a run, in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Packets measured.
    pub packets: u64,
    /// Packets of sampled pairs still unallocated at the end of the run (not measured).
    pub censored: u64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest.
    pub max_us: f64,
}

/// Jain's fairness among contending pairs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fairness {
    /// Mean of the per-(destination, window) indices; `None` without any sample.
    pub jain: Option<f64>,
    /// Number of (destination, window) samples with at least two contending pairs.
    pub samples: u64,
}

/// Per pair of a sampled destination: arrivals (arrival slot, feed batch, slots) and granted
/// slots, both in time order.
#[derive(Default)]
struct PairLog {
    arrivals: Vec<(f64, u64, u32)>,
    slots: Vec<u64>,
}

/// Computes latency and fairness for the destinations sampled with stride `every`.
pub(crate) fn analyse(
    trace: &Trace,
    scale: f64,
    lead: u64,
    out: &RunOutput,
    every: u32,
) -> (Latency, Fairness) {
    let bs = u64::from(out.batch_slots);
    let batches = out.allocated_per_batch.len() as u64;
    let mask = every.max(1).next_power_of_two() - 1;
    let mut pairs: BTreeMap<(u16, u16), PairLog> = BTreeMap::new();
    for (&t, e) in trace.times().iter().zip(trace.entries()) {
        let fed = batch_of(t, scale, out.batch_slots) + lead;
        if fed >= batches {
            break;
        }
        if u32::from(e.dst) & mask == 0 {
            pairs
                .entry((e.src, e.dst))
                .or_default()
                .arrivals
                .push((t * scale, fed, e.slots));
        }
    }
    for &(b, g) in &out.grants {
        if let Some(p) = pairs.get_mut(&(g.src, g.dst)) {
            p.slots
                .extend(g.slots(dcsim_arbiter::Timeslot(b * bs)).map(|s| s.0));
        }
    }
    let mut hist =
        Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds");
    let mut censored = 0u64;
    // Per destination and window: slots allocated to each contending pair.
    let mut windows: BTreeMap<(u16, u64), Vec<u64>> = BTreeMap::new();
    for (&(_, dst), p) in &mut pairs {
        p.slots.sort_unstable();
        // Latency, FIFO within the pair.
        let mut slots = p.slots.iter();
        for &(at, _, n) in &p.arrivals {
            for _ in 0..n {
                match slots.next() {
                    Some(&s) => {
                        let ns = ((s as f64 - at).max(0.0) * TIMESLOT_NS as f64) as u64;
                        hist.saturating_record(ns.max(1));
                    }
                    None => censored += 1,
                }
            }
        }
        // Backlog at each batch start: available demand minus slots granted before it.
        let mut avail = vec![0i64; batches as usize + 1];
        for &(_, fed, n) in &p.arrivals {
            avail[fed as usize] += i64::from(n);
        }
        let mut granted = vec![0i64; batches as usize];
        for &s in &p.slots {
            granted[(s / bs) as usize] += 1;
        }
        let mut waiting = Vec::with_capacity(batches as usize + 1);
        let mut w = 0i64;
        for b in 0..=batches as usize {
            w += avail[b];
            waiting.push(w);
            if b < batches as usize {
                w -= granted[b];
            }
        }
        for start in (0..batches).step_by(FAIR_WINDOW as usize) {
            let end = (start + FAIR_WINDOW).min(batches);
            if end - start < FAIR_WINDOW {
                break;
            }
            let contending = (start..end).all(|b| waiting[b as usize] > 0)
                && waiting[end as usize] - avail[end as usize] > 0;
            if contending {
                let got: i64 = granted[start as usize..end as usize].iter().sum();
                windows.entry((dst, start)).or_default().push(got as u64);
            }
        }
    }
    let us = |q: f64| hist.value_at_quantile(q) as f64 / 1000.0;
    let latency = Latency {
        packets: hist.len(),
        censored,
        p50_us: us(0.5),
        p90_us: us(0.9),
        p99_us: us(0.99),
        p999_us: us(0.999),
        max_us: hist.max() as f64 / 1000.0,
    };
    let mut sum = 0.0;
    let mut samples = 0u64;
    for xs in windows.values().filter(|xs| xs.len() >= 2) {
        sum += jain(xs);
        samples += 1;
    }
    let fairness = Fairness {
        jain: (samples > 0).then(|| sum / samples as f64),
        samples,
    };
    (latency, fairness)
}

/// Jain's fairness index of `xs` (1 if all are zero).
pub(crate) fn jain(xs: &[u64]) -> f64 {
    let s: f64 = xs.iter().map(|&x| x as f64).sum();
    let sq: f64 = xs.iter().map(|&x| (x as f64) * (x as f64)).sum();
    if sq == 0.0 {
        1.0
    } else {
        s * s / (xs.len() as f64 * sq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_extremes() {
        assert!((jain(&[5, 5, 5]) - 1.0).abs() < 1e-12);
        assert!((jain(&[9, 0, 0]) - 1.0 / 3.0).abs() < 1e-12);
    }
}
