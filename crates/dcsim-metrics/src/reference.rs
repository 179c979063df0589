//! Reference models to check the analysis against.
//!
//! [`processor_sharing`] is the fluid model of an ideal fair-sharing transport on one
//! bottleneck: every active flow gets `capacity / n` at every instant, with no start-up,
//! no queueing and no headers. Under Poisson arrivals at load ρ (an M/G/1 processor-sharing
//! queue) the mean slowdown of flows of *every* size is `1 / (1 − ρ)`, whatever the size
//! distribution (Kleinrock, *Queueing Systems* vol. 2, §4.4), which makes it an end-to-end
//! check of a workload generator and the per-bucket analysis.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// A flow's finish tag in virtual time, ordered by `f64::total_cmp` then by index.
#[derive(Clone, Copy, Debug)]
struct Tag(f64, usize);

impl PartialEq for Tag {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl Eq for Tag {}
impl PartialOrd for Tag {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Tag {
    fn cmp(&self, o: &Self) -> Ordering {
        self.0.total_cmp(&o.0).then(self.1.cmp(&o.1))
    }
}

/// Completion times (seconds after arrival) of flows `(arrival_s, size_bits)` that share
/// one link of `capacity_bps` equally (fluid processor sharing). Arrivals must not
/// decrease. Exact up to floating-point rounding: virtual time `V` advances at
/// `capacity / n(t)`, and a flow arriving at `V = v` with `s` bits finishes when
/// `V = v + s`.
///
/// # Panics
/// If arrivals decrease or the capacity is not positive.
pub fn processor_sharing(flows: &[(f64, f64)], capacity_bps: f64) -> Vec<f64> {
    assert!(capacity_bps > 0.0, "capacity must be positive");
    let mut fct = vec![0.0; flows.len()];
    let mut active: BinaryHeap<Reverse<Tag>> = BinaryHeap::new();
    let (mut now, mut virt) = (0.0f64, 0.0f64);
    let mut next = 0;
    loop {
        let arrival = flows.get(next).map(|f| f.0);
        // Real time at which the earliest active flow would finish.
        let finish = active
            .peek()
            .map(|Reverse(t)| now + (t.0 - virt) * active.len() as f64 / capacity_bps);
        let take_arrival = match (arrival, finish) {
            (None, None) => return fct,
            (Some(a), Some(f)) => a < f,
            (Some(_), None) => true,
            (None, Some(_)) => false,
        };
        if take_arrival {
            let a = flows[next].0;
            assert!(a >= now, "arrivals must not decrease (or start before 0)");
            if !active.is_empty() {
                virt += (a - now) * capacity_bps / active.len() as f64;
            }
            now = a;
            active.push(Reverse(Tag(virt + flows[next].1, next)));
            next += 1;
        } else {
            let Reverse(Tag(v, i)) = active.pop().expect("a finish implies an active flow");
            virt = v;
            now = finish.expect("no arrival left implies a finish");
            fct[i] = now - flows[i].0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_flow_takes_size_over_capacity() {
        let f = processor_sharing(&[(1.0, 10.0)], 5.0);
        assert!((f[0] - 2.0).abs() < 1e-12);
    }

    #[test]
    fn two_equal_flows_share_then_the_survivor_speeds_up() {
        // Both arrive at 0 with 10 and 20 bits on a 10 b/s link: 5 b/s each until the
        // first finishes at 2 s (10 bits), then the second has 10 bits left at 10 b/s.
        let f = processor_sharing(&[(0.0, 10.0), (0.0, 20.0)], 10.0);
        assert!((f[0] - 2.0).abs() < 1e-12, "{f:?}");
        assert!((f[1] - 3.0).abs() < 1e-12, "{f:?}");
    }

    #[test]
    fn a_late_arrival_slows_the_first_flow() {
        // 10 bits at 0, 5 bits at 0.5 s on 10 b/s: the first has 5 bits left at 0.5 s;
        // both get 5 b/s, both finish at 1.5 s.
        let f = processor_sharing(&[(0.0, 10.0), (0.5, 5.0)], 10.0);
        assert!((f[0] - 1.5).abs() < 1e-12, "{f:?}");
        assert!((f[1] - 1.0).abs() < 1e-12, "{f:?}");
    }

    #[test]
    fn idle_periods_do_not_advance_virtual_time() {
        let f = processor_sharing(&[(0.0, 10.0), (5.0, 10.0)], 10.0);
        assert!(
            (f[0] - 1.0).abs() < 1e-12 && (f[1] - 1.0).abs() < 1e-12,
            "{f:?}"
        );
    }

    #[test]
    fn work_is_conserved() {
        // A busy period: the last completion is at total work / capacity after the start.
        let flows: Vec<(f64, f64)> = (0..100).map(|i| (f64::from(i) * 0.01, 3.0)).collect();
        let f = processor_sharing(&flows, 100.0);
        let last = flows
            .iter()
            .zip(&f)
            .map(|(a, t)| a.0 + t)
            .fold(0.0, f64::max);
        assert!((last - 3.0).abs() < 1e-9, "{last}");
    }
}
