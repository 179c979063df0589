//! `dcsim list`: what a scenario can name, and the example scenarios.

use dcsim::engine::spec::Kind;
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
        "dx-dumbbell.toml",
        include_str!("../../../scenarios/dx-dumbbell.toml"),
    ),
    (
        "hull-dumbbell.toml",
        include_str!("../../../scenarios/hull-dumbbell.toml"),
    ),
    (
        "rcp-dumbbell.toml",
        include_str!("../../../scenarios/rcp-dumbbell.toml"),
    ),
    (
        "websearch-star.toml",
        include_str!("../../../scenarios/websearch-star.toml"),
    ),
];

fn section<'a>(title: &str, rows: impl IntoIterator<Item = (&'a str, &'a str)>) {
    println!("{title}:");
    for (k, d) in rows {
        println!("  {k:<16} {d}");
    }
    println!();
}

fn kinds(k: &'static [Kind]) -> impl Iterator<Item = (&'static str, &'static str)> {
    k.iter().map(|k| (k.name, k.about))
}

pub(crate) fn print() {
    section(
        "topologies (topology.kind)",
        TopologySpec::KINDS.iter().copied(),
    );
    section("transports (transport.kind)", kinds(TransportSpec::KINDS));
    section("congestion control (transport.cc)", kinds(CcSpec::KINDS));
    section(
        "queue disciplines (queue.kind, nic.kind)",
        kinds(QdiscSpec::KINDS),
    );
    section(
        "traffic patterns (generators[].pattern.kind)",
        GeneratorSpec::KINDS.iter().copied(),
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
