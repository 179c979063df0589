//! Path assignment on allocator output: every timeslot routes without sharing a link.

use dcsim_arbiter::{
    Allocator, AllocatorConfig, Clos, Demand, NodeId, Path, PathAssigner, verify_paths,
};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn allocated_timeslots_route_on_a_full_bisection_clos(
        tors in 1u32..9,
        hosts_per_tor in 1u32..9,
        demands in prop::collection::vec((0u32..1000, 0u32..1000, 1u32..40), 1..120),
    ) {
        let clos = Clos { tors, spines: hosts_per_tor, hosts_per_tor };
        let n = clos.hosts();
        prop_assume!(n >= 2);
        let mut a = Allocator::new(&AllocatorConfig::new(n)).unwrap();
        for (s, d, k) in demands {
            let (s, d) = (s % n, d % n);
            if s != d {
                a.submit(Demand { src: NodeId(s), dst: NodeId(d), slots: k }).unwrap();
            }
        }
        let mut assigner = PathAssigner::new(clos).unwrap();
        let mut paths = Vec::new();
        for _ in 0..4 {
            for slot in a.allocate_batch().by_slot() {
                assigner.assign(&slot, &mut paths).unwrap();
                verify_paths(&clos, &slot, &paths).unwrap();
            }
        }
    }
}

#[test]
fn permutation_traffic_uses_every_spine_of_a_tor() {
    // 4 ToRs x 8 hosts, 8 spines: host h sends to h + 8 (every host of ToR t to ToR t + 1).
    let clos = Clos {
        tors: 4,
        spines: 8,
        hosts_per_tor: 8,
    };
    let packets: Vec<_> = (0..32).map(|h| (NodeId(h), NodeId((h + 8) % 32))).collect();
    let mut paths = Vec::new();
    PathAssigner::new(clos)
        .unwrap()
        .assign(&packets, &mut paths)
        .unwrap();
    verify_paths(&clos, &packets, &paths).unwrap();
    let mut spines: Vec<u32> = paths[..8]
        .iter()
        .map(|p| match p {
            Path::Spine(s) => *s,
            Path::Local => panic!("inter-ToR packet routed locally"),
        })
        .collect();
    spines.sort_unstable();
    assert_eq!(spines, (0..8).collect::<Vec<_>>());
}
