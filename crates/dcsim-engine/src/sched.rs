//! The event scheduler.
//!
//! A binary min-heap keyed on `(time, seq)`, where `seq` is a per-scheduler counter: events
//! at equal times pop in the order they were scheduled. Models must not depend on that
//! order for correctness; it exists so that runs are deterministic.
//!
//! Cost: `schedule` is O(log n) worst case and O(1) on average for keys that arrive roughly
//! in time order; `pop` is O(log n). Each entry is a 16-byte key plus the event (events are
//! small `Copy` enums of IDs, at most 16 bytes), so a heap of 10⁶ pending events uses about
//! 32 MB. The network layer keeps at most one pending event per port and per link, so the
//! heap holds about as many entries as there are busy elements, not packets in flight.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::Time;

/// Lets a layer schedule its own event type on a scheduler whose event type is the
/// facade's sum type, without naming that type.
pub trait Schedule<E> {
    /// The current simulated time.
    fn now(&self) -> Time;
    /// Schedules `ev` at `at`, which must not be in the past.
    fn at(&mut self, at: Time, ev: E);
}

/// Counters that are the first thing to read when performance changes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct SchedStats {
    /// Events scheduled.
    pub pushes: u64,
    /// Events popped (including stale ones the caller discarded).
    pub pops: u64,
    /// Popped events that the caller reported as stale (cancelled timers).
    pub stale: u64,
    /// Largest number of pending events.
    pub peak_len: u64,
}

struct Entry<E> {
    /// `time << 64 | seq`: one integer comparison orders by time, then by insertion.
    key: u128,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the smallest key first.
    #[inline]
    fn cmp(&self, o: &Self) -> Ordering {
        o.key.cmp(&self.key)
    }
}

/// A deterministic discrete-event scheduler. Only [`Scheduler::pop`] advances time.
pub struct Scheduler<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now: Time,
    stats: SchedStats,
}

impl<E> Default for Scheduler<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> Scheduler<E> {
    /// An empty scheduler at time zero.
    pub fn new() -> Self {
        Self {
            heap: BinaryHeap::new(),
            seq: 0,
            now: Time::ZERO,
            stats: SchedStats::default(),
        }
    }

    /// The time of the event most recently popped (zero before the first pop).
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// Schedules `ev` at time `at`.
    ///
    /// # Panics
    /// In debug builds, if `at` is earlier than [`Scheduler::now`]: scheduling in the past
    /// is a model bug.
    #[inline]
    pub fn schedule(&mut self, at: Time, ev: E) {
        debug_assert!(
            at >= self.now,
            "event scheduled in the past: {at:?} < {:?}",
            self.now
        );
        let key = (u128::from(at.0) << 64) | u128::from(self.seq);
        self.seq += 1;
        self.heap.push(Entry { key, ev });
        self.stats.pushes += 1;
        let len = self.heap.len() as u64;
        if len > self.stats.peak_len {
            self.stats.peak_len = len;
        }
    }

    /// Removes the earliest event, advances time to it and returns it.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let e = self.heap.pop()?;
        self.stats.pops += 1;
        let t = Time((e.key >> 64) as u64);
        self.now = t;
        Some((t, e.ev))
    }

    /// The time of the earliest pending event.
    #[inline]
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| Time((e.key >> 64) as u64))
    }

    /// Records that the event just popped was stale (for [`SchedStats::stale`]).
    #[inline]
    pub fn note_stale(&mut self) {
        self.stats.stale += 1;
    }

    /// Number of pending events.
    #[inline]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether no event is pending.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Counters since creation.
    pub fn stats(&self) -> SchedStats {
        self.stats
    }
}

impl<E, T: From<E>> Schedule<E> for Scheduler<T> {
    #[inline]
    fn now(&self) -> Time {
        self.now
    }
    #[inline]
    fn at(&mut self, at: Time, ev: E) {
        self.schedule(at, T::from(ev));
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn equal_times_pop_in_fifo_order() {
        let mut s = Scheduler::new();
        for i in 0..100u32 {
            s.schedule(Time(5), i);
        }
        s.schedule(Time(1), 1000);
        assert_eq!(s.pop(), Some((Time(1), 1000)));
        for i in 0..100u32 {
            assert_eq!(s.pop(), Some((Time(5), i)));
        }
        assert_eq!(s.pop(), None);
        assert_eq!(s.stats().peak_len, 101);
    }

    proptest! {
        /// Pop times never decrease, and every scheduled event pops exactly once, with ties
        /// in scheduling order, even when scheduling is interleaved with popping.
        #[test]
        fn pops_are_time_ordered_and_fifo_within_a_time(
            ops in proptest::collection::vec((0u64..50, any::<bool>()), 1..400)
        ) {
            let mut s = Scheduler::new();
            let mut next_id = 0u64;
            let mut popped = Vec::new();
            for (dt, pop) in ops {
                if pop {
                    if let Some(p) = s.pop() { popped.push(p); }
                } else {
                    let t = Time(s.now().0 + dt);
                    s.schedule(t, next_id);
                    next_id += 1;
                }
            }
            while let Some(p) = s.pop() { popped.push(p); }
            prop_assert_eq!(popped.len() as u64, next_id);
            for w in popped.windows(2) {
                prop_assert!(w[0].0 <= w[1].0);
                if w[0].0 == w[1].0 { prop_assert!(w[0].1 < w[1].1); }
            }
        }
    }
}
