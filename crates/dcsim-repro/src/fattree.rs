//! The large-scale evaluation (the ExpressPass paper's "Realistic workloads"): `xpass-fattree`.
//!
//! The ExpressPass fat-tree script (`expresspass.md` §2.5): 192 hosts, 32 ToRs, 16
//! aggregation and 8 core switches, every link 10 (or 40) Gb/s and 4 µs plus 1 µs host
//! delay, symmetric ECMP, Poisson arrivals with uniform source and distinct destination, load
//! 0.6 of the ToR-uplink capacity counted in wire bytes, 100,000 flows, every flow measured.

use dcsim::engine::Dur;
use dcsim::metrics::analysis::BucketStats;
use dcsim::workload::{BuiltinCdf, LoadBasis};
use dcsim::{Results, ScenarioSpec};
use serde_json::{Value, json};

use crate::build::{self, FatTreeScheme as Scheme};
use crate::common::{Ctx, Panel, Plot, RunSpec, Series, put, rows, to_series};

/// Every scheme that exists, in the order of the tables.
const SCHEMES: &[Scheme] = &[
    Scheme::Xpass,
    Scheme::XpassHead,
    Scheme::Dctcp,
    Scheme::Hull,
    Scheme::Dx,
    Scheme::DxFrame,
];

/// The workloads: (key, built-in CDF).
const WORKLOADS: &[(&str, BuiltinCdf)] = &[
    ("datamining", BuiltinCdf::Datamining),
    ("websearch", BuiltinCdf::Websearch),
];

/// The scenario of one run.
fn scenario(workload: BuiltinCdf, gbps: u64, scheme: Scheme, flows: u64) -> ScenarioSpec {
    let mut s = build::scenario(build::sim(None, Dur::ZERO), build::xpass_fat_tree(gbps));
    scheme.configure(&mut s, gbps);
    s.generators = vec![build::poisson(0.6, LoadBasis::TorUplinks, workload, flows)];
    s
}

/// Switch-port queue figures of a run, KB (1000 B): the mean over switch ports of the
/// time-weighted average queue, and the largest queue of any switch port.
fn switch_queues_kb(r: &Results) -> (f64, f64) {
    let sw: Vec<_> = r.ports.iter().filter(|p| p.tier != "host").collect();
    let avg = sw.iter().map(|p| p.avg_queue_bytes).sum::<f64>() / sw.len().max(1) as f64;
    let max = sw.iter().map(|p| p.max_queue_bytes).max().unwrap_or(0);
    (avg / 1e3, max as f64 / 1e3)
}

fn bucket<'a>(r: &'a Results, name: &str) -> &'a BucketStats {
    r.buckets
        .iter()
        .find(|b| b.bucket == name)
        .expect("every run reports every bucket")
}

/// `xpass-fattree`: FCT per size bucket, queues per switch tier, drops, wasted credits.
pub fn fattree(ctx: &Ctx) -> Result<Value, String> {
    let flows = ctx.pick(500u64, 100_000);
    let speeds = [10u64, 40];
    let mut runs = Vec::new();
    let mut keys = Vec::new();
    for &(w, cdf) in WORKLOADS {
        for &g in &speeds {
            for &s in SCHEMES {
                runs.push(RunSpec::new(
                    format!("{w}-{g}g-{}", s.key()),
                    scenario(cdf, g, s, flows),
                ));
                keys.push((w, g, s));
            }
        }
    }
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    let mut bucket_rows = Vec::new();
    let mut tier_rows = Vec::new();
    let mut xpass_drops = 0u64;
    for (&(w, g, s), r) in keys.iter().zip(&results) {
        let gk = g.to_string();
        let sk = s.key();
        for b in r.buckets.iter().filter(|b| b.set != "all") {
            for (stat, v) in [
                ("mean", b.fct_us_mean),
                ("p50", b.fct_us_p50),
                ("p99", b.fct_us_p99),
                ("p999", b.fct_us_p999),
            ] {
                put(&mut out, &["fct_us", w, &gk, sk, b.bucket, stat], v);
            }
            put(
                &mut out,
                &["fct_us", w, &gk, sk, b.bucket, "flows"],
                b.flows,
            );
            bucket_rows.push(vec![
                w.to_string(),
                gk.clone(),
                sk.to_string(),
                b.set.to_string(),
                b.bucket.to_string(),
                b.flows.to_string(),
                b.completed.to_string(),
                format!("{:.3}", b.fct_us_mean),
                format!("{:.3}", b.fct_us_p50),
                format!("{:.3}", b.fct_us_p99),
                format!("{:.3}", b.fct_us_p999),
                format!("{:.4}", b.slowdown_mean),
                format!("{:.4}", b.slowdown_p99),
            ]);
        }
        let (avg, max) = switch_queues_kb(r);
        put(&mut out, &["queue_kb", w, &gk, sk, "avg"], avg);
        put(&mut out, &["queue_kb", w, &gk, sk, "max"], max);
        let drops = crate::common::summary_count(r, "data_drops")?;
        put(&mut out, &["drops", w, &gk, sk], drops);
        put(
            &mut out,
            &["flows_completed", w, &gk, sk],
            r.summary["flows_completed"].clone(),
        );
        put(
            &mut out,
            &["wall_seconds", w, &gk, sk],
            r.summary["wall_seconds"].clone(),
        );
        if matches!(s, Scheme::Xpass | Scheme::XpassHead) {
            xpass_drops += drops;
            let wasted = r.summary["by_transport"]["expresspass"]["credits_wasted"]
                .as_u64()
                .unwrap_or(0);
            let key = match s {
                Scheme::Xpass => "wasted_credits_per_flow",
                _ => "wasted_credits_per_flow_head",
            };
            put(
                &mut out,
                &[key, w, &gk],
                wasted as f64 / rows(r).len().max(1) as f64,
            );
        }
        for t in r.tiers.iter().filter(|t| !t.tier.starts_with("host->")) {
            tier_rows.push(vec![
                w.to_string(),
                gk.clone(),
                sk.to_string(),
                t.tier.clone(),
                t.ports.to_string(),
                format!("{:.4}", t.utilization_mean),
                format!("{:.3}", t.avg_queue_bytes_mean / 1e3),
                format!("{:.3}", t.avg_queue_bytes_max / 1e3),
                format!("{:.3}", t.max_queue_bytes as f64 / 1e3),
                t.drops.to_string(),
                t.data_drops.to_string(),
                t.credit_drops.to_string(),
                t.ecn_marks.to_string(),
            ]);
        }
    }
    // The ratios the claims read (claims.rs), kept for the reader.
    if SCHEMES.contains(&Scheme::Xpass) && SCHEMES.contains(&Scheme::Dctcp) {
        for (i, &(w, g, s)) in keys.iter().enumerate() {
            if s != Scheme::Xpass {
                continue;
            }
            let Some(j) = keys.iter().position(|&k| k == (w, g, Scheme::Dctcp)) else {
                continue;
            };
            let (x, d) = (&results[i], &results[j]);
            let gk = g.to_string();
            let small = |r: &Results| bucket(r, "0-10KB").fct_us_p99;
            let large = |r: &Results| bucket(r, "1MB+").fct_us_mean;
            put(
                &mut out,
                &["ratios", w, &gk, "small_flow_p99_ratio_xpass_over_dctcp"],
                small(x) / small(d),
            );
            put(
                &mut out,
                &["ratios", w, &gk, "large_flow_mean_ratio_xpass_over_dctcp"],
                large(x) / large(d),
            );
            put(
                &mut out,
                &["ratios", w, &gk, "max_queue_ratio_xpass_over_dctcp"],
                switch_queues_kb(x).1 / switch_queues_kb(d).1,
            );
        }
    }
    ctx.write_csv(
        "fct_buckets.csv",
        &[
            "workload",
            "link_gbps",
            "scheme",
            "set",
            "bucket",
            "flows",
            "completed",
            "fct_us_mean",
            "fct_us_p50",
            "fct_us_p99",
            "fct_us_p999",
            "slowdown_mean",
            "slowdown_p99",
        ],
        &bucket_rows,
    )?;
    ctx.write_csv(
        "queues.csv",
        &[
            "workload",
            "link_gbps",
            "scheme",
            "tier",
            "ports",
            "utilization_mean",
            "avg_queue_kb_mean",
            "avg_queue_kb_max",
            "max_queue_kb",
            "drops",
            "data_drops",
            "credit_drops",
            "ecn_marks",
        ],
        &tier_rows,
    )?;
    plots(ctx, &keys, &results, &speeds)?;
    put(&mut out, &["xpass_data_drops"], xpass_drops);
    put(
        &mut out,
        &["parameters"],
        json!({
            "flows_per_run": flows,
            "topology": "fat-tree preset xpass: 192 hosts, 32 ToR, 16 aggregation, 8 core; every \
                link 4 us, host links +1 us",
            "load": "0.6 of the ToR-uplink capacity (640 Gb/s at 10 Gb/s), wire bytes 1538 per \
                1460 payload",
            "arrivals": "Poisson from t = 0, source uniform, destination uniform among the others",
            "measured": "every flow (no warm-up or cool-down exclusion, as the script)",
            "expresspass": "the script's first version (October 2017, before AIR and ECS; the \
                paper's likely setting): the code law, alpha = w_init = 1/16, credit sizes \
                76..92 B, request and NACK timeout 100 us, 8-credit queues and 2-credit bursts \
                on every port incl. NICs",
            "expresspass-head": "the script today (HEAD): the same with AIR and ECS on and \
                alpha = 1/2 (an extra series; its wasted credits under \
                wasted_credits_per_flow_head)",
            "dctcp": "K = 65 packets per 10 Gb/s, g = 1/16",
            "tcp": build::TCP_BASELINE_ABOUT,
            "hull": "phantom queues on every switch port (gamma 0.95, mark above 1 KB), DCTCP \
                hosts (g = 1/16) with the NIC pacer (eta 0.125, beta 1, T_r 64 us, association \
                1/8 per ECN echo for 10 ms); not the paper's settings, which are unknown",
            "dx": "exact queueing-delay feedback, V = T + Q, mean per window, drop-tail switch \
                ports; not the paper's settings, which are unknown",
            "dx-frame-threshold": "DX as dx, but a queueing delay up to one 1538 B frame's \
                transmission time at the link rate (1.23 us at 10 Gb/s, 0.31 us at 40) counts \
                as none (ours: the paper's threshold is not known)",
            "tcp_schemes": "DCTCP, HULL and DX (both series) all run over the TCP of key tcp",
            "buffers": "switch ports 250 x 1538 B per 10 Gb/s, NICs 1000 x 1538 B",
            "kb": "1000 B",
            "seed": 1,
        }),
    );
    Ok(out)
}

/// Per workload and speed: mean and p99 FCT per size bucket (grouped bars) and the FCT
/// CDF; average and largest queue per switch tier.
fn plots(
    ctx: &Ctx,
    keys: &[(&str, u64, Scheme)],
    results: &[Results],
    speeds: &[u64],
) -> Result<(), String> {
    let fine: Vec<String> = dcsim::metrics::analysis::BUCKET_SETS[0]
        .buckets
        .iter()
        .map(|b| b.name.to_string())
        .collect();
    for &(w, _) in WORKLOADS {
        for &g in speeds {
            let mut means = Vec::new();
            let mut p99s = Vec::new();
            let mut cdfs = Vec::new();
            let mut tiers: Vec<String> = Vec::new();
            let (mut avg_q, mut max_q) = (Vec::new(), Vec::new());
            for (&(kw, kg, s), r) in keys.iter().zip(results) {
                if (kw, kg) != (w, g) {
                    continue;
                }
                let xs: Vec<f64> = (0..fine.len()).map(|i| i as f64).collect();
                let stat = |f: fn(&BucketStats) -> f64| Series {
                    label: s.key().into(),
                    x: xs.clone(),
                    y: fine.iter().map(|b| f(bucket(r, b))).collect(),
                };
                let sw: Vec<_> = r
                    .tiers
                    .iter()
                    .filter(|t| !t.tier.starts_with("host->"))
                    .collect();
                if tiers.is_empty() {
                    tiers = sw.iter().map(|t| t.tier.clone()).collect();
                }
                let tx: Vec<f64> = (0..sw.len()).map(|i| i as f64).collect();
                avg_q.push(Series {
                    label: s.key().into(),
                    x: tx.clone(),
                    y: sw.iter().map(|t| t.avg_queue_bytes_mean / 1e3).collect(),
                });
                max_q.push(Series {
                    label: s.key().into(),
                    x: tx,
                    y: sw.iter().map(|t| t.max_queue_bytes as f64 / 1e3).collect(),
                });
                means.push(stat(|b| b.fct_us_mean));
                p99s.push(stat(|b| b.fct_us_p99));
                let mut fct: Vec<f64> = rows(r)
                    .iter()
                    .filter_map(|f| f.fct_ns)
                    .map(|x| x as f64 / 1e3)
                    .collect();
                fct.sort_by(f64::total_cmp);
                let n = fct.len() as f64;
                let step = (fct.len() / 1000).max(1);
                let pts: Vec<(f64, f64)> = fct
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| i % step == 0 || *i + 1 == fct.len())
                    .map(|(i, &x)| (x, (i + 1) as f64 / n))
                    .collect();
                cdfs.push(to_series(s.key(), &pts));
            }
            ctx.plot(&Plot {
                file: format!("fct_{w}_{g}g"),
                panels: vec![
                    Panel::bars(
                        format!("{w}, {g} Gb/s: mean FCT"),
                        fine.clone(),
                        "FCT (us)",
                        means,
                    )
                    .logy(),
                    Panel::bars(
                        format!("{w}, {g} Gb/s: 99th-percentile FCT"),
                        fine.clone(),
                        "FCT (us)",
                        p99s,
                    )
                    .logy(),
                    Panel::line(format!("{w}, {g} Gb/s: FCT CDF"), "FCT (us)", "CDF", cdfs)
                        .logx10(),
                ],
            })?;
            ctx.plot(&Plot {
                file: format!("queues_{w}_{g}g"),
                panels: vec![
                    Panel::bars(
                        format!("{w}, {g} Gb/s: average queue per switch port"),
                        tiers.clone(),
                        "KB (mean over the tier's ports)",
                        avg_q,
                    ),
                    Panel::bars(
                        format!("{w}, {g} Gb/s: largest queue"),
                        tiers,
                        "KB (largest port of the tier)",
                        max_q,
                    ),
                ],
            })?;
        }
    }
    Ok(())
}
