//! `xpass-jitter`: credit-gap jitter vs Jain fairness over 1 ms, for 1..1024 flows.

use std::collections::BTreeMap;

use dcsim::engine::Dur;
use dcsim::metrics::jain;
use serde_json::{Value, json};

use dcsim::transport::xpass::Law;

use super::{bins_after, data_drops, finish, goodputs, staggered_xpass_law};
use crate::build;
use crate::common::{Ctx, Panel, Plot, RunSpec, k, mean, put, to_series};

/// The series: key, law, credit queue (credits). The figure is the workshop paper's, with
/// its law and its 16-credit queue (the headline, keys `jain.*`); the paper law with the
/// microbenchmark scripts' 2-credit queue is our extra series (`jain_by_series.paper-q2`).
const VARIANTS: [(&str, Law, u64); 2] = [
    ("workshop-q16", Law::Workshop, 16),
    ("paper-q2", Law::Paper, 2),
];

/// `xpass-jitter`: credit-gap jitter vs Jain fairness over 1 ms, for 1..1024 flows.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    let jitters = [0.01, 0.02, 0.04, 0.08];
    let ns: Vec<usize> = ctx.pick(vec![2, 16, 64], vec![1, 4, 16, 64, 256, 1024]);
    let (warm, dur) = ctx.pick((10u64, 30u64), (50, 200));
    let mut runs = Vec::new();
    let mut cases = Vec::new();
    for &(key, law, queue) in &VARIANTS {
        for &j in &jitters {
            for &n in &ns {
                let sim = build::sim(Some(Dur::from_ms(dur)), Dur::from_ms(warm));
                let mut s = staggered_xpass_law(n, law, queue, sim);
                build::xpass_jitter(&mut s, j);
                s.output = build::timeseries(Dur::from_ms(1), &[]);
                runs.push(RunSpec::new(format!("{key}-j{j}-n{n}"), s));
                cases.push((key, j, n));
            }
        }
    }
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    let mut xpass_drops = 0;
    let mut pts: BTreeMap<String, Vec<(f64, f64)>> = Default::default();
    for ((key, j, n), r) in cases.iter().zip(&results) {
        let js: Vec<f64> = bins_after(&goodputs(r), warm as f64 * 1000.0)
            .iter()
            .map(|x| jain(x).unwrap_or(0.0))
            .collect();
        if *key == VARIANTS[0].0 {
            put(&mut out, &["jain", &k(j), &k(n)], mean(&js));
        }
        put(&mut out, &["jain_by_series", key, &k(j), &k(n)], mean(&js));
        xpass_drops += data_drops(r)?;
        pts.entry(format!("{key}, {n} flows"))
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
    finish(
        out,
        xpass_drops,
        json!({
            "topology": "dumbbell N pairs, 10 Gb/s, base RTT 100 us",
            "series": VARIANTS.iter().map(|(key, law, queue)| json!({
                "key": key, "law": law, "credit_queue_credits": queue,
            })).collect::<Vec<_>>(),
            "jain": "the series workshop-q16: the workshop paper's law and 16-credit queue",
            "credit_burst_credits": 10,
            "alpha": 0.5,
            "w_init": 0.5,
            "jitter": "uniform in [-j, +j] of the inter-credit gap",
            "interval_ms": 1,
            "warmup_ms": warm,
            "duration_ms": dur,
        }),
    )
}
