//! Random shuffle: the thesis's three-stage design with a permuting distributor.
//!
//! There are `L` lanes. Each lane has three stages:
//! * a **backlog** stage that owns the backlog of one source group and sends its entries, in
//!   least-recently-allocated order, as a stream of small bins of requests;
//! * an **alloc** stage that owns every node's bitmaps for one batch and only checks and
//!   updates bitmaps, writing into each request the slots it got;
//! * a **post-alloc** stage that emits the granted slots as allocations and returns each bin to
//!   the backlog stage it came from, which applies the outcome to its entries.
//!
//! Time is cut into epochs of `L` batches. In epoch `e` the alloc stage of lane `a` owns batch
//! `e x L + a`, and the epoch has `L` rounds: in round `r` the backlog stage of lane `l` sends
//! to alloc stage `(pi_e(l) + r) mod L`, where `pi_e` is a fresh random permutation per epoch
//! (the *distributor*; the return path is its inverse). So each round pairs backlog and alloc
//! stages by a permutation, and over an epoch every source group meets every batch exactly
//! once, in a random order: no source group is always the last to reach a batch.
//!
//! Hand-offs are bins of [`BIN_REQS`] requests, 64 bytes with their header, through crossbeam
//! channels (one channel per stage pair, so each has one producer and one consumer). With
//! `3 x L` threads every stage has its own thread (the thesis's "triples"); with any other
//! thread count, `L = threads` and each thread runs its lane's three stages in turn.
//!
//! Limits: 64-slot batches and unit links only (the alloc stage's request format holds one
//! bitmap word).

use std::sync::Barrier;
use std::time::Instant;

use crossbeam::channel::{Receiver, Sender, unbounded};
use dcsim_arbiter::Grant;
use dcsim_arbiter::internals::{Backlog, SlotBitmaps, lowest_bits};

use super::sync::recv_spin;
use super::{Collector, EngineConfig};
use crate::trace::{Feed, FeedPart};
use dcsim_engine::splitmix;

/// Requests per bin: 3 x 16 bytes plus the header fill one 64-byte cache line.
pub(crate) const BIN_REQS: usize = 3;

/// Lanes for a thread count: `threads / 3` triples when divisible by three, else one fused
/// lane per thread.
pub(super) fn lanes(threads: usize) -> usize {
    if threads.is_multiple_of(3) {
        threads / 3
    } else {
        threads
    }
}

/// One request: sent with `n` = slots wanted, returned with `n` = slots got and their `mask`.
#[derive(Clone, Copy, Debug, Default)]
struct Req {
    src: u16,
    dst: u16,
    n: u32,
    mask: u64,
}

/// The unit of hand-off between stages.
#[derive(Clone, Copy, Debug, Default)]
struct Bin {
    reqs: [Req; BIN_REQS],
    len: u8,
    /// Last bin of the sender's round.
    last: bool,
}

/// Channels of one run: `to_alloc[l][a]`, `to_post[a]`, `to_backlog[a][l]`.
struct Wires {
    to_alloc: Vec<Vec<(Sender<Bin>, Receiver<Bin>)>>,
    to_post: Vec<(Sender<Bin>, Receiver<Bin>)>,
    to_backlog: Vec<Vec<(Sender<Bin>, Receiver<Bin>)>>,
}

pub(super) fn run(
    cfg: &EngineConfig,
    threads: usize,
    _words: usize,
    feed: &Feed,
) -> Vec<Collector> {
    let l = lanes(threads);
    let split = l * 3 == threads;
    let wires = Wires {
        to_alloc: (0..l)
            .map(|_| (0..l).map(|_| unbounded()).collect())
            .collect(),
        to_post: (0..l).map(|_| unbounded()).collect(),
        to_backlog: (0..l)
            .map(|_| (0..l).map(|_| unbounded()).collect())
            .collect(),
    };
    let sched = Schedule::new(cfg.seed, l, feed.batches);
    let start = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        let mut handles = Vec::new();
        for lane in 0..l {
            let (wires, sched, start) = (&wires, &sched, &start);
            if split {
                handles.push(s.spawn(move || {
                    let mut b = BacklogStage::new(cfg, lane, feed);
                    start.wait();
                    for (e, r) in sched.rounds() {
                        b.send(sched, e, r, wires);
                        b.apply(sched, e, r, wires);
                    }
                    (Collector::new(cfg.collect, feed.batches), Instant::now())
                }));
                handles.push(s.spawn(move || {
                    let mut a = AllocStage::new(cfg, lane, feed);
                    start.wait();
                    for (e, r) in sched.rounds() {
                        a.round(sched, e, r, wires, None);
                    }
                    (Collector::new(cfg.collect, feed.batches), Instant::now())
                }));
                handles.push(s.spawn(move || {
                    let mut col = Collector::new(cfg.collect, feed.batches);
                    start.wait();
                    for (e, r) in sched.rounds() {
                        post_round(sched, e, r, lane, wires, &mut col);
                    }
                    (col, Instant::now())
                }));
            } else {
                handles.push(s.spawn(move || {
                    let mut b = BacklogStage::new(cfg, lane, feed);
                    let mut a = AllocStage::new(cfg, lane, feed);
                    let mut col = Collector::new(cfg.collect, feed.batches);
                    start.wait();
                    for (e, r) in sched.rounds() {
                        b.send(sched, e, r, wires);
                        a.round(sched, e, r, wires, Some(&mut col));
                        b.apply(sched, e, r, wires);
                    }
                    (col, Instant::now())
                }));
            }
        }
        start.wait();
        let t0 = Instant::now();
        handles
            .into_iter()
            .map(|h| {
                let (mut col, end) = h.join().expect("shuffle stage panicked");
                col.wall = end.saturating_duration_since(t0);
                col
            })
            .collect()
    })
}

/// Epochs, rounds and the distributor's permutations.
struct Schedule {
    lanes: usize,
    batches: u64,
    /// `perm[e][l]`: the permutation of epoch `e`.
    perm: Vec<Vec<usize>>,
}

impl Schedule {
    fn new(seed: u64, lanes: usize, batches: u64) -> Self {
        let epochs = batches.div_ceil(lanes as u64);
        let perm = (0..epochs)
            .map(|e| {
                let mut p: Vec<usize> = (0..lanes).collect();
                let mut state = splitmix(seed ^ splitmix(e ^ 0x5348_5546));
                for i in (1..lanes).rev() {
                    state = splitmix(state);
                    p.swap(i, (state % (i as u64 + 1)) as usize);
                }
                p
            })
            .collect();
        Self {
            lanes,
            batches,
            perm,
        }
    }

    /// Every `(epoch, round)` in order.
    fn rounds(&self) -> impl Iterator<Item = (u64, usize)> + '_ {
        (0..self.perm.len() as u64).flat_map(move |e| (0..self.lanes).map(move |r| (e, r)))
    }

    /// Alloc lane that backlog lane `l` feeds in round `r` of epoch `e`.
    fn target(&self, e: u64, r: usize, l: usize) -> usize {
        (self.perm[e as usize][l] + r) % self.lanes
    }

    /// Backlog lane that feeds alloc lane `a` in round `r` of epoch `e`.
    fn source(&self, e: u64, r: usize, a: usize) -> usize {
        let want = (a + self.lanes - r % self.lanes) % self.lanes;
        self.perm[e as usize]
            .iter()
            .position(|&p| p == want)
            .expect("a permutation")
    }

    /// Batch allocated by alloc lane `a` in epoch `e`.
    fn batch(&self, e: u64, a: usize) -> u64 {
        e * self.lanes as u64 + a as u64
    }
}

struct BacklogStage<'a> {
    lane: usize,
    part: &'a FeedPart,
    backlog: Backlog,
    /// Next feed window to ingest.
    next_window: u64,
    batches: u64,
}

impl<'a> BacklogStage<'a> {
    fn new(cfg: &EngineConfig, lane: usize, feed: &'a Feed) -> Self {
        let g = &feed.groups[lane];
        Self {
            lane,
            part: &feed.parts[lane],
            backlog: Backlog::new(
                g.start,
                g.len() as u32,
                0,
                cfg.allocator.nodes,
                cfg.allocator.isa(),
            ),
            next_window: 0,
            batches: feed.batches,
        }
    }

    /// Round id for LRA purposes: rounds play the role of batches in the backlog.
    fn round_id(sched: &Schedule, e: u64, r: usize) -> u64 {
        e * sched.lanes as u64 + r as u64
    }

    fn send(&mut self, sched: &Schedule, e: u64, r: usize, wires: &Wires) {
        if r == 0 {
            // Demands usable by every batch of the epoch: first batch >= their window.
            let upto = (e * sched.lanes as u64).min(self.batches - 1);
            while self.next_window <= upto {
                for d in self.part.window(self.next_window) {
                    self.backlog
                        .submit(d.src, d.dst, d.slots)
                        .expect("trace demands per pair stay below 2^32 slots");
                }
                self.next_window += 1;
            }
        }
        let id = Self::round_id(sched, e, r);
        self.backlog.begin(id);
        let out = &wires.to_alloc[self.lane][sched.target(e, r, self.lane)].0;
        let mut bin = Bin::default();
        self.backlog.for_each_in_order(id, |en| {
            bin.reqs[usize::from(bin.len)] = Req {
                src: en.src,
                dst: en.dst,
                n: en.remaining,
                mask: 0,
            };
            bin.len += 1;
            if usize::from(bin.len) == BIN_REQS {
                out.send(bin).expect("alloc stage alive");
                bin = Bin::default();
            }
        });
        bin.last = true;
        out.send(bin).expect("alloc stage alive");
    }

    fn apply(&mut self, sched: &Schedule, e: u64, r: usize, wires: &Wires) {
        let id = Self::round_id(sched, e, r);
        let input = &wires.to_backlog[sched.target(e, r, self.lane)][self.lane].1;
        let mut bin = Bin::default();
        let mut at = 0usize;
        self.backlog.apply(id, |en| {
            while at == usize::from(bin.len) {
                bin = recv_spin(input, "post-alloc stage");
                at = 0;
            }
            let req = bin.reqs[at];
            at += 1;
            debug_assert!(
                req.src == en.src && req.dst == en.dst,
                "bins returned out of order"
            );
            req.n
        });
        // Consume up to the round's last bin (it may hold no requests).
        while !bin.last {
            bin = recv_spin(input, "post-alloc stage");
            debug_assert_eq!(bin.len, 0);
        }
    }
}

struct AllocStage {
    lane: usize,
    tx: SlotBitmaps,
    rx: SlotBitmaps,
}

impl AllocStage {
    fn new(cfg: &EngineConfig, lane: usize, _feed: &Feed) -> Self {
        let n = cfg.allocator.nodes;
        Self {
            lane,
            tx: SlotBitmaps::new(0, n, 1, None),
            rx: SlotBitmaps::new(0, n, 1, None),
        }
    }

    /// Allocates one round's bins. With `fused`, also does the post-alloc stage's work and
    /// returns bins directly to their backlog stage.
    fn round(
        &mut self,
        sched: &Schedule,
        e: u64,
        r: usize,
        wires: &Wires,
        fused: Option<&mut Collector>,
    ) {
        if r == 0 {
            self.tx.reset();
            self.rx.reset();
        }
        let batch = sched.batch(e, self.lane);
        let open = batch < sched.batches;
        let from = sched.source(e, r, self.lane);
        let input = &wires.to_alloc[from][self.lane].1;
        let mut fused = fused;
        loop {
            let mut bin = recv_spin(input, "backlog stage");
            for req in &mut bin.reqs[..usize::from(bin.len)] {
                let (s, d) = (usize::from(req.src), usize::from(req.dst));
                let common = if open {
                    self.tx.free::<1, true>(s, 0) & self.rx.free::<1, true>(d, 0)
                } else {
                    0
                };
                let (take, n) = lowest_bits(common, req.n);
                self.tx.take::<1, true>(s, 0, take);
                self.rx.take::<1, true>(d, 0, take);
                req.mask = take;
                req.n = n;
            }
            let last = bin.last;
            match fused.as_deref_mut() {
                Some(col) => {
                    emit(&bin, batch, col);
                    wires.to_backlog[self.lane][from]
                        .0
                        .send(bin)
                        .expect("backlog stage alive");
                }
                None => wires.to_post[self.lane]
                    .0
                    .send(bin)
                    .expect("post stage alive"),
            }
            if last {
                break;
            }
        }
    }
}

/// The post-alloc stage of lane `a` for one round.
fn post_round(sched: &Schedule, e: u64, r: usize, a: usize, wires: &Wires, col: &mut Collector) {
    let batch = sched.batch(e, a);
    let back = &wires.to_backlog[a][sched.source(e, r, a)].0;
    loop {
        let bin = recv_spin(&wires.to_post[a].1, "alloc stage");
        emit(&bin, batch, col);
        let last = bin.last;
        back.send(bin).expect("backlog stage alive");
        if last {
            break;
        }
    }
}

fn emit(bin: &Bin, batch: u64, col: &mut Collector) {
    for req in &bin.reqs[..usize::from(bin.len)] {
        if req.mask != 0 {
            col.record_one(
                batch,
                Grant {
                    src: req.src,
                    dst: req.dst,
                    word: 0,
                    mask: req.mask,
                },
                req.n,
            );
        }
    }
}
