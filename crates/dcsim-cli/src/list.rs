//! `dcsim list`: what a scenario can name, and the example scenarios.

use std::fmt::Write as _;

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
    (
        "pulser-incast.toml",
        include_str!("../../../scenarios/pulser-incast.toml"),
    ),
    (
        "sdn-ecn-star.toml",
        include_str!("../../../scenarios/sdn-ecn-star.toml"),
    ),
    (
        "fastpass-leafspine.toml",
        include_str!("../../../scenarios/fastpass-leafspine.toml"),
    ),
];

/// The example scenario `name` (`dctcp-dumbbell` or `dctcp-dumbbell.toml`).
pub(crate) fn example(name: &str) -> Option<&'static str> {
    let want = name.trim_end_matches(".toml");
    EXAMPLES
        .iter()
        .find(|(f, _)| f.trim_end_matches(".toml") == want)
        .map(|(_, text)| *text)
}

fn section<'a>(out: &mut String, title: &str, rows: impl IntoIterator<Item = (&'a str, &'a str)>) {
    let _ = writeln!(out, "{title}:");
    for (k, d) in rows {
        let _ = writeln!(out, "  {k:<16} {d}");
    }
    out.push('\n');
}

fn kinds(k: &'static [Kind]) -> impl Iterator<Item = (&'static str, &'static str)> {
    k.iter().map(|k| (k.name, k.about))
}

/// What `dcsim list` prints.
pub(crate) fn text() -> String {
    let mut out = String::new();
    section(
        &mut out,
        "topologies (topology.kind)",
        TopologySpec::KINDS.iter().copied(),
    );
    section(
        &mut out,
        "transports (transport.kind)",
        kinds(TransportSpec::KINDS),
    );
    section(
        &mut out,
        "congestion control (transport.cc)",
        kinds(CcSpec::KINDS),
    );
    section(
        &mut out,
        "queue disciplines (queue.kind, nic.kind)",
        kinds(QdiscSpec::KINDS),
    );
    section(
        &mut out,
        "controllers (controller.kind)",
        [(
            "sdn-ecn",
            "polls switch port counters and marks ECN on the fastest flows of congested \
             links with timed rules (docs/protocols/sdn-ecn.md)",
        )],
    );
    section(
        &mut out,
        "traffic patterns (generators[].pattern.kind)",
        GeneratorSpec::KINDS.iter().copied(),
    );
    let _ = writeln!(out, "experiments (dcsim repro NAME [--quick]):");
    for e in dcsim_repro::EXPERIMENTS {
        let _ = writeln!(out, "  {:<32} {}", e.name, e.description);
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "example scenarios (scenarios/; `dcsim example NAME` prints one):"
    );
    for (name, text) in EXAMPLES {
        let desc = toml::from_str::<toml::Table>(text)
            .ok()
            .and_then(|t| {
                t.get("description")
                    .and_then(|d| d.as_str())
                    .map(str::to_string)
            })
            .unwrap_or_default();
        let _ = writeln!(out, "  {name:<34} {desc}");
    }
    out
}
