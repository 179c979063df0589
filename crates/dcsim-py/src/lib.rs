//! The native half of the `dcsim` Python package (`dcsim._dcsim`): a thin layer that parses
//! scenarios, runs worlds with the GIL released and hands results to pyarrow. The
//! user-facing API, with its docstrings and type hints, is the Python code in
//! `python/dcsim/`; nothing here is called from inside the event loop but an interrupt check
//! every 65,536 events.
#![forbid(unsafe_code)]

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arrow_pyarrow::ToPyArrow;
use dcsim::{ConfigError, Results, Scenario, ScenarioSpec, World};
use dcsim_columnar::Format;
use pyo3::create_exception;
use pyo3::exceptions::{PyKeyboardInterrupt, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

create_exception!(
    dcsim,
    ScenarioError,
    PyValueError,
    "A scenario that cannot be parsed or validated; the message is the CLI's (file, key path, \
     what is wrong)."
);

/// The error of a scenario, worded as `dcsim` words it.
fn scenario_error(e: &ConfigError) -> PyErr {
    ScenarioError::new_err(e.to_string())
}

/// The scenario as the CLI would load and build it: the file's text (or text without a
/// file), with overrides applied in order; errors worded as `dcsim check` words them.
fn scenario(text: &str, path: Option<&str>, sets: &[String]) -> PyResult<Scenario> {
    ScenarioSpec::from_text(text, path.map(Path::new), sets)
        .and_then(|s| s.build(path.unwrap_or("<scenario>")))
        .map_err(|e| scenario_error(&e))
}

/// Parses and validates a scenario; returns its name and the resolved scenario as JSON.
#[pyfunction]
#[pyo3(signature = (text, path, sets))]
fn check(text: &str, path: Option<&str>, sets: Vec<String>) -> PyResult<(String, String)> {
    let built = scenario(text, path, &sets)?;
    let json =
        serde_json::to_string(&built.spec).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok((built.name.clone(), json))
}

/// Converts JSON text (a scenario as a Python dict) to TOML text. A key whose value is
/// null is left out (the default applies, as in the resolved scenario, which writes unset
/// options as null); a null inside a list has no meaning and is refused.
#[pyfunction]
fn json_to_toml(json: &str) -> PyResult<String> {
    let mut v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| ScenarioError::new_err(e.to_string()))?;
    drop_nulls(&mut v, "").map_err(|path| {
        ScenarioError::new_err(format!(
            "<dict>: {path}: None inside a list has no TOML form"
        ))
    })?;
    toml::to_string(&v).map_err(|e| ScenarioError::new_err(format!("<dict>: {e}")))
}

/// Removes null-valued keys of every object in `v`; the key path of a null elsewhere is an
/// error.
fn drop_nulls(v: &mut serde_json::Value, at: &str) -> Result<(), String> {
    match v {
        serde_json::Value::Null => Err(if at.is_empty() {
            "the scenario".into()
        } else {
            at.to_string()
        }),
        serde_json::Value::Array(a) => a
            .iter_mut()
            .enumerate()
            .try_for_each(|(i, x)| drop_nulls(x, &format!("{at}[{i}]"))),
        serde_json::Value::Object(m) => {
            m.retain(|_, x| !x.is_null());
            m.iter_mut().try_for_each(|(k, x)| {
                drop_nulls(
                    x,
                    &if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    },
                )
            })
        }
        _ => Ok(()),
    }
}

/// A finished run: its rows, summary and files, held in Rust until asked for.
#[pyclass(frozen, module = "dcsim._dcsim")]
struct NativeResult {
    results: Results,
}

#[pymethods]
impl NativeResult {
    /// summary.json as text.
    fn summary_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.results.summary)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// The table `name` (flows, ports, buckets, tiers, timeseries, events) as a pyarrow
    /// RecordBatch, or None for timeseries of a run that did not sample and events of one
    /// that logged no flow.
    fn table<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        if !dcsim_columnar::TABLES.contains(&name) {
            return Err(PyValueError::new_err(format!(
                "no table {name:?}; tables: {}",
                dcsim_columnar::TABLES.join(", ")
            )));
        }
        let tables = dcsim_columnar::tables(&self.results)
            .map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        match tables.into_iter().find(|t| t.name == name) {
            Some(t) => Ok(Some(t.batch.to_pyarrow(py)?)),
            None => Ok(None),
        }
    }

    /// Writes the results into `dir` as `dcsim run` does (one committed folder), with the
    /// tables in `format` (csv, parquet, both) and the extra files given.
    #[pyo3(signature = (dir, format, extra))]
    fn write(
        &self,
        py: Python<'_>,
        dir: PathBuf,
        format: &str,
        extra: Vec<(String, Vec<u8>)>,
    ) -> PyResult<()> {
        let format: Format = format.parse().map_err(PyValueError::new_err)?;
        py.detach(|| {
            let extra: Vec<(&str, &[u8])> =
                extra.iter().map(|(n, b)| (n.as_str(), &b[..])).collect();
            dcsim_columnar::write_results(&self.results, &dir, format, &extra)
        })
        .map_err(|e| {
            PyRuntimeError::new_err(format!("cannot write results to {}: {e}", dir.display()))
        })
    }

    /// The digest of the CSV outputs.
    #[getter]
    fn digest(&self) -> String {
        self.results.digest().to_string()
    }
}

/// Runs a scenario with the GIL released. Ctrl-C (a pending Python signal) stops it
/// within a few milliseconds and raises KeyboardInterrupt. With `progress`, a line of
/// progress goes to stderr about once a second.
#[pyfunction]
#[pyo3(signature = (text, path, sets, progress))]
fn run(
    py: Python<'_>,
    text: &str,
    path: Option<&str>,
    sets: Vec<String>,
    progress: bool,
) -> PyResult<NativeResult> {
    let built = scenario(text, path, &sets)?;
    let name = built.name.clone();
    let mut world = World::new(built).map_err(|e| scenario_error(&e))?;
    let mut interrupt: Option<PyErr> = None;
    let done = py.detach(|| {
        let start = Instant::now();
        let (mut checked, mut shown) = (start, start);
        world.run_interruptible(&mut |p| {
            let now = Instant::now();
            if now - checked >= Duration::from_millis(50) {
                checked = now;
                if let Err(e) = Python::attach(|py| py.check_signals()) {
                    interrupt = Some(e);
                    return ControlFlow::Break(());
                }
            }
            if progress && now - shown >= Duration::from_secs(1) {
                shown = now;
                let at = match p.end {
                    Some(end) => format!(
                        "{:.3} of {:.3} ms simulated",
                        p.now.as_secs_f64() * 1e3,
                        end.as_secs_f64() * 1e3
                    ),
                    None => format!("{} of {} flows done", p.flows_done.0, p.flows_done.1),
                };
                eprintln!(
                    "{name}: {at}, {:.1} M events, {:.0} s",
                    p.events as f64 / 1e6,
                    (now - start).as_secs_f64()
                );
            }
            ControlFlow::Continue(())
        })
    });
    if done.is_none() {
        return Err(interrupt.unwrap_or_else(|| PyKeyboardInterrupt::new_err("run stopped")));
    }
    let results = py.detach(|| Results::collect(&mut world));
    Ok(NativeResult { results })
}

/// How long a scenario will take to run on this machine: it runs for `seconds` of wall time
/// with the GIL released and extrapolates (as `dcsim check --estimate`); the estimate as
/// JSON.
#[pyfunction]
#[pyo3(signature = (text, path, sets, seconds))]
fn estimate(
    py: Python<'_>,
    text: &str,
    path: Option<&str>,
    sets: Vec<String>,
    seconds: f64,
) -> PyResult<String> {
    let budget = dcsim::estimate::budget(seconds)
        .map_err(|e| PyValueError::new_err(format!("estimate: {e}")))?;
    let built = scenario(text, path, &sets)?;
    let e = py
        .detach(|| dcsim::estimate::Estimate::of(built, budget))
        .map_err(|e| scenario_error(&e))?;
    let basis = e.basis.map(|b| match b {
        dcsim::estimate::Basis::SimTime => "simulated time",
        dcsim::estimate::Basis::Flows => "flows",
        dcsim::estimate::Basis::Bytes => "bytes",
    });
    Ok(serde_json::json!({
        "seconds": e.seconds,
        "build_seconds": e.build_seconds,
        "probe_seconds": e.probe_seconds,
        "covered": e.covered,
        "basis": basis,
        "events_per_second": e.events_per_second,
        "flows": e.flows,
        "text": e.to_string(),
    })
    .to_string())
}

/// The paper-reproduction experiments, as (name, description).
#[pyfunction]
fn experiments() -> Vec<(&'static str, &'static str)> {
    dcsim_repro::EXPERIMENTS
        .iter()
        .map(|e| (e.name, e.description))
        .collect()
}

/// Runs a paper-reproduction experiment into `out` with the GIL released; returns
/// result.json as text.
#[pyfunction]
#[pyo3(signature = (name, quick, out, jobs, fresh))]
fn repro(
    py: Python<'_>,
    name: &str,
    quick: bool,
    out: PathBuf,
    jobs: usize,
    fresh: bool,
) -> PyResult<String> {
    dcsim_repro::experiment(name).map_err(PyValueError::new_err)?;
    let opts = dcsim_repro::Options {
        quick,
        out,
        jobs: jobs.max(1),
        fresh,
        siblings: None,
    };
    let outcome = py
        .detach(|| dcsim_repro::run(name, &opts))
        .map_err(|e| PyRuntimeError::new_err(format!("{name}: {e}")))?;
    serde_json::to_string(&outcome.result).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// The options of an experiment run from Python (one thread: a task is one run).
fn repro_options(quick: bool, out: PathBuf, fresh: bool) -> dcsim_repro::Options {
    dcsim_repro::Options {
        quick,
        out,
        jobs: 1,
        fresh,
        siblings: None,
    }
}

/// The runs of an experiment without running any, as JSON: `{"runs": [{"name",
/// "complete"}]}`, or `{"runs": null}` for an experiment that runs the others.
#[pyfunction]
#[pyo3(signature = (name, quick, out, fresh))]
fn repro_plan(
    py: Python<'_>,
    name: &str,
    quick: bool,
    out: PathBuf,
    fresh: bool,
) -> PyResult<String> {
    dcsim_repro::experiment(name).map_err(PyValueError::new_err)?;
    let opts = repro_options(quick, out, fresh);
    let plan = py
        .detach(|| dcsim_repro::plan(name, &opts))
        .map_err(|e| PyRuntimeError::new_err(format!("{name}: {e}")))?;
    let runs = plan.map(|runs| {
        runs.iter()
            .map(|r| serde_json::json!({"name": r.name, "complete": r.complete}))
            .collect::<Vec<_>>()
    });
    Ok(serde_json::json!({ "runs": runs }).to_string())
}

/// One run of an experiment's plan, with the GIL released (a Dask task).
#[pyfunction]
#[pyo3(signature = (name, quick, out, fresh, run))]
fn repro_run(
    py: Python<'_>,
    name: &str,
    quick: bool,
    out: PathBuf,
    fresh: bool,
    run: &str,
) -> PyResult<()> {
    let opts = repro_options(quick, out, fresh);
    py.detach(|| dcsim_repro::run_planned(name, &opts, run))
        .map_err(|e| PyRuntimeError::new_err(format!("{name}: {e}")))
}

/// `dcsim compare`: writes the comparison of the runs in `dirs` into `out`; returns its
/// text table. Bad folders or names raise ValueError with the CLI's message.
#[pyfunction]
#[pyo3(signature = (dirs, names, out, port))]
fn compare(
    py: Python<'_>,
    dirs: Vec<PathBuf>,
    names: Vec<String>,
    out: PathBuf,
    port: Option<String>,
) -> PyResult<String> {
    let opts = dcsim_report::CompareOptions {
        dirs,
        names,
        out,
        port,
    };
    py.detach(|| dcsim_report::compare(&opts))
        .map_err(PyValueError::new_err)
}

/// A sweep's arguments, as `dcsim sweep` takes them, sent from Python as JSON.
#[derive(serde::Deserialize)]
struct SweepArgs {
    text: String,
    path: Option<String>,
    sets: Vec<String>,
    vary: Vec<String>,
    #[serde(default)]
    variants: Vec<String>,
    seeds: Option<u64>,
    out: Option<PathBuf>,
    columns: Vec<String>,
}

impl SweepArgs {
    fn parse(json: &str) -> PyResult<dcsim_sweep::SweepSpec> {
        let a: Self = serde_json::from_str(json)
            .map_err(|e| PyValueError::new_err(format!("sweep arguments: {e}")))?;
        Ok(dcsim_sweep::SweepSpec {
            file: a.path.map(PathBuf::from).unwrap_or_default(),
            vary: a.vary,
            variants: a.variants,
            seeds: a.seeds,
            sets: a.sets,
            out: a.out,
            columns: a.columns,
            text: Some(a.text),
        })
    }
}

fn sweep_error(e: &dcsim_sweep::SweepError) -> PyErr {
    match e {
        dcsim_sweep::SweepError::Config(m) => ScenarioError::new_err(m.clone()),
        dcsim_sweep::SweepError::Io(m) => PyRuntimeError::new_err(m.clone()),
    }
}

/// Plans a sweep (validates every run, reads what is on disk) and returns it as JSON:
/// the scenario name, the output folder and every run with its folder name, state
/// (new, incomplete, changed, complete), overrides and point.json.
#[pyfunction]
fn sweep_plan(py: Python<'_>, args: &str) -> PyResult<String> {
    let spec = SweepArgs::parse(args)?;
    let plan = py
        .detach(|| dcsim_sweep::Plan::new(&spec))
        .map_err(|e| sweep_error(&e))?;
    let runs: Vec<serde_json::Value> = plan
        .runs
        .iter()
        .map(|r| {
            serde_json::json!({
                "name": r.name,
                "state": format!("{:?}", r.state).to_lowercase(),
                "sets": r.sets,
                "point": r.point,
            })
        })
        .collect();
    let v = serde_json::json!({
        "scenario": plan.scenario,
        "out": plan.out,
        "runs": runs,
    });
    Ok(v.to_string())
}

/// Runs one run of a sweep into `out/name` (its folder, committed whole, and its dataset
/// files) with the GIL released; returns its digest. What each Dask task does.
#[pyfunction]
#[pyo3(signature = (text, path, sets, out, name, point))]
fn sweep_run(
    py: Python<'_>,
    text: &str,
    path: Option<&str>,
    sets: Vec<String>,
    out: PathBuf,
    name: &str,
    point: &str,
) -> PyResult<String> {
    let point: serde_json::Value = serde_json::from_str(point)
        .map_err(|e| PyValueError::new_err(format!("point.json: {e}")))?;
    let built = scenario(text, path, &sets)?;
    py.detach(|| dcsim_sweep::run_point(&out, name, &point, built))
        .map_err(|e| PyRuntimeError::new_err(format!("{name}: {e}")))
}

/// Writes a sweep's index (CSV, JSON, Parquet) and brings its dataset in line with it, from
/// the run folders on disk; `failures` maps run names to why they failed. Returns index.json
/// as text.
#[pyfunction]
fn sweep_index(py: Python<'_>, args: &str, failures: Vec<(String, String)>) -> PyResult<String> {
    let spec = SweepArgs::parse(args)?;
    py.detach(|| {
        let mut plan = dcsim_sweep::Plan::new(&spec)?;
        for (name, error) in &failures {
            plan.fail(name, error);
        }
        plan.write_index()?;
        std::fs::read_to_string(plan.out.join("index.json"))
            .map_err(|e| dcsim_sweep::SweepError::Io(e.to_string()))
    })
    .map_err(|e| sweep_error(&e))
}

/// The native module.
#[pymodule]
fn _dcsim(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("ScenarioError", m.py().get_type::<ScenarioError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<NativeResult>()?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(json_to_toml, m)?)?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(estimate, m)?)?;
    m.add_function(wrap_pyfunction!(experiments, m)?)?;
    m.add_function(wrap_pyfunction!(repro, m)?)?;
    m.add_function(wrap_pyfunction!(repro_plan, m)?)?;
    m.add_function(wrap_pyfunction!(repro_run, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_plan, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_run, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_index, m)?)?;
    Ok(())
}
