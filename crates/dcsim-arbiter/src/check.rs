//! An independent schedule checker.
//!
//! It shares no code with the allocators: it counts uses per `(slot, node)` in hash maps instead
//! of bitmaps, and tracks demanded versus allocated slots per pair. Feed it demands and
//! allocations in time order (the demands available before a batch, then that batch's
//! allocations) and it also checks causality: no pair is ever allocated more than it has
//! demanded so far.

use std::collections::HashMap;

use crate::types::{Allocation, Demand, NodeId};

/// A rule the schedule breaks.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleViolation {
    /// A node outside `0..nodes`, or a pair with the same source and destination.
    #[error("bad pair {src:?} -> {dst:?}")]
    BadPair {
        /// Source.
        src: NodeId,
        /// Destination.
        dst: NodeId,
    },
    /// A source sends more packets in one slot than it has unit links.
    #[error("node {node:?} sends {uses} packets in slot {slot} with {links} link(s)")]
    SourceOverbooked {
        /// The slot.
        slot: u64,
        /// The source.
        node: NodeId,
        /// Packets it sends in the slot.
        uses: u32,
        /// Its unit links.
        links: u16,
    },
    /// A destination receives more packets in one slot than it has unit links.
    #[error("node {node:?} receives {uses} packets in slot {slot} with {links} link(s)")]
    DestinationOverbooked {
        /// The slot.
        slot: u64,
        /// The destination.
        node: NodeId,
        /// Packets it receives in the slot.
        uses: u32,
        /// Its unit links.
        links: u16,
    },
    /// A pair got more slots than it had asked for up to that point.
    #[error("pair {src:?} -> {dst:?} allocated {allocated} slots but demanded only {demanded}")]
    OverAllocated {
        /// Source.
        src: NodeId,
        /// Destination.
        dst: NodeId,
        /// Slots demanded so far.
        demanded: u64,
        /// Slots allocated so far.
        allocated: u64,
    },
}

/// Incremental checker of a schedule; see the module docs.
#[derive(Clone, Debug, Default)]
pub struct ScheduleChecker {
    nodes: u32,
    links: Vec<u16>,
    tx: HashMap<(u64, u32), u32>,
    rx: HashMap<(u64, u32), u32>,
    /// Per pair: (demanded, allocated).
    pairs: HashMap<(u32, u32), (u64, u64)>,
    demanded: u64,
    allocated: u64,
}

impl ScheduleChecker {
    /// A checker for `nodes` nodes with the given unit links per node (empty: one each).
    pub fn new(nodes: u32, links: &[u16]) -> Self {
        Self {
            nodes,
            links: links.to_vec(),
            ..Default::default()
        }
    }

    /// Records a demand that is available to the allocator from now on.
    pub fn demand(&mut self, d: Demand) -> Result<(), ScheduleViolation> {
        self.pair_ok(d.src, d.dst)?;
        self.pairs.entry((d.src.0, d.dst.0)).or_default().0 += u64::from(d.slots);
        self.demanded += u64::from(d.slots);
        Ok(())
    }

    /// Records and checks one allocation.
    pub fn allocation(&mut self, a: Allocation) -> Result<(), ScheduleViolation> {
        self.pair_ok(a.src, a.dst)?;
        let links = self.links_of(a.src);
        let tx = self.tx.entry((a.slot.0, a.src.0)).or_default();
        *tx += 1;
        if *tx > u32::from(links) {
            return Err(ScheduleViolation::SourceOverbooked {
                slot: a.slot.0,
                node: a.src,
                uses: *tx,
                links,
            });
        }
        let links = self.links_of(a.dst);
        let rx = self.rx.entry((a.slot.0, a.dst.0)).or_default();
        *rx += 1;
        if *rx > u32::from(links) {
            return Err(ScheduleViolation::DestinationOverbooked {
                slot: a.slot.0,
                node: a.dst,
                uses: *rx,
                links,
            });
        }
        let pair = self.pairs.entry((a.src.0, a.dst.0)).or_default();
        pair.1 += 1;
        if pair.1 > pair.0 {
            return Err(ScheduleViolation::OverAllocated {
                src: a.src,
                dst: a.dst,
                demanded: pair.0,
                allocated: pair.1,
            });
        }
        self.allocated += 1;
        Ok(())
    }

    /// Total slots demanded so far.
    pub fn demanded(&self) -> u64 {
        self.demanded
    }

    /// Total slots allocated so far.
    pub fn allocated(&self) -> u64 {
        self.allocated
    }

    /// Demanded minus allocated: what is still waiting.
    pub fn unserved(&self) -> u64 {
        self.demanded - self.allocated
    }

    /// Slots allocated to one pair so far.
    pub fn allocated_to(&self, src: NodeId, dst: NodeId) -> u64 {
        self.pairs.get(&(src.0, dst.0)).map_or(0, |p| p.1)
    }

    fn links_of(&self, n: NodeId) -> u16 {
        self.links.get(n.index()).copied().unwrap_or(1)
    }

    fn pair_ok(&self, src: NodeId, dst: NodeId) -> Result<(), ScheduleViolation> {
        if src.0 >= self.nodes || dst.0 >= self.nodes || src == dst {
            return Err(ScheduleViolation::BadPair { src, dst });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Timeslot;

    fn alloc(slot: u64, src: u32, dst: u32) -> Allocation {
        Allocation {
            slot: Timeslot(slot),
            src: NodeId(src),
            dst: NodeId(dst),
        }
    }

    #[test]
    fn checker_catches_double_booked_destination() {
        let mut c = ScheduleChecker::new(4, &[]);
        c.demand(Demand {
            src: NodeId(0),
            dst: NodeId(2),
            slots: 1,
        })
        .unwrap();
        c.demand(Demand {
            src: NodeId(1),
            dst: NodeId(2),
            slots: 1,
        })
        .unwrap();
        c.allocation(alloc(5, 0, 2)).unwrap();
        let err = c.allocation(alloc(5, 1, 2)).unwrap_err();
        assert!(matches!(
            err,
            ScheduleViolation::DestinationOverbooked { slot: 5, .. }
        ));
    }

    #[test]
    fn checker_catches_double_booked_source_and_overallocation() {
        let mut c = ScheduleChecker::new(4, &[]);
        c.demand(Demand {
            src: NodeId(0),
            dst: NodeId(2),
            slots: 1,
        })
        .unwrap();
        c.demand(Demand {
            src: NodeId(0),
            dst: NodeId(3),
            slots: 1,
        })
        .unwrap();
        c.allocation(alloc(1, 0, 2)).unwrap();
        assert!(matches!(
            c.allocation(alloc(1, 0, 3)),
            Err(ScheduleViolation::SourceOverbooked { .. })
        ));
        assert!(matches!(
            c.allocation(alloc(2, 0, 2)),
            Err(ScheduleViolation::OverAllocated { .. })
        ));
    }

    #[test]
    fn checker_allows_two_packets_on_two_links() {
        let mut c = ScheduleChecker::new(3, &[1, 1, 2]);
        for s in 0..2 {
            c.demand(Demand {
                src: NodeId(s),
                dst: NodeId(2),
                slots: 1,
            })
            .unwrap();
            c.allocation(alloc(0, s, 2)).unwrap();
        }
        assert_eq!(c.unserved(), 0);
    }
}
