//! `fastpass-zero-queue` (Perry et al., SIGCOMM 2014): Fastpass against DCTCP and
//! ExpressPass on the same web-search flows in a full-bisection two-tier leaf-spine, loads
//! 0.2 to 0.8 of the host links. Switch queues per tier, FCT per size bucket, utilization,
//! the Fastpass control traffic and the arbiter's compute time.

use dcsim::engine::{Dur, Rate};
use dcsim::net::TopologySpec;
use dcsim::net::qdisc::{Amount, DropTailConfig, PrioConfig, QdiscSpec};
use dcsim::net::topo::{LeafSpineSpec, LinkSpec};
use dcsim::transport::TransportSpec;
use dcsim::transport::fastpass::FastpassConfig;
use dcsim::workload::{BuiltinCdf, GeneratorSpec, LoadBasis};
use dcsim::{Results, ScenarioSpec};
use serde_json::{Value, json};

use crate::build::{self, FatTreeScheme};
use crate::common::{Ctx, Panel, Plot, RunSpec, put, to_series};

const LEAVES: u32 = 8;
const HOSTS_PER_LEAF: u32 = 8;
const SPINES: u32 = 8;
const GBPS: u64 = 10;
/// Per link (ours).
const DELAY_US: u64 = 1;
/// The arbiter's host: the last one; the workload runs among the others.
const ARBITER: u32 = LEAVES * HOSTS_PER_LEAF - 1;
const LOADS: [u32; 4] = [20, 40, 60, 80];
/// Switch queues are sampled this often for their percentiles.
const QUEUE_SAMPLE_US: u64 = 5;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scheme {
    Fastpass,
    /// Ours: slots one minimum frame longer, so a host link has room for its reports.
    FastpassGuard,
    /// The guard slots with the arbiter allocating 8 slots at a time (the thesis's
    /// allocator's batch) instead of 64.
    FastpassGuardB8,
    /// The same with batches of 16.
    FastpassGuardB16,
    Dctcp,
    Xpass,
}

const SCHEMES: [Scheme; 6] = [
    Scheme::Fastpass,
    Scheme::FastpassGuard,
    Scheme::FastpassGuardB8,
    Scheme::FastpassGuardB16,
    Scheme::Dctcp,
    Scheme::Xpass,
];

/// The guard variant's slot: a full frame and a minimum frame.
const GUARD_SLOT_BYTES: u32 = 1538 + 84;

impl Scheme {
    fn key(self) -> &'static str {
        match self {
            Self::Fastpass => "fastpass",
            Self::FastpassGuard => "fastpass-guard",
            Self::FastpassGuardB8 => "fastpass-guard-b8",
            Self::FastpassGuardB16 => "fastpass-guard-b16",
            Self::Dctcp => "dctcp",
            Self::Xpass => "expresspass",
        }
    }

    /// Whether it is one of the Fastpass series.
    fn is_fastpass(self) -> bool {
        matches!(
            self,
            Self::Fastpass | Self::FastpassGuard | Self::FastpassGuardB8 | Self::FastpassGuardB16
        )
    }

    /// Timeslots the arbiter allocates at a time.
    fn batch_slots(self) -> u32 {
        match self {
            Self::FastpassGuardB8 => 8,
            Self::FastpassGuardB16 => 16,
            _ => FastpassConfig::default().batch_slots,
        }
    }
}

fn topology() -> TopologySpec {
    let link = LinkSpec {
        rate: Rate::from_gbps(GBPS),
        delay: Dur::from_us(DELAY_US),
    };
    TopologySpec::LeafSpine(LeafSpineSpec {
        preset: None,
        leaves: Some(LEAVES),
        hosts_per_leaf: Some(HOSTS_PER_LEAF),
        spines: Some(SPINES),
        rate: None,
        delay: None,
        host_link: Some(link),
        fabric_link: Some(link),
    })
}

fn scenario(s: Scheme, load: u32, flows: u64) -> ScenarioSpec {
    let mut sc = build::scenario(build::sim(None, Dur::ZERO), topology());
    match s {
        // Control packets first; data behind them in the same 250-packet buffer as DCTCP's.
        s if s.is_fastpass() => {
            FatTreeScheme::Dctcp.configure(&mut sc, GBPS);
            sc.queue = Some(QdiscSpec::Prio(PrioConfig {
                control_buffer: Amount::Packets(64),
                inner: Box::new(QdiscSpec::DropTail(DropTailConfig {
                    buffer: Amount::Bytes(250 * 1538),
                })),
            }));
            sc.transport = TransportSpec::Fastpass(FastpassConfig {
                arbiter: Some(ARBITER),
                slot_bytes: if s == Scheme::Fastpass {
                    FastpassConfig::default().slot_bytes
                } else {
                    GUARD_SLOT_BYTES
                },
                batch_slots: s.batch_slots(),
                ..FastpassConfig::default()
            });
        }
        Scheme::Xpass => FatTreeScheme::Xpass.configure(&mut sc, GBPS),
        _ => FatTreeScheme::Dctcp.configure(&mut sc, GBPS),
    }
    let mut g = build::poisson(
        f64::from(load) / 100.0,
        LoadBasis::HostLinks,
        BuiltinCdf::Websearch,
        flows,
    );
    if let GeneratorSpec::Poisson(p) = &mut g.pattern {
        p.hosts = Some(ARBITER);
    }
    sc.generators = vec![g];
    sc.output.queue_occupancy = Some(Dur::from_us(QUEUE_SAMPLE_US));
    sc
}

/// Per switch tier (`"leaf->spine"`, ...): mean of the ports' time-averaged queue, the
/// 99th and 99.9th percentiles of the tier's ports' sampled queues, and the largest queue,
/// in bytes.
fn tiers(r: &Results) -> Value {
    let mut v = json!({});
    for t in r.tiers.iter().filter(|t| !t.tier.starts_with("host")) {
        let occ = &r.summary["queue_occupancy"][&t.tier];
        put(
            &mut v,
            &[&t.tier],
            json!({
                "avg_queue_bytes_mean": t.avg_queue_bytes_mean,
                "avg_queue_bytes_max": t.avg_queue_bytes_max,
                "p99_queue_bytes": occ["p99_bytes"],
                "p999_queue_bytes": occ["p999_bytes"],
                "max_queue_bytes": t.max_queue_bytes,
                "max_data_queue_bytes": t.max_data_queue_bytes,
                "utilization_mean": t.utilization_mean,
            }),
        );
    }
    v
}

/// `fastpass-zero-queue`.
pub fn fastpass_zero_queue(ctx: &Ctx) -> Result<Value, String> {
    let flows = ctx.pick(400u64, 10_000);
    let mut runs = Vec::new();
    let mut keys = Vec::new();
    for &s in &SCHEMES {
        for &l in &LOADS {
            runs.push(RunSpec::new(
                format!("{}-load{l}", s.key()),
                scenario(s, l, flows),
            ));
            keys.push((s, l));
        }
    }
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    let mut max_q: Vec<Vec<(f64, f64)>> = vec![Vec::new(); SCHEMES.len()];
    let mut small_p99: Vec<Vec<(f64, f64)>> = vec![Vec::new(); SCHEMES.len()];
    let mut wait: Vec<Vec<(f64, f64)>> = vec![Vec::new(); SCHEMES.len()];
    for (&(s, l), r) in keys.iter().zip(&results) {
        let (sk, lk) = (s.key(), l.to_string());
        let si = SCHEMES.iter().position(|&x| x == s).expect("a scheme");
        let mq = r.summary["max_queue_bytes"].as_u64().unwrap_or(0);
        put(&mut out, &["max_queue_bytes", sk, &lk], mq);
        put(&mut out, &["queues", sk, &lk], tiers(r));
        // Both bucket sets of the fat-tree evaluation (their names do not collide).
        for b in &r.buckets {
            put(
                &mut out,
                &["fct_us", sk, &lk, b.bucket],
                json!({"mean": b.fct_us_mean, "p99": b.fct_us_p99, "flows": b.flows,
                       "completed": b.completed}),
            );
            if b.bucket == "<100KB" {
                small_p99[si].push((f64::from(l), b.fct_us_p99));
            }
        }
        put(
            &mut out,
            &["drops", sk, &lk],
            r.summary["packets_dropped"].clone(),
        );
        put(
            &mut out,
            &["flows_completed", sk, &lk],
            r.summary["flows_completed"].clone(),
        );
        if s == Scheme::Fastpass {
            let fp = &r.summary["fastpass"];
            put(
                &mut out,
                &["control_overhead", &lk],
                fp["control_overhead"].clone(),
            );
        }
        if s.is_fastpass() {
            put(
                &mut out,
                &["fastpass", sk, &lk],
                r.summary["fastpass"].clone(),
            );
            let w = &r.summary["fastpass"]["first_slot_wait_us"];
            put(&mut out, &["first_slot_wait_us", sk, &lk], w.clone());
            if let Some(mean) = w["mean"].as_f64() {
                wait[si].push((f64::from(l), mean));
            }
            let nic = r
                .ports
                .iter()
                .filter(|p| p.tier == "host")
                .map(|p| p.max_data_queue_bytes)
                .max()
                .unwrap_or(0);
            put(&mut out, &["max_host_nic_data_queue_bytes", sk, &lk], nic);
        }
        max_q[si].push((f64::from(l), mq as f64 / 1e3));
    }
    ctx.plot(&Plot {
        file: "fastpass_zero_queue".into(),
        panels: vec![
            Panel::line(
                "largest switch queue",
                "load (% of host links)",
                "KB",
                SCHEMES
                    .iter()
                    .zip(&max_q)
                    .map(|(s, v)| to_series(s.key(), v))
                    .collect(),
            ),
            Panel::line(
                "flows under 100 KB: p99 FCT",
                "load (% of host links)",
                "µs",
                SCHEMES
                    .iter()
                    .zip(&small_p99)
                    .map(|(s, v)| to_series(s.key(), v))
                    .collect(),
            ),
            Panel::line(
                "a flow's wait for its first slot (mean)",
                "load (% of host links)",
                "µs",
                SCHEMES
                    .iter()
                    .zip(&wait)
                    .filter(|(s, _)| s.is_fastpass())
                    .map(|(s, v)| to_series(s.key(), v))
                    .collect(),
            ),
        ],
    })?;
    let fp = FastpassConfig::default();
    put(
        &mut out,
        &["parameters"],
        json!({
            "flows_per_run": flows,
            "topology": format!("leaf-spine: {LEAVES} leaves x {HOSTS_PER_LEAF} hosts, \
                {SPINES} spines (full bisection), {GBPS} Gb/s, {DELAY_US} us per link (ours)"),
            "workload": format!("web search, Poisson, load relative to host links, uniform \
                source and destination among hosts 0-{}, {flows} flows, wire factor 1538/1460", ARBITER - 1),
            "fastpass": {
                "arbiter_host": ARBITER,
                "batch_slots": fp.batch_slots,
                "slot": "1538 B at 10 Gb/s (1.2304 us)",
                "lead": "computed: slowest arbiter-to-host path plus one slot",
                "max_outstanding": fp.max_outstanding,
                "request_timeout": fp.request_timeout.to_string(),
                "grant_timeout": fp.grant_timeout.to_string(),
                "switch_queues": "strict priority for control (64 packets), data drop-tail 250 packets",
                "fastpass-guard": format!("ours: slots of {GUARD_SLOT_BYTES} B (a full frame and a minimum frame)"),
                "fastpass-guard-b8": format!("the guard slots, batches of {} slots (the thesis's allocator's batch)", Scheme::FastpassGuardB8.batch_slots()),
                "fastpass-guard-b16": format!("the guard slots, batches of {} slots", Scheme::FastpassGuardB16.batch_slots()),
                "first_slot_wait": "per flow, from its start to the start of its first granted slot",
            },
            "dctcp": "as in xpass-fattree: K = 65, 250-packet buffers, TCP profile ns2",
            "expresspass": "as in xpass-fattree: the 2017 large-scale script's settings",
            "routing": "symmetric per-flow ECMP (Fastpass data: the arbiter's spine per packet)",
            "queue_percentiles": format!("every switch port's queue sampled every {QUEUE_SAMPLE_US} us"),
            "seed": 1,
        }),
    );
    Ok(out)
}
