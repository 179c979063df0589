//! No heap allocation per packet or per event in steady state: a counting global allocator
//! (`stats_alloc`) watches the second half of DCTCP runs, after the pool, queues and link
//! FIFOs have grown. A binary of its own, because the global allocator applies to the whole
//! binary.

use std::alloc::System;

use dcsim::engine::Time;
use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

fn steady_state_allocations(text: &str, warm: Time) -> (usize, u64) {
    let spec = dcsim::ScenarioSpec::parse(text, "alloc", &[]).unwrap();
    let mut w = dcsim::World::new(spec.build("alloc").unwrap()).unwrap();
    w.run_until(warm, &mut |_| {});
    let hops = w.net().hops();
    let region = Region::new(GLOBAL);
    w.run_until(Time::MAX, &mut |_| {});
    let s = region.change();
    (s.allocations + s.reallocations, w.net().hops() - hops)
}

/// Buffers (link FIFOs, queues, the start times of a FIFO port's waiting packets, the
/// out-of-order ranges of a receiver that saw a loss) may still grow after warm-up when one
/// of them reaches a new peak: each doubles at most a few times, so this is a count per port
/// and per flow, not per packet (traced: every allocation in these runs is such a first
/// growth; measured 0, 13 and 13). An allocation per packet or per event would show as one
/// or more per packet-hop, so a bound of one per 2,000 hops catches it with a wide margin
/// while leaving room for a few more buffers.
fn check(name: &str, text: &str, warm: Time) {
    let (allocs, hops) = steady_state_allocations(text, warm);
    eprintln!("{name}: {allocs} allocations over {hops} packet-hops after warm-up");
    assert!(
        hops > 50_000,
        "{name}: the measured part must carry traffic ({hops} hops)"
    );
    assert!(
        allocs as u64 * 2_000 < hops,
        "{name}: {allocs} allocations over {hops} packet-hops"
    );
}

/// One test function: the allocator's counters are process-wide, so the scenarios must not
/// run concurrently.
#[test]
fn steady_state_allocates_nothing_per_packet() {
    check(
        "dumbbell",
        "[sim]\nduration = \"40ms\"\n[topology]\nkind = \"dumbbell\"\npairs = 2\n[transport]\nkind = \"tcp\"\ncc = \"dctcp\"\n[[flows]]\nsrc = 0\ndst = 2\n[[flows]]\nsrc = 1\ndst = 3\n",
        Time(20_000_000_000),
    );
    check(
        "fat-tree",
        "[sim]\nduration = \"6ms\"\n[topology]\nkind = \"fat-tree\"\nk = 4\n[transport]\nkind = \"tcp\"\ncc = \"dctcp\"\n[[generators]]\npattern = { kind = \"permutation\" }\n",
        Time(3_000_000_000),
    );
    check(
        "reno-red",
        "[sim]\nduration = \"80ms\"\n[topology]\nkind = \"star\"\nhosts = 9\n[queue]\nkind = \"red\"\nbuffer = \"100pkts\"\nmin_th = \"10pkts\"\nmax_th = \"30pkts\"\necn = false\n[transport]\nkind = \"tcp\"\ncc = \"reno\"\n[[generators]]\npattern = { kind = \"incast\", receiver = 0, size = \"inf\" }\n",
        Time(40_000_000_000),
    );
}
