//! Compact per-pair state of a backlog block: 4 bits per pair.
//!
//! | bit | meaning |
//! |---|---|
//! | `ACTIVE` | the pair has an entry in the backlog's bins |
//! | `PENDING` | demand arrived while active; its amount is in the side map |
//! | `RECENT_A`, `RECENT_B` | the pair was allocated in the current or previous epoch of [`EPOCH`] batches (two generations, the older one is cleared when an epoch starts) |
//!
//! Why not a `u32` per pair with a full stamp: for 1024 nodes that table is 4 MiB, larger than
//! a core's L2 cache, and the allocator reads it once per demand at arrival and once when the
//! demand is used up; those two misses were the largest cost of the serial allocator at high
//! load. Four bits per pair are 512 KiB for 1024 nodes. Demand that arrives for an already
//! backlogged pair (a few percent of demands under uniform traffic) goes to a small hash map.
//!
//! The LRA information kept for idle pairs is therefore coarse: "allocated within the last
//! `EPOCH` to `2 x EPOCH` batches" or not. A returning recent pair is queued as if it had been
//! allocated in the previous batch (behind every waiting pair, never ahead: splitting a flow
//! into demands gains nothing); a pair idle for longer counts as never allocated.
//!
//! Cost: every operation touches one `u64` word; `new_epoch` clears one bit per pair
//! (`pairs / 16` word operations every `EPOCH` batches).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Batches per recency generation.
pub(crate) const EPOCH: u64 = 32;

const ACTIVE: u64 = 1;
const PENDING: u64 = 2;
const RECENT_A: u64 = 4;
const RECENT_B: u64 = 8;
/// The nibble pattern repeated over a word, for masking one bit in every pair.
const EVERY_PAIR: u64 = 0x1111_1111_1111_1111;

/// What [`PairState::submit`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// The pair already had an entry; the demand was added to its pending amount.
    Merged,
    /// The pair is now active and needs a new entry; `recent`: allocated in the last one or
    /// two epochs.
    New { recent: bool },
}

/// Per-pair state of one backlog block; see the module docs.
#[derive(Debug)]
pub(crate) struct PairState {
    words: Vec<u64>,
    pending: HashMap<u32, u32, BuildHasherDefault<PairHasher>>,
    /// Which recency bit the current epoch sets (`RECENT_A` or `RECENT_B`).
    current: u64,
}

impl PairState {
    pub(crate) fn new(pairs: usize) -> Self {
        Self {
            words: vec![0; pairs.div_ceil(16)],
            pending: HashMap::default(),
            current: RECENT_A,
        }
    }

    /// Registers `slots` of new demand for pair `key`. Fails, changing nothing, if the pair's
    /// pending demand would exceed `u32::MAX` slots.
    #[inline]
    pub(crate) fn submit(&mut self, key: usize, slots: u32) -> Result<Arrival, ()> {
        let (w, shift) = (key / 16, (key % 16) * 4);
        let v = self.words[w] >> shift;
        if v & ACTIVE != 0 {
            let p = self.pending.entry(key as u32).or_insert(0);
            *p = p.checked_add(slots).ok_or(())?;
            self.words[w] |= PENDING << shift;
            Ok(Arrival::Merged)
        } else {
            self.words[w] |= ACTIVE << shift;
            Ok(Arrival::New {
                recent: v & (RECENT_A | RECENT_B) != 0,
            })
        }
    }

    /// Called when the entry of pair `key` has no slots left: returns its pending demand
    /// (the entry stays active), or retires the pair and marks it recently allocated.
    #[inline]
    pub(crate) fn exhausted(&mut self, key: usize) -> Option<u32> {
        let (w, shift) = (key / 16, (key % 16) * 4);
        let v = self.words[w] >> shift;
        debug_assert!(v & ACTIVE != 0);
        if v & PENDING != 0 {
            self.words[w] &= !(PENDING << shift);
            let p = self.pending.remove(&(key as u32));
            debug_assert!(p.is_some_and(|p| p > 0));
            p
        } else {
            self.words[w] = (self.words[w] & !(ACTIVE << shift)) | (self.current << shift);
            None
        }
    }

    /// Starts a new recency epoch: forgets allocations older than the previous epoch.
    pub(crate) fn new_epoch(&mut self) {
        let older = self.current ^ (RECENT_A | RECENT_B);
        let clear = !(EVERY_PAIR * older);
        for w in &mut self.words {
            *w &= clear;
        }
        self.current = older;
    }
}

/// Multiplicative hash for pair keys: fixed, fast, and good enough for keys that are dense
/// indices. The map is only used for lookups, so its iteration order never matters.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PairHasher(u64);

impl Hasher for PairHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u32(&mut self, i: u32) {
        self.0 = (u64::from(i) ^ 0x5bd1_e995).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_demand_is_kept_until_exhausted() {
        let mut p = PairState::new(40);
        assert_eq!(p.submit(17, 3), Ok(Arrival::New { recent: false }));
        assert_eq!(p.submit(17, 4), Ok(Arrival::Merged));
        assert_eq!(p.submit(17, 5), Ok(Arrival::Merged));
        assert_eq!(p.submit(17, u32::MAX), Err(()));
        assert_eq!(p.exhausted(17), Some(9));
        assert_eq!(p.exhausted(17), None);
        assert_eq!(p.submit(17, 1), Ok(Arrival::New { recent: true }));
    }

    #[test]
    fn recency_lasts_one_to_two_epochs() {
        let mut p = PairState::new(16);
        p.submit(3, 1).unwrap();
        assert_eq!(p.exhausted(3), None);
        p.new_epoch();
        assert_eq!(
            p.submit(3, 1),
            Ok(Arrival::New { recent: true }),
            "previous epoch"
        );
        assert_eq!(p.exhausted(3), None);
        p.new_epoch();
        p.new_epoch();
        assert_eq!(
            p.submit(3, 1),
            Ok(Arrival::New { recent: false }),
            "two epochs later"
        );
        assert_eq!(
            p.submit(4, 1),
            Ok(Arrival::New { recent: false }),
            "neighbour untouched"
        );
    }
}
