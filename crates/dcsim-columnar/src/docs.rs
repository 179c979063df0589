//! The unit and meaning of every column, read from `docs/output.md` (compiled in), so the
//! documentation stays the one place they are written.

use std::collections::HashMap;

/// What `docs/output.md` says about one column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnDoc {
    /// Unit (`ns`, `B`, `wire B`, `Gb/s`, `packets`, `fraction`), empty if none.
    pub unit: String,
    /// What the column holds, as the documentation words it (Markdown).
    pub meaning: String,
}

const OUTPUT_MD: &str = include_str!("../../../docs/output.md");

/// Every documented column, keyed by (table, column): the rows of the column tables under
/// each `## NAME.csv` heading of `docs/output.md`. A row naming several columns
/// (`` `src`, `dst` ``) documents each; in the flows table of transport counters the
/// first cell is the transport and the columns are in the second.
pub fn column_docs() -> HashMap<(String, String), ColumnDoc> {
    let mut out = HashMap::new();
    let mut table: Option<&str> = None;
    for line in OUTPUT_MD.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            table = h.trim().strip_suffix(".csv");
            continue;
        }
        let Some(t) = table else { continue };
        let Some(row) = line
            .trim()
            .strip_prefix('|')
            .and_then(|r| r.strip_suffix('|'))
        else {
            continue;
        };
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (names, unit, meaning) = match cells[..] {
            [n, u, m] => (n, u, m),
            [_, n, u, m] => (n, u, m),
            _ => continue,
        };
        if !names.starts_with('`') {
            continue; // the header row and the rule under it
        }
        for name in names.split(',').map(|n| n.trim().trim_matches('`')) {
            out.insert(
                (t.to_string(), name.to_string()),
                ColumnDoc {
                    unit: unit.to_string(),
                    meaning: meaning.to_string(),
                },
            );
        }
    }
    out
}
