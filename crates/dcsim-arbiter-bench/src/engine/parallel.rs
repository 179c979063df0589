//! Parallel with reconciliation: all threads allocate the same batch at once.
//!
//! Thread `i` owns the backlog and transmit bitmaps of source group `G_i` (so two threads never
//! claim the same source). Destinations are shared. Each batch runs `rounds` rounds of:
//! 1. *allocate*: each thread allocates its backlog tentatively against its private snapshot
//!    of the shared receive bitmaps, and publishes the slots it claimed per destination;
//! 2. barrier; *reconcile*: in a priority order that rotates with the batch, a thread keeps a
//!    claimed slot only if no higher-priority thread claimed the same destination slot. The
//!    cancelled slots go back to the backlog and to the transmit bitmap; the kept ones are
//!    committed (a slot survives only if no higher-priority thread claimed it at all, even a
//!    claim that was itself cancelled, so surviving claims never conflict);
//! 3. barrier; every thread removes all committed slots from its snapshot.
//!
//! Later rounds fill the holes left by cancellations. The shared state is two arrays of atomic
//! words per thread (claims and commits, one word per destination and bitmap word), written by
//! their owner and read by the others between barriers. The thesis found that this design stops
//! scaling past a few cores; the barriers and the all-to-all reading of claim arrays are why.

use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use dcsim_arbiter::Grant;
use dcsim_arbiter::internals::{Backlog, SlotBitmaps};

use super::sync::SpinBarrier;
use super::{Collector, EngineConfig};
use crate::trace::Feed;

pub(super) fn run(cfg: &EngineConfig, k: usize, words: usize, feed: &Feed) -> Vec<Collector> {
    let n = cfg.allocator.nodes as usize;
    let shared = Shared {
        claims: (0..k)
            .map(|_| (0..n * words).map(|_| AtomicU64::new(0)).collect())
            .collect(),
        commits: (0..k)
            .map(|_| (0..n * words).map(|_| AtomicU64::new(0)).collect())
            .collect(),
        barrier: SpinBarrier::new(k),
    };
    let start = Barrier::new(k + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..k)
            .map(|i| {
                let (shared, start) = (&shared, &start);
                s.spawn(move || {
                    let g = &feed.groups[i];
                    let (lo, gn) = (g.start, g.len() as u32);
                    let mut w = Worker {
                        i,
                        k,
                        words,
                        // One thread has nothing to reconcile: a second round would only re-scan.
                        rounds: if k == 1 { 1 } else { cfg.parallel_rounds },
                        feed,
                        shared,
                        backlog: Backlog::new(lo, gn, 0, n as u32, cfg.allocator.isa()),
                        tx: SlotBitmaps::new(lo, gn, words, None),
                        rx: SlotBitmaps::new(0, n as u32, words, None),
                        tentative: Vec::new(),
                        claimed: Vec::new(),
                        committed: Vec::new(),
                        col: Collector::new(cfg.collect, feed.batches),
                    };
                    start.wait();
                    w.run();
                    (w.col, Instant::now())
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        handles
            .into_iter()
            .map(|h| {
                let (mut col, end) = h.join().expect("parallel worker panicked");
                col.wall = end.saturating_duration_since(t0);
                col
            })
            .collect()
    })
}

struct Shared {
    /// `claims[t][d * words + w]`: slots of word `w` thread `t` tentatively claimed at `d`.
    claims: Vec<Vec<AtomicU64>>,
    /// `commits[t][..]`: the claims of thread `t` that survived reconciliation.
    commits: Vec<Vec<AtomicU64>>,
    barrier: SpinBarrier,
}

struct Worker<'a> {
    i: usize,
    k: usize,
    words: usize,
    rounds: u32,
    feed: &'a Feed,
    shared: &'a Shared,
    backlog: Backlog,
    tx: SlotBitmaps,
    /// Private snapshot of every destination's receive bitmap.
    rx: SlotBitmaps,
    tentative: Vec<(u32, Grant)>,
    /// Indices of this thread's non-zero claim and commit words, to clear them cheaply.
    claimed: Vec<usize>,
    committed: Vec<usize>,
    col: Collector,
}

impl Worker<'_> {
    fn run(&mut self) {
        let part = &self.feed.parts[self.i];
        for b in 0..self.feed.batches {
            for e in part.window(b) {
                self.backlog
                    .submit(e.src, e.dst, e.slots)
                    .expect("trace demands per pair stay below 2^32 slots");
            }
            self.tx.reset();
            self.rx.reset();
            self.backlog.begin(b);
            // Rank 0 wins every conflict; ranks rotate with the batch.
            let k = self.k;
            let rank = move |t: usize| (t + b as usize) % k;
            for _ in 0..self.rounds {
                self.round(b, &rank);
            }
            self.backlog.settle(b);
        }
    }

    fn round(&mut self, b: u64, rank: &impl Fn(usize) -> usize) {
        let (words, me) = (self.words, self.i);
        let sh = self.shared;
        // 1. Tentative allocation against the snapshot; publish claims.
        self.tentative.clear();
        macro_rules! go {
            ($w:literal) => {
                self.backlog.tentative::<$w, true>(
                    b,
                    &mut self.tx,
                    &mut self.rx,
                    &mut self.tentative,
                )
            };
        }
        match words {
            1 => go!(1),
            2 => go!(2),
            4 => go!(4),
            8 => go!(8),
            w => unreachable!("validated word count {w}"),
        };
        for &(_, g) in &self.tentative {
            let at = usize::from(g.dst) * words + usize::from(g.word);
            let cell = &sh.claims[me][at];
            // Only this thread writes its claim array.
            let old = cell.load(Ordering::Relaxed);
            if old == 0 {
                self.claimed.push(at);
            }
            cell.store(old | g.mask, Ordering::Relaxed);
        }
        sh.barrier.wait();
        // Everyone has finished merging the previous round's commits: clear ours.
        for at in self.committed.drain(..) {
            sh.commits[me][at].store(0, Ordering::Relaxed);
        }
        // 2. Reconcile against higher-priority claims.
        let my_rank = rank(me);
        let first = self.tx.lo();
        for &(idx, g) in &self.tentative {
            let at = usize::from(g.dst) * words + usize::from(g.word);
            let mut conflict = 0u64;
            for t in (0..self.k).filter(|&t| rank(t) < my_rank) {
                conflict |= sh.claims[t][at].load(Ordering::Relaxed);
            }
            let keep = g.mask & !conflict;
            let cancel = g.mask & conflict;
            if cancel != 0 {
                let s = (u32::from(g.src) - first) as usize;
                self.tx.give_back_dyn(s, usize::from(g.word), cancel);
                self.rx
                    .give_back_dyn(usize::from(g.dst), usize::from(g.word), cancel);
                self.backlog.refund(b, idx, cancel.count_ones());
            }
            if keep != 0 {
                let cell = &sh.commits[me][at];
                let old = cell.load(Ordering::Relaxed);
                if old == 0 {
                    self.committed.push(at);
                }
                cell.store(old | keep, Ordering::Relaxed);
                self.col
                    .record_one(b, Grant { mask: keep, ..g }, keep.count_ones());
            }
        }
        sh.barrier.wait();
        for at in self.claimed.drain(..) {
            sh.claims[me][at].store(0, Ordering::Relaxed);
        }
        // 3. Remove every other thread's committed slots from the snapshot (ours are already
        // out: taken tentatively, cancelled ones given back above).
        for t in (0..self.k).filter(|&t| t != me) {
            for (at, cell) in sh.commits[t].iter().enumerate() {
                let c = cell.load(Ordering::Relaxed);
                if c != 0 {
                    self.rx.take_dyn(at / words, at % words, c);
                }
            }
        }
    }
}
