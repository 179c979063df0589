//! Flow-completion analysis by flow-size bucket, and port statistics by tier.
//!
//! The bucket sets are those of the ExpressPass fat-tree evaluation
//! (the ExpressPass paper's large-scale evaluation, `xpass-fattree`): a fine set `0-10KB`, `10KB-100KB`, `100KB-1MB`,
//! `1MB+` and a coarse set `<100KB`, `100KB-10MB`, `10MB+`. Every bucket is a half-open
//! interval `(lo, hi]` of payload bytes with decimal units (1 KB = 1000 B), so a flow of
//! exactly 10,000 B is in `0-10KB` and one of 10,001 B in `10KB-100KB`.

use serde::{Deserialize, Serialize};

use std::io;
use std::path::PathBuf;

use crate::sorted::{DEFAULT_CHUNK, ExternalSort};
use crate::{Ascending, Distribution, PortRow};

/// A flow-size bucket: sizes in `(lo_bytes, hi_bytes]`; no upper end when `hi_bytes` is
/// `None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    /// Name used in files and result keys.
    pub name: &'static str,
    /// Exclusive lower end, bytes.
    pub lo_bytes: u64,
    /// Inclusive upper end, bytes.
    pub hi_bytes: Option<u64>,
}

impl Bucket {
    const fn new(name: &'static str, lo_bytes: u64, hi_bytes: Option<u64>) -> Self {
        Self {
            name,
            lo_bytes,
            hi_bytes,
        }
    }

    /// Whether a flow of `size` bytes falls in this bucket.
    pub fn contains(&self, size: u64) -> bool {
        size > self.lo_bytes && self.hi_bytes.is_none_or(|h| size <= h)
    }
}

/// A named set of buckets.
#[derive(Clone, Copy, Debug)]
pub struct BucketSet {
    /// Name of the set (`fine`, `coarse`).
    pub name: &'static str,
    /// Its buckets, in increasing size, covering every size above 0.
    pub buckets: &'static [Bucket],
}

/// The bucket sets every run reports.
pub const BUCKET_SETS: &[BucketSet] = &[
    BucketSet {
        name: "fine",
        buckets: &[
            Bucket::new("0-10KB", 0, Some(10_000)),
            Bucket::new("10KB-100KB", 10_000, Some(100_000)),
            Bucket::new("100KB-1MB", 100_000, Some(1_000_000)),
            Bucket::new("1MB+", 1_000_000, None),
        ],
    },
    BucketSet {
        name: "coarse",
        buckets: &[
            Bucket::new("<100KB", 0, Some(100_000)),
            Bucket::new("100KB-10MB", 100_000, Some(10_000_000)),
            Bucket::new("10MB+", 10_000_000, None),
        ],
    },
];

/// What the analysis needs of one measured flow.
#[derive(Clone, Copy, Debug)]
pub struct FlowSample {
    /// Payload bytes.
    pub size_bytes: u64,
    /// Flow completion time, µs; `None` if unfinished.
    pub fct_us: Option<f64>,
    /// FCT over the unloaded FCT; `None` if unfinished.
    pub slowdown: Option<f64>,
}

/// FCT and slowdown statistics of the measured flows in one bucket (a row of
/// `buckets.csv`). The statistics are 0 in memory for a bucket without completed flows and
/// written as empty cells (null).
#[derive(Clone, Debug)]
pub struct BucketStats {
    /// Bucket set (`all`, `fine`, `coarse`).
    pub set: &'static str,
    /// Bucket name.
    pub bucket: &'static str,
    /// Exclusive lower end, bytes.
    pub lo_bytes: u64,
    /// Inclusive upper end, bytes; empty for the last bucket.
    pub hi_bytes: Option<u64>,
    /// Measured flows in the bucket.
    pub flows: u64,
    /// Of these, completed by the end of the run.
    pub completed: u64,
    /// Mean FCT of the completed flows, µs.
    pub fct_us_mean: f64,
    /// Median FCT, µs.
    pub fct_us_p50: f64,
    /// 99th-percentile FCT, µs.
    pub fct_us_p99: f64,
    /// 99.9th-percentile FCT, µs.
    pub fct_us_p999: f64,
    /// Largest FCT, µs.
    pub fct_us_max: f64,
    /// Mean slowdown.
    pub slowdown_mean: f64,
    /// Median slowdown.
    pub slowdown_p50: f64,
    /// 99th-percentile slowdown.
    pub slowdown_p99: f64,
    /// 99.9th-percentile slowdown.
    pub slowdown_p999: f64,
}

impl Serialize for BucketStats {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let v = |x: f64| (self.completed > 0).then_some(x);
        let mut st = s.serialize_struct("BucketStats", 15)?;
        st.serialize_field("set", self.set)?;
        st.serialize_field("bucket", self.bucket)?;
        st.serialize_field("lo_bytes", &self.lo_bytes)?;
        st.serialize_field("hi_bytes", &self.hi_bytes)?;
        st.serialize_field("flows", &self.flows)?;
        st.serialize_field("completed", &self.completed)?;
        st.serialize_field("fct_us_mean", &v(self.fct_us_mean))?;
        st.serialize_field("fct_us_p50", &v(self.fct_us_p50))?;
        st.serialize_field("fct_us_p99", &v(self.fct_us_p99))?;
        st.serialize_field("fct_us_p999", &v(self.fct_us_p999))?;
        st.serialize_field("fct_us_max", &v(self.fct_us_max))?;
        st.serialize_field("slowdown_mean", &v(self.slowdown_mean))?;
        st.serialize_field("slowdown_p50", &v(self.slowdown_p50))?;
        st.serialize_field("slowdown_p99", &v(self.slowdown_p99))?;
        st.serialize_field("slowdown_p999", &v(self.slowdown_p999))?;
        st.end()
    }
}

/// A row of `buckets.csv` as read back: the same fields with owned names.
#[derive(Clone, Debug, Deserialize)]
struct BucketRowOwned {
    set: String,
    bucket: String,
    lo_bytes: u64,
    hi_bytes: Option<u64>,
    flows: u64,
    completed: u64,
    fct_us_mean: Option<f64>,
    fct_us_p50: Option<f64>,
    fct_us_p99: Option<f64>,
    fct_us_p999: Option<f64>,
    fct_us_max: Option<f64>,
    slowdown_mean: Option<f64>,
    slowdown_p50: Option<f64>,
    slowdown_p99: Option<f64>,
    slowdown_p999: Option<f64>,
}

/// Reads `buckets.csv` back (as written by a run): every row must name a known bucket.
///
/// # Errors
/// A malformed file or an unknown bucket name.
pub fn read_bucket_csv(bytes: &[u8]) -> Result<Vec<BucketStats>, String> {
    let name_of = |set: &str, bucket: &str| -> Option<(&'static str, &'static str)> {
        if set == "all" && bucket == "all" {
            return Some(("all", "all"));
        }
        let s = BUCKET_SETS.iter().find(|s| s.name == set)?;
        let b = s.buckets.iter().find(|b| b.name == bucket)?;
        Some((s.name, b.name))
    };
    let mut out = Vec::new();
    for r in csv::Reader::from_reader(bytes).deserialize::<BucketRowOwned>() {
        let r = r.map_err(|e| e.to_string())?;
        let (set, bucket) = name_of(&r.set, &r.bucket)
            .ok_or_else(|| format!("unknown bucket {}/{}", r.set, r.bucket))?;
        out.push(BucketStats {
            set,
            bucket,
            lo_bytes: r.lo_bytes,
            hi_bytes: r.hi_bytes,
            flows: r.flows,
            completed: r.completed,
            fct_us_mean: r.fct_us_mean.unwrap_or(0.0),
            fct_us_p50: r.fct_us_p50.unwrap_or(0.0),
            fct_us_p99: r.fct_us_p99.unwrap_or(0.0),
            fct_us_p999: r.fct_us_p999.unwrap_or(0.0),
            fct_us_max: r.fct_us_max.unwrap_or(0.0),
            slowdown_mean: r.slowdown_mean.unwrap_or(0.0),
            slowdown_p50: r.slowdown_p50.unwrap_or(0.0),
            slowdown_p99: r.slowdown_p99.unwrap_or(0.0),
            slowdown_p999: r.slowdown_p999.unwrap_or(0.0),
        });
    }
    Ok(out)
}

/// Statistics for every bucket of [`BUCKET_SETS`], preceded by one row (`all`) over every
/// flow. Empty buckets are kept (with zero counts) so that files of different runs line up.
pub fn bucket_stats(flows: &[FlowSample]) -> Vec<BucketStats> {
    let mut s = FctStats::with_chunk(usize::MAX, None);
    for &f in flows {
        s.push(f);
    }
    s.finish().expect("nothing is written to disk").buckets
}

/// The rows of `buckets.csv`: `all`, then every bucket of every set.
fn bucket_rows() -> impl Iterator<Item = (&'static str, Bucket)> {
    std::iter::once(("all", Bucket::new("all", 0, None))).chain(
        BUCKET_SETS
            .iter()
            .flat_map(|s| s.buckets.iter().map(|&b| (s.name, b))),
    )
}

/// The tag bit of the summary's distributions: every measured flow that completed, whatever
/// its size. The bits below it are the rows of [`bucket_rows`].
const SUMMARY_BIT: u32 = 15;

/// FCT and slowdown statistics of measured flows given one at a time: by bucket
/// ([`bucket_stats`]'s rows) and over all of them, exact, in bounded memory. The values
/// go through an [`ExternalSort`], which holds a chunk of them and writes the rest to a
/// temporary file, and each distribution is read off the one sorted pass
/// ([`Ascending`]), so the figures are those of sorting every value in memory.
pub struct FctStats {
    flows: Vec<u64>,
    /// Completed flows per row, and (last) over all measured flows.
    completed: Vec<u64>,
    fct: ExternalSort,
    slowdown: ExternalSort,
}

/// What [`FctStats::finish`] gives.
#[derive(Clone, Debug)]
pub struct FctSummary {
    /// The rows of `buckets.csv`.
    pub buckets: Vec<BucketStats>,
    /// FCT of every measured flow that completed, µs.
    pub fct_us: Distribution,
    /// Slowdown of the same flows.
    pub slowdown: Distribution,
}

impl FctStats {
    /// Statistics that hold up to [`DEFAULT_CHUNK`] values of each kind in memory, and the
    /// rest in temporary files in `dir` (`None`: the system's temporary folder).
    pub fn new(dir: Option<PathBuf>) -> Self {
        Self::with_chunk(DEFAULT_CHUNK, dir)
    }

    /// [`FctStats::new`], holding up to `chunk` values of each kind in memory.
    pub fn with_chunk(chunk: usize, dir: Option<PathBuf>) -> Self {
        let rows = bucket_rows().count();
        assert!(rows <= SUMMARY_BIT as usize, "a tag bit per row");
        Self {
            flows: vec![0; rows],
            completed: vec![0; rows + 1],
            fct: ExternalSort::new(chunk, dir.clone()),
            slowdown: ExternalSort::new(chunk, dir),
        }
    }

    /// Adds one measured flow.
    pub fn push(&mut self, f: FlowSample) {
        let mut tag = 0u16;
        for (k, (_, b)) in bucket_rows().enumerate() {
            if b.contains(f.size_bytes) {
                tag |= 1 << k;
                self.flows[k] += 1;
            }
        }
        if let (Some(t), Some(s)) = (f.fct_us, f.slowdown) {
            tag |= 1 << SUMMARY_BIT;
            for (k, c) in self.completed.iter_mut().enumerate() {
                let bit = if k == self.flows.len() {
                    SUMMARY_BIT
                } else {
                    k as u32
                };
                *c += u64::from(tag >> bit & 1);
            }
            self.fct.push(t, tag);
            self.slowdown.push(s, tag);
        }
    }

    /// The statistics of the flows given.
    ///
    /// # Errors
    /// A temporary file could not be written or read.
    pub fn finish(mut self) -> io::Result<FctSummary> {
        let rows = self.flows.len();
        let bit = |k: usize| if k == rows { SUMMARY_BIT } else { k as u32 };
        let read = |s: &mut ExternalSort| -> io::Result<Vec<Distribution>> {
            let mut acc: Vec<Ascending> =
                self.completed.iter().map(|&n| Ascending::new(n)).collect();
            s.for_each_sorted(|v, tag| {
                for (k, a) in acc.iter_mut().enumerate() {
                    if tag >> bit(k) & 1 == 1 {
                        a.push(v);
                    }
                }
            })?;
            Ok(acc.iter().map(Ascending::finish).collect())
        };
        let fct = read(&mut self.fct)?;
        let sd = read(&mut self.slowdown)?;
        let buckets = bucket_rows()
            .enumerate()
            .map(|(k, (set, b))| BucketStats {
                set,
                bucket: b.name,
                lo_bytes: b.lo_bytes,
                hi_bytes: b.hi_bytes,
                flows: self.flows[k],
                completed: fct[k].count,
                fct_us_mean: fct[k].mean,
                fct_us_p50: fct[k].p50,
                fct_us_p99: fct[k].p99,
                fct_us_p999: fct[k].p999,
                fct_us_max: fct[k].max,
                slowdown_mean: sd[k].mean,
                slowdown_p50: sd[k].p50,
                slowdown_p99: sd[k].p99,
                slowdown_p999: sd[k].p999,
            })
            .collect();
        Ok(FctSummary {
            buckets,
            fct_us: fct[rows],
            slowdown: sd[rows],
        })
    }
}

/// Port statistics aggregated over one link tier, such as every ToR-to-aggregation port (a
/// row of `tiers.csv`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TierStats {
    /// `<tier>-><peer tier>`, e.g. `tor->agg`, `host->tor`.
    pub tier: String,
    /// Ports in the tier.
    pub ports: u64,
    /// Mean utilization over the ports.
    pub utilization_mean: f64,
    /// Highest utilization of a port.
    pub utilization_max: f64,
    /// Mean over the ports of the time-weighted average queue, bytes.
    pub avg_queue_bytes_mean: f64,
    /// Largest time-weighted average queue of a port, bytes.
    pub avg_queue_bytes_max: f64,
    /// Largest queue seen at any port of the tier, bytes.
    pub max_queue_bytes: u64,
    /// Largest data-only queue, bytes.
    pub max_data_queue_bytes: u64,
    /// Packets dropped.
    pub drops: u64,
    /// Data packets dropped.
    pub data_drops: u64,
    /// Credits dropped.
    pub credit_drops: u64,
    /// Packets CE-marked.
    pub ecn_marks: u64,
}

/// Aggregates port rows by `(tier, peer_tier)`, in order of first appearance.
pub fn tier_stats(ports: &[PortRow]) -> Vec<TierStats> {
    let mut out: Vec<TierStats> = Vec::new();
    for p in ports {
        let name = format!("{}->{}", p.tier, p.peer_tier);
        let i = match out.iter().position(|t| t.tier == name) {
            Some(i) => i,
            None => {
                out.push(TierStats {
                    tier: name,
                    ports: 0,
                    utilization_mean: 0.0,
                    utilization_max: 0.0,
                    avg_queue_bytes_mean: 0.0,
                    avg_queue_bytes_max: 0.0,
                    max_queue_bytes: 0,
                    max_data_queue_bytes: 0,
                    drops: 0,
                    data_drops: 0,
                    credit_drops: 0,
                    ecn_marks: 0,
                });
                out.len() - 1
            }
        };
        let t = &mut out[i];
        t.ports += 1;
        // Running sums; divided by the port count below.
        t.utilization_mean += p.utilization;
        t.utilization_max = t.utilization_max.max(p.utilization);
        t.avg_queue_bytes_mean += p.avg_queue_bytes;
        t.avg_queue_bytes_max = t.avg_queue_bytes_max.max(p.avg_queue_bytes);
        t.max_queue_bytes = t.max_queue_bytes.max(p.max_queue_bytes);
        t.max_data_queue_bytes = t.max_data_queue_bytes.max(p.max_data_queue_bytes);
        t.drops += p.drops;
        t.data_drops += p.data_drops;
        t.credit_drops += p.credit_drops;
        t.ecn_marks += p.ecn_marks;
    }
    for t in &mut out {
        t.utilization_mean /= t.ports as f64;
        t.avg_queue_bytes_mean /= t.ports as f64;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(size: u64, fct: Option<f64>) -> FlowSample {
        FlowSample {
            size_bytes: size,
            fct_us: fct,
            slowdown: fct.map(|t| t / 10.0),
        }
    }

    #[test]
    fn bucket_sets_partition_every_size() {
        for set in BUCKET_SETS {
            for size in [
                1,
                9_999,
                10_000,
                10_001,
                99_999,
                100_000,
                100_001,
                1_000_000,
                1_000_001,
                10_000_000,
                10_000_001,
                1 << 40,
            ] {
                let hits = set.buckets.iter().filter(|b| b.contains(size)).count();
                assert_eq!(hits, 1, "size {size} in set {}", set.name);
            }
        }
    }

    #[test]
    fn boundaries_are_inclusive_above() {
        let fine = BUCKET_SETS[0].buckets;
        assert!(fine[0].contains(10_000));
        assert!(fine[1].contains(10_001));
        assert!(fine[3].contains(1_000_001));
        assert!(!fine[2].contains(1_000_001));
    }

    #[test]
    fn buckets_count_unfinished_flows_but_take_statistics_of_completed_ones() {
        let flows = [
            flow(5_000, Some(10.0)),
            flow(8_000, Some(30.0)),
            flow(9_000, None),
            flow(50_000, Some(100.0)),
            flow(20_000_000, Some(20_000.0)),
        ];
        let rows = bucket_stats(&flows);
        let all = &rows[0];
        assert_eq!((all.set, all.flows, all.completed), ("all", 5, 4));
        let small = rows.iter().find(|r| r.bucket == "0-10KB").unwrap();
        assert_eq!((small.flows, small.completed), (3, 2));
        assert!((small.fct_us_mean - 20.0).abs() < 1e-12);
        assert!((small.slowdown_p99 - 3.0).abs() < 1e-12);
        let big = rows.iter().find(|r| r.bucket == "10MB+").unwrap();
        assert_eq!((big.flows, big.fct_us_max), (1, 20_000.0));
        let empty = rows.iter().find(|r| r.bucket == "100KB-1MB").unwrap();
        assert_eq!((empty.flows, empty.completed), (0, 0));
        // 1 + 4 fine + 3 coarse rows, always, so files of different runs line up.
        assert_eq!(rows.len(), 8);
    }

    /// Statistics fed through temporary files (chunks of 1, 7 and 1,000 values) are those
    /// of sorting every bucket's values in memory, bit for bit, with the summary's
    /// distributions over every completed flow.
    #[test]
    fn streamed_statistics_equal_sorting_in_memory() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let flows: Vec<FlowSample> = (0..5_000)
            .map(|_| {
                let size = 1 + next() % 30_000_000;
                let done = next() % 10 != 0;
                let fct = (next() % 1_000_000) as f64 / 3.0;
                FlowSample {
                    size_bytes: size,
                    fct_us: done.then_some(fct),
                    slowdown: done.then_some(1.0 + fct / 1e4),
                }
            })
            .collect();
        let reference = |b: Bucket| {
            let mine = flows.iter().filter(|f| b.contains(f.size_bytes));
            let (mut t, mut s): (Vec<f64>, Vec<f64>) = mine
                .clone()
                .filter_map(|f| f.fct_us.zip(f.slowdown))
                .unzip();
            (
                mine.count() as u64,
                Distribution::of(&mut t),
                Distribution::of(&mut s),
            )
        };
        for chunk in [1, 7, 1_000, usize::MAX] {
            let mut st = FctStats::with_chunk(chunk, None);
            for &f in &flows {
                st.push(f);
            }
            let got = st.finish().unwrap();
            for (row, (_, b)) in got.buckets.iter().zip(bucket_rows()) {
                let (n, t, s) = reference(b);
                let bits = |v: [f64; 5]| v.map(f64::to_bits);
                assert_eq!((row.flows, row.completed), (n, t.count), "{}", b.name);
                assert_eq!(
                    bits([
                        row.fct_us_mean,
                        row.fct_us_p50,
                        row.fct_us_p99,
                        row.fct_us_p999,
                        row.fct_us_max
                    ]),
                    bits([t.mean, t.p50, t.p99, t.p999, t.max]),
                    "{} chunk {chunk}",
                    b.name
                );
                assert_eq!(
                    bits([
                        row.slowdown_mean,
                        row.slowdown_p50,
                        row.slowdown_p99,
                        row.slowdown_p999,
                        0.0
                    ]),
                    bits([s.mean, s.p50, s.p99, s.p999, 0.0]),
                    "{} chunk {chunk}",
                    b.name
                );
            }
            let (mut t, mut s): (Vec<f64>, Vec<f64>) = flows
                .iter()
                .filter_map(|f| f.fct_us.zip(f.slowdown))
                .unzip();
            assert_eq!(got.fct_us, Distribution::of(&mut t));
            assert_eq!(got.slowdown, Distribution::of(&mut s));
        }
    }

    #[test]
    fn tiers_aggregate_by_direction() {
        let port = |tier: &str, peer: &str, util: f64, q: u64| PortRow {
            port: 0,
            node: "n".into(),
            peer: "p".into(),
            label: "n->p".into(),
            tier: tier.into(),
            peer_tier: peer.into(),
            rate_gbps: 10.0,
            tx_pkts: 0,
            tx_bytes: 0,
            tx_data_bytes: 0,
            utilization: util,
            max_queue_bytes: q,
            max_data_queue_bytes: q,
            max_credit_queue_bytes: 0,
            avg_queue_bytes: q as f64 / 2.0,
            drops: 1,
            data_drops: 1,
            control_drops: 0,
            credit_drops: 0,
            aqm_drops: 0,
            ecn_marks: 2,
        };
        let ports = [
            port("tor", "agg", 0.5, 100),
            port("agg", "tor", 0.2, 50),
            port("tor", "agg", 0.7, 300),
        ];
        let t = tier_stats(&ports);
        assert_eq!(t.len(), 2);
        assert_eq!((t[0].tier.as_str(), t[0].ports), ("tor->agg", 2));
        assert!((t[0].utilization_mean - 0.6).abs() < 1e-12);
        assert_eq!(
            (t[0].max_queue_bytes, t[0].drops, t[0].ecn_marks),
            (300, 2, 4)
        );
        assert!((t[0].avg_queue_bytes_mean - 100.0).abs() < 1e-12);
        assert_eq!(t[1].tier, "agg->tor");
    }
}
