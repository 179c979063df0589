//! What every experiment shares: the output folder, parallel runs, series extraction,
//! plot specifications and the plotting script.

use std::collections::BTreeMap;
use std::path::PathBuf;

use dcsim::metrics::atomic_write;
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
    pool: rayon::ThreadPool,
}

/// One run of an experiment.
pub struct RunSpec {
    /// Folder name under `runs/`.
    pub name: String,
    /// The scenario.
    pub toml: String,
    /// Flows added programmatically (a shuffle's 100,000 flows), after the scenario's own.
    pub extra_flows: Vec<dcsim::transport::FlowSpec>,
}

impl RunSpec {
    /// A run of `toml` named `name`.
    pub fn new(name: impl Into<String>, toml: String) -> Self {
        Self {
            name: name.into(),
            toml,
            extra_flows: Vec::new(),
        }
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
            pool,
        })
    }

    /// Picks the quick or the full value.
    pub fn pick<T>(&self, quick: T, full: T) -> T {
        if self.quick { quick } else { full }
    }

    /// Runs scenarios in parallel (each in its own world), writes each run's scenario and
    /// results under `runs/<name>/`, and returns the results in input order.
    ///
    /// A run whose folder already holds complete results (summary.json) of the same
    /// scenario text, and of the same flows added in code (`extra_flows.csv`, written next
    /// to `scenario.toml` so that the folder describes the whole run), is loaded instead of
    /// run again, unless [`Ctx::fresh`]: an interrupted full-form experiment resumes where
    /// it stopped.
    pub fn run_many(&self, specs: Vec<RunSpec>) -> Result<Vec<Results>, String> {
        let out = &self.out;
        let fresh = self.fresh;
        self.pool.install(|| {
            specs
                .into_par_iter()
                .map(|s| {
                    let dir = out.join("runs").join(&s.name);
                    let extra = extra_flows_csv(&s.extra_flows);
                    let same = std::fs::read_to_string(dir.join("scenario.toml"))
                        .is_ok_and(|t| t == s.toml)
                        && match &extra {
                            None => !dir.join(EXTRA_FLOWS).exists(),
                            Some(text) => std::fs::read_to_string(dir.join(EXTRA_FLOWS))
                                .is_ok_and(|t| t == *text),
                        };
                    if !fresh && same && dir.join("summary.json").is_file() {
                        eprintln!("{}: reusing the complete run in {}", s.name, dir.display());
                        return Results::load(&dir).map_err(|e| e.to_string());
                    }
                    let spec =
                        ScenarioSpec::parse(&s.toml, &s.name, &[]).map_err(|e| e.to_string())?;
                    let mut scenario = spec.build(&s.name).map_err(|e| e.to_string())?;
                    scenario.flows.extend(s.extra_flows.iter().copied());
                    let mut world = World::new(scenario).map_err(|e| e.to_string())?;
                    world.run(&mut |_| {});
                    let r = Results::collect(&mut world);
                    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
                    // summary.json marks a folder complete: drop an older run's before the
                    // new scenario goes in, or a kill between the two writes would leave
                    // old results filed under the new scenario (and reused next time).
                    remove_if_present(&dir.join("summary.json")).map_err(|e| e.to_string())?;
                    atomic_write(&dir.join("scenario.toml"), s.toml.as_bytes())
                        .map_err(|e| e.to_string())?;
                    match &extra {
                        Some(text) => atomic_write(&dir.join(EXTRA_FLOWS), text.as_bytes()),
                        None => remove_if_present(&dir.join(EXTRA_FLOWS)),
                    }
                    .map_err(|e| e.to_string())?;
                    r.write(&dir)
                        .map_err(|e| format!("{}: {e}", dir.display()))?;
                    Ok(r)
                })
                .collect()
        })
    }

    /// Writes a JSON file into the output folder.
    pub fn write_json(&self, name: &str, v: &impl Serialize) -> Result<(), String> {
        let mut s = serde_json::to_vec_pretty(v).map_err(|e| e.to_string())?;
        s.push(b'\n');
        atomic_write(&self.out.join(name), &s).map_err(|e| e.to_string())
    }

    /// Writes a CSV file (header + rows) into the output folder.
    pub fn write_csv(
        &self,
        name: &str,
        header: &[&str],
        rows: &[Vec<String>],
    ) -> Result<(), String> {
        let mut s = header.join(",");
        s.push('\n');
        for r in rows {
            s += &r.join(",");
            s.push('\n');
        }
        atomic_write(&self.out.join(name), s.as_bytes()).map_err(|e| e.to_string())
    }

    /// Saves a plot specification; [`Ctx::render_plots`] draws them all.
    pub fn plot(&self, p: &Plot) -> Result<(), String> {
        dcsim::metrics::plot::write_spec(&self.out.join("plots"), p).map_err(|e| e.to_string())
    }

    /// Runs the plotting script on every plot specification. Without Python and
    /// matplotlib the data and result.json are still complete; a note says how to get the
    /// pictures.
    pub fn render_plots(&self) -> Result<(), String> {
        dcsim::metrics::plot::render(&self.out.join("plots"))
    }
}

/// Time series of `kind` from a run's samples, by id: `(time in µs, value)`.
pub fn series(r: &Results, kind: &str) -> BTreeMap<String, Vec<(f64, f64)>> {
    let mut m: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for s in r.samples.iter().flatten().filter(|s| s.kind == kind) {
        m.entry(s.id.clone())
            .or_default()
            .push((s.time_ns as f64 / 1e3, s.value));
    }
    m
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

/// Mean of a slice (0 for empty).
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        0.0
    } else {
        xs.iter().sum::<f64>() / xs.len() as f64
    }
}

/// A schemes's switch and NIC queue configuration and transport, as TOML tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// ExpressPass with a feedback law, in the authors' microbenchmark setting.
    Xpass(&'static str),
    /// DCTCP with K and g for the link speed (K = 65, g = 1/16 at 10 Gb/s; K = 650,
    /// g = 0.01976 at 100 Gb/s; K scaled with the speed in between).
    Dctcp,
}

impl Scheme {
    /// Short name for result keys.
    pub fn key(self) -> &'static str {
        match self {
            Self::Xpass("paper") => "expresspass",
            Self::Xpass(_) => "expresspass-code",
            Self::Dctcp => "dctcp",
        }
    }

    /// `[routing]`, `[queue]`, `[nic]` and `[transport]` for links of `gbps`, with
    /// `credit_buffer` credits (ExpressPass) and extra transport lines.
    pub fn tables(self, gbps: u64, credit_buffer: u64, extra: &str) -> String {
        self.tables_with(gbps, credit_buffer, false, extra)
    }

    /// [`Scheme::tables`], optionally with credit shaping at host NICs too. A receiver with
    /// several flows needs it (a shuffle, an incast): otherwise its credits leave at line
    /// rate and only the senders' ports limit them, one sender at a time.
    pub fn tables_with(
        self,
        gbps: u64,
        credit_buffer: u64,
        nic_shaped: bool,
        extra: &str,
    ) -> String {
        let nic = if nic_shaped {
            format!(
                "[nic]\nkind = \"credit-shaper\"\ncredit_buffer = \"{credit_buffer}pkts\"\ncredit_burst = \"10pkts\"\n\
                 inner = {{ kind = \"droptail\", buffer = \"1538000B\" }}\n"
            )
        } else {
            "[nic]\nkind = \"droptail\"\nbuffer = \"1538000B\"\n".to_string()
        };
        match self {
            // The authors' ns-2 microbenchmark scripts (dumbbell, parking lot,
            // multi-bottleneck): credit shaping on switch ports only (host uplinks are plain
            // drop-tail), 2-credit queues, the default 10-credit burst, data queues of 100
            // packets, and the ns-2 defaults α = w_init = 0.5 (the scripts' own settings of
            // w do not take effect, see expresspass.md §1.6.4).
            Self::Xpass(law) => format!(
                "[routing]\nmode = \"symmetric-ecmp\"\n\
                 [queue]\nkind = \"credit-shaper\"\ncredit_buffer = \"{credit_buffer}pkts\"\ncredit_burst = \"10pkts\"\n\
                 inner = {{ kind = \"droptail\", buffer = \"{}B\" }}\n{nic}\
                 [transport]\nkind = \"expresspass\"\nprofile = \"paper\"\nlaw = \"{law}\"\nalpha = 0.5\nw_init = 0.5\n{extra}\n",
                100 * 1538 * gbps.div_ceil(10)
            ),
            Self::Dctcp => {
                let (k, g) = if gbps >= 100 {
                    (650, 0.01976)
                } else {
                    (65 * gbps.div_ceil(10), 1.0 / 16.0)
                };
                format!(
                    "[queue]\nkind = \"ecn\"\nbuffer = \"{}pkts\"\nmark_threshold = \"{k}pkts\"\n\
                     [transport]\nkind = \"tcp\"\ncc = {{ kind = \"dctcp\", g = {g} }}\n{extra}\n",
                    (4 * k).max(250)
                )
            }
        }
    }
}

/// Writes `v` as a string key (integers without a decimal point).
pub fn k(v: impl std::fmt::Display) -> String {
    v.to_string()
}

/// Removes `path`; a file that is not there is not an error.
fn remove_if_present(path: &std::path::Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// File in a run's folder that lists the flows added in code.
const EXTRA_FLOWS: &str = "extra_flows.csv";

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

#[cfg(test)]
mod tests {
    use dcsim::engine::Time;
    use dcsim::net::HostId;
    use dcsim::transport::FlowSpec;

    use super::*;

    fn spec(size: u64) -> RunSpec {
        let mut s = RunSpec::new(
            "tiny",
            "[sim]\nduration = \"1ms\"\n[topology]\nkind = \"dumbbell\"\npairs = 1\n".to_string(),
        );
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
    /// fresh one.
    fn mark(dir: &std::path::Path) {
        let path = dir.join("runs/tiny/summary.json");
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        v["wall_seconds"] = Value::from(-1.0);
        std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    }

    #[test]
    fn runs_with_the_same_added_flows_are_reused_and_others_rerun() {
        let dir = std::env::temp_dir().join(format!("dcsim-repro-reuse-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let ctx = Ctx::new(true, dir.clone(), 1).unwrap();
        let first = ctx.run_many(vec![spec(10_000)]).unwrap();
        assert_eq!(first[0].flows.len(), 1);
        assert!(dir.join("runs/tiny/extra_flows.csv").is_file());
        mark(&dir);
        let again = ctx.run_many(vec![spec(10_000)]).unwrap();
        assert_eq!(again[0].summary["wall_seconds"], -1.0, "same flows: reused");
        let other = ctx.run_many(vec![spec(20_000)]).unwrap();
        assert_ne!(
            other[0].summary["wall_seconds"], -1.0,
            "other flows: run again"
        );
        assert_eq!(other[0].flows[0].size_bytes, Some(20_000));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
