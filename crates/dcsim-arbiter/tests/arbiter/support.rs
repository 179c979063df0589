//! Shared helpers: a reference model of outstanding demand and a maximality check.

use std::collections::BTreeMap;

use dcsim_arbiter::{Allocation, Demand};

/// Per pair: slots demanded minus slots allocated so far.
#[derive(Default)]
pub struct Outstanding(pub BTreeMap<(u32, u32), u64>);

impl Outstanding {
    pub fn demand(&mut self, d: Demand) {
        *self.0.entry((d.src.0, d.dst.0)).or_default() += u64::from(d.slots);
    }

    pub fn allocate(&mut self, a: &Allocation) {
        let v = self
            .0
            .get_mut(&(a.src.0, a.dst.0))
            .expect("allocated a pair never demanded");
        *v = v.checked_sub(1).expect("allocated beyond demand");
    }

    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }
}

/// Checks that a batch's allocation is maximal: every pair still waiting after it has, in every
/// slot of the batch, its source or its destination busy on all of its links.
pub fn assert_maximal(
    first_slot: u64,
    batch_slots: u32,
    links: &[u16],
    allocations: &[Allocation],
    waiting: &Outstanding,
) {
    let cap = |n: u32| u32::from(links.get(n as usize).copied().unwrap_or(1));
    let mut tx: BTreeMap<(u64, u32), u32> = BTreeMap::new();
    let mut rx: BTreeMap<(u64, u32), u32> = BTreeMap::new();
    for a in allocations {
        *tx.entry((a.slot.0, a.src.0)).or_default() += 1;
        *rx.entry((a.slot.0, a.dst.0)).or_default() += 1;
    }
    for (&(s, d), &left) in &waiting.0 {
        if left == 0 {
            continue;
        }
        for slot in first_slot..first_slot + u64::from(batch_slots) {
            let src_full = tx.get(&(slot, s)).copied().unwrap_or(0) >= cap(s);
            let dst_full = rx.get(&(slot, d)).copied().unwrap_or(0) >= cap(d);
            assert!(
                src_full || dst_full,
                "pair {s} -> {d} waits with {left} slots but slot {slot} is free at both ends"
            );
        }
    }
}
