//! The Arrow tables and Parquet files hold exactly what the CSV files hold.

use std::path::Path;

use arrow_array::{
    Array, BooleanArray, Float64Array, RecordBatch, StringArray, UInt32Array, UInt64Array,
};
use arrow_schema::DataType;
use dcsim_columnar::{column_docs, parquet_files, tables};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

fn run(file: &str, sets: &[&str]) -> dcsim::Results {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(file);
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    dcsim::run_file(&path, &sets).expect("scenario runs")
}

/// The cell of a column as the CSV writer would hold it, compared numerically for floats.
fn same_cell(a: &dyn Array, i: usize, cell: &str) -> bool {
    if a.is_null(i) {
        return cell.is_empty();
    }
    match a.data_type() {
        DataType::UInt32 => {
            a.as_any()
                .downcast_ref::<UInt32Array>()
                .unwrap()
                .value(i)
                .to_string()
                == cell
        }
        DataType::UInt64 => {
            a.as_any()
                .downcast_ref::<UInt64Array>()
                .unwrap()
                .value(i)
                .to_string()
                == cell
        }
        DataType::Float64 => {
            // Exactly: the CSV writer prints the shortest text that reads back to the value.
            a.as_any()
                .downcast_ref::<Float64Array>()
                .unwrap()
                .value(i)
                .to_bits()
                == cell.parse::<f64>().unwrap().to_bits()
        }
        DataType::Boolean => {
            a.as_any()
                .downcast_ref::<BooleanArray>()
                .unwrap()
                .value(i)
                .to_string()
                == cell
        }
        DataType::Utf8 => a.as_any().downcast_ref::<StringArray>().unwrap().value(i) == cell,
        t => panic!("unexpected type {t}"),
    }
}

fn assert_equals_csv(batch: &RecordBatch, csv_bytes: &[u8], table: &str) {
    let mut r = csv::Reader::from_reader(csv_bytes);
    let header: Vec<String> = r.headers().unwrap().iter().map(str::to_string).collect();
    let names: Vec<String> = batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, header, "{table}: columns");
    let rows: Vec<csv::StringRecord> = r.records().map(Result::unwrap).collect();
    assert_eq!(batch.num_rows(), rows.len(), "{table}: rows");
    for (j, col) in batch.columns().iter().enumerate() {
        for (i, row) in rows.iter().enumerate() {
            assert!(
                same_cell(col.as_ref(), i, &row[j]),
                "{table} row {i} column {}: {:?} vs {:?}",
                header[j],
                col.slice(i, 1),
                &row[j]
            );
        }
    }
}

fn check_run(results: &dcsim::Results, out: &Path) {
    results.write(out).unwrap();
    let docs = column_docs();
    let parquet = parquet_files(results).unwrap();
    let tables = tables(results).unwrap();
    assert_eq!(tables.len(), parquet.len());
    for (t, (name, bytes)) in tables.iter().zip(&parquet) {
        let csv_bytes = std::fs::read(out.join(format!("{}.csv", t.name))).unwrap();
        assert_equals_csv(&t.batch, &csv_bytes, t.name);
        // Every column documented, with its unit carried in the metadata.
        for f in t.batch.schema().fields() {
            let d = docs.get(&(t.name.to_string(), f.name().clone()));
            let d = d.unwrap_or_else(|| panic!("{}.{} not in docs/output.md", t.name, f.name()));
            assert_eq!(f.metadata().get("description"), Some(&d.meaning));
            assert_eq!(
                f.metadata().get("unit").map(String::as_str).unwrap_or(""),
                d.unit
            );
        }
        // The Parquet file reads back to the same batch, metadata included.
        let builder =
            ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes.clone())).unwrap();
        assert_eq!(
            builder.schema(),
            &t.batch.schema(),
            "{name}: schema and metadata"
        );
        let back: Vec<RecordBatch> = builder.build().unwrap().map(Result::unwrap).collect();
        let back = arrow_select::concat::concat_batches(&t.batch.schema(), &back).unwrap();
        assert_eq!(back.columns(), t.batch.columns(), "{name}");
    }
}

#[test]
fn tables_and_parquet_equal_the_csv_files_tcp_with_timeseries() {
    let guard = tempfile::Builder::new()
        .prefix("dcsim-columnar-tcp-")
        .tempdir()
        .unwrap();
    let dir = guard.path().join("out");
    let r = run(
        "websearch-star.toml",
        &[
            "generators[0].pattern.max_flows=200",
            "output.timeseries.every=\"100us\"",
            "output.timeseries.flows=[0, 1]",
            "output.timeseries.ports=[\"sw->h0\"]",
            "output.events.flows=[0, 1]",
        ],
    );
    assert!(r.samples().unwrap().is_some_and(|s| !s.is_empty()));
    assert!(r.events().unwrap().is_some_and(|e| !e.is_empty()));
    assert_eq!(
        r.flow_counter_columns(),
        ["timeouts", "loss_probes", "rwnd_limited", "sndbuf_limited"]
    );
    check_run(&r, &dir);
}

#[test]
fn tables_and_parquet_equal_the_csv_files_expresspass_counters() {
    let guard = tempfile::Builder::new()
        .prefix("dcsim-columnar-xpass-")
        .tempdir()
        .unwrap();
    let dir = guard.path().join("out");
    let r = run(
        "xpass-dumbbell.toml",
        &["sim.duration=\"2ms\"", "sim.warmup=\"1ms\""],
    );
    assert_eq!(r.flow_counter_columns(), ["credits_sent", "credits_wasted"]);
    check_run(&r, &dir);
}

/// flows.parquet written from flows.csv a few rows at a time (as a run of millions of flows
/// is written) holds the whole table: the same schema and columns, read back, for chunks
/// of 1, 7 and 1,000 rows and in the file `write_results` commits. (Its bytes are those of
/// the table written at once while its pages stay small, as here; beyond that the writer
/// may cut pages elsewhere.)
#[test]
fn flows_parquet_streamed_in_chunks_holds_the_whole_table() {
    let r = run(
        "websearch-star.toml",
        &["generators[0].pattern.max_flows=300"],
    );
    let counters = r.flow_counter_columns();
    let whole = tables(&r).unwrap().swap_remove(0);
    let same = |bytes: Vec<u8>, what: &str| {
        let b = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes)).unwrap();
        assert_eq!(b.schema(), &whole.batch.schema(), "{what}");
        let back: Vec<RecordBatch> = b.build().unwrap().map(Result::unwrap).collect();
        let back = arrow_select::concat::concat_batches(&whole.batch.schema(), &back).unwrap();
        assert_eq!(back.columns(), whole.batch.columns(), "{what}");
    };
    for chunk in [1, 7, 1000] {
        let streamed =
            dcsim_columnar::write_flows_parquet_in(&r, &counters, Vec::new(), chunk).unwrap();
        same(streamed, &format!("chunks of {chunk}"));
    }
    let guard = tempfile::Builder::new()
        .prefix("dcsim-columnar-stream-")
        .tempdir()
        .unwrap();
    // Into a folder whose parent does not exist yet, as `res.write("results/x")` does.
    let dir = guard.path().join("new").join("out");
    dcsim_columnar::write_results(&r, &dir, dcsim_columnar::Format::Parquet, &[]).unwrap();
    same(std::fs::read(dir.join("flows.parquet")).unwrap(), "written");
}

/// The columns a run writes are the list of the current output schema version: a column
/// added, removed or renamed without a new version (and its list, and a line in
/// docs/output.md) fails here.
#[test]
fn columns_are_those_of_the_current_schema_version() {
    let v = dcsim::metrics::OUTPUT_SCHEMA_VERSION;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/schema/v{v}.txt"));
    let listed = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}: a new schema version needs its column list",
            path.display()
        )
    });
    let listed: std::collections::BTreeMap<&str, Vec<&str>> = listed
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (t, cols) = l.split_once(": ").unwrap();
            (t, cols.split(',').collect())
        })
        .collect();
    let r = run(
        "websearch-star.toml",
        &[
            "generators[0].pattern.max_flows=50",
            "output.timeseries.every=\"1ms\"",
            "output.timeseries.flows=[0]",
            "output.events.flows=[0]",
        ],
    );
    let mut actual: std::collections::BTreeMap<&str, Vec<String>> = tables(&r)
        .unwrap()
        .iter()
        .map(|t| {
            let mut cols: Vec<String> = t
                .batch
                .schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect();
            if t.name == "flows" {
                cols.truncate(dcsim_columnar::fixed_columns("flows").len());
            }
            (t.name, cols)
        })
        .collect();
    actual.insert("counters", dcsim_columnar::dataset::all_counters());
    actual.insert(
        "summary",
        r.summary.as_object().unwrap().keys().cloned().collect(),
    );
    assert_eq!(r.summary["schema_version"], v);
    for (t, cols) in &actual {
        assert_eq!(
            listed
                .get(t)
                .map(|c| c.iter().map(|s| s.to_string()).collect::<Vec<_>>())
                .as_ref(),
            Some(cols),
            "{t}: the columns differ from {}; bump OUTPUT_SCHEMA_VERSION, add its list and say what changed in docs/output.md",
            path.display()
        );
    }
    assert_eq!(
        listed.len(),
        actual.len(),
        "tables listed: {:?}",
        listed.keys()
    );
}

/// Every transport's counter columns are documented in docs/output.md.
#[test]
fn every_transport_counter_is_documented() {
    let docs = column_docs();
    for c in dcsim_columnar::dataset::all_counters() {
        assert!(
            docs.contains_key(&("flows".to_string(), c.clone())),
            "{c} not in docs/output.md"
        );
    }
}
