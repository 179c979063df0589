//! `dcsim compare DIR...`: runs side by side, with intervals, on shared axes.
//!
//! Each input is a results folder: a run of `dcsim run`, the real-kernel twin's
//! (`summary.json` with `"source": "linux-kernel"`, whose files leave out what the kernel
//! does not measure), or a folder of runs (a reproduction's `runs/`, a sweep) taken one run
//! each. Files are read by column name and a missing or empty cell is "not measured", so
//! the kernel's folders and older runs compare like today's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dcsim::metrics::analysis::BUCKET_SETS;
use dcsim::metrics::atomic_write;
use dcsim::metrics::plot::{Panel, Plot, Series, render, write_spec};
use dcsim::metrics::text_table;
use serde_json::Value;

use crate::stats::{self, Estimate};

/// At most this many points on a CDF line (evenly spaced in rank): the figure looks the
/// same and stays small for runs of millions of flows.
const CDF_POINTS: usize = 2000;

/// What to compare and where to write it.
#[derive(Clone, Debug, Default)]
pub struct CompareOptions {
    /// Results folders, each a run or a folder of runs.
    pub dirs: Vec<PathBuf>,
    /// Names of the runs, in order (the rest keep their default name).
    pub names: Vec<String>,
    /// Output folder.
    pub out: PathBuf,
    /// The port whose sampled queue is compared (`node->peer`); default: the first port
    /// every run sampled.
    pub port: Option<String>,
}

/// One run as the comparison reads it.
struct Run {
    label: String,
    /// A sweep run's parameters without its seed (`dctcp` for a variant), which name it
    /// and pool it with the other seeds of the same point.
    point: Option<String>,
    /// Runs pooled into this one (the seeds of a sweep point).
    seeds: usize,
    dir: PathBuf,
    kernel: bool,
    summary: Value,
    /// The measured flows; size `None` for long flows.
    flows: Vec<FlowRow>,
    goodput_gbps: Vec<f64>,
    retransmits: Option<u64>,
    timeouts: Option<u64>,
    /// Per port, where measured.
    ports: Vec<PortStat>,
    /// Sampled queue (time in ms, bytes) per port.
    queues: BTreeMap<String, Vec<(f64, f64)>>,
}

/// Writes the comparison into `opts.out` (runs.csv, buckets.csv, plots/, report.html) and
/// returns the text table printed by `dcsim compare`.
///
/// # Errors
/// A folder that holds no run, a file that cannot be read, names that do not match the
/// runs, or an output folder that is itself a results folder.
pub fn compare(opts: &CompareOptions) -> Result<String, String> {
    let mut runs: Vec<Run> = Vec::new();
    for d in &opts.dirs {
        // Seeds of a point are pooled within one folder of runs, never across two.
        let first = runs.len();
        for r in run_dirs(d)? {
            let r = load(&r)?;
            match runs[first..]
                .iter_mut()
                .find(|p| p.point.is_some() && p.point == r.point)
            {
                Some(p) => p.pool(r),
                None => runs.push(r),
            }
        }
    }
    // The same point in two folders (two sweeps of the same variants): named with their
    // folder too.
    let twice: Vec<bool> = runs
        .iter()
        .map(|r| r.point.is_some() && runs.iter().filter(|o| o.point == r.point).count() > 1)
        .collect();
    for (r, twice) in runs.iter_mut().zip(twice) {
        if twice {
            let parent = r
                .dir
                .parent()
                .and_then(Path::file_name)
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            r.point = r.point.take().map(|p| format!("{parent}: {p}"));
        }
    }
    if runs.is_empty() {
        return Err("nothing to compare: give one or more results folders".into());
    }
    if opts.names.len() > runs.len() {
        return Err(format!(
            "{} names for {} runs: give at most one --name per run, in the order of the folders",
            opts.names.len(),
            runs.len()
        ));
    }
    name_runs(&mut runs, &opts.names);
    let out = &opts.out;
    if ["summary.json", "index.json", "result.json"]
        .iter()
        .any(|f| out.join(f).exists())
    {
        return Err(format!(
            "{}: this is a results folder; write the comparison elsewhere (--out)",
            out.display()
        ));
    }
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let port = pick_port(&runs, opts.port.as_deref())?;
    let (table, page) = write_comparison(&runs, out, port.as_deref(), true)?;
    Ok(format!("{table}\nwrote {}\n", page.display()))
}

/// `dcsim report` on one kernel twin's folder: its figures (plots/) and report.html, read
/// as a comparison of one run; nothing else is added to the folder.
pub(crate) fn report_one(dir: &Path) -> Result<PathBuf, String> {
    let mut runs = vec![load(dir)?];
    name_runs(&mut runs, &[]);
    let port = pick_port(&runs, None)?;
    Ok(write_comparison(&runs, dir, port.as_deref(), false)?.1)
}

/// Writes the figures and the page (and, with `tables`, runs.csv and buckets.csv) into
/// `out`; returns the headline table as text and the page's path.
fn write_comparison(
    runs: &[Run],
    out: &Path,
    port: Option<&str>,
    tables: bool,
) -> Result<(String, PathBuf), String> {
    let headline = headline_rows(runs, port);
    if tables {
        let buckets = bucket_rows(runs);
        let write = |name: &str, bytes: &[u8]| {
            let p = out.join(name);
            atomic_write(&p, bytes).map_err(|e| format!("cannot write {}: {e}", p.display()))
        };
        write("runs.csv", csv_bytes(&headline.0, &headline.1).as_bytes())?;
        write("buckets.csv", csv_bytes(&buckets.0, &buckets.1).as_bytes())?;
    }
    let plots_dir = out.join("plots");
    let plots = figures(runs, port);
    for p in &plots {
        write_spec(&plots_dir, p)
            .map_err(|e| format!("cannot write {}: {e}", plots_dir.display()))?;
    }
    let drawn = !plots.is_empty() && render(&plots_dir)?;
    let table = text_table(
        &headline.0.iter().map(String::as_str).collect::<Vec<_>>(),
        &headline.1,
        |i| i > 0,
    );
    let page =
        crate::html::compare_page(out, &runs_listing(runs), &table, drawn, !plots.is_empty())?;
    Ok((table, page))
}

/// The run folders in `d`: itself when it holds summary.json, else those of `d/runs`, else
/// those directly inside it, in name order.
fn run_dirs(d: &Path) -> Result<Vec<PathBuf>, String> {
    if d.join("summary.json").is_file() {
        return Ok(vec![d.to_path_buf()]);
    }
    if !d.is_dir() {
        return Err(format!("{}: no such folder", d.display()));
    }
    let runs = d.join("runs");
    let base = if runs.is_dir() { runs } else { d.to_path_buf() };
    let mut found: Vec<PathBuf> = std::fs::read_dir(&base)
        .map_err(|e| format!("{}: {e}", base.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("summary.json").is_file())
        .collect();
    found.sort();
    if found.is_empty() {
        return Err(format!(
            "{}: not a results folder (no summary.json in it, its runs/ or its subfolders)",
            d.display()
        ));
    }
    Ok(found)
}

fn load(dir: &Path) -> Result<Run, String> {
    let at = |name: &str| dir.join(name);
    let read =
        |name: &str| std::fs::read(at(name)).map_err(|e| format!("{}: {e}", at(name).display()));
    let summary: Value = serde_json::from_slice(&read("summary.json")?)
        .map_err(|e| format!("{}: {e}", at("summary.json").display()))?;
    let kernel = summary["source"].as_str() == Some("linux-kernel");

    let flows_tab = Table::read(&at("flows.csv"))?;
    let mut flows = Vec::new();
    let mut goodput_gbps = Vec::new();
    for row in 0..flows_tab.rows.len() {
        if flows_tab.get(row, "measured").is_some_and(|m| m == "false") {
            continue;
        }
        let size = flows_tab.num(row, "size_bytes").map(|s| s as u64);
        let fct = flows_tab.num(row, "fct_ns").map(|n| n / 1e3);
        flows.push((size, fct, flows_tab.num(row, "slowdown")));
        if size.is_none()
            && let Some(g) = flows_tab.num(row, "window_goodput_gbps")
        {
            goodput_gbps.push(g);
        }
    }
    let sum = |col: &str| {
        flows_tab.has(col).then(|| {
            (0..flows_tab.rows.len())
                .filter_map(|r| flows_tab.num(r, col))
                .sum::<f64>() as u64
        })
    };
    let (retransmits, timeouts) = (sum("retransmits"), sum("timeouts"));

    let ports_tab = Table::read(&at("ports.csv"))?;
    let ports = (0..ports_tab.rows.len())
        .map(|r| {
            let tier = format!(
                "{}->{}",
                ports_tab.get(r, "tier").unwrap_or("?"),
                ports_tab.get(r, "peer_tier").unwrap_or("?")
            );
            PortStat {
                name: format!(
                    "{}->{}",
                    ports_tab.get(r, "node").unwrap_or("?"),
                    ports_tab.get(r, "peer").unwrap_or("?")
                ),
                tier,
                avg_queue: ports_tab.num(r, "avg_queue_bytes"),
                max_queue: ports_tab.num(r, "max_queue_bytes"),
            }
        })
        .collect();

    let mut queues: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    if at("timeseries.csv").is_file() {
        let ts = Table::read(&at("timeseries.csv"))?;
        for r in 0..ts.rows.len() {
            if ts.get(r, "kind") == Some("queue_bytes")
                && let (Some(id), Some(t), Some(v)) =
                    (ts.get(r, "id"), ts.num(r, "time_ns"), ts.num(r, "value"))
            {
                queues.entry(id.to_string()).or_default().push((t / 1e6, v));
            }
        }
    }
    // A sweep's run: named by its point, seeds pooled.
    let point = std::fs::read(at("point.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|p| p.get("params").and_then(Value::as_object).cloned())
        .map(|params| {
            params
                .iter()
                .map(|(k, v)| {
                    let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
                    if k == "variant" {
                        v
                    } else {
                        format!("{}={v}", k.rsplit('.').next().unwrap_or(k))
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .filter(|p| !p.is_empty());
    Ok(Run {
        label: String::new(),
        point,
        seeds: 1,
        dir: dir.to_path_buf(),
        kernel,
        summary,
        flows,
        goodput_gbps,
        retransmits,
        timeouts,
        ports,
        queues,
    })
}

impl Run {
    /// Pools `other`, another seed of the same point, into this run: flows, ports and
    /// queue samples pooled, counts summed, goodput kept per seed.
    fn pool(&mut self, other: Self) {
        let add = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a + b);
        self.seeds += other.seeds;
        self.flows.extend(other.flows);
        self.goodput_gbps.extend(other.goodput_gbps);
        self.retransmits = add(self.retransmits, other.retransmits);
        self.timeouts = add(self.timeouts, other.timeouts);
        for key in ["data_drops", "packets_dropped", "flows_total"] {
            let sum = add(self.summary[key].as_u64(), other.summary[key].as_u64());
            self.summary[key] = sum.map_or(Value::Null, Value::from);
        }
        self.ports.extend(other.ports);
        for (port, samples) in other.queues {
            self.queues.entry(port).or_default().extend(samples);
        }
    }
}

/// (size in bytes, FCT in µs, slowdown) of one flow, `None` where not measured.
type FlowRow = (Option<u64>, Option<f64>, Option<f64>);

/// The queues of one port of a run (`None`: not measured).
struct PortStat {
    name: String,
    tier: String,
    avg_queue: Option<f64>,
    max_queue: Option<f64>,
}

/// A CSV file read as text, columns looked up by name.
struct Table {
    header: Vec<String>,
    rows: Vec<csv::StringRecord>,
}

impl Table {
    fn read(path: &Path) -> Result<Self, String> {
        let bad = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
        let mut r = csv::Reader::from_path(path).map_err(|e| bad(&e))?;
        let header = r
            .headers()
            .map_err(|e| bad(&e))?
            .iter()
            .map(str::to_string)
            .collect();
        let rows = r.records().collect::<Result<_, _>>().map_err(|e| bad(&e))?;
        Ok(Self { header, rows })
    }
    fn has(&self, col: &str) -> bool {
        self.header.iter().any(|h| h == col)
    }
    /// The cell, `None` when the column is absent or the cell empty (not measured).
    fn get(&self, row: usize, col: &str) -> Option<&str> {
        let i = self.header.iter().position(|h| h == col)?;
        self.rows[row].get(i).filter(|c| !c.is_empty())
    }
    fn num(&self, row: usize, col: &str) -> Option<f64> {
        self.get(row, col)?.parse().ok()
    }
}

/// Names each run: the name given, else the scenario's name (with "Linux kernel" for a
/// kernel run), made unique with the folder's name where two would read the same.
fn name_runs(runs: &mut [Run], names: &[String]) {
    let default = |r: &Run| {
        let scenario = r.summary["scenario"].as_str().unwrap_or("run").to_string();
        if r.kernel {
            format!("{scenario} (Linux kernel)")
        } else {
            format!("{scenario} (dcsim)")
        }
    };
    let defaults: Vec<String> = runs.iter().map(default).collect();
    for (i, r) in runs.iter_mut().enumerate() {
        r.label = match names.get(i) {
            Some(n) => n.clone(),
            None if r.point.is_some() => {
                let p = r.point.clone().unwrap_or_default();
                if r.seeds > 1 {
                    format!("{p} ({} seeds)", r.seeds)
                } else {
                    p
                }
            }
            None if defaults.iter().filter(|d| **d == defaults[i]).count() > 1 => {
                r.dir.file_name().map_or_else(
                    || r.dir.display().to_string(),
                    |n| n.to_string_lossy().into_owned(),
                )
            }
            None => defaults[i].clone(),
        };
    }
}

/// The port whose queue the runs are compared at: the one asked for (every run must have
/// sampled it), else the first port every run sampled, else none.
fn pick_port(runs: &[Run], asked: Option<&str>) -> Result<Option<String>, String> {
    if let Some(p) = asked {
        if let Some(r) = runs.iter().find(|r| !r.queues.contains_key(p)) {
            let have: Vec<&str> = r.queues.keys().map(String::as_str).collect();
            return Err(format!(
                "{}: no queue samples of port {p} (sampled: {}); sample it with output.timeseries.ports",
                r.dir.display(),
                if have.is_empty() {
                    "none".to_string()
                } else {
                    have.join(", ")
                }
            ));
        }
        return Ok(Some(p.to_string()));
    }
    Ok(runs[0]
        .queues
        .keys()
        .find(|p| runs.iter().all(|r| r.queues.contains_key(*p)))
        .cloned())
}

/// One cell: a number with its interval, or "–" for none.
fn est_cell(e: Option<Estimate>, digits: usize) -> [String; 3] {
    let f = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v:.digits$}"));
    match e {
        Some(e) => [f(Some(e.value)), f(e.lo), f(e.hi)],
        None => [String::new(), String::new(), String::new()],
    }
}

/// The FCT and slowdown statistics of one run's flows whose size is in `[lo, hi)`.
fn bucket_stats(r: &Run, lo: u64, hi: Option<u64>) -> (usize, [Option<Estimate>; 6]) {
    let inside = |s: &Option<u64>| s.is_some_and(|s| s >= lo && hi.is_none_or(|h| s < h));
    // The sorted values a flow's field holds, for the flows in the bucket.
    let sorted = |field: fn(&FlowRow) -> Option<f64>| {
        let mut v: Vec<f64> = r
            .flows
            .iter()
            .filter(|f| inside(&f.0))
            .filter_map(field)
            .collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let (fct, slow) = (sorted(|f| f.1), sorted(|f| f.2));
    (
        fct.len(),
        [
            stats::mean(&fct),
            stats::quantile(&fct, 0.5),
            stats::quantile(&fct, 0.99),
            stats::mean(&slow),
            stats::quantile(&slow, 0.5),
            stats::quantile(&slow, 0.99),
        ],
    )
}

/// The buckets compared: every flow, then the fine buckets any run has flows in.
fn buckets_used(runs: &[Run]) -> Vec<(&'static str, u64, Option<u64>)> {
    let mut v = vec![("all", 0, None)];
    let fine = BUCKET_SETS
        .iter()
        .find(|s| s.name == "fine")
        .map_or(&[][..], |s| s.buckets);
    for b in fine {
        if runs
            .iter()
            .any(|r| bucket_stats(r, b.lo_bytes, b.hi_bytes).0 > 0)
        {
            v.push((b.name, b.lo_bytes, b.hi_bytes));
        }
    }
    v
}

type Rows = (Vec<String>, Vec<Vec<String>>);

fn bucket_rows(runs: &[Run]) -> Rows {
    let mut header = vec!["run".to_string(), "bucket".into(), "completed".into()];
    for stat in [
        "fct_mean_us",
        "fct_p50_us",
        "fct_p99_us",
        "slowdown_mean",
        "slowdown_p50",
        "slowdown_p99",
    ] {
        header.extend([stat.to_string(), format!("{stat}_lo"), format!("{stat}_hi")]);
    }
    let mut rows = Vec::new();
    for (name, lo, hi) in buckets_used(runs) {
        for r in runs {
            let (n, est) = bucket_stats(r, lo, hi);
            let mut row = vec![r.label.clone(), name.to_string(), n.to_string()];
            for (i, e) in est.into_iter().enumerate() {
                row.extend(est_cell(e, if i < 3 { 1 } else { 3 }));
            }
            rows.push(row);
        }
    }
    (header, rows)
}

/// Per run: flows, FCT, losses and the compared port's queue (the text table and runs.csv).
fn headline_rows(runs: &[Run], port: Option<&str>) -> Rows {
    let q = port.map_or_else(String::new, |p| format!(" at {p}"));
    let header: Vec<String> = [
        "run",
        "flows done",
        "FCT mean µs",
        "FCT p99 µs (95 % interval)",
        "data drops",
        "retransmits",
        "timeouts",
        "goodput Gb/s",
        &format!("queue{q} mean KB"),
        &format!("queue{q} p1/p50/p99 KB"),
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    let opt = |v: Option<u64>| v.map_or_else(|| "–".into(), |v| v.to_string());
    let rows = runs
        .iter()
        .map(|r| {
            let mut fct: Vec<f64> = r.flows.iter().filter_map(|f| f.1).collect();
            fct.sort_by(f64::total_cmp);
            let p99 = stats::quantile(&fct, 0.99).map_or_else(
                || "–".to_string(),
                |e| {
                    let side = |v: Option<f64>| v.map_or_else(|| "?".into(), |v| format!("{v:.0}"));
                    format!("{:.0} ({}–{})", e.value, side(e.lo), side(e.hi))
                },
            );
            let mean =
                stats::mean(&fct).map_or_else(|| "–".to_string(), |e| format!("{:.0}", e.value));
            // Data packets lost (credits and control packets apart, where the run counts them).
            let drops = r.summary["data_drops"]
                .as_u64()
                .or(r.summary["packets_dropped"].as_u64());
            let mut qs: Vec<f64> = port
                .and_then(|p| r.queues.get(p))
                .map(|v| v.iter().map(|x| x.1 / 1e3).collect())
                .unwrap_or_default();
            qs.sort_by(f64::total_cmp);
            let pick = |q: f64| stats::quantile(&qs, q).map_or(f64::NAN, |e| e.value);
            let (qmean, qpct) = if qs.is_empty() {
                ("–".to_string(), "–".to_string())
            } else {
                (
                    format!("{:.1}", qs.iter().sum::<f64>() / qs.len() as f64),
                    format!("{:.1} / {:.1} / {:.1}", pick(0.01), pick(0.5), pick(0.99)),
                )
            };
            // Per seed: the long flows' total, averaged over the pooled seeds.
            let goodput = if r.goodput_gbps.is_empty() {
                "–".to_string()
            } else {
                format!("{:.4}", r.goodput_gbps.iter().sum::<f64>() / r.seeds as f64)
            };
            vec![
                r.label.clone(),
                format!(
                    "{}/{}",
                    fct.len(),
                    r.summary["flows_total"]
                        .as_u64()
                        .unwrap_or(r.flows.len() as u64)
                ),
                mean,
                p99,
                opt(drops),
                opt(r.retransmits),
                opt(r.timeouts),
                goodput,
                qmean,
                qpct,
            ]
        })
        .collect();
    (header, rows)
}

fn csv_bytes(header: &[String], rows: &[Vec<String>]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(header);
    for r in rows {
        let _ = w.write_record(r);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// (name, folder, kernel run, summary without the resolved scenario) of each run.
fn runs_listing(runs: &[Run]) -> Vec<(String, String, bool, Value)> {
    runs.iter()
        .map(|r| {
            let mut s = r.summary.clone();
            if let Some(m) = s.as_object_mut() {
                m.remove("resolved_scenario");
            }
            (r.label.clone(), r.dir.display().to_string(), r.kernel, s)
        })
        .collect()
}

/// The figures: FCT and slowdown per size bucket (median and p99 with intervals), the FCT
/// distribution, the compared port's queue over time, and queues per tier.
fn figures(runs: &[Run], port: Option<&str>) -> Vec<Plot> {
    let mut plots = Vec::new();
    let buckets = buckets_used(runs);
    let cats: Vec<String> = buckets.iter().map(|b| b.0.to_string()).collect();
    let per_bucket = |stat: usize, scale: f64| -> (Vec<Series>, Vec<Vec<f64>>, Vec<Vec<f64>>) {
        let (mut series, mut lo, mut hi) = (Vec::new(), Vec::new(), Vec::new());
        for r in runs {
            let est: Vec<Option<Estimate>> = buckets
                .iter()
                .map(|b| bucket_stats(r, b.1, b.2).1[stat])
                .collect();
            if est.iter().all(Option::is_none) {
                continue;
            }
            let v = |f: &dyn Fn(&Estimate) -> Option<f64>| -> Vec<f64> {
                est.iter()
                    .map(|e| e.as_ref().and_then(f).map_or(f64::NAN, |x| x * scale))
                    .collect()
            };
            series.push(Series {
                label: r.label.clone(),
                x: (0..buckets.len()).map(|i| i as f64).collect(),
                y: v(&|e| Some(e.value)),
            });
            lo.push(v(&|e| e.lo));
            hi.push(v(&|e| e.hi));
        }
        (series, lo, hi)
    };
    let panel = |title: &str, ylabel: &str, stat: usize| {
        let (s, lo, hi) = per_bucket(stat, 1.0);
        (!s.is_empty()).then(|| {
            Panel::bars(title, cats.clone(), ylabel, s)
                .points()
                .logy()
                .with_interval(lo, hi)
        })
    };
    let fct: Vec<Panel> = [
        panel("median FCT per flow size", "FCT (µs)", 1),
        panel("99th-percentile FCT per flow size", "FCT (µs)", 2),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !fct.is_empty() {
        plots.push(Plot {
            file: "fct_buckets".into(),
            panels: fct,
        });
    }
    let slow: Vec<Panel> = [
        panel(
            "median slowdown per flow size",
            "slowdown (FCT / unloaded FCT)",
            4,
        ),
        panel(
            "99th-percentile slowdown per flow size",
            "slowdown (FCT / unloaded FCT)",
            5,
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    if !slow.is_empty() {
        plots.push(Plot {
            file: "slowdown_buckets".into(),
            panels: slow,
        });
    }
    let cdf: Vec<Series> = runs
        .iter()
        .filter_map(|r| {
            let mut f: Vec<f64> = r.flows.iter().filter_map(|f| f.1).collect();
            f.sort_by(f64::total_cmp);
            (!f.is_empty()).then(|| {
                let n = f.len();
                let step = n.div_ceil(CDF_POINTS).max(1);
                let idx: Vec<usize> = (0..n).step_by(step).chain([n - 1]).collect();
                Series {
                    label: r.label.clone(),
                    x: idx.iter().map(|&i| f[i]).collect(),
                    y: idx.iter().map(|&i| (i + 1) as f64 / n as f64).collect(),
                }
            })
        })
        .collect();
    if !cdf.is_empty() {
        plots.push(Plot {
            file: "fct_cdf".into(),
            panels: vec![
                Panel::line(
                    "FCT distribution (all measured flows)",
                    "FCT (µs)",
                    "fraction of flows",
                    cdf,
                )
                .logx10(),
            ],
        });
    }
    if let Some(p) = port {
        let series = runs
            .iter()
            .map(|r| {
                // The first seed's samples: a pooled run's next seed starts again at 0.
                let all = &r.queues[p];
                let first = all
                    .windows(2)
                    .position(|w| w[1].0 < w[0].0)
                    .map_or(all.len(), |i| i + 1);
                let pts = &all[..first];
                Series {
                    label: r.label.clone(),
                    x: pts.iter().map(|x| x.0).collect(),
                    y: pts.iter().map(|x| x.1 / 1e3).collect(),
                }
            })
            .collect();
        plots.push(Plot {
            file: "queue".into(),
            panels: vec![
                Panel::line(format!("queue at {p}"), "time (ms)", "queue (KB)", series).from_zero(),
            ],
        });
    }
    // Queues per tier, over the ports whose queues every run measured (the kernel twin
    // measures only the ports it samples), so that each point averages the same ports.
    let both = |p: &PortStat| p.avg_queue.is_some() && p.max_queue.is_some();
    let common: Vec<&PortStat> = runs[0]
        .ports
        .iter()
        .filter(|p| {
            both(p)
                && runs
                    .iter()
                    .all(|r| r.ports.iter().any(|q| q.name == p.name && both(q)))
        })
        .collect();
    let mut tiers: Vec<&str> = Vec::new();
    for p in &common {
        if !tiers.contains(&p.tier.as_str()) {
            tiers.push(&p.tier);
        }
    }
    let tier_series = |f: &dyn Fn(&[&PortStat]) -> f64| {
        runs.iter()
            .map(|r| Series {
                label: r.label.clone(),
                x: (0..tiers.len()).map(|i| i as f64).collect(),
                y: tiers
                    .iter()
                    .map(|t| {
                        let ps: Vec<&PortStat> = r
                            .ports
                            .iter()
                            .filter(|p| p.tier == *t && common.iter().any(|c| c.name == p.name))
                            .collect();
                        f(&ps) / 1e3
                    })
                    .collect(),
            })
            .collect::<Vec<_>>()
    };
    if !tiers.is_empty() {
        let cats: Vec<String> = tiers
            .iter()
            .map(|t| {
                let n = common.iter().filter(|p| p.tier == *t).count();
                format!("{t} ({n})")
            })
            .collect();
        let avg =
            tier_series(&|ps| ps.iter().filter_map(|p| p.avg_queue).sum::<f64>() / ps.len() as f64);
        let max = tier_series(&|ps| ps.iter().filter_map(|p| p.max_queue).fold(0.0, f64::max));
        plots.push(Plot {
            file: "tiers".into(),
            panels: vec![
                Panel::bars(
                    "time-averaged queue per tier (mean over ports)",
                    cats.clone(),
                    "queue (KB)",
                    avg,
                )
                .points()
                .from_zero(),
                Panel::bars("largest queue per tier", cats, "queue (KB)", max)
                    .points()
                    .from_zero(),
            ],
        });
    }
    plots
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join(name), text).unwrap();
    }

    /// A run folder as the kernel twin writes one: no buckets.csv or tiers.csv, and empty
    /// cells where the kernel measures nothing.
    fn kernel_run(dir: &Path) {
        write(
            dir,
            "summary.json",
            r#"{"source":"linux-kernel","scenario":"s","packets_dropped":3,"flows_total":2}"#,
        );
        write(
            dir,
            "flows.csv",
            "flow_id,size_bytes,fct_ns,slowdown,measured,window_goodput_gbps,retransmits,timeouts\n\
             0,,,,true,0.05,2,0\n1,2000000,400000000,,true,,1,0\n",
        );
        write(
            dir,
            "ports.csv",
            "port,node,peer,tier,peer_tier,avg_queue_bytes,max_queue_bytes,drops\n0,sw,h0,tor,host,1000.5,3000,3\n1,h0,sw,host,tor,,,0\n",
        );
        write(
            dir,
            "timeseries.csv",
            "time_ns,kind,id,value\n1000000,queue_bytes,sw->h0,1500\n2000000,queue_bytes,sw->h0,2500\n",
        );
    }

    /// A sweep's seeds of one point are one run, named by the point (a variant by its
    /// name): flows pooled, drops summed, goodput per seed, the queue plot the first seed's.
    #[test]
    fn a_sweeps_seeds_are_pooled_under_the_points_name() {
        let t = tempfile::tempdir().unwrap();
        let sweep = t.path().join("sweep");
        for (variant, seed) in [("dctcp", 1), ("dctcp", 2), ("xpass", 1)] {
            let d = sweep.join(format!("variant={variant}_seed={seed}"));
            kernel_run(&d);
            write(
                &d,
                "summary.json",
                r#"{"scenario":"s","data_drops":3,"flows_total":2}"#,
            );
            write(
                &d,
                "point.json",
                &format!(r#"{{"params":{{"variant":"{variant}"}},"seed":{seed}}}"#),
            );
        }
        let out = t.path().join("cmp");
        let table = compare(&CompareOptions {
            dirs: vec![sweep],
            out: out.clone(),
            ..Default::default()
        })
        .unwrap();
        let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
        let rows: Vec<&str> = runs.lines().collect();
        assert_eq!(rows.len(), 3, "{runs}");
        // Two seeds: 2 of 4 flows with an FCT, 6 drops, 3 + 3 retransmits, and the mean
        // goodput of one seed's long flow.
        assert!(rows[1].starts_with("dctcp (2 seeds),2/4,"), "{runs}");
        assert!(rows[1].contains(",6,6,0,0.0500,"), "{runs}");
        assert!(rows[2].starts_with("xpass,1/2,"), "{runs}");
        assert!(table.contains("dctcp (2 seeds)"), "{table}");
        let queue: Value =
            serde_json::from_slice(&std::fs::read(out.join("plots/queue.json")).unwrap()).unwrap();
        assert_eq!(
            queue["panels"][0]["series"][0]["x"],
            serde_json::json!([1.0, 2.0])
        );
        // Two sweeps of the same variants: pooled per sweep, named with the sweep's folder.
        let other = t.path().join("other");
        for seed in [1, 2] {
            let d = other.join(format!("variant=dctcp_seed={seed}"));
            kernel_run(&d);
            write(
                &d,
                "summary.json",
                r#"{"scenario":"s","data_drops":1,"flows_total":2}"#,
            );
            write(
                &d,
                "point.json",
                r#"{"params":{"variant":"dctcp"},"seed":1}"#,
            );
        }
        let table = compare(&CompareOptions {
            dirs: vec![t.path().join("sweep"), other],
            out: t.path().join("cmp2"),
            ..Default::default()
        })
        .unwrap();
        assert!(
            table.contains("sweep: dctcp (2 seeds)") && table.contains("other: dctcp (2 seeds)"),
            "{table}"
        );
    }

    #[test]
    fn a_kernel_folder_and_a_simulated_one_compare_side_by_side() {
        let t = tempfile::tempdir().unwrap();
        let (k, s) = (t.path().join("kernel"), t.path().join("sim"));
        kernel_run(&k);
        kernel_run(&s);
        write(
            &s,
            "summary.json",
            r#"{"scenario":"s","packets_dropped":9,"flows_total":2}"#,
        );
        let out = t.path().join("cmp");
        let table = compare(&CompareOptions {
            dirs: vec![s.clone(), k.clone()],
            out: out.clone(),
            ..Default::default()
        })
        .unwrap();
        assert!(
            table.contains("s (dcsim)") && table.contains("s (Linux kernel)"),
            "{table}"
        );
        assert!(table.contains("queue at sw->h0 mean KB"), "{table}");
        let runs = std::fs::read_to_string(out.join("runs.csv")).unwrap();
        // drops from each summary; retransmits summed over flows; queue mean 2.0 KB.
        assert!(
            runs.contains("s (dcsim),1/2,400000,400000 (400000–?),9,3,0,0.0500,2.0"),
            "{runs}"
        );
        assert!(
            runs.contains("s (Linux kernel),1/2,400000,400000 (400000–?),3,3,0,"),
            "{runs}"
        );
        let buckets = std::fs::read_to_string(out.join("buckets.csv")).unwrap();
        assert!(
            buckets
                .lines()
                .any(|l| l.starts_with("s (Linux kernel),1MB+,1,400000.0")),
            "{buckets}"
        );
        assert!(out.join("report.html").is_file());
        for f in ["fct_buckets", "fct_cdf", "queue", "tiers"] {
            assert!(out.join("plots").join(format!("{f}.json")).is_file(), "{f}");
        }
        // The host port's queue was not measured in the kernel run: the tiers compared are
        // those of the ports both runs measured (sw->h0 alone).
        let tiers = std::fs::read_to_string(out.join("plots/tiers.json")).unwrap();
        assert!(
            tiers.contains("tor->host (1)") && !tiers.contains("host->tor"),
            "{tiers}"
        );
    }

    #[test]
    fn names_ports_and_outputs_are_checked() {
        let t = tempfile::tempdir().unwrap();
        let k = t.path().join("kernel");
        kernel_run(&k);
        let run = |names: Vec<String>, port: Option<&str>, out: PathBuf| {
            compare(&CompareOptions {
                dirs: vec![k.clone()],
                names,
                out,
                port: port.map(str::to_string),
            })
        };
        let e = run(vec!["a".into(), "b".into()], None, t.path().join("o")).unwrap_err();
        assert!(e.contains("2 names for 1 runs"), "{e}");
        let e = run(vec![], Some("h0->sw"), t.path().join("o")).unwrap_err();
        assert!(
            e.contains("no queue samples of port h0->sw (sampled: sw->h0)"),
            "{e}"
        );
        let e = run(vec![], None, k.clone()).unwrap_err();
        assert!(e.contains("this is a results folder"), "{e}");
        let e = compare(&CompareOptions {
            dirs: vec![t.path().join("missing")],
            out: t.path().join("o"),
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.contains("no such folder"), "{e}");
        assert!(
            run(vec!["kernel 6.18".into()], None, t.path().join("o"))
                .unwrap()
                .contains("kernel 6.18")
        );
    }

    #[test]
    fn report_reads_a_kernel_folder_without_adding_tables_to_it() {
        let t = tempfile::tempdir().unwrap();
        let k = t.path().join("kernel");
        kernel_run(&k);
        let page = crate::report(&k).unwrap();
        let html = std::fs::read_to_string(page).unwrap();
        assert!(
            html.contains("run s (Linux kernel)") && html.contains("queue at sw-&gt;h0"),
            "{html}"
        );
        assert!(!k.join("runs.csv").exists() && k.join("plots/queue.json").exists());
    }
}
