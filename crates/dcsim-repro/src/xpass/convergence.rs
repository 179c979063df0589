//! `xpass-convergence`: one long flow, a second joins; ExpressPass (paper and code laws) vs
//! DCTCP and RCP at 10 and 100 Gb/s, base RTT 100 µs.

use std::collections::BTreeMap;

use dcsim::engine::Dur;
use dcsim::transport::xpass::Law;
use serde_json::{Value, json};

use super::{data_drops, dumbbell, finish, goodputs};
use crate::build::{self, Scheme};
use crate::common::{Ctx, Panel, Plot, RunSpec, Series, k, mean, put, to_series};

/// The ExpressPass variants: feedback law, initial rate α, result key. α = 1 is the
/// paper era's code (2017-10, every flow starts at the maximum credit rate), α = 0.5
/// today's (ns-2 default `alpha_`, since 2017-10-23).
const XPASS: [(Law, f64, &str); 4] = [
    (Law::Paper, 1.0, "expresspass-alpha1"),
    (Law::Paper, 0.5, "expresspass"),
    (Law::Code, 1.0, "expresspass-code-alpha1"),
    (Law::Code, 0.5, "expresspass-code"),
];

/// A scheme of the experiment: its result key, the scheme, ExpressPass's α if it is one.
type Variant = (&'static str, Scheme, Option<f64>);

/// `xpass-convergence`: one long flow, a second joins; ExpressPass (paper and code laws,
/// each from the initial rates of the paper era and of today's code) vs DCTCP and RCP at
/// 10 and 100 Gb/s, base RTT 100 µs, over several seeds.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    // ExpressPass's convergence spreads widely over the credit trains' phase at the join
    // (2 to 30 RTTs at 10 Gb/s in the authors' ns-2 as in ours), so its variants run many
    // seeds; DCTCP has no random part and RCP little.
    let seeds: Vec<u64> = ctx.pick(vec![1, 2], vec![1, 2, 3, 4, 5]);
    let xpass_seeds: Vec<u64> = ctx.pick(vec![1, 2], (1..=20).collect());
    let mut variants: Vec<Variant> = XPASS
        .iter()
        .map(|&(law, alpha, key)| (key, Scheme::Xpass(law), Some(alpha)))
        .collect();
    variants.push((Scheme::Dctcp.key(), Scheme::Dctcp, None));
    variants.push((Scheme::Rcp.key(), Scheme::Rcp, None));
    let mut runs = Vec::new();
    let mut cases = Vec::new();
    for gbps in [10u64, 100] {
        for &(key, scheme, alpha) in &variants {
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
            let seeds = if matches!(scheme, Scheme::Xpass(_)) {
                &xpass_seeds
            } else {
                &seeds
            };
            for &seed in seeds {
                let mut sim = build::sim(Some(Dur::from_ms(join_ms + after_ms)), Dur::ZERO);
                sim.seed = seed;
                let mut s = dumbbell(2, gbps, scheme, 2, sim);
                if let Some(a) = alpha {
                    build::xpass_alpha(&mut s, a);
                }
                s.flows = vec![
                    build::flow(0, 2, Dur::ZERO),
                    build::flow(1, 3, Dur::from_ms(join_ms)),
                ];
                s.output = build::timeseries(Dur::from_us(bin_us), &[]);
                // Goodput binned by the data's departure from the bottleneck, as the
                // authors' scripts trace it: the receivers' bins shifted by the delay.
                if let Some(t) = &mut s.output.timeseries {
                    t.offset = to_receiver(gbps);
                }
                runs.push(RunSpec::new(format!("{key}-{gbps}g-s{seed}"), s));
                cases.push(Case {
                    gbps,
                    key,
                    scheme,
                    seed,
                    join_us: join_ms as f64 * 1000.0,
                });
            }
        }
    }
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    let mut rows = Vec::new();
    let mut xpass_drops = 0;
    // Per (scheme, speed), one entry per seed.
    type PerSeed = BTreeMap<(&'static str, u64), Vec<Option<f64>>>;
    let (mut reached, mut sustained): (PerSeed, PerSeed) = Default::default();
    let mut single: BTreeMap<(&str, u64), Vec<f64>> = Default::default();
    for (c, r) in cases.iter().zip(&results) {
        let g = at_bottleneck(goodputs(r), c.gbps);
        let alone: Vec<f64> = g[0]
            .iter()
            .filter(|p| p.0 > c.join_us / 2.0 && p.0 <= c.join_us)
            .map(|p| p.1)
            .collect();
        let fair = mean(&alone) / 2.0;
        // ExpressPass and RCP bins are one RTT; for the sustained reading a 5-RTT trailing
        // average keeps per-RTT packet quantization (about ±2 packets of 40) from reading
        // as non-convergence.
        let smooth = if matches!(c.scheme, Scheme::Xpass(_) | Scheme::Rcp) {
            5
        } else {
            1
        };
        let id = (c.key, c.gbps);
        reached
            .entry(id)
            .or_default()
            .push(first_within_us(&g[0], &g[1], c.join_us, fair));
        sustained
            .entry(id)
            .or_default()
            .push(convergence_us(&g[0], &g[1], c.join_us, fair, smooth));
        single.entry(id).or_default().push(fair * 2.0);
        let drops = data_drops(r)?;
        let d = out["data_drops"][c.key][k(c.gbps)].as_u64().unwrap_or(0);
        put(&mut out, &["data_drops", c.key, &k(c.gbps)], d + drops);
        if matches!(c.scheme, Scheme::Xpass(_)) {
            xpass_drops += drops;
        }
        if c.seed != seeds[0] {
            continue; // the time series and plots show the first seed
        }
        for (i, f) in g.iter().enumerate() {
            for p in f {
                rows.push(vec![
                    c.key.to_string(),
                    k(c.gbps),
                    k(i),
                    format!("{:.1}", p.0 - c.join_us),
                    format!("{:.4}", p.1),
                ]);
            }
        }
    }
    // The mean over seeds, null unless every seed converged.
    let all = |v: &[Option<f64>]| -> Option<Vec<f64>> { v.iter().copied().collect() };
    for (&(key, gbps), v) in &reached {
        let gb = k(gbps);
        let rtts: Vec<Value> = v.iter().map(|x| json!(x.map(|us| us / 100.0))).collect();
        put(&mut out, &["convergence_rtts_per_seed", key, &gb], rtts);
        let m = all(v).map(|x| mean(&x));
        put(&mut out, &["convergence_us", key, &gb], json!(m));
        put(
            &mut out,
            &["convergence_rtts", key, &gb],
            json!(m.map(|us| us / 100.0)),
        );
        put(
            &mut out,
            &["convergence_rtts_median", key, &gb],
            json!(median_or_never(v).map(|us| us / 100.0)),
        );
        let m = all(&sustained[&(key, gbps)]).map(|x| mean(&x));
        put(
            &mut out,
            &["convergence_rtts_sustained", key, &gb],
            json!(m.map(|us| us / 100.0)),
        );
        put(
            &mut out,
            &["single_flow_gbps", key, &gb],
            mean(&single[&(key, gbps)]),
        );
    }
    ctx.write_csv(
        "throughput.csv",
        &[
            "scheme",
            "link_gbps",
            "flow",
            "time_since_join_us",
            "goodput_gbps",
        ],
        &rows,
    )?;
    for gbps in [10u64, 100] {
        let mut panels = Vec::new();
        for (c, r) in cases.iter().zip(&results) {
            if c.gbps != gbps || c.seed != seeds[0] {
                continue;
            }
            let join_us = c.join_us;
            let series: Vec<Series> = at_bottleneck(goodputs(r), c.gbps)
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let pts: Vec<(f64, f64)> =
                        f.iter().map(|p| ((p.0 - join_us) / 1000.0, p.1)).collect();
                    to_series(format!("flow {i}"), &pts)
                })
                .collect();
            let per = if matches!(c.scheme, Scheme::Xpass(_) | Scheme::Rcp) {
                "per RTT"
            } else {
                "per 10 RTTs"
            };
            panels.push(Panel::line(
                format!("{} {gbps} Gb/s (goodput {per})", c.key),
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
            "expresspass": "laws paper (keys expresspass*) and code (keys expresspass-code*); \
                initial rate alpha = 0.5 (today's ns-2 default, as the authors' dumbbell script; \
                keys without suffix) and alpha = 1 (the code of October 2017, every flow at the \
                maximum credit rate; keys -alpha1); w_init = 0.5; credit queues of 2 credits \
                with a 10-credit burst on switch ports, plain drop-tail host uplinks, jitter \
                +-0.1",
            "seeds": seeds,
            "seeds_expresspass": xpass_seeds,
            "dctcp": "K = 65, g = 1/16 at 10 Gb/s; K = 650, g = 0.01976 at 100 Gb/s; buffers 4K \
                packets",
            "rcp": "routers on switch ports: alpha 0.1, beta 1 (original paper), d-bar 100 us, \
                init rate 0.05 C, drop-tail 250 packets per 10 Gb/s; senders open with a SYN \
                that collects the routers' rate and start at the rate the SYN-ACK returns (the \
                RCP paper), window 2 rate-delay products; join at 20 ms",
            "convergence": "the workshop paper's definition (keys convergence_us, \
                convergence_rtts): the end of the first bin after the join in which both flows \
                are within 10 % of the fair share (half the lone flow's goodput), minus the join \
                time; bins of 1 RTT (ExpressPass, RCP) or 10 RTTs (DCTCP); mean over the seeds, \
                null unless every seed converged; median over the seeds (a seed that never \
                converges counts as the longest; null if half never do) under \
                convergence_rtts_median; per seed in convergence_rtts_per_seed. Goodput is \
                binned by the data's departure from the bottleneck, as the authors' scripts \
                trace it: the receivers' samples are taken 30 us + two frame times after \
                each bin's end (output.timeseries.offset) and reported at the bin's end",
            "convergence_sustained": "stricter (key convergence_rtts_sustained): the end of \
                the first bin from which both flows, averaged over the trailing 5 bins \
                (ExpressPass, RCP) or 1 (DCTCP), stay within 10 % until the end of the run; it \
                cannot be below 5 RTTs and grows with the run's length for a law that oscillates",
            "timeseries": "throughput.csv and the plots show the first seed",
        }),
    )
}

/// From a data frame's first bit leaving the bottleneck to its last bit at the receiver on
/// this dumbbell: its transmission there and on the receiver's link (1538 B each), and the
/// 10 µs and 20 µs links. Nothing queues after the bottleneck (one flow per receiver).
fn to_receiver(gbps: u64) -> Dur {
    Dur::from_us(30) + Dur::from_ps(2 * 1538 * 8 * 1000 / gbps)
}

/// Goodput series with each bin's end moved back by [`to_receiver`]: bins of the data's
/// departures from the bottleneck.
fn at_bottleneck(g: Vec<Vec<(f64, f64)>>, gbps: u64) -> Vec<Vec<(f64, f64)>> {
    // In whole nanoseconds, as the samples' times are written.
    let d = (to_receiver(gbps).as_ps() / 1000) as f64 / 1e3;
    g.into_iter()
        .map(|f| f.into_iter().map(|(t, v)| (t - d, v)).collect())
        .collect()
}

/// The median of per-seed times, a seed that never converged counting as longer than any;
/// `None` if at least half never did.
fn median_or_never(v: &[Option<f64>]) -> Option<f64> {
    let mut x: Vec<f64> = v.iter().map(|t| t.unwrap_or(f64::INFINITY)).collect();
    x.sort_by(f64::total_cmp);
    let n = x.len();
    let m = match n {
        0 => return None,
        _ if n % 2 == 1 => x[n / 2],
        _ => (x[n / 2 - 1] + x[n / 2]) / 2.0,
    };
    m.is_finite().then_some(m)
}

/// One run of the experiment.
struct Case {
    gbps: u64,
    key: &'static str,
    scheme: Scheme,
    seed: u64,
    join_us: f64,
}

/// Convergence time after `join_us` as the workshop paper defines it: the end of the first
/// bin lying wholly after the join in which both flows are within 10 % of `fair` Gb/s,
/// minus the join time. `None` if that never happens.
fn first_within_us(a: &[(f64, f64)], b: &[(f64, f64)], join_us: f64, fair: f64) -> Option<f64> {
    let first = a.iter().position(|p| p.0 > join_us)?;
    let near = |v: f64| (v - fair).abs() <= 0.1 * fair;
    (first..a.len().min(b.len()))
        .find(|&i| near(a[i].1) && near(b[i].1))
        .map(|i| a[i].0 - join_us)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A seed that never converges counts as the longest, and half never is no median.
    #[test]
    fn median_counts_never_as_longest() {
        assert_eq!(median_or_never(&[Some(3.0), None, Some(1.0)]), Some(3.0));
        assert_eq!(
            median_or_never(&[Some(3.0), Some(5.0), None, Some(1.0)]),
            Some(4.0)
        );
        assert_eq!(median_or_never(&[Some(3.0), None]), None);
        assert_eq!(median_or_never(&[]), None);
    }

    /// Bins of 100 µs ending at 100, 200, … µs.
    fn series(v: &[f64]) -> Vec<(f64, f64)> {
        v.iter()
            .enumerate()
            .map(|(i, &x)| ((i + 1) as f64 * 100.0, x))
            .collect()
    }

    #[test]
    fn first_within_is_the_first_bin_after_the_join_with_both_flows_near_the_share() {
        // Join at 200 µs; fair share 4.5. Bin 3 (ends 300) has a out; bin 4 (ends 400) has
        // both within 10 %; later bins leave the band again, which this definition ignores.
        let a = series(&[9.0, 9.0, 6.0, 4.9, 6.0, 4.5]);
        let b = series(&[0.0, 0.0, 3.0, 4.1, 3.0, 4.5]);
        assert_eq!(first_within_us(&a, &b, 200.0, 4.5), Some(200.0));
        // Bins before and at the join do not count, even if both are near the share.
        let a = series(&[4.5, 4.5, 9.0, 9.0]);
        let b = series(&[4.5, 4.5, 0.0, 0.0]);
        assert_eq!(first_within_us(&a, &b, 200.0, 4.5), None);
    }

    #[test]
    fn sustained_needs_both_flows_in_the_band_until_the_end() {
        let a = series(&[9.0, 9.0, 6.0, 4.9, 6.0, 4.5, 4.6, 4.4]);
        let b = series(&[0.0, 0.0, 3.0, 4.1, 3.0, 4.5, 4.4, 4.6]);
        // Unsmoothed: the band holds from bin 6 (ends 600) on.
        assert_eq!(convergence_us(&a, &b, 200.0, 4.5, 1), Some(400.0));
        // A last bin outside the band means no convergence.
        let mut a2 = a.clone();
        a2.last_mut().unwrap().1 = 6.0;
        assert_eq!(convergence_us(&a2, &b, 200.0, 4.5, 1), None);
        // With a 2-bin trailing average the first window lies after the join: bins 3-4
        // average 5.45 / 3.55 (out), 4-5 5.45 / 3.55, 5-6 5.25 / 3.75, 6-7 4.55 / 4.45 (in).
        assert_eq!(convergence_us(&a, &b, 200.0, 4.5, 2), Some(500.0));
    }
}
