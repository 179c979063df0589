//! The per-flow event log (`[output.events]`, events.csv), checked against the run's other
//! outputs: flows.csv and a packet trace of the receiver.

use crate::run_text;
use crate::trace::{dumbbell, parse, read};

/// events.csv as rows of (time in ns, kind, flow, value).
fn events(dir: &std::path::Path) -> Vec<(u64, String, u32, f64)> {
    csv::Reader::from_path(dir.join("events.csv"))
        .unwrap()
        .deserialize()
        .map(|r| r.unwrap())
        .collect()
}

#[test]
fn the_log_agrees_with_flows_csv_and_the_receivers_trace() {
    let (_, r) = run_text(&dumbbell(
        "[output.events]\nflows = [0]\n[output.trace]\nhosts = [2]\n",
    ));
    let dir = tempfile::tempdir().unwrap();
    r.write(dir.path()).unwrap();
    let ev = events(dir.path());
    assert!(ev.windows(2).all(|w| w[0].0 <= w[1].0), "time order");
    assert!(ev.iter().all(|e| e.2 == 0), "only flow 0");
    let last = |kind: &str| ev.iter().rev().find(|e| e.1 == kind).map(|e| e.3);
    let flow = &r.flows().unwrap()[0];
    assert_eq!(ev[0].1, "start");
    assert_eq!(ev[0].3 as u64, 600_000);
    assert_eq!(last("completed"), flow.fct_ns.map(|f| f as f64));
    assert_eq!(last("retransmits"), Some(flow.retransmits as f64));
    // The window moved, and every change is a row: more rows than a 1 ms sampler would see.
    assert!(ev.iter().filter(|e| e.1 == "cwnd_bytes").count() > 10);
    assert!(ev.iter().any(|e| e.1 == "alpha" && e.3 > 0.0));
    // Every CE-marked data packet of flow 0 that reached h2 is in the log, and no other.
    let ce_logged = ev.iter().filter(|e| e.1 == "ce_arrived").count();
    let ce_seen = read(dir.path(), "trace-h2.pcap")
        .iter()
        .map(parse)
        .filter(|s| s.src == 0 && s.dst == 2 && s.ecn == 3)
        .count();
    assert!(ce_seen > 0, "the test needs marks");
    assert_eq!(ce_logged, ce_seen);
    assert_eq!(
        r.summary["event_log"]["rows"].as_u64(),
        Some(ev.len() as u64)
    );
}

#[test]
fn the_log_changes_no_other_output_and_stops_at_max_rows() {
    let (_, plain) = run_text(&dumbbell(""));
    let (_, logged) = run_text(&dumbbell(
        "[output.events]\nflows = \"all\"\nmax_rows = 100\n",
    ));
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    plain.write(a.path()).unwrap();
    logged.write(b.path()).unwrap();
    for f in ["flows.csv", "ports.csv", "buckets.csv"] {
        assert!(
            std::fs::read(a.path().join(f)).unwrap() == std::fs::read(b.path().join(f)).unwrap(),
            "{f} differs with the log"
        );
    }
    assert_eq!(events(b.path()).len(), 100);
    let s = &logged.summary["event_log"];
    assert_eq!(s["rows"].as_u64(), Some(100));
    assert!(s["rows_over_max_rows"].as_u64().unwrap() > 100, "{s}");
}
