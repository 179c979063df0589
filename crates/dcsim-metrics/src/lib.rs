//! Metrics of dcsim: summary statistics, the row types of the output files (schemas in
//! `docs/output.md`) and atomic writers.
//!
//! Results are written atomically: to a temporary file in the same directory, flushed and
//! synced, then renamed over the target, so a killed run never leaves a half-written file
//! that looks complete.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

pub mod analysis;
pub mod maxmin;
pub mod oracle;
pub mod plot;

/// One row of `flows.csv`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FlowRow {
    /// Flow number (order of definition in the scenario).
    pub flow_id: u32,
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Transport label ("dctcp", "reno").
    pub transport: String,
    /// Bytes to deliver; empty for a long-lived flow.
    pub size_bytes: Option<u64>,
    /// Start time, ns.
    pub start_ns: u64,
    /// Completion time (receiver holds every byte), ns; empty if unfinished.
    pub end_ns: Option<u64>,
    /// Flow completion time, ns.
    pub fct_ns: Option<u64>,
    /// Completion time alone on its path at line rate, ns.
    pub ideal_fct_ns: Option<u64>,
    /// `fct_ns / ideal_fct_ns`.
    pub slowdown: Option<f64>,
    /// Bytes delivered in order to the receiver by the end of the run.
    pub delivered_bytes: u64,
    /// Goodput over the measurement window, Gb/s (bytes delivered in the window / window).
    pub window_goodput_gbps: f64,
    /// Packets sent again.
    pub retransmits: u64,
    /// Whether the flow counts in FCT statistics (it started inside the measurement
    /// window: not before `sim.warmup`, not within `sim.cooldown` of the end of arrivals).
    pub measured: bool,
    /// The counters of the flow's transport (`timeouts` for TCP; `credits_sent`,
    /// `credits_wasted` for ExpressPass): the columns after `measured`, one per counter
    /// of every transport the run uses, empty for flows of other transports.
    #[serde(skip)]
    pub counters: std::collections::BTreeMap<String, u64>,
}

/// One row of `ports.csv` (counters over the measurement window).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PortRow {
    /// Port number.
    pub port: u32,
    /// Node the port belongs to.
    pub node: String,
    /// Node at the far end of its link.
    pub peer: String,
    /// Tier of `node`.
    pub tier: String,
    /// Tier of `peer`.
    pub peer_tier: String,
    /// Line rate, Gb/s.
    pub rate_gbps: f64,
    /// Packets transmitted.
    pub tx_pkts: u64,
    /// Wire bytes transmitted (all classes).
    pub tx_bytes: u64,
    /// Wire bytes of data-class packets transmitted.
    pub tx_data_bytes: u64,
    /// `tx_bytes · 8 / (rate · window)`.
    pub utilization: f64,
    /// Largest backlog, wire bytes.
    pub max_queue_bytes: u64,
    /// Largest backlog of data packets alone, wire bytes.
    pub max_data_queue_bytes: u64,
    /// Largest backlog of credits alone, wire bytes (ExpressPass credit queue).
    pub max_credit_queue_bytes: u64,
    /// Time-weighted mean backlog, wire bytes.
    pub avg_queue_bytes: f64,
    /// Packets dropped (all classes).
    pub drops: u64,
    /// Data packets dropped.
    pub data_drops: u64,
    /// Control packets (ACKs, signalling) dropped.
    pub control_drops: u64,
    /// Credits dropped.
    pub credit_drops: u64,
    /// Of the drops, AQM decisions (not a full buffer).
    pub aqm_drops: u64,
    /// Packets CE-marked.
    pub ecn_marks: u64,
}

/// One row of `timeseries.csv` (long format).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SampleRow {
    /// Sample time, ns.
    pub time_ns: u64,
    /// What was sampled (`throughput_gbps`, `cwnd_bytes`, `alpha`, `queue_bytes`).
    pub kind: Cow<'static, str>,
    /// Flow number or port label (`node->peer`).
    pub id: String,
    /// The value.
    pub value: f64,
}

/// Percentiles and mean of a sample.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Distribution {
    /// Number of values.
    pub count: u64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest value.
    pub max: f64,
}

impl Distribution {
    /// Summarizes `values` (sorted in place). Percentiles use the nearest-rank method.
    pub fn of(values: &mut [f64]) -> Self {
        if values.is_empty() {
            return Self::default();
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let rank = |q: f64| values[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        Self {
            count: n as u64,
            mean: values.iter().sum::<f64>() / n as f64,
            p50: rank(0.5),
            p90: rank(0.9),
            p99: rank(0.99),
            p999: rank(0.999),
            max: values[n - 1],
        }
    }
}

/// Jain's fairness index (Σx)² / (n·Σx²): 1 when all equal, 1/n when one takes everything.
/// `None` for an empty input or all zeros.
pub fn jain(xs: &[f64]) -> Option<f64> {
    let s: f64 = xs.iter().sum();
    let s2: f64 = xs.iter().map(|x| x * x).sum();
    (!xs.is_empty() && s2 > 0.0).then(|| s * s / (xs.len() as f64 * s2))
}

/// 64-bit FNV-1a over bytes (the digest of output files; fixed and platform-independent).
pub fn digest(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
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

/// Writes `bytes` to `path` atomically (temporary file in the same directory, fsync,
/// rename).
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("no file name"))?
        .to_string_lossy();
    let tmp: PathBuf = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let r = (|| {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if r.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_is_one_for_equal_and_one_over_n_for_a_hog() {
        assert!((jain(&[2.0, 2.0, 2.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((jain(&[1.0, 0.0, 0.0, 0.0]).unwrap() - 0.25).abs() < 1e-12);
        assert_eq!(jain(&[]), None);
    }

    #[test]
    fn nearest_rank_percentiles() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        let d = Distribution::of(&mut v);
        assert_eq!((d.p50, d.p90, d.p99, d.max), (50.0, 90.0, 99.0, 100.0));
        assert!((d.mean - 50.5).abs() < 1e-12);
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("dcsim-aw-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let p = dir.join("x.csv");
        atomic_write(&p, b"one").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }
}
