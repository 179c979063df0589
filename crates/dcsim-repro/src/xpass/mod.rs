//! The ExpressPass microbenchmarks (the ExpressPass paper's microbenchmarks), one
//! file each, and the set-ups and readings they share.
//!
//! Choices the papers leave open are recorded under `parameters` in each result.json and
//! on docs/protocols/expresspass.md.

pub mod convergence;
pub mod credit_queue;
pub mod flow_scalability;
pub mod jitter;
pub mod join_leave;
pub mod multi_bottleneck;
pub mod multi_bottleneck_fairness;
pub mod shuffle;
pub mod zero_loss;

use std::collections::BTreeMap;

use dcsim::engine::Dur;
use dcsim::transport::xpass::Law;
use dcsim::{Results, ScenarioSpec, SimSpec};
use serde_json::Value;

use crate::build::{self, Nics, Pairs, Scheme};
use crate::common::{RunSpec, put, series};

/// A dumbbell of `pairs` pairs at `gbps` (host links 20 µs, bottleneck 10 µs: base RTT
/// 100 µs) with run settings `sim` and the scheme's queues (`credit_buffer` credits) and
/// transport; the experiment adds flows, generators and output.
fn dumbbell(
    pairs: usize,
    gbps: u64,
    scheme: Scheme,
    credit_buffer: u64,
    sim: SimSpec,
) -> ScenarioSpec {
    let mut s = build::scenario(sim, build::dumbbell(pairs, gbps));
    scheme.configure(&mut s, gbps, credit_buffer, Nics::DropTail);
    s
}

/// `n` long-lived ExpressPass flows with feedback law `law` on a dumbbell of `n` pairs at
/// 10 Gb/s, left host `i` to right host `i`, starting 10 µs apart, with
/// `credit_buffer`-credit queues and run settings `sim`.
fn staggered_xpass_law(n: usize, law: Law, credit_buffer: u64, sim: SimSpec) -> ScenarioSpec {
    let mut s = dumbbell(n, 10, Scheme::Xpass(law), credit_buffer, sim);
    s.generators = vec![
        Pairs {
            start_every: Dur::from_us(10),
            ..Pairs::new(n, 0, n as u32)
        }
        .entry(),
    ];
    s
}

/// The runs of a parking-lot experiment: for each `(n, bottlenecks, cross)` of `setups`
/// and each feedback law of [`LAWS`], a run named `{law}-n{n}` of [`parking_lot`] with run
/// settings `sim`, and its case `(n, law)`.
fn parking_lot_runs(
    setups: impl IntoIterator<Item = (usize, usize, Pairs)>,
    sim: &SimSpec,
) -> (Vec<(usize, &'static str)>, Vec<RunSpec>) {
    let mut cases = Vec::new();
    let mut runs = Vec::new();
    for (n, bottlenecks, cross) in setups {
        for (name, law) in LAWS {
            let s = parking_lot(bottlenecks, law, sim.clone(), cross);
            runs.push(RunSpec::new(format!("{name}-n{n}"), s));
            cases.push((n, name));
        }
    }
    (cases, runs)
}

/// A parking lot of `n` bottlenecks (10 Gb/s, 4 µs links) with run settings `sim`,
/// ExpressPass as the authors' parking-lot script sets it up (credit-shaped host links,
/// α = 1/32) with feedback law `law`, a long flow from host 0 to host 1 across every link,
/// and the flows of `cross`.
fn parking_lot(n: usize, law: Law, sim: SimSpec, cross: Pairs) -> ScenarioSpec {
    let mut s = build::scenario(sim, build::parking_lot(n));
    Scheme::Xpass(law).configure(&mut s, 10, 2, Nics::LikeSwitch);
    build::script_alpha(&mut s);
    s.flows = vec![build::flow(0, 1, Dur::ZERO)];
    s.generators = vec![cross.entry()];
    s
}

/// Ends a microbenchmark's result: its ExpressPass data drops (which xpass-zero-loss adds
/// up), then the parameters it ran with.
fn finish(mut out: Value, xpass_drops: u64, parameters: Value) -> Result<Value, String> {
    put(&mut out, &["xpass_data_drops"], xpass_drops);
    put(&mut out, &["parameters"], parameters);
    Ok(out)
}

fn port<'a>(r: &'a Results, node: &str, peer: &str) -> &'a dcsim::metrics::PortRow {
    r.ports
        .iter()
        .find(|p| p.node == node && p.peer == peer)
        .expect("port exists in the topology")
}

/// The data packets a run lost: an error, not zero, if its summary lacks the count (a
/// zero-loss claim must not pass on a missing number).
fn data_drops(r: &Results) -> Result<u64, String> {
    crate::common::summary_count(r, "data_drops")
}

/// Per-flow goodput series (µs, Gb/s), flows in id order.
fn goodputs(r: &Results) -> Vec<Vec<(f64, f64)>> {
    let mut m: Vec<(u32, Vec<(f64, f64)>)> = series(r, "throughput_gbps")
        .into_iter()
        .map(|(id, v)| (id.parse().unwrap_or(0), v))
        .collect();
    m.sort_by_key(|x| x.0);
    m.into_iter().map(|x| x.1).collect()
}

/// For every sample time after `after_us` at which every flow has a sample, the flows'
/// values (flows created later have shorter series; they are aligned by time).
fn bins_after(g: &[Vec<(f64, f64)>], after_us: f64) -> Vec<Vec<f64>> {
    let mut by_time: BTreeMap<u64, Vec<f64>> = Default::default();
    for f in g {
        for &(t, v) in f.iter().filter(|p| p.0 > after_us) {
            by_time.entry(t.round() as u64).or_default().push(v);
        }
    }
    by_time
        .into_values()
        .filter(|v| v.len() == g.len())
        .collect()
}

fn window_secs(r: &Results) -> f64 {
    let end = r.summary["sim_time_ns"].as_f64().unwrap_or(0.0);
    let start = r.summary["window_start_ns"].as_f64().unwrap_or(0.0);
    ((end - start) / 1e9).max(1e-12)
}

/// The feedback laws compared on the parking lot and the multi-bottleneck, with their
/// result keys (`paper-literal`, Algorithm 1 as printed, is our extra series).
const LAWS: [(&str, Law); 5] = [
    ("none", Law::None),
    ("workshop", Law::Workshop),
    ("paper", Law::Paper),
    ("paper-literal", Law::PaperLiteral),
    ("code", Law::Code),
];
