//! Paper-reproduction experiments: `dcsim repro NAME [--quick] [--out DIR]`.
//!
//! Each experiment builds its scenarios as typed values (the builders in `build.rs`; each
//! is saved as TOML next to its run's results, so any run can be repeated with `dcsim
//! run`), runs the independent ones in parallel, writes `result.json` with the figures
//! named in the reference's experiments list, CSV data, and plot specifications that one
//! plotting script (`crates/dcsim-metrics/src/plot.py`, matplotlib) turns into PNG and SVG
//! files.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod build;
mod claims;
mod common;
mod dx;
mod fastpass;
mod fattree;
mod fct_ps;
mod pulser;
mod pulser_testbed;
mod sdn;
pub mod table;
mod verdict;
mod xpass;

use std::path::{Path, PathBuf};

pub use common::{Ctx, Plot, Series};
use dcsim::metrics::atomic_write;
use serde_json::Value;
pub use verdict::{Bound, Check, Claim, Verdict, Verdicts};

/// An experiment: name, one-line description, and the function that runs it.
pub struct Experiment {
    /// Name used on the command line.
    pub name: &'static str,
    /// What it reproduces.
    pub description: &'static str,
    /// Runs it; returns the contents of result.json.
    pub run: fn(&Ctx) -> Result<Value, String>,
    /// Its claims and checks, read from result.json.
    pub judge: claims::Judge,
}

/// Every experiment, in the order `dcsim list` shows them.
pub const EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "xpass-convergence",
        description: "a second flow joins: ExpressPass vs DCTCP and RCP at 10 and 100 Gb/s, \
            convergence time",
        run: xpass::convergence::run,
        judge: claims::convergence,
    },
    Experiment {
        name: "xpass-join-leave",
        description: "five flows join then leave one by one: throughput, queues, fairness",
        run: xpass::join_leave::run,
        judge: claims::join_leave,
    },
    Experiment {
        name: "xpass-flow-scalability",
        description: "N = 4..2048 long flows on one bottleneck: utilization, Jain, max queue",
        run: xpass::flow_scalability::run,
        judge: claims::flow_scalability,
    },
    Experiment {
        name: "xpass-multi-bottleneck",
        description: "parking lot with 1..6 bottlenecks: min link utilization per feedback law",
        run: xpass::multi_bottleneck::run,
        judge: claims::multi_bottleneck,
    },
    Experiment {
        name: "xpass-multi-bottleneck-fairness",
        description: "one sender, N + 1 flows; N flows' credits squeezed upstream: flow 0's share vs max-min",
        run: xpass::multi_bottleneck_fairness::run,
        judge: claims::multi_bottleneck_fairness,
    },
    Experiment {
        name: "xpass-credit-queue",
        description: "credit queue capacity 1..128 credits vs utilization",
        run: xpass::credit_queue::run,
        judge: claims::credit_queue,
    },
    Experiment {
        name: "xpass-jitter",
        description: "credit jitter 0.01..0.08 x 1..1024 flows: Jain fairness over 1 ms",
        run: xpass::jitter::run,
        judge: claims::jitter,
    },
    Experiment {
        name: "xpass-shuffle",
        description: "all-to-all shuffle on one ToR: FCT CDF, ExpressPass vs DCTCP",
        run: xpass::shuffle::run,
        judge: claims::shuffle,
    },
    Experiment {
        name: "xpass-fattree",
        description: "192-host fat-tree, data mining and web search at load 0.6, 10 and 40 Gb/s, \
            ExpressPass, DCTCP, HULL, DX: FCT per size bucket, queues per tier",
        run: fattree::fattree,
        judge: claims::fattree,
    },
    Experiment {
        name: "dx-queue",
        description: "2-30 long flows on a 1 or 10 Gb/s bottleneck: DX vs DCTCP queueing delay \
            and utilization; DX under timestamp errors",
        run: dx::dx_queue,
        judge: claims::dx,
    },
    Experiment {
        name: "fct-ps",
        description: "one 10 Gb/s bottleneck at load 0.5: slowdown per size bucket, ExpressPass \
            and DCTCP beside ideal fair sharing",
        run: fct_ps::fct_ps,
        judge: claims::fct_ps,
    },
    Experiment {
        name: "pulser-leafspine",
        description: "400-host leaf-spine, Pulser mix at loads 20-80 %, incast degree 24 (32, 40): \
            DCTCP, ICTCP, Pulser, Ideal: short-flow FCT, long-flow throughput, one incast episode",
        run: pulser::pulser_leafspine,
        judge: claims::pulser,
    },
    Experiment {
        name: "pulser-testbed",
        description: "the Pulser testbed: 16 senders at 50 Mb/s into one aggregator, bursts of \
            100 KB flows from 15 and a 40 MB flow from one; DCTCP, Pulser, ICTCP: short-flow \
            FCT, long-flow throughput",
        run: pulser_testbed::pulser_testbed,
        judge: claims::pulser_testbed,
    },
    Experiment {
        name: "fastpass-zero-queue",
        description: "64-host full-bisection leaf-spine, web search at loads 20-80 %: Fastpass \
            (arbiter in the network) vs DCTCP vs ExpressPass: queues per tier, FCT, overhead",
        run: fastpass::fastpass_zero_queue,
        judge: claims::fastpass,
    },
    Experiment {
        name: "sdn-ecn",
        description: "the central-control thesis's three 100 Mb/s set-ups: long CUBIC flows plus a \
            2 MB interactive flow; CUBIC, RED, ECN marking and the SDN ECN controller",
        run: sdn::sdn_ecn,
        judge: claims::sdn_ecn,
    },
    Experiment {
        name: "xpass-zero-loss",
        description: "every ExpressPass microbenchmark above: data-packet drops (must be zero)",
        run: xpass::zero_loss::run,
        judge: claims::zero_loss,
    },
];

/// A finished experiment: result.json's contents and its claims and checks.
pub struct Outcome {
    /// result.json, `claims` and `checks` included.
    pub result: Value,
    /// The claims and checks.
    pub verdicts: Verdicts,
    /// Whether it was the quick form (whose claims are undecided).
    pub quick: bool,
}

impl Outcome {
    /// One line per claim and per check.
    pub fn lines(&self) -> Vec<String> {
        self.verdicts.lines(self.quick)
    }

    /// How many checks failed.
    pub fn failed_checks(&self) -> usize {
        self.verdicts.failed().count()
    }
}

/// The experiment named `name`.
pub fn experiment(name: &str) -> Result<&'static Experiment, String> {
    EXPERIMENTS.iter().find(|e| e.name == name).ok_or_else(|| {
        let names: Vec<&str> = EXPERIMENTS.iter().map(|e| e.name).collect();
        format!(
            "no experiment named {name:?}; experiments: {}",
            names.join(", ")
        )
    })
}

/// How to run an experiment.
#[derive(Clone, Debug)]
pub struct Options {
    /// The quick form.
    pub quick: bool,
    /// Output folder.
    pub out: PathBuf,
    /// Worker threads for independent runs.
    pub jobs: usize,
    /// Run every run again, even when its folder holds complete results.
    pub fresh: bool,
    /// Where the other experiments' folders are (`dcsim repro --all`): xpass-zero-loss
    /// reads the microbenchmarks there (reusing their finished runs) instead of under its
    /// own folder.
    pub siblings: Option<PathBuf>,
}

/// Runs experiment `name` and writes its outputs into `opts.out`.
///
/// Runs already complete in the output folder (same scenario) are reused unless
/// `opts.fresh`.
pub fn run(name: &str, opts: &Options) -> Result<Outcome, String> {
    let e = experiment(name)?;
    let _lock = take_folder(&opts.out, e.name)?;
    let mut ctx = Ctx::new(opts.quick, opts.out.clone(), opts.jobs)?;
    ctx.fresh = opts.fresh;
    ctx.siblings = opts.siblings.clone();
    run_in(e, &ctx)
}

/// One run of an experiment as [`plan`] finds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedRun {
    /// Its folder's name under `runs/`.
    pub name: String,
    /// Its folder holds its complete results already (and it is not to be run fresh).
    pub complete: bool,
}

/// The runs experiment `name` would make, without running any: each to be run by
/// [`run_planned`] (anywhere that sees `opts.out`, in any order), after which [`run`]
/// reuses them all and writes the result. An experiment that runs other experiments
/// (`xpass-zero-loss`) has no plan of its own: `Ok(None)`, and [`run`] does its work.
pub fn plan(name: &str, opts: &Options) -> Result<Option<Vec<PlannedRun>>, String> {
    let e = experiment(name)?;
    if e.name == ZERO_LOSS {
        return Ok(None);
    }
    let _lock = take_folder(&opts.out, e.name)?;
    let runs = planned_runs(e, opts)?;
    runs.iter()
        .map(|r| {
            Ok(PlannedRun {
                name: r.name.clone(),
                complete: !opts.fresh && common::reusable(&opts.out, r)?,
            })
        })
        .collect::<Result<Vec<_>, String>>()
        .map(Some)
}

/// One run of an experiment's plan, with how long it will take on this machine.
#[derive(Debug)]
pub struct RunEstimate {
    /// Its folder's name under `runs/`.
    pub name: String,
    /// Its folder holds its complete results already: nothing to run.
    pub complete: bool,
    /// For a run still to do: its estimate, or why there is none.
    pub estimate: Option<Result<dcsim::estimate::Estimate, String>>,
}

/// [`plan`], with each run still to do probed for `budget` of wall time and its whole
/// time extrapolated ([`dcsim::estimate::Estimate`]): one run after the other, on one core.
pub fn estimate(
    name: &str,
    opts: &Options,
    budget: std::time::Duration,
) -> Result<Option<Vec<RunEstimate>>, String> {
    let e = experiment(name)?;
    if e.name == ZERO_LOSS {
        return Ok(None);
    }
    let _lock = take_folder(&opts.out, e.name)?;
    planned_runs(e, opts)?
        .into_iter()
        .map(|r| {
            let complete = !opts.fresh && common::reusable(&opts.out, &r)?;
            let estimate = (!complete).then(|| {
                let mut s = r.scenario.build(&r.name).map_err(|e| e.to_string())?;
                s.flows.extend(r.extra_flows.iter().copied());
                dcsim::estimate::Estimate::of(s, budget).map_err(|e| e.to_string())
            });
            Ok(RunEstimate {
                name: r.name,
                complete,
                estimate,
            })
        })
        .collect::<Result<Vec<_>, String>>()
        .map(Some)
}

/// Runs the run named `run` of experiment `name`'s plan into `opts.out/runs/<run>/`, as
/// [`run`] would (reused if complete there, unless `opts.fresh`). Each run takes its own
/// folder's lock, so any number of these may run at once, one per run.
pub fn run_planned(name: &str, opts: &Options, run: &str) -> Result<(), String> {
    let e = experiment(name)?;
    let spec = planned_runs(e, opts)?
        .into_iter()
        .find(|r| r.name == run)
        .ok_or_else(|| format!("experiment {name} has no run named {run:?}"))?;
    common::run_one(&opts.out, opts.fresh, spec).map(|_| ())
}

/// The experiment that runs the others.
const ZERO_LOSS: &str = "xpass-zero-loss";

/// The runs `e` gives [`Ctx::run_many`], from a context that runs nothing.
fn planned_runs(e: &Experiment, opts: &Options) -> Result<Vec<common::RunSpec>, String> {
    let mut ctx = Ctx::planning(opts.quick, opts.out.clone())?;
    ctx.siblings = opts.siblings.clone();
    match (e.run)(&ctx) {
        Err(msg) if msg == common::PLANNED => Ok(ctx.planned()),
        Err(msg) => Err(msg),
        Ok(_) => Err(format!("{}: finished without running anything", e.name)),
    }
}

/// The file of an experiment's folder that names the experiment whose runs it holds.
pub const EXPERIMENT_FILE: &str = "experiment.txt";

/// Locks `out` for as long as the value returned lives (a second writer is refused at its
/// start, not when it commits) and makes it the folder of experiment `name`
/// ([`claim_folder`]).
pub(crate) fn take_folder(out: &Path, name: &str) -> Result<dcsim::metrics::DirLock, String> {
    let lock = dcsim::metrics::DirLock::take(out)
        .map_err(|err| format!("cannot write to {}: {err}", out.display()))?;
    claim_folder(out, name)?;
    Ok(lock)
}

/// Makes `out` the folder of experiment `name`, or says why it cannot be: it holds another
/// experiment's runs (named by its [`EXPERIMENT_FILE`] or its result.json), a run's or a
/// sweep's results, or other files. Runs of two experiments are never mixed in one folder.
fn claim_folder(out: &Path, name: &str) -> Result<(), String> {
    let shown = out.display();
    let refuse = |what: String| {
        Err(format!(
            "{shown} holds {what}; choose another --out, or remove the folder to run {name} \
             there"
        ))
    };
    let marker = out.join(EXPERIMENT_FILE);
    let named = match std::fs::read_to_string(&marker) {
        Ok(t) => Some(t.trim().to_string()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read {}: {e}", marker.display())),
    };
    // Folders written before the marker existed name their experiment in result.json.
    let named = named.or_else(|| {
        let text = std::fs::read(out.join("result.json")).ok()?;
        let v: Value = serde_json::from_slice(&text).ok()?;
        v["experiment"].as_str().map(str::to_string)
    });
    match named {
        Some(other) if other == name => return Ok(()),
        Some(other) => return refuse(format!("the runs of experiment {other}")),
        None => {}
    }
    let entries: Vec<String> = match std::fs::read_dir(out) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|f| !f.starts_with('.'))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(format!("cannot read {shown}: {e}")),
    };
    if entries.iter().any(|f| f == "summary.json") {
        return refuse("the results of a run".into());
    }
    if entries.iter().any(|f| f == "index.json") {
        return refuse("the results of a sweep".into());
    }
    // An interrupted experiment of an earlier version: its runs and plots only.
    if let Some(f) = entries
        .iter()
        .find(|f| !["runs", "plots"].contains(&f.as_str()))
    {
        return refuse(format!(
            "other files ({f}) and is not an experiment's folder"
        ));
    }
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {shown}: {e}"))?;
    atomic_write(&marker, format!("{name}\n").as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", marker.display()))
}

/// Runs `e` in `ctx`, judges it, and writes result.json and the plots.
pub(crate) fn run_in(e: &Experiment, ctx: &Ctx) -> Result<Outcome, String> {
    let mut result = (e.run)(ctx)?;
    let mut verdicts = Verdicts::default();
    claims::shared(&result, &mut verdicts);
    (e.judge)(&result, &mut verdicts);
    let (claims, checks) = verdicts.to_json(ctx.quick);
    if let Value::Object(m) = &mut result {
        m.insert("experiment".into(), Value::from(e.name));
        m.insert("quick".into(), Value::from(ctx.quick));
        m.insert("claims".into(), claims);
        m.insert("checks".into(), checks);
    }
    ctx.write_json("result.json", &result)?;
    ctx.render_plots()?;
    Ok(Outcome {
        result,
        verdicts,
        quick: ctx.quick,
    })
}

#[cfg(test)]
mod tests {
    use dcsim::ScenarioSpec;

    use super::*;

    /// A folder holds one experiment's runs: another experiment, a run's or a sweep's
    /// results and unknown files are refused with the reason, the folder untouched; an
    /// absent or empty folder, or an earlier version's folder of the same experiment, is
    /// claimed; a folder in use by another process is refused before anything runs.
    #[test]
    fn a_folder_holds_the_runs_of_one_experiment() {
        let guard = tempfile::Builder::new()
            .prefix("dcsim-repro-claim-")
            .tempdir()
            .unwrap();
        let d = guard.path();
        let fresh = d.join("a");
        claim_folder(&fresh, "xpass-convergence").unwrap();
        assert_eq!(
            std::fs::read_to_string(fresh.join(EXPERIMENT_FILE)).unwrap(),
            "xpass-convergence\n"
        );
        claim_folder(&fresh, "xpass-convergence").unwrap();
        let e = claim_folder(&fresh, "pulser-incast").unwrap_err();
        assert!(
            e.contains("holds the runs of experiment xpass-convergence") && e.contains("--out"),
            "{e}"
        );
        let old = d.join("old");
        std::fs::create_dir_all(old.join("runs/x")).unwrap();
        std::fs::write(old.join("result.json"), r#"{"experiment": "dx-queue"}"#).unwrap();
        let e = claim_folder(&old, "pulser-incast").unwrap_err();
        assert!(e.contains("experiment dx-queue"), "{e}");
        claim_folder(&old, "dx-queue").unwrap();
        for (file, said) in [
            ("summary.json", "the results of a run"),
            ("index.json", "the results of a sweep"),
            ("notes.txt", "other files (notes.txt)"),
        ] {
            let f = d.join(file.replace('.', "-"));
            std::fs::create_dir_all(&f).unwrap();
            std::fs::write(f.join(file), "{}").unwrap();
            let e = claim_folder(&f, "dx-queue").unwrap_err();
            assert!(e.contains(said), "{e}");
            assert!(!f.join(EXPERIMENT_FILE).exists());
        }
        // pid 1 is always alive.
        std::fs::write(d.join(".busy.lock"), "1").unwrap();
        let e = take_folder(&d.join("busy"), "dx-queue").unwrap_err();
        assert!(e.contains("process 1 is writing"), "{e}");
        assert!(!d.join("busy").exists());
        guard.close().unwrap();
    }

    /// Every experiment's quick-form scenarios, as written to `scenario.toml`, parse and
    /// build back to the scenario that runs (xpass-zero-loss runs the others' scenarios).
    #[test]
    fn written_scenarios_build_back_to_the_scenarios_that_run() {
        let guard = tempfile::Builder::new()
            .prefix("dcsim-repro-plan-")
            .tempdir()
            .unwrap();
        let dir = guard.path();
        for e in EXPERIMENTS.iter().filter(|e| e.name != "xpass-zero-loss") {
            let ctx = Ctx::planning(true, dir.join(e.name)).unwrap();
            assert_eq!((e.run)(&ctx).unwrap_err(), common::PLANNED, "{}", e.name);
            let runs = ctx.planned();
            assert!(!runs.is_empty(), "{}", e.name);
            for r in runs {
                let at = format!("{}/{}", e.name, r.name);
                let text = r.toml().unwrap();
                let parsed = ScenarioSpec::parse(&text, &at, &[]).unwrap();
                assert_eq!(parsed, r.scenario, "{at}");
                let want = r.scenario.build(&r.name).unwrap().to_toml();
                assert_eq!(parsed.build(&r.name).unwrap().to_toml(), want, "{at}");
            }
        }
        guard.close().unwrap();
    }

    /// What result.json says of the ExpressPass experiments' set-ups holds for every run:
    /// the TCP baselines run the papers' profile (`ns2`) unless their series is named for
    /// another, and ExpressPass waits ns-2's 100 ms before it repeats a request or a NACK,
    /// except in the fat-tree, whose script sets 100 µs.
    #[test]
    fn expresspass_experiments_run_the_recorded_tcp_profile_and_timeout() {
        use dcsim::transport::cc::CcSpec;
        use dcsim::transport::{TcpProfile, TransportSpec};

        let guard = tempfile::Builder::new()
            .prefix("dcsim-repro-tcp-")
            .tempdir()
            .unwrap();
        let dir = guard.path();
        let mut seen = (0, 0);
        for e in EXPERIMENTS
            .iter()
            .filter(|e| e.name.starts_with("xpass-") && e.name != "xpass-zero-loss")
        {
            let ctx = Ctx::planning(true, dir.join(e.name)).unwrap();
            assert_eq!((e.run)(&ctx).unwrap_err(), common::PLANNED, "{}", e.name);
            for r in ctx.planned() {
                let at = format!("{}/{}", e.name, r.name);
                match &r.scenario.transport {
                    // RCP's routers set the rate; its start is not the papers' TCP.
                    TransportSpec::Tcp(t) if matches!(t.cc, CcSpec::Rcp(_)) => {}
                    TransportSpec::Tcp(t) => {
                        let want = if r.name.contains("simple") {
                            TcpProfile::Simple
                        } else {
                            build::TCP_BASELINE
                        };
                        assert_eq!(t.profile, Some(want), "{at}");
                        seen.0 += 1;
                    }
                    TransportSpec::Expresspass(x) => {
                        let want = if ["xpass-fattree", "xpass-shuffle"].contains(&e.name) {
                            dcsim::engine::Dur::from_us(100)
                        } else {
                            build::NS2_XPASS_RTO
                        };
                        assert_eq!(x.resolve().rto, Some(want), "{at}");
                        seen.1 += 1;
                    }
                    TransportSpec::Ideal(_) | TransportSpec::Fastpass(_) => {}
                }
            }
        }
        assert!(seen.0 > 10 && seen.1 > 10, "{seen:?}");
        guard.close().unwrap();
    }

    /// An experiment run as a plan, one run at a time in another order (as a cluster's
    /// workers would), then assembled, writes what running it whole writes; the plan then
    /// finds every run complete, and a run it does not have is refused by name.
    #[test]
    fn a_planned_experiment_run_piece_by_piece_equals_the_whole() {
        let guard = tempfile::Builder::new()
            .prefix("dcsim-repro-planned-")
            .tempdir()
            .unwrap();
        let opts = |dir: &str| Options {
            quick: true,
            out: guard.path().join(dir),
            jobs: 1,
            fresh: false,
            siblings: None,
        };
        let name = "dx-queue";
        let whole = run(name, &opts("whole")).unwrap();
        let (pieces, o) = ("pieces", opts("pieces"));
        let planned = plan(name, &o).unwrap().unwrap();
        assert!(planned.len() > 1 && planned.iter().all(|r| !r.complete));
        for r in planned.iter().rev() {
            run_planned(name, &o, &r.name).unwrap();
        }
        let again = plan(name, &o).unwrap().unwrap();
        assert!(again.iter().all(|r| r.complete), "{again:?}");
        let assembled = run(name, &o).unwrap();
        assert_eq!(assembled.result, whole.result);
        // result.json and every table, byte for byte.
        let files: Vec<String> = std::fs::read_dir(guard.path().join("whole"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|f| f == "result.json" || f.ends_with(".csv"))
            .collect();
        assert!(files.len() > 1, "{files:?}");
        for f in &files {
            let read = |d: &str| std::fs::read(guard.path().join(d).join(f)).unwrap();
            assert_eq!(read(pieces), read("whole"), "{f}");
        }
        let e = run_planned(name, &o, "no-such-run").unwrap_err();
        assert!(e.contains("no run named"), "{e}");
        assert_eq!(plan("xpass-zero-loss", &opts("zero")).unwrap(), None);
        guard.close().unwrap();
    }
}
