//! Results of a run: the rows of flows.csv, ports.csv and timeseries.csv and the summary,
//! and writing them atomically. Schemas are documented in `docs/output.md`.

use std::fs;
use std::io;
use std::path::Path;
use std::sync::OnceLock;

use dcsim_engine::Time;
use dcsim_metrics::analysis::{
    BucketStats, FctStats, FctSummary, FlowSample, TierStats, tier_stats,
};
use dcsim_metrics::{
    Body, Counters, EventRow, FlowRow, Fnv, PortRow, SampleRow, commit_files, jain, to_csv,
};
use dcsim_net::{Class, PortId};
use dcsim_transport::TransportSpec;
use serde_json::{Value, json};

use crate::samplers::port_label;
use crate::world::{RunStats, World};

/// Everything a run produced.
pub struct Results {
    /// One row per port (both directions of every link), counters over the window.
    pub ports: Vec<PortRow>,
    /// FCT and slowdown of the measured flows by size bucket (`buckets.csv`).
    pub buckets: Vec<BucketStats>,
    /// Port statistics by link tier (`tiers.csv`).
    pub tiers: Vec<TierStats>,
    /// summary.json.
    pub summary: Value,
    /// flows.csv: written to a temporary file as the rows were made, or the file read
    /// back; or why it could not be written.
    flows_csv: io::Result<fs::File>,
    /// Its rows, read from it when first asked for ([`Results::flows`]).
    flows: OnceLock<Vec<FlowRow>>,
    ports_csv: Vec<u8>,
    /// timeseries.csv if sampled: spilled to disk during the run, or the file read back;
    /// or why it could not be written.
    timeseries: Option<io::Result<fs::File>>,
    buckets_csv: Vec<u8>,
    tiers_csv: Vec<u8>,
    /// The packet traces (`[output.trace]`): file name, and the file written during the
    /// run or why it could not be.
    traces: Vec<(String, io::Result<fs::File>)>,
    /// events.csv if the run logged flows (`[output.events]`), like `timeseries`.
    events: Option<io::Result<fs::File>>,
}

/// A file written during the run, or why it could not be written (the error is kept for
/// every reader, so each gets a copy).
fn spilled(file: &io::Result<fs::File>) -> io::Result<&fs::File> {
    file.as_ref()
        .map_err(|e| io::Error::new(e.kind(), e.to_string()))
}

/// The rows of a file written during the run (timeseries.csv, events.csv).
fn read_rows<T: serde::de::DeserializeOwned>(
    file: Option<&fs::File>,
    name: &str,
) -> io::Result<Option<Vec<T>>> {
    let Some(f) = file else {
        return Ok(None);
    };
    csv::Reader::from_reader(Body::File(f).reader())
        .deserialize()
        .collect::<Result<Vec<T>, _>>()
        .map(Some)
        .map_err(|e| io::Error::other(format!("{name}: {e}")))
}

const FLOW_HEADER: &[&str] = &[
    "flow_id",
    "src",
    "dst",
    "transport",
    "size_bytes",
    "start_ns",
    "end_ns",
    "fct_ns",
    "unloaded_fct_ns",
    "slowdown",
    "delivered_bytes",
    "window_goodput_gbps",
    "retransmits",
    "measured",
];
const PORT_HEADER: &[&str] = &[
    "port",
    "node",
    "peer",
    "label",
    "tier",
    "peer_tier",
    "rate_gbps",
    "tx_pkts",
    "tx_bytes",
    "tx_data_bytes",
    "utilization",
    "max_queue_bytes",
    "max_data_queue_bytes",
    "max_credit_queue_bytes",
    "avg_queue_bytes",
    "drops",
    "data_drops",
    "control_drops",
    "credit_drops",
    "aqm_drops",
    "ecn_marks",
];
const BUCKET_HEADER: &[&str] = &[
    "set",
    "bucket",
    "lo_bytes",
    "hi_bytes",
    "flows",
    "completed",
    "fct_us_mean",
    "fct_us_p50",
    "fct_us_p99",
    "fct_us_p999",
    "fct_us_max",
    "slowdown_mean",
    "slowdown_p50",
    "slowdown_p99",
    "slowdown_p999",
];
const TIER_HEADER: &[&str] = &[
    "tier",
    "ports",
    "utilization_mean",
    "utilization_max",
    "avg_queue_bytes_mean",
    "avg_queue_bytes_max",
    "max_queue_bytes",
    "max_data_queue_bytes",
    "drops",
    "data_drops",
    "credit_drops",
    "ecn_marks",
];

impl Results {
    /// Collects the results of a world that has run.
    ///
    /// # Panics
    /// If the world has not run.
    pub fn collect(world: &mut World) -> Self {
        let stats: RunStats = world.stats.expect("Results::collect before World::run");
        let end = stats.sim_end;
        let win = world.window.start;
        let win_secs = end.saturating_since(win).as_secs_f64();
        let spill_dir = world.spill_dir.clone();
        let mut fct_stats = FctStats::new(spill_dir.clone());
        let mut flows_measured = 0u64;
        let (from, until) = measured_window(world);
        let mut long_lived = Vec::new();
        let transports = world.flows.transports().to_vec();
        let columns = counter_columns(&transports);
        let mut csv_out = FlowsCsv::new(spill_dir.as_deref(), &columns);
        let mut totals: serde_json::Map<String, Value> = serde_json::Map::new();
        let flow_base = &world.window.flow_base;
        let read = world.flows.for_each_record(|f, spec, rec| {
            let i = f.index();
            let fct = rec.end.map(|e| e - spec.start);
            let slowdown = match (fct, rec.unloaded_fct) {
                (Some(a), Some(b)) if b.as_ps() > 0 => Some(a.as_ps() as f64 / b.as_ps() as f64),
                _ => None,
            };
            let in_window = rec
                .delivered_bytes
                .saturating_sub(flow_base.get(i).copied().unwrap_or(0));
            let span = end.saturating_since(win.max(spec.start)).as_secs_f64();
            let goodput = if span > 0.0 {
                in_window as f64 * 8.0 / span / 1e9
            } else {
                0.0
            };
            let measured = spec.start >= from && spec.start < until;
            if measured && let Some(size) = spec.size_bytes {
                flows_measured += 1;
                fct_stats.push(FlowSample {
                    size_bytes: size,
                    fct_us: fct.map(|d| d.as_us_f64()),
                    slowdown,
                });
            }
            if spec.size_bytes.is_none() && spec.start <= win && spec.stop.is_none_or(|s| s >= end)
            {
                long_lived.push(goodput);
            }
            let transport = &transports[spec.transport as usize];
            let mut counters = Counters::with_capacity(transport.flow_counters().len());
            for (k, &name) in transport.flow_counters().iter().enumerate() {
                let v = rec.counters[k];
                counters.insert(name, v);
                let total = totals
                    .entry(transport.name())
                    .or_insert_with(|| Value::Object(serde_json::Map::new()));
                if let Value::Object(m) = total {
                    let t = m.entry(name).or_insert(Value::from(0u64));
                    *t = Value::from(t.as_u64().unwrap_or(0) + v);
                }
            }
            csv_out.push(
                &FlowRow {
                    flow_id: f.0,
                    src: spec.src.0,
                    dst: spec.dst.0,
                    transport: transport.label().to_string(),
                    size_bytes: spec.size_bytes.or(rec.sent_bytes_at_stop),
                    start_ns: spec.start.as_ns(),
                    end_ns: rec.end.map(|e| e.as_ns()),
                    fct_ns: fct.map(|d| d.as_ns()),
                    unloaded_fct_ns: rec.unloaded_fct.map(|d| d.as_ns()),
                    slowdown,
                    delivered_bytes: rec.delivered_bytes,
                    window_goodput_gbps: goodput,
                    retransmits: rec.retransmits,
                    measured,
                    counters,
                },
                transport.name(),
            );
        });
        let (mut flows_csv, mut dig) = csv_out.finish();
        if let Err(e) = read {
            flows_csv = Err(e);
        }
        let FctSummary {
            buckets,
            fct_us: fct,
            slowdown: sd,
        } = fct_stats.finish().unwrap_or_else(|e| {
            flows_csv = Err(e);
            FctStats::new(None).finish().expect("no flows, no files")
        });
        let net = &mut world.net;
        let mut port_rows = Vec::with_capacity(net.ports().len());
        let (mut drops_total, mut data_drops_total, mut marks_total) = (0u64, 0u64, 0u64);
        let mut credit_drops_total = 0u64;
        let mut max_switch_queue = 0u64;
        for i in 0..net.ports().len() {
            let pid = PortId::new(i);
            net.port_mut(pid).settle(end, &mut world.pool);
            let port = net.port(pid);
            let all = *port.stats();
            drops_total += all.drops_total();
            data_drops_total += all.drops[Class::Data as usize];
            credit_drops_total += all.drops[Class::Credit as usize];
            marks_total += all.ecn_marks;
            let s = all.since(&world.window.port_base[i]);
            let rate = port.rate();
            let util = if win_secs > 0.0 {
                s.tx_bytes_total() as f64 * 8.0 / (rate.bps() as f64 * win_secs)
            } else {
                0.0
            };
            let avg_q = if win_secs > 0.0 {
                s.backlog_area as f64 / end.saturating_since(win).as_ps() as f64
            } else {
                0.0
            };
            if net.is_switch(port.node()) {
                max_switch_queue = max_switch_queue.max(s.max_backlog_bytes);
            }
            port_rows.push(PortRow {
                port: pid.0,
                node: net.node_name(port.node()).to_string(),
                peer: net.node_name(port.peer_node()).to_string(),
                label: port_label(net, pid),
                tier: net.node_tier(port.node()).to_string(),
                peer_tier: net.node_tier(port.peer_node()).to_string(),
                rate_gbps: rate.gbps_f64(),
                tx_pkts: s.tx_pkts,
                tx_bytes: s.tx_bytes_total(),
                tx_data_bytes: s.tx_bytes[Class::Data as usize],
                utilization: util,
                max_queue_bytes: s.max_backlog_bytes,
                max_data_queue_bytes: s.max_class_backlog_bytes[Class::Data as usize],
                max_credit_queue_bytes: s.max_class_backlog_bytes[Class::Credit as usize],
                avg_queue_bytes: avg_q,
                drops: s.drops_total(),
                data_drops: s.drops[Class::Data as usize],
                control_drops: s.drops[Class::Control as usize],
                credit_drops: s.drops[Class::Credit as usize],
                aqm_drops: s.aqm_drops,
                ecn_marks: s.ecn_marks,
            });
        }
        let incast_notification = ein_summary(&world.net);
        let tiers = tier_stats(&port_rows);
        let occupancy = queue_occupancy(world);
        let buckets_csv = to_csv(&buckets, BUCKET_HEADER).expect("in-memory CSV cannot fail");
        let tiers_csv = to_csv(&tiers, TIER_HEADER).expect("in-memory CSV cannot fail");
        let mut timeseries = world.sampler.as_mut().map(|s| s.spill.finish());
        let event_summary = world
            .event_log
            .as_ref()
            .map(|e| json!({ "rows": e.rows(), "rows_over_max_rows": e.rows_over }));
        let mut events = world.event_log.as_mut().map(|e| e.spill.finish());
        let traces = match world.tracer.as_mut() {
            Some(t) => t.finish(&mut world.net, &world.flows),
            None => Vec::new(),
        };
        let ports_csv = to_csv(&port_rows, PORT_HEADER).expect("in-memory CSV cannot fail");
        dig.update(&ports_csv);
        if let Some(Ok(f)) = &timeseries
            && let Err(e) = Body::File(f).for_each_chunk(|c| {
                dig.update(c);
                Ok(())
            })
        {
            timeseries = Some(Err(e));
        }
        if let Some(Ok(f)) = &events
            && let Err(e) = Body::File(f).for_each_chunk(|c| {
                dig.update(c);
                Ok(())
            })
        {
            events = Some(Err(e));
        }
        dig.update(&buckets_csv);
        dig.update(&tiers_csv);
        // A file that could not be written has no digest (its error comes with the write).
        let failed = flows_csv.is_err()
            || matches!(timeseries, Some(Err(_)))
            || matches!(events, Some(Err(_)));
        let dig = (!failed).then(|| format!("{:016x}", dig.finish()));
        let packet_traces = world.tracer.as_ref().map(|t| {
            t.files
                .iter()
                .map(|f| {
                    json!({
                        "file": f.name,
                        "packets": f.packets,
                        "bytes": f.bytes,
                        "packets_over_max_bytes": f.over_limit,
                    })
                })
                .collect::<Vec<_>>()
        });
        let pool = &world.pool;
        let mut summary = json!({
            "schema_version": dcsim_metrics::OUTPUT_SCHEMA_VERSION,
            "scenario": world.scenario.name,
            "seed": world.scenario.spec.sim.seed,
            "dcsim_version": env!("CARGO_PKG_VERSION"),
            "sim_time_ns": end.as_ns(),
            "window_start_ns": win.as_ns(),
            "wall_seconds": stats.wall_seconds,
            "events_per_second": if stats.wall_seconds > 0.0 { stats.events as f64 / stats.wall_seconds } else { 0.0 },
            "events": stats.events,
            "packet_hops": stats.packet_hops,
            "packets_created": pool.allocated(),
            "packets_delivered": world.flows.delivered_pkts() + world.services.packets_delivered(),
            "packets_dropped": drops_total,
            "packets_in_network": pool.live(),
            "data_drops": data_drops_total,
            "credit_drops": credit_drops_total,
            "by_transport": totals,
            "ecn_marks": marks_total,
            "flows_total": world.flows.len(),
            "flows_completed": world.flows.completed(),
            "flows_measured": flows_measured,
            "measured_start_ns": from.as_ns(),
            "measured_end_ns": (until != Time::MAX).then(|| until.as_ns()),
            "fct_us": fct,
            "slowdown": sd,
            "fct_buckets": buckets.iter().map(|b| (b.bucket.to_string(), serde_json::to_value(b).unwrap_or(Value::Null))).collect::<serde_json::Map<_, _>>(),
            "max_queue_bytes": max_switch_queue,
            "tiers": tiers.iter().map(|t| (t.tier.clone(), serde_json::to_value(t).unwrap_or(Value::Null))).collect::<serde_json::Map<_, _>>(),
            "long_lived_flows": long_lived.len(),
            "jain_fairness": jain(&long_lived),
            "scheduler": stats.sched,
            "stale_timers": world.flows.stale_timers(),
        });
        // The control-plane services' figures, each under its key (null if it did not run).
        let m = summary.as_object_mut().expect("an object");
        m.extend(
            world
                .services
                .summary(&world.net, &world.flows)
                .into_iter()
                .map(|(k, v)| (k.to_string(), v)),
        );
        let rest = json!({
            // Time-weighted queue-length percentiles per switch tier (output.queue_occupancy).
            "queue_occupancy": occupancy,
            // Pulser's EIN ports: notifications and time in the incast state, per port that
            // signalled (null without EIN ports).
            "incast_notification": incast_notification,
            // Packet traces (output.trace): packets written, and left out at max_bytes.
            "packet_traces": packet_traces,
            // The per-flow event log (output.events): rows written, and left out at max_rows.
            "event_log": event_summary,
            "peak_packets": pool.capacity_used(),
            // How the run used memory (not a result: it depends on the process, like
            // wall_seconds): the process's peak resident memory so far, and the flows that
            // left the flow table when they finished.
            "memory": {
                "peak_rss_bytes": peak_rss_bytes(),
                "flows_left_table": world.flows.retired(),
            },
            "digest": dig,
            "workload": world.sources.iter().map(|(s, _)| {
                let mut v = serde_json::to_value(s.info()).unwrap_or(Value::Null);
                if let Value::Object(m) = &mut v {
                    m.insert("flows_generated".into(), Value::from(s.emitted()));
                }
                v
            }).collect::<Vec<_>>(),
            "resolved_scenario": serde_json::to_value(&world.scenario.spec).unwrap_or(Value::Null),
        });
        if let Value::Object(rest) = rest {
            m.extend(rest);
        }
        Self {
            flows: OnceLock::new(),
            ports: port_rows,
            buckets,
            tiers,
            summary,
            flows_csv,
            ports_csv,
            timeseries,
            buckets_csv,
            tiers_csv,
            traces,
            events,
        }
    }

    /// Writes flows.csv, ports.csv, buckets.csv, tiers.csv, timeseries.csv (if sampled)
    /// and summary.json as the whole content of `dir`, with a manifest, so that `dir` is
    /// always either the complete old folder or the complete new one
    /// ([`dcsim_metrics::commit_dir`]): an existing folder is replaced whole.
    pub fn write(&self, dir: &Path) -> io::Result<()> {
        self.write_with(dir, &[])
    }

    /// [`Results::write`], with more files (name, bytes) that belong to the run, such as
    /// the scenario that produced it.
    pub fn write_with(&self, dir: &Path, extra: &[(&str, &[u8])]) -> io::Result<()> {
        let js = self.summary_json()?;
        let mut files: Vec<(&str, Body<'_>)> =
            extra.iter().map(|&(n, b)| (n, Body::Bytes(b))).collect();
        files.extend(self.files_with(None, &js)?);
        commit_files(dir, &files)
    }

    /// Reads the results a run wrote into `dir` (see [`Results::write`]): the rows, the
    /// summary and the bytes of each file, exactly as written. Used to reuse complete runs
    /// of an experiment instead of running them again.
    ///
    /// # Errors
    /// A missing or malformed file (summary.json missing means the run is incomplete).
    pub fn load(dir: &Path) -> io::Result<Self> {
        let read = |name: &str| fs::read(dir.join(name));
        let bad = |name: &str, e: &dyn std::fmt::Display| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{}: {e}", dir.join(name).display()),
            )
        };
        let summary: Value =
            serde_json::from_slice(&read("summary.json")?).map_err(|e| bad("summary.json", &e))?;
        if !dir.join("flows.csv").exists() && dir.join("flows.parquet").exists() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "{} holds Parquet files only (--format parquet); this reads the CSV \
                     files: write the run with --format both or csv",
                    dir.display()
                ),
            ));
        }
        fn rows<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<Vec<T>, csv::Error> {
            csv::Reader::from_reader(bytes).deserialize().collect()
        }
        let flows_csv = fs::File::open(dir.join("flows.csv"))?;
        let flows =
            read_flows(Body::File(&flows_csv).reader()).map_err(|e| bad("flows.csv", &e))?;
        let ports_csv = read("ports.csv")?;
        let buckets_csv = read("buckets.csv")?;
        let tiers_csv = read("tiers.csv")?;
        let open = |name: &str| match fs::File::open(dir.join(name)) {
            Ok(f) => Ok(Some(Ok(f))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        };
        let timeseries = open("timeseries.csv")?;
        let events = open("events.csv")?;
        Ok(Self {
            flows: OnceLock::from(flows),
            ports: rows(&ports_csv).map_err(|e| bad("ports.csv", &e))?,
            buckets: dcsim_metrics::analysis::read_bucket_csv(&buckets_csv)
                .map_err(|e| bad("buckets.csv", &e))?,
            tiers: rows(&tiers_csv).map_err(|e| bad("tiers.csv", &e))?,
            summary,
            flows_csv: Ok(flows_csv),
            ports_csv,
            timeseries,
            buckets_csv,
            tiers_csv,
            traces: Vec::new(),
            events,
        })
    }

    /// The per-transport counter columns of `flows.csv`, in file order (after
    /// `measured`): read off the file's header, so they are exactly the written ones.
    pub fn flow_counter_columns(&self) -> Vec<String> {
        let Ok(f) = &self.flows_csv else {
            return Vec::new();
        };
        let mut header = String::new();
        // The first line only: a header of well under a kilobyte.
        let _ =
            io::BufRead::read_line(&mut io::BufReader::new(Body::File(f).reader()), &mut header);
        header
            .trim_end()
            .split(',')
            .filter(|c| !c.is_empty() && !FLOW_HEADER.contains(c))
            .map(str::to_string)
            .collect()
    }

    /// The rows of flows.csv, read from its file when first asked for (a run holds no row
    /// until then, so that runs of any number of flows fit in memory; asking for the rows
    /// of a run of millions of flows costs about 200 B a flow).
    ///
    /// # Errors
    /// flows.csv could not be written during the run, or read back.
    pub fn flows(&self) -> io::Result<&[FlowRow]> {
        if let Some(rows) = self.flows.get() {
            return Ok(rows);
        }
        let f = spilled(&self.flows_csv)?;
        let rows = read_flows(Body::File(f).reader())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("flows.csv: {e}")))?;
        Ok(self.flows.get_or_init(|| rows))
    }

    /// The rows of flows.csv handed to `f` in order, at most `n` at a time, without holding
    /// more than `n` (unless [`Results::flows`] has already read them all): for writers
    /// that stream, such as Parquet's.
    ///
    /// # Errors
    /// flows.csv could not be written during the run or read back, or `f`'s error.
    pub fn for_each_flow_chunk(
        &self,
        n: usize,
        mut f: impl FnMut(&[FlowRow]) -> io::Result<()>,
    ) -> io::Result<()> {
        let n = n.max(1);
        if let Some(rows) = self.flows.get() {
            return rows.chunks(n).try_for_each(f);
        }
        let file = spilled(&self.flows_csv)?;
        let mut failed = None;
        let read = read_flow_chunks(Body::File(file).reader(), n, |rows| {
            f(rows).map_err(|e| {
                failed = Some(e);
                csv::Error::from(io::Error::other("stopped"))
            })
        });
        match (failed, read) {
            (Some(e), _) => Err(e),
            (None, Err(e)) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("flows.csv: {e}"),
            )),
            (None, Ok(())) => Ok(()),
        }
    }

    /// The files a run writes, as (name, content), summary.json last: the CSV files, or
    /// the files given instead of them (`dcsim run --format parquet`).
    ///
    /// # Errors
    /// The time series could not be written to its temporary file during the run.
    pub fn files_with<'a>(
        &'a self,
        tables: Option<&'a [(&'a str, Body<'a>)]>,
        summary: &'a [u8],
    ) -> io::Result<Vec<(&'a str, Body<'a>)>> {
        let mut files: Vec<(&str, Body<'_>)> = match tables {
            Some(t) => t.to_vec(),
            None => {
                let mut f = vec![
                    ("flows.csv", Body::File(spilled(&self.flows_csv)?)),
                    ("ports.csv", Body::Bytes(&self.ports_csv)),
                    ("buckets.csv", Body::Bytes(&self.buckets_csv)),
                    ("tiers.csv", Body::Bytes(&self.tiers_csv)),
                ];
                if let Some(t) = self.timeseries_file()? {
                    f.push(("timeseries.csv", Body::File(t)));
                }
                f
            }
        };
        // The event log as CSV unless the tables given hold it.
        let events_given = tables.is_some_and(|t| t.iter().any(|(n, _)| *n == "events.parquet"));
        if !events_given && let Some(f) = self.events_file()? {
            files.push(("events.csv", Body::File(f)));
        }
        for (name, f) in &self.traces {
            files.push((name.as_str(), Body::File(spilled(f)?)));
        }
        files.push(("summary.json", Body::Bytes(summary)));
        Ok(files)
    }

    /// timeseries.csv, if the run sampled (an open file, read by position).
    ///
    /// # Errors
    /// The time series could not be written to its temporary file during the run.
    pub fn timeseries_file(&self) -> io::Result<Option<&fs::File>> {
        self.timeseries.as_ref().map(spilled).transpose()
    }

    /// The rows of timeseries.csv, read from disk (they are not kept in memory: a time
    /// series can be larger than memory), or `None` if the run did not sample.
    ///
    /// # Errors
    /// The file could not be written or read back.
    pub fn samples(&self) -> io::Result<Option<Vec<SampleRow>>> {
        read_rows(self.timeseries_file()?, "timeseries.csv")
    }

    /// events.csv, if the run logged flows (an open file, read by position).
    ///
    /// # Errors
    /// The log could not be written to its temporary file during the run.
    pub fn events_file(&self) -> io::Result<Option<&fs::File>> {
        self.events.as_ref().map(spilled).transpose()
    }

    /// The rows of events.csv (the long form of timeseries.csv, `id` a flow number),
    /// read from disk, or `None` if the run logged no flow.
    ///
    /// # Errors
    /// The file could not be written or read back.
    pub fn events(&self) -> io::Result<Option<Vec<EventRow>>> {
        read_rows(self.events_file()?, "events.csv")
    }

    /// summary.json as written: pretty JSON with a final newline.
    pub fn summary_json(&self) -> io::Result<Vec<u8>> {
        let mut js = serde_json::to_vec_pretty(&self.summary).map_err(io::Error::other)?;
        js.push(b'\n');
        Ok(js)
    }

    /// The digest of the CSV outputs (equal digests mean byte-identical CSV files).
    pub fn digest(&self) -> &str {
        self.summary["digest"].as_str().unwrap_or("")
    }

    /// A few lines for the terminal.
    pub fn brief(&self) -> String {
        let s = &self.summary;
        let mut out = format!(
            "{}: {} flows ({} completed), {} events, {} packet-hops in {:.2} s wall ({:.1} M events/s)\n",
            s["scenario"].as_str().unwrap_or("?"),
            s["flows_total"],
            s["flows_completed"],
            s["events"],
            s["packet_hops"],
            s["wall_seconds"].as_f64().unwrap_or(0.0),
            s["events_per_second"].as_f64().unwrap_or(0.0) / 1e6,
        );
        if s["fct_us"]["count"].as_u64().unwrap_or(0) > 0 {
            out += &format!(
                "  FCT µs: mean {:.1}  p50 {:.1}  p99 {:.1}  max {:.1};  slowdown mean {:.2}  p99 {:.2}\n",
                s["fct_us"]["mean"].as_f64().unwrap_or(0.0),
                s["fct_us"]["p50"].as_f64().unwrap_or(0.0),
                s["fct_us"]["p99"].as_f64().unwrap_or(0.0),
                s["fct_us"]["max"].as_f64().unwrap_or(0.0),
                s["slowdown"]["mean"].as_f64().unwrap_or(0.0),
                s["slowdown"]["p99"].as_f64().unwrap_or(0.0),
            );
        }
        out += &format!(
            "  drops {} (data {}), ECN marks {}, max switch queue {} B",
            s["packets_dropped"], s["data_drops"], s["ecn_marks"], s["max_queue_bytes"]
        );
        if let Some(j) = s["jain_fairness"].as_f64() {
            out += &format!(
                ", Jain fairness of {} long-lived flows {:.4}",
                s["long_lived_flows"], j
            );
        }
        // The load each tier carried (what a load definition asked for is the generator's
        // line of `dcsim check`): ToR uplinks at 0.45 where 0.6 was asked shows flows that
        // stayed in their rack.
        if !self.tiers.is_empty() {
            let tiers: Vec<String> = self
                .tiers
                .iter()
                .map(|t| format!("{} {:.2}", t.tier, t.utilization_mean))
                .collect();
            out += &format!(
                "\n  realised load per tier (mean utilization): {}",
                tiers.join(", ")
            );
        }
        out
    }

    /// The busiest switch ports (by window utilization) as a small table.
    pub fn port_table(&self, n: usize) -> String {
        let mut rows: Vec<&PortRow> = self.ports.iter().filter(|p| p.tier != "host").collect();
        rows.sort_by(|a, b| {
            b.utilization
                .total_cmp(&a.utilization)
                .then(a.port.cmp(&b.port))
        });
        let body: Vec<Vec<String>> = rows
            .into_iter()
            .take(n)
            .map(|p| {
                vec![
                    format!("{}->{}", p.node, p.peer),
                    format!("{:.1}%", p.utilization * 100.0),
                    format!("{:.0}", p.avg_queue_bytes),
                    p.max_queue_bytes.to_string(),
                    p.drops.to_string(),
                    p.ecn_marks.to_string(),
                ]
            })
            .collect();
        let header = ["port", "util", "avg_q_B", "max_q_B", "drops", "ecn_marks"];
        dcsim_metrics::text_table(&header, &body, |i| i > 0)
    }
}

/// What the EIN ports did over the whole run (warm-up included): per port that entered
/// the incast state, its notifications, episodes and time in the state; null without EIN
/// ports.
fn ein_summary(net: &dcsim_net::Network) -> Value {
    let mut ports = Vec::new();
    let (mut any, mut notified) = (false, 0u64);
    for (i, port) in net.ports().iter().enumerate() {
        let dcsim_net::qdisc::Qdisc::Ein(e) = port.qdisc() else {
            continue;
        };
        any = true;
        let s = e.stats();
        notified += s.notified;
        if s.episodes > 0 {
            ports.push(json!({
                "port": port_label(net, PortId::new(i)),
                "notified": s.notified,
                "episodes": s.episodes,
                "incast_ms": s.incast_time.as_secs_f64() * 1e3,
            }));
        }
    }
    if !any {
        return Value::Null;
    }
    json!({ "notified": notified, "ports_signalling": ports.len(), "ports": ports })
}

/// The per-transport counter columns of `flows.csv`, as (transport kind, counter): the
/// counters of every registered transport the run uses, in registration order.
fn counter_columns(transports: &[TransportSpec]) -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    for kind in TransportSpec::KINDS {
        if let Some(t) = transports.iter().find(|t| t.name() == kind.name) {
            out.extend(t.flow_counters().iter().map(|&c| (kind.name, c)));
        }
    }
    out
}

/// `flows.csv` as its rows are made: the fixed columns, then one column per transport
/// counter, filled for the flows of that transport; written to a temporary file (so no run
/// holds its rows) and hashed as it goes, for the digest.
struct FlowsCsv<'a> {
    w: io::Result<csv::Writer<Hashing<io::BufWriter<fs::File>>>>,
    columns: &'a [(&'static str, &'static str)],
    cells: Vec<Option<u64>>,
}

/// A writer that hashes what goes through it.
struct Hashing<W> {
    inner: W,
    hash: Fnv,
}

impl<W: io::Write> io::Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

fn csv_io(e: csv::Error) -> io::Error {
    match e.into_kind() {
        csv::ErrorKind::Io(e) => e,
        k => io::Error::other(format!("flows.csv: {k:?}")),
    }
}

impl<'a> FlowsCsv<'a> {
    fn new(dir: Option<&Path>, columns: &'a [(&'static str, &'static str)]) -> Self {
        let w = match dir {
            Some(d) => tempfile::tempfile_in(d),
            None => tempfile::tempfile(),
        }
        .map_err(|e| {
            let place = dir.map_or_else(std::env::temp_dir, Path::to_path_buf);
            io::Error::new(
                e.kind(),
                format!(
                    "flows.csv: cannot create a temporary file in {}: {e}",
                    place.display()
                ),
            )
        })
        .and_then(|f| {
            let mut w = csv::WriterBuilder::new()
                .has_headers(false)
                .from_writer(Hashing {
                    inner: io::BufWriter::with_capacity(1 << 16, f),
                    hash: Fnv::default(),
                });
            let header = FLOW_HEADER
                .iter()
                .copied()
                .chain(columns.iter().map(|c| c.1));
            w.write_record(header).map_err(csv_io)?;
            Ok(w)
        });
        Self {
            w,
            columns,
            cells: Vec::with_capacity(columns.len()),
        }
    }

    /// Writes the row of a flow of transport kind `kind`.
    fn push(&mut self, r: &FlowRow, kind: &str) {
        let Ok(w) = &mut self.w else { return };
        self.cells.clear();
        self.cells.extend(self.columns.iter().map(|&(k, name)| {
            if k == kind {
                r.counters.get(name)
            } else {
                None
            }
        }));
        if let Err(e) = w.serialize((r, &self.cells)) {
            self.w = Err(csv_io(e));
        }
    }

    /// The written file, and the hash of its bytes (to be continued with the other files).
    fn finish(self) -> (io::Result<fs::File>, Fnv) {
        let w = match self.w {
            Ok(w) => w,
            Err(e) => return (Err(e), Fnv::default()),
        };
        let h = match w.into_inner() {
            Ok(h) => h,
            Err(e) => return (Err(io::Error::other(e.to_string())), Fnv::default()),
        };
        let hash = h.hash;
        (h.inner.into_inner().map_err(|e| e.into_error()), hash)
    }
}

/// Fixed columns of flows.csv under their former names, read into the rows as their
/// present ones (`FlowRow`'s serde aliases), not as counters.
const RENAMED_FLOW_COLUMNS: &[&str] = &["ideal_fct_ns"];

/// Reads `flows.csv` back: the fixed columns into the rows, the others into their
/// counters (an empty cell is a counter of another transport).
fn read_flows(file: impl io::Read) -> Result<Vec<FlowRow>, csv::Error> {
    let mut rows = Vec::new();
    read_flow_chunks(file, usize::MAX, |chunk| {
        rows.append(chunk);
        Ok(())
    })?;
    Ok(rows)
}

/// [`read_flows`] in chunks of at most `n` rows, each handed to `f` (which may take them).
fn read_flow_chunks(
    file: impl io::Read,
    n: usize,
    mut f: impl FnMut(&mut Vec<FlowRow>) -> Result<(), csv::Error>,
) -> Result<(), csv::Error> {
    let mut r = csv::Reader::from_reader(file);
    let header = r.headers()?.clone();
    let extra: Vec<(usize, &str)> = header
        .iter()
        .enumerate()
        .filter(|(_, h)| !FLOW_HEADER.contains(h) && !RENAMED_FLOW_COLUMNS.contains(h))
        .collect();
    let mut rows = Vec::new();
    for rec in r.records() {
        let rec = rec?;
        let mut row: FlowRow = rec.deserialize(Some(&header))?;
        for &(i, name) in &extra {
            if let Some(v) = rec.get(i).and_then(|c| c.parse().ok()) {
                row.counters.insert(name.to_string(), v);
            }
        }
        rows.push(row);
        if rows.len() == n {
            f(&mut rows)?;
            rows.clear();
        }
    }
    if !rows.is_empty() {
        f(&mut rows)?;
    }
    Ok(())
}

/// The start-time window `[from, until)` of the flows that count in FCT statistics:
/// `from` is `sim.warmup`; `until` is the end of arrivals (`sim.duration`, or the latest
/// flow start in a drained run) less `sim.cooldown`, or unbounded without a cool-down.
fn measured_window(world: &World) -> (Time, Time) {
    let sim = &world.scenario.spec.sim;
    let from = Time::from_dur(sim.warmup);
    if sim.cooldown.as_ps() == 0 {
        return (from, Time::MAX);
    }
    let end = match sim.duration {
        Some(d) => Time::from_dur(d),
        None => world.flows.latest_start(),
    };
    (
        from,
        Time::from_dur(end.saturating_since(Time::from_dur(sim.cooldown))),
    )
}

/// The peak resident memory of this process so far (`VmHWM` of `/proc/self/status`), or
/// `None` where the system does not say.
fn peak_rss_bytes() -> Option<u64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Label of a port, for callers outside this crate.
pub fn label(world: &World, p: PortId) -> String {
    port_label(world.net(), p)
}

/// Per switch tier (`"leaf->spine"`, ...), percentiles of the sampled queue lengths over all
/// its ports together, in bytes (3 significant digits); `None` unless sampled.
fn queue_occupancy(world: &World) -> Option<Value> {
    let o = world.occupancy.as_ref()?;
    let mut out = serde_json::Map::new();
    for (name, h) in &o.tiers {
        out.insert(
            name.clone(),
            json!({
                "samples": h.len(),
                "p50_bytes": h.value_at_quantile(0.5),
                "p99_bytes": h.value_at_quantile(0.99),
                "p999_bytes": h.value_at_quantile(0.999),
                "mean_bytes": h.mean(),
            }),
        );
    }
    Some(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::{PORT_HEADER, read_flows};
    use dcsim_net::Class;

    /// A flows.csv written before output schema 7 (`ideal_fct_ns`) reads back: the column
    /// into `unloaded_fct_ns`, not into the counters.
    #[test]
    fn flows_under_former_column_names_read_back() {
        let csv = "flow_id,src,dst,transport,size_bytes,start_ns,end_ns,fct_ns,ideal_fct_ns,\
                   slowdown,delivered_bytes,window_goodput_gbps,retransmits,measured,timeouts\n\
                   0,1,2,dctcp,1000,5,105,100,40,2.5,1000,0.0,0,true,0\n";
        let rows = read_flows(csv.as_bytes()).unwrap();
        assert_eq!(rows[0].unloaded_fct_ns, Some(40));
        assert!(!rows[0].counters.contains_key("ideal_fct_ns"));
        assert_eq!(rows[0].counters.get("timeouts"), Some(0));
    }

    /// ports.csv has a drop column for every traffic class, named by the class: a class
    /// added to the network without its column fails here.
    #[test]
    fn ports_have_a_drop_column_per_class() {
        for (i, c) in Class::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i, "Class::ALL is in counter order");
            let col = format!("{}_drops", c.name());
            assert!(PORT_HEADER.contains(&col.as_str()), "ports.csv lacks {col}");
        }
    }
}
