//! index.csv and index.json: one row per run joining its parameters and headline results.

use serde_json::{Map, Value};

use crate::SweepError;

/// The headline columns of the index: (column name, JSON pointer into summary.json). A
/// column added here appears in every index (and should be added to docs/sweep.md).
pub const HEADLINE: &[(&str, &str)] = &[
    ("flows_total", "/flows_total"),
    ("flows_completed", "/flows_completed"),
    ("fct_mean_us", "/fct_us/mean"),
    ("fct_p50_us", "/fct_us/p50"),
    ("fct_p99_us", "/fct_us/p99"),
    ("slowdown_mean", "/slowdown/mean"),
    ("slowdown_p99", "/slowdown/p99"),
    ("fct_mean_us_0-10KB", "/fct_buckets/0-10KB/fct_us_mean"),
    ("fct_p99_us_0-10KB", "/fct_buckets/0-10KB/fct_us_p99"),
    (
        "fct_mean_us_10KB-100KB",
        "/fct_buckets/10KB-100KB/fct_us_mean",
    ),
    (
        "fct_p99_us_10KB-100KB",
        "/fct_buckets/10KB-100KB/fct_us_p99",
    ),
    (
        "fct_mean_us_100KB-1MB",
        "/fct_buckets/100KB-1MB/fct_us_mean",
    ),
    ("fct_p99_us_100KB-1MB", "/fct_buckets/100KB-1MB/fct_us_p99"),
    ("fct_mean_us_1MB+", "/fct_buckets/1MB+/fct_us_mean"),
    ("fct_p99_us_1MB+", "/fct_buckets/1MB+/fct_us_p99"),
    ("data_drops", "/data_drops"),
    ("packets_dropped", "/packets_dropped"),
    ("max_queue_bytes", "/max_queue_bytes"),
    ("jain_fairness", "/jain_fairness"),
    ("events", "/events"),
    ("wall_seconds", "/wall_seconds"),
    ("digest", "/digest"),
];

/// Columns of the table printed at the end of a sweep (besides parameters, seed and
/// status), when present in the index and not empty in every row.
const SHOWN: &[&str] = &[
    "flows_completed",
    "fct_mean_us",
    "fct_p99_us",
    "slowdown_mean",
    "slowdown_p99",
    "data_drops",
    "max_queue_bytes",
    "jain_fairness",
];

/// An index column taken from summary.json.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Column {
    /// Column name.
    pub name: String,
    /// JSON pointer into summary.json (RFC 6901).
    pub pointer: String,
}

impl Column {
    /// Parses `--column NAME=/json/pointer`.
    pub fn parse(arg: &str) -> Result<Self, SweepError> {
        let bad = |why: &str| SweepError::new(format!("--column {arg}: {why}"));
        let Some((name, pointer)) = arg.split_once('=') else {
            return Err(bad("expected NAME=/json/pointer"));
        };
        let (name, pointer) = (name.trim(), pointer.trim());
        if name.is_empty() {
            return Err(bad("the column name is empty"));
        }
        if !pointer.is_empty() && !pointer.starts_with('/') {
            return Err(bad(
                "a JSON pointer starts with `/` (for example /fct_us/p999)",
            ));
        }
        Ok(Self {
            name: name.into(),
            pointer: pointer.into(),
        })
    }
}

/// The headline columns followed by the user's extra ones.
pub fn columns(extra: &[String]) -> Result<Vec<Column>, SweepError> {
    let mut cols: Vec<Column> = HEADLINE
        .iter()
        .map(|(n, p)| Column {
            name: (*n).into(),
            pointer: (*p).into(),
        })
        .collect();
    for arg in extra {
        cols.push(Column::parse(arg)?);
    }
    Ok(cols)
}

/// One index row's cell for a summary value: numbers as summary.json writes them, strings
/// as they are, null or missing as empty, anything else as compact JSON.
pub fn cell(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// The index of a sweep: header and rows as strings (the CSV) and as JSON values.
#[derive(Clone, Debug)]
pub struct Index {
    /// Column names.
    pub header: Vec<String>,
    /// One object per run, keyed by column name.
    pub rows: Vec<Map<String, Value>>,
    /// How many parameter columns (varied paths) lead each row, before `seed`.
    pub params: usize,
}

impl Index {
    /// The CSV text.
    pub fn to_csv(&self) -> Result<Vec<u8>, csv::Error> {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&self.header)?;
        for r in &self.rows {
            w.write_record(self.header.iter().map(|h| cell(r.get(h))))?;
        }
        w.into_inner().map_err(|e| e.into_error().into())
    }

    /// Rows whose status is not `ok`.
    pub fn failed(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.get("status").and_then(Value::as_str) != Some("ok"))
            .count()
    }

    /// A small fixed-width table for the terminal: parameters, seed, status, a few
    /// headline columns and the extra columns; at most `max_rows` rows.
    pub fn table(&self, max_rows: usize, extra: &[Column]) -> String {
        let mut cols: Vec<&str> = self.header[..=self.params]
            .iter()
            .map(String::as_str)
            .collect();
        cols.push("status");
        let filled = |c: &str| {
            self.rows
                .iter()
                .any(|r| r.get(c).is_some_and(|v| !v.is_null()))
        };
        cols.extend(SHOWN.iter().filter(|c| filled(c)));
        cols.extend(extra.iter().map(|c| c.name.as_str()));
        let text = |r: &Map<String, Value>, c: &str| -> String {
            // Distributions over no completed flows are all zero; show them as absent.
            let none_done = r.get("flows_completed").and_then(Value::as_u64) == Some(0);
            if none_done && (c.starts_with("fct_") || c.starts_with("slowdown_")) {
                return "-".into();
            }
            match r.get(c) {
                Some(Value::Number(n)) if n.is_f64() => {
                    let x = n.as_f64().unwrap_or(0.0);
                    if x.abs() >= 1000.0 {
                        format!("{x:.0}")
                    } else {
                        format!("{x:.3}")
                    }
                }
                Some(Value::String(s)) if c == "status" && s.chars().count() > 40 => {
                    format!("{}…", s.chars().take(39).collect::<String>())
                }
                v => cell(v),
            }
        };
        let shown = &self.rows[..self.rows.len().min(max_rows)];
        let cells: Vec<Vec<String>> = shown
            .iter()
            .map(|r| cols.iter().map(|c| text(r, c)).collect())
            .collect();
        let left = |i: usize| i <= self.params || cols[i] == "status";
        let mut out = dcsim::metrics::text_table(&cols, &cells, |i| !left(i));
        if self.rows.len() > shown.len() {
            out += &format!("… {} more rows\n", self.rows.len() - shown.len());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn cells_follow_summary_json() {
        let s = json!({"a": 3, "b": 0.25, "c": null, "d": "x", "e": {"p50": 1.5}, "f": [1, 2]});
        assert_eq!(cell(s.pointer("/a")), "3");
        assert_eq!(cell(s.pointer("/b")), "0.25");
        assert_eq!(cell(s.pointer("/c")), "");
        assert_eq!(cell(s.pointer("/d")), "x");
        assert_eq!(cell(s.pointer("/e/p50")), "1.5");
        assert_eq!(cell(s.pointer("/f")), "[1,2]");
        assert_eq!(cell(s.pointer("/no/such")), "");
    }

    #[test]
    fn headline_pointers_exist_in_a_summary() {
        // A real run's summary: a renamed key in results.rs would silently empty a column.
        let text = "[topology]\nkind = \"dumbbell\"\npairs = 1\n[transport]\nkind = \"tcp\"\n\
                    [[flows]]\nsrc = 0\ndst = 1\nsize = \"5KB\"\n";
        let spec = dcsim::ScenarioSpec::parse(text, "t", &[]).unwrap();
        let mut world = dcsim::World::new(spec.build("t").unwrap()).unwrap();
        world.run(&mut |_| {});
        let summary = dcsim::Results::collect(&mut world).summary;
        for (name, ptr) in HEADLINE {
            assert!(summary.pointer(ptr).is_some(), "{name}: {ptr}");
        }
    }

    #[test]
    fn extra_columns_parse_and_reject_bad_pointers() {
        let c = columns(&["p999=/fct_us/p999".into()]).unwrap();
        assert_eq!(c.len(), HEADLINE.len() + 1);
        assert_eq!(c.last().unwrap().pointer, "/fct_us/p999");
        for bad in ["p999", "=/x", "p999=fct_us"] {
            assert!(Column::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn csv_and_table_have_one_row_per_run() {
        let mut rows = Vec::new();
        for (load, fct) in [("0.5", 12.25), ("0.7", 1234.5)] {
            let mut m = Map::new();
            m.insert("load".into(), json!(load));
            m.insert("seed".into(), json!(1));
            m.insert("status".into(), json!("ok"));
            m.insert("fct_mean_us".into(), json!(fct));
            m.insert("run".into(), json!(format!("load={load}_seed=1")));
            rows.push(m);
        }
        let ix = Index {
            header: [
                "load",
                "seed",
                "status",
                "fct_mean_us",
                "jain_fairness",
                "run",
            ]
            .map(String::from)
            .to_vec(),
            rows,
            params: 1,
        };
        let csv = String::from_utf8(ix.to_csv().unwrap()).unwrap();
        assert_eq!(
            csv,
            "load,seed,status,fct_mean_us,jain_fairness,run\n\
             0.5,1,ok,12.25,,load=0.5_seed=1\n0.7,1,ok,1234.5,,load=0.7_seed=1\n"
        );
        let t = ix.table(1, &[]);
        assert!(t.starts_with("load  seed  status  fct_mean_us\n"), "{t}");
        assert!(!t.contains("jain"), "an empty column is not shown: {t}");
        assert!(t.contains("12.250") && t.contains("… 1 more rows"), "{t}");
        assert_eq!(ix.failed(), 0);
    }
}
