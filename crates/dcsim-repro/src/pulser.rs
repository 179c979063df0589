//! `pulser-leafspine`: the Pulser evaluation (Almasi et al.) on its
//! 400-host leaf-spine: Poisson background (8–32 KB short flows, 1 MB long flows carrying
//! 30 % of the bytes) plus incast queries, loads 20–80 %, incast degree 24 (32 and 40 at
//! 60 %); DCTCP, ICTCP, Pulser and the Ideal max-min oracle. Short-flow FCT, long-flow
//! throughput, and one incast episode seen from a long flow: its sender's window and the
//! receiver's queue.

use std::collections::BTreeMap;

use dcsim::engine::{ByteSize, Dur};
use dcsim::net::TopologySpec;
use dcsim::net::qdisc::{Amount, EcnConfig, EinConfig, QdiscSpec};
use dcsim::net::topo::LeafSpineSpec;
use dcsim::transport::cc::{CcSpec, DctcpConfig, PulserConfig};
use dcsim::transport::ideal::IdealConfig;
use dcsim::transport::tcp::IctcpConfig;
use dcsim::transport::{TcpConfig, TcpProfile, TransportSpec};
use dcsim::workload::{
    ArrivalSpec, FlowSize, GeneratorSpec, IncastSpec, LoadBasis, PulserSpec, Ratio,
};
use dcsim::{GeneratorEntry, Results, ScenarioSpec};
use serde_json::{Value, json};

use crate::build;
use crate::common::{
    Ctx, Panel, Plot, RunSpec, k, percentile, put, rows, series, timeouts, to_series,
};

/// The schemes: key and what runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scheme {
    Dctcp,
    Ictcp,
    Pulser,
    Ideal,
    /// DCTCP and Pulser with the minimum RTO of Linux (200 ms) and of ns-3's TCP (1 s),
    /// which the paper's tools used, instead of our 1 ms (full form only).
    DctcpRto200ms,
    PulserRto200ms,
    DctcpRto1s,
    PulserRto1s,
    /// DCTCP and Pulser under ten times the incast queries (full form only).
    DctcpHeavyIncast,
    PulserHeavyIncast,
}

const SCHEMES: [Scheme; 4] = [Scheme::Dctcp, Scheme::Ictcp, Scheme::Pulser, Scheme::Ideal];
/// The full form's extra series: the paper tools' minimum RTOs, and a heavier incast.
const EXTRA_SERIES: [Scheme; 6] = [
    Scheme::DctcpRto200ms,
    Scheme::PulserRto200ms,
    Scheme::DctcpRto1s,
    Scheme::PulserRto1s,
    Scheme::DctcpHeavyIncast,
    Scheme::PulserHeavyIncast,
];

impl Scheme {
    fn key(self) -> &'static str {
        match self {
            Self::Dctcp => "dctcp",
            Self::Ictcp => "ictcp",
            Self::Pulser => "pulser",
            Self::Ideal => "ideal",
            Self::DctcpRto200ms => "dctcp-minrto-200ms",
            Self::PulserRto200ms => "pulser-minrto-200ms",
            Self::DctcpRto1s => "dctcp-minrto-1s",
            Self::PulserRto1s => "pulser-minrto-1s",
            Self::DctcpHeavyIncast => "dctcp-heavy-incast",
            Self::PulserHeavyIncast => "pulser-heavy-incast",
        }
    }

    fn is_pulser(self) -> bool {
        matches!(
            self,
            Self::Pulser | Self::PulserRto200ms | Self::PulserRto1s | Self::PulserHeavyIncast
        )
    }

    /// The minimum (and initial) RTO: ours, 1 ms, unless the series names another.
    fn min_rto(self) -> Dur {
        match self {
            Self::DctcpRto200ms | Self::PulserRto200ms => Dur::from_ms(200),
            Self::DctcpRto1s | Self::PulserRto1s => Dur::from_secs(1),
            _ => Dur::from_ms(1),
        }
    }

    /// Incast queries per second.
    fn queries_per_s(self) -> f64 {
        match self {
            Self::DctcpHeavyIncast | Self::PulserHeavyIncast => HEAVY * QUERIES_PER_S,
            _ => QUERIES_PER_S,
        }
    }
}

/// How many times the queries of the heavy-incast series.
const HEAVY: f64 = 10.0;

/// Bytes per incast response and the query rate: the paper cites Vasudevan et al. for
/// its incast traffic without the numbers in our sources; these are ours (recorded).
const RESPONSE: u64 = 64_000;
const QUERIES_PER_S: f64 = 500.0;
/// The port whose queue the observed episode fills.
const RECEIVER_QUEUE: &str = "leaf0->h0";

/// One run: scheme `s`, background `load` of the leaf uplinks, incast `degree`, arrivals
/// until `until`; the observed episode (`degree` senders answer host 0 while flow 0, a
/// long-lived flow from host 399, runs into host 0) at `episode`.
fn scenario(s: Scheme, load: f64, degree: u32, until: Dur, episode: Dur) -> ScenarioSpec {
    let mut sc = build::scenario(
        build::sim(None, Dur::ZERO),
        TopologySpec::LeafSpine(LeafSpineSpec::default()),
    );
    let ecn = QdiscSpec::Ecn(EcnConfig {
        buffer: Amount::Packets(250),
        mark_threshold: Amount::Packets(65),
    });
    sc.queue = Some(if s.is_pulser() {
        QdiscSpec::Ein(EinConfig {
            inner: Box::new(ecn),
            ..EinConfig::default()
        })
    } else {
        ecn
    });
    sc.transport = match s {
        Scheme::Ideal => TransportSpec::Ideal(IdealConfig::default()),
        _ => TransportSpec::Tcp(TcpConfig {
            cc: if s.is_pulser() {
                CcSpec::Pulser(PulserConfig::default())
            } else {
                CcSpec::Dctcp(DctcpConfig::default())
            },
            profile: Some(TcpProfile::Linux),
            // Our data-centre timers (the profile's are Linux's 200 ms and 1 s), and one
            // ACK per segment: Linux's 40 ms delayed-ACK timer beside a 1 ms RTO would
            // time out every lone segment.
            min_rto: Some(s.min_rto()),
            init_rto: Some(s.min_rto()),
            delayed_ack: Some(dcsim::transport::tcp::DelayedAck::Off),
            // ns-3's sockets have fixed buffers: no autotuning.
            rcv_buf: Some(ByteSize(6 << 20)),
            rcv_autotune: Some(false),
            // Nor TCP small queues: ns-3's sockets hand the traffic-control layer what the
            // window allows.
            small_queues: Some(false),
            ictcp: (s == Scheme::Ictcp).then(IctcpConfig::default),
            ..TcpConfig::default()
        }),
    };
    sc.flows = vec![dcsim::FlowEntry {
        stop: Some(until),
        ..build::flow(399, 0, Dur::ZERO)
    }];
    sc.generators = vec![
        GeneratorEntry {
            pattern: GeneratorSpec::Pulser(PulserSpec {
                load,
                load_relative_to: LoadBasis::TorUplinks,
                oversubscription: None,
                wire_factor: Ratio::new(1538.0, 1460.0).expect("a positive ratio"),
                short_size: [ByteSize(8_000), ByteSize(32_000)],
                long_size: ByteSize(1_000_000),
                long_share: 0.3,
                incast_degree: degree,
                incast_response_size: ByteSize(RESPONSE),
                incast_queries: ArrivalSpec::PoissonPerS(s.queries_per_s()),
                incast_jitter: Dur::ZERO,
                first: 0,
                hosts: None,
                start: Dur::ZERO,
                max_flows: None,
                until: Some(until),
            }),
            transport: None,
        },
        GeneratorEntry {
            pattern: GeneratorSpec::Incast(IncastSpec {
                receiver: 0,
                senders: Some(degree),
                first_sender: 100,
                size: FlowSize(Some(RESPONSE)),
                start: episode,
                jitter: Dur::ZERO,
            }),
            transport: None,
        },
    ];
    sc
}

/// Short background flows (8–32 KB) and incast responses are told apart by size; long
/// flows are the 1 MB ones.
fn classes(r: &Results) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut short, mut incast, mut long_gbps) = (Vec::new(), Vec::new(), Vec::new());
    for f in rows(r).iter().skip(1) {
        let (Some(size), Some(fct)) = (f.size_bytes, f.fct_ns) else {
            continue;
        };
        match size {
            8_000..=32_000 => short.push(fct as f64 / 1e3),
            RESPONSE => incast.push(fct as f64 / 1e3),
            1_000_000 => long_gbps.push(size as f64 * 8.0 / fct as f64),
            _ => {}
        }
    }
    (short, incast, long_gbps)
}

/// The share of short flows (8–32 KB) whose receiver was also receiving an incast response
/// at some moment of the short flow's life: the short flows an incast could slow down.
/// `flows` are a run's flows after flow 0 (the observed long flow).
fn incast_exposure(flows: &[dcsim::metrics::FlowRow]) -> f64 {
    let mut busy: BTreeMap<u32, Vec<(u64, u64)>> = BTreeMap::new();
    for f in flows {
        if let (Some(RESPONSE), Some(end)) = (f.size_bytes, f.end_ns) {
            busy.entry(f.dst).or_default().push((f.start_ns, end));
        }
    }
    // Per receiver, the response intervals merged into disjoint ones, in order.
    for v in busy.values_mut() {
        v.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(v.len());
        for &(a, b) in v.iter() {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        *v = merged;
    }
    let (mut short, mut met) = (0u64, 0u64);
    for f in flows {
        let (Some(8_000..=32_000), Some(end)) = (f.size_bytes, f.end_ns) else {
            continue;
        };
        short += 1;
        let meets = busy.get(&f.dst).is_some_and(|v| {
            // The first interval ending after the flow starts: does it begin before it ends?
            let i = v.partition_point(|&(_, b)| b <= f.start_ns);
            v.get(i).is_some_and(|&(a, _)| a < end)
        });
        met += u64::from(meets);
    }
    met as f64 / short.max(1) as f64
}

/// `pulser-leafspine`.
pub fn pulser_leafspine(ctx: &Ctx) -> Result<Value, String> {
    let loads: Vec<u32> = ctx.pick(vec![60], vec![20, 40, 60, 80]);
    let degrees: Vec<u32> = ctx.pick(vec![], vec![32, 40]);
    let (until_ms, episode_ms) = ctx.pick((8u64, 4u64), (100, 30));
    let (until, episode) = (Dur::from_ms(until_ms), Dur::from_ms(episode_ms));
    let mut cases = Vec::new();
    let mut runs = Vec::new();
    for &s in &SCHEMES {
        for &l in &loads {
            cases.push((s, l, 24));
        }
        for &d in &degrees {
            cases.push((s, 60, d));
        }
    }
    for &s in ctx.pick(&[][..], &EXTRA_SERIES[..]) {
        for &l in &loads {
            cases.push((s, l, 24));
        }
    }
    for &(s, l, d) in &cases {
        let mut sc = scenario(s, f64::from(l) / 100.0, d, until, episode);
        if l == 60 && d == 24 && SCHEMES.contains(&s) {
            sc.output = build::timeseries(Dur::from_us(20), &[RECEIVER_QUEUE]);
            if let Some(t) = &mut sc.output.timeseries {
                t.flows = dcsim::FlowSelection::List(vec![0]);
                t.cwnd = true;
            }
        }
        runs.push(RunSpec::new(format!("{}-load{l}-degree{d}", s.key()), sc));
    }
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    let mut p99: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    let mut tput: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    let mut episode = Vec::new();
    for (&(s, l, d), r) in cases.iter().zip(&results) {
        let (mut short, mut incast, long) = classes(r);
        let sk = s.key();
        let lk = k(l);
        let mean_long = long.iter().sum::<f64>() / long.len().max(1) as f64;
        if d == 24 {
            put(
                &mut out,
                &["short_fct_us", sk, &lk, "p50"],
                percentile(&mut short, 0.5),
            );
            put(
                &mut out,
                &["short_fct_us", sk, &lk, "p99"],
                percentile(&mut short, 0.99),
            );
            put(
                &mut out,
                &["short_fct_us", sk, &lk, "p999"],
                percentile(&mut short, 0.999),
            );
            put(&mut out, &["short_flows", sk, &lk], short.len());
            put(
                &mut out,
                &["short_flows_meeting_incast", sk, &lk],
                incast_exposure(&rows(r)[1..]),
            );
            // The short-flow tail with the incast responses counted among the short flows.
            let mut both: Vec<f64> = short.iter().chain(&incast).copied().collect();
            put(
                &mut out,
                &["short_and_incast_fct_us", sk, &lk, "p99"],
                percentile(&mut both, 0.99),
            );
            put(&mut out, &["timeouts", sk, &lk], timeouts(r));
            put(
                &mut out,
                &["incast_fct_us", sk, &lk, "p50"],
                percentile(&mut incast, 0.5),
            );
            put(
                &mut out,
                &["incast_fct_us", sk, &lk, "p99"],
                percentile(&mut incast, 0.99),
            );
            put(&mut out, &["long_tput_gbps", sk, &lk], mean_long);
            put(
                &mut out,
                &["drops", sk, &lk],
                r.summary["packets_dropped"].clone(),
            );
            if SCHEMES.contains(&s) {
                p99.entry(sk)
                    .or_default()
                    .push((f64::from(l), percentile(&mut short, 0.99)));
                tput.entry(sk).or_default().push((f64::from(l), mean_long));
            }
        }
        if l == 60 {
            put(
                &mut out,
                &["short_fct_us_degree", sk, &k(d), "p99"],
                percentile(&mut short, 0.99),
            );
        }
        if d == 24 && l == 60 && SCHEMES.contains(&s) {
            // The episode at host 0, from 1 ms before to 3 ms after.
            let e = episode_ms as f64 * 1e3;
            let (a, b) = (e - 1e3, e + 3e3);
            let win = |v: &Vec<(f64, f64)>| -> Vec<(f64, f64)> {
                v.iter()
                    .filter(|(t, _)| (a..=b).contains(t))
                    .map(|&(t, y)| (t - e, y))
                    .collect()
            };
            let q = series(r, "queue_bytes");
            let w = series(r, "cwnd_bytes");
            let qv = q.get(RECEIVER_QUEUE).map(win).unwrap_or_default();
            let wv = w.get("0").map(win).unwrap_or_default();
            let peak = qv.iter().map(|p| p.1).fold(0.0, f64::max);
            put(&mut out, &["episode_peak_queue_kb", sk], peak / 1e3);
            episode.push((sk, qv, wv));
        }
    }
    ctx.plot(&Plot {
        file: "short_fct_p99".into(),
        panels: vec![
            Panel::line(
                "short flows (8-32 KB), 99th percentile",
                "load (%)",
                "FCT (us)",
                SCHEMES
                    .iter()
                    .map(|s| to_series(s.key(), &p99[s.key()]))
                    .collect(),
            )
            .points(),
            Panel::line(
                "long flows (1 MB)",
                "load (%)",
                "mean throughput (Gb/s)",
                SCHEMES
                    .iter()
                    .map(|s| to_series(s.key(), &tput[s.key()]))
                    .collect(),
            )
            .points(),
        ],
    })?;
    ctx.plot(&Plot {
        file: "incast_episode".into(),
        panels: vec![
            Panel::line(
                "queue at the receiver's port (leaf0->h0)",
                "time from the incast (us)",
                "bytes",
                episode.iter().map(|(s, q, _)| to_series(*s, q)).collect(),
            ),
            Panel::line(
                "window of the long flow into the receiver",
                "time from the incast (us)",
                "cwnd (bytes)",
                episode.iter().map(|(s, _, w)| to_series(*s, w)).collect(),
            ),
        ],
    })?;
    put(
        &mut out,
        &["parameters"],
        json!({
            "topology": "leaf-spine preset pulser: 20 leaves x 20 hosts, 10 spines, 10 Gb/s, 10 us",
            "background": "pulser mix: Poisson, uniform source and destination, 8-32 KB short \
                flows and 1 MB long flows carrying 30 % of the bytes; load of the leaf uplinks \
                (2 Tb/s: a load of the host links would overload the 2:1 fabric from 50 %), in \
                wire bytes (1538/1460)",
            "incast": format!("Poisson queries at {QUERIES_PER_S}/s, each to a random host from \
                degree random responders of {RESPONSE} B (ours: the paper's values are not in \
                our sources)"),
            "episode": format!("24 responders (hosts 100..) answer host 0 at {episode_ms} ms (load \
                60 %) while flow 0, long-lived from host 399, runs into host 0"),
            "arrivals_until": format!("{}ms", until.as_secs_f64() * 1e3),
            "switch_queues": "250 packets, ECN at K = 65 packets; Pulser: EIN over the same \
                (N = 50, threshold 0.25 of the line rate, high watermark 130 packets; the \
                queue's growth in bytes over the last N dequeues over their time, the stated \
                hysteresis: gradient = time-weighted, count = bytes, hysteresis = stated)",
            "tcp": "profile linux (the paper ran ns-3, which follows Linux): SACK, RACK-TLP, \
                PRR, a fixed 6 MiB receive buffer (ns-3 does not autotune), no TCP small \
                queues (ns-3 has none); minimum and \
                initial RTO 1 ms and one ACK per segment (ours); DCTCP g = 1/16",
            "ictcp": "DCTCP senders under ICTCP receive windows (alpha 0.9, gamma 0.1/0.5, \
                fast start: windows double until the first decrease)",
            "pulser": "DCTCP with cwnd_safe = 4 segments",
            "min_rto_series": "full form: DCTCP and Pulser with minimum and initial RTO 200 ms \
                (Linux) and 1 s (ns-3's TCP default) instead of 1 ms, loads 20-80 %, degree 24",
            "heavy_incast_series": format!("full form: DCTCP and Pulser with {HEAVY} times the \
                queries ({} per second), loads 20-80 %, degree 24", HEAVY * QUERIES_PER_S),
            "ideal": "transport ideal: every flow paced at its max-min fair rate over the \
                egress ports of its route, recomputed at every start and completion (no \
                window: the episode's window panel has no ideal series)",
            "flow_classes": "by size: 8-32 KB short, 64 KB incast responses, 1 MB long",
            "short_flows_meeting_incast": "the share of short flows whose receiver was also \
                receiving an incast response during the short flow's life",
            "short_and_incast_fct_us": "the p99 of short flows and incast responses together",
            "seed": 1,
        }),
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use dcsim::metrics::{Counters, FlowRow};

    use super::*;

    fn row(dst: u32, size: u64, start_ns: u64, end_ns: u64) -> FlowRow {
        FlowRow {
            flow_id: 0,
            src: 99,
            dst,
            transport: "tcp".into(),
            size_bytes: Some(size),
            start_ns,
            end_ns: Some(end_ns),
            fct_ns: Some(end_ns - start_ns),
            unloaded_fct_ns: None,
            slowdown: None,
            delivered_bytes: size,
            window_goodput_gbps: 0.0,
            retransmits: 0,
            measured: true,
            counters: Counters::default(),
        }
    }

    /// A short flow meets an incast when a response to its receiver is in flight at some
    /// moment of its life: overlapping, not merely touching, and at its own receiver.
    #[test]
    fn short_flows_meet_an_incast_only_at_their_receiver_while_it_lasts() {
        let flows = [
            row(1, RESPONSE, 100, 200),
            row(1, RESPONSE, 150, 300),
            row(2, RESPONSE, 1_000, 2_000),
            row(1, 10_000, 250, 260),        // inside the merged 100-300
            row(1, 10_000, 300, 400),        // starts as the last response ends
            row(1, 20_000, 50, 101),         // ends just after one begins
            row(2, 30_000, 500, 999),        // before its receiver's response
            row(3, 8_000, 100, 2_000),       // a receiver without responses
            row(2, 1_000_000, 1_500, 1_600), // a long flow does not count
        ];
        let share = incast_exposure(&flows);
        assert!((share - 2.0 / 5.0).abs() < 1e-12, "{share}");
        assert!(incast_exposure(&[]).abs() < 1e-12);
    }
}
