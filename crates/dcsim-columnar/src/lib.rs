//! dcsim results as Arrow record batches and Parquet files.
//!
//! The tables are the files of `docs/output.md` (flows, ports, buckets, tiers and
//! timeseries), column for column and in the same order, built from the typed rows of
//! [`Results`] rather than by reading the CSV back. Every field carries the unit and meaning
//! that `docs/output.md` gives it as Arrow field metadata (`unit`, `description`), and every
//! schema says which table it is and which dcsim wrote it, so a Parquet file read alone in
//! pandas, polars or DuckDB still says what its columns mean.
//!
//! The Python package hands these batches to pyarrow; `dcsim run --format parquet` and
//! sweeps write them as Parquet.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod dataset;
mod docs;

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, UInt64Array};
use arrow_schema::{DataType, Field, FieldRef, Schema};
use dcsim::Results;
use dcsim::metrics::Body;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

pub use arrow_array;
pub use arrow_schema;
pub use docs::{ColumnDoc, column_docs};

/// Why a table could not be built or written.
#[derive(Debug, thiserror::Error)]
pub enum ColumnarError {
    /// Rows did not fit the table's schema (a bug: the schema and the rows disagree).
    #[error("building the {table} table: {message}")]
    Schema {
        /// The table.
        table: &'static str,
        /// What went wrong.
        message: String,
    },
    /// The time series or the event log could not be read back from its file.
    #[error("{0}")]
    Timeseries(#[from] std::io::Error),
    /// Writing Parquet failed.
    #[error("writing {table}.parquet: {source}")]
    Parquet {
        /// The table.
        table: &'static str,
        /// The writer's error.
        source: parquet::errors::ParquetError,
    },
}

/// One table of a run's results.
#[derive(Clone, Debug)]
pub struct Table {
    /// `flows`, `ports`, `buckets`, `tiers`, `timeseries` or `events` (the CSV file's stem).
    pub name: &'static str,
    /// The rows, with the schema and its metadata.
    pub batch: RecordBatch,
}

/// The names of the tables, in the order [`tables`] returns them (`timeseries` only when the
/// run sampled, `events` only when it logged flows).
pub const TABLES: [&str; 6] = ["flows", "ports", "buckets", "tiers", "timeseries", "events"];

use DataType::{Boolean, Float64, UInt32, UInt64, Utf8};

/// The fixed columns of each table, as in the CSV header, with their Arrow types and
/// whether they may be empty. A test checks them against the CSV files.
const FLOWS: &[(&str, DataType, bool)] = &[
    ("flow_id", UInt32, false),
    ("src", UInt32, false),
    ("dst", UInt32, false),
    ("transport", Utf8, false),
    ("size_bytes", UInt64, true),
    ("start_ns", UInt64, false),
    ("end_ns", UInt64, true),
    ("fct_ns", UInt64, true),
    ("unloaded_fct_ns", UInt64, true),
    ("slowdown", Float64, true),
    ("delivered_bytes", UInt64, false),
    ("window_goodput_gbps", Float64, false),
    ("retransmits", UInt64, false),
    ("measured", Boolean, false),
];
const PORTS: &[(&str, DataType, bool)] = &[
    ("port", UInt32, false),
    ("node", Utf8, false),
    ("peer", Utf8, false),
    ("label", Utf8, false),
    ("tier", Utf8, false),
    ("peer_tier", Utf8, false),
    ("rate_gbps", Float64, false),
    ("tx_pkts", UInt64, false),
    ("tx_bytes", UInt64, false),
    ("tx_data_bytes", UInt64, false),
    ("utilization", Float64, false),
    ("max_queue_bytes", UInt64, false),
    ("max_data_queue_bytes", UInt64, false),
    ("max_credit_queue_bytes", UInt64, false),
    ("avg_queue_bytes", Float64, false),
    ("drops", UInt64, false),
    ("data_drops", UInt64, false),
    ("control_drops", UInt64, false),
    ("credit_drops", UInt64, false),
    ("aqm_drops", UInt64, false),
    ("ecn_marks", UInt64, false),
];
const BUCKETS: &[(&str, DataType, bool)] = &[
    ("set", Utf8, false),
    ("bucket", Utf8, false),
    ("lo_bytes", UInt64, false),
    ("hi_bytes", UInt64, true),
    ("flows", UInt64, false),
    ("completed", UInt64, false),
    ("fct_us_mean", Float64, true),
    ("fct_us_p50", Float64, true),
    ("fct_us_p99", Float64, true),
    ("fct_us_p999", Float64, true),
    ("fct_us_max", Float64, true),
    ("slowdown_mean", Float64, true),
    ("slowdown_p50", Float64, true),
    ("slowdown_p99", Float64, true),
    ("slowdown_p999", Float64, true),
];
const TIERS: &[(&str, DataType, bool)] = &[
    ("tier", Utf8, false),
    ("ports", UInt64, false),
    ("utilization_mean", Float64, false),
    ("utilization_max", Float64, false),
    ("avg_queue_bytes_mean", Float64, false),
    ("avg_queue_bytes_max", Float64, false),
    ("max_queue_bytes", UInt64, false),
    ("max_data_queue_bytes", UInt64, false),
    ("drops", UInt64, false),
    ("data_drops", UInt64, false),
    ("credit_drops", UInt64, false),
    ("ecn_marks", UInt64, false),
];
const TIMESERIES: &[(&str, DataType, bool)] = &[
    ("time_ns", UInt64, false),
    ("kind", Utf8, false),
    ("id", Utf8, false),
    ("value", Float64, false),
];

/// The long form of the time series, `id` always a flow number.
const EVENTS: &[(&str, DataType, bool)] = &[
    ("time_ns", UInt64, false),
    ("kind", Utf8, false),
    ("id", UInt32, false),
    ("value", Float64, false),
];

/// The fixed columns of a table (for `flows`, the transport counters follow them).
///
/// # Panics
/// For a name not in [`TABLES`].
pub fn fixed_columns(table: &str) -> Vec<&'static str> {
    columns_of(table).iter().map(|c| c.0).collect()
}

/// The fixed columns of a table with their types.
fn columns_of(table: &str) -> &'static [(&'static str, DataType, bool)] {
    match table {
        "flows" => FLOWS,
        "ports" => PORTS,
        "buckets" => BUCKETS,
        "tiers" => TIERS,
        "timeseries" => TIMESERIES,
        "events" => EVENTS,
        _ => panic!("no table {table}"),
    }
}

/// The tables of a run: flows, ports, buckets, tiers, timeseries if the run sampled, and
/// events if it logged flows (`[output.events]`).
///
/// # Errors
/// Rows that do not fit the schema (a bug, reported rather than a panic).
pub fn tables(results: &Results) -> Result<Vec<Table>, ColumnarError> {
    tables_with_counters(results, &results.flow_counter_columns())
}

/// [`tables`], with the flows table's counter columns given: a sweep's dataset gives every
/// registered transport's counters, so that runs of different transports share one schema.
///
/// # Errors
/// See [`tables`].
pub fn tables_with_counters(
    results: &Results,
    counters: &[String],
) -> Result<Vec<Table>, ColumnarError> {
    let table =
        |name: &'static str, extra: &[String], rows: &dyn RowsOf| -> Result<Table, ColumnarError> {
            let schema = schema_of(results, name, extra);
            Ok(Table {
                name,
                batch: batch_of(name, schema, rows)?,
            })
        };
    let mut out = vec![table(
        "flows",
        counters,
        &Flows(results.flows()?, counters),
    )?];
    out.extend(tables_but_flows(results)?);
    Ok(out)
}

/// [`tables`] but the flows table.
fn tables_but_flows(results: &Results) -> Result<Vec<Table>, ColumnarError> {
    let table = |name: &'static str, rows: &dyn RowsOf| -> Result<Table, ColumnarError> {
        let schema = schema_of(results, name, &[]);
        Ok(Table {
            name,
            batch: batch_of(name, schema, rows)?,
        })
    };
    let mut out = vec![
        table("ports", &Plain(&results.ports))?,
        table("buckets", &Plain(&results.buckets))?,
        table("tiers", &Plain(&results.tiers))?,
    ];
    if let Some(s) = results.samples()? {
        out.push(table("timeseries", &Plain(&s))?);
    }
    if let Some(e) = results.events()? {
        out.push(table("events", &Plain(&e))?);
    }
    Ok(out)
}

/// The schema of table `name` of `results`' run, with `extra` counter columns: each field
/// with its unit and description, the table with its name, version and schema version.
fn schema_of(results: &Results, name: &'static str, extra: &[String]) -> Schema {
    let docs = column_docs();
    let version = results.summary["dcsim_version"].as_str().unwrap_or("");
    let cols = columns_of(name);
    let mut fields: Vec<Field> = cols
        .iter()
        .map(|(c, t, null)| field(&docs, name, c, t.clone(), *null))
        .collect();
    fields.extend(extra.iter().map(|c| field(&docs, name, c, UInt64, true)));
    let meta = HashMap::from([
        ("dcsim.table".to_string(), name.to_string()),
        ("dcsim.version".to_string(), version.to_string()),
        ("dcsim.schema".to_string(), "docs/output.md".to_string()),
        (
            "dcsim.schema_version".to_string(),
            dcsim::metrics::OUTPUT_SCHEMA_VERSION.to_string(),
        ),
    ]);
    Schema::new(fields).with_metadata(meta)
}

/// `rows` as a batch of table `name` with `schema`.
fn batch_of(
    name: &'static str,
    schema: Schema,
    rows: &dyn RowsOf,
) -> Result<RecordBatch, ColumnarError> {
    let err = |e: &dyn std::fmt::Display| ColumnarError::Schema {
        table: name,
        message: e.to_string(),
    };
    let fixed = columns_of(name).len();
    let fixed_fields: Vec<FieldRef> = schema.fields()[..fixed].to_vec();
    let base = rows.batch(&fixed_fields).map_err(|e| err(&e))?;
    let mut columns: Vec<ArrayRef> = base.columns().to_vec();
    columns.extend(rows.extra());
    RecordBatch::try_new(Arc::new(schema), columns).map_err(|e| err(&e))
}

/// Rows of flows.parquet converted and written at a time.
const FLOW_CHUNK: usize = 65_536;

/// flows.parquet, written to `out` from flows.csv 65,536 rows at a time, so that a run of
/// any number of flows is converted in bounded memory. It holds what [`to_parquet`] of the
/// whole [`tables`] flows table holds (one row group up to the writer's 1 Mi rows), and
/// its bytes are as deterministic; they are the same bytes for small tables (300 flows),
/// but not for large ones (200,000 flows), where the writer cuts pages at other rows.
///
/// # Errors
/// Reading flows.csv, a row that does not fit the schema, or the writer's error.
pub fn write_flows_parquet<W: std::io::Write + Send>(
    results: &Results,
    counters: &[String],
    out: W,
) -> Result<W, ColumnarError> {
    write_flows_parquet_in(results, counters, out, FLOW_CHUNK)
}

/// [`write_flows_parquet`] with chunks of `chunk` rows.
#[doc(hidden)]
pub fn write_flows_parquet_in<W: std::io::Write + Send>(
    results: &Results,
    counters: &[String],
    out: W,
    chunk: usize,
) -> Result<W, ColumnarError> {
    let err = |source| ColumnarError::Parquet {
        table: "flows",
        source,
    };
    let schema = schema_of(results, "flows", counters);
    let mut w =
        ArrowWriter::try_new(out, Arc::new(schema.clone()), Some(parquet_props())).map_err(err)?;
    let mut failed = None;
    results
        .for_each_flow_chunk(chunk, |rows| {
            let written = batch_of("flows", schema.clone(), &Flows(rows, counters))
                .and_then(|b| w.write(&b).map_err(err));
            written.map_err(|e| {
                failed = Some(e);
                std::io::Error::other("stopped")
            })
        })
        .map_err(|e| failed.take().unwrap_or(ColumnarError::Timeseries(e)))?;
    w.into_inner().map_err(err)
}

fn parquet_props() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build()
}

/// The Parquet files of a run, as (file name, bytes): `flows.parquet` and so on, one per
/// table of [`tables`], Snappy-compressed, metadata kept.
///
/// # Errors
/// See [`tables`] and [`to_parquet`].
pub fn parquet_files(results: &Results) -> Result<Vec<(&'static str, Vec<u8>)>, ColumnarError> {
    let flows = write_flows_parquet(results, &results.flow_counter_columns(), Vec::new())?;
    let mut out = vec![("flows.parquet", flows)];
    out.extend(parquet_but_flows(results)?);
    Ok(out)
}

/// [`parquet_files`] but flows.parquet.
fn parquet_but_flows(results: &Results) -> Result<Vec<(&'static str, Vec<u8>)>, ColumnarError> {
    tables_but_flows(results)?
        .iter()
        .map(|t| Ok((parquet_name(t.name), to_parquet(t)?)))
        .collect()
}

/// `flows` → `flows.parquet`.
pub fn parquet_name(table: &str) -> &'static str {
    match table {
        "flows" => "flows.parquet",
        "ports" => "ports.parquet",
        "buckets" => "buckets.parquet",
        "tiers" => "tiers.parquet",
        "events" => "events.parquet",
        _ => "timeseries.parquet",
    }
}

/// One table as the bytes of a Parquet file (one row group, Snappy). The bytes depend only
/// on the rows and the parquet crate's version, so they are as deterministic as the CSV.
///
/// # Errors
/// The writer's error.
pub fn to_parquet(table: &Table) -> Result<Vec<u8>, ColumnarError> {
    let err = |source| ColumnarError::Parquet {
        table: table.name,
        source,
    };
    let mut w = ArrowWriter::try_new(Vec::new(), table.batch.schema(), Some(parquet_props()))
        .map_err(err)?;
    w.write(&table.batch).map_err(err)?;
    w.into_inner().map_err(err)
}

fn field(
    docs: &HashMap<(String, String), ColumnDoc>,
    table: &str,
    column: &str,
    ty: DataType,
    nullable: bool,
) -> Field {
    let mut meta = HashMap::new();
    if let Some(d) = docs.get(&(table.to_string(), column.to_string())) {
        if !d.unit.is_empty() {
            meta.insert("unit".to_string(), d.unit.clone());
        }
        meta.insert("description".to_string(), d.meaning.clone());
    }
    Field::new(column, ty, nullable).with_metadata(meta)
}

/// Rows that serde_arrow turns into the fixed columns, plus any columns they add.
trait RowsOf {
    fn batch(&self, fields: &[FieldRef]) -> Result<RecordBatch, serde_arrow::Error>;
    fn extra(&self) -> Vec<ArrayRef> {
        Vec::new()
    }
}

struct Plain<'a, T>(&'a [T]);

impl<T: serde::Serialize> RowsOf for Plain<'_, T> {
    fn batch(&self, fields: &[FieldRef]) -> Result<RecordBatch, serde_arrow::Error> {
        serde_arrow::to_record_batch(fields, &self.0)
    }
}

/// flows: the fixed columns from the rows, then one column per transport counter, empty
/// for flows of other transports.
struct Flows<'a>(&'a [dcsim::metrics::FlowRow], &'a [String]);

impl RowsOf for Flows<'_> {
    fn batch(&self, fields: &[FieldRef]) -> Result<RecordBatch, serde_arrow::Error> {
        serde_arrow::to_record_batch(fields, &self.0)
    }
    fn extra(&self) -> Vec<ArrayRef> {
        self.1
            .iter()
            .map(|c| {
                let a: UInt64Array = self.0.iter().map(|r| r.counters.get(c)).collect();
                Arc::new(a) as ArrayRef
            })
            .collect()
    }
}

/// The file format of a run's tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// `flows.csv` and so on (the default).
    #[default]
    Csv,
    /// `flows.parquet` and so on, instead of the CSV files.
    Parquet,
    /// Both.
    Both,
}

impl std::str::FromStr for Format {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "csv" => Ok(Self::Csv),
            "parquet" => Ok(Self::Parquet),
            "both" => Ok(Self::Both),
            _ => Err(format!("unknown format {s:?} (csv, parquet or both)")),
        }
    }
}

/// Writes a run's results into `dir` as one committed folder (see
/// [`Results::write_with`]): the tables in `format`, `extra` files, and summary.json last.
///
/// # Errors
/// Building the Parquet files, or writing the folder.
pub fn write_results(
    results: &Results,
    dir: &std::path::Path,
    format: Format,
    extra: &[(&str, &[u8])],
) -> std::io::Result<()> {
    let summary = results.summary_json()?;
    // flows.parquet goes to a temporary file beside the results as it is made (a run's
    // flows need not fit in memory); the other tables are built in memory.
    let (flows, parquet) = match format {
        Format::Csv => (None, Vec::new()),
        Format::Parquet | Format::Both => {
            // Beside the results: the folder that will hold them, made if new (as the commit
            // makes it).
            let parent = dir.parent().filter(|p| !p.as_os_str().is_empty());
            let parent = parent.unwrap_or(std::path::Path::new("."));
            std::fs::create_dir_all(parent)?;
            let file = tempfile::tempfile_in(parent)?;
            let w = std::io::BufWriter::new(file);
            let w = write_flows_parquet(results, &results.flow_counter_columns(), w)
                .map_err(std::io::Error::other)?;
            let file = w.into_inner().map_err(|e| e.into_error())?;
            (
                Some(file),
                parquet_but_flows(results).map_err(std::io::Error::other)?,
            )
        }
    };
    let parquet: Vec<(&str, Body<'_>)> = flows
        .iter()
        .map(|f| ("flows.parquet", Body::File(f)))
        .chain(parquet.iter().map(|(n, b)| (*n, Body::Bytes(b))))
        .collect();
    let mut files: Vec<(&str, Body<'_>)> =
        extra.iter().map(|&(n, b)| (n, Body::Bytes(b))).collect();
    let written = match format {
        Format::Csv => results.files_with(None, &summary)?,
        Format::Parquet | Format::Both => results.files_with(Some(&parquet), &summary)?,
    };
    if format == Format::Both {
        // The CSV files too; those written in both forms (packet traces, events.csv) once.
        let csv = results.files_with(None, &summary)?;
        files.extend(
            csv.into_iter()
                .filter(|(n, _)| !written.iter().any(|(m, _)| m == n)),
        );
    }
    files.extend(written);
    dcsim::metrics::commit_files(dir, &files)
}

/// A table of JSON rows (a sweep's index) with a column per `header` entry, typed from its
/// values: booleans, integers (Int64), numbers (Float64), else text; the first
/// `parse_strings` columns hold `--vary` values, TOML text, which is read first (`0.3` is a
/// number, `"dctcp"` the string dctcp; a table or array stays text). Missing and null cells are null; a column with no value is
/// Float64.
///
/// # Errors
/// A batch that cannot be built (a bug).
pub fn json_table(
    name: &'static str,
    header: &[String],
    rows: &[serde_json::Map<String, serde_json::Value>],
    parse_strings: usize,
) -> Result<Table, ColumnarError> {
    use arrow_array::{BooleanArray, Float64Array, Int64Array, StringArray};
    use serde_json::Value;
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for (i, h) in header.iter().enumerate() {
        let parse = i < parse_strings;
        let owned: Vec<Option<Value>> = rows
            .iter()
            .map(|r| {
                let v = r.get(h).filter(|v| !v.is_null())?;
                Some(match v.as_str() {
                    Some(s) if parse => toml_scalar(s),
                    _ => v.clone(),
                })
            })
            .collect();
        let cells: Vec<Option<&Value>> = owned.iter().map(Option::as_ref).collect();
        let present = || cells.iter().flatten();
        let as_text = |v: &Value| match v {
            Value::String(s) => s.clone(),
            v => v.to_string(),
        };
        let (ty, array): (DataType, ArrayRef) = if present().next().is_none() {
            (Float64, Arc::new(Float64Array::new_null(cells.len())))
        } else if present().all(|v| v.is_boolean()) {
            (
                Boolean,
                Arc::new(
                    cells
                        .iter()
                        .map(|c| c.and_then(Value::as_bool))
                        .collect::<BooleanArray>(),
                ),
            )
        } else if present().all(|v| v.as_i64().is_some()) {
            let a: Int64Array = cells.iter().map(|c| c.and_then(Value::as_i64)).collect();
            (DataType::Int64, Arc::new(a))
        } else if present().all(|v| v.is_number()) {
            let a: Float64Array = cells.iter().map(|c| c.and_then(Value::as_f64)).collect();
            (Float64, Arc::new(a))
        } else {
            (
                Utf8,
                Arc::new(
                    cells
                        .iter()
                        .map(|c| c.map(as_text))
                        .collect::<StringArray>(),
                ),
            )
        };
        fields.push(Field::new(h, ty, true));
        columns.push(array);
    }
    let schema = Schema::new(fields).with_metadata(HashMap::from([(
        "dcsim.table".to_string(),
        name.to_string(),
    )]));
    RecordBatch::try_new(Arc::new(schema), columns)
        .map(|batch| Table { name, batch })
        .map_err(|e| ColumnarError::Schema {
            table: name,
            message: e.to_string(),
        })
}

/// A TOML value's text as JSON: a string, number or boolean as itself, anything else (a
/// table, an array, text that is not TOML) as the text.
fn toml_scalar(text: &str) -> serde_json::Value {
    use serde_json::Value;
    let parsed: Option<toml::Value> = format!("v = {text}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"));
    match parsed {
        Some(toml::Value::String(s)) => Value::String(s),
        Some(toml::Value::Integer(i)) => Value::from(i),
        Some(toml::Value::Float(f)) => serde_json::Number::from_f64(f)
            .map_or_else(|| Value::String(text.into()), Value::Number),
        Some(toml::Value::Boolean(b)) => Value::Bool(b),
        _ => Value::String(text.to_string()),
    }
}
