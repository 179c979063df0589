//! What the parts hand each other at the end of a window: each part's log of the window
//! ([`WindowLog`]) and the table of the global numbers it gives the window's events
//! ([`Numbers`]), kept for three windows ([`SLOTS`]) in what the parts share
//! ([`Shared`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::ParallelError;
use super::barrier::SpinBarrier;

/// What a part hands over at the end of a window: what the numbering needs, what the other
/// parts need afterwards, and what the choice of the next window needs.
pub(super) struct WindowLog<E, M> {
    /// Per event handled: its time, its number (global or provisional) and the part's
    /// count of events created before it was handled.
    pub(super) log: Vec<(u64, u64, u64)>,
    /// The same, for the other parts' numbering, in 8 bytes: the time from the window's
    /// start and the count from `base` (the number is read from `log` at equal times
    /// only). The other parts read it from this part's cache, so it is kept small.
    pub(super) brief: Vec<(u32, u32)>,
    /// Events for other parts, by receiving part: the time, the provisional count, the
    /// event.
    pub(super) outbox: Vec<Vec<(u64, u64, E)>>,
    /// Messages for other parts, by receiving part.
    pub(super) msgbox: Vec<Vec<M>>,
    /// Slots handed over: the receiving part, the tag, the handler's time, the count.
    pub(super) handed: Vec<(u32, u64, u64, u64)>,
    /// Counts taken for expected events, in order, with what names their creation:
    /// `(count, creating part, its time, tag)`.
    pub(super) placed: Vec<(u64, u32, u64, u64)>,
    /// The window: `[start, end)`.
    pub(super) start: u64,
    pub(super) end: u64,
    /// The part's count of events created, at the window's start and end.
    pub(super) base: u64,
    pub(super) count: u64,
    /// The part's earliest pending event after the window, and its earliest event sent.
    pub(super) next: Option<u64>,
    pub(super) sent: Option<u64>,
    /// A look-ahead violation seen by the part.
    pub(super) error: Option<ParallelError>,
}

impl<E, M> WindowLog<E, M> {
    pub(super) fn new(parts: usize) -> Self {
        Self {
            log: Vec::new(),
            brief: Vec::new(),
            outbox: (0..parts).map(|_| Vec::new()).collect(),
            msgbox: (0..parts).map(|_| Vec::new()).collect(),
            handed: Vec::new(),
            placed: Vec::new(),
            start: 0,
            end: 0,
            base: 0,
            count: 0,
            next: None,
            sent: None,
            error: None,
        }
    }
}

/// The global numbers of the events a part created in one window: the event numbered
/// provisionally `base + i` is `table[i]`, written by the part's thread as it numbers
/// them ([`UNSET`] until then).
pub(super) struct Numbers {
    pub(super) base: u64,
    pub(super) table: Vec<AtomicU64>,
}

/// A table entry not yet written.
pub(super) const UNSET: u64 = u64::MAX;

impl Numbers {
    /// Whether this window created the event numbered provisionally `c`.
    pub(super) fn has(&self, c: u64) -> bool {
        c.checked_sub(self.base)
            .is_some_and(|i| i < self.table.len() as u64)
    }
    /// The global number of provisional count `c`, which this window created; waits for
    /// the part's thread to number it, if need be (`None` if the run was aborted).
    pub(super) fn wait(&self, c: u64, barrier: &SpinBarrier) -> Option<u64> {
        let slot = &self.table[(c - self.base) as usize];
        barrier.spin_until(|| {
            let g = slot.load(Ordering::Acquire);
            (g != UNSET).then_some(g)
        })
    }
}

/// Buffers kept for three windows: window `i`'s are at index `i % 3`, written at its end,
/// numbered and read by the receiving parts before window `i + 1` (and its numbers read
/// again there, at equal times, by the numbering of window `i + 1`). Two would not do: a
/// thread may still be reading windows `i` and `i − 1` before window `i + 1` when a faster
/// one writes window `i + 1`'s at its end; window `i + 2`'s are written only after the
/// barrier that ends window `i + 1`.
pub(super) const SLOTS: usize = 3;

/// What the parts share.
pub(super) struct Shared<E, M> {
    pub(super) logs: Vec<[RwLock<WindowLog<E, M>>; SLOTS]>,
    pub(super) numbers: Vec<[RwLock<Numbers>; SLOTS]>,
    pub(super) barrier: SpinBarrier,
}

// A poisoned lock means a thread panicked; the scope re-raises that panic.
pub(super) fn read<T>(m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(PoisonError::into_inner)
}

pub(super) fn write<T>(m: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    m.write().unwrap_or_else(PoisonError::into_inner)
}
