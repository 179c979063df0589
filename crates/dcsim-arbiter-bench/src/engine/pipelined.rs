//! Pipelined: the original Fastpass arbiter's multi-core design.
//!
//! Thread `t` owns every `k`-th batch (`b = t, t + k, ...`), with its own full transmit and
//! receive bitmaps. The backlog is not stored anywhere: it flows around the ring of threads as
//! a stream of entries. The thread allocating batch `b`
//! 1. takes the demands that arrived for batch `b` and allocates them first (they have never
//!    been allocated, so they lead in least-recently-allocated order),
//! 2. then allocates the stream coming from the thread of batch `b - 1`, chunk by chunk, and
//!    forwards the entries that got nothing right away, so that batch `b + 1` can start on
//!    them while `b` is still working (the pipelining),
//! 3. and at the end of the stream forwards the entries that got slots but want more (the most
//!    recently allocated go last), then an end marker.
//!
//! Batch processing mode (the thesis's fix for remainders piling up in one core) is always on:
//! a demand takes every slot of the batch it can use at once.
//!
//! Merging demands of one pair needs shared state here, because the pair's entry may be in
//! any thread's hands: a table of one `AtomicU32` per pair holds an "entry exists" bit and the
//! demand that arrived since; the holder absorbs it (compare-and-swap) when its entry runs out.
//! That race makes the schedule depend on timing (it is valid either way), and the absorbing
//! thread may be allocating a batch up to `k - 1` before the one the demand was fed for; see
//! [`Engine::early_use`](super::Engine::early_use).
//!
//! Known weaknesses, as measured in the thesis: the thread that owns the earliest batch sees
//! the whole backlog and its successors only what it leaves (the "pipeline inequality"), every
//! entry crosses a core boundary once per batch, and a demand waits `k` batches of lookahead.

use std::sync::Barrier;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use crossbeam::channel::{Receiver, Sender, unbounded};
use dcsim_arbiter::Grant;
use dcsim_arbiter::internals::{Entry, SlotBitmaps, serve, sweep_filtered};

use super::sync::recv_spin;
use super::{Collector, EngineConfig};
use crate::trace::Feed;

/// Entries per message between threads.
const CHUNK: usize = 256;
/// Pair-table bit: an entry for the pair exists somewhere in the pipeline.
const ACTIVE: u32 = 1 << 31;

enum Msg {
    Chunk(Vec<Entry>),
    End,
}

pub(super) fn run(cfg: &EngineConfig, k: usize, words: usize, feed: &Feed) -> Vec<Collector> {
    let n = cfg.allocator.nodes as usize;
    let table: Vec<AtomicU32> = (0..n * n).map(|_| AtomicU32::new(0)).collect();
    // Thread t receives from thread t - 1 (the owner of the previous batch).
    let (senders, receivers): (Vec<Sender<Msg>>, Vec<Receiver<Msg>>) =
        (0..k).map(|_| unbounded()).unzip();
    let start = Barrier::new(k + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..k)
            .map(|t| {
                let to_next = senders[(t + 1) % k].clone();
                let from_prev = receivers[t].clone();
                let (table, start) = (&table, &start);
                s.spawn(move || {
                    let mut w = Worker {
                        cfg,
                        t,
                        k,
                        feed,
                        table,
                        tx: SlotBitmaps::new(0, n as u32, words, cfg.allocator.caps(0, n as u32)),
                        rx: SlotBitmaps::new(0, n as u32, words, cfg.allocator.caps(0, n as u32)),
                        grants: Vec::new(),
                        granted: 0,
                        col: Collector::new(cfg.collect, feed.batches),
                    };
                    start.wait();
                    w.run(&to_next, &from_prev);
                    (w.col, Instant::now())
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        handles
            .into_iter()
            .map(|h| {
                let (mut col, end) = h.join().expect("pipeline worker panicked");
                col.wall = end.saturating_duration_since(t0);
                col
            })
            .collect()
    })
}

struct Worker<'a> {
    cfg: &'a EngineConfig,
    t: usize,
    k: usize,
    feed: &'a Feed,
    table: &'a [AtomicU32],
    tx: SlotBitmaps,
    rx: SlotBitmaps,
    grants: Vec<Grant>,
    /// Slots granted in the current batch.
    granted: u64,
    col: Collector,
}

impl Worker<'_> {
    fn run(&mut self, to_next: &Sender<Msg>, from_prev: &Receiver<Msg>) {
        let part = &self.feed.parts[0];
        let n = self.cfg.allocator.nodes as usize;
        for b in (self.t as u64..self.feed.batches).step_by(self.k) {
            self.tx.reset();
            self.rx.reset();
            let mut tail = Vec::new();
            // 1. New demands, in arrival order.
            let mut fresh = Vec::with_capacity(CHUNK);
            for e in part.window(b) {
                let key = usize::from(e.src) * n + usize::from(e.dst);
                if let Some(slots) = arrive(&self.table[key], e.slots) {
                    fresh.push(Entry {
                        src: e.src,
                        dst: e.dst,
                        remaining: slots,
                    });
                    if fresh.len() == CHUNK {
                        self.process(&mut fresh, &mut tail);
                        to_next
                            .send(Msg::Chunk(std::mem::replace(
                                &mut fresh,
                                Vec::with_capacity(CHUNK),
                            )))
                            .expect("pipeline alive");
                    }
                }
            }
            self.process(&mut fresh, &mut tail);
            if !fresh.is_empty() {
                to_next.send(Msg::Chunk(fresh)).expect("pipeline alive");
            }
            // 2. The stream from the previous batch's thread (none before batch 0).
            if b > 0 {
                while let Msg::Chunk(mut v) = recv_spin(from_prev, "pipeline neighbour") {
                    self.process(&mut v, &mut tail);
                    if !v.is_empty() {
                        to_next.send(Msg::Chunk(v)).expect("pipeline alive");
                    }
                }
            }
            // 3. Entries allocated in this batch go last, then the end marker.
            for c in tail.chunks(CHUNK) {
                to_next
                    .send(Msg::Chunk(c.to_vec()))
                    .expect("pipeline alive");
            }
            to_next.send(Msg::End).expect("pipeline alive");
            self.col.record(b, &self.grants, self.granted);
            self.grants.clear();
            self.granted = 0;
        }
    }

    /// Allocates `list` against this batch; keeps in `list` the entries that got nothing and
    /// moves to `tail` those that got slots and want more.
    fn process(&mut self, list: &mut Vec<Entry>, tail: &mut Vec<Entry>) {
        let n = self.cfg.allocator.nodes as usize;
        let (table, grants, granted) = (self.table, &mut self.grants, &mut self.granted);
        macro_rules! go {
            ($w:literal, $unit:literal) => {
                sweep_filtered::<$w, $unit>(list, tail, &mut self.tx, &mut self.rx, |e, tx, rx| {
                    let (got, fate) = serve::<$w, $unit>(e, u32::MAX, tx, rx, grants, |e| {
                        exhausted(&table[usize::from(e.src) * n + usize::from(e.dst)])
                    });
                    *granted += u64::from(got);
                    fate
                })
            };
        }
        match (self.tx.words(), self.tx.is_unit()) {
            (1, true) => go!(1, true),
            (1, false) => go!(1, false),
            (2, true) => go!(2, true),
            (2, false) => go!(2, false),
            (4, true) => go!(4, true),
            (4, false) => go!(4, false),
            (8, true) => go!(8, true),
            (8, false) => go!(8, false),
            (w, _) => unreachable!("validated word count {w}"),
        }
        debug_assert!(list.iter().all(|e| e.remaining > 0));
    }
}

/// New demand of `slots` for a pair: returns the slots of a new entry if this call created the
/// pair's entry, or `None` if an entry exists and will absorb the demand.
fn arrive(cell: &AtomicU32, slots: u32) -> Option<u32> {
    let old = cell.fetch_add(slots, Ordering::AcqRel);
    assert!(
        (old & !ACTIVE)
            .checked_add(slots)
            .is_some_and(|p| p < ACTIVE),
        "pending demand above 2^31"
    );
    if old & ACTIVE != 0 {
        return None;
    }
    // No entry: whoever sets ACTIVE takes everything pending, including other arrivals.
    let mut cur = old + slots;
    loop {
        match cell.compare_exchange_weak(cur, ACTIVE, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Some(cur),
            Err(now) if now & ACTIVE != 0 => return None,
            Err(now) => cur = now,
        }
    }
}

/// The holder's entry ran out: take the pending demand (entry stays) or clear ACTIVE.
fn exhausted(cell: &AtomicU32) -> Option<u32> {
    let mut cur = cell.load(Ordering::Acquire);
    loop {
        debug_assert!(cur & ACTIVE != 0);
        let pending = cur & !ACTIVE;
        let next = if pending > 0 { ACTIVE } else { 0 };
        match cell.compare_exchange_weak(cur, next, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return (pending > 0).then_some(pending),
            Err(now) => cur = now,
        }
    }
}
