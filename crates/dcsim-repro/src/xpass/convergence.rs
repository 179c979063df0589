//! `xpass-convergence`: one long flow, a second joins; ExpressPass (paper and code laws) vs
//! DCTCP and RCP at 10 and 100 Gb/s, base RTT 100 µs.

use dcsim::engine::Dur;
use dcsim::transport::xpass::Law;
use serde_json::{Value, json};

use super::{data_drops, dumbbell, finish, goodputs};
use crate::build::{self, Scheme};
use crate::common::{Ctx, Panel, Plot, RunSpec, Series, k, mean, put, to_series};

/// `xpass-convergence`: one long flow, a second joins; ExpressPass (paper and code laws) vs
/// DCTCP and RCP at 10 and 100 Gb/s, base RTT 100 µs.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    let mut runs = Vec::new();
    let mut cases = Vec::new();
    for gbps in [10u64, 100] {
        for scheme in [
            Scheme::Xpass(Law::Paper),
            Scheme::Xpass(Law::Code),
            Scheme::Dctcp,
            Scheme::Rcp,
        ] {
            // Throughput per RTT for ExpressPass and RCP, per 10 RTTs for DCTCP (as the paper
            // plots). RCP's lone flow starts at 5 % of the link and needs about 15 ms to
            // reach it, hence its later join.
            let (bin_us, join_ms, after_ms) = match scheme {
                Scheme::Xpass(_) => (100u64, 2u64, ctx.pick(5, 20)),
                Scheme::Rcp => (100, 20, ctx.pick(20, 60)),
                Scheme::Dctcp => (
                    1000,
                    20,
                    ctx.pick(
                        if gbps >= 100 { 150 } else { 80 },
                        if gbps >= 100 { 600 } else { 300 },
                    ),
                ),
            };
            let sim = build::sim(Some(Dur::from_ms(join_ms + after_ms)), Dur::ZERO);
            let mut s = dumbbell(2, gbps, scheme, 2, sim);
            s.flows = vec![
                build::flow(0, 2, Dur::ZERO),
                build::flow(1, 3, Dur::from_ms(join_ms)),
            ];
            s.output = build::timeseries(Dur::from_us(bin_us), &[]);
            runs.push(RunSpec::new(format!("{}-{gbps}g", scheme.key()), s));
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
        // ExpressPass and RCP bins are one RTT; a 5-RTT trailing average keeps per-RTT
        // packet quantization (about ±2 packets of 40) from reading as non-convergence.
        let smooth = if matches!(scheme, Scheme::Xpass(_) | Scheme::Rcp) {
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
            let per = if matches!(scheme, Scheme::Xpass(_) | Scheme::Rcp) {
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
    finish(
        out,
        xpass_drops,
        json!({
            "topology": "dumbbell, 2 pairs, host links 20 us, bottleneck 10 us (base RTT 100 us)",
            "expresspass": "laws paper (key expresspass) and code (key expresspass-code); alpha = \
                w_init = 0.5 (ns-2 defaults, as the authors' dumbbell script), credit queues of 2 \
                credits with a 10-credit burst on switch ports, plain drop-tail host uplinks, \
                jitter +-0.1",
            "dctcp": "K = 65, g = 1/16 at 10 Gb/s; K = 650, g = 0.01976 at 100 Gb/s; buffers 4K \
                packets",
            "rcp": "routers on switch ports: alpha 0.1, beta 1 (original paper), d-bar 100 us, \
                init rate 0.05 C, drop-tail 250 packets per 10 Gb/s; senders start at 0.05 of \
                their link, window 2 rate-delay products; join at 20 ms",
            "convergence": "end of the first bin from which both flows stay within 10 % of half \
                the single-flow goodput until the end of the run, minus the join time; bins of 1 \
                RTT averaged over the trailing 5 (ExpressPass, RCP) or of 10 RTTs (DCTCP)",
        }),
    )
}

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
