//! `xpass-multi-bottleneck-fairness`: flow 0 crosses two links; N flows share the second.

use std::collections::BTreeMap;

use dcsim::engine::Dur;
use serde_json::{Value, json};

use super::{LAWS, data_drops, finish, parking_lot_runs};
use crate::build::{self, Pairs};
use crate::common::{Ctx, Panel, Plot, Series, k, put, to_series};

/// `xpass-multi-bottleneck-fairness`: flow 0 crosses two links; N flows share the second.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    let ns: Vec<usize> = ctx.pick(vec![1, 2, 4, 8], vec![1, 2, 4, 8, 16, 32]);
    let (warm_ms, dur_ms) = ctx.pick((10u64, 40u64), (50, 250));
    let sim = build::sim(Some(Dur::from_ms(dur_ms)), Dur::from_ms(warm_ms));
    // Link 1 joins r1 and r2; its cross hosts are 4 (at r1) and 5 (at r2).
    let setups = ns.iter().map(|&n| {
        let cross = Pairs {
            src_step: 0,
            dst_step: 0,
            ..Pairs::new(n, 4, 5)
        };
        (n, 2, cross)
    });
    let (cases, runs) = parking_lot_runs(setups, &sim);
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    let mut xpass_drops = 0;
    let full = xpass_max_goodput_gbps(10.0);
    let mut pts: BTreeMap<&str, Vec<(f64, f64)>> = Default::default();
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
    let mut s: Vec<Series> = LAWS.iter().map(|(l, _)| to_series(*l, &pts[l])).collect();
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
    finish(
        out,
        xpass_drops,
        json!({
            "topology": "parking lot of 2 links, 10 Gb/s, 4 us",
            "flows": "flow 0: host 0 -> 1 across both links; N flows host 4 -> 5 across link 1 \
                only",
            "share": "window goodput / single-flow goodput at the full credit rate (9.0 Gb/s)",
            "warmup": format!("{warm_ms}ms"),
            "duration": format!("{dur_ms}ms"),
        }),
    )
}

/// Goodput of one flow at the full credit rate: line · 84/1622 credits of 84 B, each
/// releasing 1460 B of payload.
fn xpass_max_goodput_gbps(gbps: f64) -> f64 {
    gbps * 84.0 / 1622.0 / 84.0 * 1460.0
}
