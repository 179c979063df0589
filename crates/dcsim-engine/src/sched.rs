//! The event scheduler.
//!
//! Events are ordered by `(time, seq)`, where `seq` is a per-scheduler counter: events at
//! equal times pop in the order they were scheduled. Models must not depend on that
//! order for correctness; it exists so that runs are deterministic.
//!
//! The queue is a 4-ary min-heap with branch-free child selection. Cost: `schedule` is
//! O(log₄ n) worst case and O(1) on average for keys that arrive roughly in time order;
//! `pop` is O(log₄ n). The event a `pop` returns stays in the root until the next call, and
//! an event scheduled meanwhile replaces it with one descent (usually short: new events are
//! near-future) instead of a removal plus an insertion; this made the dumbbell benchmark
//! 27 % and the fat-tree 7 % faster. `cargo run --release -p dcsim-engine --example
//! heapbench` measures a steady pop + push against `std::collections::BinaryHeap`. A timing
//! wheel in front of the heap (65 ns slots, 268 µs horizon) was faster only beyond a few
//! thousand pending events and 5–10 % slower on the benchmark simulations, so it was not
//! kept; so were a winner tree over fixed event sources (20 ns vs 24 ns per pop+push at 16
//! pending, no better beyond) and Floyd's bottom-up deletion (no gain: the cost is the
//! latency of the dependent loads). Each entry is a 16-byte key plus the event (events are
//! small `Copy` enums of IDs, at most 16 bytes), so 10⁶ pending events use about 32 MB. The
//! network layer keeps at most one pending event per port and per link, so the heap holds
//! about as many entries as there are busy elements, not packets in flight.

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

/// A 4-ary min-heap of `(key, event)` with keys and events in parallel arrays.
///
/// Four children per node halve the depth of a binary heap, and the smallest child is
/// chosen without data-dependent branches, which matters because sift-down comparisons
/// are unpredictable and each misprediction costs more than the comparison itself.
/// The key array is padded with `u128::MAX` to one root plus whole groups of four, so
/// every node that has a child slot has four and the selection needs no test for a partial
/// last group: a padding key never wins and stops the descent. (Aligning each group of
/// four to a cache line was measured too: no faster on the fat-tree benchmark and 3 %
/// slower on the dumbbell, for the index arithmetic.) Removal uses the "hole" technique:
/// elements move up into the hole instead of swapping.
struct QuadHeap<E> {
    /// `keys[0]` is the root and the children of `i` are `4i+1..=4i+4`; slots from
    /// `evs.len()` on hold `u128::MAX`, and `keys.len()` is always 1 modulo 4.
    keys: Vec<u128>,
    /// The event of each key; exactly as long as the heap.
    evs: Vec<E>,
}

impl<E: Copy> QuadHeap<E> {
    fn new() -> Self {
        Self {
            keys: vec![u128::MAX; 5],
            evs: Vec::new(),
        }
    }
    #[inline]
    fn len(&self) -> usize {
        self.evs.len()
    }
    #[inline]
    fn push(&mut self, key: u128, ev: E) {
        debug_assert!(key < u128::MAX, "the padding key is reserved");
        let mut i = self.evs.len();
        if i == self.keys.len() {
            self.keys.extend([u128::MAX; 4]);
        }
        self.evs.push(ev);
        while i > 0 {
            let parent = (i - 1) / 4;
            if self.keys[parent] <= key {
                break;
            }
            self.keys[i] = self.keys[parent];
            self.evs[i] = self.evs[parent];
            i = parent;
        }
        self.keys[i] = key;
        self.evs[i] = ev;
    }
    #[inline]
    fn peek(&self) -> Option<(u128, E)> {
        self.evs.first().map(|&ev| (self.keys[0], ev))
    }
    /// Removes the root (the heap must not be empty).
    #[inline]
    fn remove_root(&mut self) {
        let last = self.evs.len() - 1;
        let last_key = self.keys[last];
        let last_ev = self.evs.pop().expect("non-empty");
        self.keys[last] = u128::MAX;
        if last > 0 {
            self.sift_down(last_key, last_ev);
        }
    }
    /// Replaces the root (the heap must not be empty) by `(key, ev)`, where `key` is not
    /// smaller than the old root's: one descent instead of a removal and an insertion.
    #[inline]
    fn replace_root(&mut self, key: u128, ev: E) {
        debug_assert!(key >= self.keys[0] && key < u128::MAX);
        self.sift_down(key, ev);
    }
    /// Moves the hole at the root down to where `key` belongs and puts `(key, ev)` there.
    #[inline]
    fn sift_down(&mut self, key: u128, ev: E) {
        let slots = self.keys.len();
        let mut i = 0;
        loop {
            let c = 4 * i + 1;
            if c >= slots {
                break;
            }
            // `slots` and `c` are both 1 modulo 4: the group of four is always there.
            let k: &[u128; 4] = self.keys[c..c + 4].try_into().expect("padded group");
            let a = usize::from(k[1] < k[0]);
            let b = 2 + usize::from(k[3] < k[2]);
            let m = if k[b] < k[a] { b } else { a };
            let km = k[m];
            if km >= key {
                break;
            }
            let m = c + m;
            self.keys[i] = km;
            self.evs[i] = self.evs[m];
            i = m;
        }
        self.keys[i] = key;
        self.evs[i] = ev;
    }
}

/// A deterministic discrete-event scheduler. Only [`Scheduler::pop`] advances time.
///
/// The event returned by `pop` stays in the heap's root until the next call: if the
/// handler schedules an event in between (most handlers schedule one), that event takes
/// the root's place with a single descent, usually a short one because new events are
/// near-future, instead of a removal (a descent to the bottom) followed by an insertion.
/// The order of events is unchanged: keys are unique, so any correct heap pops them in
/// the same order.
pub struct Scheduler<E> {
    heap: QuadHeap<E>,
    /// Whether the heap's root is the event last popped (to be replaced or removed).
    root_popped: bool,
    seq: u64,
    now: Time,
    stats: SchedStats,
}

impl<E: Copy> Default for Scheduler<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> Scheduler<E> {
    /// An empty scheduler at time zero.
    pub fn new() -> Self {
        Self {
            heap: QuadHeap::new(),
            root_popped: false,
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
        self.stats.pushes += 1;
        if self.root_popped {
            // Not earlier than the popped root: its key has an earlier sequence number.
            self.root_popped = false;
            self.heap.replace_root(key, ev);
        } else {
            self.heap.push(key, ev);
            let len = self.heap.len() as u64;
            if len > self.stats.peak_len {
                self.stats.peak_len = len;
            }
        }
    }

    /// Drops the root if it is the event last popped.
    #[inline]
    fn settle(&mut self) {
        if self.root_popped {
            self.root_popped = false;
            self.heap.remove_root();
        }
    }

    /// Removes the earliest event, advances time to it and returns it.
    #[inline]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.settle();
        let (key, ev) = self.heap.peek()?;
        self.root_popped = true;
        self.stats.pops += 1;
        let t = Time((key >> 64) as u64);
        self.now = t;
        Some((t, ev))
    }

    /// Like [`Scheduler::pop`], but only if the earliest event is not later than `end`.
    #[inline]
    pub fn pop_until(&mut self, end: Time) -> Option<(Time, E)> {
        if self.peek_time()? > end {
            return None;
        }
        self.pop()
    }

    /// The time of the earliest pending event.
    #[inline]
    pub fn peek_time(&mut self) -> Option<Time> {
        self.settle();
        self.heap.peek().map(|(k, _)| Time((k >> 64) as u64))
    }

    /// The event that will most likely pop next, for prefetching its data while the
    /// current one is handled: the earliest child of the popped root (exact unless the
    /// handler schedules an earlier event). `None` if no event was just popped.
    #[inline]
    pub fn likely_next(&self) -> Option<E> {
        if !self.root_popped {
            return None;
        }
        let k: &[u128; 4] = self.heap.keys[1..5].try_into().ok()?;
        let a = usize::from(k[1] < k[0]);
        let b = 2 + usize::from(k[3] < k[2]);
        let m = if k[b] < k[a] { b } else { a };
        self.heap.evs.get(1 + m).copied()
    }

    /// Records that the event just popped was stale (for [`SchedStats::stale`]).
    #[inline]
    pub fn note_stale(&mut self) {
        self.stats.stale += 1;
    }

    /// Number of pending events.
    #[inline]
    pub fn len(&self) -> usize {
        self.heap.len() - usize::from(self.root_popped)
    }

    /// Whether no event is pending.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Counters since creation.
    pub fn stats(&self) -> SchedStats {
        self.stats
    }
}

impl<E, T: From<E> + Copy> Schedule<E> for Scheduler<T> {
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

    #[test]
    fn likely_next_is_the_next_pop_unless_an_earlier_event_comes() {
        let mut s = Scheduler::new();
        assert_eq!(s.likely_next(), None::<u32>);
        for (t, e) in [(7, 70), (3, 30), (9, 90), (5, 50), (4, 40), (8, 80)] {
            s.schedule(Time(t), e);
        }
        assert_eq!(s.likely_next(), None, "nothing popped yet");
        assert_eq!(s.pop(), Some((Time(3), 30)));
        assert_eq!(s.likely_next(), Some(40));
        s.schedule(Time(3), 31); // earlier than the hint: the hint was only a hint
        assert_eq!(s.pop(), Some((Time(3), 31)));
        assert_eq!(s.likely_next(), Some(40));
        assert_eq!(s.pop(), Some((Time(4), 40)));
        assert_eq!(s.likely_next(), Some(50));
    }

    proptest! {
        /// With no event scheduled in between, the hint taken after a pop names the next
        /// pop (the heap's padding never yields a phantom event).
        #[test]
        fn likely_next_predicts_the_next_pop(
            times in proptest::collection::vec(0u64..30, 1..200)
        ) {
            let mut s = Scheduler::new();
            for (i, &t) in times.iter().enumerate() {
                s.schedule(Time(t), i);
            }
            let mut hint = None;
            while let Some((_, e)) = s.pop() {
                if let Some(h) = hint { prop_assert_eq!(h, e); }
                hint = s.likely_next();
                prop_assert_eq!(hint.is_none(), s.is_empty());
            }
        }

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
                prop_assert_eq!(s.len() as u64, next_id - popped.len() as u64);
                if pop {
                    let next = s.peek_time();
                    if let Some(p) = s.pop() { prop_assert_eq!(Some(p.0), next); popped.push(p); }
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
