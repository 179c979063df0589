//! The allocator stress benchmark (the thesis's method), as a library.
//!
//! [`run`] measures, for every requested node count, architecture and thread count, the
//! highest offered load the allocator *sustains*, and reports the throughput, latency and
//! fairness at that load. The CLI's `dcsim arbiter-bench` and
//! `examples/arbiter_bench.rs` are thin wrappers around it.
//!
//! # Workload
//! Poisson demand arrivals; source and destination uniform among the `N` nodes; size from a
//! Gaussian with mean [`BenchConfig::mean_slots`] (10 MTUs) and standard deviation
//! [`BenchConfig::sd_slots`], at least 1 (see `generate.rs`). One trace is generated per node
//! count, before any timing, and replayed at every load by stretching its time axis, so all
//! architectures and loads see the same demands. The engine's input is split by source
//! range into per-thread buffers before the clock starts: generator work is excluded.
//!
//! # What "sustainable" means
//! The arbiter runs on the wall clock: timeslots are 1.2 us of real time (1500 B at 10 Gbps),
//! and batch `b` must be allocated before its first slot begins. A run at offered load `rho`
//! (demand arriving at `rho x N` slots per slot-time) replays [`BenchConfig::duration_ms`]
//! of arbiter time, after a warm-up of a quarter of that, as fast as the engine can go. It is
//! **sustainable** if both hold:
//! 1. **Keeps up with real time**: the wall time of the whole run (warm-up included, median of
//!    [`BenchConfig::runs`] runs; a run during which other processes used more than 25 % of a
//!    core is repeated, see [`BenchConfig::max_retries`]) is at most the arbiter time it covers
//!    (`batches x batch_slots x 1.2 us`), i.e. the engine allocates timeslots at least as fast
//!    as they elapse. (A real-time arbiter built from the engine needs the lookahead the report
//!    gives as `lead_batches`; that lookahead is part of the measured latency.)
//! 2. **Keeps up with demand**: over the measured part the backlog grows by at most
//!    [`BenchConfig::max_growth`] (1 %) of the demand that arrived, i.e. allocated >= 99 % of
//!    demanded: the greedy matching itself can carry the load.
//!
//! The search bisects the load between a sustainable and an unsustainable one (load 1.0 is
//! never sustainable, load 0 always is) down to [`BenchConfig::resolution`]; it is repeated
//! [`BenchConfig::repeats`] times and the median search is reported, so one disturbed trial
//! cannot decide a row. The result's
//! **sustained throughput** is the slots allocated per second of arbiter time at the highest
//! sustainable load, times 1500 B x 8; because that load keeps up with real time, it equals
//! allocated timeslots per wall-clock second of a real-time arbiter. The report also gives
//! the raw *compute* rate of the same run (slots allocated per wall second of the accelerated
//! replay), which may exceed the `N x 10 Gbps` ceiling, and which limit stopped the search.

mod generate;
mod paths;
mod stats;

use dcsim_arbiter::{ConfigError, Fairness, MAX_NODES, MTU_BYTES, TIMESLOT_NS, UNIT_LINK_BPS};
use dcsim_engine::splitmix;
use serde::{Deserialize, Serialize};

pub use paths::{LOAD as PATH_LOAD, PathRow, clos_for};
pub use stats::{FAIR_WINDOW, Fairness as FairnessStats, Latency};

use crate::engine::{Architecture, Collect, Engine, EngineConfig};
use crate::trace::{Feed, Trace};

/// What to measure; see the module docs. `Default` is the full benchmark.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BenchConfig {
    /// Node counts. Default `[256, 1024, 4096]`.
    pub nodes: Vec<u32>,
    /// Architectures. Default all.
    pub architectures: Vec<Architecture>,
    /// Thread counts (`Serial` runs once, with one thread). Default `[1, 2]`.
    pub threads: Vec<usize>,
    /// Master seed of the workload and the shuffle distributor. Default 1.
    pub seed: u64,
    /// Arbiter time replayed per measured run, in milliseconds (plus a quarter for warm-up).
    /// Default 50.
    pub duration_ms: f64,
    /// Runs per trial; the median wall time decides. Default 3.
    pub runs: usize,
    /// Independent searches per row; the row reports the median one. Default 3.
    pub repeats: usize,
    /// Times a run is repeated when other processes used more than 25 % of a core during it
    /// (Linux only), after waiting 0.25 s, 0.5 s, 1 s, ... Default 5.
    pub max_retries: u32,
    /// Timeslots per batch. Default 64.
    pub batch_slots: u32,
    /// Fairness mode of the allocators that support it. Default batch mode.
    pub fairness: Fairness,
    /// `Parallel`: allocate-reconcile rounds per batch. Default 2.
    pub parallel_rounds: u32,
    /// Mean demand size in timeslots (MTUs). Default 10.
    pub mean_slots: f64,
    /// Standard deviation of the demand size. Default 3.
    pub sd_slots: f64,
    /// Measure only at this offered load (fraction of the ceiling) instead of searching.
    pub load: Option<f64>,
    /// Search resolution in offered load. Default 1/128.
    pub resolution: f64,
    /// Largest allowed backlog growth, as a fraction of the measured demand. Default 0.01.
    pub max_growth: f64,
    /// Destination sampling stride for latency and fairness (rounded up to a power of two).
    /// Default 16.
    pub sample_every: u32,
    /// Offered load of the extra, untimed run that measures latency and fairness under
    /// contention (at the sustainable load pairs rarely wait long enough to contend).
    /// Default 0.8; `None` skips it.
    pub contention_load: Option<f64>,
    /// Run the allocation pass with baseline instructions even where the CPU has a fast BMI2
    /// `pdep` ([`dcsim_arbiter::AllocatorConfig::portable_pass`]). Default false.
    pub portable_pass: bool,
    /// Quick mode: overrides the above with a few-second configuration (256 nodes, 5 ms runs,
    /// one run per trial, resolution 1/16), for CI and smoke tests.
    pub quick: bool,
}

impl Default for BenchConfig {
    fn default() -> Self {
        Self {
            nodes: vec![256, 1024, 4096],
            architectures: Architecture::ALL.to_vec(),
            threads: vec![1, 2],
            seed: 1,
            duration_ms: 50.0,
            runs: 3,
            repeats: 3,
            max_retries: 5,
            batch_slots: 64,
            fairness: Fairness::Batch,
            parallel_rounds: 2,
            mean_slots: 10.0,
            sd_slots: 3.0,
            load: None,
            resolution: 1.0 / 128.0,
            max_growth: 0.01,
            sample_every: 16,
            contention_load: Some(0.8),
            portable_pass: false,
            quick: false,
        }
    }
}

impl BenchConfig {
    /// The configuration actually run: `quick` applied.
    pub fn effective(&self) -> Self {
        let mut c = self.clone();
        if c.quick {
            c.nodes = vec![256];
            c.duration_ms = 5.0;
            c.runs = 1;
            c.repeats = 1;
            c.resolution = 1.0 / 16.0;
        }
        c
    }

    fn validate(&self) -> Result<(), BenchError> {
        let bad = |what: &str| Err(BenchError::Config(what.to_string()));
        if self.nodes.is_empty() || self.architectures.is_empty() || self.threads.is_empty() {
            return bad("nodes, architectures and threads must not be empty");
        }
        if self.nodes.iter().any(|&n| !(2..=MAX_NODES).contains(&n)) {
            return bad("nodes must be between 2 and 16384");
        }
        if !(self.duration_ms > 0.0 && self.duration_ms <= 60_000.0) {
            return bad("duration_ms must be in (0, 60000]");
        }
        if self.runs == 0 || self.repeats == 0 {
            return bad("runs and repeats must be at least 1");
        }
        if !(self.mean_slots >= 1.0 && self.sd_slots >= 0.0) {
            return bad("mean_slots must be >= 1 and sd_slots >= 0");
        }
        if let Some(l) = self.load
            && !(l > 0.0 && l <= 1.5)
        {
            return bad("load must be in (0, 1.5]");
        }
        if !(self.resolution > 0.0 && self.resolution < 0.5) {
            return bad("resolution must be in (0, 0.5)");
        }
        if self.max_growth.is_nan() || self.max_growth < 0.0 {
            return bad("max_growth must be >= 0");
        }
        Ok(())
    }
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// Invalid benchmark settings.
    #[error("invalid benchmark configuration: {0}")]
    Config(String),
    /// An engine rejected its configuration.
    #[error(transparent)]
    Engine(#[from] ConfigError),
}

/// The benchmark's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchReport {
    /// The configuration run (after `quick`).
    pub config: BenchConfig,
    /// Where it ran.
    pub machine: Machine,
    /// The definition of a sustainable load used (same text as the module docs, short form).
    pub definition: String,
    /// One row per node count, architecture and thread count.
    pub rows: Vec<BenchRow>,
    /// Path-assignment speed, one row per node count and thread count (see `paths.rs`).
    #[serde(default)]
    pub paths: Vec<PathRow>,
}

/// The machine the benchmark ran on.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Machine {
    /// Hardware threads available to the process.
    pub cpus: usize,
    /// CPU model name, if the OS reports it.
    pub cpu_model: Option<String>,
    /// Whether this was an optimised build (`debug_assertions` off).
    pub release_build: bool,
    /// Instruction-set variant of the allocation pass this CPU runs: `"bmi2-pdep"` or
    /// `"portable"` (same schedules; see the `isa` module).
    #[serde(default)]
    pub pass: String,
}

/// Result for one node count, architecture and thread count.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchRow {
    /// Nodes.
    pub nodes: u32,
    /// Architecture.
    pub architecture: Architecture,
    /// Worker threads.
    pub threads: usize,
    /// Highest sustainable offered load found (fraction of the ceiling); 0 if none.
    pub load: f64,
    /// What made the next higher load unsustainable: `"compute"`, `"matching"`, `"both"`,
    /// or `"none"` (every load tried was sustainable, e.g. with a fixed `load`).
    pub limited_by: String,
    /// Sustained throughput, Tbps: allocated slots per second of arbiter time x 12 000 bits.
    pub sustained_tbps: f64,
    /// The ceiling `N x 10 Gbps`, in Tbps.
    pub ceiling_tbps: f64,
    /// `sustained_tbps / ceiling_tbps`.
    pub fraction_of_ceiling: f64,
    /// Raw compute rate at that load: allocated slots per wall second of the accelerated
    /// replay x 12 000 bits, in Tbps.
    pub compute_tbps: f64,
    /// Arbiter time / wall time of the run at that load (>= 1 keeps up).
    pub realtime_factor: f64,
    /// Allocated / demanded over the measured part at that load.
    pub served_fraction: f64,
    /// Batches between a demand's arrival and the first batch that may serve it.
    pub lead_batches: u64,
    /// Demand-to-timeslot latency at that load.
    pub latency: Latency,
    /// Jain fairness among contending pairs at that load.
    pub fairness: FairnessStats,
    /// Latency and fairness at [`BenchConfig::contention_load`] (untimed run).
    pub contention: Option<Contention>,
    /// Highest sustainable load found by each search, sorted (the row is the median one).
    pub search_loads: Vec<f64>,
    /// Every trial of the reported search, in order.
    pub trials: Vec<Trial>,
}

/// Latency and fairness of an untimed run at a fixed, high offered load.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Contention {
    /// Offered load.
    pub load: f64,
    /// Allocated / demanded over the measured part.
    pub served_fraction: f64,
    /// Demand-to-timeslot latency.
    pub latency: Latency,
    /// Jain fairness among contending pairs.
    pub fairness: FairnessStats,
}

/// One load tried by the search.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Trial {
    /// Offered load.
    pub load: f64,
    /// Both conditions held.
    pub sustainable: bool,
    /// Arbiter time / median wall time.
    pub realtime_factor: f64,
    /// Backlog growth over the measured part / demand in it.
    pub backlog_growth: f64,
    /// Median wall time of the runs, milliseconds.
    pub wall_ms: f64,
    /// Runs repeated because other processes were busy during them.
    pub retries: u32,
    /// Runs kept although other processes were still busy after `max_retries` retries.
    pub disturbed: u32,
}

/// Runs the benchmark; see the module docs.
pub fn run(config: &BenchConfig) -> Result<BenchReport, BenchError> {
    let cfg = config.effective();
    cfg.validate()?;
    let gen_threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut rows = Vec::new();
    let mut paths = Vec::new();
    for &nodes in &cfg.nodes {
        let slots_per_run = run_slots(&cfg);
        // Enough demand for load 1.0 over the whole run, plus margin for the Poisson spread.
        let demands = (f64::from(nodes) * slots_per_run / cfg.mean_slots * 1.05) as usize + 1000;
        let trace = synthetic_trace_with(nodes, demands, &cfg, gen_threads);
        for &arch in &cfg.architectures {
            let threads: Vec<usize> = if arch == Architecture::Serial {
                vec![1]
            } else {
                cfg.threads.clone()
            };
            for t in threads {
                rows.push(measure(&cfg, &trace, nodes, arch, t)?);
            }
        }
        paths.extend(paths::measure(&cfg, &trace, nodes)?);
    }
    Ok(BenchReport {
        machine: machine(&cfg),
        definition: DEFINITION.to_string(),
        rows,
        paths,
        config: cfg,
    })
}

/// A synthetic trace (Poisson arrivals with unit mean gap, uniform pairs, Gaussian sizes with
/// the given mean and standard deviation, at least 1), as the benchmark generates it.
pub fn synthetic_trace(
    nodes: u32,
    demands: usize,
    mean_slots: f64,
    sd_slots: f64,
    seed: u64,
) -> Trace {
    let spec = generate::TraceSpec {
        nodes,
        demands,
        mean_slots,
        sd_slots,
        seed,
    };
    generate::generate(
        &spec,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    )
}

const DEFINITION: &str = "A load is sustainable when (1) the engine allocates timeslots at \
least as fast as they elapse in real time (median wall time of the whole run <= its arbiter \
time, 1.2 us per slot) and (2) the backlog grows by at most max_growth of the demand that \
arrived in the measured part. Sustained Tbps = allocated slots per second of arbiter time x \
1500 B x 8 at the highest sustainable load.";

fn synthetic_trace_with(nodes: u32, demands: usize, cfg: &BenchConfig, threads: usize) -> Trace {
    let seed = splitmix(cfg.seed ^ u64::from(nodes));
    let spec = generate::TraceSpec {
        nodes,
        demands,
        mean_slots: cfg.mean_slots,
        sd_slots: cfg.sd_slots,
        seed,
    };
    generate::generate(&spec, threads)
}

/// Timeslots per run (measured part plus warm-up).
fn run_slots(cfg: &BenchConfig) -> f64 {
    cfg.duration_ms * 1.25 * 1e6 / TIMESLOT_NS as f64
}

/// Measures one engine: `repeats` independent searches, the median one reported.
fn measure(
    cfg: &BenchConfig,
    trace: &Trace,
    nodes: u32,
    arch: Architecture,
    threads: usize,
) -> Result<BenchRow, BenchError> {
    let mut ecfg = EngineConfig::new(arch, threads, nodes);
    ecfg.allocator.batch_slots = cfg.batch_slots;
    ecfg.allocator.fairness = cfg.fairness;
    ecfg.allocator.portable_pass = cfg.portable_pass;
    ecfg.parallel_rounds = cfg.parallel_rounds;
    ecfg.seed = cfg.seed;
    let engine = Engine::new(ecfg.clone())?;
    let bs = f64::from(cfg.batch_slots);
    let batches = (run_slots(cfg) / bs).ceil() as u64;
    let warmup = (batches / 5).max(1);
    let mean = trace.total_slots() as f64 / trace.len().max(1) as f64;
    let scale_of = |load: f64| mean / (load * f64::from(nodes));
    // One feed, refilled for every load: see `Feed::refill`.
    let mut feed = engine.feed(trace, scale_of(0.5), batches);
    let mut searches: Vec<Search> = (0..cfg.repeats.max(1))
        .map(|_| search(cfg, &engine, trace, &mut feed, warmup, &scale_of))
        .collect();
    // The median search by load found (ties: the earlier one).
    let mut order: Vec<usize> = (0..searches.len()).collect();
    order.sort_by(|&a, &b| searches[a].best_load().total_cmp(&searches[b].best_load()));
    let loads: Vec<f64> = order.iter().map(|&i| searches[i].best_load()).collect();
    let chosen = searches.swap_remove(order[order.len() / 2]);
    let limited_by = match chosen.fail {
        None => "none",
        Some(o) if !o.keeps_time && !o.keeps_demand => "both",
        Some(o) if !o.keeps_time => "compute",
        Some(_) => "matching",
    }
    .to_string();
    let ceiling_tbps = f64::from(nodes) * UNIT_LINK_BPS as f64 / 1e12;
    let mut row = BenchRow {
        nodes,
        architecture: arch,
        threads: engine.threads(),
        load: 0.0,
        limited_by,
        sustained_tbps: 0.0,
        ceiling_tbps,
        fraction_of_ceiling: 0.0,
        compute_tbps: 0.0,
        realtime_factor: 0.0,
        served_fraction: 0.0,
        lead_batches: engine.lead(),
        latency: Latency::default(),
        fairness: FairnessStats::default(),
        contention: None,
        search_loads: loads,
        trials: chosen.trials,
    };
    let mut scfg = ecfg;
    scfg.collect = Collect::SampleDestinations {
        every: cfg.sample_every,
    };
    let sampler = Engine::new(scfg)?;
    let mut sampled = |scale: f64| {
        sampler.refeed(&mut feed, trace, scale, batches);
        let out = sampler.run(&feed);
        let (lat, fair) = stats::analyse(trace, scale, sampler.lead(), &out, cfg.sample_every);
        let dem: u64 = feed.demanded_per_batch()[warmup as usize..].iter().sum();
        let alloc: u64 = out.allocated_per_batch[warmup as usize..].iter().sum();
        (
            lat,
            fair,
            if dem > 0 {
                alloc as f64 / dem as f64
            } else {
                1.0
            },
        )
    };
    if let Some(load) = cfg.contention_load {
        let (latency, fairness, served_fraction) = sampled(scale_of(load));
        row.contention = Some(Contention {
            load,
            served_fraction,
            latency,
            fairness,
        });
    }
    if let Some((load, o)) = chosen.best {
        row.load = load;
        row.sustained_tbps = o.sustained_tbps;
        row.fraction_of_ceiling = o.sustained_tbps / ceiling_tbps;
        row.compute_tbps = o.compute_tbps;
        row.realtime_factor = o.realtime_factor;
        row.served_fraction = o.served;
        // Latency and fairness from a separate run with sampling on (not timed).
        let (lat, fair, _) = sampled(scale_of(load));
        row.latency = lat;
        row.fairness = fair;
    }
    Ok(row)
}

/// One search: its trials, the best sustainable trial and the lowest failed one.
struct Search {
    trials: Vec<Trial>,
    best: Option<(f64, Outcome)>,
    fail: Option<Outcome>,
}

impl Search {
    fn best_load(&self) -> f64 {
        self.best.map_or(0.0, |(l, _)| l)
    }
}

/// Bisects the offered load (or tries only `cfg.load`).
fn search(
    cfg: &BenchConfig,
    engine: &Engine,
    trace: &Trace,
    feed: &mut Feed,
    warmup: u64,
    scale_of: &impl Fn(f64) -> f64,
) -> Search {
    let mut s = Search {
        trials: Vec::new(),
        best: None,
        fail: None,
    };
    let mut try_load = |s: &mut Search, load: f64| -> bool {
        let (t, o) = trial(cfg, engine, trace, feed, warmup, load, scale_of(load));
        let ok = t.sustainable;
        s.trials.push(t);
        if ok {
            s.best = Some((load, o));
        } else {
            s.fail = Some(o);
        }
        ok
    };
    if let Some(load) = cfg.load {
        try_load(&mut s, load);
        return s;
    }
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    while hi - lo > cfg.resolution {
        let mid = (lo + hi) / 2.0;
        if try_load(&mut s, mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    s
}

/// Runs one load `cfg.runs` times and judges it.
fn trial(
    cfg: &BenchConfig,
    engine: &Engine,
    trace: &Trace,
    feed: &mut Feed,
    warmup: u64,
    load: f64,
    scale: f64,
) -> (Trial, Outcome) {
    let batches = feed.batches();
    engine.refeed(feed, trace, scale, batches);
    let feed = &*feed;
    let mut walls = Vec::with_capacity(cfg.runs);
    let mut out = None;
    let mut retries = 0;
    let mut disturbed = 0;
    for _ in 0..cfg.runs {
        // A run during which other processes took a noticeable share of a core measures the
        // machine, not the engine: run it again (a few times at most).
        let mut attempt = 0;
        let o = loop {
            let before = CpuSample::now();
            let o = engine.run(feed);
            let others = CpuSample::others_since(CpuSample::now(), before.as_ref());
            let busy =
                others.is_some_and(|j| j >= 4 && j as f64 > 0.25 * o.wall.as_secs_f64() * 100.0);
            if !busy || attempt == cfg.max_retries {
                disturbed += u32::from(busy);
                break o;
            }
            // Give a burst of other work (a compiler, say) time to pass: 0.25 s, doubling.
            std::thread::sleep(std::time::Duration::from_millis(250 << attempt.min(6)));
            attempt += 1;
            retries += 1;
        };
        walls.push(o.wall.as_secs_f64());
        out = Some(o);
    }
    walls.sort_by(f64::total_cmp);
    let wall = walls[walls.len() / 2];
    let out = out.expect("runs >= 1");
    let bs = f64::from(cfg.batch_slots);
    let dem = feed.demanded_per_batch();
    let alloc = &out.allocated_per_batch;
    let w = warmup as usize;
    let sum = |v: &[u64]| v.iter().sum::<u64>() as f64;
    let measured_dem = sum(&dem[w..]);
    let measured_alloc = sum(&alloc[w..]);
    let growth = measured_dem - measured_alloc;
    let arbiter_s = batches as f64 * bs * TIMESLOT_NS as f64 * 1e-9;
    let rt = arbiter_s / wall;
    let keeps_time = rt >= 1.0;
    let keeps_demand = growth <= cfg.max_growth * measured_dem;
    let measured_s = (batches - warmup) as f64 * bs * TIMESLOT_NS as f64 * 1e-9;
    let bits = (MTU_BYTES * 8) as f64;
    let t = Trial {
        load,
        sustainable: keeps_time && keeps_demand,
        realtime_factor: rt,
        backlog_growth: if measured_dem > 0.0 {
            growth / measured_dem
        } else {
            0.0
        },
        wall_ms: wall * 1e3,
        retries,
        disturbed,
    };
    let o = Outcome {
        keeps_time,
        keeps_demand,
        realtime_factor: rt,
        sustained_tbps: measured_alloc / measured_s * bits / 1e12,
        compute_tbps: out.allocated_slots() as f64 / wall * bits / 1e12,
        served: if measured_dem > 0.0 {
            measured_alloc / measured_dem
        } else {
            1.0
        },
    };
    (t, o)
}

#[derive(Clone, Copy, Debug)]
struct Outcome {
    keeps_time: bool,
    keeps_demand: bool,
    realtime_factor: f64,
    sustained_tbps: f64,
    compute_tbps: f64,
    served: f64,
}

/// CPU time of the whole machine and of this process, in clock ticks (Linux `/proc`; `None`
/// elsewhere, which disables interference detection).
struct CpuSample {
    machine_busy: u64,
    this_process: u64,
}

impl CpuSample {
    fn now() -> Option<Self> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let cpu: Vec<u64> = stat
            .lines()
            .next()?
            .split_whitespace()
            .skip(1)
            .filter_map(|v| v.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal ...: busy = all but idle and iowait.
        let machine_busy = cpu
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != 3 && i != 4)
            .map(|(_, v)| v)
            .sum();
        let me = std::fs::read_to_string("/proc/self/stat").ok()?;
        // Fields after the parenthesised command name, from field 3 (state) on; utime and
        // stime are fields 14 and 15. Index positionally: some fields can be -1.
        let rest = me.rsplit_once(')')?.1;
        let mut f = rest.split_whitespace().skip(11);
        let utime: u64 = f.next()?.parse().ok()?;
        let stime: u64 = f.next()?.parse().ok()?;
        let this_process = utime + stime;
        Some(Self {
            machine_busy,
            this_process,
        })
    }

    /// Ticks other processes (and the kernel) were busy since `before`.
    fn others_since(now: Option<Self>, before: Option<&Self>) -> Option<u64> {
        let (now, before) = (now?, before?);
        let machine = now.machine_busy.saturating_sub(before.machine_busy);
        let me = now.this_process.saturating_sub(before.this_process);
        Some(machine.saturating_sub(me))
    }
}

fn machine(cfg: &BenchConfig) -> Machine {
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split(':').nth(1))
            .map(|m| m.trim().to_string())
    });
    Machine {
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        cpu_model,
        release_build: !cfg!(debug_assertions),
        pass: dcsim_arbiter::AllocatorConfig {
            portable_pass: cfg.portable_pass,
            ..dcsim_arbiter::AllocatorConfig::new(2)
        }
        .isa()
        .name()
        .to_string(),
    }
}

impl BenchReport {
    /// The report as a plain-text table for humans.
    pub fn table(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "dcsim arbiter-bench: {} cpu(s) {} (pass: {}){}, {} ms arbiter time per run, median of \
             {} run(s) per trial, median of {} search(es)",
            self.machine.cpus,
            self.machine.cpu_model.as_deref().unwrap_or("unknown cpu"),
            self.machine.pass,
            if self.machine.release_build {
                ""
            } else {
                " [DEBUG BUILD: numbers meaningless]"
            },
            self.config.duration_ms,
            self.config.runs,
            self.config.repeats,
        );
        let head = [
            "nodes", "arch", "thr", "load", "Tbps", "ceil%", "limit", "rt-x", "cmp-Tbps", "lead",
            "p50-us", "p99-us", "p99@c-us", "jain@c",
        ];
        let _ = writeln!(s, "{}", row_text(&head.map(String::from)));
        for r in &self.rows {
            let (p99c, jain) = match &r.contention {
                Some(c) => (
                    format!("{:.1}", c.latency.p99_us),
                    c.fairness
                        .jain
                        .map_or("-".to_string(), |j| format!("{j:.3}")),
                ),
                None => ("-".to_string(), "-".to_string()),
            };
            let cells = [
                r.nodes.to_string(),
                r.architecture.name().to_string(),
                r.threads.to_string(),
                format!("{:.3}", r.load),
                format!("{:.2}", r.sustained_tbps),
                format!("{:.1}%", 100.0 * r.fraction_of_ceiling),
                r.limited_by.clone(),
                format!("{:.2}", r.realtime_factor),
                format!("{:.2}", r.compute_tbps),
                r.lead_batches.to_string(),
                format!("{:.1}", r.latency.p50_us),
                format!("{:.1}", r.latency.p99_us),
                p99c,
                jain,
            ];
            let _ = writeln!(s, "{}", row_text(&cells));
        }
        if let Some(l) = self.config.contention_load {
            let _ = writeln!(
                s,
                "p99@c-us, jain@c: latency p99 and Jain fairness among contending pairs at \
                 offered load {l} (untimed run)"
            );
        }
        let disturbed: u32 = self
            .rows
            .iter()
            .flat_map(|r| &r.trials)
            .map(|t| t.disturbed)
            .sum();
        if disturbed > 0 {
            let _ = writeln!(
                s,
                "WARNING: {disturbed} run(s) kept although other processes were busy during them; \
                 rerun on a quiet machine"
            );
        }
        let _ = writeln!(s, "sustainable: {}", self.definition);
        if !self.paths.is_empty() {
            let _ = writeln!(
                s,
                "\npath assignment (threads split the timeslots), full-bisection Clos, slots of a \
                 serial schedule at load {PATH_LOAD}:"
            );
            let _ = writeln!(
                s,
                "{:>5} {:>12} {:>6} {:>3} {:>6} {:>9} {:>8} {:>7} {:>5}",
                "nodes",
                "tors x hosts",
                "spines",
                "thr",
                "slots",
                "pkts/slot",
                "Mpkt/s",
                "Tbps",
                "rt-x"
            );
            for p in &self.paths {
                let _ = writeln!(
                    s,
                    "{:>5} {:>12} {:>6} {:>3} {:>6} {:>9.0} {:>8.1} {:>7.2} {:>5.2}",
                    p.nodes,
                    format!("{} x {}", p.clos.tors, p.clos.hosts_per_tor),
                    p.clos.spines,
                    p.threads,
                    p.slots,
                    p.packets as f64 / p.slots.max(1) as f64,
                    p.mpackets_per_s,
                    p.tbps,
                    p.realtime_factor,
                );
            }
        }
        s
    }
}

/// One table line: right-aligned cells, the architecture left-aligned.
fn row_text(cells: &[String; 14]) -> String {
    const WIDTH: [usize; 14] = [5, 9, 3, 6, 7, 6, 8, 5, 8, 4, 7, 7, 8, 6];
    let mut line = String::new();
    for (i, (c, w)) in cells.iter().zip(WIDTH).enumerate() {
        if i > 0 {
            line.push(' ');
        }
        if i == 1 {
            line.push_str(&format!("{c:<w$}"));
        } else {
            line.push_str(&format!("{c:>w$}"));
        }
    }
    line
}

impl std::fmt::Display for BenchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.table())
    }
}
