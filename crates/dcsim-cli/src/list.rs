//! `dcsim list`: what a scenario can name, and the example scenarios.

use dcsim::net::TopologySpec;
use dcsim::net::qdisc::QdiscSpec;
use dcsim::transport::TransportSpec;
use dcsim::transport::cc::CcSpec;
use dcsim::workload::GeneratorSpec;

/// The example scenarios shipped in `scenarios/`, embedded so the list is always right.
pub(crate) const EXAMPLES: &[(&str, &str)] = &[
    (
        "dctcp-dumbbell.toml",
        include_str!("../../../scenarios/dctcp-dumbbell.toml"),
    ),
    (
        "tcp-incast.toml",
        include_str!("../../../scenarios/tcp-incast.toml"),
    ),
    (
        "dctcp-fattree-permutation.toml",
        include_str!("../../../scenarios/dctcp-fattree-permutation.toml"),
    ),
    (
        "xpass-dumbbell.toml",
        include_str!("../../../scenarios/xpass-dumbbell.toml"),
    ),
    (
        "xpass-incast.toml",
        include_str!("../../../scenarios/xpass-incast.toml"),
    ),
    (
        "websearch-star.toml",
        include_str!("../../../scenarios/websearch-star.toml"),
    ),
];

fn section(title: &str, rows: &[(&str, &str)]) {
    println!("{title}:");
    for (k, d) in rows {
        println!("  {k:<16} {d}");
    }
    println!();
}

pub(crate) fn print() {
    section("topologies (topology.kind)", TopologySpec::KINDS);
    section("transports (transport.kind)", TransportSpec::KINDS);
    section("congestion control (transport.cc)", CcSpec::KINDS);
    section("queue disciplines (queue.kind, nic.kind)", QdiscSpec::KINDS);
    section(
        "traffic patterns (generators[].pattern.kind)",
        GeneratorSpec::KINDS,
    );
    println!("experiments (dcsim repro NAME [--quick]):");
    for e in dcsim_repro::EXPERIMENTS {
        println!("  {:<32} {}", e.name, e.description);
    }
    println!();
    println!("example scenarios (scenarios/):");
    for (name, text) in EXAMPLES {
        let desc = toml::from_str::<toml::Table>(text)
            .ok()
            .and_then(|t| {
                t.get("description")
                    .and_then(|d| d.as_str())
                    .map(str::to_string)
            })
            .unwrap_or_default();
        println!("  {name:<34} {desc}");
    }
}
