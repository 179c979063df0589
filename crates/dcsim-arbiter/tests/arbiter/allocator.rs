//! Behaviour of the deterministic allocator: fairness, conservation, maximality, determinism.

use dcsim_arbiter::check::ScheduleChecker;
use dcsim_arbiter::{Allocation, Allocator, AllocatorConfig, Demand, Fairness, NodeId};
use proptest::prelude::*;

use crate::support::{Outstanding, assert_maximal};

fn demand(src: u32, dst: u32, slots: u32) -> Demand {
    Demand {
        src: NodeId(src),
        dst: NodeId(dst),
        slots,
    }
}

fn allocator(nodes: u32, fairness: Fairness) -> Allocator {
    let mut c = AllocatorConfig::new(nodes);
    c.fairness = fairness;
    Allocator::new(&c).unwrap()
}

/// Slots granted to `src -> dst` in one batch, in order.
fn slots_of(batch: &[Allocation], src: u32, dst: u32) -> Vec<u64> {
    let mut v: Vec<u64> = batch
        .iter()
        .filter(|a| a.src.0 == src && a.dst.0 == dst)
        .map(|a| a.slot.0)
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn batch_mode_two_pairs_contending_for_one_destination_alternate_by_batch() {
    let mut a = allocator(4, Fairness::Batch);
    a.submit(demand(1, 2, 640)).unwrap();
    a.submit(demand(3, 2, 640)).unwrap();
    for b in 0..10u64 {
        let batch: Vec<Allocation> = a.allocate_batch().iter().collect();
        let (first, second) = (slots_of(&batch, 1, 2).len(), slots_of(&batch, 3, 2).len());
        // Least recently allocated first, and a batch-mode pair takes all it can.
        let expect = if b % 2 == 0 { (64, 0) } else { (0, 64) };
        assert_eq!((first, second), expect, "batch {b}");
    }
}

#[test]
fn round_robin_two_pairs_contending_for_one_destination_alternate_by_slot() {
    let rr = Fairness::RoundRobin {
        quantum_slots: 1,
        rounds: 64,
    };
    let mut a = allocator(4, rr);
    a.submit(demand(1, 2, 100)).unwrap();
    a.submit(demand(3, 2, 100)).unwrap();
    let batch: Vec<Allocation> = a.allocate_batch().iter().collect();
    assert_eq!(
        slots_of(&batch, 1, 2),
        (0..64).step_by(2).collect::<Vec<_>>()
    );
    assert_eq!(
        slots_of(&batch, 3, 2),
        (1..64).step_by(2).collect::<Vec<_>>()
    );
}

#[test]
fn small_demand_is_not_starved_by_bulk_demand() {
    for (fairness, deadline) in [
        (Fairness::Batch, 128),
        (
            Fairness::RoundRobin {
                quantum_slots: 1,
                rounds: 64,
            },
            4,
        ),
    ] {
        let mut a = allocator(4, fairness);
        a.submit(demand(1, 2, 100)).unwrap();
        a.submit(demand(3, 2, 2)).unwrap();
        let mut small = Vec::new();
        let mut bulk_done = 0;
        for _ in 0..3 {
            let batch: Vec<Allocation> = a.allocate_batch().iter().collect();
            small.extend(slots_of(&batch, 3, 2));
            bulk_done = bulk_done.max(slots_of(&batch, 1, 2).last().copied().unwrap_or(0));
        }
        assert_eq!(small.len(), 2, "{fairness:?}");
        assert!(
            small[1] < deadline,
            "{fairness:?}: small demand served at {small:?}"
        );
        assert!(
            small[1] < bulk_done,
            "{fairness:?}: small demand waited for the bulk one"
        );
    }
}

#[test]
fn every_demand_is_served_below_capacity_and_nothing_beyond_demand() {
    // 32 nodes at about 80 % load for 50 batches, then 50 batches to drain.
    let mut a = allocator(32, Fairness::Batch);
    let mut checker = ScheduleChecker::new(32, &[]);
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for b in 0..100 {
        if b < 50 {
            // 32 nodes x 64 slots x 0.8 / 10 slots per demand ~ 164 demands per batch.
            for _ in 0..164 {
                let s = (next() % 32) as u32;
                let d = (s + 1 + (next() % 31) as u32) % 32;
                let dm = demand(s, d, 1 + (next() % 19) as u32);
                a.submit(dm).unwrap();
                checker.demand(dm).unwrap();
            }
        }
        for alloc in a.allocate_batch().iter() {
            checker.allocation(alloc).unwrap();
        }
    }
    assert_eq!(checker.unserved(), 0);
    assert_eq!(a.outstanding_slots(), 0);
    assert_eq!(a.backlogged_pairs(), 0);
}

#[test]
fn same_demands_give_the_same_schedule() {
    let run = || {
        let mut a = allocator(
            64,
            Fairness::RoundRobin {
                quantum_slots: 4,
                rounds: 2,
            },
        );
        let mut out = Vec::new();
        for b in 0..20u32 {
            for i in 0..200u32 {
                let s = (i * 7 + b * 13) % 64;
                a.submit(demand(s, (s + 1 + (i * b) % 63) % 64, 1 + i % 17))
                    .unwrap();
            }
            out.extend(a.allocate_batch().grants().to_vec());
        }
        out
    };
    assert_eq!(run(), run());
}

/// Demands `(src, dst, slots)` submitted before each batch.
type Batches = Vec<Vec<(u32, u32, u32)>>;

/// A random allocator configuration (nodes, batch slots, links, fairness) and a few batches
/// of random demands.
fn scenario() -> impl Strategy<Value = (u32, u32, Vec<u16>, Fairness, Batches)> {
    (
        2u32..24,
        prop_oneof![Just(64u32), Just(128)],
        any::<bool>(),
        0u32..3,
    )
        .prop_flat_map(|(nodes, batch_slots, multi, mode)| {
            let links = if multi {
                prop::collection::vec(1u16..4, nodes as usize).boxed()
            } else {
                Just(Vec::new()).boxed()
            };
            let fairness = match mode {
                0 => Fairness::Batch,
                1 => Fairness::RoundRobin {
                    quantum_slots: 1,
                    rounds: 3,
                },
                _ => Fairness::RoundRobin {
                    quantum_slots: 5,
                    rounds: 1,
                },
            };
            let demands = prop::collection::vec(
                prop::collection::vec((0..nodes, 0..nodes, 1u32..150), 0..40),
                1..6,
            );
            (
                Just(nodes),
                Just(batch_slots),
                links,
                Just(fairness),
                demands,
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Valid, maximal, conserving: every batch passes the independent checker, leaves no
    /// waiting pair with a slot free at both ends, and all demand is served after a drain.
    #[test]
    fn random_demands_give_valid_maximal_schedules(
        (nodes, batch_slots, links, fairness, batches) in scenario(),
        portable_pass in any::<bool>(),
    ) {
        let cfg = AllocatorConfig { nodes, batch_slots, links: links.clone(), fairness, portable_pass };
        let mut a = Allocator::new(&cfg).unwrap();
        let mut checker = ScheduleChecker::new(nodes, &links);
        let mut model = Outstanding::default();
        // Drain until nothing is outstanding. Maximality bounds the drain: every batch that
        // starts with demand left serves at least one slot of it, so it ends within as many
        // batches as slots were demanded. (A fixed drain is too short for a bulk pair: up to
        // 30,000 slots between two nodes need 470 batches.)
        let demanded: u64 = batches
            .iter()
            .flatten()
            .filter(|&&(s, d, _)| s != d)
            .map(|&(_, _, n)| u64::from(n))
            .sum();
        let mut b = 0;
        while b < batches.len() || a.outstanding_slots() > 0 {
            prop_assert!(b as u64 <= batches.len() as u64 + demanded, "drain does not end");
            for &(s, d, n) in batches.get(b).map_or(&[][..], |v| &v[..]) {
                if s == d {
                    continue;
                }
                let dm = demand(s, d, n);
                a.submit(dm).unwrap();
                checker.demand(dm).unwrap();
                model.demand(dm);
            }
            let out = a.allocate_batch();
            let allocs: Vec<Allocation> = out.iter().collect();
            for x in &allocs {
                checker.allocation(*x).unwrap();
                model.allocate(x);
            }
            assert_maximal(out.first_slot().0, batch_slots, &links, &allocs, &model);
            prop_assert_eq!(a.outstanding_slots(), model.total());
            b += 1;
        }
        prop_assert_eq!(checker.unserved(), 0);
    }
}
