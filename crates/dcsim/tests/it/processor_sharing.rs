//! Processor sharing on a single bottleneck: Poisson arrivals at load ρ into one link shared by an ideal
//! fair-sharing transport (fluid processor sharing) give a mean slowdown of 1/(1 − ρ) in
//! every size bucket (M/G/1-PS). This checks the workload generator, the load definition
//! and the per-bucket analysis together with the fluid model, and the packet-level Ideal
//! transport against the same expectation (see docs/output.md, "Oracle").

use dcsim::engine::{Rate, RngTree};
use dcsim::metrics::analysis::{FlowSample, bucket_stats};
use dcsim::metrics::reference::processor_sharing;
use dcsim::workload::{GeneratorSpec, SourceCx};

/// Slowdowns per bucket for `flows` flows of `cdf` at `load` between two hosts: each host
/// link carries `load` in each direction, and each direction is one PS link.
fn ps_buckets(cdf: &str, load: f64, flows: u64, seed: u64) -> Vec<(String, u64, f64)> {
    let spec: GeneratorSpec = toml::from_str(&format!(
        "kind = \"poisson\"\nload = {load}\nload_relative_to = \"host-links\"\n\
         flow_size = {{ cdf = \"{cdf}\" }}\nmax_flows = {flows}\n"
    ))
    .unwrap();
    let rng = RngTree::new(seed);
    let gbps = 10.0;
    let cx = SourceCx {
        host_link: Some(Rate::from_gbps(10)),
        ..SourceCx::new(2, &rng, 0)
    };
    let generated: Vec<_> = spec.source(&cx).unwrap().collect();
    let mut samples = Vec::new();
    for dst in 0..2 {
        let mine: Vec<_> = generated.iter().filter(|f| f.dst == dst).collect();
        let input: Vec<(f64, f64)> = mine
            .iter()
            .map(|f| (f.start.as_secs_f64(), f.size_bytes.unwrap() as f64 * 8.0))
            .collect();
        let fct = processor_sharing(&input, gbps * 1e9);
        for (f, t) in mine.iter().zip(fct) {
            let size = f.size_bytes.unwrap();
            let ideal = size as f64 * 8.0 / (gbps * 1e9);
            samples.push(FlowSample {
                size_bytes: size,
                fct_us: Some(t * 1e6),
                slowdown: Some(t / ideal),
            });
        }
    }
    bucket_stats(&samples)
        .into_iter()
        .map(|b| (b.bucket.to_string(), b.flows, b.slowdown_mean))
        .collect()
}

/// Web search sizes (9 KB to 30 MB) at load 0.5: mean slowdown 2 overall and in every
/// bucket holding enough flows. Measured over 40,000 flows: 1.98 overall and 1.965–1.990 per
/// bucket (seed 7); 1.99–2.03 overall for seeds 1–3. Tolerance 8 %: the realized load of
/// this heavy-tailed workload varies by a few percent around 0.5, and 1/(1 − ρ) doubles
/// that; a wrong load definition or bucket assignment moves it far more (next test).
#[test]
fn processor_sharing_at_half_load_gives_slowdown_two_in_every_bucket() {
    for (bucket, n, sd) in ps_buckets("websearch", 0.5, 40_000, 7) {
        if n < 2_000 {
            continue;
        }
        assert!(
            (sd - 2.0).abs() < 0.16,
            "bucket {bucket}: {n} flows, mean slowdown {sd:.3}, expected 2"
        );
    }
}

/// The same check fails when the load is wrong: at 0.7 the mean slowdown is 1/0.3 ≈ 3.3,
/// far outside the band of 0.5 (the check can fail).
#[test]
fn processor_sharing_tracks_the_load() {
    let all = |load| ps_buckets("websearch", load, 40_000, 7)[0].2;
    let (half, high) = (all(0.5), all(0.7));
    assert!((half - 2.0).abs() < 0.16, "{half}");
    assert!((high - 1.0 / 0.3).abs() < 0.6, "{high}");
}

/// The packet-level Ideal transport matches processor sharing: senders paced at the max-min rates
/// the global oracle recomputes at every start and completion share each host link as
/// processor sharing does. Poisson web-search flows at load 0.5 between two hosts: flows of
/// 100 KB and more see mean slowdown within 10 % of 1/(1 − ρ) = 2 (measured 1.88 and 1.94
/// over 20,000 flows); smaller flows less (a flow's first packet leaves at once, before
/// sharing can delay it: 1.39 for 0–10 KB); nothing is dropped and no queue forms beyond a
/// packet.
#[test]
fn the_ideal_transport_gives_processor_sharing_slowdowns() {
    let (_, r) = crate::run_text(
        r#"
        [topology]
        kind = "star"
        hosts = 2
        host_link = { rate = "10Gbps", delay = "5us" }
        [transport]
        kind = "ideal"
        [[generators]]
        pattern = { kind = "poisson", load = 0.5, load_relative_to = "host-links", wire_factor = "1538/1460", flow_size = { cdf = "websearch" }, max_flows = 20000 }
        "#,
    );
    let s = &r.summary;
    assert_eq!(s["packets_dropped"], 0);
    assert_eq!(s["flows_completed"], 20_000);
    assert!(
        s["max_queue_bytes"].as_u64().unwrap() <= 2 * 1538,
        "{}",
        s["max_queue_bytes"]
    );
    for b in ["100KB-1MB", "1MB+"] {
        let sd = s["fct_buckets"][b]["slowdown_mean"].as_f64().unwrap();
        assert!((sd - 2.0).abs() <= 0.2, "{b}: mean slowdown {sd}");
    }
    let small = s["fct_buckets"]["0-10KB"]["slowdown_mean"]
        .as_f64()
        .unwrap();
    assert!(small < 1.6, "0-10KB: {small}");
    // One recomputation per start and per completion.
    assert_eq!(s["oracle"]["changes"], 40_000, "{}", s["oracle"]);
}
