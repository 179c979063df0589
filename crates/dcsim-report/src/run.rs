//! The figures of one run.

use std::collections::BTreeMap;
use std::path::Path;

use dcsim::Results;
use dcsim::metrics::plot::{Panel, Plot, Series, render, write_spec};

/// (time in ms, value) pairs of one sampled series.
type Points = Vec<(f64, f64)>;

/// At most this many series in a time panel (the first ones by id); more are unreadable.
const MAX_SERIES: usize = 8;

/// Plot specifications of a run: `timeseries` (when the run sampled: goodput, queues, and
/// each sampled state such as the congestion window or DCTCP's alpha), `fct` (when flows
/// completed: the FCT distribution and slowdown per size bucket) and `links` (utilization
/// and queues per link tier). `flows` limits the time panels to those flows (all sampled
/// ones when empty).
///
/// # Errors
/// The run's time series cannot be read.
pub fn run_plots(r: &Results, flows: &[u32]) -> std::io::Result<Vec<Plot>> {
    let mut plots = Vec::new();
    if let Some(samples) = r.samples()?.as_ref().filter(|s| !s.is_empty()) {
        // kind -> id -> points
        let mut by_kind: BTreeMap<&str, BTreeMap<String, Points>> = BTreeMap::new();
        for s in samples {
            let wanted = flows.is_empty()
                || s.kind == "queue_bytes"
                || s.id.parse::<u32>().is_ok_and(|f| flows.contains(&f));
            if wanted {
                by_kind
                    .entry(&s.kind)
                    .or_default()
                    .entry(s.id.clone())
                    .or_default()
                    .push((s.time_ns as f64 / 1e6, s.value));
            }
        }
        let mut panels = Vec::new();
        for (kind, ids) in &by_kind {
            let (title, ylabel, scale) = match *kind {
                "throughput_gbps" => ("goodput per flow", "Gb/s", 1.0),
                "queue_bytes" => ("queue length per port", "KB", 1e-3),
                "cwnd_bytes" => ("congestion window per flow", "KB", 1e-3),
                "alpha" => ("DCTCP alpha (fraction of marked bytes, EWMA)", "alpha", 1.0),
                "credit_rate_gbps" => ("ExpressPass credit rate per flow", "Gb/s", 1.0),
                "w" => ("ExpressPass aggressiveness w", "w", 1.0),
                "incast" => ("Pulser incast state (1: safe window)", "state", 1.0),
                other => (other, other, 1.0),
            };
            let mut ids: Vec<(&String, &Vec<(f64, f64)>)> = ids.iter().collect();
            ids.sort_by_key(|(id, _)| (id.parse::<u64>().unwrap_or(u64::MAX), (*id).clone()));
            let series = ids
                .into_iter()
                .take(MAX_SERIES)
                .map(|(id, pts)| Series {
                    label: if *kind == "queue_bytes" {
                        id.clone()
                    } else {
                        format!("flow {id}")
                    },
                    x: pts.iter().map(|p| p.0).collect(),
                    y: pts.iter().map(|p| p.1 * scale).collect(),
                })
                .collect();
            panels.push(Panel::line(title, "simulated time (ms)", ylabel, series).from_zero());
        }
        if !panels.is_empty() {
            plots.push(Plot {
                file: "timeseries".into(),
                panels,
            });
        }
    }
    let mut fct: Vec<f64> = r
        .flows()?
        .iter()
        .filter(|f| f.measured)
        .filter_map(|f| f.fct_ns.map(|n| n as f64 / 1e3))
        .collect();
    if !fct.is_empty() {
        fct.sort_by(f64::total_cmp);
        let n = fct.len() as f64;
        let cdf = Series {
            label: "measured flows".into(),
            y: (1..=fct.len()).map(|i| i as f64 / n).collect(),
            x: fct,
        };
        let mut panels = vec![
            Panel::line(
                "FCT distribution",
                "flow completion time (us)",
                "fraction of flows",
                vec![cdf],
            )
            .logx10(),
        ];
        let fine: Vec<_> = r.buckets.iter().filter(|b| b.set == "fine").collect();
        if fine.iter().any(|b| b.completed > 0) {
            let cats: Vec<String> = fine
                .iter()
                .map(|b| format!("{} ({} flows)", b.bucket, b.completed))
                .collect();
            let pick = |f: fn(&dcsim::metrics::analysis::BucketStats) -> f64, label: &str| Series {
                label: label.into(),
                x: (0..fine.len()).map(|i| i as f64).collect(),
                y: fine
                    .iter()
                    .map(|b| if b.completed > 0 { f(b) } else { f64::NAN })
                    .collect(),
            };
            panels.push(Panel::bars(
                "slowdown per flow size",
                cats,
                "slowdown (FCT / unloaded FCT)",
                vec![
                    pick(|b| b.slowdown_mean, "mean"),
                    pick(|b| b.slowdown_p99, "99th percentile"),
                ],
            ));
        }
        plots.push(Plot {
            file: "fct".into(),
            panels,
        });
    }
    if !r.tiers.is_empty() {
        let cats: Vec<String> = r
            .tiers
            .iter()
            .map(|t| format!("{} ({})", t.tier, t.ports))
            .collect();
        let x: Vec<f64> = (0..r.tiers.len()).map(|i| i as f64).collect();
        let util = vec![
            Series {
                label: "mean".into(),
                x: x.clone(),
                y: r.tiers.iter().map(|t| t.utilization_mean).collect(),
            },
            Series {
                label: "largest".into(),
                x: x.clone(),
                y: r.tiers.iter().map(|t| t.utilization_max).collect(),
            },
        ];
        let queues = vec![
            Series {
                label: "mean of time-averaged".into(),
                x: x.clone(),
                y: r.tiers
                    .iter()
                    .map(|t| t.avg_queue_bytes_mean / 1e3)
                    .collect(),
            },
            Series {
                label: "largest".into(),
                x,
                y: r.tiers
                    .iter()
                    .map(|t| t.max_queue_bytes as f64 / 1e3)
                    .collect(),
            },
        ];
        plots.push(Plot {
            file: "links".into(),
            panels: vec![
                Panel::bars(
                    "link utilization per tier (ports)",
                    cats.clone(),
                    "utilization (fraction of line rate)",
                    util,
                )
                .from_zero(),
                Panel::bars("queues per tier", cats, "KB", queues).from_zero(),
            ],
        });
    }
    Ok(plots)
}

/// Reads the run in `dir`, writes its plot specifications into `dir/plots` and draws them;
/// returns the plots and whether they were drawn (matplotlib found).
///
/// # Errors
/// A folder that does not hold a run's CSV files, or a write that fails.
pub fn plot_run(dir: &Path, flows: &[u32]) -> Result<(Vec<Plot>, bool), String> {
    let r = Results::load(dir).map_err(|e| match e.kind() {
        std::io::ErrorKind::Unsupported => e.to_string(),
        _ => format!("{}: not a run's results folder: {e}", dir.display()),
    })?;
    let plots = run_plots(&r, flows).map_err(|e| format!("{}: {e}", dir.display()))?;
    let out = dir.join("plots");
    for p in &plots {
        write_spec(&out, p).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    }
    let drawn = !plots.is_empty() && render(&out)?;
    Ok((plots, drawn))
}
