//! `xpass-shuffle`: hosts × tasks on one ToR; every task sends to every task on the other
//! hosts at once.

use dcsim::engine::{Dur, Time};
use dcsim::net::HostId;
use dcsim::transport::FlowSpec;
use dcsim::transport::xpass::Law;
use serde_json::{Value, json};

use super::{data_drops, finish};
use crate::build::{self, Nics, Scheme};
use crate::common::{Ctx, Panel, Plot, RunSpec, put, to_series};

/// `xpass-shuffle`: hosts × tasks on one ToR; every task sends to every task on the other
/// hosts at once.
pub fn run(ctx: &Ctx) -> Result<Value, String> {
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
    let schemes = [Scheme::Xpass(Law::Paper), Scheme::Dctcp];
    let runs = schemes
        .iter()
        .map(|&s| {
            let mut scenario = build::scenario(build::sim(None, Dur::ZERO), build::star(hosts, 10));
            s.configure(&mut scenario, 10, 8, Nics::CreditShaped);
            RunSpec {
                extra_flows: flows.clone(),
                ..RunSpec::new(s.key(), scenario)
            }
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
    finish(
        out,
        xpass_drops,
        json!({
            "hosts": hosts,
            "tasks_per_host": tasks,
            "bytes_per_task_pair": bytes,
            "flows": flows.len(),
            "topology": "star (one ToR), 10 Gb/s, 5 us",
            "start": "all at t = 0",
            "expresspass": "credit shaping on host NICs too (8-credit queues), law paper, alpha = \
                w_init = 0.5",
        }),
    )
}
