//! `fct-ps`: packet-level transports beside processor sharing, the ideal fair-sharing
//! transport, on one bottleneck.
//!
//! Two hosts on one switch exchange Poisson web-search flows at load 0.5 of their links,
//! so each direction is a single 10 Gb/s bottleneck. The reference (series `ps`) is fluid
//! processor sharing on the same arrivals (`dcsim_metrics::reference`), in wire bytes, plus each flow's fixed
//! latency (propagation and store-and-forward of its unloaded FCT): what a transport with
//! perfect, instantaneous fair sharing and empty queues would achieve. M/G/1-PS theory puts
//! its mean slowdown near 1/(1 − 0.5) = 2 for long flows.

use dcsim::engine::Dur;
use dcsim::metrics::analysis::{BUCKET_SETS, FlowSample, bucket_stats};
use dcsim::metrics::reference::processor_sharing;
use dcsim::transport::TcpProfile;
use dcsim::workload::{BuiltinCdf, LoadBasis};
use dcsim::{Results, ScenarioSpec};
use serde_json::{Value, json};

use crate::build::{self, FatTreeScheme as Scheme};
use crate::common::{Ctx, Panel, Plot, RunSpec, Series, put, rows};

const GBPS: u64 = 10;
const LOAD: f64 = 0.5;

/// The scenario of one run.
fn scenario(scheme: Scheme, flows: u64) -> ScenarioSpec {
    let mut s = build::scenario(build::sim(None, Dur::ZERO), build::star(2, GBPS));
    scheme.configure(&mut s, GBPS);
    // Not an ns-2 reproduction: each sender's NIC is the only bottleneck here, and without
    // back-pressure (`ns2`) DCTCP would see no ECN at all, only drops at its own NIC.
    build::tcp_profile(&mut s, TcpProfile::Simple);
    s.generators = vec![build::poisson(
        LOAD,
        LoadBasis::HostLinks,
        BuiltinCdf::Websearch,
        flows,
    )];
    s
}

/// Processor sharing's FCT of every flow of a run (same arrivals and sizes), as bucket
/// samples.
fn ps_samples(r: &Results) -> Vec<FlowSample> {
    let cap = GBPS as f64 * 1e9;
    let wire_bits = |size: u64| (size as f64 * 1538.0 / 1460.0) * 8.0;
    let mut out = Vec::new();
    for dst in [0u32, 1] {
        let mine: Vec<_> = rows(r)
            .iter()
            .filter(|f| f.dst == dst && f.size_bytes.is_some() && f.unloaded_fct_ns.is_some())
            .collect();
        let input: Vec<(f64, f64)> = mine
            .iter()
            .map(|f| {
                (
                    f.start_ns as f64 / 1e9,
                    wire_bits(f.size_bytes.unwrap_or(0)),
                )
            })
            .collect();
        let ps = processor_sharing(&input, cap);
        for (f, t) in mine.iter().zip(ps) {
            let size = f.size_bytes.unwrap_or(0);
            let ideal = f.unloaded_fct_ns.unwrap_or(0) as f64 / 1e9;
            // The unloaded FCT less its serialization is the fixed latency of the path.
            let latency = (ideal - wire_bits(size) / cap).max(0.0);
            let fct = t + latency;
            out.push(FlowSample {
                size_bytes: size,
                fct_us: Some(fct * 1e6),
                slowdown: Some(fct / ideal),
            });
        }
    }
    out
}

/// `fct-ps`: mean and p99 slowdown per size bucket, each scheme beside processor sharing.
pub fn fct_ps(ctx: &Ctx) -> Result<Value, String> {
    let flows = ctx.pick(2_000u64, 20_000);
    let schemes = [Scheme::Xpass, Scheme::Dctcp];
    let runs = schemes
        .iter()
        .map(|&s| RunSpec::new(s.key(), scenario(s, flows)))
        .collect();
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    // Both runs draw the same arrivals (same seed and generator); processor sharing uses the first.
    let arrivals = |r: &Results| -> Vec<(u64, Option<u64>)> {
        rows(r).iter().map(|f| (f.start_ns, f.size_bytes)).collect()
    };
    if results
        .windows(2)
        .any(|w| arrivals(&w[0]) != arrivals(&w[1]))
    {
        return Err("the schemes' runs drew different flows".into());
    }
    let ps = bucket_stats(&ps_samples(&results[0]));
    let names: Vec<&str> = ps.iter().map(|b| b.bucket).collect();
    let mut rows = Vec::new();
    let mut mean_series = Vec::new();
    let mut p99_series = Vec::new();
    let fine: Vec<String> = BUCKET_SETS[0]
        .buckets
        .iter()
        .map(|b| b.name.to_string())
        .collect();
    let mut add = |label: &str, stats: &[dcsim::metrics::analysis::BucketStats]| {
        for b in stats {
            put(
                &mut out,
                &["slowdown", label, b.bucket, "mean"],
                b.slowdown_mean,
            );
            put(
                &mut out,
                &["slowdown", label, b.bucket, "p99"],
                b.slowdown_p99,
            );
            put(&mut out, &["slowdown", label, b.bucket, "flows"], b.flows);
            rows.push(vec![
                label.to_string(),
                b.set.to_string(),
                b.bucket.to_string(),
                b.flows.to_string(),
                b.completed.to_string(),
                format!("{:.4}", b.slowdown_mean),
                format!("{:.4}", b.slowdown_p50),
                format!("{:.4}", b.slowdown_p99),
                format!("{:.3}", b.fct_us_mean),
            ]);
        }
        let pick = |f: fn(&dcsim::metrics::analysis::BucketStats) -> f64| Series {
            label: label.to_string(),
            x: (0..fine.len()).map(|i| i as f64).collect(),
            y: fine
                .iter()
                .map(|n| stats.iter().find(|b| b.bucket == n).map_or(0.0, f))
                .collect(),
        };
        mean_series.push(pick(|b| b.slowdown_mean));
        p99_series.push(pick(|b| b.slowdown_p99));
    };
    add("ps", &ps);
    for (s, r) in schemes.iter().zip(&results) {
        if r.buckets.iter().map(|b| b.bucket).collect::<Vec<_>>() != names {
            return Err("bucket sets differ between runs".into());
        }
        add(s.key(), &r.buckets);
    }
    for (s, r) in schemes.iter().zip(&results) {
        put(
            &mut out,
            &["data_drops", s.key()],
            r.summary["data_drops"].clone(),
        );
    }
    ctx.write_csv(
        "slowdown_buckets.csv",
        &[
            "scheme",
            "set",
            "bucket",
            "flows",
            "completed",
            "slowdown_mean",
            "slowdown_p50",
            "slowdown_p99",
            "fct_us_mean",
        ],
        &rows,
    )?;
    ctx.plot(&Plot {
        file: "slowdown_vs_ps".into(),
        panels: vec![
            Panel::bars(
                "mean slowdown per size bucket",
                fine.clone(),
                "slowdown",
                mean_series,
            )
            .logy(),
            Panel::bars("99th-percentile slowdown", fine, "slowdown", p99_series).logy(),
        ],
    })?;
    let x = results
        .iter()
        .zip(&schemes)
        .find(|(_, s)| **s == Scheme::Xpass)
        .map_or(0, |(r, _)| r.summary["data_drops"].as_u64().unwrap_or(0));
    put(&mut out, &["xpass_data_drops"], x);
    put(&mut out, &["ps_theory_mean_slowdown"], 1.0 / (1.0 - LOAD));
    put(
        &mut out,
        &["parameters"],
        json!({
            "flows": flows,
            "topology": "star of 2 hosts, 10 Gb/s, 5 us links: each direction one bottleneck",
            "workload": "Poisson, web search sizes, load 0.5 of the host links in wire bytes \
                (1538/1460)",
            "ps": "fluid processor sharing of the same arrivals in wire bytes at 10 Gb/s, plus \
                each flow's fixed latency (unloaded FCT less its serialization)",
            "schemes": "as in xpass-fattree (ExpressPass as the 2017 fat-tree script, DCTCP \
                with a 180-segment window cap), but DCTCP with TCP profile simple (no \
                handshake, initial window 10, host back-pressure)",
        }),
    );
    Ok(out)
}
