//! Every architecture produces a valid schedule that serves all demand.

use dcsim_arbiter::Timeslot;
use dcsim_arbiter::check::ScheduleChecker;
use dcsim_arbiter_bench::{Architecture, Collect, Engine, EngineConfig, RunOutput, bench};

/// Runs `arch` on a random trace at `load` for `arrive` batches plus `drain` batches without
/// arrivals, checks every batch with the independent checker, checks that everything was
/// served, and returns the output.
fn stress(arch: Architecture, threads: usize, nodes: u32, load: f64, seed: u64) -> RunOutput {
    let (out, unserved) = run_checked(arch, threads, nodes, load, seed);
    assert_eq!(unserved, 0, "{arch} x{threads}: demand left after draining");
    out
}

/// [`stress`] without the final conservation check (for overload).
fn stress_no_drain_check(
    arch: Architecture,
    threads: usize,
    nodes: u32,
    load: f64,
    seed: u64,
) -> RunOutput {
    run_checked(arch, threads, nodes, load, seed).0
}

fn run_checked(
    arch: Architecture,
    threads: usize,
    nodes: u32,
    load: f64,
    seed: u64,
) -> (RunOutput, u64) {
    let (arrive, drain) = (40u64, 40u64);
    let mean = 10.0;
    let demands = (f64::from(nodes) * load * arrive as f64 * 64.0 / mean) as usize;
    let trace = bench::synthetic_trace(nodes, demands, mean, 3.0, seed);
    let mut cfg = EngineConfig::new(arch, threads, nodes);
    cfg.collect = Collect::All;
    cfg.seed = seed;
    let engine = Engine::new(cfg).unwrap();
    let scale = (trace.total_slots() as f64 / trace.len() as f64) / (load * f64::from(nodes));
    let feed = engine.feed(&trace, scale, arrive + engine.lead() + drain);
    let out = engine.run(&feed);
    let mut checker = ScheduleChecker::new(nodes, &[]);
    let mut grants = out.grants.iter().peekable();
    let early = engine.early_use();
    for b in 0..feed.batches() {
        // Demands become usable `early` batches before their feed batch (pipelined only).
        let window = |b: u64| feed.demands_at(b).collect::<Vec<_>>();
        let available = if b == 0 {
            (0..=early).flat_map(window).collect()
        } else {
            window(b + early)
        };
        for d in available {
            checker.demand(d).unwrap();
        }
        while let Some(&&(gb, g)) = grants.peek() {
            if gb != b {
                break;
            }
            for slot in g.slots(Timeslot(b * 64)) {
                let a = dcsim_arbiter::Allocation {
                    slot,
                    src: g.src(),
                    dst: g.dst(),
                };
                checker
                    .allocation(a)
                    .unwrap_or_else(|e| panic!("{arch} x{threads}: {e}"));
            }
            grants.next();
        }
    }
    assert!(
        grants.next().is_none(),
        "grants for batches outside the run"
    );
    assert_eq!(
        checker.allocated(),
        out.allocated_slots(),
        "{arch}: counts match grants"
    );
    assert!(checker.demanded() > 0);
    let unserved = checker.unserved();
    (out, unserved)
}

#[test]
fn every_architecture_is_valid_and_serves_everything() {
    for arch in Architecture::ALL {
        for threads in [1, 2, 3] {
            stress(arch, threads, 64, 0.7, 11 + threads as u64);
        }
    }
}

#[test]
fn more_threads_than_cores_and_overload_stay_valid() {
    // Six threads: two shuffle triples; the others run six workers on however many cores.
    // Load 1.1 keeps every engine saturated, so conflicts and remainders are frequent.
    for arch in [
        Architecture::Pipelined,
        Architecture::Parallel,
        Architecture::Shuffle,
        Architecture::Ring,
    ] {
        let out = stress_no_drain_check(arch, 6, 96, 1.1, 5);
        assert!(out.allocated_slots() > 0);
    }
}

#[test]
fn deterministic_engines_repeat_their_schedule() {
    // Pipelined merges demand through a race and is not expected to repeat itself.
    for arch in [
        Architecture::Serial,
        Architecture::Parallel,
        Architecture::Shuffle,
        Architecture::Ring,
    ] {
        let a = stress(arch, 2, 48, 0.8, 3);
        let b = stress(arch, 2, 48, 0.8, 3);
        assert_eq!(a.grants, b.grants, "{arch}");
    }
}
