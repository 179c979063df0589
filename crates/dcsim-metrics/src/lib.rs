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
use std::path::Path;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

pub mod analysis;
pub mod maxmin;
pub mod oracle;
pub mod plot;
pub mod spill;

pub use spill::{Body, SampleSpill};

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
    pub counters: Counters,
}

/// A flow's transport counters by name, in its transport's order: a short list (one or
/// two entries), kept inline with names borrowed where they are static, since a run holds
/// one per flow.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters(Vec<(Cow<'static, str>, u64)>);

impl Counters {
    /// Room for `n` counters.
    pub fn with_capacity(n: usize) -> Self {
        Self(Vec::with_capacity(n))
    }

    /// Sets counter `name` (appended if new).
    pub fn insert(&mut self, name: impl Into<Cow<'static, str>>, v: u64) {
        let name = name.into();
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some(e) => e.1 = v,
            None => self.0.push((name, v)),
        }
    }

    /// The value of counter `name`, if the flow's transport has it.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.0.iter().find(|(n, _)| n == name).map(|e| e.1)
    }

    /// Whether the flow's transport has counter `name`.
    pub fn contains_key(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// (name, value) in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|(n, v)| (&**n, *v))
    }
}

impl std::ops::Index<&str> for Counters {
    type Output = u64;
    fn index(&self, name: &str) -> &u64 {
        match self.0.iter().find(|(n, _)| n == name) {
            Some((_, v)) => v,
            None => panic!("no counter {name:?}"),
        }
    }
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

/// One row of `events.csv`, the per-flow event log: the long format of `timeseries.csv`,
/// with `id` always a flow number.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct EventRow {
    /// When, ns.
    pub time_ns: u64,
    /// What changed (`start`, `cwnd_bytes`, `ce_arrived`, `completed`, ...).
    pub kind: String,
    /// Flow number.
    pub id: u32,
    /// The new value, or what the kind says.
    pub value: f64,
}

/// The version of the output files' layout (columns of the CSV and Parquet files, keys of
/// summary.json), written into summary.json, index.json and the Parquet metadata. Changed
/// whenever a column or key is added, removed, renamed or changes meaning; docs/output.md
/// lists what each version changed, and a test holds the columns to the list of the
/// current version (`crates/dcsim-columnar/tests/schema/vN.txt`).
///
/// Version 2: statistics of nothing (an empty bucket, no completed flow) are empty cells
/// and nulls instead of zeros; `schema_version` added to summary.json and index.json.
pub const OUTPUT_SCHEMA_VERSION: u32 = 4;

/// Percentiles and mean of a sample. Serialized with every statistic null when the sample
/// is empty (`count` 0), so that no reader averages a zero that was never measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
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

impl Serialize for Distribution {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let v = |x: f64| (self.count > 0).then_some(x);
        let mut st = s.serialize_struct("Distribution", 7)?;
        st.serialize_field("count", &self.count)?;
        st.serialize_field("mean", &v(self.mean))?;
        st.serialize_field("p50", &v(self.p50))?;
        st.serialize_field("p90", &v(self.p90))?;
        st.serialize_field("p99", &v(self.p99))?;
        st.serialize_field("p999", &v(self.p999))?;
        st.serialize_field("max", &v(self.max))?;
        st.end()
    }
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
    let mut h = Fnv::default();
    for p in parts {
        h.update(p);
    }
    h.finish()
}

/// [`digest`] fed in pieces: the same hash of the concatenation.
#[derive(Clone, Copy, Debug)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    /// Adds `bytes`.
    pub fn update(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// The hash of everything added.
    pub fn finish(self) -> u64 {
        self.0
    }
}

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

/// Writes `bytes` to `path` atomically: into a temporary file beside it
/// (`.NAME.PID.XXXXXX.tmp`, by tempfile, removed if anything fails), synced, then renamed
/// over `path` (`persist`). Temporary files of `NAME` left by writers that were killed
/// (their process is gone) are removed first.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("no file name"))?
        .to_string_lossy();
    let prefix = format!(".{name}.");
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries.flatten() {
            let f = e.file_name().to_string_lossy().into_owned();
            let pid = f
                .strip_prefix(&prefix)
                .filter(|rest| rest.ends_with(".tmp"))
                .and_then(|rest| rest.split('.').next()?.parse::<u32>().ok());
            if pid.is_some_and(|p| !alive(p)) {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    let mut f = tempfile::Builder::new()
        .prefix(&format!("{prefix}{}.", std::process::id()))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    f.write_all(bytes)?;
    f.as_file().sync_all()?;
    f.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The manifest a committed results folder carries: every file's size and FNV-1a hash.
pub const MANIFEST: &str = "manifest.json";

/// Writes the files `files` (name, bytes) as the whole content of folder `dir`, so that
/// `dir` is at every moment absent, the complete old folder, or the complete new one:
/// the files and a [`MANIFEST`] listing them go into a fresh temporary folder beside
/// `dir`, each synced, which then replaces `dir` whole (the old folder is renamed aside
/// and removed). A lock file beside `dir` refuses a second writer while one is at work;
/// leftovers of writers that died (temporary folders, old folders, locks) are removed.
///
/// # Errors
/// Another live process is writing `dir` (the message says which lock), or any I/O error
/// (the temporary folder is removed; `dir` is untouched).
pub fn commit_dir(dir: &Path, files: &[(&str, &[u8])]) -> io::Result<()> {
    let files: Vec<(&str, Body<'_>)> = files.iter().map(|&(n, b)| (n, Body::Bytes(b))).collect();
    commit_files(dir, &files)
}

/// [`commit_dir`] with files that may be open files as well as bytes (a time series
/// spilled to disk is copied, never read into memory whole).
///
/// # Errors
/// As [`commit_dir`].
pub fn commit_files(dir: &Path, files: &[(&str, Body<'_>)]) -> io::Result<()> {
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(parent)?;
    let name = dir
        .file_name()
        .ok_or_else(|| io::Error::other("no folder name"))?
        .to_string_lossy()
        .into_owned();
    if fs::symlink_metadata(dir).is_ok_and(|m| !m.is_dir()) {
        return Err(io::Error::other(format!(
            "{} exists and is not a folder; it is left as it is",
            dir.display()
        )));
    }
    let pid = std::process::id();
    let lock = parent.join(format!(".{name}.lock"));
    take_lock(&lock, pid)?;
    let r = (|| {
        remove_leftovers(parent, &name);
        let tmp = parent.join(format!(".{name}.tmp-{pid}"));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir(&tmp)?;
        let write_all = || -> io::Result<()> {
            let mut manifest = serde_json::Map::new();
            for (file, body) in files {
                let mut f =
                    io::BufWriter::with_capacity(1 << 16, fs::File::create(tmp.join(file))?);
                let (mut len, mut h) = (0u64, Fnv::default());
                body.for_each_chunk(|c| {
                    len += c.len() as u64;
                    h.update(c);
                    f.write_all(c)
                })?;
                f.into_inner()
                    .map_err(io::IntoInnerError::into_error)?
                    .sync_all()?;
                manifest.insert(
                    (*file).to_string(),
                    serde_json::json!({"bytes": len, "fnv1a64": format!("{:016x}", h.finish())}),
                );
            }
            let mut m = serde_json::to_vec_pretty(&serde_json::Value::Object(manifest))
                .map_err(io::Error::other)?;
            m.push(b'\n');
            let mut f = fs::File::create(tmp.join(MANIFEST))?;
            f.write_all(&m)?;
            f.sync_all()?;
            if fs::symlink_metadata(dir).is_ok() {
                let old = parent.join(format!(".{name}.old-{pid}"));
                fs::rename(dir, &old)?;
                fs::rename(&tmp, dir)?;
                fs::remove_dir_all(&old)
            } else {
                fs::rename(&tmp, dir)
            }
        };
        let r = write_all();
        if r.is_err() {
            let _ = fs::remove_dir_all(&tmp);
        }
        r
    })();
    let _ = fs::remove_file(&lock);
    r
}

/// Whether every file the [`MANIFEST`] of `dir` lists is there with its size and hash.
pub fn verify_dir(dir: &Path) -> bool {
    let Ok(text) = fs::read(dir.join(MANIFEST)) else {
        return false;
    };
    let Ok(serde_json::Value::Object(m)) = serde_json::from_slice::<serde_json::Value>(&text)
    else {
        return false;
    };
    // File by file in pieces: a time series can be larger than memory.
    m.iter().all(|(file, v)| {
        let Ok(f) = fs::File::open(dir.join(file)) else {
            return false;
        };
        let (mut len, mut h) = (0u64, Fnv::default());
        Body::File(&f)
            .for_each_chunk(|c| {
                len += c.len() as u64;
                h.update(c);
                Ok(())
            })
            .is_ok()
            && v["bytes"].as_u64() == Some(len)
            && v["fnv1a64"].as_str() == Some(format!("{:016x}", h.finish()).as_str())
    })
}

/// Whether process `pid` is alive (Linux: /proc; elsewhere assumed alive).
fn alive(pid: u32) -> bool {
    if cfg!(target_os = "linux") {
        Path::new(&format!("/proc/{pid}")).exists()
    } else {
        true
    }
}

/// Creates `lock` holding `pid`; a lock left by a dead process is taken over.
fn take_lock(lock: &Path, pid: u32) -> io::Result<()> {
    for _ in 0..2 {
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(lock)
        {
            Ok(mut f) => {
                // A lock whose pid could not be written (a full disk) would refuse the
                // next writer for a while: remove it with the error.
                let r = f.write_all(pid.to_string().as_bytes());
                if r.is_err() {
                    let _ = fs::remove_file(lock);
                }
                return r;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let holder = fs::read_to_string(lock)
                    .ok()
                    .and_then(|t| t.trim().parse::<u32>().ok());
                // A lock without a pid yet belongs to a writer that has just created it,
                // unless it is old.
                let fresh = || {
                    fs::metadata(lock)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .is_some_and(|age| age.as_secs() < 10)
                };
                match holder {
                    Some(h) if h != pid && alive(h) => {
                        return Err(io::Error::other(format!(
                            "process {h} is writing the same results folder (lock {}); \
                             wait for it or choose another --out",
                            lock.display()
                        )));
                    }
                    None if fresh() => {
                        return Err(io::Error::other(format!(
                            "another process is starting to write the same results folder \
                             (lock {}); wait for it or choose another --out",
                            lock.display()
                        )));
                    }
                    _ => {
                        let _ = fs::remove_file(lock);
                    }
                }
            }
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "cannot take the lock {}",
        lock.display()
    )))
}

/// Removes temporary and old folders of `name` left in `parent` by processes that died. A
/// writer killed between its two renames leaves no folder `name`: its complete new
/// folder (or else the old one) is put back first.
fn remove_leftovers(parent: &Path, name: &str) {
    let Ok(entries) = fs::read_dir(parent) else {
        return;
    };
    let entries: Vec<_> = entries.flatten().collect();
    let dir = parent.join(name);
    if fs::symlink_metadata(&dir).is_err() {
        for kind in ["tmp", "old"] {
            let prefix = format!(".{name}.{kind}-");
            if let Some(e) = entries.iter().find(|e| {
                let f = e.file_name().to_string_lossy().into_owned();
                f.strip_prefix(&prefix)
                    .and_then(|p| p.parse::<u32>().ok())
                    .is_some_and(|p| !alive(p))
                    && verify_dir(&e.path())
            }) && fs::rename(e.path(), &dir).is_ok()
            {
                break;
            }
        }
    }
    for e in entries {
        let f = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = f
            .strip_prefix(&format!(".{name}.tmp-"))
            .or_else(|| f.strip_prefix(&format!(".{name}.old-")))
        else {
            continue;
        };
        if rest.parse::<u32>().is_ok_and(|p| !alive(p)) {
            let _ = fs::remove_dir_all(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new, empty scratch folder, removed when the guard is dropped (at the end of the
    /// test, passed or failed).
    fn scratch(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("dcsim-commit-{name}-"))
            .tempdir()
            .unwrap()
    }

    /// A commit replaces the folder whole (an old file not in the new set is gone), lists
    /// every file in the manifest, and a changed file fails verification.
    #[test]
    fn commit_replaces_the_folder_whole_and_verifies() {
        let dir = scratch("whole");
        let d = dir.path();
        let out = d.join("run");
        commit_dir(&out, &[("a.csv", b"1,2\n"), ("old.csv", b"x")]).unwrap();
        assert!(verify_dir(&out));
        commit_dir(&out, &[("a.csv", b"3,4\n"), ("summary.json", b"{}")]).unwrap();
        assert!(!out.join("old.csv").exists());
        assert_eq!(fs::read(out.join("a.csv")).unwrap(), b"3,4\n");
        assert!(verify_dir(&out));
        fs::write(out.join("a.csv"), b"3,").unwrap();
        assert!(!verify_dir(&out), "a truncated file");
        let names: Vec<_> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["run"], "no temporary, old folder or lock left");
        dir.close().unwrap();
    }

    /// A lock held by a live process refuses the commit and leaves the folder alone; one
    /// left by a dead process is taken over, and its temporary folder removed.
    #[test]
    fn a_live_writer_is_refused_and_a_dead_ones_leftovers_are_cleared() {
        let dir = scratch("lock");
        let d = dir.path();
        let out = d.join("run");
        commit_dir(&out, &[("a.csv", b"old")]).unwrap();
        // pid 1 is always alive.
        fs::write(d.join(".run.lock"), "1").unwrap();
        let e = commit_dir(&out, &[("a.csv", b"new")]).unwrap_err();
        assert!(e.to_string().contains("process 1 is writing"), "{e}");
        assert_eq!(fs::read(out.join("a.csv")).unwrap(), b"old");
        // A pid above Linux's limit is never alive.
        let dead = 4_194_304 + 7;
        fs::write(d.join(".run.lock"), dead.to_string()).unwrap();
        fs::create_dir(d.join(format!(".run.tmp-{dead}"))).unwrap();
        commit_dir(&out, &[("a.csv", b"new")]).unwrap();
        assert_eq!(fs::read(out.join("a.csv")).unwrap(), b"new");
        let names: Vec<_> = fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["run"]);
        dir.close().unwrap();
    }

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
        let guard = tempfile::Builder::new()
            .prefix("dcsim-aw-")
            .tempdir()
            .unwrap();
        let dir = guard.path();
        let p = dir.join("x.csv");
        atomic_write(&p, b"one").unwrap();
        // A killed writer's leftover (a pid above Linux's limit is never alive).
        let dead = dir.join(format!(".x.csv.{}.a1b2c3.tmp", 4_194_304 + 7));
        fs::write(&dead, b"half").unwrap();
        atomic_write(&p, b"two").unwrap();
        assert!(!dead.exists(), "a dead writer's temporary file is removed");
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert_eq!(fs::read_dir(dir).unwrap().count(), 1);
        guard.close().unwrap();
    }
}
