//! Plain data shared by every part of the arbiter: node and timeslot IDs, demands, grants.

use serde::{Deserialize, Serialize};

/// Bytes in one MTU-sized packet; one timeslot carries exactly one such packet per unit link.
pub const MTU_BYTES: u64 = 1500;
/// Rate of one unit link in bits per second (10 Gbps).
pub const UNIT_LINK_BPS: u64 = 10_000_000_000;
/// Length of one timeslot in nanoseconds: 1500 B x 8 / 10 Gbps = 1.2 us.
pub const TIMESLOT_NS: u64 = MTU_BYTES * 8 * 1_000_000_000 / UNIT_LINK_BPS;
/// Timeslots per bitmap word. A batch is a whole number of words.
pub const SLOTS_PER_WORD: u32 = 64;
/// Largest supported number of nodes. Node IDs are stored as `u16` in the hot structures, and
/// the per-pair state is a dense table of `nodes^2` entries (4 bytes each).
pub const MAX_NODES: u32 = 16_384;

/// An end host (a node of the arbiter), numbered densely from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[repr(transparent)]
pub struct NodeId(pub u32);

impl NodeId {
    /// The ID as an index into per-node arrays.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

/// A timeslot number. Slot `t` covers `[t x 1.2 us, (t + 1) x 1.2 us)` of arbiter time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[repr(transparent)]
pub struct Timeslot(pub u64);

/// A request from `src` to send `slots` MTU-sized packets to `dst`.
///
/// Demands for a pair that already has a backlog add to it (one backlog entry per pair), so
/// splitting a demand into pieces gains a host nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Demand {
    /// Sending host.
    pub src: NodeId,
    /// Receiving host.
    pub dst: NodeId,
    /// Number of timeslots (packets) requested.
    pub slots: u32,
}

/// One packet's allocation: `src` may send one MTU to `dst` in timeslot `slot`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Allocation {
    /// The timeslot.
    pub slot: Timeslot,
    /// Sending host.
    pub src: NodeId,
    /// Receiving host.
    pub dst: NodeId,
}

/// A compact group of allocations for one pair inside one 64-slot word of a batch.
///
/// Bit `i` of [`mask`](Self::mask()) set means: `src` sends to `dst` in slot
/// `batch_first_slot + slot_offset() + i`. This is the form the allocator produces (one record
/// per pair and word instead of one per packet, 16 bytes); [`Grant::slots`] expands it. It is
/// also the natural message to a host: "send to `dst` in these slots".
///
/// The fields are public for dcsim-arbiter-bench (its engines build and read grants in this
/// raw form); [`Grant::new`] and the accessors are the checked interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Grant {
    /// Sending host ([`src()`](Self::src())).
    pub src: u16,
    /// Receiving host ([`dst()`](Self::dst())).
    pub dst: u16,
    /// Index of the 64-slot word inside its batch.
    pub word: u16,
    /// Granted slots of the word ([`mask()`](Self::mask())).
    pub mask: u64,
}

impl Grant {
    /// Filler for preallocated buffers.
    pub(crate) const EMPTY: Self = Self {
        src: 0,
        dst: 0,
        word: 0,
        mask: 0,
    };

    /// Builds a grant; `word` is the index of the 64-slot word inside its batch.
    ///
    /// # Panics
    /// If a node ID or the word index does not fit in 16 bits (see [`MAX_NODES`]).
    pub fn new(src: NodeId, dst: NodeId, word: u32, mask: u64) -> Self {
        let narrow = |v: u32| u16::try_from(v).expect("node ID or word index above 65535");
        Self {
            src: narrow(src.0),
            dst: narrow(dst.0),
            word: narrow(word),
            mask,
        }
    }

    /// Sending host.
    #[inline]
    pub fn src(&self) -> NodeId {
        NodeId(u32::from(self.src))
    }

    /// Receiving host.
    #[inline]
    pub fn dst(&self) -> NodeId {
        NodeId(u32::from(self.dst))
    }

    /// Offset of bit 0 of [`mask`](Self::mask) from the first slot of the batch.
    #[inline]
    pub fn slot_offset(&self) -> u64 {
        u64::from(self.word) * u64::from(SLOTS_PER_WORD)
    }

    /// Granted slots of this word as a bitmask.
    #[inline]
    pub fn mask(&self) -> u64 {
        self.mask
    }

    /// Number of granted slots (packets).
    #[inline]
    pub fn count(&self) -> u32 {
        self.mask.count_ones()
    }

    /// The granted timeslots in increasing order, for a batch that starts at `batch_first`.
    pub fn slots(&self, batch_first: Timeslot) -> impl Iterator<Item = Timeslot> + use<> {
        let base = batch_first.0 + self.slot_offset();
        BitIter(self.mask).map(move |bit| Timeslot(base + u64::from(bit)))
    }
}

/// Iterates the positions of the set bits of a word, lowest first.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BitIter(pub(crate) u64);

impl Iterator for BitIter {
    type Item = u32;

    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.0 == 0 {
            return None;
        }
        let bit = self.0.trailing_zeros();
        self.0 &= self.0 - 1;
        Some(bit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeslot_is_1200_ns() {
        assert_eq!(TIMESLOT_NS, 1200);
    }

    #[test]
    fn grant_is_16_bytes() {
        assert_eq!(size_of::<Grant>(), 16);
    }

    #[test]
    fn grant_slots_expand_mask_in_order() {
        let g = Grant::new(NodeId(3), NodeId(7), 1, 0b1010_0001);
        let slots: Vec<u64> = g.slots(Timeslot(1000)).map(|t| t.0).collect();
        assert_eq!(slots, vec![1064, 1069, 1071]);
        assert_eq!(g.count(), 3);
    }
}
