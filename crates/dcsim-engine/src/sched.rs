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
//! latency of the dependent loads), and a radix heap (34–50 ns per pop+push from 16 to 4,096
//! pending, against 17–41 ns). A calendar queue of 256 buckets of 16.4 ns in front of the
//! heap, exact in its order, made the k = 8 benchmark about 1.1× faster and the dumbbell
//! 1.29× slower, and, taken on only beyond 256 pending events, gained nothing (docs/log/).
//! The heap's keys are 64-bit and exact (see [`Scheduler`]).
//! Each entry is an 8-byte key plus the event (events are small `Copy` enums of IDs, at
//! most 16 bytes), so 10⁶ pending events use about 24 MB. The
//! network layer keeps at most one pending event per port and per link, so the heap holds
//! about as many entries as there are busy elements, not packets in flight.

use crate::Time;
use crate::order::Slot;

/// Lets a layer schedule its own event type on a scheduler whose event type is the
/// facade's sum type, without naming that type.
pub trait Schedule<E> {
    /// The current simulated time.
    fn now(&self) -> Time;
    /// Schedules `ev` at `at`, which must not be in the past.
    fn at(&mut self, at: Time, ev: E);
    /// Reserves the next place in the order of creation for an event that another part of
    /// a split run may create later in this handler's name ([`Slot`]).
    /// A one-thread scheduler has nothing to reserve: an event it does not create leaves
    /// no gap in its order.
    #[inline]
    fn reserve(&mut self) -> Option<Slot> {
        None
    }
}

/// The events a run loop will most likely handle next, for prefetching their data while
/// the current one is handled: hints, which an event scheduled by the current handler can
/// make wrong. Both [`Scheduler`] and the parts of a parallel run
/// ([`crate::parallel::Part::prefetch`]) offer them.
pub trait Upcoming<E> {
    /// Events pending, not counting the one being handled.
    fn pending(&self) -> usize;
    /// The event most likely handled next.
    fn likely_next(&self) -> Option<E> {
        self.likely_next_two().0
    }
    /// The events most likely handled next and after it.
    fn likely_next_two(&self) -> (Option<E>, Option<E>);
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

/// A heap key: ordered, with a largest value that pads the heap and is never a real key.
pub(crate) trait HeapKey: Copy + Ord {
    /// The padding key.
    const PAD: Self;
}
impl HeapKey for u64 {
    const PAD: Self = Self::MAX;
}
impl HeapKey for u128 {
    const PAD: Self = Self::MAX;
}

/// A 4-ary min-heap of `(key, event)` with keys and events in parallel arrays.
///
/// Four children per node halve the depth of a binary heap, and the smallest child is
/// chosen without data-dependent branches, which matters because sift-down comparisons
/// are unpredictable and each misprediction costs more than the comparison itself.
/// The key array is padded with the largest key to one root plus whole groups of four, so
/// every node that has a child slot has four and the selection needs no test for a partial
/// last group: a padding key never wins and stops the descent. (Aligning each group of
/// four to a cache line was measured too: no faster on the fat-tree benchmark and 3 %
/// slower on the dumbbell, for the index arithmetic.) Removal uses the "hole" technique:
/// elements move up into the hole instead of swapping.
pub(crate) struct QuadHeap<K, E> {
    /// `keys[0]` is the root and the children of `i` are `4i+1..=4i+4`; slots from
    /// `evs.len()` on hold [`HeapKey::PAD`], and `keys.len()` is always 1 modulo 4.
    keys: Vec<K>,
    /// The event of each key; exactly as long as the heap.
    evs: Vec<E>,
}

impl<K: HeapKey, E: Copy> QuadHeap<K, E> {
    pub(crate) fn new() -> Self {
        Self {
            keys: vec![K::PAD; 5],
            evs: Vec::new(),
        }
    }
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.evs.len()
    }
    #[inline]
    pub(crate) fn push(&mut self, key: K, ev: E) {
        debug_assert!(key < K::PAD, "the padding key is reserved");
        let mut i = self.evs.len();
        if i == self.keys.len() {
            self.keys.extend([K::PAD; 4]);
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
    pub(crate) fn peek(&self) -> Option<(K, E)> {
        self.evs.first().map(|&ev| (self.keys[0], ev))
    }
    /// Removes the root (the heap must not be empty).
    #[inline]
    pub(crate) fn remove_root(&mut self) {
        let last = self.evs.len() - 1;
        let last_key = self.keys[last];
        let last_ev = self.evs.pop().expect("non-empty");
        self.keys[last] = K::PAD;
        if last > 0 {
            self.sift_down(last_key, last_ev);
        }
    }
    /// Replaces the root (the heap must not be empty) by `(key, ev)`, where `key` is not
    /// smaller than the old root's: one descent instead of a removal and an insertion.
    #[inline]
    pub(crate) fn replace_root(&mut self, key: K, ev: E) {
        debug_assert!(key >= self.keys[0] && key < K::PAD);
        self.sift_down(key, ev);
    }
    /// Moves the hole at the root down to where `key` belongs and puts `(key, ev)` there.
    #[inline]
    fn sift_down(&mut self, key: K, ev: E) {
        let slots = self.keys.len();
        let mut i = 0;
        loop {
            let c = 4 * i + 1;
            if c >= slots {
                break;
            }
            // `slots` and `c` are both 1 modulo 4: the group of four is always there.
            let k: &[K; 4] = self.keys[c..c + 4].try_into().expect("padded group");
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
    /// Empties the heap: `scratch` receives its keys in order, each with its old position,
    /// and `evs` the events in the same order (both cleared first).
    fn drain_sorted(&mut self, scratch: &mut Vec<(K, usize)>, evs: &mut Vec<E>) {
        scratch.clear();
        scratch.extend(
            self.keys[..self.evs.len()]
                .iter()
                .enumerate()
                .map(|(i, &k)| (k, i)),
        );
        scratch.sort_unstable_by_key(|&(k, _)| k);
        evs.clear();
        evs.extend(scratch.iter().map(|&(_, i)| self.evs[i]));
        self.evs.clear();
        self.keys.clear();
        self.keys.extend([K::PAD; 5]);
    }

    /// With the root being the event just popped: the earliest of its children and the
    /// runner-up (the earliest of the other three children and the first one's own
    /// children), the events most likely popped next and after it.
    #[inline]
    pub(crate) fn likely_next_two(&self) -> (Option<E>, Option<E>) {
        let keys = &self.keys;
        let Some(k) = keys.get(1..5) else {
            return (None, None);
        };
        let a = usize::from(k[1] < k[0]);
        let b = 2 + usize::from(k[3] < k[2]);
        let (m, other) = if k[b] < k[a] { (b, a) } else { (a, b) };
        // The runner-up: the loser of the other pair, the winner of the other pair, or the
        // best child of the next event's node.
        let loser = if k[m ^ 1] < k[other] { m ^ 1 } else { other };
        let mut second = (k[loser], 1 + loser);
        let first_child = 4 * (1 + m) + 1;
        if let Some(g) = keys.get(first_child..first_child + 4) {
            for (i, &key) in g.iter().enumerate() {
                if key < second.0 {
                    second = (key, first_child + i);
                }
            }
        }
        let evs = &self.evs;
        (evs.get(1 + m).copied(), evs.get(second.1).copied())
    }
}

/// An event too far ahead for the heap's key: ordered by `(time, seq)`, earliest first
/// (std's heap is a max-heap, so the order is reversed).
struct Far<E> {
    key: u128,
    ev: E,
}
impl<E> Far<E> {
    fn time(&self) -> Time {
        Time((self.key >> 64) as u64)
    }
}
impl<E> PartialEq for Far<E> {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl<E> Eq for Far<E> {}
impl<E> PartialOrd for Far<E> {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Far<E> {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.key.cmp(&self.key)
    }
}

/// The fewest rank bits of a heap key: a renumbering at most every 2²¹ events, and a
/// horizon of 2⁴² ps (4.4 s).
const MIN_RANK_BITS: u32 = 22;

/// A deterministic discrete-event scheduler. Only [`Scheduler::pop`] advances time.
///
/// **Keys.** Events are ordered by `(time, insertion sequence)`, which takes 128 bits, but
/// the heap compares 64-bit keys `(time − epoch) << r | rank`: with 128-bit keys a third
/// of the heap's time went to comparing them (64-bit keys: `heapbench` 23 → 21.5 ns at 256
/// pending and 38 → 26 ns at 4,096; in 15 alternating runs of the two binaries, the
/// fat-tree benchmark 7–20 % and the dumbbell 0–14 % faster). The rank is a counter that
/// only grows, so at equal times the earlier-scheduled event has the smaller rank: the
/// order is exactly `(time, sequence)`. When the ranks run
/// out (every 2^r − n events, with r ≥ 22 and 2^r > 2n, so at least n + 1 ranks free after
/// each renumbering) the pending events are sorted and renumbered 0..n, which keeps their
/// order, and the epoch moves up to the current time. Events at or beyond
/// `epoch + 2^(64−r) − 1` (4.4 s ahead with r = 22) wait, with full 128-bit keys, in a second
/// heap, and move into the first when the epoch comes within reach; every one of them is
/// later than every event in the first, so the first heap alone decides what pops next.
///
/// **Popping.** The event returned by `pop` stays in the heap's root until the next call:
/// if the handler schedules an event in between (most handlers schedule one), that event
/// takes the root's place with a single descent, usually a short one because new events
/// are near-future, instead of a removal (a descent to the bottom) followed by an
/// insertion. The order of events is unchanged: keys are unique, so any correct heap pops
/// them in the same order.
pub struct Scheduler<E> {
    heap: QuadHeap<u64, E>,
    /// Events at or beyond `epoch + horizon`, keyed by `(time, far_seq)`.
    far: std::collections::BinaryHeap<Far<E>>,
    /// Whether the heap's root is the event last popped (to be replaced or removed).
    root_popped: bool,
    /// Time 0 of the heap's keys.
    epoch: Time,
    /// Low bits of a heap key that hold the rank.
    rank_bits: u32,
    /// Next rank to give; renumbering happens when it reaches `1 << rank_bits`.
    next_rank: u64,
    /// Offsets from the epoch below this fit in a heap key: `2^(64 − rank_bits) − 1`.
    horizon: u64,
    /// Tie-breaker of the far heap.
    far_seq: u64,
    /// Reused buffers of a renumbering.
    scratch: Vec<(u64, usize)>,
    scratch_evs: Vec<E>,
    min_rank_bits: u32,
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
        Self::with_min_rank_bits(MIN_RANK_BITS)
    }

    /// With another floor on the rank bits (tests use extreme ones to exercise
    /// renumbering and the far heap on small inputs).
    fn with_min_rank_bits(bits: u32) -> Self {
        Self {
            heap: QuadHeap::new(),
            far: std::collections::BinaryHeap::new(),
            root_popped: false,
            epoch: Time::ZERO,
            rank_bits: bits,
            next_rank: 0,
            horizon: (1u64 << (64 - bits)) - 1,
            far_seq: 0,
            scratch: Vec::new(),
            scratch_evs: Vec::new(),
            min_rank_bits: bits,
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
    ///
    /// The common case (the handler's first event, near enough for a heap key, with ranks
    /// left) is inlined into the caller: it replaces the popped root. Everything else is
    /// one call away. (Marked `#[inline]` as a whole, the function stayed a call, and
    /// splitting it saved the dumbbell benchmark 2 % of its instructions.)
    #[inline(always)]
    pub fn schedule(&mut self, at: Time, ev: E) {
        debug_assert!(
            at >= self.now,
            "event scheduled in the past: {at:?} < {:?}",
            self.now
        );
        let off = at.0 - self.epoch.0;
        if self.root_popped && off < self.horizon && self.next_rank >> self.rank_bits == 0 {
            self.stats.pushes += 1;
            let key = (off << self.rank_bits) | self.next_rank;
            self.next_rank += 1;
            self.root_popped = false;
            self.heap.replace_root(key, ev);
        } else {
            self.schedule_other(at, ev);
        }
    }

    /// [`Scheduler::schedule`] outside its common case.
    #[inline(never)]
    fn schedule_other(&mut self, at: Time, ev: E) {
        self.stats.pushes += 1;
        if self.next_rank >> self.rank_bits != 0 {
            self.renumber(self.now);
        }
        let mut off = at.0 - self.epoch.0;
        if off >= self.horizon {
            if at.0 - self.now.0 < self.horizon / 2 {
                // Near enough to now, but the epoch lags: move it up.
                self.renumber(self.now);
                off = at.0 - self.epoch.0;
            }
            if off >= self.horizon {
                // Drop the popped root first (rare path): a replacement of the root counts
                // no new peak, so the count must not wait for one.
                self.settle();
                self.far.push(Far {
                    key: (u128::from(at.0) << 64) | u128::from(self.far_seq),
                    ev,
                });
                self.far_seq += 1;
                self.note_len();
                return;
            }
        }
        let key = (off << self.rank_bits) | self.next_rank;
        self.next_rank += 1;
        if self.root_popped {
            // Not earlier than the popped root: same time or later, and a larger rank.
            self.root_popped = false;
            self.heap.replace_root(key, ev);
        } else {
            self.heap.push(key, ev);
            self.note_len();
        }
    }

    #[inline]
    fn note_len(&mut self) {
        let len = self.len() as u64;
        if len > self.stats.peak_len {
            self.stats.peak_len = len;
        }
    }

    /// Moves the epoch to `to` (not later than any pending event), renumbers the heap's
    /// events 0..n in their order with more than 2n ranks in all, and brings in the far
    /// events that now fit. Costs a sort of the pending events; runs every 2^r − n
    /// schedules at most, or when the epoch falls behind.
    #[cold]
    fn renumber(&mut self, to: Time) {
        let old_bits = self.rank_bits;
        let old_epoch = self.epoch;
        let mut evs = std::mem::take(&mut self.scratch_evs);
        self.heap.drain_sorted(&mut self.scratch, &mut evs);
        let pending = (self.scratch.len() + self.far.len()) as u64;
        self.rank_bits = (2 * pending + 1)
            .next_power_of_two()
            .trailing_zeros()
            .clamp(self.min_rank_bits, 62);
        self.epoch = to;
        self.next_rank = 0;
        self.horizon = (1u64 << (64 - self.rank_bits)) - 1;
        let horizon = self.horizon;
        // Sorted keys make a valid heap as they are (each parent precedes its children);
        // the heap's arrays are rebuilt in order by `push`, each a one-step insertion.
        for (&(key, _), &ev) in self.scratch.iter().zip(&evs) {
            let at = old_epoch.0 + (key >> old_bits);
            let off = at - to.0;
            if off < horizon {
                self.heap.push((off << self.rank_bits) | self.next_rank, ev);
                self.next_rank += 1;
            } else {
                // Only when the rank bits grew and shrank the horizon.
                self.far.push(Far {
                    key: (u128::from(at) << 64) | u128::from(self.far_seq),
                    ev,
                });
                self.far_seq += 1;
            }
        }
        self.scratch_evs = evs;
        while let Some(f) = self.far.peek()
            && f.time().0 - to.0 < horizon
        {
            let f = self.far.pop().expect("peeked");
            self.heap.push(
                ((f.time().0 - to.0) << self.rank_bits) | self.next_rank,
                f.ev,
            );
            self.next_rank += 1;
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
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.pop_until(Time::MAX)
    }

    /// Like [`Scheduler::pop`], but only if the earliest event is not later than `end`.
    /// This and the calls it makes are always inlined: the run loop is their caller that
    /// matters, and LLVM stopped inlining them into it when unrelated code grew
    /// (2026-11-27: 7 % more instructions on the dumbbell benchmark). It settles the root
    /// and reads the earliest event once, where a `peek_time` followed by a `pop` did
    /// each twice: 1.1 % fewer instructions on the dumbbell benchmark.
    #[inline(always)]
    pub fn pop_until(&mut self, end: Time) -> Option<(Time, E)> {
        self.settle();
        let (key, ev) = match self.heap.peek() {
            Some(top) => top,
            None => {
                let t = self.far.peek()?.time();
                if t > end {
                    return None;
                }
                self.renumber(t);
                self.heap.peek()?
            }
        };
        let t = Time(self.epoch.0 + (key >> self.rank_bits));
        if t > end {
            return None;
        }
        self.root_popped = true;
        self.stats.pops += 1;
        self.now = t;
        Some((t, ev))
    }

    /// The earliest pending event, left pending.
    #[inline]
    pub(crate) fn peek(&mut self) -> Option<(Time, E)> {
        self.settle();
        if self.heap.len() == 0 {
            let t = self.far.peek()?.time();
            self.renumber(t);
        }
        let (key, ev) = self.heap.peek()?;
        Some((Time(self.epoch.0 + (key >> self.rank_bits)), ev))
    }

    /// Pops the event that [`Scheduler::peek`] just returned, at `t`, its time (no other
    /// call in between).
    #[inline]
    pub(crate) fn pop_peeked(&mut self, t: Time) {
        debug_assert!(!self.root_popped && self.heap.len() > 0);
        self.root_popped = true;
        self.stats.pops += 1;
        self.now = t;
    }

    /// Rewrites every pending event in place with `f`, which must not change their order
    /// (it depends only on their times and the order of scheduling).
    pub(crate) fn events_mut(&mut self, mut f: impl FnMut(&mut E)) {
        self.settle();
        self.heap.evs.iter_mut().for_each(&mut f);
        if !self.far.is_empty() {
            let mut far = std::mem::take(&mut self.far).into_vec();
            for x in &mut far {
                f(&mut x.ev);
            }
            self.far = far.into();
        }
    }

    /// The time of the earliest pending event.
    #[inline(always)]
    pub fn peek_time(&mut self) -> Option<Time> {
        self.settle();
        match self.heap.peek() {
            Some((k, _)) => Some(Time(self.epoch.0 + (k >> self.rank_bits))),
            None => self.far.peek().map(Far::time),
        }
    }

    /// The event that will most likely pop next, for prefetching its data while the
    /// current one is handled: the earliest child of the popped root (exact unless the
    /// handler schedules an earlier event, or the next event waits in the far heap).
    /// `None` if no event was just popped.
    #[inline]
    pub fn likely_next(&self) -> Option<E> {
        self.likely_next_two().0
    }

    /// The events that will most likely pop next and after it, as [`Scheduler::likely_next`]:
    /// the earliest child of the popped root, then the earliest of its three siblings and
    /// its own four children. A loop can prefetch the first data of the event after next,
    /// so that the next event's data is in cache in time to find what that event will touch
    /// in turn.
    #[inline]
    pub fn likely_next_two(&self) -> (Option<E>, Option<E>) {
        if !self.root_popped {
            return (None, None);
        }
        self.heap.likely_next_two()
    }

    /// Records that the event just popped was stale (for [`SchedStats::stale`]).
    #[inline]
    pub fn note_stale(&mut self) {
        self.stats.stale += 1;
    }

    /// Number of pending events.
    #[inline]
    pub fn len(&self) -> usize {
        self.heap.len() + self.far.len() - usize::from(self.root_popped)
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

impl<E: Copy> Upcoming<E> for Scheduler<E> {
    #[inline]
    fn pending(&self) -> usize {
        self.len()
    }
    #[inline]
    fn likely_next(&self) -> Option<E> {
        Self::likely_next(self)
    }
    #[inline]
    fn likely_next_two(&self) -> (Option<E>, Option<E>) {
        Self::likely_next_two(self)
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

    /// Pops everything, scheduling as `ops` say in between, on a scheduler with
    /// `min_bits` rank bits; returns the pops.
    fn run_ops(min_bits: u32, ops: &[(u64, bool)]) -> (Vec<(Time, u64)>, u64) {
        let mut s = Scheduler::with_min_rank_bits(min_bits);
        let mut next_id = 0u64;
        let mut popped = Vec::new();
        for &(dt, pop) in ops {
            assert_eq!(s.len() as u64, next_id - popped.len() as u64);
            if pop {
                let next = s.peek_time();
                if let Some(p) = s.pop() {
                    assert_eq!(Some(p.0), next);
                    popped.push(p);
                }
            } else {
                s.schedule(Time(s.now().0 + dt), next_id);
                next_id += 1;
            }
        }
        while let Some(p) = s.pop() {
            popped.push(p);
        }
        (popped, next_id)
    }

    #[test]
    fn far_events_and_renumbering_keep_the_order() {
        // 2 rank bits: renumbering every few events; 61: a horizon of 7 ps, so most events
        // wait in the far heap and the epoch moves all the time.
        let ops: Vec<(u64, bool)> = (0..2000u64)
            .map(|i| ((i * 7919) % 23, i % 3 == 0))
            .collect();
        let (reference, n) = run_ops(MIN_RANK_BITS, &ops);
        assert_eq!(reference.len() as u64, n);
        for bits in [2, 3, 60, 61, 62] {
            assert_eq!(run_ops(bits, &ops).0, reference, "rank bits {bits}");
        }
    }

    #[test]
    fn events_beyond_the_horizon_pop_in_order() {
        let mut s = Scheduler::new();
        let far = Time(1 << 50); // 1,126 s: beyond the 4.4 s horizon
        s.schedule(far, 3);
        s.schedule(Time(5), 0);
        s.schedule(far, 4);
        s.schedule(Time(u64::MAX), 6);
        assert_eq!(s.pop(), Some((Time(5), 0)));
        s.schedule(Time(6), 1);
        s.schedule(Time(far.0 - 1), 2);
        assert_eq!(s.pop(), Some((Time(6), 1)));
        assert_eq!(s.pop(), Some((Time(far.0 - 1), 2)));
        s.schedule(far, 5); // scheduled last: pops after 3 and 4 at the same time
        assert_eq!(s.pop(), Some((far, 3)));
        assert_eq!(s.pop(), Some((far, 4)));
        assert_eq!(s.pop(), Some((far, 5)));
        assert_eq!(s.pop(), Some((Time(u64::MAX), 6)));
        assert_eq!(s.pop(), None);
        assert_eq!(s.stats().peak_len, 5);
    }

    #[test]
    fn pop_until_stops_at_its_end_and_leaves_later_events_pending() {
        let mut s = Scheduler::new();
        let far = Time(1 << 50); // beyond the horizon: in the far heap
        s.schedule(Time(5), 0);
        s.schedule(Time(10), 1);
        s.schedule(Time(11), 2);
        s.schedule(far, 3);
        assert_eq!(s.pop_until(Time(10)), Some((Time(5), 0)));
        assert_eq!(s.pop_until(Time(10)), Some((Time(10), 1))); // the end is inclusive
        assert_eq!(s.pop_until(Time(10)), None);
        assert_eq!((s.now(), s.len()), (Time(10), 2));
        assert_eq!(s.pop_until(Time(11)), Some((Time(11), 2)));
        // Only the far event is left: a stop before it leaves it where it is.
        assert_eq!(s.pop_until(Time(far.0 - 1)), None);
        assert_eq!((s.now(), s.len()), (Time(11), 1));
        s.schedule(Time(12), 4); // still near: pops first
        assert_eq!(s.pop_until(far), Some((Time(12), 4)));
        assert_eq!(s.pop_until(far), Some((far, 3)));
        assert_eq!(s.pop_until(Time::MAX), None);
        assert_eq!(s.stats().pops, 5);
    }

    #[test]
    fn peak_len_does_not_count_the_popped_event() {
        let mut s = Scheduler::new();
        s.schedule(Time(0), 0);
        s.pop();
        s.schedule(Time(1 << 50), 1); // to the far heap while the popped root is still held
        assert_eq!((s.len(), s.stats().peak_len), (1, 1));
        s.schedule(Time(1), 2); // replaces the root: two pending
        assert_eq!((s.len(), s.stats().peak_len), (2, 2));
    }

    proptest! {
        /// Renumbering and the far heap change nothing: every rank-bit floor pops the same
        /// sequence as the default.
        #[test]
        fn rank_bits_do_not_change_the_order(
            ops in proptest::collection::vec((0u64..50, any::<bool>()), 1..400),
            bits in prop_oneof![Just(2u32), Just(3), Just(8), Just(58), Just(61), Just(62)],
        ) {
            prop_assert_eq!(run_ops(bits, &ops), run_ops(MIN_RANK_BITS, &ops));
        }

        /// With no event scheduled in between, the hints taken after a pop name the next
        /// two pops (the heap's padding never yields a phantom event).
        #[test]
        fn likely_next_predicts_the_next_pop(
            times in proptest::collection::vec(0u64..30, 1..200)
        ) {
            let mut s = Scheduler::new();
            for (i, &t) in times.iter().enumerate() {
                s.schedule(Time(t), i);
            }
            let (mut hint, mut after) = (None, None);
            while let Some((_, e)) = s.pop() {
                if let Some(h) = hint { prop_assert_eq!(h, e); }
                if let Some(a) = after { prop_assert_eq!(s.likely_next(), Some(a)); }
                (hint, after) = s.likely_next_two();
                prop_assert_eq!(hint, s.likely_next());
                prop_assert_eq!(hint.is_none(), s.is_empty());
                prop_assert_eq!(after.is_none(), s.len() < 2);
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
