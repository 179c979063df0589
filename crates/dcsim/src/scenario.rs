//! Scenario files: TOML in, a validated, fully resolved [`Scenario`] out.
//!
//! Parse, don't validate: the raw TOML goes through serde into [`ScenarioSpec`] (unknown
//! keys and malformed units are rejected there, with file, line and column), `--set`
//! overrides are applied to the document first, and [`ScenarioSpec::build`] resolves
//! presets and checks everything else, naming the key path of any problem. After `build`
//! nothing is checked again.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use dcsim_engine::{ByteSize, Dur, RngTree, Time};
use dcsim_net::qdisc::{Amount, DropTailConfig, EcnConfig, PortFeatures, QdiscSpec};
use dcsim_net::{Graph, HostId, RoutingSpec, TopologySpec};
use dcsim_transport::{FlowSpec, TransportSpec};
use dcsim_workload::{FlowSize, FlowSource, GeneratorSpec, SourceCx};
use serde::{Deserialize, Serialize};

/// The scenario schema version this build reads.
pub const SCHEMA_VERSION: u32 = 1;

/// A scenario file, as written (defaults filled by serde; presets not yet resolved).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSpec {
    /// Schema version (1).
    #[serde(default = "schema_version")]
    pub schema_version: u32,
    /// Name used in results (default: the file name without extension).
    #[serde(default)]
    pub name: Option<String>,
    /// One-line description (shown by `dcsim list`).
    #[serde(default)]
    pub description: Option<String>,
    /// Run settings.
    #[serde(default)]
    pub sim: SimSpec,
    /// The network.
    pub topology: TopologySpec,
    /// Equal-cost path selection.
    #[serde(default)]
    pub routing: RoutingSpec,
    /// Queue discipline of every switch port.
    #[serde(default = "default_queue")]
    pub queue: QdiscSpec,
    /// Queue discipline of every host NIC.
    #[serde(default = "default_nic")]
    pub nic: QdiscSpec,
    /// The default transport of flows and generators.
    #[serde(default)]
    pub transport: TransportSpec,
    /// Named extra transports (`transport = "name"` in a flow or generator).
    #[serde(default)]
    pub transports: BTreeMap<String, TransportSpec>,
    /// Explicit flows.
    #[serde(default)]
    pub flows: Vec<FlowEntry>,
    /// Traffic patterns.
    #[serde(default)]
    pub generators: Vec<GeneratorEntry>,
    /// What to record besides flows.csv, ports.csv and summary.json.
    #[serde(default)]
    pub output: OutputSpec,
    /// Directory of the scenario file (relative CDF and trace paths start there).
    #[serde(skip)]
    pub base_dir: Option<PathBuf>,
}

fn schema_version() -> u32 {
    SCHEMA_VERSION
}

/// The default switch queue: the DCTCP 10 Gb/s setting used by the ExpressPass authors'
/// baselines (250-packet buffers, K = 65 packets). Packets that are not ECN-capable see a
/// plain drop-tail queue.
pub fn default_queue() -> QdiscSpec {
    QdiscSpec::Ecn(EcnConfig {
        buffer: Amount::Bytes(250 * 1538),
        mark_threshold: Amount::Packets(65),
    })
}

/// The default NIC queue: drop-tail, 1000 full frames (the ExpressPass fat-tree script's
/// host buffer).
pub fn default_nic() -> QdiscSpec {
    QdiscSpec::DropTail(DropTailConfig {
        buffer: Amount::Bytes(1000 * 1538),
    })
}

/// Run settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct SimSpec {
    /// Simulated time to run. Without it the run continues until every flow is done and
    /// the network is empty (a drained run); long-lived flows then need it.
    #[serde(default)]
    pub duration: Option<Dur>,
    /// Master seed (default 0). Every component draws from its own stream of it.
    #[serde(default)]
    pub seed: u64,
    /// Start of the measurement window (default 0): port counters, goodput and fairness
    /// count from here, and flows that start before it are left out of FCT statistics.
    #[serde(default)]
    pub warmup: Dur,
    /// Flows that start within this time of the end of arrivals (`duration`, or in a
    /// drained run the last flow's start) are left out of FCT statistics (default 0): they
    /// meet a network that is already emptying.
    #[serde(default)]
    pub cooldown: Dur,
}

/// One explicit flow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowEntry {
    /// Sending host.
    pub src: u32,
    /// Receiving host.
    pub dst: u32,
    /// Bytes to deliver, or `"inf"` (default) for a long-lived flow.
    #[serde(default)]
    pub size: FlowSize,
    /// Start time (default 0).
    #[serde(default)]
    pub start: Dur,
    /// No new data after this time.
    #[serde(default)]
    pub stop: Option<Dur>,
    /// Name of a transport in `[transports]` (default: `[transport]`).
    #[serde(default)]
    pub transport: Option<String>,
}

/// A traffic pattern plus the transport its flows use.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratorEntry {
    /// The pattern.
    pub pattern: GeneratorSpec,
    /// Name of a transport in `[transports]` (default: `[transport]`).
    #[serde(default)]
    pub transport: Option<String>,
}

/// Optional outputs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Periodic samples written to `timeseries.csv`.
    #[serde(default)]
    pub timeseries: Option<TimeseriesSpec>,
}

/// Periodic sampling.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeseriesSpec {
    /// Sampling interval.
    pub every: Dur,
    /// Flows whose goodput (and window) to sample: `"all"` or a list of flow numbers.
    #[serde(default)]
    pub flows: FlowSelection,
    /// Also sample the congestion window (and DCTCP α) of the selected flows.
    #[serde(default)]
    pub cwnd: bool,
    /// Ports whose queue to sample, by label `"node->peer"` (see ports.csv), or
    /// `"switches"` for every switch port.
    #[serde(default)]
    pub ports: Vec<String>,
}

/// Which flows to sample.
///
/// The default is `"none"`, a keyword, so that `dcsim show` can print it (a variant that
/// serde skips could not be printed: `dcsim show` failed on any scenario sampling ports
/// without naming `flows`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum FlowSelection {
    /// `"all"` or `"none"`.
    Keyword(FlowKeyword),
    /// Flow numbers.
    List(Vec<u32>),
}

impl Default for FlowSelection {
    fn default() -> Self {
        Self::Keyword(FlowKeyword::None)
    }
}

/// Keywords for [`FlowSelection`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowKeyword {
    /// Every flow.
    All,
    /// No flow.
    None,
}

/// A scenario that cannot be loaded or built: one message that names where the problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The scenario file (or other source).
    pub source: String,
    /// What is wrong and where (line and column, or key path).
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.source, self.message.trim_end())
    }
}
impl std::error::Error for ConfigError {}

/// A validated, fully resolved scenario, ready to run.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The spec with every default and preset filled in (what `dcsim show` prints).
    pub spec: ScenarioSpec,
    /// The scenario's name.
    pub name: String,
    /// The topology graph.
    pub graph: Graph,
    /// The explicit flows, in flow-number order. Generators' flows are created lazily as
    /// the run reaches their start times, and numbered after these in creation order.
    pub flows: Vec<FlowSpec>,
    /// Traffic patterns with the index of their transport.
    pub generators: Vec<(GeneratorSpec, u32)>,
    /// Transports; flows refer to them by index.
    pub transports: Vec<TransportSpec>,
    /// What generators need to know about the network.
    pub source_params: SourceParams,
}

/// What traffic patterns need to know about the network and the run.
#[derive(Clone, Debug, Default)]
pub struct SourceParams {
    /// Hosts in the topology.
    pub hosts: u32,
    /// Master seed.
    pub seed: u64,
    /// Rate of host 0's link (load definitions relative to host links).
    pub host_link: Option<dcsim_engine::Rate>,
    /// Hosts per rack, when hosts sit in equal consecutive racks.
    pub hosts_per_rack: Option<u32>,
    /// Sum of the rates of every ToR (leaf) uplink.
    pub tor_uplink_capacity: Option<dcsim_engine::Rate>,
    /// Directory of the scenario file.
    pub base_dir: Option<PathBuf>,
}

impl Scenario {
    /// Builds the lazy flow sources of the generators, with their transport indexes.
    pub fn sources(&self) -> Result<Vec<(FlowSource, u32)>, ConfigError> {
        let p = &self.source_params;
        let rng = RngTree::new(p.seed);
        self.generators
            .iter()
            .enumerate()
            .map(|(i, (g, t))| {
                let cx = SourceCx {
                    hosts: p.hosts,
                    rng: &rng,
                    index: i as u64,
                    host_link: p.host_link,
                    hosts_per_rack: p.hosts_per_rack,
                    tor_uplink_capacity: p.tor_uplink_capacity,
                    base_dir: p.base_dir.as_deref(),
                };
                g.source(&cx).map(|s| (s, *t)).map_err(|e| ConfigError {
                    source: self.name.clone(),
                    message: format!("generators[{i}].pattern.{e}"),
                })
            })
            .collect()
    }
}

/// Network facts the traffic patterns use, read off the graph.
fn source_params(
    graph: &Graph,
    topo: &TopologySpec,
    seed: u64,
    base_dir: Option<PathBuf>,
) -> SourceParams {
    let tier = |n: usize| graph.nodes[n].tier;
    let host_link = graph
        .hosts
        .first()
        .and_then(|&h| graph.links.iter().find(|l| l.a == h || l.b == h))
        .map(|l| l.rate);
    let is_tor = |t: &str| t == "tor" || t == "leaf";
    let uplinks: u64 = graph
        .links
        .iter()
        .filter(|l| {
            let (a, b) = (tier(l.a), tier(l.b));
            (is_tor(a) && b != "host" && !is_tor(b)) || (is_tor(b) && a != "host" && !is_tor(a))
        })
        .map(|l| l.rate.bps())
        .sum();
    let hosts_per_rack = match topo {
        TopologySpec::FatTree(f) => f.hosts_per_tor,
        TopologySpec::LeafSpine(l) => l.hosts_per_leaf,
        TopologySpec::Star(s) => s.hosts,
        _ => None,
    };
    SourceParams {
        hosts: graph.hosts.len() as u32,
        seed,
        host_link,
        hosts_per_rack,
        tor_uplink_capacity: (uplinks > 0).then_some(dcsim_engine::Rate::from_bps(uplinks)),
        base_dir,
    }
}

impl ScenarioSpec {
    /// Reads a scenario file, applies `--set path=value` overrides, and parses it.
    pub fn load(path: &Path, sets: &[String]) -> Result<Self, ConfigError> {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            source: source.clone(),
            message: format!("cannot read the file: {e}"),
        })?;
        let mut spec = Self::parse(&text, &source, sets)?;
        spec.base_dir = path.parent().map(Path::to_path_buf);
        if spec.name.is_none() {
            spec.name = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        }
        Ok(spec)
    }

    /// Parses scenario text; `source` names it in errors.
    pub fn parse(text: &str, source: &str, sets: &[String]) -> Result<Self, ConfigError> {
        let err = |message: String| ConfigError {
            source: source.to_string(),
            message,
        };
        let text = if sets.is_empty() {
            text.to_string()
        } else {
            let mut doc: toml_edit::DocumentMut = text
                .parse()
                .map_err(|e: toml_edit::TomlError| err(e.to_string()))?;
            for s in sets {
                apply_set(&mut doc, s).map_err(|m| err(format!("--set {s}: {m}")))?;
            }
            doc.to_string()
        };
        let spec: Self = toml::from_str(&text).map_err(|e| err(e.to_string()))?;
        if spec.schema_version != SCHEMA_VERSION {
            return Err(err(format!(
                "schema_version: this dcsim reads version {SCHEMA_VERSION}, the file says {}",
                spec.schema_version
            )));
        }
        Ok(spec)
    }

    /// Resolves presets and defaults and checks every cross-reference. Errors name the key
    /// path.
    pub fn build(&self, source: &str) -> Result<Scenario, ConfigError> {
        let err = |message: String| ConfigError {
            source: source.to_string(),
            message,
        };
        let mut spec = self.clone();
        spec.topology = self
            .topology
            .resolve()
            .map_err(|e| err(format!("topology.{e}")))?;
        let graph = spec
            .topology
            .build()
            .map_err(|e| err(format!("topology.{e}")))?;
        let hosts = graph.hosts.len() as u32;
        if let Some(l) = graph.links.iter().find(|l| l.rate.bps() == 0) {
            return Err(err(format!(
                "topology: the link {} -- {} has rate 0; rates must be greater than zero",
                graph.nodes[l.a].name, graph.nodes[l.b].name
            )));
        }
        spec.queue
            .validate()
            .map_err(|e| err(format!("queue.{e}")))?;
        spec.nic.validate().map_err(|e| err(format!("nic.{e}")))?;
        spec.transport
            .validate()
            .map_err(|e| err(format!("transport.{e}")))?;
        spec.transport = spec.transport.resolved();
        for t in spec.transports.values_mut() {
            *t = t.resolved();
        }
        let mut transports = vec![spec.transport.clone()];
        let mut index_of = BTreeMap::new();
        for (name, t) in &spec.transports {
            t.validate()
                .map_err(|e| err(format!("transports.{name}.{e}")))?;
            index_of.insert(name.clone(), transports.len() as u32);
            transports.push(t.clone());
        }
        for t in &transports {
            check_needs(t, &spec).map_err(err)?;
        }
        let pick = |name: &Option<String>, at: &str| -> Result<u32, ConfigError> {
            match name {
                None => Ok(0),
                Some(n) => index_of.get(n).copied().ok_or_else(|| {
                    let known: Vec<&str> = index_of.keys().map(String::as_str).collect();
                    err(format!("{at}.transport: no transport named {n:?} in [transports] (defined: {known:?})"))
                }),
            }
        };
        let mut flows = Vec::new();
        let host = |h: u32, at: String| -> Result<HostId, ConfigError> {
            if h < hosts {
                Ok(HostId(h))
            } else {
                Err(err(format!(
                    "{at}: host {h} is out of range (the topology has {hosts} hosts, 0..{})",
                    hosts - 1
                )))
            }
        };
        for (i, f) in spec.flows.iter().enumerate() {
            let at = format!("flows[{i}]");
            let (src, dst) = (
                host(f.src, format!("{at}.src"))?,
                host(f.dst, format!("{at}.dst"))?,
            );
            if src == dst {
                return Err(err(format!(
                    "{at}.dst: a flow cannot go from host {} to itself",
                    f.src
                )));
            }
            if let Some(stop) = f.stop
                && stop < f.start
            {
                return Err(err(format!(
                    "{at}.stop: {stop} is before the start {}",
                    f.start
                )));
            }
            flows.push(FlowSpec {
                src,
                dst,
                size_bytes: f.size.0,
                start: Time::from_dur(f.start),
                stop: f.stop.map(Time::from_dur),
                transport: pick(&f.transport, &at)?,
            });
        }
        let mut generators = Vec::new();
        for (i, g) in spec.generators.iter().enumerate() {
            let at = format!("generators[{i}]");
            generators.push((g.pattern.clone(), pick(&g.transport, &at)?));
        }
        if spec.sim.duration.is_none()
            && let Some(i) = flows
                .iter()
                .position(|f| f.size_bytes.is_none() && f.stop.is_none())
        {
            return Err(err(format!(
                "sim.duration: required, because flow {i} is long-lived (size \"inf\" without a stop time) and would never finish"
            )));
        }
        let source_params =
            source_params(&graph, &spec.topology, spec.sim.seed, spec.base_dir.clone());
        if let Some(d) = spec.sim.duration {
            if d == Dur::ZERO {
                return Err(err("sim.duration: must be greater than zero".into()));
            }
            if spec.sim.warmup >= d {
                return Err(err(format!(
                    "sim.warmup: {} is not before the end of the run ({d})",
                    spec.sim.warmup
                )));
            }
            if spec.sim.cooldown.as_ps() > 0
                && spec
                    .sim
                    .warmup
                    .as_ps()
                    .saturating_add(spec.sim.cooldown.as_ps())
                    >= d.as_ps()
            {
                return Err(err(format!(
                    "sim.cooldown: warmup {} plus cooldown {} leave no time to measure in a run of {d}",
                    spec.sim.warmup, spec.sim.cooldown
                )));
            }
        }
        if let Some(ts) = &spec.output.timeseries {
            if ts.every == Dur::ZERO {
                return Err(err(
                    "output.timeseries.every: must be greater than zero".into()
                ));
            }
            if let FlowSelection::List(l) = &ts.flows
                && spec.generators.is_empty()
                && let Some(&bad) = l.iter().find(|&&f| f as usize >= flows.len())
            {
                return Err(err(format!(
                    "output.timeseries.flows: flow {bad} does not exist ({} flows)",
                    flows.len()
                )));
            }
            for p in &ts.ports {
                if p != "switches" && port_by_label(&graph, p).is_none() {
                    return Err(err(format!(
                        "output.timeseries.ports: no port {p:?} (labels are \"node->peer\", e.g. \"{}\")",
                        example_label(&graph)
                    )));
                }
            }
        }
        let name = spec.name.clone().unwrap_or_else(|| "scenario".into());
        let scenario = Scenario {
            spec,
            name,
            graph,
            flows,
            generators,
            transports,
            source_params,
        };
        // Build every source once: it checks the pattern against the network (hosts in
        // range, files readable, load definitions complete) before anything runs.
        for (i, (s, _)) in scenario.sources()?.iter().enumerate() {
            if scenario.spec.sim.duration.is_none()
                && s.peek()
                    .is_some_and(|f| f.size_bytes.is_none() && f.stop.is_none())
            {
                return Err(err(format!(
                    "sim.duration: required, because generators[{i}] makes long-lived flows (size \"inf\" without a stop time)"
                )));
            }
        }
        Ok(scenario)
    }
}

/// Checks what transport `t` needs of the network against the scenario's routing and
/// queue disciplines; the error names the key to change.
fn check_needs(t: &TransportSpec, spec: &ScenarioSpec) -> Result<(), String> {
    let needs = t.needs();
    let name = t.name();
    if let Some(why) = needs.symmetric_routes
        && spec.routing.mode != dcsim_net::RoutingMode::SymmetricEcmp
    {
        return Err(format!(
            "routing.mode: {name} needs \"symmetric-ecmp\" ({why})"
        ));
    }
    for (key, ports, need) in [
        ("queue", "switch ports", needs.switch_ports),
        ("nic", "host NICs", needs.nics),
    ] {
        let Some((wanted, why)) = need else { continue };
        let q = if key == "queue" {
            &spec.queue
        } else {
            &spec.nic
        };
        let missing = wanted.difference(q.features());
        if let Some((_, what, kind)) = PortFeatures::DESCRIPTIONS
            .iter()
            .find(|(f, _, _)| missing.contains(*f))
        {
            return Err(format!(
                "{key}.kind: {name} needs {what} on {ports}, such as \"{kind}\" ({why})"
            ));
        }
    }
    Ok(())
}

/// The port number of label `node->peer` in `graph` (ports are numbered two per link in
/// link order: `a->b` then `b->a`).
pub fn port_by_label(graph: &Graph, label: &str) -> Option<usize> {
    let (a, b) = label.split_once("->")?;
    graph.links.iter().enumerate().find_map(|(i, l)| {
        let (na, nb) = (&graph.nodes[l.a].name, &graph.nodes[l.b].name);
        if na == a && nb == b {
            Some(2 * i)
        } else if na == b && nb == a {
            Some(2 * i + 1)
        } else {
            None
        }
    })
}

fn example_label(g: &Graph) -> String {
    g.links
        .last()
        .map(|l| format!("{}->{}", g.nodes[l.a].name, g.nodes[l.b].name))
        .unwrap_or_default()
}

impl Scenario {
    /// The resolved scenario as TOML (what `dcsim show` prints).
    pub fn to_toml(&self) -> String {
        toml::to_string(&self.spec)
            .unwrap_or_else(|e| format!("# cannot print the scenario: {e}\n"))
    }
    /// Wire size hint used in summaries: a full data packet of the default transport.
    pub fn full_packet_bytes(&self) -> ByteSize {
        ByteSize(u64::from(
            self.transports[0].packet_format().full_wire_bytes,
        ))
    }
}

/// Applies one `path=value` override to a TOML document.
///
/// The path is dotted keys with optional `[index]` for arrays (`flows[0].size`); the value
/// is read as TOML if it parses (`3`, `true`, `0.5`, `"x"`, `{ rate = "1Gbps" }`) and as a
/// bare string otherwise (`10Gbps`, `1MB`). Missing tables are created.
fn apply_set(doc: &mut toml_edit::DocumentMut, set: &str) -> Result<(), String> {
    let (path, raw) = set.split_once('=').ok_or("expected path=value")?;
    let (path, raw) = (path.trim(), raw.trim());
    let value: toml_edit::Value = raw.parse().unwrap_or_else(|_| toml_edit::Value::from(raw));
    let mut segs: Vec<(&str, Option<usize>)> = Vec::new();
    for part in path.split('.') {
        let (key, idx) = match part.split_once('[') {
            Some((k, rest)) => {
                let i = rest
                    .strip_suffix(']')
                    .and_then(|s| s.parse().ok())
                    .ok_or(format!("bad index in {part:?}"))?;
                (k, Some(i))
            }
            None => (part, None),
        };
        if key.is_empty() {
            return Err(format!("empty key in path {path:?}"));
        }
        segs.push((key, idx));
    }
    set_path(doc.as_table_mut(), &segs, value)
}

fn set_path(
    table: &mut dyn toml_edit::TableLike,
    segs: &[(&str, Option<usize>)],
    value: toml_edit::Value,
) -> Result<(), String> {
    use toml_edit::{Item, Value};
    let ((key, idx), rest) = segs.split_first().ok_or("empty path")?;
    let last = rest.is_empty();
    match idx {
        None if last => {
            table.insert(key, Item::Value(value));
            Ok(())
        }
        None => {
            if table.get(key).is_none() {
                table.insert(
                    key,
                    Item::Value(Value::InlineTable(toml_edit::InlineTable::new())),
                );
            }
            let inner = table
                .get_mut(key)
                .and_then(Item::as_table_like_mut)
                .ok_or(format!("{key:?} is not a table"))?;
            set_path(inner, rest, value)
        }
        Some(i) => match table.get_mut(key) {
            Some(Item::ArrayOfTables(a)) => {
                let len = a.len();
                let t = a
                    .get_mut(*i)
                    .ok_or(format!("{key} has only {len} entries"))?;
                if last {
                    return Err(format!(
                        "cannot replace the whole table {key}[{i}]; set one of its keys"
                    ));
                }
                set_path(t, rest, value)
            }
            Some(Item::Value(Value::Array(arr))) => {
                let len = arr.len();
                let v = arr
                    .get_mut(*i)
                    .ok_or(format!("{key} has only {len} entries"))?;
                if last {
                    *v = value;
                    return Ok(());
                }
                match v {
                    Value::InlineTable(t) => set_path(t, rest, value),
                    _ => Err(format!("{key}[{i}] is not a table")),
                }
            }
            Some(_) => Err(format!("{key:?} is not an array")),
            None => Err(format!("there is no array {key:?} to index")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
[sim]
duration = "10ms"
[topology]
kind = "dumbbell"
pairs = 2
[[flows]]
src = 0
dst = 2
"#;

    fn build(text: &str, sets: &[&str]) -> Result<Scenario, ConfigError> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        ScenarioSpec::parse(text, "t.toml", &sets)?.build("t.toml")
    }

    #[test]
    fn defaults_resolve_and_print() {
        let s = build(BASE, &[]).unwrap();
        assert_eq!(s.graph.hosts.len(), 4);
        assert_eq!(s.flows.len(), 1);
        assert!(s.to_toml().contains("bottleneck"), "{}", s.to_toml());
    }

    /// What `dcsim show` prints is a scenario that resolves to itself, for every example
    /// and validation scenario and for a time series that names no flows (whose default
    /// once could not be printed).
    #[test]
    fn show_output_round_trips() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files: Vec<_> = ["scenarios", "validation"]
            .iter()
            .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap())
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        assert!(files.len() >= 8, "{files:?}");
        let mut shown: Vec<(String, String)> = files
            .iter()
            .map(|p| {
                let name = p.display().to_string();
                let s = ScenarioSpec::load(p, &[]).and_then(|s| s.build(&name));
                (name, s.unwrap().to_toml())
            })
            .collect();
        let ports_only =
            format!("{BASE}[output.timeseries]\nevery = \"1ms\"\nports = [\"left->right\"]\n");
        shown.push((
            "ports only".into(),
            build(&ports_only, &[]).unwrap().to_toml(),
        ));
        for (name, text) in shown {
            assert!(!text.starts_with("# cannot"), "{name}: {text}");
            let again = build(&text, &[]).unwrap().to_toml();
            assert_eq!(text, again, "{name}");
        }
    }

    #[test]
    fn set_overrides_nested_keys_and_array_elements() {
        let s = build(
            BASE,
            &[
                "sim.seed=7",
                "topology.pairs=3",
                "flows[0].size=1MB",
                "topology.bottleneck.rate=1Gbps",
                "topology.bottleneck.delay=5us",
            ],
        )
        .unwrap();
        assert_eq!(s.spec.sim.seed, 7);
        assert_eq!(s.graph.hosts.len(), 6);
        assert_eq!(s.flows[0].size_bytes, Some(1_000_000));
        let e = build(BASE, &["flows[3].size=1MB"]).unwrap_err();
        assert!(e.message.contains("only 1 entries"), "{e}");
    }

    #[test]
    fn errors_name_line_column_or_key_path() {
        let e = build(&BASE.replace("pairs = 2", "pairs = 2\nbogus = 1"), &[]).unwrap_err();
        assert!(
            e.to_string().starts_with("t.toml: ") && e.message.contains("bogus"),
            "{e}"
        );
        let e = build(
            &BASE.replace(
                "kind = \"dumbbell\"",
                "kind = \"dumbbell\"\nbottleneck = { rate = \"10Gbs\", delay = \"1us\" }",
            ),
            &[],
        )
        .unwrap_err();
        assert!(
            e.message.contains("line") && e.message.contains("Gbs"),
            "{e}"
        );
        let e = build(&BASE.replace("dst = 2", "dst = 9"), &[]).unwrap_err();
        assert!(
            e.message
                .starts_with("flows[0].dst: host 9 is out of range"),
            "{e}"
        );
        let e = build(&BASE.replace("dst = 2", "dst = 2\nsize = \"-5MB\""), &[]).unwrap_err();
        assert!(e.message.contains("negative"), "{e}");
        let e = build(&BASE.replace("duration = \"10ms\"", ""), &[]).unwrap_err();
        assert!(e.message.starts_with("sim.duration: required"), "{e}");
        let e = build(
            &BASE.replace(
                "pairs = 2",
                "pairs = 2\nhost_link = { rate = \"0Gbps\", delay = \"1us\" }",
            ),
            &[],
        )
        .unwrap_err();
        assert!(e.message.contains("rate"), "{e}");
    }
}
