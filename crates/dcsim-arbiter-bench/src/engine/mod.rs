//! Allocator engines: the serial allocator and the multi-core architectures, driven by a
//! [`Feed`] of demands.
//!
//! Every engine allocates batches `0..feed.batches()` and reports what it allocated per batch
//! plus (optionally) the grants themselves. Engines differ in how they spread the work over
//! threads; see each module and `docs/arbiter.md`:
//!
//! | [`Architecture`] | threads | what moves between cores |
//! |---|---|---|
//! | `Serial` | 1 | nothing: the deterministic [`Allocator`](dcsim_arbiter::Allocator) |
//! | `Pipelined` | k | demands, thread to thread; each thread owns every k-th batch |
//! | `Parallel` | k | nothing but claim bitmaps; threads share a batch and reconcile conflicts |
//! | `Shuffle` | k | demands in small bins, backlog to alloc to post-alloc stage, permuted |
//! | `Ring` | k | destination bitmaps, around a ring; demands never move (our design) |

mod parallel;
mod pipelined;
mod ring;
mod serial;
mod shuffle;
mod sync;

use std::ops::Range;
use std::str::FromStr;
use std::time::Duration;

use dcsim_arbiter::{Allocation, AllocatorConfig, ConfigError, Grant, Timeslot};
use serde::{Deserialize, Serialize};

use crate::trace::{Feed, Trace, source_groups};

/// A way of spreading allocation over cores; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Architecture {
    /// Deterministic single-threaded allocator.
    Serial,
    /// Fastpass's pipeline: each thread owns every k-th batch; demands flow thread to thread.
    Pipelined,
    /// Threads share a batch, allocate against snapshots and cancel conflicts.
    Parallel,
    /// The thesis's random shuffle: backlog, alloc and post-alloc stages with a permuting
    /// distributor.
    Shuffle,
    /// Our design: threads own sources, destination bitmaps travel around a ring.
    Ring,
}

impl Architecture {
    /// Every architecture, in report order.
    pub const ALL: [Self; 5] = [
        Self::Serial,
        Self::Pipelined,
        Self::Parallel,
        Self::Shuffle,
        Self::Ring,
    ];

    /// Stable lowercase name, as used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Self::Serial => "serial",
            Self::Pipelined => "pipelined",
            Self::Parallel => "parallel",
            Self::Shuffle => "shuffle",
            Self::Ring => "ring",
        }
    }
}

impl std::fmt::Display for Architecture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Architecture {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| {
                format!("unknown architecture {s:?} (serial, pipelined, parallel, shuffle, ring)")
            })
    }
}

/// Which grants an engine keeps for the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Collect {
    /// Only per-batch counts.
    Counts,
    /// Every grant (tests).
    All,
    /// Grants whose destination is a multiple of `every` (rounded up to a power of two): an
    /// unbiased sample of destinations for latency and fairness statistics.
    SampleDestinations {
        /// Sampling stride.
        every: u32,
    },
}

/// Configuration of an [`Engine`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineConfig {
    /// Which architecture.
    pub architecture: Architecture,
    /// Worker threads (ignored by `Serial`).
    pub threads: usize,
    /// Nodes, batch length, links, fairness.
    pub allocator: AllocatorConfig,
    /// `Parallel`: allocate-reconcile rounds per batch. Default 2.
    pub parallel_rounds: u32,
    /// `Shuffle`: seed of the distributor's permutations.
    pub seed: u64,
    /// Which grants to keep.
    pub collect: Collect,
}

impl EngineConfig {
    /// Defaults: `threads` workers, 64-slot batches, unit links, batch-mode fairness, counts
    /// only.
    pub fn new(architecture: Architecture, threads: usize, nodes: u32) -> Self {
        Self {
            architecture,
            threads,
            allocator: AllocatorConfig::new(nodes),
            parallel_rounds: 2,
            seed: 0,
            collect: Collect::Counts,
        }
    }
}

/// A validated engine, ready to run feeds.
#[derive(Clone, Debug)]
pub struct Engine {
    cfg: EngineConfig,
    words: usize,
    threads: usize,
}

/// What an engine did with a feed.
#[derive(Clone, Debug, Default)]
pub struct RunOutput {
    /// Wall time from the start of the first batch to the end of the last, all threads.
    pub wall: Duration,
    /// Slots allocated in each batch.
    pub allocated_per_batch: Vec<u64>,
    /// The grants kept (see [`Collect`]), sorted by batch, source, destination and word.
    pub grants: Vec<(u64, Grant)>,
    /// Slots per batch.
    pub batch_slots: u32,
}

impl RunOutput {
    /// Total slots allocated.
    pub fn allocated_slots(&self) -> u64 {
        self.allocated_per_batch.iter().sum()
    }

    /// The kept grants expanded into single allocations.
    pub fn allocations(&self) -> impl Iterator<Item = Allocation> + '_ {
        let bs = u64::from(self.batch_slots);
        self.grants.iter().flat_map(move |&(b, g)| {
            let (src, dst) = (g.src(), g.dst());
            g.slots(Timeslot(b * bs))
                .map(move |slot| Allocation { slot, src, dst })
        })
    }
}

impl Engine {
    /// Validates the configuration.
    pub fn new(cfg: EngineConfig) -> Result<Self, ConfigError> {
        let words = cfg.allocator.validate()?;
        let threads = match cfg.architecture {
            Architecture::Serial => 1,
            _ => cfg.threads,
        };
        if threads == 0 || threads > 256 {
            return Err(ConfigError::Threads {
                threads,
                reason: "must be between 1 and 256",
            });
        }
        if threads as u32 > cfg.allocator.nodes {
            return Err(ConfigError::Threads {
                threads,
                reason: "more threads than nodes",
            });
        }
        if cfg.architecture == Architecture::Parallel
            && !cfg.allocator.links.iter().all(|&c| c == 1)
        {
            return Err(ConfigError::Unsupported(
                "the parallel architecture reconciles one-bit claims and needs unit links",
            ));
        }
        if cfg.architecture == Architecture::Shuffle
            && (words != 1 || !cfg.allocator.links.iter().all(|&c| c == 1))
        {
            return Err(ConfigError::Unsupported(
                "the shuffle architecture supports 64-slot batches and unit links only",
            ));
        }
        if cfg.architecture == Architecture::Parallel && cfg.parallel_rounds == 0 {
            return Err(ConfigError::Unsupported(
                "parallel_rounds must be at least 1",
            ));
        }
        Ok(Self {
            cfg,
            words,
            threads,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &EngineConfig {
        &self.cfg
    }

    /// Worker threads the engine will start (1 for `Serial`).
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Batches between a demand's arrival and the first batch that may serve it: one batch to
    /// collect arrivals plus the batches the architecture works on at once. Allocation latency
    /// includes it; it is the lookahead a real-time arbiter built this way would need.
    pub fn lead(&self) -> u64 {
        1 + match self.cfg.architecture {
            Architecture::Serial | Architecture::Parallel | Architecture::Ring => 1,
            Architecture::Pipelined => self.threads as u64,
            Architecture::Shuffle => shuffle::lanes(self.threads) as u64,
        }
    }

    /// How many batches before its feed batch (`arrival batch + lead`) the engine may use a
    /// demand. 0 except for `Pipelined`, whose threads work on `k` batches at once: demand
    /// merged into a pair's entry is absorbed by whichever thread holds the entry, which may
    /// be allocating any of the `k - 1` batches before the feed batch. (That is still at least
    /// two batches after the demand's arrival, so nothing is served before it arrived.)
    pub fn early_use(&self) -> u64 {
        match self.cfg.architecture {
            Architecture::Pipelined => self.threads as u64 - 1,
            _ => 0,
        }
    }

    /// Source ranges the engine's feed is split into.
    pub fn source_groups(&self) -> Vec<Range<u32>> {
        let nodes = self.cfg.allocator.nodes;
        match self.cfg.architecture {
            Architecture::Serial | Architecture::Pipelined => source_groups(nodes, 1),
            Architecture::Parallel | Architecture::Ring => source_groups(nodes, self.threads),
            Architecture::Shuffle => source_groups(nodes, shuffle::lanes(self.threads)),
        }
    }

    /// Prepares `trace` for this engine: `scale` timeslots per unit of trace time, `batches`
    /// batches to allocate.
    pub fn feed(&self, trace: &Trace, scale: f64, batches: u64) -> Feed {
        Feed::build(
            trace,
            scale,
            self.cfg.allocator.batch_slots,
            self.lead(),
            batches,
            self.source_groups(),
        )
    }

    /// Re-prepares `feed` (built by an engine with the same architecture, threads and batch
    /// length) for another load or length, reusing its buffers.
    pub fn refeed(&self, feed: &mut Feed, trace: &Trace, scale: f64, batches: u64) {
        assert_eq!(
            feed.groups,
            self.source_groups(),
            "feed built for another engine"
        );
        assert_eq!(feed.lead, self.lead(), "feed built for another engine");
        feed.refill(trace, scale, batches);
    }

    /// Allocates every batch of `feed`.
    ///
    /// # Panics
    /// If `feed` was not built by [`Engine::feed`] of an engine with the same architecture,
    /// threads and batch length.
    pub fn run(&self, feed: &Feed) -> RunOutput {
        assert_eq!(
            feed.groups,
            self.source_groups(),
            "feed built for another engine"
        );
        assert_eq!(feed.batch_slots, self.cfg.allocator.batch_slots);
        let parts = match self.cfg.architecture {
            Architecture::Serial => vec![serial::run(&self.cfg, feed)],
            Architecture::Pipelined => pipelined::run(&self.cfg, self.threads, self.words, feed),
            Architecture::Parallel => parallel::run(&self.cfg, self.threads, self.words, feed),
            Architecture::Shuffle => shuffle::run(&self.cfg, self.threads, self.words, feed),
            Architecture::Ring => ring::run(&self.cfg, self.threads, self.words, feed),
        };
        merge(parts, feed)
    }
}

/// One thread's share of a run.
#[derive(Debug)]
pub(crate) struct Collector {
    mode: Collect,
    sample_mask: u16,
    pub(crate) allocated: Vec<u64>,
    pub(crate) grants: Vec<(u64, Grant)>,
    pub(crate) wall: Duration,
}

impl Collector {
    pub(crate) fn new(mode: Collect, batches: u64) -> Self {
        let sample_mask = match mode {
            Collect::SampleDestinations { every } => {
                (every.max(1).next_power_of_two().min(1 << 15) - 1) as u16
            }
            _ => 0,
        };
        Self {
            mode,
            sample_mask,
            allocated: vec![0; batches as usize],
            grants: Vec::new(),
            wall: Duration::ZERO,
        }
    }

    /// Records `count` slots and the grants of (a share of) batch `batch`.
    #[inline]
    pub(crate) fn record(&mut self, batch: u64, grants: &[Grant], count: u64) {
        self.allocated[batch as usize] += count;
        match self.mode {
            Collect::Counts => {}
            Collect::All => self.grants.extend(grants.iter().map(|&g| (batch, g))),
            Collect::SampleDestinations { .. } => {
                let m = self.sample_mask;
                self.grants.extend(
                    grants
                        .iter()
                        .filter(|g| g.dst & m == 0)
                        .map(|&g| (batch, g)),
                );
            }
        }
    }

    /// Records a single grant of `count` slots (engines that emit grant by grant).
    #[inline]
    pub(crate) fn record_one(&mut self, batch: u64, g: Grant, count: u32) {
        debug_assert_eq!(count, g.count());
        self.allocated[batch as usize] += u64::from(count);
        match self.mode {
            Collect::Counts => {}
            Collect::All => self.grants.push((batch, g)),
            Collect::SampleDestinations { .. } => {
                if g.dst & self.sample_mask == 0 {
                    self.grants.push((batch, g));
                }
            }
        }
    }
}

fn merge(parts: Vec<Collector>, feed: &Feed) -> RunOutput {
    let mut out = RunOutput {
        allocated_per_batch: vec![0; feed.batches as usize],
        batch_slots: feed.batch_slots,
        ..Default::default()
    };
    for p in parts {
        out.wall = out.wall.max(p.wall);
        for (a, b) in out.allocated_per_batch.iter_mut().zip(&p.allocated) {
            *a += b;
        }
        out.grants.extend(p.grants);
    }
    out.grants
        .sort_unstable_by_key(|&(b, g)| (b, g.src, g.dst, g.word, g.mask));
    out
}
