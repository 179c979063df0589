//! `dx-queue` (the DX paper's evaluation): DX's claim that latency feedback
//! keeps a several-times smaller queue than DCTCP at full utilization, and its argument that
//! the delay must be measured to about a microsecond.
//!
//! N long flows (2, 10, 20, 30) share one 1 or 10 Gb/s bottleneck of a dumbbell (host links
//! at the same rate, base RTT 100 µs), starts spread over the first 10 ms. DCTCP marks at the
//! DCTCP paper's K (20 packets at 1 Gb/s, 65 at 10 Gb/s); DX runs on drop-tail ports with
//! exact queueing-delay feedback. The bottleneck's queue is sampled every 20 µs over the
//! measurement window; its queueing delay is bytes · 8 / rate. The sensitivity part runs DX
//! with host-timestamp errors of growing size (docs/protocols/dx.md).

use std::collections::BTreeMap;

use dcsim::engine::Dur;
use dcsim::net::qdisc::{Amount, DropTailConfig, EcnConfig, QdiscSpec};
use dcsim::transport::cc::{CcSpec, DctcpConfig, DxConfig, Measurement, Timestamps};
use dcsim::{Results, ScenarioSpec};
use serde_json::{Value, json};

use crate::build::{self, Pairs};
use crate::common::{Ctx, Panel, Plot, RunSpec, k, nearest_rank, put, to_series};

/// The schemes compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scheme {
    /// DX with exact queueing-delay feedback (what its timestamps aim at).
    Dx,
    /// DX under the talk's testbed conditions ([`testbed`]).
    DxTestbed,
    /// The same with one segment of headroom per cut (our reading of the paper's).
    DxTestbedHeadroom,
    Dctcp,
}

impl Scheme {
    fn key(self) -> &'static str {
        match self {
            Self::Dx => "dx",
            Self::DxTestbed => "dx-testbed",
            Self::DxTestbedHeadroom => "dx-testbed-headroom",
            Self::Dctcp => "dctcp",
        }
    }
}

/// Mean host-stack delay left in a software timestamp at each end once DX has moved it
/// into the driver (ours: the paper's residual error was not available to us).
const SOFTWARE_STACK_DELAY_NS: u64 = 1_000;
/// Tick of a NIC's timestamp clock (ours, as above).
const HARDWARE_TICK_NS: u64 = 10;

/// DX as the talk ran it: software timestamps at 1 Gb/s, NIC timestamps at 10 Gb/s, each
/// with DX's calibrations (interrupt batching, clock drift) and a residual error; a
/// threshold at the error's size (10 mean stack delays: the sum of two ends' exceeds it
/// 0.05 % of the time; two ticks: the most a tick's truncations can add) and `headroom`
/// segments cut beyond the drain.
fn testbed(gbps: u64, headroom: u32) -> DxConfig {
    let (errors, threshold) = if gbps <= 1 {
        (
            Timestamps {
                stack_delay: Dur::from_ns(SOFTWARE_STACK_DELAY_NS),
                ..calibrated()
            },
            Dur::from_ns(10 * SOFTWARE_STACK_DELAY_NS),
        )
    } else {
        (
            Timestamps {
                nic_timestamps: true,
                resolution: Dur::from_ns(HARDWARE_TICK_NS),
                ..calibrated()
            },
            Dur::from_ns(2 * HARDWARE_TICK_NS),
        )
    };
    DxConfig {
        measurement: Measurement::Timestamps(errors),
        threshold,
        headroom,
        ..DxConfig::default()
    }
}

/// The testbed set-up at `gbps` as result.json records it.
fn testbed_json(gbps: u64) -> Value {
    serde_json::to_value(testbed(gbps, 0)).unwrap_or(Value::Null)
}

/// Timestamps with DX's calibrations on and no error source set.
fn calibrated() -> Timestamps {
    Timestamps {
        batch_calibration: true,
        drift_calibration: true,
        ..Timestamps::default()
    }
}

/// Port of the bottleneck, as sampled.
const BOTTLENECK: &str = "left->right";
/// Switch buffers, packets.
const BUFFER_PKTS: u64 = 250;

/// `n` flows on a dumbbell at `gbps` under `cc` with switch discipline `queue`.
fn scenario(
    n: usize,
    gbps: u64,
    cc: CcSpec,
    queue: QdiscSpec,
    warm_ms: u64,
    dur_ms: u64,
) -> ScenarioSpec {
    let sim = build::sim(Some(Dur::from_ms(dur_ms)), Dur::from_ms(warm_ms));
    let mut s = build::scenario(sim, build::dumbbell(n, gbps));
    s.queue = Some(queue);
    s.transport = build::tcp(cc);
    s.generators = vec![
        Pairs {
            start_every: Dur::from_ps(10_000_000_000 / n as u64),
            ..Pairs::new(n, 0, n as u32)
        }
        .entry(),
    ];
    s.output = build::timeseries(Dur::from_us(20), &[BOTTLENECK]);
    s
}

fn drop_tail() -> QdiscSpec {
    QdiscSpec::DropTail(DropTailConfig {
        buffer: Amount::Packets(BUFFER_PKTS),
    })
}

/// DCTCP's K for a link of `gbps` (DCTCP §3.4: 20 packets at 1 Gb/s, 65 at 10 Gb/s).
fn dctcp_k(gbps: u64) -> u64 {
    if gbps <= 1 {
        20
    } else {
        65 * gbps.div_ceil(10)
    }
}

fn scheme_scenario(s: Scheme, n: usize, gbps: u64, warm_ms: u64, dur_ms: u64) -> ScenarioSpec {
    match s {
        Scheme::Dx => scenario(
            n,
            gbps,
            CcSpec::Dx(DxConfig::default()),
            drop_tail(),
            warm_ms,
            dur_ms,
        ),
        Scheme::DxTestbed | Scheme::DxTestbedHeadroom => scenario(
            n,
            gbps,
            CcSpec::Dx(testbed(gbps, u32::from(s == Scheme::DxTestbedHeadroom))),
            drop_tail(),
            warm_ms,
            dur_ms,
        ),
        Scheme::Dctcp => scenario(
            n,
            gbps,
            CcSpec::Dctcp(DctcpConfig::default()),
            QdiscSpec::Ecn(EcnConfig {
                buffer: Amount::Packets(BUFFER_PKTS),
                mark_threshold: Amount::Packets(dctcp_k(gbps)),
            }),
            warm_ms,
            dur_ms,
        ),
    }
}

/// Queueing delays of the bottleneck's samples in the window, µs, sorted.
fn delays_us(r: &Results, gbps: u64) -> Vec<f64> {
    let from = r.summary["window_start_ns"].as_u64().unwrap_or(0);
    let mut d: Vec<f64> = crate::common::samples(r)
        .iter()
        .filter(|s| s.kind == "queue_bytes" && s.id == BOTTLENECK && s.time_ns >= from)
        .map(|s| s.value * 8.0 / (gbps as f64 * 1e3))
        .collect();
    d.sort_by(f64::total_cmp);
    d
}

fn utilization(r: &Results) -> f64 {
    r.ports
        .iter()
        .find(|p| p.node == "left" && p.peer == "right")
        .map_or(0.0, |p| p.utilization)
}

/// Points of a plotted series, (x, y).
type Points = Vec<(f64, f64)>;

/// The timestamp errors of the sensitivity part: (key, axis label, values, the errors of a
/// value, and the threshold of our variant for that value: the size of the error, below
/// which a delay counts as none).
type Source = (
    &'static str,
    &'static str,
    Vec<f64>,
    fn(f64) -> Timestamps,
    fn(f64, Dur) -> Dur,
);

fn sources(quick: bool) -> Vec<Source> {
    let pick = |q: Vec<f64>, f: Vec<f64>| if quick { q } else { f };
    vec![
        (
            "stack_delay_us",
            "mean host-stack delay per end (µs)",
            pick(vec![0.0, 1.0], vec![0.0, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0]),
            |v| Timestamps {
                stack_delay: Dur::from_secs_f64(v * 1e-6),
                ..Timestamps::default()
            },
            // Two ends' exponential delays: their sum exceeds 5 means 0.04 % of the time.
            |v, _| Dur::from_secs_f64(5.0 * 2.0 * v * 1e-6),
        ),
        (
            "batch_interval_us",
            "receive interrupt interval (µs)",
            pick(vec![0.0, 20.0], vec![0.0, 1.0, 5.0, 20.0, 50.0]),
            |v| Timestamps {
                batch_interval: Dur::from_secs_f64(v * 1e-6),
                ..Timestamps::default()
            },
            |v, _| Dur::from_secs_f64(v * 1e-6),
        ),
        (
            "clock_drift_ppm",
            "receiver clock drift (ppm)",
            pick(vec![0.0, 10.0], vec![0.0, 1.0, 10.0, 50.0]),
            |v| Timestamps {
                clock_drift_ppm: v,
                ..Timestamps::default()
            },
            |v, run| run.mul_f64(v * 1e-6),
        ),
    ]
}

/// `dx-queue`: queueing delay and utilization of DX and DCTCP, and DX's sensitivity to
/// measurement errors.
pub fn dx_queue(ctx: &Ctx) -> Result<Value, String> {
    let speeds = [1u64, 10];
    let ns: Vec<usize> = ctx.pick(vec![2, 10], vec![2, 10, 20, 30]);
    let (warm_ms, dur_ms) = ctx.pick((20u64, 60u64), (50, 250));
    let schemes = [
        Scheme::Dx,
        Scheme::DxTestbed,
        Scheme::DxTestbedHeadroom,
        Scheme::Dctcp,
    ];
    let mut runs = Vec::new();
    let mut cases = Vec::new();
    for &g in &speeds {
        for &n in &ns {
            for &s in &schemes {
                let spec = scheme_scenario(s, n, g, warm_ms, dur_ms);
                runs.push(RunSpec::new(format!("{}-{g}g-n{n}", s.key()), spec));
                cases.push((s, g, n));
            }
        }
    }
    // Sensitivity: 2 DX flows at 10 Gb/s, one error source at a time.
    let (sens_g, sens_n) = (10u64, 2usize);
    let srcs = sources(ctx.quick);
    let mut sens = Vec::new();
    for (key, _, values, errors, threshold) in &srcs {
        for &v in values {
            for variant in ["dx", "dx-threshold"] {
                let cc = CcSpec::Dx(DxConfig {
                    measurement: Measurement::Timestamps(errors(v)),
                    threshold: if variant == "dx" {
                        Dur::ZERO
                    } else {
                        threshold(v, Dur::from_ms(dur_ms))
                    },
                    ..DxConfig::default()
                });
                let spec = scenario(sens_n, sens_g, cc, drop_tail(), warm_ms, dur_ms);
                runs.push(RunSpec::new(format!("noise-{variant}-{key}-{v}"), spec));
                sens.push((variant, *key, v));
            }
        }
    }
    let results = ctx.run_many(runs)?;
    let (main, noisy) = results.split_at(cases.len());
    let mut out = json!({});
    let mut rows = Vec::new();
    let mut pts: BTreeMap<(u64, &str, &str), Points> = BTreeMap::new();
    for (&(s, g, n), r) in cases.iter().zip(main) {
        let d = delays_us(r, g);
        let (p50, p99, u) = (
            nearest_rank(&d, 0.5),
            nearest_rank(&d, 0.99),
            utilization(r),
        );
        let mean = d.iter().sum::<f64>() / d.len().max(1) as f64;
        let (sk, gk, nk) = (s.key(), k(g), k(n));
        put(&mut out, &["queue_delay_us", sk, &gk, &nk, "mean"], mean);
        put(&mut out, &["queue_delay_us", sk, &gk, &nk, "p50"], p50);
        put(&mut out, &["queue_delay_us", sk, &gk, &nk, "p99"], p99);
        put(&mut out, &["utilization", sk, &gk, &nk], u);
        put(
            &mut out,
            &["drops", sk, &gk, &nk],
            r.summary["packets_dropped"].clone(),
        );
        rows.push(vec![
            sk.to_string(),
            gk,
            nk,
            format!("{mean:.3}"),
            format!("{p50:.3}"),
            format!("{p99:.3}"),
            format!("{u:.4}"),
        ]);
        pts.entry((g, sk, "p50")).or_default().push((n as f64, p50));
        pts.entry((g, sk, "util")).or_default().push((n as f64, u));
    }
    // The claim, as measured: DCTCP's queueing delay over DX's, at each speed and flow
    // count (null where DX's is zero).
    for &g in &speeds {
        for &n in &ns {
            for (stat, key) in [
                ("p50", "median_ratio_dctcp_over_dx"),
                ("mean", "mean_ratio_dctcp_over_dx"),
            ] {
                let get = |o: &Value, s: &str| o["queue_delay_us"][s][k(g)][k(n)][stat].as_f64();
                for (dx, at) in [
                    ("dx", key.to_string()),
                    ("dx-testbed", format!("{key}_testbed")),
                ] {
                    if let (Some(dx), Some(dc)) = (get(&out, dx), get(&out, "dctcp")) {
                        let ratio = if dx > 0.0 {
                            Value::from(dc / dx)
                        } else {
                            Value::Null
                        };
                        put(&mut out, &["ratios", &at, &k(g), &k(n)], ratio);
                    }
                }
            }
        }
    }
    let mut sens_rows = Vec::new();
    let mut sens_pts: BTreeMap<(&str, &str), Vec<(f64, f64)>> = BTreeMap::new();
    for (&(variant, key, v), r) in sens.iter().zip(noisy) {
        let d = delays_us(r, sens_g);
        let (p50, u) = (nearest_rank(&d, 0.5), utilization(r));
        let vk = format!("{v}");
        let section = if variant == "dx" {
            "sensitivity"
        } else {
            "sensitivity_threshold"
        };
        put(&mut out, &[section, key, &vk, "utilization"], u);
        put(&mut out, &[section, key, &vk, "queue_delay_us_p50"], p50);
        put(
            &mut out,
            &[section, key, &vk, "queue_delay_us_p99"],
            nearest_rank(&d, 0.99),
        );
        sens_rows.push(vec![
            variant.to_string(),
            key.to_string(),
            vk,
            format!("{u:.4}"),
            format!("{p50:.3}"),
        ]);
        sens_pts.entry((key, variant)).or_default().push((v, u));
    }
    ctx.write_csv(
        "queue.csv",
        &[
            "scheme",
            "link_gbps",
            "flows",
            "queue_delay_us_mean",
            "queue_delay_us_p50",
            "queue_delay_us_p99",
            "utilization",
        ],
        &rows,
    )?;
    ctx.write_csv(
        "sensitivity.csv",
        &[
            "variant",
            "error",
            "value",
            "utilization",
            "queue_delay_us_p50",
        ],
        &sens_rows,
    )?;
    let mut panels = Vec::new();
    for &g in &speeds {
        let series = |what: &str| {
            schemes
                .iter()
                .map(|s| to_series(s.key(), &pts[&(g, s.key(), what)]))
                .collect()
        };
        panels.push(
            Panel::line(
                format!("{g} Gb/s: median queueing delay"),
                "flows",
                "µs",
                series("p50"),
            )
            .points(),
        );
        panels.push(
            Panel::line(
                format!("{g} Gb/s: utilization"),
                "flows",
                "utilization",
                series("util"),
            )
            .points(),
        );
    }
    ctx.plot(&Plot {
        file: "dx_queue".into(),
        panels,
    })?;
    ctx.plot(&Plot {
        file: "dx_sensitivity".into(),
        panels: srcs
            .iter()
            .map(|(key, label, _, _, _)| {
                Panel::line(
                    format!("DX, {sens_n} flows at {sens_g} Gb/s"),
                    label,
                    "utilization",
                    vec![
                        to_series("dx (threshold 0)", &sens_pts[&(*key, "dx")]),
                        to_series(
                            "dx, threshold at the error's size (ours)",
                            &sens_pts[&(*key, "dx-threshold")],
                        ),
                    ],
                )
                .points()
            })
            .collect(),
    })?;
    put(
        &mut out,
        &["parameters"],
        json!({
            "topology": "dumbbell, N pairs, host links and bottleneck at the same rate, 20 us + \
                10 us + 20 us (base RTT 100 us)",
            "starts": "spread evenly over the first 10 ms",
            "warmup_ms": warm_ms,
            "duration_ms": dur_ms,
            "sampling": "bottleneck queue every 20 us in the window; delay = bytes x 8 / rate",
            "dctcp": "K = 20 packets at 1 Gb/s, 65 at 10 Gb/s (DCTCP paper), g = 1/16, 250-packet \
                buffers",
            "dx": "exact queueing-delay feedback, V = T + Q, mean per window, threshold 0, \
                no headroom, drop-tail 250-packet buffers",
            "dx_testbed": {
                "about": "the talk's conditions: software timestamps at 1 Gb/s, NIC timestamps \
                    at 10 Gb/s, batch and drift calibrated; the residual error and threshold \
                    are ours (the paper's were not available); dx-testbed-headroom adds one \
                    segment of headroom per cut (our reading of the paper's headroom)",
                "1": testbed_json(1),
                "10": testbed_json(10),
            },
            "sensitivity": "2 DX flows at 10 Gb/s, measurement = timestamps with one error \
                source at a time, no calibration; threshold 0 (DX's rule), and our variant \
                (sensitivity_threshold) with a threshold at the error's size: 10 x the mean \
                stack delay, the batch interval, drift x run length",
            "seed": 1,
        }),
    );
    Ok(out)
}
