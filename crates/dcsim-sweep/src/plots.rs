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

/// Writes `plots/sweep_<path>.json` with each headline column against the values of
/// varied path `x` (mean over seeds; one series per combination of the other varied
/// values) and draws it. Returns the plot.
///
/// # Errors
/// If `x` is not a varied path, a value of it is not a number, or writing fails.
pub fn plot_against(index: &Index, x: &str, out: &Path) -> Result<Plot, SweepError> {
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
        // series label -> x -> (sum, count)
        let mut groups: BTreeMap<String, BTreeMap<u64, (f64, f64, u32)>> = BTreeMap::new();
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
                .map(|p| format!("{}={}", p.rsplit('.').next().unwrap_or(p), text(r, p)))
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
                .or_insert((xn, 0.0, 0));
            e.1 += y;
            e.2 += 1;
        }
        if groups.is_empty() {
            continue;
        }
        let series = groups
            .into_iter()
            .map(|(label, pts)| {
                let mut pts: Vec<(f64, f64)> = pts
                    .into_values()
                    .map(|(xv, sum, n)| (xv, sum / f64::from(n)))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series {
                    label,
                    x: pts.iter().map(|p| p.0).collect(),
                    y: pts.iter().map(|p| p.1).collect(),
                }
            })
            .collect();
        panels.push(Panel::line(title, x, ylabel, series).points());
    }
    if panels.is_empty() {
        return Err(SweepError::new(format!(
            "--plot {x}: no completed run has a plotted column"
        )));
    }
    let plot = Plot {
        file: format!("sweep_{}", sanitize(x)),
        panels,
    };
    let dir = out.join("plots");
    write_spec(&dir, &plot)
        .map_err(|e| SweepError::Io(format!("cannot write {}: {e}", dir.display())))?;
    render(&dir).map_err(SweepError::Io)?;
    Ok(plot)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_numbers_of_values() {
        assert_eq!(number("0.5"), Some(0.5));
        assert_eq!(number("65pkts"), Some(65.0));
        assert_eq!(number("10Gbps"), Some(10.0));
        assert_eq!(number("dctcp"), None);
    }
}
