//! The deterministic single-threaded timeslot allocator: the library's main entry point.

use serde::{Deserialize, Serialize};

use crate::backlog::{Backlog, DemandError};
use crate::bitmap::SlotBitmaps;
use crate::isa::Isa;
use crate::types::{Allocation, Demand, Grant, MAX_NODES, NodeId, Timeslot};

/// How the slots of one batch are shared among pairs that compete for them.
///
/// Both modes visit pairs in least-recently-allocated order and end with a maximal allocation
/// (no backlogged pair is left with a slot in which both of its ends are free).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Fairness {
    /// The thesis's *batch processing mode*: one pass; each pair takes as many of the batch's
    /// slots as it can use at once. Cheapest. Competing pairs alternate batch by batch (a pair
    /// allocated in this batch goes to the back of the order for the next one).
    Batch,
    /// `rounds` passes in which a pair takes at most `quantum_slots` slots each, then a final
    /// unlimited pass. With `quantum_slots = 1` competing pairs alternate slot by slot within
    /// the batch, as in per-timeslot Fastpass allocation, for the price of revisiting pairs
    /// that got slots.
    RoundRobin {
        /// Slots a pair may take per round (at least 1).
        quantum_slots: u32,
        /// Quantum-limited rounds before the final unlimited pass.
        rounds: u32,
    },
}

impl Fairness {
    /// `(quantum, rounds)` as the backlog pass takes them. Public for dcsim-arbiter-bench.
    pub fn params(self) -> (u32, u32) {
        match self {
            Self::Batch => (u32::MAX, 0),
            Self::RoundRobin {
                quantum_slots,
                rounds,
            } => (quantum_slots.max(1), rounds),
        }
    }
}

/// Configuration of an [`Allocator`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AllocatorConfig {
    /// Number of nodes (hosts), numbered `0..nodes`. At most [`MAX_NODES`].
    pub nodes: u32,
    /// Timeslots per batch: 8, 16 or 32 (part of a bitmap word; the thesis's allocator
    /// works on 8 at a time), 64, 128, 256 or 512 (one to eight words). Default 64.
    pub batch_slots: u32,
    /// Unit links per node (a 40 Gbps host on a 10 Gbps fabric has 4). Empty: one each.
    pub links: Vec<u16>,
    /// How competing pairs share a batch. Default [`Fairness::Batch`].
    pub fairness: Fairness,
    /// Run the allocation pass with baseline instructions even where the CPU has a fast BMI2
    /// `pdep` (chosen automatically otherwise). Same schedules either way; for comparing
    /// machines. Default false.
    #[serde(default)]
    pub portable_pass: bool,
}

impl AllocatorConfig {
    /// Defaults for `nodes` nodes: 64-slot batches, one unit link per node, batch mode.
    pub fn new(nodes: u32) -> Self {
        Self {
            nodes,
            batch_slots: 64,
            links: Vec::new(),
            fairness: Fairness::Batch,
            portable_pass: false,
        }
    }

    /// The instruction-set variant of the pass this configuration runs on this CPU. Public for
    /// dcsim-arbiter-bench.
    pub fn isa(&self) -> Isa {
        if self.portable_pass {
            Isa::Portable
        } else {
            Isa::detect()
        }
    }

    /// Checks the configuration; returns the number of bitmap words per batch. Public for
    /// dcsim-arbiter-bench.
    pub fn validate(&self) -> Result<usize, ConfigError> {
        if self.nodes < 2 || self.nodes > MAX_NODES {
            return Err(ConfigError::Nodes {
                nodes: self.nodes,
                max: MAX_NODES,
            });
        }
        let words = match self.batch_slots {
            8 | 16 | 32 | 64 => 1,
            128 => 2,
            256 => 4,
            512 => 8,
            other => return Err(ConfigError::BatchSlots(other)),
        };
        if !self.links.is_empty() {
            if self.links.len() != self.nodes as usize {
                return Err(ConfigError::LinksLength {
                    got: self.links.len(),
                    nodes: self.nodes,
                });
            }
            if let Some(node) = self.links.iter().position(|&c| c == 0) {
                return Err(ConfigError::ZeroLinks { node: node as u32 });
            }
        }
        if let Fairness::RoundRobin {
            quantum_slots: 0, ..
        } = self.fairness
        {
            return Err(ConfigError::ZeroQuantum);
        }
        Ok(words)
    }

    /// Per-node unit links for bitmaps of `lo..lo + n`, or `None` if every node has one link.
    /// Public for dcsim-arbiter-bench.
    pub fn caps(&self, lo: u32, n: u32) -> Option<&[u16]> {
        if self.links.iter().all(|&c| c == 1) {
            None
        } else {
            Some(&self.links[lo as usize..(lo + n) as usize])
        }
    }
}

/// An invalid allocator or engine configuration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// Node count out of range.
    #[error("nodes = {nodes}: must be between 2 and {max}")]
    Nodes {
        /// The configured count.
        nodes: u32,
        /// The largest supported count.
        max: u32,
    },
    /// Unsupported batch length.
    #[error("batch_slots = {0}: must be 8, 16, 32, 64, 128, 256 or 512")]
    BatchSlots(u32),
    /// `links` has the wrong length.
    #[error("links has {got} entries for {nodes} nodes")]
    LinksLength {
        /// Entries given.
        got: usize,
        /// Nodes configured.
        nodes: u32,
    },
    /// A node without links.
    #[error("links[{node}] = 0: every node needs at least one unit link")]
    ZeroLinks {
        /// The node.
        node: u32,
    },
    /// Round-robin with an empty quantum.
    #[error("fairness.quantum_slots must be at least 1")]
    ZeroQuantum,
    /// Thread count out of range for the architecture.
    #[error("threads = {threads}: {reason}")]
    Threads {
        /// The configured count.
        threads: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The architecture does not support the option.
    #[error("{0}")]
    Unsupported(&'static str),
}

/// The allocations of one batch of timeslots.
#[derive(Clone, Debug, Default)]
pub struct BatchAllocation {
    batch: u64,
    batch_slots: u32,
    grants: Vec<Grant>,
    allocated: u64,
}

impl BatchAllocation {
    /// Batch number; the batch covers slots `batch * batch_slots ..`.
    pub fn batch(&self) -> u64 {
        self.batch
    }

    /// First timeslot of the batch.
    pub fn first_slot(&self) -> Timeslot {
        Timeslot(self.batch * u64::from(self.batch_slots))
    }

    /// Number of timeslots in the batch.
    pub fn batch_slots(&self) -> u32 {
        self.batch_slots
    }

    /// The compact grants (one per pair and 64-slot word that got slots).
    pub fn grants(&self) -> &[Grant] {
        &self.grants
    }

    /// Number of packets (timeslots x pairs) allocated in the batch.
    pub fn allocated_slots(&self) -> u64 {
        self.allocated
    }

    /// Every allocation of the batch, grant by grant (not sorted by slot).
    pub fn iter(&self) -> impl Iterator<Item = Allocation> + '_ {
        let first = self.first_slot();
        self.grants.iter().flat_map(move |g| {
            let (src, dst) = (g.src(), g.dst());
            g.slots(first)
                .map(move |slot| Allocation { slot, src, dst })
        })
    }

    /// The allocations grouped by timeslot: element `i` lists the `(src, dst)` pairs sending in
    /// slot `first_slot + i` (the input of path assignment).
    pub fn by_slot(&self) -> Vec<Vec<(NodeId, NodeId)>> {
        let mut slots = vec![Vec::new(); self.batch_slots as usize];
        let first = self.first_slot().0;
        for a in self.iter() {
            slots[(a.slot.0 - first) as usize].push((a.src, a.dst));
        }
        slots
    }
}

/// Deterministic single-threaded Fastpass timeslot allocator.
///
/// Feed it demands with [`submit`](Self::submit) and call
/// [`allocate_batch`](Self::allocate_batch) once per batch of timeslots, in order. Each call
/// allocates the next batch greedily: backlogged pairs are visited in least-recently-allocated
/// order, and a pair is given the first slots of the batch in which both its source and its
/// destination still have a free unit link (find-first-set over the AND of two bitmaps). The
/// same sequence of calls always gives the same allocations.
///
/// ```
/// use dcsim_arbiter::{Allocator, AllocatorConfig, Demand, NodeId};
///
/// let mut arb = Allocator::new(&AllocatorConfig::new(4)).unwrap();
/// arb.submit(Demand { src: NodeId(0), dst: NodeId(1), slots: 3 }).unwrap();
/// arb.submit(Demand { src: NodeId(2), dst: NodeId(1), slots: 2 }).unwrap();
/// let batch = arb.allocate_batch();
/// assert_eq!(batch.allocated_slots(), 5); // node 1 receives in five different slots
/// for a in batch.iter() {
///     println!("slot {}: {} -> {}", a.slot.0, a.src.0, a.dst.0);
/// }
/// ```
#[derive(Debug)]
pub struct Allocator {
    config: AllocatorConfig,
    backlog: Backlog,
    tx: SlotBitmaps,
    rx: SlotBitmaps,
    next_batch: u64,
    out: BatchAllocation,
}

impl Allocator {
    /// A new allocator whose first batch is batch 0 (timeslot 0).
    pub fn new(config: &AllocatorConfig) -> Result<Self, ConfigError> {
        let words = config.validate()?;
        let n = config.nodes;
        let bitmaps = || {
            let mut b = SlotBitmaps::new(0, n, words, config.caps(0, n));
            b.limit_slots(config.batch_slots);
            b
        };
        Ok(Self {
            config: config.clone(),
            backlog: Backlog::new(0, n, 0, n, config.isa()),
            tx: bitmaps(),
            rx: bitmaps(),
            next_batch: 0,
            out: BatchAllocation {
                batch_slots: config.batch_slots,
                ..Default::default()
            },
        })
    }

    /// The configuration this allocator was built with.
    pub fn config(&self) -> &AllocatorConfig {
        &self.config
    }

    /// Adds a demand to the backlog of its pair. A zero-slot demand is ignored.
    pub fn submit(&mut self, demand: Demand) -> Result<(), DemandError> {
        let (src, dst) = (demand.src.0, demand.dst.0);
        let nodes = self.config.nodes;
        if src >= nodes || dst >= nodes {
            return Err(DemandError::UnknownNode { src, dst, nodes });
        }
        if src == dst {
            return Err(DemandError::SelfLoop { node: src });
        }
        // Both fit in u16: validate() caps nodes at MAX_NODES.
        self.backlog.submit(src as u16, dst as u16, demand.slots)
    }

    /// [`submit`](Self::submit) for demands already validated (by a `Trace` of
    /// dcsim-arbiter-bench). Public for dcsim-arbiter-bench.
    #[inline]
    pub fn submit_trusted(&mut self, src: u16, dst: u16, slots: u32) -> Result<(), DemandError> {
        self.backlog.submit(src, dst, slots)
    }

    /// Allocates the next batch of timeslots and returns its allocations. The result stays
    /// valid until the next call.
    pub fn allocate_batch(&mut self) -> &BatchAllocation {
        let batch = self.next_batch;
        self.next_batch += 1;
        self.tx.reset();
        self.rx.reset();
        self.out.batch = batch;
        self.out.grants.clear();
        self.backlog.begin(batch);
        let (quantum, rounds) = self.config.fairness.params();
        self.out.allocated = allocate_dyn(
            &mut self.backlog,
            batch,
            &mut self.tx,
            &mut self.rx,
            quantum,
            rounds,
            &mut self.out.grants,
        );
        &self.out
    }

    /// The batch the next [`allocate_batch`](Self::allocate_batch) call will fill.
    pub fn next_batch(&self) -> u64 {
        self.next_batch
    }

    /// First timeslot of the next batch.
    pub fn next_slot(&self) -> Timeslot {
        Timeslot(self.next_batch * u64::from(self.config.batch_slots))
    }

    /// Slots demanded and not yet allocated, over all pairs.
    pub fn outstanding_slots(&self) -> u64 {
        self.backlog.outstanding()
    }

    /// Number of pairs with outstanding demand.
    pub fn backlogged_pairs(&self) -> u64 {
        self.backlog.active_pairs()
    }
}

/// Runs `Backlog::allocate` with the bitmap width and link model known at compile time.
/// Public for dcsim-arbiter-bench.
pub fn allocate_dyn(
    backlog: &mut Backlog,
    batch: u64,
    tx: &mut SlotBitmaps,
    rx: &mut SlotBitmaps,
    quantum: u32,
    rounds: u32,
    out: &mut Vec<Grant>,
) -> u64 {
    debug_assert_eq!(tx.is_unit(), rx.is_unit());
    macro_rules! go {
        ($w:literal) => {
            if tx.is_unit() {
                backlog.allocate::<$w, true>(batch, tx, rx, quantum, rounds, out)
            } else {
                backlog.allocate::<$w, false>(batch, tx, rx, quantum, rounds, out)
            }
        };
    }
    match tx.words() {
        1 => go!(1),
        2 => go!(2),
        4 => go!(4),
        8 => go!(8),
        w => unreachable!("validated word count {w}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demand(src: u32, dst: u32, slots: u32) -> Demand {
        Demand {
            src: NodeId(src),
            dst: NodeId(dst),
            slots,
        }
    }

    #[test]
    fn config_rejects_bad_values() {
        let mut c = AllocatorConfig::new(1);
        assert!(matches!(Allocator::new(&c), Err(ConfigError::Nodes { .. })));
        c.nodes = 8;
        for bad in [100, 4, 48] {
            c.batch_slots = bad;
            assert!(matches!(Allocator::new(&c), Err(ConfigError::BatchSlots(b)) if b == bad));
        }
        c.batch_slots = 128;
        c.links = vec![1; 7];
        assert!(matches!(
            Allocator::new(&c),
            Err(ConfigError::LinksLength { .. })
        ));
    }

    #[test]
    fn submit_rejects_bad_demands() {
        let mut a = Allocator::new(&AllocatorConfig::new(4)).unwrap();
        assert!(matches!(
            a.submit(demand(0, 4, 1)),
            Err(DemandError::UnknownNode { .. })
        ));
        assert!(matches!(
            a.submit(demand(2, 2, 1)),
            Err(DemandError::SelfLoop { node: 2 })
        ));
    }

    #[test]
    fn wide_batch_spills_into_second_word() {
        let mut c = AllocatorConfig::new(3);
        c.batch_slots = 128;
        let mut a = Allocator::new(&c).unwrap();
        a.submit(demand(0, 1, 100)).unwrap();
        let b = a.allocate_batch();
        assert_eq!(b.allocated_slots(), 100);
        let slots: Vec<u64> = b.iter().map(|x| x.slot.0).collect();
        assert_eq!(slots, (0..100).collect::<Vec<_>>());
        assert_eq!(a.next_slot(), Timeslot(128));
    }

    /// A batch shorter than a word (the thesis's 8 slots) grants within its own slots only:
    /// 20 slots of demand take batches of 8, 8 and 4, numbered as 8-slot batches; two
    /// senders to one receiver share each batch, with two links each 8-slot batch gives 16.
    #[test]
    fn sub_word_batches_grant_within_their_slots() {
        for slots in [8u32, 16, 32] {
            let mut c = AllocatorConfig::new(3);
            c.batch_slots = slots;
            let mut a = Allocator::new(&c).unwrap();
            a.submit(demand(0, 1, 20)).unwrap();
            let mut got = Vec::new();
            while a.outstanding_slots() > 0 {
                let b = a.allocate_batch();
                assert!(b.iter().all(|g| g.slot.0 >= b.first_slot().0
                    && g.slot.0 < b.first_slot().0 + u64::from(slots)));
                got.push(b.allocated_slots());
            }
            let want: Vec<u64> = match slots {
                8 => vec![8, 8, 4],
                16 => vec![16, 4],
                _ => vec![20],
            };
            assert_eq!(got, want, "{slots}-slot batches");
            assert_eq!(
                a.next_slot(),
                Timeslot(u64::from(slots) * want.len() as u64)
            );
        }
        let mut c = AllocatorConfig::new(3);
        c.batch_slots = 8;
        c.links = vec![1, 1, 2];
        let mut a = Allocator::new(&c).unwrap();
        a.submit(demand(0, 2, 64)).unwrap();
        a.submit(demand(1, 2, 64)).unwrap();
        assert_eq!(a.allocate_batch().allocated_slots(), 16);
        assert_eq!(a.outstanding_slots(), 112);
    }

    #[test]
    fn two_link_node_receives_twice_per_slot() {
        let mut c = AllocatorConfig::new(3);
        c.links = vec![1, 1, 2];
        let mut a = Allocator::new(&c).unwrap();
        a.submit(demand(0, 2, 64)).unwrap();
        a.submit(demand(1, 2, 64)).unwrap();
        assert_eq!(a.allocate_batch().allocated_slots(), 128);
        assert_eq!(a.outstanding_slots(), 0);
    }
}
