//! The scenario schema: the serde types a scenario file is read into, and their defaults.

use std::collections::BTreeMap;
use std::path::PathBuf;

use dcsim_engine::{ByteSize, Dur};
use dcsim_net::qdisc::{Amount, DropTailConfig, EcnConfig, QdiscSpec};
use dcsim_net::{RoutingSpec, TopologySpec};
use dcsim_transport::TransportSpec;

use dcsim_control::ControllerSpec;
use dcsim_workload::{FlowSize, GeneratorSpec};
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
    /// What every port does besides its discipline: timing noise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<PortsSpec>,
    /// Queue discipline of every switch port. Unnamed, the transports choose: the
    /// [`default_queue`], or the discipline a transport needs (ExpressPass's credit shaper,
    /// HULL's phantom queue, RCP's router, Pulser's EIN) around the same buffer. After
    /// [`ScenarioSpec::build`] it is always set, to what runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<QdiscSpec>,
    /// Queue discipline of every host NIC. Unnamed: the [`default_nic`], with ExpressPass's
    /// credit shaping around it when ExpressPass runs. Set after a build, as `queue` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic: Option<QdiscSpec>,
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
    /// A central controller running inside the simulation (`kind = "sdn-ecn"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<ControllerSpec>,
    /// Directory of the scenario file (relative CDF and trace paths start there).
    #[serde(skip)]
    pub base_dir: Option<PathBuf>,
    /// The text the spec was read from, so that the check can show where a value it
    /// refuses is written.
    #[serde(skip)]
    pub origin: Origin,
}

/// The text a [`ScenarioSpec`] was read from and the key paths that `--set` overrides
/// changed (their values are not in the text). Specs compare equal whatever their origin.
#[derive(Clone, Default)]
pub struct Origin(pub(crate) Option<std::sync::Arc<(String, Vec<String>)>>);

impl PartialEq for Origin {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Origin(text)"
        } else {
            "Origin(none)"
        })
    }
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

/// The data buffer of [`default_queue`] without its marking: what the discipline a
/// transport needs wraps when the scenario names no queue, so that every scheme of a
/// comparison gets the same buffer (as the ExpressPass authors' fat-tree script gives
/// DCTCP, HULL, DX and ExpressPass alike).
pub fn default_data_buffer() -> QdiscSpec {
    QdiscSpec::DropTail(DropTailConfig {
        buffer: Amount::Bytes(250 * 1538),
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

/// What every port does besides its queue discipline (`[ports]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct PortsSpec {
    /// Timing noise (default 0): each port hands each packet on late, keeping it in its
    /// queue until then, by a time drawn from its own random stream, without slowing its
    /// link, as an emulator's software shaper does ([`dcsim_net::PortNoise`]). Ports with
    /// noise run their queues event by event.
    #[serde(default)]
    pub jitter: Jitter,
    /// When a packet reaches the far end (default `end`): after its last bit, as on a
    /// wire, or with `start` a propagation delay after its transmission started, the link
    /// still busy for its transmission time, as an emulator's token-bucket shaper (htb on
    /// a virtual link) releases a packet whole and charges it after. Such ports run their
    /// queues event by event.
    #[serde(default, skip_serializing_if = "Release::is_end")]
    pub release: Release,
}

/// How late a port hands each packet on (`ports.jitter`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(
    untagged,
    expecting = "expected a duration (\"20us\": uniform lateness up to it) or a list of [probability, \
                 duration] points of a measured lateness's distribution, probabilities from 0 \
                 to 1 (e.g. [[0, \"0us\"], [0.99, \"20us\"], [1, \"80us\"]])"
)]
pub enum Jitter {
    /// Uniform in [0, the duration].
    Uniform(Dur),
    /// Points (probability, lateness) of the inverse cumulative distribution, linear
    /// between them.
    Quantiles(Vec<(f64, Dur)>),
}

impl Default for Jitter {
    fn default() -> Self {
        Self::Uniform(Dur::ZERO)
    }
}

impl Jitter {
    /// The network's form of it.
    pub fn lateness(&self) -> dcsim_net::Lateness {
        match self {
            Self::Uniform(d) => dcsim_net::Lateness::Uniform(*d),
            Self::Quantiles(q) => dcsim_net::Lateness::Quantiles(q.as_slice().into()),
        }
    }
}

/// When a port's packet reaches the far end (`ports.release`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Release {
    /// After its last bit: a wire.
    #[default]
    End,
    /// A propagation delay after its first bit: a software shaper.
    Start,
}

impl Release {
    fn is_end(&self) -> bool {
        *self == Self::End
    }
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
    /// Sample every switch port's queue length at this interval and report its percentiles
    /// per tier in summary.json (`queue_occupancy`; samples at a fixed interval estimate the
    /// time-weighted distribution; nothing on the packet path). Default: off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_occupancy: Option<Dur>,
    /// Packet traces: pcap files of chosen hosts and ports (docs/trace.md). Default: off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceSpec>,
    /// The per-flow event log, `events.csv` (docs/output.md). Default: off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<EventsSpec>,
}

/// The per-flow event log (`[output.events]`): every change of the chosen flows' transport
/// state and counters, CE marks on their packets, their start and completion.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsSpec {
    /// Flows to log: `"all"` or a list of flow numbers.
    pub flows: FlowSelection,
    /// The most rows written (default 10 million, about 300 MB); rows beyond are counted
    /// in summary.json, not written.
    #[serde(default = "EventsSpec::default_max_rows")]
    pub max_rows: u64,
}

impl EventsSpec {
    fn default_max_rows() -> u64 {
        10_000_000
    }
}

/// Packet traces (`[output.trace]`): one pcap file per host and per port named, readable
/// by Wireshark and tshark (docs/trace.md).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// Hosts (by number) whose packets to record, sent and received, as a capture on the
    /// host's interface would: `trace-h3.pcap`.
    #[serde(default)]
    pub hosts: Vec<u32>,
    /// Ports (`"node->peer"`, as in ports.csv) whose sent packets to record:
    /// `trace-tor0-to-agg1.pcap`.
    #[serde(default)]
    pub ports: Vec<String>,
    /// Only the packets of these flows (default: every flow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<Vec<u32>>,
    /// Only packets at or after this time (default: from the start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<Dur>,
    /// Only packets before this time (default: to the end).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<Dur>,
    /// The largest size of each file (default 100 MB, about 1.3 M packets): packets
    /// beyond it are counted in summary.json, not written.
    #[serde(default = "TraceSpec::default_max_bytes")]
    pub max_bytes: ByteSize,
}

impl TraceSpec {
    fn default_max_bytes() -> ByteSize {
        ByteSize(100_000_000)
    }
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
    /// Samples are taken at `offset + k·every` (k ≥ 1), each covering the `every` before
    /// it; goodput before `offset` is not reported. An offset equal to the delay from a
    /// port to the receivers makes the receivers' intervals those of the port's
    /// departures (default 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offset: Dur,
}

/// Whether a duration is zero (a default left out of written scenarios).
fn is_zero(d: &Dur) -> bool {
    *d == Dur::ZERO
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
