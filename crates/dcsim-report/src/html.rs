//! `dcsim report DIR`: one self-contained HTML page (figures embedded, no other file
//! needed) for a run, a sweep or a reproduction.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde_json::Value;

/// What a folder holds.
enum Kind {
    Run,
    Sweep,
    Repro,
}

/// Writes `DIR/report.html` for the run, sweep or reproduction in `dir` and returns its
/// path. Figures are drawn first where the folder has none (a run's with [`crate::plot_run`],
/// a sweep's against its first varied value); without matplotlib the page has the tables
/// and parameters and says how to get the figures.
///
/// # Errors
/// A folder that is none of the three, or a file that cannot be read or written.
pub fn report(dir: &Path) -> Result<PathBuf, String> {
    let read_json = |name: &str| -> Result<Value, String> {
        let p = dir.join(name);
        let b = std::fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        serde_json::from_slice(&b).map_err(|e| format!("{}: {e}", p.display()))
    };
    let kind = if dir.join("result.json").exists() {
        Kind::Repro
    } else if dir.join("index.json").exists() {
        Kind::Sweep
    } else if dir.join("summary.json").exists() {
        Kind::Run
    } else {
        return Err(format!(
            "{}: no summary.json, index.json or result.json: not a run, sweep or reproduction folder",
            dir.display()
        ));
    };
    let mut body = String::new();
    let mut notes: Vec<String> = Vec::new();
    let title;
    match kind {
        Kind::Run if is_kernel_run(dir) => {
            return crate::compare::report_one(dir);
        }
        Kind::Run => {
            let (_, drawn) = crate::plot_run(dir, &[])?;
            if !drawn {
                notes.push(NO_MATPLOTLIB.to_string());
            }
            let s = read_json("summary.json")?;
            title = format!("run {}", s["scenario"].as_str().unwrap_or("?"));
            body += &headline(&s);
            body += &figures(&dir.join("plots"), &["timeseries", "fct", "links"]);
            body += &csv_table(
                dir,
                "buckets.csv",
                "FCT and slowdown per flow size",
                20,
                &[],
            );
            body += &csv_table(dir, "tiers.csv", "Links per tier", 50, &[]);
            body += &section("Resolved scenario", &pre(&pretty(&s["resolved_scenario"])));
        }
        Kind::Sweep => {
            let ix = read_json("index.json")?;
            title = format!("sweep {}", ix["scenario"].as_str().unwrap_or("?"));
            let header: Vec<String> = ix["columns"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c.as_str().map(str::to_string))
                .collect();
            let vary = ix["vary"].as_object().cloned().unwrap_or_default();
            // The parameter columns: those before `seed` (named variants, then the paths).
            let params = header
                .iter()
                .position(|c| c == "seed")
                .unwrap_or(vary.len());
            let has_png = has_pngs(&dir.join("plots"));
            if !has_png && let Some(first) = first_numeric(&ix, &vary) {
                let index = dcsim_sweep::Index {
                    params,
                    rows: ix["runs"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|r| r.as_object().cloned())
                        .map(|mut r| {
                            // index.json has numbers as numbers; the plot reads values as text.
                            for k in vary.keys() {
                                if let Some(v) = r.get(k).filter(|v| !v.is_string()).cloned() {
                                    r.insert(k.clone(), Value::from(v.to_string()));
                                }
                            }
                            r
                        })
                        .collect(),
                    header: header.clone(),
                };
                match dcsim_sweep::plot_against(&index, &first, dir) {
                    Ok((_, false)) => notes.push(NO_MATPLOTLIB.to_string()),
                    Ok(_) => {}
                    Err(e) => notes.push(format!("no figure: {e}")),
                }
            }
            let mut p = String::new();
            let _ = write!(
                p,
                "<p>{} runs of <code>{}</code>; varied: {}; seeds per point: {}.</p>",
                ix["runs"].as_array().map_or(0, Vec::len),
                esc(ix["file"].as_str().unwrap_or("")),
                vary.iter()
                    .map(|(k, v)| {
                        let vals: Vec<String> = v
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
                            .collect();
                        format!("<code>{}</code> = {}", esc(k), esc(&vals.join(", ")))
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
                esc(&ix["seeds"].to_string()),
            );
            if let Some(v) = ix["variants"].as_object().filter(|v| !v.is_empty()) {
                let _ = write!(p, "<p>Variants:</p><ul>");
                for (name, sets) in v {
                    let sets: Vec<&str> = sets
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .collect();
                    let _ = write!(
                        p,
                        "<li><b>{}</b>: <code>{}</code></li>",
                        esc(name),
                        esc(&sets.join(", "))
                    );
                }
                p += "</ul>";
            }
            body += &section("Sweep", &p);
            body += &figures(&dir.join("plots"), &[]);
            // The runs side by side, seeds of a point pooled (what `dcsim compare DIR` does).
            let cmp = dir.join("compare");
            match crate::compare::compare(&crate::compare::CompareOptions {
                dirs: vec![dir.to_path_buf()],
                out: cmp.clone(),
                ..Default::default()
            }) {
                Ok(table) => {
                    let table = table
                        .rsplit_once("\nwrote ")
                        .map_or(table.as_str(), |t| t.0);
                    body += &section(
                        "Points side by side (dcsim compare; seeds pooled)",
                        &pre(table),
                    );
                    body += &figures(
                        &cmp.join("plots"),
                        &["slowdown_buckets", "fct_buckets", "fct_cdf", "tiers"],
                    );
                }
                Err(e) => notes.push(format!("no comparison of the points: {e}")),
            }
            body += &csv_table(
                dir,
                "index.csv",
                "Index: parameters and headline results per run",
                500,
                &["wall_seconds", "events"],
            );
        }
        Kind::Repro => {
            let r = read_json("result.json")?;
            title = format!(
                "reproduction {}",
                dir.file_name()
                    .map_or(String::new(), |n| n.to_string_lossy().into_owned())
            );
            let plots = dir.join("plots");
            if !has_pngs(&plots) && plots.is_dir() && !dcsim::metrics::plot::render(&plots)? {
                notes.push(NO_MATPLOTLIB.to_string());
            }
            body += &verdict_tables(&r);
            body += &figures(&plots, &[]);
            let mut shown = r.clone();
            if let Some(m) = shown.as_object_mut() {
                m.remove("parameters");
                m.remove("checks");
                m.remove("claims");
            }
            body += &section("Results (result.json)", &pre(&pretty(&shown)));
            let mut csvs: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(|e| format!("{}: {e}", dir.display()))?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "csv"))
                .collect();
            csvs.sort();
            for c in csvs {
                let name = c
                    .file_name()
                    .map_or(String::new(), |n| n.to_string_lossy().into_owned());
                body += &csv_table(dir, &name, &name, 40, &[]);
            }
            if let Some(p) = r.get("parameters") {
                body += &section("Parameters that ran", &pre(&pretty(p)));
            }
        }
    }
    write_page(dir, &title, &notes, &body)
}

/// result.json's claims (the paper's statement, the metric, measured value, bound and
/// verdict) and checks as two tables.
fn verdict_tables(r: &Value) -> String {
    let cell = |v: &Value| match v {
        Value::String(s) => esc(s),
        Value::Number(n) => esc(&short_number(&n.to_string())),
        Value::Bool(b) => (if *b { "ok" } else { "FAILED" }).to_string(),
        Value::Null => "(missing)".to_string(),
        v => esc(&v.to_string()),
    };
    let table = |rows: &[Value], cols: &[(&str, &str)]| {
        let mut t = String::from("<table><tr>");
        for (_, title) in cols {
            let _ = write!(t, "<th>{}</th>", esc(title));
        }
        t += "</tr>";
        for row in rows {
            t += "<tr>";
            for (key, _) in cols {
                let _ = write!(t, "<td>{}</td>", cell(&row[*key]));
            }
            t += "</tr>";
        }
        t + "</table>"
    };
    let mut out = String::new();
    if let Some(claims) = r["claims"].as_array().filter(|c| !c.is_empty()) {
        out += &section(
            "Claims",
            &table(
                claims,
                &[
                    ("id", "claim"),
                    ("metric", "metric"),
                    ("measured", "measured"),
                    ("bound", "bound"),
                    ("verdict", "verdict"),
                    ("paper", "the paper says"),
                ],
            ),
        );
    }
    if let Some(checks) = r["checks"].as_array().filter(|c| !c.is_empty()) {
        out += &section(
            "Checks",
            &table(
                checks,
                &[
                    ("id", "check"),
                    ("what", "what"),
                    ("measured", "measured"),
                    ("bound", "bound"),
                    ("passed", "result"),
                ],
            ),
        );
    }
    out
}

/// Writes `dir/report.html` with the given title, notes and body.
fn write_page(dir: &Path, title: &str, notes: &[String], body: &str) -> Result<PathBuf, String> {
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>dcsim: {t}</title>\n<style>{STYLE}</style></head>\n<body>\n<h1>dcsim: {t}</h1>\n<p class=\"where\">{w}</p>\n{n}{body}\n<script>{SCRIPT}</script>\n</body></html>\n",
        t = esc(title),
        w = esc(&dir.display().to_string()),
        n = notes
            .iter()
            .map(|n| format!("<p class=\"note\">{}</p>\n", esc(n)))
            .collect::<String>(),
    );
    let out = dir.join("report.html");
    dcsim::metrics::atomic_write(&out, page.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    Ok(out)
}

/// The page of `dcsim compare` (and of `dcsim report` on a kernel twin's folder): the runs
/// and where they came from, the headline table, the figures and the per-bucket table.
pub(crate) fn compare_page(
    out: &Path,
    runs: &[(String, String, bool, Value)],
    table: &str,
    drawn: bool,
    has_plots: bool,
) -> Result<PathBuf, String> {
    let mut notes = Vec::new();
    if has_plots && !drawn {
        notes.push(NO_MATPLOTLIB.to_string());
    }
    let mut list = String::from("<table><tr><th>run</th><th>source</th><th>folder</th></tr>");
    for (label, dir, kernel, _) in runs {
        let _ = write!(
            list,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(label),
            if *kernel {
                "Linux kernel (validation/kernel_twin.py)"
            } else {
                "dcsim"
            },
            esc(dir)
        );
    }
    list += "</table>";
    let mut body = section("Runs", &list);
    body += &section("Headline", &pre(table));
    body += &figures(
        &out.join("plots"),
        &[
            "fct_buckets",
            "slowdown_buckets",
            "fct_cdf",
            "queue",
            "tiers",
        ],
    );
    body += &section(
        "How to read this",
        "<p>Percentiles are nearest-rank, as in every dcsim summary; their 95 % intervals are \
         distribution-free, from order statistics, and a side the sample cannot bound (a \
         99th percentile of fewer than about 300 flows has no upper bound) is drawn as a caret \
         and left empty in the tables. Means carry the normal 95 % interval. A dash is a \
         figure the run did not measure (the kernel measures no unloaded FCT, hence no \
         slowdown, and only the queues of the ports it sampled).</p>",
    );
    body += &csv_table(
        out,
        "buckets.csv",
        "FCT and slowdown per flow size (buckets.csv)",
        200,
        &[],
    );
    let mut sums = String::new();
    for (label, _, _, summary) in runs {
        let _ = write!(
            sums,
            "<details><summary>{}</summary>{}</details>",
            esc(label),
            pre(&pretty(summary))
        );
    }
    body += &section("Summaries (summary.json)", &sums);
    let title = match runs {
        [one] => format!("run {}", one.0),
        _ => format!("comparison of {} runs", runs.len()),
    };
    write_page(out, &title, &notes, &body)
}

/// A folder written by the real-kernel twin (`"source": "linux-kernel"` in summary.json).
fn is_kernel_run(dir: &Path) -> bool {
    std::fs::read(dir.join("summary.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .is_some_and(|s| s["source"].as_str() == Some("linux-kernel"))
}

const NO_MATPLOTLIB: &str = "Figures were not drawn: matplotlib was not found. Install it (python3 -m venv .venv && . .venv/bin/activate && pip install matplotlib) and run dcsim report again.";

/// Marks the page with how many figures loaded (`data-figures="3/3"` on the body and in the
/// title), so a headless browser can check the page.
const SCRIPT: &str = "window.addEventListener('load',function(){var i=Array.prototype.slice.call(document.images);var ok=i.filter(function(x){return x.complete&&x.naturalWidth>0;}).length;document.body.setAttribute('data-figures',ok+'/'+i.length);document.title+=' ['+ok+'/'+i.length+' figures]';});";

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}h1{font-size:1.5em}h2{font-size:1.15em;margin-top:2em;border-bottom:1px solid #ddd}table{border-collapse:collapse;font-size:.85em;display:block;overflow-x:auto;max-width:100%}td,th{border:1px solid #ddd;padding:.2em .5em;text-align:right}th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}pre{background:#f8f8f8;padding:.8em;overflow:auto;font-size:.8em;max-height:30em}img{max-width:100%;display:block;margin:1em 0}.note{background:#fff4d6;padding:.5em}.where{color:#777;font-size:.85em}";

fn section(title: &str, html: &str) -> String {
    format!("<h2>{}</h2>\n{html}\n", esc(title))
}

fn pre(text: &str) -> String {
    format!("<pre>{}</pre>", esc(text))
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn has_pngs(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|d| {
        d.flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "png"))
    })
}

/// The first varied path whose values are all numbers (the x axis of the sweep's figure).
fn first_numeric(ix: &Value, vary: &serde_json::Map<String, Value>) -> Option<String> {
    vary.iter()
        .find(|(_, vals)| {
            vals.as_array().is_some_and(|a| {
                a.iter().all(|v| {
                    v.as_str().is_some_and(|s| s.trim().parse::<f64>().is_ok()) || v.is_number()
                })
            })
        })
        .map(|(k, _)| k.clone())
        .filter(|_| ix["runs"].as_array().is_some_and(|r| !r.is_empty()))
}

/// The PNG figures in `dir`, those named in `order` first, each embedded as a data URL.
fn figures(dir: &Path, order: &[&str]) -> String {
    let mut pngs: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "png"))
                .collect()
        })
        .unwrap_or_default();
    let rank = |p: &PathBuf| {
        let stem = p
            .file_stem()
            .map_or(String::new(), |s| s.to_string_lossy().into_owned());
        (
            order.iter().position(|o| *o == stem).unwrap_or(order.len()),
            stem,
        )
    };
    pngs.sort_by_key(rank);
    if pngs.is_empty() {
        return String::new();
    }
    let mut html = String::new();
    for p in pngs {
        let Ok(bytes) = std::fs::read(&p) else {
            continue;
        };
        let name = p
            .file_stem()
            .map_or(String::new(), |s| s.to_string_lossy().into_owned());
        let _ = writeln!(
            html,
            "<img alt=\"{}\" src=\"data:image/png;base64,{}\">",
            esc(&name),
            base64::engine::general_purpose::STANDARD.encode(&bytes)
        );
    }
    section("Figures", &html)
}

/// The headline figures of a run.
fn headline(s: &Value) -> String {
    let f = |v: &Value, digits: usize| match v.as_f64() {
        Some(x) => format!("{x:.digits$}"),
        None if v.is_null() => "–".to_string(),
        None => v.to_string(),
    };
    let rows = [
        ("scenario", s["scenario"].as_str().unwrap_or("").to_string()),
        ("seed", s["seed"].to_string()),
        (
            "simulated time",
            format!("{:.3} ms", s["sim_time_ns"].as_f64().unwrap_or(0.0) / 1e6),
        ),
        (
            "flows (completed)",
            format!("{} ({})", s["flows_total"], s["flows_completed"]),
        ),
        ("events", s["events"].to_string()),
        (
            "mean / p99 FCT of measured flows",
            format!(
                "{} / {} µs",
                f(&s["fct_us"]["mean"], 1),
                f(&s["fct_us"]["p99"], 1)
            ),
        ),
        (
            "mean / p99 slowdown",
            format!(
                "{} / {}",
                f(&s["slowdown"]["mean"], 2),
                f(&s["slowdown"]["p99"], 2)
            ),
        ),
        (
            "drops (data)",
            format!("{} ({})", s["packets_dropped"], s["data_drops"]),
        ),
        ("ECN marks", s["ecn_marks"].to_string()),
        (
            "largest switch queue",
            format!("{} B", s["max_queue_bytes"]),
        ),
        (
            "Jain fairness of long-lived flows",
            f(&s["jain_fairness"], 4),
        ),
        ("digest", s["digest"].as_str().unwrap_or("").to_string()),
    ];
    let mut t = String::from("<table>");
    for (k, v) in rows {
        let _ = write!(t, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
    }
    t += "</table>";
    section("Summary", &t)
}

/// A CSV file of the folder as a table (at most `max_rows` rows; `skip` columns left out).
fn csv_table(dir: &Path, name: &str, title: &str, max_rows: usize, skip: &[&str]) -> String {
    let Ok(bytes) = std::fs::read(dir.join(name)) else {
        return String::new();
    };
    let mut r = csv::Reader::from_reader(&bytes[..]);
    let Ok(header) = r.headers().cloned() else {
        return String::new();
    };
    let keep: Vec<usize> = (0..header.len())
        .filter(|&i| !skip.contains(&&header[i]))
        .collect();
    let mut t = String::from("<table><tr>");
    for &i in &keep {
        let _ = write!(t, "<th>{}</th>", esc(&header[i]));
    }
    t += "</tr>";
    let mut n = 0;
    let mut more = 0;
    for rec in r.records().flatten() {
        if n >= max_rows {
            more += 1;
            continue;
        }
        t += "<tr>";
        for &i in &keep {
            let _ = write!(
                t,
                "<td>{}</td>",
                esc(&short_number(rec.get(i).unwrap_or("")))
            );
        }
        t += "</tr>";
        n += 1;
    }
    t += "</table>";
    if more > 0 {
        let _ = write!(t, "<p>{more} more rows in {}.</p>", esc(name));
    }
    section(title, &t)
}

/// A decimal number with fewer digits for reading (`2938.9342747734377` → `2938.9`); any
/// other cell as it is.
fn short_number(cell: &str) -> String {
    match cell.parse::<f64>() {
        Ok(v) if cell.contains('.') && v.is_finite() => {
            let digits = if v.abs() >= 100.0 {
                1
            } else if v.abs() >= 1.0 {
                3
            } else {
                4
            };
            format!("{v:.digits$}")
        }
        _ => cell.to_string(),
    }
}
