//! `--plot PATH`: headline results against one varied parameter (a load sweep), through
//! the project's one plotting path (`dcsim_metrics::plot`).

use std::collections::BTreeMap;
use std::path::Path;

use dcsim::metrics::plot::{Panel, Plot, Series, render, write_spec};
use serde_json::Value;

use crate::{Index, SweepError, sanitize};

/// The panels drawn, when their column has values: (column, title, y label).
const PANELS: &[(&str, &str, &str)] = &[
    ("slowdown_mean", "mean slowdown", "slowdown"),
    (
        "fct_p99_us_0-10KB",
        "99th-percentile FCT, 0-10KB flows",
        "FCT (us)",
    ),
    ("fct_mean_us_1MB+", "mean FCT, 1MB+ flows", "FCT (us)"),
    ("max_queue_bytes", "largest switch queue", "bytes"),
    (
        "jain_fairness",
        "Jain fairness of long-lived flows",
        "Jain index",
    ),
];

/// The leading number of a value (`0.5`, `65pkts` → 65, `10Gbps` → 10), if any.
fn number(v: &str) -> Option<f64> {
    let end = v
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && (c == '-' || c == '+'))))
        .map_or(v.len(), |(i, _)| i);
    v[..end].parse().ok()
}

/// An axis label in words for a varied path: the common ones by name, else the last key
/// in words with the path after it.
pub fn axis_label(path: &str) -> String {
    const KNOWN: &[(&str, &str)] = &[
        ("pattern.load", "offered load (fraction of link capacity)"),
        ("transport.cc", "congestion control"),
        ("transport.kind", "transport"),
        ("sim.seed", "seed"),
        ("topology.pairs", "host pairs"),
        ("topology.hosts", "hosts"),
        ("queue.buffer", "switch buffer"),
        ("queue.mark_threshold", "ECN marking threshold"),
        ("pattern.degree", "incast degree"),
        ("pattern.max_flows", "flows"),
    ];
    if let Some((_, words)) = KNOWN.iter().find(|(k, _)| path.ends_with(k)) {
        return (*words).to_string();
    }
    let last = path.rsplit('.').next().unwrap_or(path).replace('_', " ");
    format!("{last} ({path})")
}

/// Student's t quantile for a two-sided 95 % interval with `df` degrees of freedom.
fn t95(df: u32) -> f64 {
    const T: [f64; 10] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    ];
    match df {
        0 => f64::NAN,
        1..=10 => T[df as usize - 1],
        11..=30 => 2.042 + (2.228 - 2.042) * f64::from(30 - df) / 20.0,
        _ => 1.96,
    }
}

/// Writes `plots/sweep_<key>.json` with each headline column against the values of
/// varied path `x` (mean over seeds with a 95 % confidence interval when there are several;
/// one series per combination of the other varied values; y axes from zero) and draws it.
/// Returns the plot and whether it was drawn (matplotlib found).
///
/// # Errors
/// If `x` is not a varied path, a value of it is not a number, or writing fails.
pub fn plot_against(index: &Index, x: &str, out: &Path) -> Result<(Plot, bool), SweepError> {
    let params = &index.header[..index.params];
    if !params.iter().any(|p| p == x) {
        return Err(SweepError::new(format!(
            "--plot {x}: not a varied path (varied: {})",
            params.join(", ")
        )));
    }
    let text = |r: &serde_json::Map<String, Value>, k: &str| {
        r.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let mut panels = Vec::new();
    for &(col, title, ylabel) in PANELS {
        // series label -> x -> (x, values over seeds)
        let mut groups: BTreeMap<String, BTreeMap<u64, (f64, Vec<f64>)>> = BTreeMap::new();
        for r in index.rows.iter().filter(|r| text(r, "status") == "ok") {
            let Some(y) = r.get(col).and_then(Value::as_f64) else {
                continue;
            };
            let xv = text(r, x);
            let xn = number(&xv).ok_or_else(|| {
                SweepError::new(format!("--plot {x}: value {xv:?} is not a number"))
            })?;
            let label: Vec<String> = params
                .iter()
                .filter(|p| *p != x)
                .map(|p| {
                    if p == crate::point::VARIANT_PATH {
                        text(r, p)
                    } else {
                        format!("{}={}", p.rsplit('.').next().unwrap_or(p), text(r, p))
                    }
                })
                .collect();
            let label = if label.is_empty() {
                "all".to_string()
            } else {
                label.join(", ")
            };
            let e = groups
                .entry(label)
                .or_default()
                .entry(xn.to_bits())
                .or_insert((xn, Vec::new()));
            e.1.push(y);
        }
        if groups.is_empty() {
            continue;
        }
        let mut series = Vec::new();
        let mut err = Vec::new();
        for (label, pts) in groups {
            // (x, mean, half-width of the 95 % interval; 0 with one seed)
            let mut pts: Vec<(f64, f64, f64)> = pts
                .into_values()
                .map(|(xv, ys)| {
                    let n = ys.len() as f64;
                    let mean = ys.iter().sum::<f64>() / n;
                    let var =
                        ys.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
                    let half = if ys.len() > 1 {
                        t95(ys.len() as u32 - 1) * (var / n).sqrt()
                    } else {
                        0.0
                    };
                    (xv, mean, half)
                })
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            series.push(Series {
                label,
                x: pts.iter().map(|p| p.0).collect(),
                y: pts.iter().map(|p| p.1).collect(),
            });
            err.push(pts.iter().map(|p| p.2).collect::<Vec<f64>>());
        }
        let seeds = err.iter().flatten().any(|&h| h > 0.0);
        let mut panel = Panel::line(title, &axis_label(x), ylabel, series)
            .points()
            .from_zero();
        if seeds {
            panel.err = err;
            panel.title += " (mean, 95 % CI over seeds)";
        }
        panels.push(panel);
    }
    if panels.is_empty() {
        return Err(SweepError::new(format!(
            "--plot {x}: no completed run has a plotted column"
        )));
    }
    // Named by the path's last key (`sweep_load`), or the whole path when another varied
    // path ends the same way.
    let last = |p: &str| p.rsplit('.').next().unwrap_or(p).to_string();
    let clash = params.iter().filter(|p| last(p) == last(x)).count() > 1;
    let plot = Plot {
        file: format!(
            "sweep_{}",
            sanitize(&if clash { x.to_string() } else { last(x) })
        ),
        panels,
    };
    let dir = out.join("plots");
    write_spec(&dir, &plot)
        .map_err(|e| SweepError::Io(format!("cannot write {}: {e}", dir.display())))?;
    let drawn = render(&dir).map_err(SweepError::Io)?;
    Ok((plot, drawn))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_labels_in_words() {
        assert_eq!(
            axis_label("generators[0].pattern.load"),
            "offered load (fraction of link capacity)"
        );
        assert_eq!(axis_label("queue.red.max_th"), "max th (queue.red.max_th)");
        assert!((t95(2) - 4.303).abs() < 1e-9 && (t95(1000) - 1.96).abs() < 1e-9);
    }

    #[test]
    fn leading_numbers_of_values() {
        assert_eq!(number("0.5"), Some(0.5));
        assert_eq!(number("65pkts"), Some(65.0));
        assert_eq!(number("10Gbps"), Some(10.0));
        assert_eq!(number("dctcp"), None);
    }
}
