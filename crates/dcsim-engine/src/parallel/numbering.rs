//! Provisional and global event numbers: the mark of a provisional number, and the
//! numbering that gives every event a part created in a window its global number, from the
//! part's own log, the merge of its log with each other part's, and, at equal times, the
//! other parts' numbers.

use std::sync::RwLockReadGuard;
use std::sync::atomic::Ordering;

use super::ParallelError;
use super::stats::ParallelStats;
use super::window::{Numbers, Shared, WindowLog};
use crate::Time;

/// The bit that marks a provisional number (global numbers stay below it).
pub(super) const PROVISIONAL: u64 = 1 << 63;

/// For each of `mine` (this part's handled events, as `(time, _)` in order), the count
/// that `theirs` (another part's, ending with a sentinel later than every event) gives at
/// its first event not earlier: into `before`. Equal times go to `tie(h, j)` instead.
#[inline(never)]
fn merge_counts(
    mine: &[(u32, u32)],
    theirs: &[(u32, u32)],
    before: &mut [u32],
    mut tie: impl FnMut(usize, usize),
) {
    // Two merges at once, of the first and the second half of `mine`: each step of one
    // waits for its loads, and the other's step fills the wait.
    let mid = mine.len() / 2;
    let (mut a, mut ja) = (0usize, 0usize);
    let (mut b, mut jb) = match mine.get(mid) {
        Some(&(o, _)) => (mid, theirs.partition_point(|e| e.0 < o)),
        None => (mid, 0),
    };
    let end = mine.len();
    loop {
        let more_a = a < mid;
        let more_b = b < end;
        if !(more_a && more_b) {
            break;
        }
        let (oa, ob) = (mine[a].0, mine[b].0);
        let ((ta, ca), (tb, cb)) = (theirs[ja], theirs[jb]);
        if ta == oa || tb == ob {
            // Equal times: one step of each, the slow way.
            step(mine, theirs, before, &mut tie, &mut a, &mut ja);
            step(mine, theirs, before, &mut tie, &mut b, &mut jb);
            continue;
        }
        let (pa, pb) = (ta < oa, tb < ob);
        before[a] = ca;
        before[b] = cb;
        ja += usize::from(pa);
        a += usize::from(!pa);
        jb += usize::from(pb);
        b += usize::from(!pb);
    }
    while a < mid {
        step(mine, theirs, before, &mut tie, &mut a, &mut ja);
    }
    while b < end {
        step(mine, theirs, before, &mut tie, &mut b, &mut jb);
    }
}

/// One step of a merge in [`merge_counts`]: passes an event of `theirs`, or settles
/// `mine[h]` (to `tie` at an equal time).
#[inline(always)]
fn step(
    mine: &[(u32, u32)],
    theirs: &[(u32, u32)],
    before: &mut [u32],
    tie: &mut impl FnMut(usize, usize),
    h: &mut usize,
    j: &mut usize,
) {
    let o = mine[*h].0;
    let (tq, cq) = theirs[*j];
    if tq == o {
        // Passing steps may have written here: the tie adds its count later.
        before[*h] = 0;
        tie(*h, *j);
        *h += 1;
        return;
    }
    let passed = tq < o;
    before[*h] = cq;
    *j += usize::from(passed);
    *h += usize::from(!passed);
}

/// A part's numbering: the global numbers of the events it created, window by window.
pub(super) struct Numberer {
    pub(super) p: usize,
    /// The first global number of the next window to number.
    pub(super) next_global: u64,
    /// Scratch, per event this part handled in the window: its first created event's
    /// global number, and one other part's count of events created before it.
    pub(super) first: Vec<u64>,
    pub(super) before: Vec<u32>,
    /// Scratch: this part's handled events at the time of one of another part's, as
    /// `(event, other part, that part's first event at the time)`.
    pub(super) ties: Vec<(usize, usize, usize)>,
    pub(super) stats: ParallelStats,
    /// If recording: every event this part handled, as `(time, global number)`.
    pub(super) handled: Option<Vec<(u64, u64)>>,
    /// An error found while numbering (the numbering still gives every number, so that no
    /// other part waits for one in vain).
    pub(super) error: Option<ParallelError>,
}

/// Gives the counts a part took for expected events their creating slots' numbers, in
/// the order of the numbering, and checks that every number it writes exceeds the one
/// before (else the count's place among the part's own was wrong).
struct Placer<'a> {
    placed: std::iter::Peekable<std::slice::Iter<'a, (u64, u32, u64, u64)>>,
    floor: Option<u64>,
    part: usize,
}

impl Placer<'_> {
    /// The number of count `c`: `normal`, unless it was taken for an expected event. The
    /// creating slot is found in the creating part's log and waited for if that part is
    /// still numbering it (its handler comes first in the global order: no deadlock).
    /// `None` if the run was aborted.
    #[inline(never)]
    fn number<E, M>(
        &mut self,
        c: u64,
        normal: u64,
        logs: &[RwLockReadGuard<'_, WindowLog<E, M>>],
        now: &[RwLockReadGuard<'_, Numbers>],
        shared: &Shared<E, M>,
        error: &mut Option<ParallelError>,
    ) -> Option<u64> {
        let mut g = normal;
        if let Some(&(_, from, created_at, tag)) = self.placed.next_if(|x| x.0 == c) {
            let from = from as usize;
            let slot = logs[from]
                .handed
                .iter()
                .find(|h| h.0 as usize == self.part && h.1 == tag && h.2 == created_at)
                .map(|h| h.3)
                .filter(|&cs| now[from].has(cs));
            match slot {
                Some(cs) => g = now[from].wait(cs, &shared.barrier)?,
                None => {
                    error.get_or_insert(ParallelError::HandOver {
                        part: self.part,
                        created_at: Time(created_at),
                    });
                }
            }
            if self.floor.is_some_and(|f| g <= f) {
                error.get_or_insert(ParallelError::HandOverOrder {
                    part: self.part,
                    created_at: Time(created_at),
                });
            }
        }
        self.floor = Some(self.floor.map_or(g, |f| f.max(g)));
        Some(g)
    }
}

impl Numberer {
    /// Gives every event this part created in the window of `logs` and `now` (every part's
    /// log and numbers of it; `prev`, their numbers of the window before) its global
    /// number: the window's first number, plus the events created by the handlers that
    /// come before its own in the global order, this part's and the others'. Reads the
    /// other parts' logs, and their numbers only at equal times. `None` if the run was
    /// aborted.
    pub(super) fn number<E: Copy, M>(
        &mut self,
        shared: &Shared<E, M>,
        logs: &[RwLockReadGuard<'_, WindowLog<E, M>>],
        now: &[RwLockReadGuard<'_, Numbers>],
        prev: &[RwLockReadGuard<'_, Numbers>],
    ) -> Option<()> {
        // The global number of an event numbered `num` by part `q` (for `q` itself, always
        // known; for another part, waited for if that part is still numbering it).
        let global = |q: usize, num: u64| -> Option<u64> {
            if num & PROVISIONAL == 0 {
                return Some(num);
            }
            let c = num & !PROVISIONAL;
            if now[q].has(c) {
                now[q].wait(c, &shared.barrier)
            } else {
                Some(prev[q].table[(c - prev[q].base) as usize].load(Ordering::Relaxed))
            }
        };
        let (p, g0) = (self.p, self.next_global);
        let own = &logs[p];
        let n_own = own.log.len();
        self.first.clear();
        self.first
            .extend(own.log.iter().map(|e| g0 + (e.2 - own.base)));
        self.ties.clear();
        for (q, other) in logs.iter().enumerate() {
            if q == p {
                continue;
            }
            // A merge of the two parts' handled events by time, without data-dependent
            // branches but the one for equal times (0.04 % of events in `parbench`; it
            // mispredicts where they are common): each step passes
            // one event of part `q` that comes first, or settles one of this part's at the
            // first of `q`'s not earlier. The brief logs end with a sentinel later than
            // every event. Equal times are left for later: deciding them may wait for the
            // other part's numbers.
            self.before.clear();
            self.before.resize(n_own, 0);
            merge_counts(
                &own.brief[..n_own],
                &other.brief,
                &mut self.before,
                |h, j| {
                    self.ties.push((h, q, j));
                },
            );
            for (f, &b) in self.first.iter_mut().zip(&self.before) {
                *f += u64::from(b);
            }
        }
        if self.ties.len() > 1 {
            self.ties.sort_unstable();
        }
        // In the order of the events handled: each event's numbers are given before an
        // equal time of a later one waits for another part's, as the ADR's argument
        // against deadlock needs.
        let table = &now[p].table;
        // Counts taken for expected events get their creating slot's number: found in the
        // creating part's log, and waited for if that part is still numbering it (its
        // handler comes first in the global order: no deadlock). Every number written
        // must exceed the one before, or the count's place among this part's own was
        // wrong.
        let mut placer = Placer {
            placed: own.placed.iter().peekable(),
            floor: None,
            part: p,
        };
        // Expected events placed before the window's first handler.
        let first_cum = own.log.first().map_or(own.count, |e| e.2);
        for c in own.base..first_cum {
            let g = placer.number(c, g0 + (c - own.base), logs, now, shared, &mut self.error)?;
            table[(c - own.base) as usize].store(g, Ordering::Release);
        }
        let no_placed = own.placed.is_empty();
        let mut ties = self.ties.iter().peekable();
        for (h, (&(_, num, cum), first)) in own.log.iter().zip(&mut self.first).enumerate() {
            while let Some(&(_, q, j)) = ties.next_if(|t| t.0 == h) {
                // Equal times: the global numbers of the handled events decide.
                let g = global(p, num)?;
                let (other, o) = (&logs[q], own.brief[h].0);
                let mut k = j;
                while other.brief[k].0 == o && global(q, other.log[k].1)? < g {
                    k += 1;
                }
                *first += u64::from(other.brief[k].1);
            }
            let end = own.log.get(h + 1).map_or(own.count, |e| e.2);
            let (a, b) = ((cum - own.base) as usize, (end - own.base) as usize);
            if no_placed {
                if b == a + 1 {
                    table[a].store(*first, Ordering::Release);
                } else {
                    for (i, entry) in table[a..b].iter().enumerate() {
                        entry.store(*first + i as u64, Ordering::Release);
                    }
                }
            } else {
                for (i, entry) in table[a..b].iter().enumerate() {
                    let g = placer.number(
                        cum + i as u64,
                        *first + i as u64,
                        logs,
                        now,
                        shared,
                        &mut self.error,
                    )?;
                    entry.store(g, Ordering::Release);
                }
            }
        }
        if let Some(handled) = &mut self.handled {
            for &(t, num, _) in &own.log {
                handled.push((t, global(p, num)?));
            }
        }
        self.next_global += logs.iter().map(|l| l.count - l.base).sum::<u64>();
        if p == 0 {
            for log in logs {
                self.stats.events += log.log.len() as u64;
                self.stats.crossings += log.outbox.iter().map(|o| o.len() as u64).sum::<u64>();
                self.stats.messages += log.msgbox.iter().map(|m| m.len() as u64).sum::<u64>();
            }
        }
        self.stats.windows += 1;
        Some(())
    }
}
