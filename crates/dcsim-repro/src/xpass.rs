//! The ExpressPass microbenchmarks (experiments.md, "ExpressPass microbenchmarks").
//!
//! Choices the papers leave open are recorded under `parameters` in each result.json and
//! on docs/protocols/expresspass.md.

use dcsim::Results;
use dcsim::engine::Time;
use dcsim::metrics::jain;
use dcsim::net::HostId;
use dcsim::transport::FlowSpec;
use serde_json::{Value, json};

use crate::common::{Ctx, Panel, Plot, RunSpec, Scheme, Series, k, mean, put, series, to_series};

/// Goodput of one flow at the full credit rate: line · 84/1622 credits of 84 B, each
/// releasing 1460 B of payload.
fn xpass_max_goodput_gbps(gbps: f64) -> f64 {
    gbps * 84.0 / 1622.0 / 84.0 * 1460.0
}

/// A dumbbell of `pairs` pairs at `gbps` (host links 20 µs, bottleneck 10 µs: base RTT
/// 100 µs), with the scheme's tables and `body` (flows, generators, output).
fn dumbbell(
    pairs: usize,
    gbps: u64,
    scheme: Scheme,
    credit_buffer: u64,
    extra: &str,
    sim: &str,
    body: &str,
) -> String {
    format!(
        "[sim]\n{sim}\n[topology]\nkind = \"dumbbell\"\npairs = {pairs}\n\
         host_link = {{ rate = \"{gbps}Gbps\", delay = \"20us\" }}\n\
         bottleneck = {{ rate = \"{gbps}Gbps\", delay = \"10us\" }}\n{}{body}\n",
        scheme.tables(gbps, credit_buffer, extra)
    )
}

fn port<'a>(r: &'a Results, node: &str, peer: &str) -> &'a dcsim::metrics::PortRow {
    r.ports
        .iter()
        .find(|p| p.node == node && p.peer == peer)
        .expect("port exists in the topology")
}

fn data_drops(r: &Results) -> u64 {
    r.summary["data_drops"].as_u64().unwrap_or(0)
}

/// Per-flow goodput series (µs, Gb/s), flows in id order.
fn goodputs(r: &Results) -> Vec<Vec<(f64, f64)>> {
    let mut m: Vec<(u32, Vec<(f64, f64)>)> = series(r, "throughput_gbps")
        .into_iter()
        .map(|(id, v)| (id.parse().unwrap_or(0), v))
        .collect();
    m.sort_by_key(|x| x.0);
    m.into_iter().map(|x| x.1).collect()
}

/// Convergence time after `join_us`: the start of the first window of `w` bins in which
/// both flows stay within 10 % of `fair` Gb/s. `None` if no such window exists.
/// Convergence time after `join_us`: the end of the first bin from which both flows,
/// averaged over the trailing `smooth` bins, stay within 10 % of `fair` Gb/s until the end
/// of the run, minus the join time. `None` if they never settle.
fn convergence_us(
    a: &[(f64, f64)],
    b: &[(f64, f64)],
    join_us: f64,
    fair: f64,
    smooth: usize,
) -> Option<f64> {
    let n = a.len().min(b.len());
    let avg = |s: &[(f64, f64)], i: usize| {
        mean(
            &s[i + 1 - smooth.min(i + 1)..=i]
                .iter()
                .map(|p| p.1)
                .collect::<Vec<_>>(),
        )
    };
    let ok =
        |i: usize| (avg(a, i) - fair).abs() <= 0.1 * fair && (avg(b, i) - fair).abs() <= 0.1 * fair;
    // Only bins that lie entirely after the join (and whose averaging window does too).
    let first = a.iter().position(|p| p.0 > join_us)? + smooth - 1;
    let mut settled = None;
    for i in (first..n).rev() {
        if !ok(i) {
            break;
        }
        settled = Some(i);
    }
    settled.map(|i| a[i].0 - join_us)
}

/// `xpass-convergence`: one long flow, a second joins; ExpressPass (paper law) vs DCTCP at
/// 10 and 100 Gb/s, base RTT 100 µs.
pub fn convergence(ctx: &Ctx) -> Result<Value, String> {
    let mut runs = Vec::new();
    let mut cases = Vec::new();
    for gbps in [10u64, 100] {
        for scheme in [Scheme::Xpass("paper"), Scheme::Xpass("code"), Scheme::Dctcp] {
            // Throughput per RTT for ExpressPass, per 10 RTTs for DCTCP (as the paper plots).
            let (bin_us, join_ms, after_ms) = match scheme {
                Scheme::Xpass(_) => (100u64, 2u64, ctx.pick(5, 20)),
                Scheme::Dctcp => (
                    1000,
                    20,
                    ctx.pick(
                        if gbps >= 100 { 150 } else { 80 },
                        if gbps >= 100 { 600 } else { 300 },
                    ),
                ),
            };
            let sim = format!("duration = \"{}ms\"\nseed = 1", join_ms + after_ms);
            let body = format!(
                "[[flows]]\nsrc = 0\ndst = 2\n[[flows]]\nsrc = 1\ndst = 3\nstart = \"{join_ms}ms\"\n\
                 [output.timeseries]\nevery = \"{bin_us}us\"\nflows = \"all\"\n"
            );
            runs.push(RunSpec::new(
                format!("{}-{gbps}g", scheme.key()),
                dumbbell(2, gbps, scheme, 2, "", &sim, &body),
            ));
            cases.push((gbps, scheme, bin_us as f64, join_ms as f64 * 1000.0));
        }
    }
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    let mut rows = Vec::new();
    let mut xpass_drops = 0;
    for ((gbps, scheme, _bin_us, join_us), r) in cases.iter().zip(&results) {
        let g = goodputs(r);
        let alone: Vec<f64> = g[0]
            .iter()
            .filter(|p| p.0 > join_us / 2.0 && p.0 <= *join_us)
            .map(|p| p.1)
            .collect();
        let fair = mean(&alone) / 2.0;
        // ExpressPass bins are one RTT; a 5-RTT trailing average keeps per-RTT packet
        // quantization (about ±2 packets of 40) from reading as non-convergence.
        let smooth = if matches!(scheme, Scheme::Xpass(_)) {
            5
        } else {
            1
        };
        let conv = convergence_us(&g[0], &g[1], *join_us, fair, smooth);
        let key = scheme.key();
        match conv {
            Some(us) => {
                put(&mut out, &["convergence_us", key, &k(gbps)], us);
                put(&mut out, &["convergence_rtts", key, &k(gbps)], us / 100.0);
            }
            None => put(&mut out, &["convergence_us", key, &k(gbps)], Value::Null),
        }
        put(&mut out, &["single_flow_gbps", key, &k(gbps)], fair * 2.0);
        put(&mut out, &["data_drops", key, &k(gbps)], data_drops(r));
        if matches!(scheme, Scheme::Xpass(_)) {
            xpass_drops += data_drops(r);
        }
        for (i, f) in g.iter().enumerate() {
            for p in f {
                rows.push(vec![
                    key.to_string(),
                    k(gbps),
                    k(i),
                    format!("{:.1}", p.0 - join_us),
                    format!("{:.4}", p.1),
                ]);
            }
        }
    }
    ctx.write_csv(
        "throughput.csv",
        &[
            "scheme",
            "gbps",
            "flow",
            "time_since_join_us",
            "goodput_gbps",
        ],
        &rows,
    )?;
    for gbps in [10u64, 100] {
        let mut panels = Vec::new();
        for ((g2, scheme, _, join_us), r) in cases.iter().zip(&results) {
            if *g2 != gbps {
                continue;
            }
            let series: Vec<Series> = goodputs(r)
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let pts: Vec<(f64, f64)> =
                        f.iter().map(|p| ((p.0 - join_us) / 1000.0, p.1)).collect();
                    to_series(format!("flow {i}"), &pts)
                })
                .collect();
            let per = if matches!(scheme, Scheme::Xpass(_)) {
                "per RTT"
            } else {
                "per 10 RTTs"
            };
            panels.push(Panel::line(
                format!("{} {gbps} Gb/s (goodput {per})", scheme.key()),
                "time since join (ms)",
                "goodput (Gb/s)",
                series,
            ));
        }
        ctx.plot(&Plot {
            file: format!("convergence_{gbps}g"),
            panels,
        })?;
    }
    put(&mut out, &["xpass_data_drops"], xpass_drops);
    put(
        &mut out,
        &["parameters"],
        json!({"topology": "dumbbell, 2 pairs, host links 20 us, bottleneck 10 us (base RTT 100 us)",
               "expresspass": "laws paper (key expresspass) and code (key expresspass-code); alpha = w_init = 0.5 (ns-2 defaults, as the authors' dumbbell script), credit queues of 2 credits with a 10-credit burst on switch ports, plain drop-tail host uplinks, jitter +-0.1",
               "dctcp": "K = 65, g = 1/16 at 10 Gb/s; K = 650, g = 0.01976 at 100 Gb/s; buffers 4K packets",
               "convergence": "end of the first bin from which both flows stay within 10 % of half the single-flow goodput until the end of the run, minus the join time; bins of 1 RTT averaged over the trailing 5 (ExpressPass) or of 10 RTTs (DCTCP)"}),
    );
    Ok(out)
}

/// `xpass-join-leave`: five flows join one by one, then leave one by one.
pub fn join_leave(ctx: &Ctx) -> Result<Value, String> {
    let step_ms: u64 = ctx.pick(20, 100);
    let schemes = [Scheme::Xpass("paper"), Scheme::Dctcp];
    let runs = schemes
        .iter()
        .map(|&s| {
            let sim = format!("duration = \"{}ms\"\nseed = 1", 10 * step_ms);
            let body = format!(
                "[[generators]]\npattern = {{ kind = \"pairs\", count = 5, src = 0, dst = 5, start_every = \"{step_ms}ms\", stop = \"{}ms\", stop_every = \"{step_ms}ms\" }}\n\
                 [output.timeseries]\nevery = \"1ms\"\nflows = \"all\"\nports = [\"left->right\", \"right->left\"]\n",
                5 * step_ms
            );
            RunSpec::new(s.key(), dumbbell(5, 10, s, 2, "", &sim, &body))
        })
        .collect();
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    let mut xpass_drops = 0;
    let mut panels = Vec::new();
    for (s, r) in schemes.iter().zip(&results) {
        let key = s.key();
        let b = port(r, "left", "right");
        put(
            &mut out,
            &["max_data_queue_bytes", key],
            b.max_data_queue_bytes,
        );
        if matches!(s, Scheme::Xpass(_)) {
            put(
                &mut out,
                &["max_credit_queue_bytes", key],
                port(r, "right", "left").max_credit_queue_bytes,
            );
            xpass_drops += data_drops(r);
        }
        put(&mut out, &["data_drops", key], data_drops(r));
        // Jain per step over the second half of each step (active flows only).
        let g = goodputs(r);
        let mut jains = Vec::new();
        for step in 0..10u64 {
            let active: Vec<usize> = (0..5)
                .filter(|&i| (i as u64) <= step && step < i as u64 + 5)
                .collect();
            if active.len() < 2 {
                continue;
            }
            let (lo, hi) = (
                ((step as f64) + 0.5) * step_ms as f64 * 1000.0,
                (step + 1) as f64 * step_ms as f64 * 1000.0,
            );
            let x: Vec<f64> = active
                .iter()
                .map(|&i| {
                    mean(
                        &g[i]
                            .iter()
                            .filter(|p| p.0 > lo && p.0 <= hi)
                            .map(|p| p.1)
                            .collect::<Vec<_>>(),
                    )
                })
                .collect();
            jains.push(jain(&x).unwrap_or(0.0));
        }
        put(&mut out, &["jain", key], mean(&jains));
        put(&mut out, &["jain_per_step", key], jains.clone());
        let mut series: Vec<Series> = g
            .iter()
            .enumerate()
            .map(|(i, f)| {
                to_series(
                    format!("flow {i}"),
                    &f.iter().map(|p| (p.0 / 1000.0, p.1)).collect::<Vec<_>>(),
                )
            })
            .collect();
        panels.push(Panel::line(
            format!("{key}: goodput per flow"),
            "time (ms)",
            "goodput (Gb/s)",
            std::mem::take(&mut series),
        ));
        let q = series_of(r, "queue_bytes", "left->right");
        panels.push(Panel::line(
            format!("{key}: bottleneck queue"),
            "time (ms)",
            "queue (KB)",
            vec![to_series(
                "left->right",
                &q.iter()
                    .map(|p| (p.0 / 1000.0, p.1 / 1000.0))
                    .collect::<Vec<_>>(),
            )],
        ));
    }
    ctx.plot(&Plot {
        file: "join_leave".into(),
        panels,
    })?;
    put(&mut out, &["xpass_data_drops"], xpass_drops);
    put(
        &mut out,
        &["parameters"],
        json!({"step_ms": step_ms, "order": "flows 0..4 join every step, then leave in the order they joined", "topology": "dumbbell 5 pairs, 10 Gb/s, base RTT 100 us", "jain": "over the second half of each step with >= 2 flows, averaged"}),
    );
    Ok(out)
}

/// For every sample time after `after_us` at which every flow has a sample, the flows'
/// values (flows created later have shorter series; they are aligned by time).
fn bins_after(g: &[Vec<(f64, f64)>], after_us: f64) -> Vec<Vec<f64>> {
    let mut by_time: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
    for f in g {
        for &(t, v) in f.iter().filter(|p| p.0 > after_us) {
            by_time.entry(t.round() as u64).or_default().push(v);
        }
    }
    by_time
        .into_values()
        .filter(|v| v.len() == g.len())
        .collect()
}

fn series_of(r: &Results, kind: &str, id: &str) -> Vec<(f64, f64)> {
    series(r, kind).remove(id).unwrap_or_default()
}

/// `xpass-flow-scalability`: N long flows with unsynchronized starts on one 10 Gb/s link.
pub fn flow_scalability(ctx: &Ctx) -> Result<Value, String> {
    let ns: Vec<usize> = ctx.pick(vec![4, 16, 64], vec![4, 16, 64, 256, 1024, 2048]);
    let interval_ms: u64 = ctx.pick(10, 100);
    let (warm_ms, dur_ms) = ctx.pick((40u64, 100u64), (200, 1200));
    let schemes = [Scheme::Xpass("paper"), Scheme::Dctcp];
    let mut runs = Vec::new();
    let mut cases = Vec::new();
    for &n in &ns {
        for &s in &schemes {
            let sim = format!("duration = \"{dur_ms}ms\"\nwarmup = \"{warm_ms}ms\"\nseed = 1");
            // Starts spread evenly over the first 10 ms (unsynchronized).
            let every_ps = 10_000_000_000u64 / n as u64;
            let body = format!(
                "[[generators]]\npattern = {{ kind = \"pairs\", count = {n}, src = 0, dst = {n}, start_every = \"{every_ps}ps\" }}\n\
                 [output.timeseries]\nevery = \"{interval_ms}ms\"\nflows = \"all\"\n"
            );
            runs.push(RunSpec::new(
                format!("{}-n{n}", s.key()),
                dumbbell(n, 10, s, 2, "", &sim, &body),
            ));
            cases.push((n, s));
        }
    }
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    let mut xpass_drops = 0;
    let mut pts: std::collections::BTreeMap<(&str, &str), Vec<(f64, f64)>> = Default::default();
    for ((n, s), r) in cases.iter().zip(&results) {
        let key = s.key();
        let b = port(r, "left", "right");
        let jains: Vec<f64> = bins_after(&goodputs(r), warm_ms as f64 * 1000.0)
            .iter()
            .map(|x| jain(x).unwrap_or(0.0))
            .collect();
        let util = b.utilization;
        let q = if matches!(s, Scheme::Xpass(_)) {
            b.max_data_queue_bytes
        } else {
            b.max_queue_bytes
        };
        put(&mut out, &["utilization", key, &k(n)], util);
        put(&mut out, &["jain", key, &k(n)], mean(&jains));
        put(&mut out, &["max_queue_bytes", key, &k(n)], q);
        put(&mut out, &["data_drops", key, &k(n)], data_drops(r));
        if matches!(s, Scheme::Xpass(_)) {
            xpass_drops += data_drops(r);
        }
        pts.entry((key, "util"))
            .or_default()
            .push((*n as f64, util));
        pts.entry((key, "jain"))
            .or_default()
            .push((*n as f64, mean(&jains)));
        pts.entry((key, "queue"))
            .or_default()
            .push((*n as f64, q as f64 / 1000.0));
    }
    let panel = |what: &str, title: &str, y: &str| {
        Panel::line(
            title,
            "flows",
            y,
            schemes
                .iter()
                .map(|s| to_series(s.key(), &pts[&(s.key(), what)]))
                .collect(),
        )
        .points()
        .logx()
    };
    ctx.plot(&Plot {
        file: "flow_scalability".into(),
        panels: vec![
            panel("util", "bottleneck utilization", "utilization"),
            panel(
                "jain",
                format!("Jain index over {interval_ms} ms").as_str(),
                "Jain",
            ),
            panel("queue", "max queue (data)", "KB"),
        ],
    })?;
    put(&mut out, &["xpass_data_drops"], xpass_drops);
    put(
        &mut out,
        &["parameters"],
        json!({"interval_ms": interval_ms, "warmup_ms": warm_ms, "duration_ms": dur_ms, "starts": "evenly spread over the first 10 ms", "topology": "dumbbell N pairs, 10 Gb/s, base RTT 100 us", "dctcp_min_cwnd_pkts": 2}),
    );
    Ok(out)
}

const LAWS: [&str; 4] = ["none", "workshop", "paper", "code"];

fn parking_lot(n: usize, law: &str, sim: &str, body: &str) -> String {
    format!(
        "[sim]\n{sim}\n[topology]\nkind = \"parking-lot\"\nbottlenecks = {n}\n{}{body}\n",
        Scheme::Xpass("paper")
            .tables(10, 2, "")
            .replace("law = \"paper\"", &format!("law = \"{law}\""))
    )
}

/// `xpass-multi-bottleneck`: a long flow across N links in series, one cross flow per
/// link; the least-utilized link, normalized to the maximum data rate, per law.
pub fn multi_bottleneck(ctx: &Ctx) -> Result<Value, String> {
    let (warm, dur) = ctx.pick(("5ms", "25ms"), ("50ms", "250ms"));
    let mut runs = Vec::new();
    let mut cases = Vec::new();
    for n in 1..=6usize {
        for law in LAWS {
            let sim = format!("duration = \"{dur}\"\nwarmup = \"{warm}\"\nseed = 1");
            let body = format!(
                "[[flows]]\nsrc = 0\ndst = 1\n\
                 [[generators]]\npattern = {{ kind = \"pairs\", count = {n}, src = 2, src_step = 2, dst = 3, dst_step = 2 }}\n"
            );
            runs.push(RunSpec::new(
                format!("{law}-n{n}"),
                parking_lot(n, law, &sim, &body),
            ));
            cases.push((n, law));
        }
    }
    let results = ctx.run_many(runs)?;
    let max_data = 1538.0 / 1622.0;
    let mut out = json!({});
    let mut xpass_drops = 0;
    let mut pts: std::collections::BTreeMap<&str, Vec<(f64, f64)>> = Default::default();
    for ((n, law), r) in cases.iter().zip(&results) {
        let min = (0..*n)
            .map(|i| {
                let p = port(r, &format!("r{i}"), &format!("r{}", i + 1));
                p.tx_data_bytes as f64 * 8.0 / (p.rate_gbps * 1e9) / window_secs(r)
            })
            .fold(f64::MAX, f64::min)
            / max_data;
        put(&mut out, &["min_link_utilization", law, &k(n)], min);
        xpass_drops += data_drops(r);
        pts.entry(law).or_default().push((*n as f64, min));
    }
    ctx.plot(&Plot {
        file: "multi_bottleneck".into(),
        panels: vec![
            Panel::line(
                "least-utilized link",
                "bottlenecks in series",
                "utilization / max data rate",
                LAWS.iter().map(|l| to_series(*l, &pts[l])).collect(),
            )
            .points(),
        ],
    })?;
    put(&mut out, &["xpass_data_drops"], xpass_drops);
    put(&mut out, &["data_drops_total"], xpass_drops);
    put(
        &mut out,
        &["parameters"],
        json!({"topology": "parking lot, 10 Gb/s, 4 us links", "flows": "long flow 0->1 across all links, one cross flow per link, all from t = 0", "normalization": "data bytes / (rate x window), divided by 1538/1622", "profile": "paper, with law overridden", "warmup": warm, "duration": dur}),
    );
    Ok(out)
}

fn window_secs(r: &Results) -> f64 {
    let end = r.summary["sim_time_ns"].as_f64().unwrap_or(0.0);
    let start = r.summary["window_start_ns"].as_f64().unwrap_or(0.0);
    ((end - start) / 1e9).max(1e-12)
}

/// `xpass-multi-bottleneck-fairness`: flow 0 crosses two links; N flows share the second.
pub fn multi_bottleneck_fairness(ctx: &Ctx) -> Result<Value, String> {
    let ns: Vec<usize> = ctx.pick(vec![1, 2, 4, 8], vec![1, 2, 4, 8, 16, 32]);
    let (warm, dur) = ctx.pick(("10ms", "40ms"), ("50ms", "250ms"));
    let mut runs = Vec::new();
    let mut cases = Vec::new();
    for &n in &ns {
        for law in LAWS {
            let sim = format!("duration = \"{dur}\"\nwarmup = \"{warm}\"\nseed = 1");
            // Link 1 joins r1 and r2; its cross hosts are 4 (at r1) and 5 (at r2).
            let body = format!(
                "[[flows]]\nsrc = 0\ndst = 1\n[[generators]]\npattern = {{ kind = \"pairs\", count = {n}, src = 4, src_step = 0, dst = 5, dst_step = 0 }}\n"
            );
            runs.push(RunSpec::new(
                format!("{law}-n{n}"),
                parking_lot(2, law, &sim, &body),
            ));
            cases.push((n, law));
        }
    }
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    let mut xpass_drops = 0;
    let full = xpass_max_goodput_gbps(10.0);
    let mut pts: std::collections::BTreeMap<&str, Vec<(f64, f64)>> = Default::default();
    for ((n, law), r) in cases.iter().zip(&results) {
        let share = r.flows[0].window_goodput_gbps / full;
        put(&mut out, &["flow0_share", law, &k(n)], share);
        put(&mut out, &["maxmin_share", &k(n)], 1.0 / (*n as f64 + 1.0));
        xpass_drops += data_drops(r);
        pts.entry(law).or_default().push((*n as f64, share));
        if *law == "none" {
            pts.entry("max-min")
                .or_default()
                .push((*n as f64, 1.0 / (*n as f64 + 1.0)));
        }
    }
    let mut s: Vec<Series> = LAWS.iter().map(|l| to_series(*l, &pts[l])).collect();
    s.push(to_series("max-min fair", &pts["max-min"]));
    ctx.plot(&Plot {
        file: "multi_bottleneck_fairness".into(),
        panels: vec![
            Panel::line(
                "flow 0 (two bottlenecks)",
                "flows on link 1",
                "share of the link",
                s,
            )
            .points()
            .logx(),
        ],
    })?;
    put(&mut out, &["xpass_data_drops"], xpass_drops);
    put(
        &mut out,
        &["parameters"],
        json!({"topology": "parking lot of 2 links, 10 Gb/s, 4 us", "flows": "flow 0: host 0 -> 1 across both links; N flows host 4 -> 5 across link 1 only", "share": "window goodput / single-flow goodput at the full credit rate (9.0 Gb/s)", "warmup": warm, "duration": dur}),
    );
    Ok(out)
}

/// `xpass-credit-queue`: credit queue capacity vs utilization (32 flows, 10 Gb/s).
pub fn credit_queue(ctx: &Ctx) -> Result<Value, String> {
    let caps: Vec<u64> = vec![1, 2, 4, 8, 16, 32, 64, 128];
    let (warm, dur) = ctx.pick(("10ms", "30ms"), ("50ms", "200ms"));
    let runs = caps
        .iter()
        .map(|&c| {
            let sim = format!("duration = \"{dur}\"\nwarmup = \"{warm}\"\nseed = 1");
            let body = "[[generators]]\npattern = { kind = \"pairs\", count = 32, src = 0, dst = 32, start_every = \"10us\" }\n";
            RunSpec::new(format!("credits-{c}"), dumbbell(32, 10, Scheme::Xpass("paper"), c, "", &sim, body))
        })
        .collect();
    let results = ctx.run_many(runs)?;
    let max_data = 1538.0 / 1622.0;
    let mut out = json!({});
    let mut xpass_drops = 0;
    let mut pts = Vec::new();
    for (c, r) in caps.iter().zip(&results) {
        let p = port(r, "left", "right");
        let u = p.tx_data_bytes as f64 * 8.0 / (p.rate_gbps * 1e9) / window_secs(r) / max_data;
        put(&mut out, &["utilization", &k(c)], u);
        xpass_drops += data_drops(r);
        pts.push((*c as f64, u));
    }
    ctx.plot(&Plot {
        file: "credit_queue".into(),
        panels: vec![
            Panel::line(
                "bottleneck utilization",
                "credit queue capacity (credits)",
                "utilization / max data rate",
                vec![to_series("expresspass", &pts)],
            )
            .points()
            .logx(),
        ],
    })?;
    put(&mut out, &["xpass_data_drops"], xpass_drops);
    put(
        &mut out,
        &["parameters"],
        json!({"flows": 32, "topology": "dumbbell, 10 Gb/s, base RTT 100 us", "profile": "paper", "credit_burst": "2 credits", "warmup": warm, "duration": dur}),
    );
    Ok(out)
}

/// `xpass-jitter`: credit-gap jitter vs Jain fairness over 1 ms, for 1..1024 flows.
pub fn jitter(ctx: &Ctx) -> Result<Value, String> {
    let jitters = [0.01, 0.02, 0.04, 0.08];
    let ns: Vec<usize> = ctx.pick(vec![2, 16, 64], vec![1, 4, 16, 64, 256, 1024]);
    let (warm, dur) = ctx.pick((10u64, 30u64), (50, 200));
    let mut runs = Vec::new();
    let mut cases = Vec::new();
    for &j in &jitters {
        for &n in &ns {
            let sim = format!("duration = \"{dur}ms\"\nwarmup = \"{warm}ms\"\nseed = 1");
            let body = format!(
                "[[generators]]\npattern = {{ kind = \"pairs\", count = {n}, src = 0, dst = {n}, start_every = \"10us\" }}\n\
                 [output.timeseries]\nevery = \"1ms\"\nflows = \"all\"\n"
            );
            let extra = format!("jitter = [{}, {j}]", -j);
            runs.push(RunSpec::new(
                format!("j{j}-n{n}"),
                dumbbell(n, 10, Scheme::Xpass("paper"), 2, &extra, &sim, &body),
            ));
            cases.push((j, n));
        }
    }
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    let mut xpass_drops = 0;
    let mut pts: std::collections::BTreeMap<String, Vec<(f64, f64)>> = Default::default();
    for ((j, n), r) in cases.iter().zip(&results) {
        let js: Vec<f64> = bins_after(&goodputs(r), warm as f64 * 1000.0)
            .iter()
            .map(|x| jain(x).unwrap_or(0.0))
            .collect();
        put(&mut out, &["jain", &k(j), &k(n)], mean(&js));
        xpass_drops += data_drops(r);
        pts.entry(format!("{n} flows"))
            .or_default()
            .push((*j, mean(&js)));
    }
    ctx.plot(&Plot {
        file: "jitter".into(),
        panels: vec![
            Panel::line(
                "Jain index over 1 ms",
                "jitter (fraction of the credit gap)",
                "Jain",
                pts.iter().map(|(l, p)| to_series(l.clone(), p)).collect(),
            )
            .points(),
        ],
    })?;
    put(&mut out, &["xpass_data_drops"], xpass_drops);
    put(
        &mut out,
        &["parameters"],
        json!({"topology": "dumbbell N pairs, 10 Gb/s, base RTT 100 us", "profile": "paper", "jitter": "uniform in [-j, +j] of the inter-credit gap", "interval_ms": 1, "warmup_ms": warm, "duration_ms": dur}),
    );
    Ok(out)
}

/// `xpass-shuffle`: hosts × tasks on one ToR; every task sends to every task on the other
/// hosts at once.
pub fn shuffle(ctx: &Ctx) -> Result<Value, String> {
    let (hosts, tasks, bytes) = ctx.pick((8u32, 2u32, 100_000u64), (40, 8, 1_000_000));
    let mut flows = Vec::new();
    for h in 0..hosts {
        for g in (0..hosts).filter(|&g| g != h) {
            for _ in 0..tasks * tasks {
                flows.push(FlowSpec {
                    src: HostId(h),
                    dst: HostId(g),
                    size_bytes: Some(bytes),
                    start: Time::ZERO,
                    stop: None,
                    transport: 0,
                });
            }
        }
    }
    let schemes = [Scheme::Xpass("paper"), Scheme::Dctcp];
    let runs = schemes
        .iter()
        .map(|&s| {
            let toml = format!("[sim]\nseed = 1\n[topology]\nkind = \"star\"\nhosts = {hosts}\nhost_link = {{ rate = \"10Gbps\", delay = \"5us\" }}\n{}", s.tables_with(10, 8, true, ""));
            RunSpec { name: s.key().into(), toml, extra_flows: flows.clone() }
        })
        .collect();
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    let mut xpass_drops = 0;
    let mut cdfs = Vec::new();
    for (s, r) in schemes.iter().zip(&results) {
        let mut fct: Vec<f64> = r
            .flows
            .iter()
            .filter_map(|f| f.fct_ns)
            .map(|x| x as f64 / 1e6)
            .collect();
        fct.sort_by(f64::total_cmp);
        let q = |p: f64| fct[((p * fct.len() as f64).ceil() as usize).clamp(1, fct.len()) - 1];
        put(&mut out, &["fct_ms", s.key(), "p50"], q(0.5));
        put(&mut out, &["fct_ms", s.key(), "p99"], q(0.99));
        put(&mut out, &["fct_ms", s.key(), "max"], q(1.0));
        put(&mut out, &["flows_completed", s.key()], fct.len());
        put(&mut out, &["data_drops", s.key()], data_drops(r));
        // Where the data waited (finding 8): the host NICs (outbound) and the ToR's downlinks.
        for (tier, name) in [("host", "host_nics"), ("tor", "downlinks")] {
            let kb = r
                .ports
                .iter()
                .filter(|p| p.tier == tier)
                .map(|p| p.max_data_queue_bytes)
                .max()
                .unwrap_or(0) as f64
                / 1e3;
            put(&mut out, &["max_data_queue_kb", s.key(), name], kb);
        }
        if matches!(s, Scheme::Xpass(_)) {
            xpass_drops += data_drops(r);
        }
        let n = fct.len() as f64;
        let step = (fct.len() / 500).max(1);
        let pts: Vec<(f64, f64)> = fct
            .iter()
            .enumerate()
            .filter(|(i, _)| i % step == 0 || *i + 1 == fct.len())
            .map(|(i, &x)| (x, (i + 1) as f64 / n))
            .collect();
        cdfs.push(to_series(s.key(), &pts));
    }
    ctx.plot(&Plot {
        file: "shuffle_fct_cdf".into(),
        panels: vec![Panel::line("shuffle FCT", "FCT (ms)", "CDF", cdfs)],
    })?;
    put(&mut out, &["xpass_data_drops"], xpass_drops);
    put(
        &mut out,
        &["parameters"],
        json!({"hosts": hosts, "tasks_per_host": tasks, "bytes_per_task_pair": bytes, "flows": flows.len(), "topology": "star (one ToR), 10 Gb/s, 5 us", "start": "all at t = 0", "expresspass": "credit shaping on host NICs too (8-credit queues), law paper, alpha = w_init = 0.5"}),
    );
    Ok(out)
}

/// `xpass-zero-loss`: runs every other ExpressPass experiment and sums their data drops.
pub fn zero_loss(ctx: &Ctx) -> Result<Value, String> {
    let mut out = json!({});
    let mut total = 0u64;
    for e in crate::EXPERIMENTS.iter().filter(|e| {
        e.name.starts_with("xpass-") && !matches!(e.name, "xpass-zero-loss" | "xpass-fattree")
    }) {
        let mut sub = Ctx::new(ctx.quick, ctx.out.join(e.name), ctx.jobs)?;
        sub.fresh = ctx.fresh;
        let r = (e.run)(&sub)?;
        sub.write_json("result.json", &r)?;
        sub.render_plots()?;
        let d = r["xpass_data_drops"].as_u64().unwrap_or(0);
        put(&mut out, &["data_drops", e.name], d);
        total += d;
    }
    put(&mut out, &["data_drops_total"], total);
    Ok(out)
}
