//! `dcsim list`: what a scenario can name, and the example scenarios.

use std::fmt::Write as _;

use dcsim::controller::ControllerSpec;
use dcsim::engine::spec::Kind;
use dcsim::net::TopologySpec;
use dcsim::net::qdisc::QdiscSpec;
use dcsim::transport::TransportSpec;
use dcsim::transport::cc::CcSpec;
use dcsim::workload::GeneratorSpec;

include!(concat!(env!("OUT_DIR"), "/examples.rs"));

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
        kinds(ControllerSpec::KINDS),
    );
    section(
        &mut out,
        "traffic patterns (generators[].pattern.kind)",
        kinds(GeneratorSpec::KINDS),
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
