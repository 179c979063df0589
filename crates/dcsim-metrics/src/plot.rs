//! Plot specifications and the one plotting path of the project.
//!
//! Experiments (`dcsim repro`) and sweeps (`dcsim sweep --plot`) describe figures as data
//! ([`Plot`]: panels of series) and write them as JSON next to their results; one
//! matplotlib script, `plot.py` beside this file (embedded here), draws every specification in a
//! folder as PNG and SVG. Without Python and matplotlib the data is still complete.

use std::path::Path;
use std::process::Command;

use serde::Serialize;

use crate::atomic_write;

/// The plotting script, embedded so plots can be drawn from any directory.
pub const PLOT_PY: &str = include_str!("plot.py");

/// A plotted series.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    /// Legend label.
    pub label: String,
    /// X values.
    pub x: Vec<f64>,
    /// Y values.
    pub y: Vec<f64>,
}

/// One figure (one or more panels side by side), rendered to `<file>.png` and `.svg`.
#[derive(Clone, Debug, Serialize)]
pub struct Plot {
    /// File name without extension.
    pub file: String,
    /// Panels.
    pub panels: Vec<Panel>,
}

/// One panel of a figure.
#[derive(Clone, Debug, Serialize)]
pub struct Panel {
    /// Title.
    pub title: String,
    /// X axis label (with unit).
    pub xlabel: String,
    /// Y axis label (with unit).
    pub ylabel: String,
    /// `line`, `step`, `points` or `bar`.
    pub kind: String,
    /// Log-scale x axis.
    pub logx: bool,
    /// Log-scale y axis.
    pub logy: bool,
    /// Base of a logarithmic x axis (2 or 10).
    pub log_base: u32,
    /// For `bar` panels: the category names; series' x values index them, and several
    /// series are drawn as grouped bars.
    pub categories: Vec<String>,
    /// Series.
    pub series: Vec<Series>,
    /// Error bars: for each series, the half-width at each point (a 95 % confidence
    /// interval over seeds); empty for none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub err: Vec<Vec<f64>>,
    /// Start a linear y axis at this value instead of letting it autoscale to the data's
    /// band (0 for counts, queues and rates, so that small differences look small).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ymin: Option<f64>,
    /// Intervals as absolute bounds: for each series, the lower and the upper end at each
    /// point (NaN where the sample cannot bound that side); empty for none. Drawn as
    /// asymmetric error bars, e.g. a percentile's order-statistic interval.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lo: Vec<Vec<f64>>,
    /// Upper ends of the intervals, as `lo`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hi: Vec<Vec<f64>>,
}

impl Panel {
    /// A line panel.
    pub fn line(title: impl Into<String>, xlabel: &str, ylabel: &str, series: Vec<Series>) -> Self {
        Self {
            title: title.into(),
            xlabel: xlabel.into(),
            ylabel: ylabel.into(),
            kind: "line".into(),
            logx: false,
            logy: false,
            log_base: 2,
            categories: Vec::new(),
            series,
            err: Vec::new(),
            ymin: None,
            lo: Vec::new(),
            hi: Vec::new(),
        }
    }
    /// A grouped-bar panel: one group per category, one bar per series in each.
    pub fn bars(
        title: impl Into<String>,
        categories: Vec<String>,
        ylabel: &str,
        series: Vec<Series>,
    ) -> Self {
        let mut p = Self::line(title, "", ylabel, series);
        p.kind = "bar".into();
        p.categories = categories;
        p
    }
    /// The same panel drawn with markers.
    pub fn points(mut self) -> Self {
        self.kind = "points".into();
        self
    }
    /// The same panel with a logarithmic x axis.
    pub fn logx(mut self) -> Self {
        self.logx = true;
        self
    }
    /// The same panel with a base-10 logarithmic x axis.
    pub fn logx10(mut self) -> Self {
        self.logx = true;
        self.log_base = 10;
        self
    }
    /// The same panel with its y axis starting at zero.
    pub fn from_zero(mut self) -> Self {
        self.ymin = Some(0.0);
        self
    }
    /// The same panel with an interval `[lo, hi]` around each point of each series.
    pub fn with_interval(mut self, lo: Vec<Vec<f64>>, hi: Vec<Vec<f64>>) -> Self {
        self.lo = lo;
        self.hi = hi;
        self
    }
    /// The same panel with a logarithmic y axis.
    pub fn logy(mut self) -> Self {
        self.logy = true;
        self
    }
}

/// Writes plot specification `p` as `<dir>/<file>.json`.
pub fn write_spec(dir: &Path, p: &Plot) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut s = serde_json::to_vec_pretty(p).map_err(std::io::Error::other)?;
    s.push(b'\n');
    atomic_write(&dir.join(format!("{}.json", p.file)), &s)
}

/// Writes the plotting script into `dir` and runs it on every specification there, with
/// `$DCSIM_PYTHON` (default `python3`). A missing interpreter or matplotlib is not an
/// error: a note on stderr says how to draw the pictures later, and the result is false
/// (true: drawn).
///
/// # Errors
/// If the script cannot be written.
pub fn render(dir: &Path) -> Result<bool, String> {
    let script = dir.join("plot.py");
    atomic_write(&script, PLOT_PY.as_bytes()).map_err(|e| e.to_string())?;
    let python = std::env::var("DCSIM_PYTHON").unwrap_or_else(|_| "python3".into());
    match Command::new(&python).arg(&script).arg(dir).output() {
        Ok(o) if o.status.success() => Ok(true),
        Ok(o) => {
            eprintln!(
                "note: plots were not drawn ({}); the data is complete. Install matplotlib in a virtual environment (python3 -m venv .venv && .venv/bin/pip install matplotlib), then set DCSIM_PYTHON=.venv/bin/python or run: .venv/bin/python {} {}",
                String::from_utf8_lossy(&o.stderr)
                    .lines()
                    .last()
                    .unwrap_or("error"),
                script.display(),
                dir.display()
            );
            Ok(false)
        }
        Err(e) => {
            eprintln!("note: plots were not drawn ({python}: {e}); the data is complete.");
            Ok(false)
        }
    }
}
