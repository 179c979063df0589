//! The serial engine: the public [`Allocator`] fed batch by batch.

use std::time::Instant;

use dcsim_arbiter::Allocator;

use super::{Collector, EngineConfig};
use crate::trace::Feed;

/// Runs the deterministic allocator over `feed` on the calling thread.
pub(super) fn run(cfg: &EngineConfig, feed: &Feed) -> Collector {
    let mut alloc = Allocator::new(&cfg.allocator).expect("validated by Engine::new");
    let mut col = Collector::new(cfg.collect, feed.batches);
    let part = &feed.parts[0];
    let start = Instant::now();
    for b in 0..feed.batches {
        for e in part.window(b) {
            alloc
                .submit_trusted(e.src, e.dst, e.slots)
                .expect("trace demands per pair stay below 2^31 slots");
        }
        let out = alloc.allocate_batch();
        col.record(b, out.grants(), out.allocated_slots());
    }
    col.wall = start.elapsed();
    col
}
