//! `xpass-multi-bottleneck`: a long flow across N links in series, one cross flow per
//! link; the least-utilized link, normalized to the maximum data rate, per law.

use std::collections::BTreeMap;

use dcsim::engine::Dur;
use serde_json::{Value, json};

use super::{LAWS, data_drops, parking_lot_runs, port, window_secs};
use crate::build::{self, Pairs};
use crate::common::{Ctx, Panel, Plot, k, put, to_series};

/// `xpass-multi-bottleneck`: a long flow across N links in series, one cross flow per
/// link; the least-utilized link, normalized to the maximum data rate, per law.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    let (warm_ms, dur_ms) = ctx.pick((5u64, 25u64), (50, 250));
    let sim = build::sim(Some(Dur::from_ms(dur_ms)), Dur::from_ms(warm_ms));
    let setups = (1..=6usize).map(|n| {
        let cross = Pairs {
            src_step: 2,
            dst_step: 2,
            ..Pairs::new(n, 2, 3)
        };
        (n, n, cross)
    });
    let (cases, runs) = parking_lot_runs(setups, &sim);
    let results = ctx.run_many(runs)?;
    let max_data = 1538.0 / 1622.0;
    let mut out = json!({});
    let mut xpass_drops = 0;
    let mut pts: BTreeMap<&str, Vec<(f64, f64)>> = Default::default();
    for ((n, law), r) in cases.iter().zip(&results) {
        let min = (0..*n)
            .map(|i| {
                let p = port(r, &format!("r{i}"), &format!("r{}", i + 1));
                p.tx_data_bytes as f64 * 8.0 / (p.rate_gbps * 1e9) / window_secs(r)
            })
            .fold(f64::MAX, f64::min)
            / max_data;
        put(&mut out, &["min_link_utilization", law, &k(n)], min);
        xpass_drops += data_drops(r)?;
        pts.entry(law).or_default().push((*n as f64, min));
    }
    ctx.plot(&Plot {
        file: "multi_bottleneck".into(),
        panels: vec![
            Panel::line(
                "least-utilized link",
                "bottlenecks in series",
                "utilization / max data rate",
                LAWS.iter().map(|(l, _)| to_series(*l, &pts[l])).collect(),
            )
            .points(),
        ],
    })?;
    put(&mut out, &["xpass_data_drops"], xpass_drops);
    put(&mut out, &["data_drops_total"], xpass_drops);
    put(
        &mut out,
        &["parameters"],
        json!({
            "topology": "parking lot, 10 Gb/s, 4 us links",
            "flows": "long flow 0->1 across all links, one cross flow per link, all from t = 0",
            "normalization": "data bytes / (rate x window), divided by 1538/1622",
            "expresspass": "the authors' parking-lot.tcl: credit shaping on every port, host \
                links included (duplex XPassDropTail), 2-credit queues, 10-credit burst (the \
                script's maxCrditBurst is never applied), data queues 100 packets (the script \
                sets 250 on the forward directions; the largest ExpressPass data queue of the \
                full form is 36.9 KB), alpha = 1/32 (script), w_init = 0.5 (the script's w_ \
                line binds nothing), jitter +-0.1; laws none, workshop, paper, paper-literal, \
                code",
            "warmup": format!("{warm_ms}ms"),
            "duration": format!("{dur_ms}ms"),
        }),
    );
    Ok(out)
}
