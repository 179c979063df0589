//! The per-pair demand backlog and the greedy batch allocation pass.
//!
//! # Structure
//! * One [`Entry`] (8 bytes: source, destination, remaining slots) per backlogged pair, held *by
//!   value* in priority bins, so the allocation pass streams through contiguous memory.
//! * Least-recently-allocated (LRA) priority with coarse bins: entries live in a ring of
//!   [`BINS`] bins keyed by the batch in which the pair was last allocated, plus an `old` bin
//!   for pairs never allocated or last allocated [`BINS`] or more batches ago. A pass visits
//!   `old` first, then the ring from oldest to newest; every entry that gets slots moves to the
//!   bin of the current batch (the back of the order). No sorting: each pass is O(entries).
//! * Compact per-pair state ([`PairState`], 4 bits per pair) says whether a pair has an entry,
//!   whether demand arrived for it since (`pending`, absorbed lazily when the entry's
//!   `remaining` runs out, so a pass touches the state only at that moment), and whether it was
//!   allocated recently, so that a returning pair cannot jump the queue.
//!
//! Cost: submit O(1) (one state access, maybe one push); a pass O(entries visited) plus O(1)
//! per grant. Memory: half a byte per pair of the block + 8 bytes per backlogged pair.

use crate::bitmap::SlotBitmaps;
use crate::isa::{Isa, Portable, Take, lowest_bits};
use crate::pairs::{Arrival, EPOCH, PairState};
use crate::types::Grant;

/// Number of LRA priority bins (the "coarse sorting" of the thesis: 32 bins).
pub(crate) const BINS: usize = 32;

/// One backlogged pair. Public for dcsim-arbiter-bench.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Source node.
    pub src: u16,
    /// Destination node.
    pub dst: u16,
    /// Slots still wanted (not counting pending demand in the pair state). Always > 0 for an entry that
    /// sits in a bin, except transiently inside a tentative pass (parallel architecture).
    pub remaining: u32,
}

impl Entry {
    /// Filler for preallocated buffers.
    const EMPTY: Self = Self {
        src: 0,
        dst: 0,
        remaining: 0,
    };
}

/// What a pass decided for one visited entry. Public for dcsim-arbiter-bench.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Got no slots; stays where it is.
    Kept,
    /// Got slots and still wants more: moves to the current batch's bin.
    Moved,
    /// Got its last slot and has no pending demand: leaves the backlog.
    Retired,
}

/// Why a demand could not be accepted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DemandError {
    /// Source or destination is not a node of this allocator.
    #[error("demand {src} -> {dst} names a node outside 0..{nodes}")]
    UnknownNode {
        /// Source of the rejected demand.
        src: u32,
        /// Destination of the rejected demand.
        dst: u32,
        /// Number of nodes.
        nodes: u32,
    },
    /// A host asked to send to itself.
    #[error("demand {node} -> {node} has the same source and destination")]
    SelfLoop {
        /// The node.
        node: u32,
    },
    /// The demand waiting behind one pair's current entry would exceed 2^32 - 1 slots.
    #[error("outstanding demand of pair {src} -> {dst} would exceed 2^32 - 1 slots")]
    Overflow {
        /// Source of the rejected demand.
        src: u32,
        /// Destination of the rejected demand.
        dst: u32,
    },
}

/// Backlog of the pairs `src_lo..src_lo + src_n` x `dst_lo..dst_lo + dst_n`. Public for
/// dcsim-arbiter-bench.
#[derive(Debug)]
pub struct Backlog {
    src_lo: u32,
    src_n: u32,
    dst_lo: u32,
    dst_n: u32,
    /// Per-pair state.
    pairs: PairState,
    /// Pairs never allocated or not allocated for at least `BINS` batches, FIFO.
    old: Vec<Entry>,
    /// `ring[b % BINS]` holds the pairs last allocated in batch `b`.
    ring: Vec<Vec<Entry>>,
    /// Scratch list reused by multi-pass modes.
    scratch: Vec<Entry>,
    /// Entries that ran out of slots during the current pass.
    exhausted: Vec<Entry>,
    /// Branch-free collectors of the unit-link batch-mode pass.
    moved: Stack<Entry>,
    spent: Stack<Entry>,
    /// Grants of the unit-link batch-mode pass, copied to the caller's list at its end.
    grants: Stack<Grant>,
    /// The batch the next pass will fill; submits compute ages against it.
    next_batch: u64,
    /// Slots demanded and not yet allocated (including pending).
    outstanding: u64,
    /// Number of entries in the bins.
    active: u64,
    /// Instruction-set variant of the unit-link batch pass (same results either way).
    isa: Isa,
}

impl Backlog {
    /// Empty backlog for a block of pairs.
    pub fn new(src_lo: u32, src_n: u32, dst_lo: u32, dst_n: u32, isa: Isa) -> Self {
        let pairs = src_n as usize * dst_n as usize;
        Self {
            src_lo,
            src_n,
            dst_lo,
            dst_n,
            pairs: PairState::new(pairs),
            old: Vec::new(),
            ring: (0..BINS).map(|_| Vec::new()).collect(),
            scratch: Vec::new(),
            exhausted: Vec::new(),
            moved: Stack::new(Entry::EMPTY),
            spent: Stack::new(Entry::EMPTY),
            grants: Stack::new(Grant::EMPTY),
            next_batch: 0,
            outstanding: 0,
            active: 0,
            isa,
        }
    }

    /// Slots demanded and not yet allocated.
    pub(crate) fn outstanding(&self) -> u64 {
        self.outstanding
    }

    /// Number of backlogged pairs.
    pub(crate) fn active_pairs(&self) -> u64 {
        self.active
    }

    /// Whether the pair belongs to this block.
    #[inline]
    pub(crate) fn contains(&self, src: u32, dst: u32) -> bool {
        src.wrapping_sub(self.src_lo) < self.src_n && dst.wrapping_sub(self.dst_lo) < self.dst_n
    }

    /// Adds `slots` of demand for `src -> dst` (both inside the block, `src != dst`).
    #[inline]
    pub fn submit(&mut self, src: u16, dst: u16, slots: u32) -> Result<(), DemandError> {
        debug_assert!(self.contains(u32::from(src), u32::from(dst)));
        if slots == 0 {
            return Ok(());
        }
        let key = self.key(src, dst);
        let arrival = self
            .pairs
            .submit(key, slots)
            .map_err(|()| DemandError::Overflow {
                src: src.into(),
                dst: dst.into(),
            })?;
        if let Arrival::New { recent } = arrival {
            let entry = Entry {
                src,
                dst,
                remaining: slots,
            };
            match self.next_batch.checked_sub(1) {
                // Queued as if allocated in the newest batch: behind every waiting pair.
                Some(newest) if recent => self.ring[(newest % BINS as u64) as usize].push(entry),
                _ => self.old.push(entry),
            }
            self.active += 1;
        }
        self.outstanding += u64::from(slots);
        Ok(())
    }

    /// Prepares allocation of `batch`: ages the ring so that it holds batches
    /// `batch - BINS + 1 ..= batch - 1` and the bin of `batch` is empty.
    pub fn begin(&mut self, batch: u64) {
        assert!(
            batch >= self.next_batch,
            "batches must be allocated in increasing order"
        );
        let first = self.next_batch.max((batch + 1).saturating_sub(BINS as u64));
        for b in first..=batch {
            let bin = &mut self.ring[(b % BINS as u64) as usize];
            if !bin.is_empty() {
                self.old.append(bin);
            }
        }
        let crossed = match self.next_batch.checked_sub(1) {
            Some(prev) => batch / EPOCH - prev / EPOCH,
            None => batch / EPOCH,
        };
        for _ in 0..crossed.min(2) {
            self.pairs.new_epoch();
        }
        self.next_batch = batch + 1;
    }

    /// Greedy allocation of one batch (call [`begin`](Self::begin) first) against the
    /// transmit bitmaps `tx` of the sources and receive bitmaps `rx` of the destinations.
    ///
    /// `quantum`/`rounds`: first `rounds` passes in which a pair takes at most `quantum` slots,
    /// then a final pass without limit. `rounds = 0` is the thesis's batch processing mode: one
    /// pass, each pair takes every common free slot it can use. Either way the result is a
    /// maximal allocation of the batch: afterwards no backlogged pair has a slot in which both
    /// its ends are free. Returns the number of slots allocated.
    pub(crate) fn allocate<const W: usize, const UNIT: bool>(
        &mut self,
        batch: u64,
        tx: &mut SlotBitmaps,
        rx: &mut SlotBitmaps,
        quantum: u32,
        rounds: u32,
        out: &mut Vec<Grant>,
    ) -> u64 {
        debug_assert_eq!(self.next_batch, batch + 1, "begin(batch) not called");
        let first_limit = if rounds == 0 {
            u32::MAX
        } else {
            quantum.max(1)
        };
        let mut fresh = std::mem::take(&mut self.ring[(batch % BINS as u64) as usize]);
        debug_assert!(fresh.is_empty());
        let mut granted = 0u64;
        if UNIT && rounds == 0 {
            // The common configuration gets a pass with almost no unpredictable branches.
            // (Taken out of `self` so that the pass can borrow the bins; nothing is allocated.)
            let mut moved = std::mem::replace(&mut self.moved, Stack::new(Entry::EMPTY));
            let mut spent = std::mem::replace(&mut self.spent, Stack::new(Entry::EMPTY));
            let mut grants = std::mem::replace(&mut self.grants, Stack::new(Grant::EMPTY));
            let isa = self.isa;
            let mut blocked = 0u32;
            let mut sweep =
                |list: &mut Vec<Entry>, moved: &mut Stack<Entry>, spent: &mut Stack<Entry>| {
                    sweep_unit_batch::<W>(
                        (isa, &mut blocked),
                        list,
                        (moved, spent, &mut grants),
                        tx,
                        rx,
                    )
                };
            granted += sweep(&mut self.old, &mut moved, &mut spent);
            for age in (1..BINS as u64).rev() {
                let Some(b) = batch.checked_sub(age) else {
                    continue;
                };
                let bin = &mut self.ring[(b % BINS as u64) as usize];
                granted += sweep(bin, &mut moved, &mut spent);
            }
            // Entries that ran out retire, or take the demand that merged into them meanwhile
            // and get another pass (last: they were just allocated). Checking the pair state
            // here rather than inside the pass turns a dependent cache miss per exhausted
            // entry into a loop of independent loads.
            loop {
                fresh.extend_from_slice(moved.as_slice());
                moved.clear();
                let mut again = Vec::new();
                for e in spent.as_slice() {
                    if let Some(pending) = self.pairs.exhausted(self.key(e.src, e.dst)) {
                        again.push(Entry {
                            remaining: pending,
                            ..*e
                        });
                    }
                }
                spent.clear();
                if again.is_empty() {
                    break;
                }
                granted += sweep(&mut again, &mut moved, &mut spent);
                fresh.append(&mut again);
            }
            out.extend_from_slice(grants.as_slice());
            grants.clear();
            self.grants = grants;
            (self.moved, self.spent) = (moved, spent);
            self.ring[(batch % BINS as u64) as usize] = fresh;
            self.outstanding -= granted;
            self.active = self.count_entries();
            return granted;
        }
        let mut exhausted = std::mem::take(&mut self.exhausted);
        {
            let mut run = |list: &mut Vec<Entry>,
                           fresh: &mut Vec<Entry>,
                           tx: &mut SlotBitmaps,
                           rx: &mut SlotBitmaps,
                           limit: u32| {
                sweep_filtered::<W, UNIT>(list, fresh, tx, rx, |e, tx, rx| {
                    let (got, fate) = serve::<W, UNIT>(e, limit, tx, rx, out, |e| {
                        exhausted.push(*e);
                        None
                    });
                    granted += u64::from(got);
                    fate
                })
            };
            run(&mut self.old, &mut fresh, tx, rx, first_limit);
            for age in (1..BINS as u64).rev() {
                let Some(b) = batch.checked_sub(age) else {
                    continue;
                };
                run(
                    &mut self.ring[(b % BINS as u64) as usize],
                    &mut fresh,
                    tx,
                    rx,
                    first_limit,
                );
            }
            // Later passes only revisit pairs that got slots: a pair that found no common free
            // slot cannot find one later in the same batch, because bitmaps only fill up.
            let mut live = fresh;
            let mut blocked = std::mem::take(&mut self.scratch);
            for round in 1..=rounds {
                let limit = if round == rounds {
                    u32::MAX
                } else {
                    quantum.max(1)
                };
                let mut next = Vec::with_capacity(live.len());
                run(&mut live, &mut next, tx, rx, limit);
                blocked.append(&mut live);
                live = next;
            }
            blocked.append(&mut live);
            fresh = blocked;
        }
        // As in the fast path above: absorb merged demand and give it a final pass.
        loop {
            let mut again = Vec::new();
            for e in exhausted.drain(..) {
                if let Some(pending) = self.pairs.exhausted(self.key(e.src, e.dst)) {
                    again.push(Entry {
                        remaining: pending,
                        ..e
                    });
                }
            }
            if again.is_empty() {
                break;
            }
            let mut moved = Vec::new();
            sweep_filtered::<W, UNIT>(&mut again, &mut moved, tx, rx, |e, tx, rx| {
                let (got, fate) = serve::<W, UNIT>(e, u32::MAX, tx, rx, out, |e| {
                    exhausted.push(*e);
                    None
                });
                granted += u64::from(got);
                fate
            });
            fresh.append(&mut again);
            fresh.append(&mut moved);
        }
        self.exhausted = exhausted;
        self.scratch = Vec::new();
        let retired_or_moved = &mut self.ring[(batch % BINS as u64) as usize];
        *retired_or_moved = fresh;
        self.outstanding -= granted;
        self.active = self.count_entries();
        granted
    }

    /// Visits every entry in pass order (old bin, then ring from oldest to newest) without
    /// changing anything. Call after [`begin`](Self::begin).
    pub fn for_each_in_order(&self, batch: u64, mut f: impl FnMut(&Entry)) {
        self.old.iter().for_each(&mut f);
        for age in (1..BINS as u64).rev() {
            let Some(b) = batch.checked_sub(age) else {
                continue;
            };
            self.ring[(b % BINS as u64) as usize]
                .iter()
                .for_each(&mut f);
        }
    }

    /// Applies outcomes decided elsewhere (the random-shuffle architecture's alloc stage):
    /// visits entries in exactly the order of [`for_each_in_order`](Self::for_each_in_order);
    /// `taken(e)` returns how many slots entry `e` was granted. Returns the total.
    pub fn apply(&mut self, batch: u64, mut taken: impl FnMut(&Entry) -> u32) -> u64 {
        let mut fresh = std::mem::take(&mut self.ring[(batch % BINS as u64) as usize]);
        let mut granted = 0u64;
        let mut retired = 0u64;
        {
            let pairs = &mut self.pairs;
            let (src_lo, dst_lo, dst_n) = (self.src_lo, self.dst_lo, self.dst_n);
            let mut run = |list: &mut Vec<Entry>, fresh: &mut Vec<Entry>| {
                sweep(list, fresh, |e, _| {
                    let got = taken(e);
                    if got == 0 {
                        return Fate::Kept;
                    }
                    debug_assert!(got <= e.remaining);
                    granted += u64::from(got);
                    e.remaining -= got;
                    if e.remaining > 0 {
                        return Fate::Moved;
                    }
                    let key = (u32::from(e.src) - src_lo) as usize * dst_n as usize
                        + (u32::from(e.dst) - dst_lo) as usize;
                    match pairs.exhausted(key) {
                        Some(pending) => {
                            e.remaining = pending;
                            Fate::Moved
                        }
                        None => {
                            retired += 1;
                            Fate::Retired
                        }
                    }
                })
            };
            run(&mut self.old, &mut fresh);
            for age in (1..BINS as u64).rev() {
                let Some(b) = batch.checked_sub(age) else {
                    continue;
                };
                run(&mut self.ring[(b % BINS as u64) as usize], &mut fresh);
            }
        }
        self.ring[(batch % BINS as u64) as usize] = fresh;
        self.outstanding -= granted;
        self.active -= retired;
        granted
    }

    /// Tentative pass of the parallel architecture: like `allocate` with
    /// one unlimited pass, but nothing retires; every entry that gets slots moves to the bin of
    /// `batch` (the bin is rebuilt: entries granted in this pass first, then the bin's earlier
    /// members), and each grant is reported with the index of its entry in that bin so that
    /// [`Self::refund`] can undo cancelled slots. Call [`Self::settle`] after the last round.
    pub fn tentative<const W: usize, const UNIT: bool>(
        &mut self,
        batch: u64,
        tx: &mut SlotBitmaps,
        rx: &mut SlotBitmaps,
        out: &mut Vec<(u32, Grant)>,
    ) -> u64 {
        let mut prev = std::mem::take(&mut self.ring[(batch % BINS as u64) as usize]);
        let mut fresh = std::mem::take(&mut self.scratch);
        fresh.clear();
        let mut granted = 0u64;
        {
            let mut run = |list: &mut Vec<Entry>, fresh: &mut Vec<Entry>| {
                sweep(list, fresh, |e, at| {
                    if e.remaining == 0 {
                        return Fate::Kept;
                    }
                    let idx = u32::try_from(at).expect("fewer than 2^32 entries");
                    let mut sink = Tagged { idx, out };
                    let (got, _) = serve::<W, UNIT>(e, u32::MAX, tx, rx, &mut sink, |_| None);
                    granted += u64::from(got);
                    if got > 0 { Fate::Moved } else { Fate::Kept }
                })
            };
            run(&mut self.old, &mut fresh);
            for age in (1..BINS as u64).rev() {
                let Some(b) = batch.checked_sub(age) else {
                    continue;
                };
                run(&mut self.ring[(b % BINS as u64) as usize], &mut fresh);
            }
            run(&mut prev, &mut fresh);
        }
        fresh.append(&mut prev);
        self.scratch = prev;
        self.ring[(batch % BINS as u64) as usize] = fresh;
        self.outstanding -= granted;
        granted
    }

    /// Gives `slots` back to the entry at `idx` of the bin of `batch` (a cancelled tentative
    /// grant).
    pub fn refund(&mut self, batch: u64, idx: u32, slots: u32) {
        self.ring[(batch % BINS as u64) as usize][idx as usize].remaining += slots;
        self.outstanding += u64::from(slots);
    }

    /// Ends a batch allocated with [`Self::tentative`]: entries of the batch's bin that have
    /// nothing left absorb their pending demand or retire.
    pub fn settle(&mut self, batch: u64) {
        let bin = &mut self.ring[(batch % BINS as u64) as usize];
        let (src_lo, dst_lo, dst_n) = (self.src_lo, self.dst_lo, self.dst_n);
        let pairs = &mut self.pairs;
        let mut retired = 0;
        bin.retain_mut(|e| {
            if e.remaining > 0 {
                return true;
            }
            let key = (u32::from(e.src) - src_lo) as usize * dst_n as usize
                + (u32::from(e.dst) - dst_lo) as usize;
            match pairs.exhausted(key) {
                Some(p) => {
                    e.remaining = p;
                    true
                }
                None => {
                    retired += 1;
                    false
                }
            }
        });
        self.active -= retired;
    }

    /// Table index of a pair.
    #[inline(always)]
    fn key(&self, src: u16, dst: u16) -> usize {
        (u32::from(src) - self.src_lo) as usize * self.dst_n as usize
            + (u32::from(dst) - self.dst_lo) as usize
    }

    fn count_entries(&self) -> u64 {
        (self.old.len() + self.ring.iter().map(Vec::len).sum::<usize>()) as u64
    }
}

/// A grant sink: the serial pass collects plain grants, the tentative pass tags them. Public
/// for dcsim-arbiter-bench.
pub trait GrantSink {
    /// Takes one grant.
    fn put(&mut self, grant: Grant);
}

impl GrantSink for Vec<Grant> {
    #[inline(always)]
    fn put(&mut self, grant: Grant) {
        self.push(grant);
    }
}

/// Tags each grant with the index its entry will have in the batch's bin.
struct Tagged<'a> {
    idx: u32,
    out: &'a mut Vec<(u32, Grant)>,
}

impl GrantSink for Tagged<'_> {
    #[inline(always)]
    fn put(&mut self, grant: Grant) {
        self.out.push((self.idx, grant));
    }
}

/// Visits `list` in order, compacting the entries that stay and appending the ones that got
/// slots (and still want more) to `moved`. `visit` also learns the index the entry would get
/// in `moved`.
#[inline(always)]
fn sweep(
    list: &mut Vec<Entry>,
    moved: &mut Vec<Entry>,
    mut visit: impl FnMut(&mut Entry, usize) -> Fate,
) {
    let mut keep = 0;
    for i in 0..list.len() {
        let mut e = list[i];
        match visit(&mut e, moved.len()) {
            Fate::Kept => {
                list[keep] = e;
                keep += 1;
            }
            Fate::Moved => moved.push(e),
            Fate::Retired => {}
        }
    }
    list.truncate(keep);
}

/// An append-only list for conditional appends without a branch: a pass writes into the room
/// reserved behind the items ([`spare`](Self::spare)), advancing its own count only when an
/// item is kept, and then [`advance`](Self::advance)s the list over what it kept. The buffer
/// only grows, so after the first batches reserving writes no filler.
#[derive(Debug)]
pub(crate) struct Stack<T> {
    buf: Vec<T>,
    len: usize,
    filler: T,
}

impl<T: Copy> Stack<T> {
    pub(crate) fn new(filler: T) -> Self {
        Self {
            buf: Vec::new(),
            len: 0,
            filler,
        }
    }

    /// Makes room for `extra` more items.
    #[inline(always)]
    fn reserve(&mut self, extra: usize) {
        let need = self.len + extra;
        if self.buf.len() < need {
            self.buf.resize(need.max(2 * self.buf.len()), self.filler);
        }
    }

    fn as_slice(&self) -> &[T] {
        &self.buf[..self.len]
    }

    /// The reserved room behind the items, to be filled by the caller and then
    /// [`advance`](Self::advance)d over.
    #[inline(always)]
    fn spare(&mut self) -> &mut [T] {
        &mut self.buf[self.len..]
    }

    #[inline(always)]
    fn advance(&mut self, k: usize) {
        debug_assert!(self.len + k <= self.buf.len());
        self.len += k;
    }

    fn clear(&mut self) {
        self.len = 0;
    }
}

/// The batch-mode pass with unit links: [`sweep_filtered`] and [`serve`] fused into a loop
/// without unpredictable branches. Entries that get slots and want more go to `moved`, entries
/// that run out go to `spent` (for [`PairState::exhausted`] after the pass), the rest stay in
/// `list`; grants go to `grants`.
///
/// The list is taken in chunks of 64 entries, each in one of two ways without unpredictable
/// branches per entry:
/// * **dense**: serve every entry the same way whether it gets slots or not: the common free
///   slots are counted and taken ([`Take`], one instruction with BMI2), both bitmaps written
///   back, and the grant and the entry routed with conditional appends into buffers reserved
///   ahead;
/// * **sparse**: first mark the entries that have a common free slot (one load of each end's
///   bitmap words), serve only those as above, then copy the entries that stay down over the
///   ones that left (a block copy when none left). Skipping unmarked entries is exact: bitmaps
///   only fill up during a pass, so an entry blocked at the start of the chunk is still
///   blocked when its turn comes.
///
/// A chunk is sparse when at least [`SPARSE_FROM`] of the 64 entries of the previous chunk
/// (carried across the lists of a pass in `blocked`) got nothing. Early in a pass the bitmaps
/// are empty and nearly every entry is served; late in a pass at high load most are blocked
/// (about two thirds of the backlog at load 0.9). Either way gives the same result; the mix
/// is as fast as dense at low load and faster than both at high load. Serial allocator with `pdep`, 1024 nodes, whole runs of 62.5 ms
/// of arbiter time: dense only 40.7 / 59.5 / 128 ms at load 0.6 / 0.75 / 0.92, sparse only
/// 46.4 / 64.6 / 108 ms, mixed with a threshold of 24 the best of both, 58.7 ms at 0.75 and
/// 101-103 ms at 0.92 (thresholds 16 and 32 were within noise of 24, 8 and 48 worse at 0.92).
#[inline(always)]
fn sweep_unit_batch<const W: usize>(
    (isa, blocked): (Isa, &mut u32),
    list: &mut Vec<Entry>,
    (moved, spent, grants): (&mut Stack<Entry>, &mut Stack<Entry>, &mut Stack<Grant>),
    tx: &mut SlotBitmaps,
    rx: &mut SlotBitmaps,
) -> u64 {
    let n = list.len();
    moved.reserve(n);
    spent.reserve(n);
    grants.reserve(n * W);
    let (t, r) = (tx.lo(), rx.lo());
    let (tx, rx) = ((tx.unit_words_mut(), t), (rx.unit_words_mut(), r));
    let out = (moved.spare(), spent.spare(), grants.spare());
    let c = match isa {
        Isa::Portable => sweep_portable::<W>(list, tx, rx, out, blocked),
        #[cfg(target_arch = "x86_64")]
        Isa::Bmi2(b) => b.run(|b| sweep_slices::<W, _>(b, list, tx, rx, out, blocked)),
    };
    list.truncate(c.kept);
    moved.advance(c.moved);
    spent.advance(c.spent);
    grants.advance(c.grants);
    c.granted
}

/// Where [`sweep_slices`] appends: entries moved, entries spent, grants.
type Outputs<'a> = (&'a mut [Entry], &'a mut [Entry], &'a mut [Grant]);

/// What [`sweep_slices`] produced.
struct SweepCounts {
    kept: usize,
    moved: usize,
    spent: usize,
    grants: usize,
    granted: u64,
}

/// [`sweep_slices`] with baseline instructions.
#[inline(never)]
fn sweep_portable<const W: usize>(
    list: &mut [Entry],
    tx: (&mut [u64], u32),
    rx: (&mut [u64], u32),
    out: Outputs<'_>,
    blocked: &mut u32,
) -> SweepCounts {
    sweep_slices::<W, _>(Portable, list, tx, rx, out, blocked)
}

/// The loop of [`sweep_unit_batch`] on plain slices: `tx` and `rx` are unit-link bitmaps
/// (`local node * W + word`) with the first node of their range, and every output has room
/// for `W` items per entry. Runs inside a function of its own ([`sweep_portable`], or the
/// feature-enabled one of [`crate::isa::Bmi2::run`]) so that the compiler knows the slices do
/// not overlap and keeps the counters in registers (working through the structs, it reloaded
/// them after every store: 3-4 % slower at 1024 nodes and load 0.9).
#[inline(always)]
fn sweep_slices<const W: usize, T: Take>(
    isa: T,
    list: &mut [Entry],
    (tx, tx_lo): (&mut [u64], u32),
    (rx, rx_lo): (&mut [u64], u32),
    (moved, spent, grants): Outputs<'_>,
    blocked: &mut u32,
) -> SweepCounts {
    let mut c = SweepCounts {
        kept: 0,
        moved: 0,
        spent: 0,
        grants: 0,
        granted: 0,
    };
    let n = list.len();
    let mut base = 0;
    while base < n {
        let end = (base + 64).min(n);
        let len = end - base;
        let kept_before = c.kept;
        if *blocked < SPARSE_FROM {
            // Dense: serve every entry, compacting in place.
            for i in base..end {
                let mut e = list[i];
                let got =
                    serve_entry::<W, T>(isa, &mut e, (tx, tx_lo), (rx, rx_lo), grants, &mut c);
                list[c.kept] = e;
                c.kept += usize::from(got == 0);
                moved[c.moved] = e;
                c.moved += usize::from(got > 0 && e.remaining > 0);
                spent[c.spent] = e;
                c.spent += usize::from(e.remaining == 0);
            }
        } else {
            // Sparse. Which entries of the chunk have a common free slot now. Exact for the
            // whole chunk: bitmaps only fill up during a pass, so an entry blocked now stays
            // blocked.
            let mut open = 0u64;
            for (j, e) in list[base..end].iter().enumerate() {
                let s = (u32::from(e.src) - tx_lo) as usize * W;
                let d = (u32::from(e.dst) - rx_lo) as usize * W;
                let mut any = 0;
                for w in 0..W {
                    any |= tx[s + w] & rx[d + w];
                }
                open |= u64::from(any != 0) << j;
            }
            // Serve the open ones in order; `left` marks those that got nothing after all (an
            // earlier entry of the chunk took their slots) and so stay.
            let mut left = !open;
            let mut todo = open;
            while todo != 0 {
                let j = todo.trailing_zeros() as usize;
                todo &= todo - 1;
                let mut e = list[base + j];
                let got =
                    serve_entry::<W, T>(isa, &mut e, (tx, tx_lo), (rx, rx_lo), grants, &mut c);
                list[base + j] = e;
                left |= u64::from(got == 0) << j;
                moved[c.moved] = e;
                c.moved += usize::from(got > 0 && e.remaining > 0);
                spent[c.spent] = e;
                c.spent += usize::from(e.remaining == 0);
            }
            // Compact the entries that stay, in order.
            let all = if len == 64 {
                u64::MAX
            } else {
                (1u64 << len) - 1
            };
            if left & all == all {
                if c.kept != base {
                    list.copy_within(base..end, c.kept);
                }
                c.kept += len;
            } else {
                for j in 0..len {
                    list[c.kept] = list[base + j];
                    c.kept += ((left >> j) & 1) as usize;
                }
            }
        }
        // Entries that got nothing, scaled to a full chunk.
        *blocked = ((c.kept - kept_before) * 64 / len) as u32;
        base = end;
    }
    c
}

/// Entries per 64 of the previous chunk that got nothing, from which [`sweep_slices`] takes a
/// chunk sparse (see [`sweep_unit_batch`]).
const SPARSE_FROM: u32 = 24;

/// Gives `e` its lowest common free slots, up to `e.remaining`, writing the bitmaps back and
/// appending a grant per word that got slots. Returns the slots granted.
#[inline(always)]
fn serve_entry<const W: usize, T: Take>(
    isa: T,
    e: &mut Entry,
    (tx, tx_lo): (&mut [u64], u32),
    (rx, rx_lo): (&mut [u64], u32),
    grants: &mut [Grant],
    c: &mut SweepCounts,
) -> u32 {
    let s = (u32::from(e.src) - tx_lo) as usize * W;
    let d = (u32::from(e.dst) - rx_lo) as usize * W;
    let mut got = 0u32;
    for w in 0..W {
        let (t, r) = (tx[s + w], rx[d + w]);
        let (take, n) = isa.take(t & r, e.remaining - got);
        tx[s + w] = t & !take;
        rx[d + w] = r & !take;
        grants[c.grants] = Grant {
            src: e.src,
            dst: e.dst,
            word: w as u16,
            mask: take,
        };
        c.grants += usize::from(take != 0);
        got += n;
    }
    e.remaining -= got;
    c.granted += u64::from(got);
    got
}

/// Like `sweep`, for allocation passes. A branch-free scan of up to 64 entries first marks
/// those with any common free slot; only those are visited, in order, and the others are kept
/// in place. Skipping is exact: an entry without a common free slot cannot gain one later in
/// the pass, since bitmaps only fill up. At high load most backlogged pairs are blocked, and a
/// mispredicted branch per blocked pair would dominate the pass.
///
/// Public for dcsim-arbiter-bench.
#[inline(always)]
pub fn sweep_filtered<const W: usize, const UNIT: bool>(
    list: &mut Vec<Entry>,
    moved: &mut Vec<Entry>,
    tx: &mut SlotBitmaps,
    rx: &mut SlotBitmaps,
    mut visit: impl FnMut(&mut Entry, &mut SlotBitmaps, &mut SlotBitmaps) -> Fate,
) {
    let n = list.len();
    let mut keep = 0;
    let mut base = 0;
    while base < n {
        let end = (base + 64).min(n);
        let mut candidates = 0u64;
        for (j, e) in list[base..end].iter().enumerate() {
            let (s, d) = (tx.local(e.src), rx.local(e.dst));
            let mut any = 0;
            for w in 0..W {
                any |= tx.free::<W, UNIT>(s, w) & rx.free::<W, UNIT>(d, w);
            }
            candidates |= u64::from(any != 0) << j;
        }
        // `next` is the first entry of the chunk not yet placed; entries before it that stay
        // have been copied down to `..keep`.
        let mut next = base;
        while candidates != 0 {
            let i = base + candidates.trailing_zeros() as usize;
            candidates &= candidates - 1;
            if keep != next {
                for j in next..i {
                    list[keep + j - next] = list[j];
                }
            }
            keep += i - next;
            let mut e = list[i];
            match visit(&mut e, tx, rx) {
                Fate::Kept => {
                    list[keep] = e;
                    keep += 1;
                }
                Fate::Moved => moved.push(e),
                Fate::Retired => {}
            }
            next = i + 1;
        }
        if keep != next {
            for j in next..end {
                list[keep + j - next] = list[j];
            }
        }
        keep += end - next;
        base = end;
    }
    list.truncate(keep);
}

/// Gives entry `e` up to `limit` common free slots (lowest first), emitting grants. When
/// `remaining` reaches 0, `on_empty` may refill it from pending demand (`Some`) or retire it
/// (`None`). Returns the slots granted and the entry's fate. Public for dcsim-arbiter-bench.
#[inline(always)]
pub fn serve<const W: usize, const UNIT: bool>(
    e: &mut Entry,
    limit: u32,
    tx: &mut SlotBitmaps,
    rx: &mut SlotBitmaps,
    out: &mut impl GrantSink,
    mut on_empty: impl FnMut(&Entry) -> Option<u32>,
) -> (u32, Fate) {
    let s = tx.local(e.src);
    let d = rx.local(e.dst);
    let mut got = 0u32;
    loop {
        let want = e.remaining.min(limit - got);
        if want == 0 {
            break;
        }
        let mut left = want;
        for w in 0..W {
            let common = tx.free::<W, UNIT>(s, w) & rx.free::<W, UNIT>(d, w);
            if common == 0 {
                continue;
            }
            let (take, n) = lowest_bits(common, left);
            tx.take::<W, UNIT>(s, w, take);
            rx.take::<W, UNIT>(d, w, take);
            out.put(Grant {
                src: e.src,
                dst: e.dst,
                word: w as u16,
                mask: take,
            });
            left -= n;
            if left == 0 {
                break;
            }
        }
        let took = want - left;
        got += took;
        e.remaining -= took;
        if e.remaining == 0 {
            match on_empty(e) {
                Some(pending) => e.remaining = pending,
                None => return (got, if got > 0 { Fate::Retired } else { Fate::Kept }),
            }
        }
        // With unit links a short take means no common slot is left; with several links the
        // same slots may still have a second unit free on both ends, so try again.
        if took == 0 || (UNIT && left > 0) {
            break;
        }
    }
    (got, if got > 0 { Fate::Moved } else { Fate::Kept })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bitmaps(n: u32) -> (SlotBitmaps, SlotBitmaps) {
        (
            SlotBitmaps::new(0, n, 1, None),
            SlotBitmaps::new(0, n, 1, None),
        )
    }

    fn run(b: &mut Backlog, batch: u64, n: u32) -> Vec<Grant> {
        let (mut tx, mut rx) = bitmaps(n);
        let mut out = Vec::new();
        b.begin(batch);
        b.allocate::<1, true>(batch, &mut tx, &mut rx, 1, 0, &mut out);
        out
    }

    #[test]
    fn demands_for_one_pair_merge_into_one_entry() {
        let mut b = Backlog::new(0, 4, 0, 4, Isa::detect());
        b.submit(1, 2, 3).unwrap();
        b.submit(1, 2, 4).unwrap();
        assert_eq!(b.active_pairs(), 1);
        assert_eq!(b.outstanding(), 7);
        let grants = run(&mut b, 0, 4);
        let total: u32 = grants.iter().map(Grant::count).sum();
        assert_eq!(total, 7, "merged demand served in the same batch");
        assert_eq!(b.outstanding(), 0);
        assert_eq!(b.active_pairs(), 0);
    }

    #[test]
    fn returning_pair_keeps_recent_priority() {
        let mut b = Backlog::new(0, 4, 0, 4, Isa::detect());
        b.submit(1, 2, 1).unwrap();
        run(&mut b, 0, 4);
        // 1 -> 2 was allocated in batch 0; 3 -> 2 never was. Both want all of batch 1.
        b.submit(1, 2, 64).unwrap();
        b.submit(3, 2, 64).unwrap();
        let grants = run(&mut b, 1, 4);
        assert_eq!(grants[0].src, 3, "never-allocated pair goes first");
    }

    /// Runs `batches` of demands through a backlog with unit-link bitmaps in the given
    /// representation (`levels`: the general one, which sends the batch-mode pass down the
    /// general path) and returns every batch's grants and the backlog's order afterwards.
    fn schedule<const W: usize, const UNIT: bool>(
        isa: Isa,
        nodes: u32,
        batches: &[Vec<(u32, u32, u32)>],
    ) -> Vec<(Vec<Grant>, Vec<Entry>)> {
        let caps = vec![1u16; nodes as usize];
        let caps = (!UNIT).then_some(&caps[..]);
        let mut b = Backlog::new(0, nodes, 0, nodes, isa);
        let mut result = Vec::new();
        for batch in 0..batches.len() as u64 + 12 {
            for &(s, d, n) in batches.get(batch as usize).map_or(&[][..], |v| &v[..]) {
                let (s, d) = ((s % nodes) as u16, (d % nodes) as u16);
                if s != d {
                    b.submit(s, d, n).unwrap();
                }
            }
            let mut tx = SlotBitmaps::new(0, nodes, W, caps);
            let mut rx = SlotBitmaps::new(0, nodes, W, caps);
            let mut out = Vec::new();
            b.begin(batch);
            b.allocate::<W, UNIT>(batch, &mut tx, &mut rx, 1, 0, &mut out);
            let mut order = Vec::new();
            b.for_each_in_order(batch + 1, |e| order.push(*e));
            result.push((out, order));
        }
        result
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// The branch-free unit-link pass makes exactly the choices of the general pass: the
        /// same grants in the same order, and the same backlog order after every batch, with
        /// either instruction-set variant.
        #[test]
        fn unit_link_pass_matches_general_pass(
            nodes in 2u32..40,
            batches in proptest::collection::vec(
                proptest::collection::vec((0u32..40, 0u32..40, 1u32..300), 0..80),
                1..8,
            ),
        ) {
            for isa in [Isa::Portable, Isa::detect()] {
                proptest::prop_assert_eq!(schedule::<1, true>(isa, nodes, &batches), schedule::<1, false>(isa, nodes, &batches));
                proptest::prop_assert_eq!(schedule::<2, true>(isa, nodes, &batches), schedule::<2, false>(isa, nodes, &batches));
                proptest::prop_assert_eq!(schedule::<4, true>(isa, nodes, &batches), schedule::<4, false>(isa, nodes, &batches));
            }
        }
    }

    /// The detected variant (BMI2 on CI's machine, and under Miri with the features enabled)
    /// schedules exactly as the portable one, over enough demand that lists span several
    /// 64-entry chunks and entries are both blocked and partly served. Small enough for Miri.
    #[test]
    fn detected_pass_matches_portable_pass() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n) as u32
        };
        let batches: Vec<Vec<_>> = (0..4)
            .map(|_| {
                (0..150)
                    .map(|_| (next(24), next(24), 1 + next(90)))
                    .collect()
            })
            .collect();
        let portable = schedule::<1, true>(Isa::Portable, 24, &batches);
        assert_eq!(schedule::<1, true>(Isa::detect(), 24, &batches), portable);
        assert!(
            portable.iter().any(|(_, order)| order.len() > 128),
            "lists span chunks"
        );
    }
}
