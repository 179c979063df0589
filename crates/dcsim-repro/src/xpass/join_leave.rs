//! `xpass-join-leave`: five flows join one by one, then leave one by one.

use dcsim::Results;
use dcsim::engine::Dur;
use dcsim::metrics::jain;
use dcsim::transport::xpass::Law;
use serde_json::{Value, json};

use super::{data_drops, dumbbell, finish, goodputs, port};
use crate::build::{self, Pairs, Scheme};
use crate::common::{Ctx, Panel, Plot, RunSpec, Series, mean, put, series, to_series};

/// `xpass-join-leave`: five flows join one by one, then leave one by one.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    let step_ms: u64 = ctx.pick(20, 100);
    let schemes = [Scheme::Xpass(Law::Paper), Scheme::Dctcp];
    let runs = schemes
        .iter()
        .map(|&s| {
            let step = Dur::from_ms(step_ms);
            let mut spec = dumbbell(5, 10, s, 2, build::sim(Some(step * 10), Dur::ZERO));
            spec.generators = vec![
                Pairs {
                    start_every: step,
                    stop: Some(step * 5),
                    stop_every: step,
                    ..Pairs::new(5, 0, 5)
                }
                .entry(),
            ];
            spec.output = build::timeseries(Dur::from_ms(1), &["left->right", "right->left"]);
            RunSpec::new(s.key(), spec)
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
            xpass_drops += data_drops(r)?;
        }
        put(&mut out, &["data_drops", key], data_drops(r)?);
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
    finish(
        out,
        xpass_drops,
        json!({
            "step_ms": step_ms,
            "order": "flows 0..4 join every step, then leave in the order they joined",
            "topology": "dumbbell 5 pairs, 10 Gb/s, base RTT 100 us",
            "jain": "over the second half of each step with >= 2 flows, averaged",
        }),
    )
}

fn series_of(r: &Results, kind: &str, id: &str) -> Vec<(f64, f64)> {
    series(r, kind).remove(id).unwrap_or_default()
}
