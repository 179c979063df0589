//! `pulser-testbed`: the Pulser paper's testbed (Almasi et al.) in simulation. Sixteen
//! senders, each rate-limited to 50 Mb/s, behind one switch, and a 50 Mb/s bottleneck to
//! one aggregator; fifteen senders answer synchronous bursts of 100 KB flows with random
//! jitter, one sends a 40 MB long flow. DCTCP against Pulser (and ICTCP): short-flow FCT
//! (mean and 99th percentile) and the long flow's throughput.

use dcsim::engine::{ByteSize, Dur, Rate};
use dcsim::net::TopologySpec;
use dcsim::net::qdisc::{Amount, EcnConfig, EinConfig, QdiscSpec};
use dcsim::net::topo::{LinkSpec, StarSpec};
use dcsim::transport::cc::{CcSpec, DctcpConfig, PulserConfig};
use dcsim::transport::tcp::IctcpConfig;
use dcsim::transport::{TcpConfig, TcpProfile, TransportSpec};
use dcsim::workload::{FlowSize, GeneratorSpec, IncastSpec};
use dcsim::{GeneratorEntry, Results, ScenarioSpec};
use serde_json::{Value, json};

use crate::build;
use crate::common::{Ctx, Panel, Plot, RunSpec, mean, percentile, put, rows, timeouts};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scheme {
    Dctcp,
    Pulser,
    Ictcp,
}

const SCHEMES: [Scheme; 3] = [Scheme::Dctcp, Scheme::Pulser, Scheme::Ictcp];

impl Scheme {
    fn key(self) -> &'static str {
        match self {
            Self::Dctcp => "dctcp",
            Self::Pulser => "pulser",
            Self::Ictcp => "ictcp",
        }
    }
}

/// Senders 0-15; the aggregator is host 16.
const SENDERS: u32 = 16;
const AGGREGATOR: u32 = SENDERS;
/// The long flow's sender; the others answer the bursts.
const LONG_SENDER: u32 = SENDERS - 1;
const MBPS: u64 = 50;
/// Per link (ours: the testbed's is not in our sources).
const DELAY_US: u64 = 50;
const SHORT_BYTES: u64 = 100_000;
/// Switch port buffer and DCTCP's K (ours: a shallow commodity switch, and K as the DCTCP
/// paper set it at 1 Gb/s).
const BUFFER_PKTS: u64 = 100;
const K_PKTS: u64 = 20;
/// Each sender of a burst starts within this of the burst's time (ours).
const JITTER: Dur = Dur::from_ms(1);

fn scenario(s: Scheme, bursts: u32, every: Dur, long_bytes: u64) -> ScenarioSpec {
    let link = LinkSpec {
        rate: Rate::from_bps(MBPS * 1_000_000),
        delay: Dur::from_us(DELAY_US),
    };
    let mut sc = build::scenario(
        build::sim(None, Dur::ZERO),
        TopologySpec::Star(StarSpec {
            hosts: Some(SENDERS + 1),
            host_link: Some(link),
        }),
    );
    let ecn = QdiscSpec::Ecn(EcnConfig {
        buffer: Amount::Packets(BUFFER_PKTS),
        mark_threshold: Amount::Packets(K_PKTS),
    });
    sc.queue = Some(match s {
        Scheme::Pulser => QdiscSpec::Ein(EinConfig {
            inner: Box::new(ecn),
            ..EinConfig::default()
        }),
        _ => ecn,
    });
    sc.transport = TransportSpec::Tcp(TcpConfig {
        cc: match s {
            Scheme::Pulser => CcSpec::Pulser(PulserConfig::default()),
            _ => CcSpec::Dctcp(DctcpConfig::default()),
        },
        // The testbed's hosts ran Linux: its timers (200 ms minimum RTO), delayed ACKs and
        // buffers, autotuned up to the 6 MiB `tcp_rmem[2]` of the kernels of its time.
        profile: Some(TcpProfile::Linux),
        rcv_buf: Some(ByteSize(6 << 20)),
        ictcp: (s == Scheme::Ictcp).then(IctcpConfig::default),
        ..TcpConfig::default()
    });
    sc.flows = vec![dcsim::FlowEntry {
        size: FlowSize(Some(long_bytes)),
        ..build::flow(LONG_SENDER, AGGREGATOR, Dur::ZERO)
    }];
    sc.generators = (0..bursts)
        .map(|b| GeneratorEntry {
            pattern: GeneratorSpec::Incast(IncastSpec {
                receiver: AGGREGATOR,
                senders: Some(SENDERS - 1),
                first_sender: 0,
                size: FlowSize(Some(SHORT_BYTES)),
                start: every * u64::from(b + 1),
                jitter: JITTER,
            }),
            transport: None,
        })
        .collect();
    sc
}

/// Short-flow FCTs (s) and the long flow's throughput (Mb/s, 0 if it did not finish).
fn measure(r: &Results, long_bytes: u64) -> (Vec<f64>, f64) {
    let short = rows(r)[1..]
        .iter()
        .filter_map(|f| f.fct_ns.map(|n| n as f64 / 1e9))
        .collect();
    let long = rows(r)[0]
        .fct_ns
        .map_or(0.0, |n| long_bytes as f64 * 8.0 / (n as f64 / 1e9) / 1e6);
    (short, long)
}

/// `pulser-testbed`.
pub fn pulser_testbed(ctx: &Ctx) -> Result<Value, String> {
    let (bursts, long_bytes) = ctx.pick((3u32, 4_000_000u64), (20, 40_000_000));
    let every = Dur::from_ms(500);
    let runs = SCHEMES
        .iter()
        .map(|&s| RunSpec::new(s.key(), scenario(s, bursts, every, long_bytes)))
        .collect();
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    let mut fct_mean = Vec::new();
    let mut fct_p99 = Vec::new();
    let mut tput = Vec::new();
    for (i, (&s, r)) in SCHEMES.iter().zip(&results).enumerate() {
        let (mut short, long) = measure(r, long_bytes);
        let p99 = percentile(&mut short, 0.99);
        let avg = mean(&short);
        let sk = s.key();
        put(&mut out, &["short_fct_s", sk, "mean"], avg);
        put(&mut out, &["short_fct_s", sk, "p99"], p99);
        put(&mut out, &["short_flows_completed", sk], short.len());
        put(&mut out, &["long_tput_mbps", sk], long);
        put(
            &mut out,
            &["drops", sk],
            r.summary["packets_dropped"].clone(),
        );
        put(&mut out, &["timeouts", sk], timeouts(r));
        if let Some(ein) = r
            .summary
            .get("incast_notification")
            .filter(|v| !v.is_null())
        {
            put(&mut out, &["incast_notification", sk], ein.clone());
        }
        let x = i as f64;
        fct_mean.push((x, avg));
        fct_p99.push((x, p99));
        tput.push((x, long));
    }
    let cats: Vec<String> = SCHEMES.iter().map(|s| s.key().to_string()).collect();
    let one = |label: &str, pts: &[(f64, f64)]| vec![crate::common::to_series(label, pts)];
    ctx.plot(&Plot {
        file: "pulser_testbed".into(),
        panels: vec![
            Panel::bars(
                "100 KB flows: mean FCT",
                cats.clone(),
                "FCT (s)",
                one("mean", &fct_mean),
            ),
            Panel::bars(
                "100 KB flows: 99th percentile FCT",
                cats.clone(),
                "FCT (s)",
                one("p99", &fct_p99),
            ),
            Panel::bars("40 MB flow", cats, "throughput (Mb/s)", one("long", &tput)),
        ],
    })?;
    put(
        &mut out,
        &["parameters"],
        json!({
            "topology": format!("one switch; {SENDERS} senders (hosts 0-{}) and the aggregator \
                (host {AGGREGATOR}), every host link {MBPS} Mb/s (the testbed's rate limits and \
                its {MBPS} Mb/s bottleneck), {DELAY_US} us per link (ours)", SENDERS - 1),
            "bursts": format!("{bursts} bursts every {} ms: hosts 0-{} each send {SHORT_BYTES} B \
                to the aggregator, each starting within {} ms of the burst (jitter ours)",
                every.as_secs_f64() * 1e3, SENDERS - 2, JITTER.as_secs_f64() * 1e3),
            "long_flow": format!("{long_bytes} B from host {LONG_SENDER} to the aggregator from 0 s"),
            "short_flows": u64::from(bursts) * u64::from(SENDERS - 1),
            "switch_queues": format!("{BUFFER_PKTS} packets, ECN at K = {K_PKTS} packets (ours); \
                Pulser: EIN over the same (N = 50, threshold 0.25 of the line rate, time-weighted, \
                bytes, stated hysteresis)"),
            "tcp": "profile linux (Linux's timers: minimum RTO 200 ms; delayed ACKs; a receive \
                buffer autotuned from 128 KiB up to 6 MiB by Linux 6.18's rule), \
                DCTCP g = 1/16",
            "pulser": "DCTCP with cwnd_safe = 4 segments",
            "ictcp": "DCTCP senders under ICTCP receive windows (defaults, fast start)",
            "seed": 1,
        }),
    );
    Ok(out)
}
