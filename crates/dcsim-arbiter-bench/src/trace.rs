//! Recorded demand streams and their replay plans.
//!
//! A [`Trace`] is a sequence of demands with nondecreasing arrival times in abstract *trace
//! time*. A [`Feed`] replays it at a chosen speed: `scale` timeslots per unit of trace time,
//! so one generated trace serves every offered load (a Poisson process stays Poisson when its
//! time axis is stretched). The feed assigns each demand to the first batch that may use it and
//! splits the stream by source range, one part per engine thread, before any timing starts:
//! that partitioning models a NIC steering control packets to cores by source, and keeps the
//! generator's and the splitter's work out of the allocator's measured time.

use std::ops::Range;

use dcsim_arbiter::{Demand, DemandError, NodeId};

/// One demand of a trace in compact form (8 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TraceEntry {
    pub(crate) src: u16,
    pub(crate) dst: u16,
    pub(crate) slots: u32,
}

/// A sequence of demands with nondecreasing arrival times; see the module docs.
#[derive(Clone, Debug, Default)]
pub struct Trace {
    nodes: u32,
    times: Vec<f64>,
    entries: Vec<TraceEntry>,
}

impl Trace {
    /// An empty trace over `nodes` nodes.
    pub fn new(nodes: u32) -> Self {
        Self {
            nodes,
            ..Default::default()
        }
    }

    /// Appends a demand arriving at trace time `at` (not earlier than the previous one).
    ///
    /// # Panics
    /// If `at` is earlier than the previous arrival or not finite.
    pub fn push(&mut self, at: f64, demand: Demand) -> Result<(), DemandError> {
        assert!(at.is_finite(), "arrival time must be finite");
        assert!(
            self.times.last().is_none_or(|&t| t <= at),
            "arrivals must not go back in time"
        );
        let (src, dst) = (demand.src.0, demand.dst.0);
        if src >= self.nodes || dst >= self.nodes || src > u32::from(u16::MAX) {
            return Err(DemandError::UnknownNode {
                src,
                dst,
                nodes: self.nodes,
            });
        }
        if src == dst {
            return Err(DemandError::SelfLoop { node: src });
        }
        self.times.push(at);
        self.entries.push(TraceEntry {
            src: src as u16,
            dst: dst as u16,
            slots: demand.slots,
        });
        Ok(())
    }

    /// Number of nodes.
    pub fn nodes(&self) -> u32 {
        self.nodes
    }

    /// Number of demands.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the trace has no demands.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Sum of all demands' slots.
    pub fn total_slots(&self) -> u64 {
        self.entries.iter().map(|e| u64::from(e.slots)).sum()
    }

    /// Arrival time of the last demand (0 for an empty trace).
    pub fn duration(&self) -> f64 {
        self.times.last().copied().unwrap_or(0.0)
    }

    /// Demand `i` and its arrival time.
    pub fn get(&self, i: usize) -> (f64, Demand) {
        let e = self.entries[i];
        let d = Demand {
            src: NodeId(e.src.into()),
            dst: NodeId(e.dst.into()),
            slots: e.slots,
        };
        (self.times[i], d)
    }

    pub(crate) fn from_parts(nodes: u32, times: Vec<f64>, entries: Vec<TraceEntry>) -> Self {
        debug_assert_eq!(times.len(), entries.len());
        Self {
            nodes,
            times,
            entries,
        }
    }

    pub(crate) fn times(&self) -> &[f64] {
        &self.times
    }

    pub(crate) fn entries(&self) -> &[TraceEntry] {
        &self.entries
    }
}

/// A trace cut into batches and source ranges, ready for an engine; see the module docs.
///
/// Demand `i` arrives in timeslot `t = times[i] x scale` and is first offered to the allocator
/// for batch `floor(t / batch_slots) + lead`: `lead` is the number of batches between a
/// demand's arrival and the first batch that may use it (one batch to collect arrivals, plus
/// the engine's batches in flight). Demands whose batch is `batches` or later are left out.
#[derive(Clone, Debug)]
pub struct Feed {
    pub(crate) batch_slots: u32,
    pub(crate) batches: u64,
    pub(crate) lead: u64,
    pub(crate) scale: f64,
    pub(crate) groups: Vec<Range<u32>>,
    pub(crate) parts: Vec<FeedPart>,
    pub(crate) demanded_per_batch: Vec<u64>,
}

/// The demands of one source range, grouped by first batch.
#[derive(Clone, Debug, Default)]
pub(crate) struct FeedPart {
    pub(crate) entries: Vec<TraceEntry>,
    /// `entries[windows[b]..windows[b + 1]]` become available at batch `b`.
    pub(crate) windows: Vec<usize>,
}

impl FeedPart {
    /// Demands that become available at batch `b`.
    #[inline]
    pub(crate) fn window(&self, b: u64) -> &[TraceEntry] {
        let b = b as usize;
        &self.entries[self.windows[b]..self.windows[b + 1]]
    }
}

impl Feed {
    /// Builds a feed; see the type docs. `groups` are the engine's source ranges and must
    /// cover `0..trace.nodes()` in order.
    pub(crate) fn build(
        trace: &Trace,
        scale: f64,
        batch_slots: u32,
        lead: u64,
        batches: u64,
        groups: Vec<Range<u32>>,
    ) -> Self {
        let mut group_of = vec![0usize; trace.nodes as usize];
        for (g, r) in groups.iter().enumerate() {
            for n in r.clone() {
                group_of[n as usize] = g;
            }
        }
        let parts: Vec<FeedPart> = groups.iter().map(|_| FeedPart::default()).collect();
        let mut feed = Self {
            batch_slots,
            batches,
            lead,
            scale,
            groups,
            parts,
            demanded_per_batch: Vec::new(),
        };
        feed.fill(trace, &group_of);
        feed
    }

    /// Re-fills the feed for another `scale` and `batches`, reusing its buffers (the benchmark
    /// builds one feed per load; allocating and freeing ~100 MB per trial kept kernel workers
    /// busy zeroing and reclaiming pages during the next timed run).
    pub(crate) fn refill(&mut self, trace: &Trace, scale: f64, batches: u64) {
        let mut group_of = vec![0usize; trace.nodes as usize];
        for (g, r) in self.groups.iter().enumerate() {
            for n in r.clone() {
                group_of[n as usize] = g;
            }
        }
        self.scale = scale;
        self.batches = batches;
        self.fill(trace, &group_of);
    }

    fn fill(&mut self, trace: &Trace, group_of: &[usize]) {
        let (scale, batch_slots, lead, batches) =
            (self.scale, self.batch_slots, self.lead, self.batches);
        let parts = &mut self.parts;
        let demanded = &mut self.demanded_per_batch;
        demanded.clear();
        demanded.resize(batches as usize, 0);
        for p in parts.iter_mut() {
            p.entries.clear();
            p.windows.clear();
            p.windows.push(0);
        }
        let mut current = 0u64;
        for (&t, &e) in trace.times.iter().zip(&trace.entries) {
            let batch = batch_of(t, scale, batch_slots) + lead;
            if batch >= batches {
                break;
            }
            while current < batch {
                for p in parts.iter_mut() {
                    p.windows.push(p.entries.len());
                }
                current += 1;
            }
            parts[group_of[usize::from(e.src)]].entries.push(e);
            demanded[batch as usize] += u64::from(e.slots);
        }
        while current < batches {
            for p in parts.iter_mut() {
                p.windows.push(p.entries.len());
            }
            current += 1;
        }
    }

    /// Number of batches the engine will allocate.
    pub fn batches(&self) -> u64 {
        self.batches
    }

    /// Batches between arrival and the first batch that may serve a demand.
    pub fn lead(&self) -> u64 {
        self.lead
    }

    /// Timeslots per batch.
    pub fn batch_slots(&self) -> u32 {
        self.batch_slots
    }

    /// Timeslots per unit of trace time.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Slots of demand that become available at each batch.
    pub fn demanded_per_batch(&self) -> &[u64] {
        &self.demanded_per_batch
    }

    /// Total slots of demand in the feed.
    pub fn demanded_slots(&self) -> u64 {
        self.demanded_per_batch.iter().sum()
    }

    /// The demands that become available at batch `batch` (all source ranges; none at or
    /// after [`batches`](Self::batches)).
    pub fn demands_at(&self, batch: u64) -> impl Iterator<Item = Demand> + '_ {
        let parts = if batch < self.batches {
            &self.parts[..]
        } else {
            &[]
        };
        parts.iter().flat_map(move |p| {
            p.window(batch).iter().map(|e| Demand {
                src: NodeId(e.src.into()),
                dst: NodeId(e.dst.into()),
                slots: e.slots,
            })
        })
    }

    /// Number of demands in the feed.
    pub fn demands(&self) -> usize {
        self.parts.iter().map(|p| p.entries.len()).sum()
    }
}

/// Arrival batch (before lead) of trace time `t`.
#[inline]
pub(crate) fn batch_of(t: f64, scale: f64, batch_slots: u32) -> u64 {
    // Truncation toward zero is floor for the nonnegative times a trace holds.
    (t * scale / f64::from(batch_slots)) as u64
}

/// Splits `0..nodes` into `k` contiguous ranges whose sizes differ by at most one.
pub fn source_groups(nodes: u32, k: usize) -> Vec<Range<u32>> {
    let k = k.max(1) as u32;
    (0..k)
        .map(|i| (i * nodes / k)..((i + 1) * nodes / k))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(src: u32, dst: u32, slots: u32) -> Demand {
        Demand {
            src: NodeId(src),
            dst: NodeId(dst),
            slots,
        }
    }

    #[test]
    fn feed_assigns_batches_with_lead_and_splits_by_source() {
        let mut t = Trace::new(4);
        t.push(0.0, d(0, 1, 1)).unwrap();
        t.push(63.9, d(3, 1, 2)).unwrap();
        t.push(64.0, d(1, 2, 3)).unwrap();
        t.push(500.0, d(2, 3, 4)).unwrap();
        let f = Feed::build(&t, 1.0, 64, 1, 4, source_groups(4, 2));
        assert_eq!(
            f.demanded_per_batch(),
            &[0, 3, 3, 0],
            "last demand falls past batch 3"
        );
        assert_eq!(f.parts[0].window(1).len(), 1);
        assert_eq!(
            f.parts[1].window(1),
            &[TraceEntry {
                src: 3,
                dst: 1,
                slots: 2
            }]
        );
        assert_eq!(
            f.parts[0].window(2),
            &[TraceEntry {
                src: 1,
                dst: 2,
                slots: 3
            }]
        );
    }

    #[test]
    fn source_groups_cover_all_nodes() {
        let g = source_groups(10, 3);
        assert_eq!(g, vec![0..3, 3..6, 6..10]);
    }
}
