//! What every experiment shares: the output folder, parallel runs, series extraction,
//! plot specifications and the plotting script.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dcsim::metrics::{FlowRow, atomic_write};
use dcsim::{Results, ScenarioSpec, World};
use rayon::prelude::*;
use serde::Serialize;

pub use dcsim::metrics::plot::{Panel, Plot, Series};
use serde_json::Value;

/// Where an experiment writes, and how hard it works.
pub struct Ctx {
    /// The short form (well under a minute).
    pub quick: bool,
    /// Output folder.
    pub out: PathBuf,
    /// Worker threads for independent runs.
    pub jobs: usize,
    /// Run every run again, even when its folder holds complete results of the same
    /// scenario.
    pub fresh: bool,
    /// Where the other experiments' folders are (see [`crate::Options::siblings`]).
    pub siblings: Option<PathBuf>,
    pool: rayon::ThreadPool,
    /// In a planning context ([`Ctx::planning`]), the runs given to [`Ctx::run_many`].
    planned: Option<std::sync::Mutex<Vec<RunSpec>>>,
}

/// One run of an experiment.
pub struct RunSpec {
    /// Folder name under `runs/`.
    pub name: String,
    /// The scenario.
    pub scenario: ScenarioSpec,
    /// Flows added programmatically (a shuffle's 100,000 flows), after the scenario's own.
    pub extra_flows: Vec<dcsim::transport::FlowSpec>,
}

impl RunSpec {
    /// A run of `scenario` named `name`.
    pub fn new(name: impl Into<String>, scenario: ScenarioSpec) -> Self {
        Self {
            name: name.into(),
            scenario,
            extra_flows: Vec::new(),
        }
    }

    /// The scenario as TOML, as `scenario.toml` in the run's folder holds it (`dcsim run`
    /// repeats the run from it).
    pub fn toml(&self) -> Result<String, String> {
        toml::to_string(&self.scenario)
            .map_err(|e| format!("{}: cannot write the scenario as TOML: {e}", self.name))
    }
}

impl Ctx {
    /// Creates the output folder.
    pub fn new(quick: bool, out: PathBuf, jobs: usize) -> Result<Self, String> {
        std::fs::create_dir_all(out.join("plots"))
            .map_err(|e| format!("cannot create {}: {e}", out.display()))?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(jobs.max(1))
            .build()
            .map_err(|e| format!("cannot start worker threads: {e}"))?;
        Ok(Self {
            quick,
            out,
            jobs,
            fresh: false,
            siblings: None,
            pool,
            planned: None,
        })
    }

    /// A context that runs nothing: [`Ctx::run_many`] keeps the runs it is given (see
    /// [`Ctx::planned`]) and returns the error [`PLANNED`], which ends the experiment
    /// before it reads any result.
    pub(crate) fn planning(quick: bool, out: PathBuf) -> Result<Self, String> {
        let mut ctx = Self::new(quick, out, 1)?;
        ctx.planned = Some(Default::default());
        Ok(ctx)
    }

    /// The runs that [`Ctx::run_many`] was given in a planning context, taken out of it.
    pub(crate) fn planned(&self) -> Vec<RunSpec> {
        self.planned
            .as_ref()
            .map(|p| std::mem::take(&mut *p.lock().expect("no run panicked")))
            .unwrap_or_default()
    }

    /// Picks the quick or the full value.
    pub fn pick<T>(&self, quick: T, full: T) -> T {
        if self.quick { quick } else { full }
    }

    /// Runs scenarios in parallel (each in its own world), writes each run's scenario and
    /// results under `runs/<name>/`, and returns the results in input order.
    ///
    /// A run whose folder already holds complete results (summary.json) of the same
    /// scenario text (`RunSpec::toml`), resolved the same way (`resolved.toml`, what
    /// `dcsim show` prints: a profile whose meaning changed between versions does not
    /// match), and of the same flows added in code
    /// (`extra_flows.csv`, written next to `scenario.toml` so that the folder describes the
    /// whole run), is loaded instead of run again, unless [`Ctx::fresh`]: an interrupted
    /// full-form experiment resumes where it stopped.
    pub fn run_many(&self, specs: Vec<RunSpec>) -> Result<Vec<Results>, String> {
        if let Some(planned) = &self.planned {
            planned.lock().expect("no run panicked").extend(specs);
            return Err(PLANNED.into());
        }
        let (out, fresh) = (&self.out, self.fresh);
        self.pool.install(|| {
            specs
                .into_par_iter()
                .map(|s| run_one(out, fresh, s))
                .collect()
        })
    }

    /// Writes a JSON file into the output folder.
    /// Writes a JSON file into the output folder.
    pub fn write_json(&self, name: &str, v: &impl Serialize) -> Result<(), String> {
        let mut s = serde_json::to_vec_pretty(v).map_err(|e| e.to_string())?;
        s.push(b'\n');
        atomic_write(&self.out.join(name), &s).map_err(|e| e.to_string())
    }

    /// Writes a CSV file (header + rows) into the output folder, quoted where a cell needs
    /// it (a label with a comma).
    pub fn write_csv(
        &self,
        name: &str,
        header: &[&str],
        rows: &[Vec<String>],
    ) -> Result<(), String> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(header).map_err(|e| e.to_string())?;
        for r in rows {
            w.write_record(r).map_err(|e| e.to_string())?;
        }
        let bytes = w.into_inner().map_err(|e| e.to_string())?;
        atomic_write(&self.out.join(name), &bytes).map_err(|e| e.to_string())
    }

    /// Saves a plot specification; [`Ctx::render_plots`] draws them all.
    pub fn plot(&self, p: &Plot) -> Result<(), String> {
        dcsim::metrics::plot::write_spec(&self.out.join("plots"), p).map_err(|e| e.to_string())
    }

    /// Runs the plotting script on every plot specification. Without Python and
    /// matplotlib the data and result.json are still complete; a note says how to get the
    /// pictures.
    pub fn render_plots(&self) -> Result<(), String> {
        dcsim::metrics::plot::render(&self.out.join("plots")).map(|_| ())
    }
}

/// Time series of `kind` from a run's samples, by id: `(time in µs, value)`.
pub fn series(r: &Results, kind: &str) -> BTreeMap<String, Vec<(f64, f64)>> {
    let mut m: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for s in samples(r).iter().filter(|s| s.kind == kind) {
        m.entry(s.id.clone())
            .or_default()
            .push((s.time_ns as f64 / 1e3, s.value));
    }
    m
}

/// A run's time series, read back from its file; a file that cannot be read is said on
/// stderr and gives no samples (the figure then lacks the series; the run's other results
/// stand).
pub fn samples(r: &Results) -> Vec<dcsim::metrics::SampleRow> {
    r.samples()
        .unwrap_or_else(|e| {
            eprintln!(
                "warning: {}: {e}",
                r.summary["scenario"].as_str().unwrap_or("run")
            );
            None
        })
        .unwrap_or_default()
}

/// A [`Series`] from `(x, y)` pairs.
pub fn to_series(label: impl Into<String>, pts: &[(f64, f64)]) -> Series {
    Series {
        label: label.into(),
        x: pts.iter().map(|p| p.0).collect(),
        y: pts.iter().map(|p| p.1).collect(),
    }
}

/// Inserts `v` at the nested string-keyed path of a JSON object.
pub fn put(root: &mut Value, path: &[&str], v: impl Into<Value>) {
    let mut cur = root;
    for (i, k) in path.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(serde_json::Map::new());
        }
        let m = cur.as_object_mut().expect("made an object above");
        if i + 1 == path.len() {
            m.insert((*k).to_string(), v.into());
            return;
        }
        cur = m
            .entry((*k).to_string())
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
    }
}

/// Nearest-rank percentile `q` of the sorted `xs` (0 for none).
pub fn nearest_rank(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// Nearest-rank percentile `q` of `xs`, which it sorts (0 for none).
pub fn percentile(xs: &mut [f64], q: f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    nearest_rank(xs, q)
}

/// The rows of flows.csv of a run of [`run_one`], which loaded them.
pub fn rows(r: &Results) -> &[FlowRow] {
    r.flows().expect("run_one loads every run's rows")
}

/// Retransmission timeouts over a run's TCP flows.
pub fn timeouts(r: &Results) -> u64 {
    rows(r)
        .iter()
        .filter_map(|f| f.counters.get("timeouts"))
        .sum()
}

/// Mean of a slice (0 for empty).
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// Writes `v` as a string key (integers without a decimal point).
pub fn k(v: impl std::fmt::Display) -> String {
    v.to_string()
}

/// Whether the folder of run `s` under `out` holds its complete results, which
/// [`Ctx::run_many`] would reuse: the same scenario text, the same resolution and the same
/// flows added in code, all files intact.
pub(crate) fn reusable(out: &Path, s: &RunSpec) -> Result<bool, String> {
    let dir = out.join("runs").join(&s.name);
    let scenario = s.scenario.build(&s.name).map_err(|e| e.to_string())?;
    Ok(same_run(
        &dir,
        &s.toml()?,
        &scenario.to_toml(),
        &extra_flows_csv(&s.extra_flows),
    ) && dcsim::metrics::verify_dir(&dir))
}

/// Whether `dir` was written from this scenario text, resolution and added flows.
fn same_run(dir: &Path, scenario_toml: &str, resolved_toml: &str, extra: &Option<String>) -> bool {
    let same_text =
        |name: &str, want: &str| std::fs::read_to_string(dir.join(name)).is_ok_and(|t| t == want);
    same_text("scenario.toml", scenario_toml)
        && same_text(RESOLVED, resolved_toml)
        && match extra {
            None => !dir.join(EXTRA_FLOWS).exists(),
            Some(text) => same_text(EXTRA_FLOWS, text),
        }
}

/// Runs `s` into `out/runs/<name>/`, or loads its complete results from there (see
/// [`Ctx::run_many`]).
pub(crate) fn run_one(out: &Path, fresh: bool, s: RunSpec) -> Result<Results, String> {
    let dir = out.join("runs").join(&s.name);
    let scenario_toml = s.toml()?;
    let mut scenario = s.scenario.build(&s.name).map_err(|e| e.to_string())?;
    let resolved_toml = scenario.to_toml();
    let extra = extra_flows_csv(&s.extra_flows);
    if !fresh
        && same_run(&dir, &scenario_toml, &resolved_toml, &extra)
        && dcsim::metrics::verify_dir(&dir)
    {
        // A run written by another version of dcsim may not read back (a column added
        // since): it is run again, not an error.
        match Results::load(&dir) {
            Ok(r) => {
                eprintln!("{}: reusing the complete run in {}", s.name, dir.display());
                return Ok(r);
            }
            Err(e) => eprintln!(
                "{}: the run in {} does not read back ({e}); running it again",
                s.name,
                dir.display()
            ),
        }
    }
    scenario.flows.extend(s.extra_flows.iter().copied());
    let _lock =
        dcsim::metrics::DirLock::take(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut world = World::new(scenario).map_err(|e| e.to_string())?;
    world.spill_time_series_beside(&dir);
    world.run(&mut |_| {});
    let r = Results::collect(&mut world);
    // Experiments read their runs' rows: loaded here, so a read error is this run's.
    r.flows().map_err(|e| format!("{}: {e}", dir.display()))?;
    // The scenario and the results replace the run's folder together (a kill leaves the old
    // complete folder or the new one).
    let mut files: Vec<(&str, &[u8])> = vec![
        ("scenario.toml", scenario_toml.as_bytes()),
        (RESOLVED, resolved_toml.as_bytes()),
    ];
    if let Some(text) = &extra {
        files.push((EXTRA_FLOWS, text.as_bytes()));
    }
    r.write_with(&dir, &files)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(r)
}

/// What [`Ctx::run_many`] returns in a planning context.
pub(crate) const PLANNED: &str = "planning only: nothing was run";

/// File in a run's folder that lists the flows added in code.
const EXTRA_FLOWS: &str = "extra_flows.csv";

/// The file in a run's folder that holds its scenario as resolved (profiles and presets
/// expanded), which a reused run must match as well as its text.
const RESOLVED: &str = "resolved.toml";

/// The flows added in code as CSV (`None` if there are none): one row per flow, in order,
/// times in picoseconds, an empty cell for "none".
fn extra_flows_csv(flows: &[dcsim::transport::FlowSpec]) -> Option<String> {
    use std::fmt::Write;
    if flows.is_empty() {
        return None;
    }
    let mut s = String::from("src,dst,size_bytes,start_ps,stop_ps,transport\n");
    let opt = |v: Option<u64>| v.map_or(String::new(), |x| x.to_string());
    for f in flows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{}",
            f.src.0,
            f.dst.0,
            opt(f.size_bytes),
            f.start.as_ps(),
            opt(f.stop.map(|t| t.as_ps())),
            f.transport
        );
    }
    Some(s)
}

/// A count from a run's summary.json; an error naming the run if it is missing (a folder
/// written by another version, or damaged), where reading it as 0 would pass a zero-loss
/// claim on nothing.
pub(crate) fn summary_count(r: &Results, key: &str) -> Result<u64, String> {
    r.summary[key].as_u64().ok_or_else(|| {
        format!(
            "run {}: summary.json has no count {key:?}",
            r.summary["scenario"].as_str().unwrap_or("?")
        )
    })
}

#[cfg(test)]
mod tests {
    use dcsim::SimSpec;
    use dcsim::engine::{Dur, Time};
    use dcsim::net::topo::DumbbellSpec;
    use dcsim::net::{HostId, TopologySpec};
    use dcsim::transport::FlowSpec;

    use super::*;

    fn spec(size: u64) -> RunSpec {
        let sim = SimSpec {
            duration: Some(Dur::from_ms(1)),
            ..SimSpec::default()
        };
        let topology = TopologySpec::Dumbbell(DumbbellSpec {
            pairs: Some(1),
            host_link: None,
            bottleneck: None,
        });
        let mut s = RunSpec::new("tiny", crate::build::scenario(sim, topology));
        s.extra_flows.push(FlowSpec {
            src: HostId(0),
            dst: HostId(1),
            size_bytes: Some(size),
            start: Time::ZERO,
            stop: None,
            transport: 0,
        });
        s
    }

    /// Marks the stored run (`wall_seconds = -1`) so that a reused one can be told from a
    /// fresh one, and updates its manifest to match.
    fn mark(dir: &Path) {
        let path = dir.join("runs/tiny/summary.json");
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        v["wall_seconds"] = Value::from(-1.0);
        let bytes = serde_json::to_vec(&v).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let mpath = dir.join("runs/tiny/manifest.json");
        let mut m: Value = serde_json::from_str(&std::fs::read_to_string(&mpath).unwrap()).unwrap();
        m["summary.json"] = serde_json::json!({
            "bytes": bytes.len(),
            "fnv1a64": format!("{:016x}", dcsim::metrics::digest(&[&bytes])),
        });
        std::fs::write(&mpath, serde_json::to_vec(&m).unwrap()).unwrap();
    }

    #[test]
    fn runs_with_the_same_added_flows_are_reused_and_others_rerun() {
        let guard = tempfile::Builder::new()
            .prefix("dcsim-repro-reuse-")
            .tempdir()
            .unwrap();
        let dir = guard.path().to_path_buf();
        let ctx = Ctx::new(true, dir.clone(), 1).unwrap();
        let first = ctx.run_many(vec![spec(10_000)]).unwrap();
        assert_eq!(first[0].flows().unwrap().len(), 1);
        assert!(dir.join("runs/tiny/extra_flows.csv").is_file());
        mark(&dir);
        let again = ctx.run_many(vec![spec(10_000)]).unwrap();
        assert_eq!(again[0].summary["wall_seconds"], -1.0, "same flows: reused");
        // A damaged run (a truncated flows.csv) is not reused.
        let flows = dir.join("runs/tiny/flows.csv");
        let text = std::fs::read(&flows).unwrap();
        std::fs::write(&flows, &text[..text.len() / 2]).unwrap();
        let redone = ctx.run_many(vec![spec(10_000)]).unwrap();
        assert_ne!(
            redone[0].summary["wall_seconds"], -1.0,
            "damaged: run again"
        );
        assert_eq!(std::fs::read(&flows).unwrap(), text);
        let other = ctx.run_many(vec![spec(20_000)]).unwrap();
        assert_ne!(
            other[0].summary["wall_seconds"], -1.0,
            "other flows: run again"
        );
        assert_eq!(other[0].flows().unwrap()[0].size_bytes, Some(20_000));
        // The same text resolved differently (a profile whose meaning changed between
        // versions): run again.
        mark(&dir);
        let resolved = dir.join("runs/tiny").join(RESOLVED);
        let text = std::fs::read_to_string(&resolved).unwrap();
        std::fs::write(&resolved, text.replace("kind =", "# older\nkind =")).unwrap();
        let changed = ctx.run_many(vec![spec(20_000)]).unwrap();
        assert_ne!(
            changed[0].summary["wall_seconds"], -1.0,
            "resolved differently: run again"
        );
        assert_eq!(std::fs::read_to_string(&resolved).unwrap(), text);
        guard.close().unwrap();
    }

    /// Rewrites `file` of the complete run folder `dir` without column `col`, as an older
    /// version of dcsim may have written it, keeping the folder complete (its manifest
    /// rewritten).
    fn drop_column(dir: &Path, file: &str, col: &str) {
        let mut files: Vec<(String, Vec<u8>)> = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if name == dcsim::metrics::MANIFEST {
                continue;
            }
            let mut bytes = std::fs::read(e.path()).unwrap();
            if name == file {
                let text = String::from_utf8(bytes).unwrap();
                let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
                let at = header.iter().position(|h| *h == col).unwrap();
                bytes = text
                    .lines()
                    .map(|l| {
                        let mut cells: Vec<&str> = l.split(',').collect();
                        cells.remove(at);
                        cells.join(",") + "\n"
                    })
                    .collect::<String>()
                    .into_bytes();
            }
            files.push((name, bytes));
        }
        let refs: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(n, b)| (n.as_str(), b.as_slice()))
            .collect();
        dcsim::metrics::commit_dir(dir, &refs).unwrap();
        assert!(dcsim::metrics::verify_dir(dir));
    }

    /// On resume, a complete run of an older output schema is reused when it reads back
    /// (ports.csv without the later `label` column), and run again, not an error, when it
    /// does not.
    #[test]
    fn runs_of_older_versions_are_reused_or_run_again() {
        let guard = tempfile::Builder::new()
            .prefix("dcsim-repro-old-")
            .tempdir()
            .unwrap();
        let out = guard.path().join("exp");
        let ctx = Ctx::new(false, out.clone(), 1).unwrap();
        let text = "[sim]\nduration = \"1ms\"\n[topology]\nkind = \"dumbbell\"\npairs = 1\n\
                    [[flows]]\nsrc = 0\ndst = 1\nsize = \"20KB\"\n";
        let spec = || RunSpec::new("r", ScenarioSpec::parse(text, "t.toml", &[]).unwrap());
        let first = ctx.run_many(vec![spec()]).unwrap();
        let dir = out.join("runs/r");
        drop_column(&dir, "ports.csv", "label");
        let reused = ctx.run_many(vec![spec()]).unwrap();
        assert_eq!(reused[0].digest(), first[0].digest());
        assert!(
            !std::fs::read_to_string(dir.join("ports.csv"))
                .unwrap()
                .contains("label"),
            "reused as it was"
        );
        drop_column(&dir, "ports.csv", "tier");
        assert!(
            Results::load(&dir).is_err(),
            "the old folder must not read back"
        );
        let again = ctx.run_many(vec![spec()]).unwrap();
        assert_eq!(again[0].digest(), first[0].digest());
        assert!(Results::load(&dir).is_ok(), "the run was written again");
        guard.close().unwrap();
    }
}
