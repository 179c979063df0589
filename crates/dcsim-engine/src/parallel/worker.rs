//! The threads of a parallel run: each runs one part's windows ([`Worker`]), numbers the
//! events it created in the window before, takes in what the other parts sent it, then
//! handles the events of the next window, which is the whole look-ahead wide.

use std::sync::RwLockReadGuard;
use std::sync::atomic::AtomicU64;

use super::barrier::AbortOnPanic;
use super::heap::{Ahead, PartHeap};
use super::numbering::{Numberer, PROVISIONAL};
use super::stats::{Clock, ParallelStats};
use super::window::{Numbers, SLOTS, Shared, UNSET, WindowLog, read, write};
use super::{Expected, Late, Out, ParallelError, Part, Slot};
use crate::Time;

/// The fixed facts of a run: window `k` is `[k · width, (k + 1) · width)`.
#[derive(Clone, Copy)]
pub(super) struct Plan {
    pub(super) width: u64,
    pub(super) end: u64,
    pub(super) first_window: u64,
    /// Events created before the run: the first global number of the run.
    pub(super) init: u64,
    /// Whether to record the order of handling.
    pub(super) record: bool,
}

/// What one thread reports at the end.
pub(super) struct Outcome {
    pub(super) error: Option<ParallelError>,
    pub(super) stats: ParallelStats,
    /// If recording: every event the part handled, as `(time, global number)`.
    pub(super) handled: Vec<(u64, u64)>,
}

/// One thread's part and its private state.
pub(super) struct Worker<'a, P: Part> {
    pub(super) p: usize,
    pub(super) n: usize,
    pub(super) part: &'a mut P,
    pub(super) heap: PartHeap<P::Event>,
    /// The window being handled.
    pub(super) log: WindowLog<P::Event, P::Message>,
    /// Events created so far: the next provisional count.
    pub(super) count: u64,
    pub(super) out: Out<P::Event, P::Message>,
    pub(super) late: Late<P::Event>,
    /// Late events from the messages of the window before: the time, the event and
    /// the two slots whose later one numbers it.
    pub(super) deferred: Vec<(u64, P::Event, Slot, Slot)>,
    /// An error found before the window, reported with it.
    pub(super) early_error: Option<ParallelError>,
    /// Scratch: the numbers of the slots late events took in one window.
    pub(super) used: Vec<u64>,
    /// Events expected from other parts' hand-overs, latest creation first.
    pub(super) expected: Vec<Expected<P::Event>>,
}

impl<P: Part> Worker<'_, P> {
    /// Runs the part's windows and numbers the events it creates.
    pub(super) fn run(mut self, shared: &Shared<P::Event, P::Message>, plan: Plan) -> Outcome {
        let guard = AbortOnPanic(&shared.barrier);
        let mut numberer = Numberer {
            p: self.p,
            next_global: plan.init,
            first: Vec::new(),
            before: Vec::new(),
            ties: Vec::new(),
            stats: ParallelStats::default(),
            handled: plan.record.then(Vec::new),
            error: None,
        };
        // Read guards on every part's buffers: `logs` and `numbers` those of the window
        // just ended, taken after the barrier that ends it and kept through its numbering
        // and the taking in of what it sent; `prev` the numbers of the window before it,
        // which its numbering reads at equal times. One taking of each lock per window:
        // every taking moves the lock's line between the cores.
        let mut logs: Vec<RwLockReadGuard<'_, WindowLog<P::Event, P::Message>>> = Vec::new();
        let mut numbers: Vec<RwLockReadGuard<'_, Numbers>> = Vec::new();
        let mut prev: Vec<RwLockReadGuard<'_, Numbers>> =
            shared.numbers.iter().map(|n| read(&n[SLOTS - 1])).collect();
        // One reading of the clock between phases, each the end of one and the start of
        // the next: four per window (the clock is about 1 % of a part's time on windows
        // of a hundred events).
        let mut clock = Clock::new();
        let mut k = plan.first_window;
        let mut i = 0usize;
        let error = loop {
            if i >= 1 {
                // Window `i − 1`: its numbers, its messages, then the events and late
                // events it sent this part, which land in this window at the earliest.
                if self
                    .number(&mut numberer, &mut clock, shared, &logs, &numbers, &prev)
                    .is_none()
                {
                    return Outcome::aborted();
                }
                self.take_messages(&logs, plan.width);
                match self.take_numbered(shared, &logs, &numbers) {
                    Some(late) => numberer.stats.late += late,
                    None => return Outcome::aborted(),
                }
                logs.clear();
                prev.clear();
                prev.append(&mut numbers);
                numberer.stats.renumber_seconds += clock.lap();
            }
            let start = k * plan.width;
            let end = start
                .saturating_add(plan.width)
                .min(plan.end.saturating_add(1));
            self.window(start, end, start.saturating_add(plan.width));
            numberer.stats.handle_seconds += clock.lap();
            // A pending expectation keeps its window from being skipped: its count must be
            // taken there.
            self.log.next = match (self.heap.peek_time(), self.expected.last()) {
                (Some(t), Some(x)) => Some(t.min(x.created_at)),
                (t, x) => t.or(x.map(|x| x.created_at)),
            };
            self.publish(shared, i % SLOTS);
            if !shared.barrier.wait() {
                return Outcome::aborted();
            }
            logs.extend(shared.logs.iter().map(|l| read(&l[i % SLOTS])));
            numbers.extend(shared.numbers.iter().map(|n| read(&n[i % SLOTS])));
            // Every thread reads the same figures, so all take the same decision.
            let (mut busy, mut next, mut error) = (false, None::<u64>, None);
            for l in &logs {
                busy |= !l.log.is_empty();
                for t in l.next.into_iter().chain(l.sent) {
                    next = Some(next.map_or(t, |m| m.min(t)));
                }
                error = error.or(l.error);
            }
            if error.is_some() {
                break error;
            }
            // The heaps hold every event sent before this window, and `sent` those sent
            // in it; only the late events of this window's messages are not counted, so
            // skip ahead only when it handled nothing (and so sent no message).
            let next_k = match next {
                _ if busy => Some(k + 1),
                Some(t) => Some((k + 1).max(t / plan.width)),
                None => None,
            };
            match next_k {
                Some(nk) if nk.saturating_mul(plan.width) <= plan.end => {
                    k = nk;
                    i += 1;
                }
                _ => break None,
            }
            numberer.stats.waiting_seconds += clock.lap();
        };
        // The last window's numbering, for the figures and the order, and its messages:
        // the one-thread run receives every message. The late events they create are
        // after the end (a window on, past it), so they are only checked.
        let mut error = error;
        if error.is_none() {
            clock.lap();
            if self
                .number(&mut numberer, &mut clock, shared, &logs, &numbers, &prev)
                .is_none()
            {
                return Outcome::aborted();
            }
            self.take_messages(&logs, plan.width);
            self.check_deferred(&numbers, plan.end);
            error = self.early_error.take();
        }
        drop(guard);
        Outcome {
            error,
            stats: numberer.stats,
            handled: numberer.handled.unwrap_or_default(),
        }
    }

    /// Numbers the window of `logs` and `numbers` ([`Numberer::number`]), adds the time it
    /// took to the figures, and keeps any error the numbering found for the next window's
    /// log. `None` if the run was aborted.
    fn number(
        &mut self,
        numberer: &mut Numberer,
        clock: &mut Clock,
        shared: &Shared<P::Event, P::Message>,
        logs: &[RwLockReadGuard<'_, WindowLog<P::Event, P::Message>>],
        numbers: &[RwLockReadGuard<'_, Numbers>],
        prev: &[RwLockReadGuard<'_, Numbers>],
    ) -> Option<()> {
        numberer.number(shared, logs, numbers, prev)?;
        numberer.stats.numbering_seconds += clock.lap();
        if let Some(e) = numberer.error.take() {
            self.early_error.get_or_insert(e);
        }
        Some(())
    }

    /// Hands the window's log over and readies the table of its numbers.
    fn publish(&mut self, shared: &Shared<P::Event, P::Message>, slot: usize) {
        let (base, count) = (self.log.base, self.log.count);
        std::mem::swap(&mut *write(&shared.logs[self.p][slot]), &mut self.log);
        let mut numbers = write(&shared.numbers[self.p][slot]);
        numbers.base = base;
        let len = (count - base) as usize;
        numbers.table.truncate(len);
        for g in &mut numbers.table {
            *g.get_mut() = UNSET;
        }
        numbers.table.resize_with(len, || AtomicU64::new(UNSET));
    }

    /// Renumbers the part's events provisionally numbered in the window just numbered
    /// (every part's log and numbers of it in `logs` and `numbers`), takes in the events
    /// the other parts sent it then and creates the late events of that window's messages,
    /// waiting for the numbers other parts are still giving. Returns how many late events
    /// it created (`None` if the run was aborted).
    fn take_numbered(
        &mut self,
        shared: &Shared<P::Event, P::Message>,
        logs: &[RwLockReadGuard<'_, WindowLog<P::Event, P::Message>>],
        numbers: &[RwLockReadGuard<'_, Numbers>],
    ) -> Option<u64> {
        self.heap.renumber(&numbers[self.p]);
        for (q, (log, table)) in logs.iter().zip(numbers).enumerate() {
            if q == self.p {
                continue;
            }
            for &(t, c, ev) in &log.outbox[self.p] {
                let g = table.wait(c, &shared.barrier)?;
                self.heap.push_foreign(t, g, ev);
            }
        }
        let late = self.deferred.len() as u64;
        if late > 0 {
            let reserved = |s: Slot| {
                numbers
                    .get(s.part as usize)
                    .filter(|table| table.has(s.num))
            };
            self.used.clear();
            for (at, ev, a, b) in self.deferred.drain(..) {
                match reserved(a).zip(reserved(b)) {
                    Some((ta, tb)) => {
                        let g = ta
                            .wait(a.num, &shared.barrier)?
                            .max(tb.wait(b.num, &shared.barrier)?);
                        self.heap.push_foreign(at, g, ev);
                        self.used.push(g);
                    }
                    None => {
                        self.early_error
                            .get_or_insert(ParallelError::Slot { part: self.p });
                    }
                }
            }
            // Every slot named in one window's messages is used once at most.
            self.used.sort_unstable();
            if self.used.windows(2).any(|w| w[0] == w[1]) {
                self.early_error
                    .get_or_insert(ParallelError::SlotReused { part: self.p });
            }
        }
        Some(late)
    }

    /// At the end of the run: checks the late events kept for a window that will not come
    /// (their slots, reserved in the last window, whose numbers are `numbers`, and their
    /// times, after `end`) and drops them.
    fn check_deferred(&mut self, numbers: &[RwLockReadGuard<'_, Numbers>], end: u64) {
        let reserved = |s: Slot| numbers.get(s.part as usize).is_some_and(|t| t.has(s.num));
        for (at, _, a, b) in self.deferred.drain(..) {
            debug_assert!(at > end, "a late event before the end was not handled");
            if !(reserved(a) && reserved(b)) {
                self.early_error
                    .get_or_insert(ParallelError::Slot { part: self.p });
            }
        }
    }

    /// Hands the part the messages the other parts sent it in the window of `logs` (the
    /// one just numbered) and keeps the late events it creates for the next window's
    /// start, when the numbers of their slots are known everywhere.
    fn take_messages(
        &mut self,
        logs: &[RwLockReadGuard<'_, WindowLog<P::Event, P::Message>>],
        width: u64,
    ) {
        for (q, log) in logs.iter().enumerate() {
            if q == self.p {
                continue;
            }
            // Sent at the window's start or later, at least the look-ahead before.
            let earliest = log.start.saturating_add(width);
            for msg in &log.msgbox[self.p] {
                self.part.receive(msg, &mut self.late);
                if std::mem::take(&mut self.late.halted) {
                    self.early_error
                        .get_or_insert(ParallelError::Halted { part: self.p });
                }
                for (at, ev, a, b) in self.late.buf.drain(..) {
                    if at.0 < earliest {
                        self.early_error.get_or_insert(ParallelError::Lookahead {
                            from: q,
                            to: self.p,
                            at,
                            earliest: Time(earliest),
                        });
                    }
                    self.deferred.push((at.0, ev, a, b));
                }
            }
        }
    }

    /// Handles the part's events in `[start, end)`; events for other parts must not be
    /// before `earliest_send`.
    fn window(&mut self, start: u64, end: u64, earliest_send: u64) {
        let log = &mut self.log;
        log.log.clear();
        log.brief.clear();
        for o in &mut log.outbox {
            o.clear();
        }
        for m in &mut log.msgbox {
            m.clear();
        }
        log.handed.clear();
        log.placed.clear();
        (log.start, log.end) = (start, end);
        log.base = self.count;
        log.sent = None;
        log.error = self.early_error.take();
        // The creation time of the next expected event (`u64::MAX` if none).
        let mut expected_at = self.next_expected();
        loop {
            let first = self.heap.first();
            let next = first.map(|f| (f.0 >> 64) as u64);
            // An expected event takes its count once the part's handling has passed the
            // time of its creation: after the part's own events created before, and after
            // all of its own events at that very time, whose numbers the creating part may
            // wait for while numbering (so this part must not wait for the creating slot's
            // number before giving them theirs).
            if expected_at < next.map_or(end, |t| t.min(end)) {
                let x = self.expected.pop().expect("expected_at");
                self.log
                    .placed
                    .push((self.count, x.from, x.created_at, x.tag));
                self.heap.push_own(x.at, PROVISIONAL | self.count, x.ev);
                self.count += 1;
                expected_at = self.next_expected();
                continue;
            }
            let Some((k, ev, own)) = first else { break };
            let (t, num) = ((k >> 64) as u64, k as u64);
            if t >= end || self.log.error.is_some() {
                break;
            }
            self.heap.pop_first(k, own);
            let log = &mut self.log;
            log.log.push((t, num, self.count));
            // Windows are shorter than 2³² ps; one that created 2³² events would be a bug.
            debug_assert!(self.count - log.base <= u64::from(u32::MAX));
            log.brief
                .push(((t - start) as u32, (self.count - log.base) as u32));
            self.out.now = Time(t);
            self.out.part = self.p as u32;
            self.out.next = self.count;
            self.part.prefetch(&Ahead { heap: &self.heap });
            self.part.handle(Time(t), ev, &mut self.out);
            self.count = self.out.next;
            for (q, at, c, e) in self.out.buf.drain(..) {
                let q = q as usize;
                if q == self.p && at.0 >= t {
                    self.heap.push_own(at.0, PROVISIONAL | c, e);
                } else if q == self.p {
                    // In the heap, it would come before events already handled.
                    log.error = Some(ParallelError::Past {
                        part: self.p,
                        at,
                        now: Time(t),
                    });
                } else if q >= self.n {
                    log.error = Some(ParallelError::NoSuchPart {
                        to: q,
                        parts: self.n,
                    });
                } else if at.0 < earliest_send {
                    log.error = Some(ParallelError::Lookahead {
                        from: self.p,
                        to: q,
                        at,
                        earliest: Time(earliest_send),
                    });
                } else {
                    log.outbox[q].push((at.0, c, e));
                    log.sent = Some(log.sent.map_or(at.0, |m| m.min(at.0)));
                }
            }
            if self.out.rare {
                self.out.rare = false;
                self.take_rare(t);
                expected_at = self.next_expected();
            }
        }
        let log = &mut self.log;
        log.count = self.count;
        // The sentinel that ends the merge in the numbering: later than every event, with
        // the count of every event the window created.
        log.brief.push((u32::MAX, (self.count - log.base) as u32));
    }

    /// The creation time of the next expected event, `u64::MAX` if none.
    fn next_expected(&self) -> u64 {
        self.expected.last().map_or(u64::MAX, |x| x.created_at)
    }

    /// What a handler at `t` put in `out` besides events: messages, hand-overs and
    /// expected events.
    #[inline(never)]
    fn take_rare(&mut self, t: u64) {
        let log = &mut self.log;
        for (q, m) in self.out.msgs.drain(..) {
            let q = q as usize;
            if q == self.p {
                log.error = Some(ParallelError::MessageToItself { part: q });
            } else if q >= self.n {
                log.error = Some(ParallelError::NoSuchPart {
                    to: q,
                    parts: self.n,
                });
            } else {
                log.msgbox[q].push(m);
            }
        }
        for (q, tag, c) in self.out.handed.drain(..) {
            if q as usize >= self.n {
                log.error = Some(ParallelError::NoSuchPart {
                    to: q as usize,
                    parts: self.n,
                });
            }
            log.handed.push((q, tag, t, c));
        }
        for x in self.out.expected.drain(..) {
            if x.created_at <= t
                || x.at <= x.created_at
                || x.from as usize == self.p
                || x.from as usize >= self.n
            {
                log.error = Some(ParallelError::HandOver {
                    part: self.p,
                    created_at: Time(x.created_at),
                });
                continue;
            }
            // Latest creation first; equal times keep the order of declaration.
            let i = self
                .expected
                .partition_point(|y| y.created_at > x.created_at);
            self.expected.insert(i, x);
        }
    }
}

impl Outcome {
    fn aborted() -> Self {
        Self {
            error: None,
            stats: ParallelStats::default(),
            handled: Vec::new(),
        }
    }
}
