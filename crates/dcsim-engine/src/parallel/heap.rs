//! The heaps of pending events: a part's ([`PartHeap`]: its own events in a
//! [`Scheduler`], the others' and late events on a heap of `(time, number)` keys), the
//! reference run's ([`Heap`]), and the view of a part's heap that [`Part::prefetch`] gets
//! ([`Ahead`]).

use std::sync::atomic::Ordering;

#[cfg(doc)]
use super::Part;
use super::numbering::PROVISIONAL;
use super::window::Numbers;
use crate::Scheduler;
use crate::sched::QuadHeap;
use crate::{Time, Upcoming};

/// A part's pending events as [`Part::prefetch`] sees them. The hints name only events the
/// part created itself, which are most of them.
pub struct Ahead<'a, E> {
    pub(super) heap: &'a PartHeap<E>,
}

impl<E: Copy> Upcoming<E> for Ahead<'_, E> {
    #[inline]
    fn pending(&self) -> usize {
        self.heap.own.len() + self.heap.foreign.q.len() - usize::from(self.heap.foreign.root_popped)
    }
    #[inline]
    fn likely_next_two(&self) -> (Option<E>, Option<E>) {
        let (a, b) = self.heap.own.likely_next_two();
        (a.map(|e| e.0), b.map(|e| e.0))
    }
}

/// The scheduler's 4-ary heap, on keys `time << 64 | number`: the reference run's, and a
/// part's for events with global numbers ([`PartHeap`]). As in [`Scheduler`], a popped
/// event stays in the root until the next operation, so that the handler's first new
/// event replaces it with one descent.
pub(super) struct Heap<E> {
    q: QuadHeap<u128, E>,
    /// Whether the root is the event last popped.
    root_popped: bool,
}

pub(super) fn key(t: u64, num: u64) -> u128 {
    (u128::from(t) << 64) | u128::from(num)
}

impl<E: Copy> Heap<E> {
    pub(super) fn new() -> Self {
        Self {
            q: QuadHeap::new(),
            root_popped: false,
        }
    }
    /// Drops the root if it is the event last popped.
    fn settle(&mut self) {
        if self.root_popped {
            self.root_popped = false;
            self.q.remove_root();
        }
    }
    pub(super) fn peek_time(&mut self) -> Option<u64> {
        self.settle();
        self.q.peek().map(|(k, _)| (k >> 64) as u64)
    }
    pub(super) fn push(&mut self, key: u128, ev: E) {
        if self.root_popped {
            // Not earlier than the popped root: events are not created in the past, and a
            // new number is larger than every pending one (a late event of a one-thread
            // run, which has an older number, is checked to be later).
            self.root_popped = false;
            self.q.replace_root(key, ev);
        } else {
            self.q.push(key, ev);
        }
    }
    /// The earliest event, left pending.
    #[inline]
    fn peek(&mut self) -> Option<(u128, E)> {
        self.settle();
        self.q.peek()
    }
    /// Pops the event that [`Heap::peek`] just returned.
    #[inline]
    fn pop_peeked(&mut self) {
        self.root_popped = true;
    }
    /// The earliest event, left in the root until the next operation.
    pub(super) fn pop(&mut self) -> Option<(u128, E)> {
        self.settle();
        let top = self.q.peek()?;
        self.root_popped = true;
        Some(top)
    }
}

/// A part's pending events in two heaps. Those it created itself (and the run's first
/// events) are in one [`Scheduler`], each with its number: at equal times the scheduler
/// orders them as they were scheduled, which is the order of their numbers, so its 64-bit
/// keys suffice (6–7 ns per event less than 128-bit keys in dcsim's network;
/// docs/log/adr-history.md). Events from other parts and late events come with global
/// numbers that fall between the part's own, and wait on a heap of `(time, number)` keys.
/// The earlier of the two heads goes first.
pub(super) struct PartHeap<E> {
    own: Scheduler<(E, u64)>,
    foreign: Heap<E>,
}

impl<E: Copy> PartHeap<E> {
    pub(super) fn new() -> Self {
        Self {
            own: Scheduler::new(),
            foreign: Heap::new(),
        }
    }
    /// Adds an event the part created, numbered `num`: larger than the number of every own
    /// event already added.
    #[inline]
    pub(super) fn push_own(&mut self, at: u64, num: u64, ev: E) {
        self.own.schedule(Time(at), (ev, num));
    }
    /// Adds an event with a global number, created elsewhere or late.
    pub(super) fn push_foreign(&mut self, at: u64, num: u64, ev: E) {
        self.foreign.push(key(at, num), ev);
    }
    pub(super) fn peek_time(&mut self) -> Option<u64> {
        let own = self.own.peek_time().map(|t| t.0);
        let foreign = self.foreign.peek_time();
        match (own, foreign) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
    /// The earliest event, left pending: `(time << 64 | number, event, whether it is the
    /// part's own)`. [`PartHeap::pop_first`] pops it.
    #[inline]
    pub(super) fn first(&mut self) -> Option<(u128, E, bool)> {
        let foreign = self.foreign.peek();
        match self.own.peek() {
            Some((t, (ev, num))) if foreign.is_none_or(|(f, _)| key(t.0, num) < f) => {
                Some((key(t.0, num), ev, true))
            }
            _ => foreign.map(|(k, ev)| (k, ev, false)),
        }
    }
    /// Pops the event with key `k` that [`PartHeap::first`] just returned.
    #[inline]
    pub(super) fn pop_first(&mut self, k: u128, own: bool) {
        if own {
            self.own.pop_peeked(Time((k >> 64) as u64));
        } else {
            self.foreign.pop_peeked();
        }
    }
    /// Gives every own event that `numbers` numbers its global number. The map keeps the
    /// order of the events it renumbers, and its numbers are below every provisional one.
    pub(super) fn renumber(&mut self, numbers: &Numbers) {
        self.own.events_mut(|(_, num)| {
            if *num & PROVISIONAL != 0 && numbers.has(*num & !PROVISIONAL) {
                *num = numbers.table[((*num & !PROVISIONAL) - numbers.base) as usize]
                    .load(Ordering::Relaxed);
            }
        });
    }
}
