//! Tables of rows: plain text tables for the terminal and CSV serialization of output
//! rows.

use std::io;

use serde::Serialize;

/// A plain table for the terminal (comfy-table, no borders): `header`, then `rows`, each
/// column as wide as its widest cell, two spaces apart; columns for which `right(i)` holds
/// are right-aligned (numbers), the others left-aligned.
pub fn text_table(header: &[&str], rows: &[Vec<String>], right: impl Fn(usize) -> bool) -> String {
    use comfy_table::{CellAlignment, ContentArrangement, Table, presets};
    let mut t = Table::new();
    t.load_preset(presets::NOTHING)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.iter().copied());
    for r in rows {
        t.add_row(r.iter().map(String::as_str));
    }
    for (i, c) in t.column_iter_mut().enumerate() {
        c.set_padding((0, 2));
        if right(i) {
            c.set_cell_alignment(CellAlignment::Right);
        }
    }
    let mut out: String = t.lines().map(|l| l.trim_end().to_string() + "\n").collect();
    if out.is_empty() {
        out.push('\n');
    }
    out
}

/// Serializes `rows` as CSV with a header line.
pub fn to_csv<T: Serialize>(rows: &[T], header_if_empty: &[&str]) -> io::Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    if rows.is_empty() {
        w.write_record(header_if_empty)?;
    }
    for r in rows {
        w.serialize(r).map_err(io::Error::other)?;
    }
    w.into_inner().map_err(|e| io::Error::other(e.to_string()))
}
