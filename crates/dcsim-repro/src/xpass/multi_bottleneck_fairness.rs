//! `xpass-multi-bottleneck-fairness`: the authors' multi-bottleneck script. One sender
//! sends N + 1 flows: flow 0 to a receiver on its own router, flows 1..N to receivers
//! behind a second router. The data of all N + 1 flows shares the sender's link, so the
//! max-min share is 1/(N + 1) each; the credits of flows 1..N are first squeezed to one
//! link's credit rate on the router-to-router link and only then meet flow 0's credits at
//! the sender's port. Without feedback flow 0 gets half the sender's link.

use std::collections::BTreeMap;

use dcsim::engine::Dur;
use serde_json::{Value, json};

use dcsim::net::TopologySpec;
use dcsim::net::topo::{DumbbellSpec, LinkSpec};
use dcsim::transport::xpass::Law;
use dcsim::{ScenarioSpec, SimSpec};

use super::{LAWS, data_drops, finish};
use crate::build::{self, Nics, Pairs, Scheme};
use crate::common::{Ctx, Panel, Plot, RunSpec, Series, k, put, rows, to_series};

/// `xpass-multi-bottleneck-fairness`: flow 0's share of the sender's link against N, per
/// feedback law, beside the max-min share 1/(N + 1).
pub fn run(ctx: &Ctx) -> Result<Value, String> {
    let ns: Vec<usize> = ctx.pick(vec![1, 2, 4, 8], vec![1, 2, 4, 8, 16, 32, 64]);
    let (warm_ms, dur_ms) = ctx.pick((10u64, 40u64), (50, 250));
    let sim = build::sim(Some(Dur::from_ms(dur_ms)), Dur::from_ms(warm_ms));
    let mut cases = Vec::new();
    let mut runs = Vec::new();
    for &n in &ns {
        for (name, law) in LAWS {
            runs.push(RunSpec::new(
                format!("{name}-n{n}"),
                scenario(n, law, sim.clone()),
            ));
            cases.push((n, name));
        }
    }
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    let mut xpass_drops = 0;
    let full = xpass_max_goodput_gbps(10.0);
    let mut pts: BTreeMap<&str, Vec<(f64, f64)>> = Default::default();
    for ((n, law), r) in cases.iter().zip(&results) {
        let share = rows(r)[0].window_goodput_gbps / full;
        put(&mut out, &["flow0_share", law, &k(n)], share);
        put(&mut out, &["maxmin_share", &k(n)], 1.0 / (*n as f64 + 1.0));
        xpass_drops += data_drops(r)?;
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
                "flow 0 (credits squeezed upstream)",
                "flows behind the second router",
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
            "topology": "the authors' multi-bottleneck.tcl: router L - router R, sender S and \
                receiver 0 on R, receivers 1..N on L (a dumbbell of max(N, 2) pairs: L hosts \
                0..N-1, S = first R host, receiver 0 = second R host); every link 10 Gb/s, 4 us",
            "flows": "N + 1 long flows from S, flow 0 to receiver 0, flow i to L host i - 1; \
                all start at 0",
            "expresspass": "credit shaping on every port, host links included (the script's \
                duplex XPassDropTail links), 2-credit queues, 10-credit burst (the script's \
                maxCrditBurst is never applied), data queues 100 packets (153,800 B, as the \
                script), alpha = 1/32 (script), w_init = 0.5 (the script's w_ line binds \
                nothing), laws none, workshop, paper, code",
            "maxmin_share": "1/(N + 1): every flow's data crosses the sender's link",
            "share": "window goodput / single-flow goodput at the full credit rate (9.0 Gb/s)",
            "warmup": format!("{warm_ms}ms"),
            "duration": format!("{dur_ms}ms"),
        }),
    )
}

/// The multi-bottleneck scenario for `n` flows behind router L and feedback law `law`.
fn scenario(n: usize, law: Law, sim: SimSpec) -> ScenarioSpec {
    let pairs = n.max(2);
    let link = Some(LinkSpec::new(10, 4));
    let topo = TopologySpec::Dumbbell(DumbbellSpec {
        pairs: Some(pairs as u32),
        host_link: link,
        bottleneck: link,
    });
    let mut s = build::scenario(sim, topo);
    Scheme::Xpass(law).configure(&mut s, 10, 2, Nics::LikeSwitch);
    build::script_alpha(&mut s);
    let sender = pairs as u32;
    s.flows = vec![build::flow(sender, sender + 1, Dur::ZERO)];
    s.generators = vec![
        Pairs {
            src_step: 0,
            ..Pairs::new(n, sender, 0)
        }
        .entry(),
    ];
    s
}

/// Goodput of one flow at the full credit rate: line · 84/1622 credits of 84 B, each
/// releasing 1460 B of payload.
fn xpass_max_goodput_gbps(gbps: f64) -> f64 {
    gbps * 84.0 / 1622.0 / 84.0 * 1460.0
}
