//! `xpass-flow-scalability`: N long flows with unsynchronized starts on one 10 Gb/s link.

use std::collections::BTreeMap;

use dcsim::engine::Dur;
use dcsim::metrics::jain;
use dcsim::transport::xpass::Law;
use serde_json::{Value, json};

use super::{bins_after, data_drops, dumbbell, finish, goodputs, port};
use crate::build::{self, Pairs, Scheme};
use crate::common::{Ctx, Panel, Plot, RunSpec, k, mean, put, to_series};

/// `xpass-flow-scalability`: N long flows with unsynchronized starts on one 10 Gb/s link.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    let ns: Vec<usize> = ctx.pick(vec![4, 16, 64], vec![4, 16, 64, 256, 1024, 2048]);
    let interval_ms: u64 = ctx.pick(10, 100);
    let (warm_ms, dur_ms) = ctx.pick((40u64, 100u64), (200, 1200));
    let schemes = [Scheme::Xpass(Law::Paper), Scheme::Dctcp, Scheme::Rcp];
    let mut runs = Vec::new();
    let mut cases = Vec::new();
    for &n in &ns {
        for &s in &schemes {
            let sim = build::sim(Some(Dur::from_ms(dur_ms)), Dur::from_ms(warm_ms));
            let mut spec = dumbbell(n, 10, s, 2, sim);
            // Starts spread evenly over the first 10 ms (unsynchronized).
            let every_ps = 10_000_000_000u64 / n as u64;
            spec.generators = vec![
                Pairs {
                    start_every: Dur::from_ps(every_ps),
                    ..Pairs::new(n, 0, n as u32)
                }
                .entry(),
            ];
            spec.output = build::timeseries(Dur::from_ms(interval_ms), &[]);
            runs.push(RunSpec::new(format!("{}-n{n}", s.key()), spec));
            cases.push((n, s));
        }
    }
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    let mut xpass_drops = 0;
    let mut pts: BTreeMap<(&str, &str), Vec<(f64, f64)>> = Default::default();
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
        put(&mut out, &["data_drops", key, &k(n)], data_drops(r)?);
        if matches!(s, Scheme::Xpass(_)) {
            xpass_drops += data_drops(r)?;
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
    finish(
        out,
        xpass_drops,
        json!({
            "interval_ms": interval_ms,
            "warmup_ms": warm_ms,
            "duration_ms": dur_ms,
            "starts": "evenly spread over the first 10 ms",
            "topology": "dumbbell N pairs, 10 Gb/s, base RTT 100 us",
            "dctcp_min_cwnd_pkts": 2,
            "rcp": "routers on switch ports: alpha 0.1, beta 1, d-bar 100 us, init rate 0.05 C, \
                senders open with a SYN that collects the routers' rate and start at it, \
                drop-tail 250 packets; senders paced at the echoed rate, window 2 rate-delay \
                products (at least 2 segments)",
        }),
    )
}
