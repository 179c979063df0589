//! Exact-order parallel runs: a model split into parts, one thread each, that handles
//! every event in the order one [`Scheduler`] would (ADR 0009).
//!
//! One scheduler orders events by time, then by the order in which they were created: a
//! global counter that threads running separate parts of a model do not share. This
//! module keeps that order anyway, so that a parallel run's outputs can be byte-identical
//! to the one-thread run's:
//!
//! - **Windows.** Every event a part sends to another part is at least `lookahead` after
//!   the event that creates it (in a network, the shortest link delay between parts). The
//!   run advances in windows of the look-ahead; inside one, no part can affect another, so
//!   each part handles its own events on its own thread. An event sent in a window lands
//!   in the next one at the earliest.
//! - **Provisional numbers.** A part numbers the events it creates with its own counter,
//!   marked provisional, above every global number. That orders its own events exactly:
//!   an event numbered globally precedes, at equal times, every provisional one (it was
//!   created earlier), and two events this part created were created in its own order of
//!   handling, which is the global order restricted to this part.
//! - **Numbering.** An event's global number is the count of events created before it:
//!   by the handlers that come before its own in the one-thread order, `(time, global
//!   number of the event handled)`, and by its own handler before it. Before handling
//!   window `i`, each part numbers the events it created in window `i − 1`: its own
//!   handlers give the first count, and each other part's log of the window (8 bytes per
//!   event handled) the count of its handlers that come first. Times decide; global
//!   numbers are compared only at equal times, and the other part's number may then
//!   still be in the making on its thread, so the numbering waits for it. That cannot
//!   deadlock: each part numbers in its own order of handling, and a number waited for
//!   belongs to a handler earlier in the global order. The counts at unequal times come
//!   first, from a merge of the two logs without data-dependent branches (two halves of
//!   the part's log at once, which hides the latency of each step's loads); equal times
//!   are settled afterwards, in the order of handling, as the numbers are given.
//! - **Renumbering.** Then, still before window `i`, each part replaces the provisional
//!   numbers of window `i − 1` by global ones (the replacement keeps their order and they
//!   stay below every provisional number) and takes in the events the other parts sent
//!   it in window `i − 1`, with their global numbers, waiting for any that the sending
//!   part is still numbering (it numbers without waiting for the receiver: no deadlock).
//!   A part's own events wait in a
//!   [`Scheduler`] (64-bit keys; at equal times it keeps the order of scheduling, which is
//!   the order of their numbers) and carry their numbers; the events from other parts,
//!   whose numbers fall between the part's own, wait on a heap of `(time, number)` keys,
//!   and the earlier of the two comes first.
//! - **Messages and reserved slots.** Beside events, a handler may send another part a
//!   message ([`Out::send`]; in a network, a copy of a packet put on a link between
//!   them), which that part takes in before the next window, and it may reserve
//!   a place in the order of creation ([`Out::reserve`]) for an event created later in
//!   its name ([`Slot`], [`Late`]). That is how the receiving end of a link creates the
//!   next packet's arrival exactly where one thread would have, when it hears of the
//!   packet a window late (ADR 0010). A late event goes into the heap at the
//!   renumbering before the next window, when its slots' numbers are known.
//! - **Hand-overs.** An event for another part sooner than the look-ahead is possible when
//!   that part knows of it in advance ([`Out::expect`]; in a network, a flow generator's
//!   next flow, which every part replays): the creating handler hands it over
//!   ([`Out::hand_over`]), the receiving part takes a count for it as soon as its handling
//!   passes the creation's time, and the numbering gives that count the creating slot's
//!   number. If the receiving part handled an event at that very time which comes after
//!   the creating handler, the event's place among its own cannot be known in time, and
//!   the run stops with [`ParallelError::HandOverOrder`] rather than guess.
//!
//! `cargo run --release -p dcsim-engine --example parbench` measures what is left of two
//! threads after the logs, the numbering and the barrier. [`run_sequential`] is the
//! reference: the same parts on one thread, ordered as one [`Scheduler`] orders them.
//! dcsim's network runs on this split by pods (`dcsim::split`, `dcsim run --threads N`;
//! ADR 0009 says what a split gains, ADR 0010 how the network is split and what it costs).
//! Everything that one core writes and another reads moves cache lines between them, and
//! on some machines, for a while, each move costs several times more:
//! [`line_round_trip`] measures it.

mod barrier;
mod heap;
mod numbering;
mod probe;
mod stats;
mod window;
mod worker;

use std::sync::RwLock;

pub use crate::order::Slot;
use crate::{Dur, Time};
#[cfg(doc)]
use crate::{Scheduler, Upcoming};
use barrier::SpinBarrier;
pub use heap::Ahead;
use heap::{Heap, PartHeap, key};
pub use probe::line_round_trip;
pub use stats::ParallelStats;
use window::{Numbers, SLOTS, Shared, WindowLog};
use worker::{Outcome, Plan, Worker};

/// One part of a model split for a parallel run.
pub trait Part: Send {
    /// The model's events (of every part).
    type Event: Copy + Send + Sync;
    /// What one part tells another beside events (in a network, a copy of a packet put on
    /// a link between them): sent with [`Out::send`], taken in by [`Part::receive`].
    type Message: Send + Sync;
    /// Handles `ev` at time `now`; every event it creates goes through `out`.
    fn handle(&mut self, now: Time, ev: Self::Event, out: &mut Out<Self::Event, Self::Message>);
    /// Takes in `msg`, sent to this part by a handler of another part. A one-thread run
    /// calls it right after that handler; a parallel run at the start of the next window
    /// (windows are `lookahead` wide, from time zero), before this part handles any
    /// event of that window, and at the end of the run for the last window's messages.
    /// Messages from one part come in the order they were sent; messages from different
    /// parts come, in a parallel run, part by part. So the part's state after `receive`
    /// must not depend on whether its own handlers of the sender's window ran before it,
    /// nor on the order of different senders' messages (a link's receiving end has one
    /// sender, and its handlers read the copies only when they are due). Events it creates
    /// go through `late`, each in a slot reserved in the window in which `msg` was sent
    /// ([`Out::reserve`]), and at least the look-ahead after the sending handler.
    fn receive(&mut self, msg: &Self::Message, late: &mut Late<Self::Event>) {
        let _ = (msg, late);
    }
    /// Called in a parallel run right before each event is handled, with the part's events
    /// most likely handled after it ([`Upcoming`]), so that it can start loading their data
    /// (as a one-thread run loop does from its [`Scheduler`]). The default does nothing.
    #[inline]
    fn prefetch(&self, upcoming: &Ahead<'_, Self::Event>) {
        let _ = upcoming;
    }
}

/// Where a handler puts the events it creates, each addressed to a part, in the order it
/// creates them, the slots it reserves among them, and the messages it sends.
#[derive(Debug)]
pub struct Out<E, M = ()> {
    now: Time,
    /// The handler's part.
    part: u32,
    /// The number of the next creation or reservation.
    next: u64,
    buf: Vec<(u32, Time, u64, E)>,
    msgs: Vec<(u32, M)>,
    /// Slots handed over: the receiving part, the tag, the count.
    handed: Vec<(u32, u64, u64)>,
    /// Events expected from other parts' hand-overs.
    expected: Vec<Expected<E>>,
    /// Whether `msgs`, `handed` or `expected` holds anything (one test per event instead
    /// of three).
    rare: bool,
}

/// An event that a handler of part `from` at time `created_at` will hand over (with
/// `tag`) to the part that expects it, which handles it at `at`.
#[derive(Clone, Copy, Debug)]
struct Expected<E> {
    from: u32,
    created_at: u64,
    tag: u64,
    at: u64,
    ev: E,
}

impl<E, M> Out<E, M> {
    fn new() -> Self {
        Self {
            now: Time::ZERO,
            part: 0,
            next: 0,
            buf: Vec::new(),
            msgs: Vec::new(),
            handed: Vec::new(),
            expected: Vec::new(),
            rare: false,
        }
    }

    /// The time of the event being handled.
    pub fn now(&self) -> Time {
        self.now
    }

    /// Creates `ev` for part `part` at time `at` (not before [`Out::now`]; for another part
    /// than the handler's, at least the run's look-ahead after it).
    #[inline]
    pub fn schedule(&mut self, part: usize, at: Time, ev: E) {
        // An event in the past is the run's error (`ParallelError::Past`), not a panic.
        self.buf.push((part_index(part), at, self.next, ev));
        self.next += 1;
    }

    /// Reserves the next place in the order of creation for an event created later in
    /// this handler's name ([`Slot`]).
    #[inline]
    pub fn reserve(&mut self) -> Slot {
        let slot = Slot {
            part: self.part,
            num: self.next,
        };
        self.next += 1;
        slot
    }

    /// Creates, in the order of creation, an event that part `part` expects
    /// ([`Out::expect`], with the same `tag` and this handler's time) and handles: an event
    /// for another part sooner than the look-ahead allows, which that part knows of in
    /// advance (a flow generator's next flow, replayed in every part).
    #[inline]
    pub fn hand_over(&mut self, part: usize, tag: u64) {
        self.handed.push((part_index(part), tag, self.next));
        self.next += 1;
        self.rare = true;
    }

    /// Declares that a handler of part `from` at `created_at` (later than now) will hand
    /// over ([`Out::hand_over`], with `tag`) the event `ev` at `at` (later than
    /// `created_at`) for this part. A parallel run puts it in this part's heap as soon as
    /// its handling passes `created_at`, in the place that creation gives it, and fails
    /// with [`ParallelError::HandOverOrder`] if that place cannot be told in time: when this
    /// part's own handler at `created_at` that comes after the creating handler created
    /// anything (an event, a reservation, a hand-over), or when expectations with the same
    /// `created_at` were declared in another order than their hand-overs. An expectation
    /// that is not handed over by the named part at `created_at` is
    /// [`ParallelError::HandOver`].
    pub fn expect(&mut self, from: usize, created_at: Time, tag: u64, at: Time, ev: E) {
        self.expected.push(Expected {
            from: part_index(from),
            created_at: created_at.0,
            tag,
            at: at.0,
            ev,
        });
        self.rare = true;
    }

    /// Sends `msg` to another part. Every event it leads to must be at least the run's
    /// look-ahead after [`Out::now`].
    #[inline]
    pub fn send(&mut self, part: usize, msg: M) {
        self.msgs.push((part_index(part), msg));
        self.rare = true;
    }
}

/// A part's index as the buffers keep it: one beyond 2³² − 1 becomes `u32::MAX`, which
/// no run has (it has at most 2³² − 1 parts), so it is reported as a part that does not
/// exist rather than wrapping onto one that does.
fn part_index(part: usize) -> u32 {
    u32::try_from(part).unwrap_or(u32::MAX)
}

/// Where [`Part::receive`] puts the events it creates: each for the receiving part,
/// numbered as a reserved [`Slot`].
#[derive(Debug)]
pub struct Late<E> {
    buf: Vec<(Time, E, Slot, Slot)>,
    /// Whether the receiving part asked to stop the run ([`Late::halt`]).
    halted: bool,
}

impl<E> Late<E> {
    fn new() -> Self {
        Self {
            buf: Vec::new(),
            halted: false,
        }
    }

    /// Stops the run: the model found, in a message, that it cannot go on exactly (it
    /// keeps the reason itself). A parallel run stops after the window in which the
    /// message is received, with [`ParallelError::Halted`]; the reference run stops
    /// before the next event and returns normally.
    pub fn halt(&mut self) {
        self.halted = true;
    }

    /// Creates `ev` at `at` in `slot`, reserved by a handler (this part's or the sender's)
    /// of the window in which the message being received was sent. A slot takes one
    /// event at most.
    pub fn schedule_as(&mut self, at: Time, ev: E, slot: Slot) {
        self.buf.push((at, ev, slot, slot));
    }

    /// Creates `ev` at `at` in whichever of `a` and `b` comes later in the order of
    /// creation (both reserved in the window of the message being received).
    pub fn schedule_as_later_of(&mut self, at: Time, ev: E, a: Slot, b: Slot) {
        self.buf.push((at, ev, a, b));
    }
}

/// Runs `parts` on one thread, the reference order: `init` events first (numbered in the
/// order given), then every event with a time up to `end`, by time and then by number,
/// each numbered in the order of creation as one [`Scheduler`] does (reserved slots count
/// as creations). Messages are received right after the handler that sends them.
/// `order`, if given, receives the part of each event handled, in order. Returns the
/// number of events handled; a part that halts the run ([`Late::halt`]) stops it after the
/// handler that sent the message.
///
/// # Panics
/// If an event or a message names a part that does not exist, an event is created before
/// its handler's time, a message is sent to its own part, a late event comes before the
/// event being handled, names a slot not yet reserved or one already taken, a hand-over
/// names a part that does not exist, or an expected event is impossible, declared twice
/// or, due by `end`, never handed over (the reference has no error to return;
/// [`run_parallel`] returns [`ParallelError`]).
pub fn run_sequential<P: Part>(
    parts: &mut [P],
    init: &[(usize, Time, P::Event)],
    end: Time,
    mut order: Option<&mut Vec<u32>>,
) -> u64 {
    let n = parts.len();
    let mut heap: Heap<(u32, P::Event)> = Heap::new();
    for (i, &(p, t, ev)) in init.iter().enumerate() {
        assert!(
            p < n,
            "an event was sent to part {p}, but the run has {n} parts"
        );
        heap.push(key(t.0, i as u64), (p as u32, ev));
    }
    let mut out = Out::new();
    out.next = init.len() as u64;
    let mut late = Late::new();
    // The slots late events took: one each.
    let mut used = std::collections::HashSet::new();
    // Events expected from hand-overs, by `(creating part, time, tag, receiving part)`.
    let mut expected = std::collections::HashMap::new();
    let mut events = 0;
    let mut halted = false;
    while let Some(t) = heap.peek_time()
        && t <= end.0
    {
        let (k, (p, ev)) = heap.pop().expect("peeked");
        out.now = Time(t);
        out.part = p;
        parts[p as usize].handle(Time(t), ev, &mut out);
        for (q, at, c, e) in out.buf.drain(..) {
            assert!(
                (q as usize) < n,
                "an event was sent to part {q}, but the run has {n} parts"
            );
            assert!(at.0 >= t, "part {p} created an event in the past");
            heap.push(key(at.0, c), (q, e));
        }
        for x in out.expected.drain(..) {
            assert!(
                x.created_at > t && x.at > x.created_at && (x.from as usize) < n && x.from != p,
                "part {p} expects a hand-over it cannot have"
            );
            let twice = expected.insert((x.from, x.created_at, x.tag, p), (x.at, x.ev));
            assert!(twice.is_none(), "part {p} expects one hand-over twice");
        }
        for (q, tag, c) in out.handed.drain(..) {
            assert!(
                (q as usize) < n,
                "part {p} handed an event over to part {q} (of {n})"
            );
            if let Some((at, e)) = expected.remove(&(p, t, tag, q)) {
                heap.push(key(at, c), (q, e));
            }
        }
        for (q, msg) in out.msgs.drain(..) {
            assert!(
                (q as usize) < n && q != p,
                "part {p} sent a message to part {q} (of {n})"
            );
            parts[q as usize].receive(&msg, &mut late);
            halted |= std::mem::take(&mut late.halted);
            for (at, e, a, b) in late.buf.drain(..) {
                let g = a.num.max(b.num);
                assert!(g < out.next, "a late event names a slot not yet reserved");
                assert!(used.insert(g), "two late events were created in one slot");
                let k_late = key(at.0, g);
                assert!(
                    k_late > k,
                    "a late event comes before the event being handled"
                );
                heap.push(k_late, (q, e));
            }
        }
        if let Some(o) = order.as_deref_mut() {
            o.push(p);
        }
        events += 1;
        if halted {
            return events;
        }
    }
    assert!(
        expected
            .keys()
            .all(|&(_, created_at, _, _)| created_at > end.0),
        "an expected event was never handed over"
    );
    events
}

/// A parallel run's failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParallelError {
    /// A handler sent an event to another part sooner than the look-ahead allows.
    #[error(
        "part {from} sent part {to} an event at {at:?}, before {earliest:?}: the look-ahead \
         is larger than the model's smallest delay between parts"
    )]
    Lookahead {
        /// The sending part.
        from: usize,
        /// The receiving part.
        to: usize,
        /// The event's time.
        at: Time,
        /// The earliest time its window allowed.
        earliest: Time,
    },
    /// A handler created an event before its own time.
    #[error("part {part} created an event at {at:?}, before the time of its handler, {now:?}")]
    Past {
        /// The handler's part.
        part: usize,
        /// The event's time.
        at: Time,
        /// The handler's time.
        now: Time,
    },
    /// A part stopped the run on a message it received ([`Late::halt`]); the model knows
    /// why.
    #[error("part {part} stopped the run")]
    Halted {
        /// The part.
        part: usize,
    },
    /// A handler sent a message to its own part.
    #[error("part {part} sent a message to itself")]
    MessageToItself {
        /// The part.
        part: usize,
    },
    /// A late event named a slot that was not reserved in the window of the message.
    #[error(
        "part {part} created a late event in a slot not reserved in the window of the \
         message it received"
    )]
    Slot {
        /// The receiving part.
        part: usize,
    },
    /// Two late events were created in one slot.
    #[error("part {part} created two late events in one slot")]
    SlotReused {
        /// The receiving part.
        part: usize,
    },
    /// An expected event ([`Out::expect`]) was not handed over by the handler named, or the
    /// expectation was impossible (in the past, from the part itself or from no part, or
    /// handled before it is created).
    #[error("part {part} expected an event handed over at {created_at:?} that never came")]
    HandOver {
        /// The expecting part.
        part: usize,
        /// When it was to be created.
        created_at: Time,
    },
    /// A part handled an event at the very time of a hand-over it expected, and that event
    /// came after the creating handler: the run cannot tell where the handed-over event
    /// goes among this part's own (run it on one thread).
    #[error(
        "part {part} handled an event at {created_at:?} after the handler that handed it an \
         event then: this run cannot order them on more than one thread"
    )]
    HandOverOrder {
        /// The expecting part.
        part: usize,
        /// The time of the hand-over.
        created_at: Time,
    },
    /// A handler addressed a part that does not exist.
    #[error("an event was sent to part {to}, but the run has {parts} parts")]
    NoSuchPart {
        /// The part named.
        to: usize,
        /// How many there are.
        parts: usize,
    },
}

/// Runs `parts` in parallel, one thread each, handling every event in the order of
/// [`run_sequential`] with the same arguments. `lookahead` (at least 2 ps) must not exceed
/// the shortest time between an event and an event it creates for another part. `order`,
/// if given, receives the part of each event handled, in that order.
///
/// The run goes in windows of the look-ahead. Before handling one, each part numbers the
/// events it created in the one before, then takes in the events the other parts sent it
/// there, which land in this window at the earliest, with their global numbers.
///
/// # Errors
/// If a handler creates an event before its own time, sends an event to another part
/// sooner than `lookahead` allows, or to a part that does not exist; if it sends a
/// message to its own part or to a part that does not exist; if [`Part::receive`] creates
/// a late event sooner than the look-ahead after the message's window starts, in a slot
/// not reserved in that window, or in a slot already taken; if an expected event
/// ([`Out::expect`]) is impossible or not handed over, or its place among the part's own
/// events cannot be known in time ([`ParallelError::HandOverOrder`]: rerun on one
/// thread).
///
/// # Panics
/// If `lookahead` is below 2 ps or there are more than 2³² parts; a panic in a handler is
/// re-raised.
pub fn run_parallel<P: Part>(
    parts: &mut [P],
    init: &[(usize, Time, P::Event)],
    end: Time,
    lookahead: Dur,
    order: Option<&mut Vec<u32>>,
) -> Result<ParallelStats, ParallelError> {
    assert!(
        lookahead.0 >= 2,
        "a parallel run needs a look-ahead of 2 ps or more"
    );
    let n = parts.len();
    assert!(u32::try_from(n).is_ok(), "too many parts");
    if let Some(&(p, _, _)) = init.iter().find(|e| e.0 >= n) {
        return Err(ParallelError::NoSuchPart { to: p, parts: n });
    }
    // The look-ahead, or less: offsets in a window must fit 32 bits.
    let width = lookahead.0.min(u64::from(u32::MAX));
    let Some(first) = init.iter().map(|e| e.1.0).min() else {
        return Ok(ParallelStats::default());
    };
    let shared = Shared {
        logs: (0..n)
            .map(|_| [(); SLOTS].map(|()| RwLock::new(WindowLog::new(n))))
            .collect(),
        numbers: (0..n)
            .map(|_| {
                [(); SLOTS].map(|()| {
                    RwLock::new(Numbers {
                        base: 0,
                        table: Vec::new(),
                    })
                })
            })
            .collect(),
        barrier: SpinBarrier::new(n),
    };
    let plan = Plan {
        width,
        end: end.0,
        first_window: first / width,
        init: init.len() as u64,
        record: order.is_some(),
    };
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = parts
            .iter_mut()
            .enumerate()
            .map(|(p, part)| {
                let shared = &shared;
                // Everything a part writes as it runs is allocated by its own thread: the
                // allocator keeps each thread's blocks apart, so no cache line holds data
                // that two threads write (built by the calling thread, the heaps of two
                // parts could lie side by side).
                s.spawn(move || {
                    let mut heap = PartHeap::new();
                    for (i, &(q, t, ev)) in init.iter().enumerate() {
                        if q == p {
                            heap.push_own(t.0, i as u64, ev);
                        }
                    }
                    let worker = Worker {
                        p,
                        n,
                        part,
                        heap,
                        log: WindowLog::new(n),
                        count: 0,
                        out: Out::new(),
                        late: Late::new(),
                        deferred: Vec::new(),
                        early_error: None,
                        used: Vec::new(),
                        expected: Vec::new(),
                    };
                    worker.run(shared, plan)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let mut stats = ParallelStats::default();
    for o in &outcomes {
        if let Some(e) = o.error {
            return Err(e);
        }
        stats.events += o.stats.events;
        stats.crossings += o.stats.crossings;
        stats.messages += o.stats.messages;
        stats.late += o.stats.late;
        stats.numbering_seconds += o.stats.numbering_seconds;
        stats.handle_seconds += o.stats.handle_seconds;
        stats.busiest_handle_seconds = stats.busiest_handle_seconds.max(o.stats.handle_seconds);
        stats.renumber_seconds += o.stats.renumber_seconds;
        stats.waiting_seconds += o.stats.waiting_seconds;
        stats.windows = stats.windows.max(o.stats.windows);
    }
    if let Some(order) = order {
        let mut all: Vec<(u64, u64, u32)> = outcomes
            .iter()
            .enumerate()
            .flat_map(|(p, o)| o.handled.iter().map(move |&(t, g)| (t, g, p as u32)))
            .collect();
        all.sort_unstable();
        order.extend(all.iter().map(|e| e.2));
    }
    Ok(stats)
}

#[cfg(test)]
mod tests;
