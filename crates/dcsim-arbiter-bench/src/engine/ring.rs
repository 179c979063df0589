//! Ring: our architecture. Threads own sources; destination bitmaps travel around a ring.
//!
//! Nodes are split into `k` groups `G_0..G_{k-1}`. Thread `i` owns
//! * the demand backlog of every pair whose source is in `G_i`, kept as `k` blocks by
//!   destination group (`G_i x G_j`), and
//! * the transmit bitmaps of `G_i`.
//!
//! A batch is allocated in `k` phases. In phase `p` of batch `b`, thread `i` allocates block
//! `G_i x G_j` with `j = (i + b + p) mod k`, against its own transmit bitmaps and the *receive*
//! bitmaps of `G_j`, which it holds exclusively for the phase: they form a token that thread
//! `i + 1` used in phase `p - 1` and that thread `i - 1` needs in phase `p + 1`. So in every
//! phase the `k` threads work on `k` disjoint blocks with disjoint bitmaps: no locks, no
//! conflicts, nothing to reconcile, and the result does not depend on timing (the engine is
//! deterministic for a given thread count). Demands never move; the only traffic between cores
//! is one token of `|G_j| x words` bitmap words per phase, passed to one neighbour.
//!
//! Fairness: within a block, pairs keep their least-recently-allocated order. Across blocks,
//! the phase in which a source group meets a destination group rotates with the batch, so every
//! source group gets the first pick of every destination group once every `k` batches.
//!
//! Scaling: per batch each thread does `1/k` of the allocation work plus `k` hand-offs; the
//! phases are separated only by neighbour-to-neighbour waits, not by a global barrier.

use std::sync::Barrier;
use std::time::Instant;

use crossbeam::channel::{Receiver, Sender, bounded};
use dcsim_arbiter::internals::{Backlog, SlotBitmaps, allocate_dyn};

use super::sync::recv_spin;
use super::{Collector, EngineConfig};
use crate::trace::{Feed, FeedPart};

/// Receive bitmaps of one destination group, passed from thread to thread.
struct Token {
    group: usize,
    rx: SlotBitmaps,
}

pub(super) fn run(cfg: &EngineConfig, k: usize, words: usize, feed: &Feed) -> Vec<Collector> {
    let groups = &feed.groups;
    let mut group_of = vec![0u8; cfg.allocator.nodes as usize];
    for (g, r) in groups.iter().enumerate() {
        for n in r.clone() {
            // k <= 256, checked by Engine::new.
            group_of[n as usize] = g as u8;
        }
    }
    // Thread i receives tokens from thread i + 1 and sends to thread i - 1.
    let (senders, receivers): (Vec<Sender<Token>>, Vec<Receiver<Token>>) =
        (0..k).map(|_| bounded(2)).unzip();
    let start = Barrier::new(k + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..k)
            .map(|i| {
                let to_prev = senders[(i + k - 1) % k].clone();
                let from_next = receivers[i].clone();
                let (group_of, start) = (&group_of, &start);
                let part = &feed.parts[i];
                s.spawn(move || {
                    let mut worker = Worker::new(cfg, i, k, words, feed, group_of, part);
                    start.wait();
                    worker.run(&to_prev, &from_next);
                    (worker.col, Instant::now())
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        handles
            .into_iter()
            .map(|h| {
                let (mut col, end) = h.join().expect("ring worker panicked");
                col.wall = end.saturating_duration_since(t0);
                col
            })
            .collect()
    })
}

struct Worker<'a> {
    cfg: &'a EngineConfig,
    i: usize,
    k: usize,
    feed: &'a Feed,
    group_of: &'a [u8],
    part: &'a FeedPart,
    blocks: Vec<Backlog>,
    tx: SlotBitmaps,
    token: Option<Token>,
    grants: Vec<dcsim_arbiter::Grant>,
    col: Collector,
}

impl<'a> Worker<'a> {
    fn new(
        cfg: &'a EngineConfig,
        i: usize,
        k: usize,
        words: usize,
        feed: &'a Feed,
        group_of: &'a [u8],
        part: &'a FeedPart,
    ) -> Self {
        let g = &feed.groups;
        let (lo, n) = (g[i].start, g[i].len() as u32);
        let blocks = g
            .iter()
            .map(|d| Backlog::new(lo, n, d.start, d.len() as u32, cfg.allocator.isa()))
            .collect();
        let tx = SlotBitmaps::new(lo, n, words, cfg.allocator.caps(lo, n));
        let (dlo, dn) = (g[i].start, g[i].len() as u32);
        let token = Token {
            group: i,
            rx: SlotBitmaps::new(dlo, dn, words, cfg.allocator.caps(dlo, dn)),
        };
        Self {
            cfg,
            i,
            k,
            feed,
            group_of,
            part,
            blocks,
            tx,
            token: Some(token),
            grants: Vec::new(),
            col: Collector::new(cfg.collect, feed.batches),
        }
    }

    fn run(&mut self, to_prev: &Sender<Token>, from_next: &Receiver<Token>) {
        let (quantum, rounds) = self.cfg.allocator.fairness.params();
        let k = self.k;
        for b in 0..self.feed.batches {
            for e in self.part.window(b) {
                let j = usize::from(self.group_of[usize::from(e.dst)]);
                self.blocks[j]
                    .submit(e.src, e.dst, e.slots)
                    .expect("trace demands per pair stay below 2^32 slots");
            }
            self.tx.reset();
            for p in 0..k {
                let j = (self.i + b as usize + p) % k;
                let mut token = if p == 0 {
                    // The token kept from the last phase of the previous batch becomes this
                    // batch's fresh bitmaps for group j.
                    let mut t = self
                        .token
                        .take()
                        .expect("a worker holds one token between batches");
                    let r = &self.feed.groups[j];
                    t.rx.reinit(
                        r.start,
                        r.len() as u32,
                        self.cfg.allocator.caps(r.start, r.len() as u32),
                    );
                    t.group = j;
                    t
                } else {
                    recv_spin(from_next, "ring neighbour")
                };
                debug_assert_eq!(token.group, j, "token arrived out of order");
                let block = &mut self.blocks[j];
                block.begin(b);
                let got = allocate_dyn(
                    block,
                    b,
                    &mut self.tx,
                    &mut token.rx,
                    quantum,
                    rounds,
                    &mut self.grants,
                );
                self.col.record(b, &self.grants, got);
                self.grants.clear();
                if p + 1 < k {
                    to_prev.send(token).expect("ring neighbour alive");
                } else {
                    self.token = Some(token);
                }
            }
        }
    }
}
