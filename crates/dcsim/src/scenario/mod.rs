//! Scenario files: TOML in, a validated, fully resolved [`Scenario`] out.
//!
//! Parse, don't validate: the raw TOML goes through serde into [`ScenarioSpec`] (unknown
//! keys and malformed units are rejected there, with file, line and column), `--set`
//! overrides are applied to the document first, and [`ScenarioSpec::build`] resolves
//! presets and checks everything else, naming the key path of any problem. After `build`
//! nothing is checked again.

mod build;
mod locate;
mod readable;
mod set;
mod spec;

use std::fmt;
use std::path::{Path, PathBuf};

use dcsim_engine::{ByteSize, RngTree};
use dcsim_net::Graph;
use dcsim_net::qdisc::QdiscSpec;
use dcsim_transport::{FlowSpec, TransportSpec};
use dcsim_workload::{FlowSource, GeneratorSpec, SourceCx};

pub use build::port_by_label;
pub(crate) use build::{FLOW_BYTES, memory_limit};
pub use spec::{
    EventsSpec, FlowEntry, FlowKeyword, FlowSelection, GeneratorEntry, Jitter, Origin, OutputSpec,
    PortsSpec, Release, SCHEMA_VERSION, ScenarioSpec, SimSpec, TimeseriesSpec, TraceSpec,
    default_nic, default_queue,
};

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
        write!(
            f,
            "{}: {}",
            self.source,
            readable::readable(self.message.trim_end())
        )
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
    /// Where it came from (its file), for error messages.
    pub source: String,
    /// The topology graph.
    pub graph: Graph,
    /// The explicit flows, in flow-number order. Generators' flows are created lazily as
    /// the run reaches their start times, and numbered after these in creation order.
    pub flows: Vec<FlowSpec>,
    /// Traffic patterns with the index of their transport.
    pub generators: Vec<(GeneratorSpec, u32)>,
    /// Transports; flows refer to them by index.
    pub transports: Vec<TransportSpec>,
    /// Each discipline the transports put around or in place of the scenario's queues,
    /// one line each (`dcsim check` prints them).
    pub port_notes: Vec<String>,
    /// What generators need to know about the network.
    pub source_params: SourceParams,
    /// Whether something in the run asks for finished flows by number (a control-plane
    /// service, a packet trace, the event log, flows sampled in the time series), so that
    /// finished flows must stay in memory until the end; otherwise they leave it.
    pub keeps_finished_flows: bool,
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
    /// The disciplines of switch ports and host NICs that run (the build sets both).
    pub fn ports(&self) -> (&QdiscSpec, &QdiscSpec) {
        const SET: &str = "ScenarioSpec::build sets the queue and the NIC";
        (
            self.spec.queue.as_ref().expect(SET),
            self.spec.nic.as_ref().expect(SET),
        )
    }
    /// The index of the named transport `name` (`[transports]`), if there is one: the
    /// default transport is 0, the named ones follow in name order.
    pub fn transport_index(&self, name: &str) -> Option<u32> {
        self.spec
            .transports
            .keys()
            .position(|k| k == name)
            .map(|i| i as u32 + 1)
    }

    /// The flows the run will have: those listed, and per source (as [`Scenario::sources`]
    /// builds them) its known count, or its rate over its horizon (`until` or the run's
    /// duration), capped by `max_flows`; a source without any bound counts none.
    pub fn expected_flows(&self, sources: &[(FlowSource, u32)]) -> f64 {
        sources
            .iter()
            .filter_map(|(s, _)| self.flows_of(s))
            .fold(self.flows.len() as f64, |n, m| n + m)
    }

    /// The flows source `s` will make: known, or its rate over its horizon, capped; `None`
    /// without any bound.
    pub fn flows_of(&self, s: &FlowSource) -> Option<f64> {
        let info = s.info();
        let horizon = info.limits.until.or(self.spec.sim.duration);
        let by_rate = match (info.flows_per_s, horizon) {
            (Some(r), Some(h)) => Some(r * h.as_secs_f64()),
            _ => None,
        };
        let m = [
            info.flows.map(|f| f as f64),
            info.limits.max_flows.map(|f| f as f64),
            by_rate,
        ]
        .into_iter()
        .flatten()
        .fold(f64::INFINITY, f64::min);
        m.is_finite().then_some(m)
    }

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
                    source: self.source.clone(),
                    message: format!("generators[{i}].pattern.{e}"),
                })
            })
            .collect()
    }

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

impl ScenarioSpec {
    /// Reads a scenario file, applies `--set path=value` overrides, and parses it.
    pub fn load(path: &Path, sets: &[String]) -> Result<Self, ConfigError> {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            source: source.clone(),
            message: format!("cannot read the file: {e}"),
        })?;
        Self::parse_file_text(&text, path, sets)
    }

    /// [`ScenarioSpec::load`] of a file whose text has been read already: relative paths in
    /// the scenario (CDF and trace files) are taken from the file's folder, and the name
    /// defaults to the file's stem.
    pub fn parse_file_text(text: &str, path: &Path, sets: &[String]) -> Result<Self, ConfigError> {
        let mut spec = Self::parse(text, &path.display().to_string(), sets)?;
        spec.base_dir = path.parent().map(Path::to_path_buf);
        if spec.name.is_none() {
            spec.name = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        }
        Ok(spec)
    }

    /// Scenario text read from the file `path`, or written without a file (then named by
    /// its `name` key, else `scenario`, and `<scenario>` in errors): the one way the
    /// command line, sweeps and the Python package turn text into a scenario.
    pub fn from_text(
        text: &str,
        path: Option<&Path>,
        sets: &[String],
    ) -> Result<Self, ConfigError> {
        match path {
            Some(p) => Self::parse_file_text(text, p, sets),
            None => {
                let mut spec = Self::parse(text, "<scenario>", sets)?;
                spec.name.get_or_insert_with(|| "scenario".to_string());
                Ok(spec)
            }
        }
    }

    /// Parses scenario text; `source` names it in errors.
    pub fn parse(text: &str, source: &str, sets: &[String]) -> Result<Self, ConfigError> {
        let err = |message: String| ConfigError {
            source: source.to_string(),
            message,
        };
        let original = text;
        // TOML's integers are 64-bit signed; serde's reader would take larger ones as u64
        // where the overrides' editor cannot, so a file would pass alone and fail with a
        // `--set`. Refuse them in both, where they are.
        let doc = text.parse::<toml_edit::DocumentMut>();
        if let Err(e) = &doc
            && e.message().contains("integer number overflowed")
        {
            return Err(err(format!(
                "{}scenario integers are 64-bit signed, at most {}",
                e.to_string()
                    .trim_end()
                    .trim_end_matches("integer number overflowed"),
                i64::MAX
            )));
        }
        let text = if sets.is_empty() {
            text.to_string()
        } else {
            let mut doc = doc.map_err(|e| err(e.to_string()))?;
            // A new `kind` starts its table afresh (the old kind's parameters mean nothing
            // to the new one), so kinds go first and the table's other overrides stay.
            let is_kind = |s: &&String| {
                s.split_once('=')
                    .is_some_and(|(p, _)| p.trim() == "kind" || p.trim().ends_with(".kind"))
            };
            for s in sets
                .iter()
                .filter(is_kind)
                .chain(sets.iter().filter(|s| !is_kind(s)))
            {
                set::apply_set(&mut doc, s).map_err(|m| err(format!("--set {s}: {m}")))?;
            }
            doc.to_string()
        };
        let spec: Self = match toml::from_str(&text) {
            Ok(s) => s,
            Err(e) if !sets.is_empty() => return Err(err(blame(original, sets, &e))),
            Err(e) => return Err(err(locate::describe(&text, &e))),
        };
        if spec.schema_version != SCHEMA_VERSION {
            return Err(err(format!(
                "schema_version: this dcsim reads version {SCHEMA_VERSION}, the file says {}",
                spec.schema_version
            )));
        }
        let mut spec = spec;
        let overridden = sets
            .iter()
            .filter_map(|s| s.split_once('=').map(|(p, _)| p.trim().to_string()))
            .collect();
        spec.origin = Origin(Some(std::sync::Arc::new((
            original.to_string(),
            overridden,
        ))));
        Ok(spec)
    }
}

/// The message of a scenario that does not read once the overrides are applied: the file's
/// own error if the file alone fails the same way (its lines are the file's), else the
/// first override after which it fails, named as given (`--set sim.duration=10: ...`),
/// never a line of the patched text, which the user has not seen.
fn blame(text: &str, sets: &[String], full: &toml::de::Error) -> String {
    let fails = |t: &str| toml::from_str::<ScenarioSpec>(t).err();
    if let Some(e) = fails(text)
        && e.message() == full.message()
    {
        return locate::describe(text, &e);
    }
    let Ok(mut doc) = text.parse::<toml_edit::DocumentMut>() else {
        return full.to_string();
    };
    for s in sets {
        if set::apply_set(&mut doc, s).is_err() {
            break;
        }
        let patched = doc.to_string();
        if let Some(e) = fails(&patched)
            && e.message() == full.message()
        {
            let mut msg = format!(
                "--set {s}: {}",
                locate::with_suggestion(e.message().trim_end())
            );
            // An error elsewhere in the file that the override brought about (a key the
            // new kind does not have): say where, in the file's own words.
            if let Some(line) = e.span().and_then(|sp| line_at(&patched, sp.start))
                && let Some((path, _)) = s.split_once('=')
                && let Some(last) = path.trim().rsplit('.').next()
                && !line.trim_start().starts_with('[')
                && !line.contains(&format!("{} =", last.split('[').next().unwrap_or(last)))
            {
                msg += &format!(" (at `{}`)", line.trim());
            }
            return msg;
        }
    }
    full.to_string()
}

/// The line of `text` holding byte `at`.
fn line_at(text: &str, at: usize) -> Option<&str> {
    let start = text.get(..at)?.rfind('\n').map_or(0, |i| i + 1);
    text[start..].lines().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small scenario that tests change one key at a time.
    pub(super) const BASE: &str = r#"
[sim]
duration = "10ms"
[topology]
kind = "dumbbell"
pairs = 2
[[flows]]
src = 0
dst = 2
"#;

    /// Parses `text` with the `--set` overrides `sets` and builds it.
    pub(super) fn build(text: &str, sets: &[&str]) -> Result<Scenario, ConfigError> {
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
    fn parse_errors_name_line_and_column() {
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
        let e = build(&BASE.replace("dst = 2", "dst = 2\nsize = \"-5MB\""), &[]).unwrap_err();
        assert!(e.message.contains("negative"), "{e}");
    }

    #[test]
    fn set_errors_name_the_override_not_a_line_of_the_patched_text() {
        let e = ScenarioSpec::parse(BASE, "f.toml", &["sim.duration=10".into()]).unwrap_err();
        assert!(
            e.message
                .starts_with("--set sim.duration=10: 10 has no unit"),
            "{e}"
        );
        assert!(!e.message.contains("line"), "{e}");
        let e = ScenarioSpec::parse(
            BASE,
            "f.toml",
            &["sim.seed=2".into(), "topology.pairs=-1".into()],
        )
        .unwrap_err();
        assert!(
            e.message
                .starts_with("--set topology.pairs=-1: invalid value"),
            "{e}"
        );
        // A mistake in the file itself keeps the file's own line, overrides or not.
        let bad = BASE.replace("duration = \"10ms\"", "duration = 10");
        let e = ScenarioSpec::parse(&bad, "f.toml", &["sim.seed=2".into()]).unwrap_err();
        assert!(e.message.contains("line 3"), "{e}");
        assert!(!e.message.contains("--set"), "{e}");
    }

    /// An integer above i64::MAX is refused the same way with and without overrides: in
    /// the file at its line, in an override as that override (it once passed alone and
    /// failed with "integer number overflowed" as soon as any `--set` was given).
    #[test]
    fn integers_beyond_64_bit_signed_are_refused_alike() {
        let big = BASE.replace("[sim]", "[sim]\nseed = 10000000000000000000");
        for sets in [vec![], vec!["sim.duration=20ms".to_string()]] {
            let e = ScenarioSpec::parse(&big, "f.toml", &sets).unwrap_err();
            assert!(e.message.contains("line 3"), "{e}");
            assert!(e.message.contains("64-bit signed"), "{e}");
        }
        let e = ScenarioSpec::parse(BASE, "f.toml", &["sim.seed=1_0000000000000000000".into()])
            .unwrap_err();
        assert!(
            e.message.starts_with(
                "--set sim.seed=1_0000000000000000000: 1_0000000000000000000 is out of range"
            ),
            "{e}"
        );
        let max = format!("sim.seed={}", i64::MAX);
        assert!(ScenarioSpec::parse(BASE, "f.toml", &[max]).is_ok());
    }
}
