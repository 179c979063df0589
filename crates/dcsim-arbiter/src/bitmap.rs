//! Per-node free-slot bitmaps over one batch of timeslots.
//!
//! A node with `c` unit links can take part in up to `c` transfers per slot in each direction.
//! Its free capacity is kept as `c` *nested* level bitmaps: bit `t` of level `k` is set iff at
//! least `k + 1` units are still free in slot `t`, so level 0 answers "any unit free?" and
//! `level[k] ⊆ level[k - 1]` always holds. Taking one unit in slot `t` clears the bit in the
//! highest level that has it; giving one back sets it in the lowest level that lacks it. Both
//! are `c` word operations for a whole mask of slots. With unit links (the common case) there is
//! one level and every operation is a single AND/OR; the hot loops are compiled separately for
//! that case (`UNIT = true`).
//!
//! Memory: `c x words` u64 per node. Time: `free` O(1); `take` O(c).

/// Free-slot bitmaps of one direction (transmit or receive) for a contiguous range of nodes.
/// Public for dcsim-arbiter-bench.
#[derive(Clone, Debug)]
pub struct SlotBitmaps {
    /// First node of the range; node `n` is stored at local index `n - lo`.
    lo: u32,
    /// Number of nodes in the range.
    nodes: u32,
    /// 64-slot words per batch.
    words: usize,
    /// A word with every slot of the batch free: all ones, or the low 8, 16 or 32 bits of a
    /// batch shorter than a word (the slots above it never exist).
    full: u64,
    /// All level bitmaps, `words` u64 per level.
    levels: Vec<u64>,
    /// First level of each local node (in units of `words`); empty when every node has one link.
    base: Vec<u32>,
    /// Unit links of each local node; empty when every node has one link.
    cap: Vec<u16>,
}

impl SlotBitmaps {
    /// Bitmaps for nodes `lo..lo + nodes`, all slots free. `caps: None` means every node has
    /// one unit link (single-level fast representation); `Some(caps)` (one entry per node of
    /// the range) always uses the level representation, so that the bitmaps of different
    /// ranges built from one configuration share a representation.
    pub fn new(lo: u32, nodes: u32, words: usize, caps: Option<&[u16]>) -> Self {
        let (base, cap, total_levels) = match caps {
            Some(caps) => {
                debug_assert_eq!(caps.len(), nodes as usize);
                let mut base = Vec::with_capacity(caps.len());
                let mut next = 0u32;
                for &c in caps {
                    debug_assert!(c >= 1, "capacity validated by the caller");
                    base.push(next);
                    next += u32::from(c);
                }
                (base, caps.to_vec(), next as usize)
            }
            _ => (Vec::new(), Vec::new(), nodes as usize),
        };
        Self {
            lo,
            nodes,
            words,
            full: !0,
            levels: vec![!0; total_levels * words],
            base,
            cap,
        }
    }

    /// Limits a one-word batch to its first `slots` slots (8, 16 or 32; 64 or more leaves
    /// it whole) and marks every slot free.
    pub fn limit_slots(&mut self, slots: u32) {
        debug_assert!(self.words == 1 || slots >= 64);
        self.full = if slots >= 64 { !0 } else { (1u64 << slots) - 1 };
        self.reset();
    }

    /// Re-initialises for nodes `lo..lo + nodes` (same rules as [`new`](Self::new)), reusing
    /// the allocation; all slots free.
    pub fn reinit(&mut self, lo: u32, nodes: u32, caps: Option<&[u16]>) {
        if self.lo == lo && self.nodes == nodes && self.is_unit() == caps.is_none() {
            self.reset();
            return;
        }
        let (words, full) = (self.words, self.full);
        let mut levels = std::mem::take(&mut self.levels);
        *self = Self::new(lo, nodes, words, caps);
        self.full = full;
        levels.clear();
        levels.resize(self.levels.len(), full);
        self.levels = levels;
    }

    /// Whether every node in the range has exactly one unit link.
    #[inline]
    pub fn is_unit(&self) -> bool {
        self.cap.is_empty()
    }

    /// First node of the range.
    #[inline]
    pub fn lo(&self) -> u32 {
        self.lo
    }

    /// Marks every slot of every node free (start of a new batch).
    pub fn reset(&mut self) {
        self.levels.fill(self.full);
    }

    /// Local index of global node `node`.
    #[inline(always)]
    pub(crate) fn local(&self, node: u16) -> usize {
        debug_assert!(u32::from(node) >= self.lo && u32::from(node) < self.lo + self.nodes);
        (u32::from(node) - self.lo) as usize
    }

    /// Slots of word `w` in which local node `i` has at least one free unit.
    #[inline(always)]
    pub fn free<const W: usize, const UNIT: bool>(&self, i: usize, w: usize) -> u64 {
        if UNIT {
            self.levels[i * W + w]
        } else {
            self.levels[self.base[i] as usize * W + w]
        }
    }

    /// Uses one unit of local node `i` in every slot of `mask` (word `w`). Every slot of `mask`
    /// must be free (a subset of [`free`](Self::free)).
    #[inline(always)]
    pub fn take<const W: usize, const UNIT: bool>(&mut self, i: usize, w: usize, mask: u64) {
        if UNIT {
            debug_assert_eq!(self.levels[i * W + w] & mask, mask);
            self.levels[i * W + w] &= !mask;
        } else {
            let first = self.base[i] as usize;
            let mut rest = mask;
            for k in (0..usize::from(self.cap[i])).rev() {
                let slot = &mut self.levels[(first + k) * W + w];
                let hit = rest & *slot;
                *slot &= !hit;
                rest &= !hit;
            }
            debug_assert_eq!(rest, 0, "took a unit that was not free");
        }
    }

    /// Returns slots of word `w` of local node `i` (unit links only; runtime width).
    pub fn give_back_dyn(&mut self, i: usize, w: usize, mask: u64) {
        debug_assert!(self.is_unit());
        self.levels[i * self.words + w] |= mask;
    }

    /// Marks slots of word `w` of local node `i` used (unit links only; runtime width). Slots
    /// already used stay used.
    pub fn take_dyn(&mut self, i: usize, w: usize, mask: u64) {
        debug_assert!(self.is_unit());
        self.levels[i * self.words + w] &= !mask;
    }

    /// The bitmaps of unit-link nodes, indexed by `local node * words + word`.
    #[inline]
    pub(crate) fn unit_words_mut(&mut self) -> &mut [u64] {
        debug_assert!(self.is_unit());
        &mut self.levels
    }

    /// Words per batch.
    #[inline]
    pub fn words(&self) -> usize {
        self.words
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_take_and_give_back_round_trip() {
        let mut b = SlotBitmaps::new(10, 4, 1, None);
        let i = b.local(12);
        b.take::<1, true>(i, 0, 0b0110);
        assert_eq!(b.free::<1, true>(i, 0), !0b0110);
        b.give_back_dyn(i, 0, 0b0100);
        assert_eq!(b.free::<1, true>(i, 0), !0b0010);
    }

    #[test]
    fn two_unit_node_stays_free_until_both_units_taken() {
        let mut b = SlotBitmaps::new(0, 2, 2, Some(&[2, 1]));
        assert!(!b.is_unit());
        b.take::<2, false>(0, 1, 0b1);
        assert_eq!(b.free::<2, false>(0, 1) & 1, 1, "one unit left");
        b.take::<2, false>(0, 1, 0b1);
        assert_eq!(b.free::<2, false>(0, 1) & 1, 0, "both units used");
        assert_eq!(b.free::<2, false>(1, 1), !0, "other node untouched");
    }
}
