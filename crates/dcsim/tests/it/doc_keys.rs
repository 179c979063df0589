//! docs/scenario.md documents every scenario key: every key of every example scenario, as
//! resolved (every default and preset filled in, as `dcsim show` prints it), and every key of
//! every registered kind at its defaults, must appear in the document in backticks
//! (`` `hosts_per_leaf` ``), and so must the name of every kind.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::root;

/// The reference document.
fn doc() -> String {
    let path = root().join("docs/scenario.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `(key path, key)` of `v`, with the values of `kind` keys (whose names users write
/// too) as `(path, "kind = <value>")`.
fn keys(v: &Value, path: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                let at = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                // The keys of `[transports]` are names the scenario chose (`[transports.bulk]`),
                // not schema keys; the tables under them are walked like `[transport]`.
                if path == "transports" {
                    keys(child, &at, out);
                    continue;
                }
                out.push((at.clone(), k.clone()));
                if k == "kind"
                    && let Value::String(name) = child
                {
                    out.push((at.clone(), format!("kind = {name}")));
                }
                keys(child, &at, out);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                keys(item, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The keys (and kind names) of `v` that docs/scenario.md does not show in backticks, as
/// messages naming the key path and `source`.
fn undocumented(doc: &str, v: &Value, source: &str) -> Vec<String> {
    let mut found = Vec::new();
    keys(v, "", &mut found);
    let mut missing: Vec<String> = found
        .into_iter()
        .filter_map(|(path, key)| {
            let word = key.strip_prefix("kind = ").unwrap_or(&key);
            (!doc.contains(&format!("`{word}`"))).then(|| {
                if key.starts_with("kind = ") {
                    format!("{source}: kind `{word}` (at `{path}`) is not in docs/scenario.md")
                } else {
                    format!("{source}: key `{key}` (at `{path}`) is not in docs/scenario.md")
                }
            })
        })
        .collect();
    missing.dedup();
    missing
}

/// The example scenarios.
fn examples() -> Vec<PathBuf> {
    let dir = root().join("scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

/// The resolved spec of scenario file `path`, as JSON.
fn resolved(path: &Path) -> Value {
    let name = path.display().to_string();
    let scenario = dcsim::ScenarioSpec::load(path, &[])
        .and_then(|s| s.build(&name))
        .unwrap_or_else(|e| panic!("{e}"));
    serde_json::to_value(&scenario.spec).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn every_key_of_the_example_scenarios_is_documented() {
    let doc = doc();
    let files = examples();
    assert!(files.len() >= 10, "{files:?}");
    let missing: Vec<String> = files
        .iter()
        .flat_map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            undocumented(&doc, &resolved(p), &format!("scenarios/{name}"))
        })
        .collect();
    assert!(missing.is_empty(), "\n{}", missing.join("\n"));
}

/// Parameters a kind cannot do without, for the kinds that have any (the others are built
/// from their bare name, every parameter at its default).
const REQUIRED: &[(&str, &str)] = &[
    ("queue:droptail", r#"buffer = "250pkts""#),
    (
        "queue:ecn",
        r#"buffer = "250pkts"
mark_threshold = "65pkts""#,
    ),
    (
        "queue:red",
        r#"buffer = "250pkts"
min_th = "5pkts"
max_th = "15pkts""#,
    ),
    (
        "queue:prio",
        r#"control_buffer = "64pkts"
inner = { kind = "droptail", buffer = "250pkts" }"#,
    ),
    ("pattern:pairs", "count = 2\nsrc = 0\ndst = 2"),
    ("pattern:incast", "receiver = 0\nsize = \"64KB\""),
    (
        "pattern:poisson",
        r#"load = 0.5
load_relative_to = "host-links"
flow_size = { cdf = "websearch" }"#,
    ),
    (
        "pattern:partition-aggregate",
        r#"degree = 4
response_size = { fixed = "64KB" }
queries = { every = "1ms" }"#,
    ),
    ("pattern:shuffle", r#"bytes_per_pair = "1MB""#),
    (
        "pattern:pulser",
        r#"load = 0.5
load_relative_to = "host-links"
incast_response_size = "64KB"
incast_queries = { poisson_per_s = 500.0 }"#,
    ),
    ("pattern:trace", r#"file = "flows.csv""#),
];

/// A TOML table of kind `kind` of `family` (`"queue"`, `"pattern"`, ...) with the parameters
/// it cannot do without.
fn table_of(family: &str, kind: &str) -> String {
    let extra = REQUIRED
        .iter()
        .find(|(k, _)| *k == format!("{family}:{kind}"))
        .map_or("", |(_, v)| v);
    format!("kind = \"{kind}\"\n{extra}\n")
}

/// Parses `text` as a `T`; a kind that needs parameters the test does not give fails here,
/// saying where to add them.
fn parse<T: serde::de::DeserializeOwned>(family: &str, kind: &str, text: &str) -> T {
    toml::from_str(text).unwrap_or_else(|e| {
        panic!(
            "{family} kind {kind:?} does not parse from\n{text}\n{e}\n(add its required \
             parameters to REQUIRED in crates/dcsim/tests/it/doc_keys.rs)"
        )
    })
}

/// TOML text on one line, for messages.
fn one_line(text: &str) -> String {
    text.trim().replace('\n', "; ")
}

fn json<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap()
}

/// Beyond the examples: every registered topology, queue discipline, transport, congestion
/// controller, traffic pattern and controller at its defaults (resolved where the scenario
/// resolves them), the variants of the nested tables (DX's normalizer and measurement,
/// ICTCP, flow-size distributions, arrival processes), and the optional keys of the run,
/// output and flows.
#[test]
fn every_key_of_every_registered_kind_is_documented() {
    use dcsim::net::TopologySpec;
    use dcsim::net::qdisc::QdiscSpec;
    use dcsim::transport::TransportSpec;
    use dcsim::transport::cc::CcSpec;
    use dcsim::workload::GeneratorSpec;

    let doc = doc();
    let mut values: Vec<(String, Value)> = Vec::new();
    for (kind, _) in TopologySpec::KINDS {
        let t: TopologySpec = parse("topology", kind, &format!("kind = \"{kind}\""));
        values.push((format!("topology {kind}"), json(&t.resolve().unwrap())));
    }
    let k_ary: TopologySpec = parse("topology", "fat-tree", "kind = \"fat-tree\"\nk = 4");
    values.push((
        "topology fat-tree k = 4".into(),
        json(&k_ary.resolve().unwrap()),
    ));
    for k in QdiscSpec::KINDS {
        let q: QdiscSpec = parse("queue", k.name, &table_of("queue", k.name));
        values.push((format!("queue {}", k.name), json(&q)));
    }
    for t in TransportSpec::defaults() {
        values.push((format!("transport {}", t.name()), json(&t.resolved())));
    }
    for k in CcSpec::KINDS {
        let text = format!("kind = \"tcp\"\ncc = \"{}\"", k.name);
        let t: TransportSpec = parse("cc", k.name, &text);
        values.push((format!("cc {}", k.name), json(&t.resolved())));
    }
    let variants = [
        r#"kind = "tcp"
ictcp = {}
max_window = "100KB"
ecn = true
cc = { kind = "dx", normalizer = { fixed = "200us" }, measurement = { kind = "timestamps" } }"#,
        r#"kind = "tcp"
cc = { kind = "dx", normalizer = "base-rtt", measurement = { kind = "rtt" } }"#,
        r#"kind = "expresspass"
max_credit_rate = "500Mbps""#,
        r#"kind = "fastpass"
arbiter = 0
lead = "10us""#,
    ];
    for text in variants {
        let t: TransportSpec = parse("transport", "variant", text);
        values.push((
            format!("transport {{ {} }}", one_line(text)),
            json(&t.resolved()),
        ));
    }
    let mut patterns: Vec<String> = GeneratorSpec::KINDS
        .iter()
        .map(|k| table_of("pattern", k.name))
        .collect();
    for size in [
        r#"{ cdf_file = "x.cdf", format = "ns2", packet_bytes = "1460B" }"#,
        r#"{ uniform = ["8KB", "32KB"] }"#,
        r#"{ pareto = { mean = "100KB", shape = 1.2 } }"#,
    ] {
        patterns.push(format!(
            "kind = \"partition-aggregate\"\ndegree = 4\nresponse_size = {size}\n\
             queries = {{ poisson_per_s = 100.0 }}\n"
        ));
    }
    for text in &patterns {
        let g: GeneratorSpec = parse("pattern", "pattern", text);
        values.push((format!("pattern {{ {} }}", one_line(text)), json(&g)));
    }
    for c in dcsim::controller::ControllerSpec::defaults() {
        values.push((format!("controller {}", c.name()), json(&c)));
    }
    // A scenario with every optional key of the run, the output and flows set, built.
    let text = r#"
schema_version = 1
name = "all-keys"
description = "every optional key"
[sim]
duration = "10ms"
seed = 3
warmup = "1ms"
cooldown = "1ms"
[topology]
kind = "leaf-spine"
leaves = 2
hosts_per_leaf = 2
spines = 2
rate = "10Gbps"
delay = "1us"
[routing]
mode = "ecmp"
salt = 1
[transports.bulk]
kind = "tcp"
[[flows]]
src = 0
dst = 2
size = "1MB"
start = "1us"
stop = "5ms"
transport = "bulk"
[[generators]]
pattern = { kind = "permutation" }
transport = "bulk"
[output]
queue_occupancy = "5us"
[output.timeseries]
every = "1ms"
flows = [0]
cwnd = true
ports = ["switches"]
[controller]
kind = "sdn-ecn"
probe_interval = "1ms"
control_delay = "100us"
idle_timeout = "1ms"
exempt = ["bulk"]
"#;
    let spec = dcsim::ScenarioSpec::parse(text, "all-keys", &[]).unwrap_or_else(|e| panic!("{e}"));
    let built = spec.build("all-keys").unwrap_or_else(|e| panic!("{e}"));
    values.push((
        "the all-keys scenario of doc_keys.rs".into(),
        json(&built.spec),
    ));

    let missing: Vec<String> = values
        .iter()
        .flat_map(|(source, v)| undocumented(&doc, v, source))
        .collect();
    assert!(missing.is_empty(), "\n{}", missing.join("\n"));
}
