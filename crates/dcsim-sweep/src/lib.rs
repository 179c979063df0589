//! Parameter sweeps: `dcsim sweep FILE --vary PATH=V1,V2,... [--seeds N] [--jobs N]`.
//!
//! A [`Plan`] is the cross product of the `--vary` values times the seeds, each point
//! loaded and built (validated) before anything runs. [`Plan::execute`] runs the runs that
//! are not already complete on a pool of threads, one world per run, each writing the
//! normal run results plus `point.json` into its own folder; [`Plan::write_index`] then
//! rebuilds `index.csv` and `index.json` from the folders. A run whose folder holds
//! `summary.json` and a `point.json` equal to the current point is complete and skipped,
//! so an interrupted sweep resumes where it stopped. The rules are in `docs/sweep.md`.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod index;
mod plots;
mod point;

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use dcsim::metrics::{atomic_write, digest};
use dcsim::{ConfigError, Results, Scenario, ScenarioSpec, World};
use rayon::prelude::*;
use serde_json::{Map, Value, json};

pub use index::{Column, HEADLINE, Index, cell};
pub use plots::plot_against;
pub use point::{Axis, SEED_PATH, VARIANT_PATH, cross, folder_name, labels, parse_axes, sanitize};

/// The most runs one sweep plans (each holds its scenario until it has run).
pub const MAX_RUNS: u64 = 1_000_000;

/// Why a sweep cannot start or finish.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SweepError {
    /// Bad arguments or an invalid scenario point; nothing ran (exit code 2).
    Config(String),
    /// The output folder or the index could not be written (exit code 1).
    Io(String),
}

impl SweepError {
    pub(crate) fn new(message: String) -> Self {
        Self::Config(message)
    }
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(m) | Self::Io(m) => f.write_str(m),
        }
    }
}
impl std::error::Error for SweepError {}

/// What to sweep: the command line of `dcsim sweep`, unparsed.
#[derive(Clone, Debug, Default)]
pub struct SweepSpec {
    /// The scenario file.
    pub file: PathBuf,
    /// `--vary PATH=V1,V2,...` arguments.
    pub vary: Vec<String>,
    /// `--variant NAME:PATH=VALUE,...` arguments: named sets of overrides, one axis.
    pub variants: Vec<String>,
    /// `--seeds N`: seeds `s..s+N` from each point's `sim.seed` (None: just `s`).
    pub seeds: Option<u64>,
    /// `--set PATH=VALUE` overrides applied to every run, before the varied values.
    pub sets: Vec<String>,
    /// Output folder (default `results/sweep/<scenario name>`).
    pub out: Option<PathBuf>,
    /// `--column NAME=/json/pointer` extra index columns.
    pub columns: Vec<String>,
    /// The scenario's text, if it is not to be read from `file` (the Python package's
    /// scenarios); `file` is then where it came from, or empty for text without a file.
    pub text: Option<String>,
}

impl SweepSpec {
    /// The scenario with `sets` applied, from `text` or else the file.
    fn load(&self, sets: &[String]) -> Result<ScenarioSpec, ConfigError> {
        let path = (!self.file.as_os_str().is_empty()).then_some(self.file.as_path());
        match &self.text {
            Some(t) => ScenarioSpec::from_text(t, path, sets),
            None => ScenarioSpec::load(&self.file, sets),
        }
    }

    /// The built scenario with `sets` applied.
    fn build(&self, sets: &[String]) -> Result<Scenario, ConfigError> {
        let source = if self.file.as_os_str().is_empty() {
            "<scenario>".to_string()
        } else {
            self.file.display().to_string()
        };
        self.load(sets)?.build(&source)
    }
}

/// Where a run stands before the sweep executes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunState {
    /// No folder yet.
    New,
    /// A folder without summary.json: an interrupted run, done again from scratch.
    Incomplete,
    /// Complete, but for a different point or scenario: done again.
    Changed,
    /// Complete for this point: skipped.
    Complete,
}

/// One run of the sweep: a point of the cross product and a seed.
#[derive(Debug)]
pub struct Run {
    /// Folder name under the sweep's output folder.
    pub name: String,
    /// The varied paths and this run's values.
    pub params: Vec<(String, String)>,
    /// The run's `sim.seed`.
    pub seed: u64,
    /// The contents of point.json.
    pub point: Value,
    /// The overrides that make this run's scenario, in `--set` form: the sweep's own, then
    /// the varied values, then the seed.
    pub sets: Vec<String>,
    /// State on disk (updated by [`Plan::execute`]).
    pub state: RunState,
    /// Why the run failed, if it failed in [`Plan::execute`].
    pub error: Option<String>,
    scenario: Option<Scenario>,
}

/// How many runs are in each state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// All runs.
    pub total: usize,
    /// Complete: skipped.
    pub complete: usize,
    /// Complete for another point or scenario: run again.
    pub changed: usize,
    /// Interrupted: run again.
    pub incomplete: usize,
    /// Not started.
    pub new: usize,
}

impl Counts {
    /// Runs that [`Plan::execute`] will run.
    pub fn to_run(&self) -> usize {
        self.total - self.complete
    }
}

/// A validated sweep: every run with its folder, state and built scenario.
#[derive(Debug)]
pub struct Plan {
    /// The scenario file.
    pub file: PathBuf,
    /// The scenario's name.
    pub scenario: String,
    /// The output folder.
    pub out: PathBuf,
    /// The varied paths and their values.
    pub axes: Vec<Axis>,
    /// `--seeds N`, if given.
    pub seeds: Option<u64>,
    /// The `--set` overrides.
    pub sets: Vec<String>,
    /// Index columns taken from summary.json: [`HEADLINE`] then the extra ones.
    pub columns: Vec<Column>,
    /// Every run, in index order.
    pub runs: Vec<Run>,
}

/// A `ConfigError` as a message that names the `--vary` value instead of the `--set` it
/// was applied as.
fn vary_error(set: &str, e: &ConfigError) -> String {
    let prefix = format!("--set {set}: ");
    let message = e.message.strip_prefix(&prefix).unwrap_or(&e.message);
    format!("--vary {set}: {}: {}", e.source, message.trim_end())
}

/// The identity of a run in point.json: equal identities mean equal runs.
const IDENTITY: &[&str] = &["params", "seed", "scenario_hash"];

fn state_of(dir: &Path, point: &Value) -> RunState {
    // Complete means every file its manifest lists is there, unchanged.
    if !dcsim::metrics::verify_dir(dir) {
        return if dir.exists() {
            RunState::Incomplete
        } else {
            RunState::New
        };
    }
    let old: Option<Value> = std::fs::read(dir.join("point.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    match old {
        Some(old) if IDENTITY.iter().all(|k| same(k, old.get(k), point.get(k))) => {
            RunState::Complete
        }
        _ => RunState::Changed,
    }
}

/// Whether two values of an [`IDENTITY`] key are the same: parameters compare in their
/// [`point::canonical`] forms, as the command line and the Python package write them
/// differently.
fn same(key: &str, a: Option<&Value>, b: Option<&Value>) -> bool {
    let canonical = |v: Option<&Value>| -> Option<Vec<(String, String)>> {
        v?.as_object()?
            .iter()
            .map(|(k, v)| Some((k.clone(), point::canonical(v.as_str()?))))
            .collect()
    };
    if key == "params" {
        canonical(a).is_some_and(|x| Some(x) == canonical(b))
    } else {
        a == b
    }
}

impl Plan {
    /// Parses the arguments, loads and builds every run, and reads each run's state on
    /// disk. Nothing is written. Errors name the bad argument or `--vary` value.
    pub fn new(spec: &SweepSpec) -> Result<Self, SweepError> {
        let axes = parse_axes(&spec.variants, &spec.vary)?;
        let columns = index::columns(&spec.columns)?;
        let seed_axis = axes.iter().any(|a| a.path == SEED_PATH);
        match spec.seeds {
            Some(0) => return Err(SweepError::new("--seeds 0: need at least one seed".into())),
            Some(_) if seed_axis => {
                return Err(SweepError::new(
                    "--seeds cannot be combined with --vary sim.seed=...; use one of them".into(),
                ));
            }
            _ => {}
        }
        // Every run is planned (a scenario and a folder name each) before any runs: refuse a
        // sweep too large to plan, before planning it.
        let points = axes
            .iter()
            .try_fold(1u64, |n, a| n.checked_mul(a.values.len() as u64))
            .and_then(|n| n.checked_mul(spec.seeds.unwrap_or(1)));
        if points.is_none_or(|n| n > MAX_RUNS) {
            let mut factors: Vec<String> = axes
                .iter()
                .map(|a| format!("{} values of {}", a.values.len(), a.path))
                .collect();
            factors.push(format!("{} seeds", spec.seeds.unwrap_or(1)));
            return Err(SweepError::new(format!(
                "{} runs ({}): at most {MAX_RUNS} in one sweep; split it into several sweeps",
                points.map_or("more than 2^64".to_string(), |n| n.to_string()),
                factors.join(" x ")
            )));
        }
        let mut header: Vec<&str> = axes.iter().map(|a| a.path.as_str()).collect();
        header.extend(["seed", "status", "run"]);
        header.extend(columns.iter().map(|c| c.name.as_str()));
        for (i, h) in header.iter().enumerate() {
            if header[..i].contains(h) {
                return Err(SweepError::new(format!(
                    "index column {h:?} appears twice; give --column another name"
                )));
            }
        }

        let base = spec
            .load(&spec.sets)
            .map_err(|e| SweepError::new(e.to_string()))?;
        let scenario = base.name.clone().unwrap_or_else(|| "sweep".into());
        let out = spec
            .out
            .clone()
            .unwrap_or_else(|| Path::new("results/sweep").join(&scenario));

        // Each value on its own first, so an error names the --vary value or the variant
        // that causes it.
        for a in &axes {
            for (i, v) in a.values.iter().enumerate() {
                let mut sets = spec.sets.clone();
                sets.extend(a.sets(i));
                spec.build(&sets).map_err(|e| {
                    SweepError::new(if a.overrides.is_empty() {
                        vary_error(&format!("{}={v}", a.path), &e)
                    } else {
                        format!("--variant {v}: {e}")
                    })
                })?;
            }
        }

        let labels = labels(&axes);
        let mut runs = Vec::new();
        for p in cross(&axes) {
            let params: Vec<(String, String)> = axes
                .iter()
                .zip(&p)
                .map(|(a, &v)| (a.path.clone(), a.values[v].clone()))
                .collect();
            let mut sets = spec.sets.clone();
            for (a, &v) in axes.iter().zip(&p) {
                sets.extend(a.sets(v));
            }
            let what = |seed: Option<u64>, e: &ConfigError| {
                let ps: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let seed = seed.map(|s| format!(" (seed {s})")).unwrap_or_default();
                SweepError::new(format!("sweep point {}{seed}: {e}", ps.join(", ")))
            };
            let seeds: Vec<Option<u64>> = match spec.seeds {
                None => vec![None],
                Some(n) => {
                    let s0 = spec.load(&sets).map_err(|e| what(None, &e))?.sim.seed;
                    (0..n)
                        .map(|i| {
                            s0.checked_add(i).map(Some).ok_or_else(|| {
                                SweepError::new(format!("--seeds {n}: seed {s0} + {i} overflows"))
                            })
                        })
                        .collect::<Result<_, _>>()?
                }
            };
            for seed in seeds {
                let mut sets = sets.clone();
                if let Some(s) = seed {
                    sets.push(format!("{SEED_PATH}={s}"));
                }
                let sc = spec.build(&sets).map_err(|e| what(seed, &e))?;
                let seed = sc.spec.sim.seed;
                let name = folder_name(&labels, &p, (!seed_axis).then_some(seed));
                let resolved = serde_json::to_vec(&sc.spec).unwrap_or_default();
                let point = json!({
                    "scenario": sc.name,
                    "file": spec.file.display().to_string(),
                    "params": params.iter().map(|(k, v)| (k.clone(), Value::from(v.as_str()))).collect::<Map<_, _>>(),
                    "seed": seed,
                    "set": spec.sets,
                    "scenario_hash": format!("{:016x}", digest(&[&resolved])),
                });
                let state = state_of(&out.join(&name), &point);
                runs.push(Run {
                    name,
                    params: params.clone(),
                    seed,
                    point,
                    sets,
                    state,
                    error: None,
                    scenario: (state != RunState::Complete).then_some(sc),
                });
            }
        }
        let mut names: Vec<String> = runs.iter().map(|r| r.name.to_lowercase()).collect();
        names.sort();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(SweepError::new(format!(
                "two runs would share the folder {}; the --vary values must differ in more than punctuation",
                w[0]
            )));
        }
        Ok(Self {
            file: spec.file.clone(),
            scenario,
            out,
            axes,
            seeds: spec.seeds,
            sets: spec.sets.clone(),
            columns,
            runs,
        })
    }

    /// Records that run `name` failed elsewhere (on a Dask worker) with `error`, for the
    /// index; false if the plan has no such run.
    pub fn fail(&mut self, name: &str, error: &str) -> bool {
        match self.runs.iter_mut().find(|r| r.name == name) {
            Some(r) => {
                r.error = Some(error.to_string());
                true
            }
            None => false,
        }
    }

    /// Takes the built scenario of a run that is to run (None for a complete run, or one
    /// taken already), for running it elsewhere.
    pub fn take_scenario(&mut self, name: &str) -> Option<Scenario> {
        self.runs
            .iter_mut()
            .find(|r| r.name == name)?
            .scenario
            .take()
    }

    /// How many runs are in each state.
    pub fn counts(&self) -> Counts {
        let mut c = Counts {
            total: self.runs.len(),
            ..Counts::default()
        };
        for r in &self.runs {
            match r.state {
                RunState::New => c.new += 1,
                RunState::Incomplete => c.incomplete += 1,
                RunState::Changed => c.changed += 1,
                RunState::Complete => c.complete += 1,
            }
        }
        c
    }

    /// Runs every run that is not complete, `jobs` at a time, each in its own world on one
    /// thread; `done(run name, error)` is called as each finishes. A run that fails does
    /// not stop the others: its error is kept in [`Run::error`].
    pub fn execute(
        &mut self,
        jobs: usize,
        done: &(dyn Fn(&str, Option<&str>) + Sync),
    ) -> Result<(), SweepError> {
        std::fs::create_dir_all(&self.out)
            .map_err(|e| SweepError::Io(format!("cannot create {}: {e}", self.out.display())))?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(jobs.max(1))
            .build()
            .map_err(|e| SweepError::Io(format!("cannot start worker threads: {e}")))?;
        let todo: Vec<(usize, Scenario)> = self
            .runs
            .iter_mut()
            .enumerate()
            .filter_map(|(i, r)| r.scenario.take().map(|s| (i, s)))
            .collect();
        let runs = &self.runs;
        let out = &self.out;
        let results: Vec<(usize, Result<(), String>)> = pool.install(|| {
            todo.into_par_iter()
                .map(|(i, sc)| {
                    let r = &runs[i];
                    let res = run_point(out, &r.name, &r.point, sc).map(|_| ());
                    done(&r.name, res.as_ref().err().map(String::as_str));
                    (i, res)
                })
                .collect()
        });
        for (i, res) in results {
            match res {
                Ok(()) => self.runs[i].state = RunState::Complete,
                Err(e) => self.runs[i].error = Some(e),
            }
        }
        Ok(())
    }

    /// Rebuilds index.csv and index.json from the run folders and writes both atomically.
    pub fn write_index(&self) -> Result<Index, SweepError> {
        let mut header: Vec<String> = self.axes.iter().map(|a| a.path.clone()).collect();
        header.extend(["seed".into(), "status".into()]);
        header.extend(self.columns.iter().map(|c| c.name.clone()));
        header.push("run".into());
        let mut rows = Vec::with_capacity(self.runs.len());
        for r in &self.runs {
            let mut row = Map::new();
            for (k, v) in &r.params {
                row.insert(k.clone(), Value::from(v.as_str()));
            }
            row.insert("seed".into(), Value::from(r.seed));
            let summary: Result<Value, String> = match (&r.error, r.state) {
                (Some(e), _) => Err(format!("failed: {e}")),
                (None, RunState::Complete) => {
                    let p = self.out.join(&r.name).join("summary.json");
                    std::fs::read(&p)
                        .map_err(|e| e.to_string())
                        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
                        .map_err(|e| format!("failed: cannot read {}: {e}", p.display()))
                }
                (None, _) => Err("not run".into()),
            };
            let status = summary
                .as_ref()
                .err()
                .cloned()
                .unwrap_or_else(|| "ok".into());
            row.insert("status".into(), Value::from(status));
            for c in &self.columns {
                let v = summary.as_ref().ok().and_then(|s| s.pointer(&c.pointer));
                row.insert(c.name.clone(), v.cloned().unwrap_or(Value::Null));
            }
            row.insert("run".into(), Value::from(r.name.as_str()));
            rows.push(row);
        }
        let index = Index {
            header,
            rows,
            params: self.axes.len(),
        };
        let io = |what: &str, e: &dyn fmt::Display| {
            SweepError::Io(format!(
                "cannot write {}: {e}",
                self.out.join(what).display()
            ))
        };
        let csv = index.to_csv().map_err(|e| io("index.csv", &e))?;
        let vary: Map<String, Value> = self
            .axes
            .iter()
            .filter(|a| a.overrides.is_empty())
            .map(|a| (a.path.clone(), json!(a.values)))
            .collect();
        let variants: Map<String, Value> = self
            .axes
            .iter()
            .filter(|a| !a.overrides.is_empty())
            .flat_map(|a| a.values.iter().zip(&a.overrides))
            .map(|(name, sets)| (name.clone(), json!(sets)))
            .collect();
        let mut js = serde_json::to_vec_pretty(&json!({
            "schema_version": dcsim::metrics::OUTPUT_SCHEMA_VERSION,
            "scenario": self.scenario,
            "file": self.file.display().to_string(),
            "vary": vary,
            "variants": variants,
            "seeds": self.seeds,
            "set": self.sets,
            "columns": index.header,
            "runs": index.rows,
        }))
        .map_err(|e| io("index.json", &e))?;
        js.push(b'\n');
        std::fs::create_dir_all(&self.out).map_err(|e| io("", &e))?;
        atomic_write(&self.out.join("index.csv"), &csv).map_err(|e| io("index.csv", &e))?;
        atomic_write(&self.out.join("index.json"), &js).map_err(|e| io("index.json", &e))?;
        let table = dcsim_columnar::json_table("index", &index.header, &index.rows, index.params)
            .map_err(|e| io("index.parquet", &e))?;
        let pq = dcsim_columnar::to_parquet(&table).map_err(|e| io("index.parquet", &e))?;
        atomic_write(&self.out.join("index.parquet"), &pq).map_err(|e| io("index.parquet", &e))?;
        let runs: Vec<(&str, PathBuf)> = self
            .runs
            .iter()
            .map(|r| (r.name.as_str(), self.out.join(&r.name)))
            .collect();
        let runs: Vec<(&str, &Path)> = runs.iter().map(|(n, d)| (*n, d.as_path())).collect();
        dcsim_columnar::dataset::sync(&self.out.join(DATASET), &runs)
            .map_err(|e| io(DATASET, &e))?;
        Ok(index)
    }
}

/// Runs one run of a sweep from scratch and writes point.json with its results as the whole
/// folder `out/name` (the old folder, if any, is replaced in one step), then its files of
/// the sweep's Parquet dataset; returns its digest. What a sweep's worker does for each run,
/// on a thread here or on a Dask worker from the Python package.
///
/// # Errors
/// The run failed (a panic is caught and reported) or its results could not be written.
pub fn run_point(
    out: &Path,
    name: &str,
    point: &Value,
    scenario: Scenario,
) -> Result<String, String> {
    let dir = out.join(name);
    let mut text = serde_json::to_vec_pretty(point).map_err(|e| e.to_string())?;
    text.push(b'\n');
    // Held until the results are committed: another sweep writing the same run is refused
    // before this one simulates.
    let _lock = dcsim::metrics::DirLock::take(&dir)
        .map_err(|e| format!("cannot write results to {}: {e}", dir.display()))?;
    let results = catch_unwind(AssertUnwindSafe(|| -> Result<Results, String> {
        let mut world = World::new(scenario).map_err(|e| e.to_string())?;
        world.spill_time_series_beside(&dir);
        world.run(&mut |_| {});
        Ok(Results::collect(&mut world))
    }))
    .map_err(|p| {
        let msg = p
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        format!("panicked: {msg}")
    })??;
    results
        .write_with(&dir, &[("point.json", &text)])
        .map_err(|e| format!("cannot write results to {}: {e}", dir.display()))?;
    dcsim_columnar::dataset::write_run(&out.join(DATASET), name, &results)
        .map_err(|e| format!("cannot write the dataset files of {name}: {e}"))?;
    Ok(results.digest().to_string())
}

/// The sweep's Parquet dataset folder, inside its output folder.
pub const DATASET: &str = "dataset";
