//! Path-assignment speed: how many allocated packets one thread can route per second.
//!
//! The allocator only checks end links; before hosts may send, every packet of a timeslot
//! also needs a spine ([`PathAssigner`]). This measurement routes the timeslots of a real
//! schedule: the serial allocator at offered load [`LOAD`] on the benchmark's own trace, so
//! every slot carries about `0.9 x N` packets, uniformly spread over the ToRs. The Clos is
//! full bisection with square-ish shape: `h = min(64, next power of two >= sqrt(N))` hosts
//! per ToR and as many spines, `ceil(N / h)` ToRs. Routing is timed alone (median of
//! [`BenchConfig::runs`] passes over the same slots); every slot is then checked by
//! [`verify_paths`], untimed, and a violation fails the benchmark.
//!
//! Timeslots are independent, so path assignment spreads over threads by slot: with `k`
//! threads, thread `i` routes slots `i, i + k, ...` with its own [`PathAssigner`]. Each row is
//! measured for every thread count of the benchmark.

use dcsim_arbiter::path::{Clos, Path, PathAssigner, PathError, verify_paths};
use dcsim_arbiter::{MTU_BYTES, NodeId, TIMESLOT_NS};
use serde::{Deserialize, Serialize};

use super::{BenchConfig, BenchError};
use crate::engine::{Architecture, Collect, Engine, EngineConfig};
use crate::trace::Trace;

/// Offered load of the schedule that is routed.
pub const LOAD: f64 = 0.9;
/// Batches allocated before the routed ones (the backlog fills).
const WARMUP_BATCHES: u64 = 16;
/// Batches whose slots are routed (2,048 timeslots at 64-slot batches).
const ROUTED_BATCHES: u64 = 32;

/// Path-assignment speed for one node count.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PathRow {
    /// Hosts.
    pub nodes: u32,
    /// Threads routing slots in parallel.
    pub threads: usize,
    /// The Clos routed on.
    pub clos: Clos,
    /// Timeslots routed per pass.
    pub slots: u64,
    /// Packets routed per pass.
    pub packets: u64,
    /// Of those, packets that cross the spine layer (the rest stay under their ToR).
    pub spine_packets: u64,
    /// Median wall time of a pass, milliseconds.
    pub wall_ms: f64,
    /// Packets routed per wall second, millions.
    pub mpackets_per_s: f64,
    /// The same as allocated throughput: packets per second x 1500 B x 8, in Tbps.
    pub tbps: f64,
    /// Arbiter time of the routed slots / wall time (>= 1: one thread keeps up).
    pub realtime_factor: f64,
}

/// The full-bisection Clos the measurement uses for `nodes` hosts.
pub fn clos_for(nodes: u32) -> Clos {
    let side = f64::from(nodes).sqrt().ceil() as u32;
    let hosts_per_tor = side.next_power_of_two().min(64);
    Clos {
        tors: nodes.div_ceil(hosts_per_tor),
        spines: hosts_per_tor,
        hosts_per_tor,
    }
}

/// Routes the slots of a serial schedule at [`LOAD`] on `trace` with each thread count of
/// `cfg`; see the module docs.
pub(super) fn measure(
    cfg: &BenchConfig,
    trace: &Trace,
    nodes: u32,
) -> Result<Vec<PathRow>, BenchError> {
    let mut ecfg = EngineConfig::new(Architecture::Serial, 1, nodes);
    ecfg.allocator.batch_slots = cfg.batch_slots;
    ecfg.allocator.fairness = cfg.fairness;
    ecfg.collect = Collect::All;
    let engine = Engine::new(ecfg)?;
    let mean = trace.total_slots() as f64 / trace.len().max(1) as f64;
    let scale = mean / (LOAD * f64::from(nodes));
    let batches = WARMUP_BATCHES + ROUTED_BATCHES;
    let out = engine.run(&engine.feed(trace, scale, batches));

    let bs = u64::from(cfg.batch_slots);
    let first = WARMUP_BATCHES * bs;
    let mut slots: Vec<Vec<(NodeId, NodeId)>> = vec![Vec::new(); (ROUTED_BATCHES * bs) as usize];
    for a in out.allocations().filter(|a| a.slot.0 >= first) {
        slots[(a.slot.0 - first) as usize].push((a.src, a.dst));
    }
    let clos = clos_for(nodes);
    let packets: u64 = slots.iter().map(|s| s.len() as u64).sum();
    let arbiter_s = slots.len() as f64 * TIMESLOT_NS as f64 * 1e-9;
    let mut rows = Vec::new();
    for &threads in &cfg.threads {
        let threads = threads.clamp(1, slots.len());
        let mut workers = (0..threads)
            .map(|_| Ok((PathAssigner::new(clos)?, vec![Vec::new(); slots.len()])))
            .collect::<Result<Vec<_>, PathError>>()
            .map_err(|e| BenchError::Config(e.to_string()))?;
        let mut walls = Vec::with_capacity(cfg.runs.max(1));
        for _ in 0..cfg.runs.max(1) {
            let start = std::time::Instant::now();
            std::thread::scope(|sc| {
                let handles: Vec<_> = workers
                    .iter_mut()
                    .enumerate()
                    .map(|(i, (assigner, paths))| {
                        let slots = &slots;
                        sc.spawn(move || -> Result<(), PathError> {
                            for j in (i..slots.len()).step_by(threads) {
                                assigner.assign(&slots[j], &mut paths[j])?;
                            }
                            Ok(())
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .try_for_each(|h| h.join().expect("path worker panicked"))
            })
            .map_err(|e| BenchError::Config(format!("path assignment failed: {e}")))?;
            walls.push(start.elapsed().as_secs_f64());
        }
        walls.sort_by(f64::total_cmp);
        let wall = walls[walls.len() / 2];
        let mut spine_packets = 0;
        for (i, (_, paths)) in workers.iter().enumerate() {
            for j in (i..slots.len()).step_by(threads) {
                verify_paths(&clos, &slots[j], &paths[j])
                    .map_err(|e| BenchError::Config(format!("path assignment is invalid: {e}")))?;
                spine_packets += paths[j]
                    .iter()
                    .filter(|p| matches!(p, Path::Spine(_)))
                    .count() as u64;
            }
        }
        let per_s = packets as f64 / wall;
        rows.push(PathRow {
            nodes,
            threads,
            clos,
            slots: slots.len() as u64,
            packets,
            spine_packets,
            wall_ms: wall * 1e3,
            mpackets_per_s: per_s / 1e6,
            tbps: per_s * (MTU_BYTES * 8) as f64 / 1e12,
            realtime_factor: arbiter_s / wall,
        });
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clos_shapes_are_full_bisection_and_cover_every_node() {
        for (nodes, hosts_per_tor, tors) in [
            (256, 16, 16),
            (1024, 32, 32),
            (4096, 64, 64),
            (3000, 64, 47),
        ] {
            let c = clos_for(nodes);
            assert_eq!(
                (c.hosts_per_tor, c.tors, c.spines),
                (hosts_per_tor, tors, hosts_per_tor)
            );
            assert!(c.hosts() >= nodes);
        }
    }
}
