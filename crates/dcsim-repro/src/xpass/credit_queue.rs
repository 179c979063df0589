//! `xpass-credit-queue`: credit queue capacity vs utilization (32 flows, 10 Gb/s).

use dcsim::engine::Dur;
use serde_json::{Value, json};

use super::{data_drops, finish, port, staggered_xpass, window_secs};
use crate::build;
use crate::common::{Ctx, Panel, Plot, RunSpec, k, put, to_series};

/// `xpass-credit-queue`: credit queue capacity vs utilization (32 flows, 10 Gb/s).
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    let caps: Vec<u64> = vec![1, 2, 4, 8, 16, 32, 64, 128];
    let (warm_ms, dur_ms) = ctx.pick((10u64, 30u64), (50, 200));
    let runs = caps
        .iter()
        .map(|&c| {
            let sim = build::sim(Some(Dur::from_ms(dur_ms)), Dur::from_ms(warm_ms));
            RunSpec::new(format!("credits-{c}"), staggered_xpass(32, c, sim))
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
    finish(
        out,
        xpass_drops,
        json!({
            "flows": 32,
            "topology": "dumbbell, 10 Gb/s, base RTT 100 us",
            "profile": "paper",
            "credit_burst": "10 credits (the ns-2 default the microbenchmark scripts keep)",
            "warmup": format!("{warm_ms}ms"),
            "duration": format!("{dur_ms}ms"),
        }),
    )
}
