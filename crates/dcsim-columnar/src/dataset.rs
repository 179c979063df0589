//! A sweep's results as one Parquet dataset: `dataset/<table>/<file>.parquet`, one file per
//! run and table, every row tagged with its run, so that one call reads a whole table of a
//! whole sweep (`pandas.read_parquet("OUT/dataset/flows")`, `polars.read_parquet(
//! "OUT/dataset/flows/*.parquet")`, DuckDB `read_parquet('OUT/dataset/flows/*.parquet')`)
//! and joins it with `index.parquet` on `run`.
//!
//! A file is named after its run and the run's digest (`r<hash of the run name>-<digest>`),
//! so a file always holds the results of the run folder it names: [`sync`] writes the files
//! a finished run lacks (from its folder) and removes every file that belongs to no run of
//! the sweep or to an older result of one, leaving the dataset equal to the index. Files are
//! written atomically under a name starting with a dot, which Arrow readers skip.

use std::io;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use dcsim::Results;
use dcsim::metrics::{atomic_write, digest};
use dcsim::transport::TransportSpec;

use crate::{ColumnarError, Table, tables_with_counters, to_parquet};

/// The counter columns of a dataset's flows table: every registered transport's, in
/// registration order.
pub fn all_counters() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in TransportSpec::defaults() {
        for c in t.flow_counters() {
            if !out.iter().any(|o| o == c) {
                out.push((*c).to_string());
            }
        }
    }
    out
}

/// The file of `run` whose results have digest `digest`.
pub fn file_name(run: &str, digest_hex: &str) -> String {
    format!("r{:016x}-{digest_hex}.parquet", digest(&[run.as_bytes()]))
}

/// Writes the dataset files of one run (`run` is its folder name, the join key).
///
/// # Errors
/// Building or writing a file.
pub fn write_run(dataset: &Path, run: &str, results: &Results) -> io::Result<()> {
    let name = file_name(run, results.digest());
    for t in tables_with_counters(results, &all_counters()).map_err(io::Error::other)? {
        let tagged = with_run(&t, run).map_err(io::Error::other)?;
        let dir = dataset.join(t.name);
        std::fs::create_dir_all(&dir)?;
        atomic_write(
            &dir.join(&name),
            &to_parquet(&tagged).map_err(io::Error::other)?,
        )?;
    }
    Ok(())
}

/// Brings the dataset in line with the runs given as (run name, run folder): a complete run
/// whose files are missing gets them, from its folder's CSV files; files of no listed run,
/// or of an earlier result of one, are removed. Incomplete runs have no files.
///
/// # Errors
/// Reading a run folder or writing a file.
pub fn sync(dataset: &Path, runs: &[(&str, &Path)]) -> io::Result<()> {
    let mut keep = std::collections::HashSet::new();
    for &(run, dir) in runs {
        if !dcsim::metrics::verify_dir(dir) {
            continue;
        }
        let summary: serde_json::Value = match std::fs::read(dir.join("summary.json")) {
            Ok(b) => serde_json::from_slice(&b).map_err(io::Error::other)?,
            Err(e) => return Err(e),
        };
        let d = summary["digest"].as_str().unwrap_or_default();
        let name = file_name(run, d);
        if !dataset.join("flows").join(&name).exists()
            || !dataset.join("ports").join(&name).exists()
        {
            write_run(dataset, run, &Results::load(dir)?)?;
        }
        keep.insert(name);
    }
    for table in crate::TABLES {
        let Ok(entries) = std::fs::read_dir(dataset.join(table)) else {
            continue;
        };
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.ends_with(".parquet") && !n.starts_with('.') && !keep.contains(&n) {
                std::fs::remove_file(e.path())?;
            }
        }
    }
    Ok(())
}

/// The table with a first column `run`, the run's folder name.
fn with_run(t: &Table, run: &str) -> Result<Table, ColumnarError> {
    let schema = t.batch.schema();
    let mut fields = vec![Arc::new(
        Field::new("run", DataType::Utf8, false).with_metadata(std::collections::HashMap::from([
            (
                "description".to_string(),
                "the run's folder name in the sweep (join key of index.parquet)".to_string(),
            ),
        ])),
    )];
    fields.extend(schema.fields().iter().cloned());
    let mut columns: Vec<ArrayRef> =
        vec![Arc::new(StringArray::from(vec![run; t.batch.num_rows()]))];
    columns.extend(t.batch.columns().iter().cloned());
    let schema = Schema::new(fields).with_metadata(schema.metadata().clone());
    RecordBatch::try_new(Arc::new(schema), columns)
        .map(|batch| Table {
            name: t.name,
            batch,
        })
        .map_err(|e| ColumnarError::Schema {
            table: t.name,
            message: e.to_string(),
        })
}
