//! [`ScenarioSpec::build`]: resolves presets and checks every value and cross-reference of a
//! parsed scenario, naming the key path of any problem.

use std::collections::BTreeMap;
use std::path::PathBuf;

use dcsim_engine::{Dur, Time};
use dcsim_net::qdisc::{PortFeatures, QdiscSpec};
use dcsim_net::{Graph, HostId, TopologySpec};
use dcsim_transport::{FlowSpec, Needs, TransportSpec};

use super::{
    ConfigError, FlowKeyword, FlowSelection, Jitter, PortsSpec, Scenario, ScenarioSpec, SimSpec,
    SourceParams, TraceSpec,
};

impl ScenarioSpec {
    /// Resolves presets and defaults and checks every cross-reference. Errors name the key
    /// path.
    pub fn build(&self, source: &str) -> Result<Scenario, ConfigError> {
        let err = |message: String| ConfigError {
            source: source.to_string(),
            message: super::locate::at_key_path(&self.origin, message),
        };
        let mut spec = self.clone();
        let graph = resolve_network(&mut spec).map_err(err)?;
        let transports = resolve_transports(&mut spec).map_err(err)?;
        let port_notes = resolve_ports(&mut spec, &transports.specs).map_err(err)?;
        for t in &transports.specs {
            check_needs(t, &spec).map_err(err)?;
        }
        let flows = explicit_flows(&spec, graph.hosts.len() as u32, &transports).map_err(err)?;
        let generators = spec
            .generators
            .iter()
            .enumerate()
            .map(|(i, g)| {
                let at = format!("generators[{i}]");
                Ok((g.pattern.clone(), transports.pick(&g.transport, &at)?))
            })
            .collect::<Result<Vec<_>, String>>()
            .map_err(err)?;
        check_sim_times(&spec.sim, &flows).map_err(err)?;
        check_output(&spec, &graph, flows.len()).map_err(err)?;
        let services = check_services(&spec, &transports, graph.hosts.len() as u32).map_err(err)?;
        let samples_flows = spec.output.timeseries.as_ref().is_some_and(|t| {
            !matches!(t.flows, FlowSelection::Keyword(FlowKeyword::None))
                && !matches!(&t.flows, FlowSelection::List(l) if l.is_empty())
        });
        let keeps_finished_flows = services
            || spec.output.trace.is_some()
            || spec.output.events.is_some()
            || samples_flows;
        if let Some(n) = &spec.name {
            check_name(n).map_err(err)?;
        }
        let source_params =
            source_params(&graph, &spec.topology, spec.sim.seed, spec.base_dir.clone());
        let name = spec.name.clone().unwrap_or_else(|| "scenario".into());
        let scenario = Scenario {
            spec,
            name,
            source: source.to_string(),
            graph,
            flows,
            generators,
            transports: transports.specs,
            port_notes,
            source_params,
            keeps_finished_flows,
        };
        // A flow costs at most 700 B of memory while it is in the flow table
        // (docs/reliability.md; validation/soak.py holds runs to it): from when it is built
        // (for listed flows and patterns that build theirs at once, before the run) until
        // it finishes, or until the end if the run keeps finished flows.
        let fits = |flows: f64| match memory_limit() {
            Some(limit) if flows * FLOW_BYTES > limit as f64 => Err(err(format!(
                "generators: about {flows:.3e} flows kept in memory, which need about {:.1} GB \
                 (700 B each){}, more than the {:.1} GB available; lower the load or set \
                 max_flows / until",
                flows * FLOW_BYTES / 1e9,
                if keeps_finished_flows {
                    " until the results are written (a service, packet trace, event log or \
                     flow time series keeps finished flows)"
                } else {
                    ""
                },
                limit as f64 / 1e9
            ))),
            _ => Ok(()),
        };
        // Patterns that build their flows at once are counted before any is built.
        let hosts = scenario.graph.hosts.len() as u32;
        fits(
            scenario
                .generators
                .iter()
                .fold(scenario.flows.len() as f64, |n, (g, _)| {
                    n + g.planned_flows(hosts).unwrap_or(0) as f64
                }),
        )?;
        // Build every source once: it checks the pattern against the network (hosts in
        // range, files readable, load definitions complete) before anything runs.
        let sources = scenario.sources()?;
        let expected_flows = scenario.expected_flows(&sources);
        for (i, (s, _)) in sources.iter().enumerate() {
            if scenario.spec.sim.duration.is_none()
                && s.peek()
                    .is_some_and(|f| f.size_bytes.is_none() && f.stop.is_none())
            {
                return Err(err(format!(
                    "sim.duration: required, because generators[{i}] makes long-lived flows \
                     (size \"inf\" without a stop time)"
                )));
            }
        }
        // Flows that leave memory when they finish are held at once only while they run: a
        // generator with a load below the capacity it is relative to keeps a steady number
        // running; any other (an overload, a shuffle or incast that starts its flows
        // together) may hold all of them.
        let held = if keeps_finished_flows {
            expected_flows
        } else {
            sources
                .iter()
                .filter(|(s, _)| s.info().load.is_none_or(|l| l.load >= 1.0))
                .filter_map(|(s, _)| scenario.flows_of(s))
                .fold(scenario.flows.len() as f64, |n, m| n + m)
        };
        fits(held)?;
        let explicit = scenario.flows.len() as f64;
        check_sample_rows(
            &scenario.spec,
            &scenario.graph,
            explicit + (expected_flows - explicit) / 2.0,
        )
        .map_err(err)?;
        Ok(scenario)
    }
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

/// The scenario's name names its results folder (`results/<name>`): one plain folder name.
fn check_name(n: &str) -> Result<(), String> {
    let bad = n.is_empty()
        || n == "."
        || n == ".."
        || n.starts_with('.')
        || n.len() > 200
        || n.chars().any(|c| c == '/' || c == '\\' || c.is_control());
    if bad {
        return Err(format!(
            "name: {n:?} cannot be a results folder name (no path separators, no leading dot, \
             at most 200 characters)"
        ));
    }
    Ok(())
}

/// Checks what the control-plane services need of the scenario (`[controller]`, the
/// transports that bring in a service).
/// Checks the services the scenario wants; returns whether it wants any.
fn check_services(
    spec: &ScenarioSpec,
    transports: &Transports,
    hosts: u32,
) -> Result<bool, String> {
    let names: Vec<&str> = transports.index_of.keys().map(String::as_str).collect();
    let index = |name: &str| transports.index_of.get(name).copied();
    let cx = dcsim_control::CheckCx {
        transports: &transports.specs,
        transport_index: &index,
        transport_names: &names,
        controller: spec.controller.as_ref(),
        topology: &spec.topology,
        hosts,
        duration: spec.sim.duration,
    };
    dcsim_control::Services::check(&cx)?;
    Ok(dcsim_control::Services::any_wanted(&cx))
}

/// The scenario's transports in index order (the default first, then the named ones in
/// name order), and the index of each name.
struct Transports {
    specs: Vec<TransportSpec>,
    index_of: BTreeMap<String, u32>,
}

impl Transports {
    /// The index of the transport `name` (the default one when `None`) that the entry at key
    /// path `at` asks for.
    fn pick(&self, name: &Option<String>, at: &str) -> Result<u32, String> {
        match name {
            None => Ok(0),
            Some(n) => self.index_of.get(n).copied().ok_or_else(|| {
                let known: Vec<&str> = self.index_of.keys().map(String::as_str).collect();
                format!(
                    "{at}.transport: no transport named {n:?} in [transports] (defined: {known:?})"
                )
            }),
        }
    }
}

/// Resolves the topology preset into `spec`, builds the graph, and checks its link rates
/// and the queue disciplines.
fn resolve_network(spec: &mut ScenarioSpec) -> Result<Graph, String> {
    spec.topology = spec
        .topology
        .resolve()
        .map_err(|e| format!("topology.{e}"))?;
    check_network_size(&spec.topology)?;
    let graph = spec.topology.build().map_err(|e| format!("topology.{e}"))?;
    if let Some(l) = graph.links.iter().find(|l| l.rate.bps() == 0) {
        return Err(format!(
            "topology: the link {} -- {} has rate 0; rates must be greater than zero",
            graph.nodes[l.a].name, graph.nodes[l.b].name
        ));
    }
    // Time is in picoseconds in a u64 (213 days): a delay beyond a second is a unit slip,
    // and far beyond it would overflow the clock.
    if let Some(l) = graph
        .links
        .iter()
        .find(|l| l.delay_ab.max(l.delay_ba) > MAX_LINK_DELAY)
    {
        return Err(format!(
            "topology: the link {} -- {} has a delay of {}; link delays must be at most {}",
            graph.nodes[l.a].name,
            graph.nodes[l.b].name,
            l.delay_ab.max(l.delay_ba),
            MAX_LINK_DELAY
        ));
    }
    Ok(graph)
}

/// Refuses a topology whose network would not fit in memory, before building it. The
/// estimate: 16 MB for the process, 1,152 B per port (two per link: the port, its queue,
/// its statistics), 64 B per host, and 8 B per (switch, edge switch) slot of the forwarding
/// table, whose next-hop lists are shared (measured peaks of a run of k-ary fat-trees,
/// k = 32, 48, 64 and 100: 67, 218, 527 and 2,166 MB against estimates of 78, 235, 557 and
/// 2,260). The limit is [`memory_limit`].
fn check_network_size(topo: &TopologySpec) -> Result<(), String> {
    let (hosts, switches, links, edges) = topo.size().map_err(|e| format!("topology.{e}"))?;
    let fib = switches
        .saturating_mul(edges)
        .saturating_mul(dcsim_net::FIB_SLOT_BYTES);
    let ports = links.saturating_mul(2).saturating_mul(1152);
    let need = fib
        .saturating_add(ports)
        .saturating_add(hosts.saturating_mul(64))
        .saturating_add(16 << 20);
    let Some(limit) = memory_limit() else {
        return Ok(());
    };
    if need > limit {
        let gb = |b: u64| b as f64 / 1e9;
        return Err(format!(
            "topology: {hosts} hosts, {switches} switches and {links} links need about \
             {:.1} GB to build (forwarding tables {:.1} GB: {switches} switches x {edges} edge \
             switches; ports {:.1} GB), more than the {:.1} GB available; make it smaller \
             (or set DCSIM_MAX_MEMORY_MB)",
            gb(need),
            gb(fib),
            gb(ports),
            gb(limit)
        ));
    }
    Ok(())
}

/// Bytes a run may use: `DCSIM_MAX_MEMORY_MB`, else four fifths of the least of the
/// memory available (Linux's MemAvailable), the process's address-space limit (`ulimit
/// -v`) and its cgroup's memory limit (v2 `memory.max` less `memory.current`), else
/// unknown.
pub(crate) fn memory_limit() -> Option<u64> {
    if let Some(mb) = std::env::var("DCSIM_MAX_MEMORY_MB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        return Some(mb.saturating_mul(1_000_000));
    }
    let read = |path: &str| std::fs::read_to_string(path).ok();
    let available = read("/proc/meminfo").and_then(|info| {
        let kb: u64 = info
            .lines()
            .find(|l| l.starts_with("MemAvailable:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        Some(kb.saturating_mul(1024))
    });
    // "Max address space  <soft> <hard> bytes": the soft limit, unless "unlimited".
    let address_space = read("/proc/self/limits").and_then(|l| {
        l.lines()
            .find(|l| l.starts_with("Max address space"))?
            .split_whitespace()
            .nth(3)?
            .parse::<u64>()
            .ok()
    });
    let cgroup = read("/sys/fs/cgroup/memory.max")
        .and_then(|m| m.trim().parse::<u64>().ok())
        .map(|max| {
            let used = read("/sys/fs/cgroup/memory.current")
                .and_then(|c| c.trim().parse::<u64>().ok())
                .unwrap_or(0);
            max.saturating_sub(used)
        });
    [available, address_space, cgroup]
        .into_iter()
        .flatten()
        .min()
        .map(|b| b / 5 * 4)
}

/// The longest link delay a scenario may give (one second).
const MAX_LINK_DELAY: Dur = Dur::from_secs(1);

/// Checks the default and the named transports, resolves them into `spec`, numbers them,
/// and checks what each needs of the network.
fn resolve_transports(spec: &mut ScenarioSpec) -> Result<Transports, String> {
    spec.transport
        .validate()
        .map_err(|e| format!("transport.{e}"))?;
    spec.transport = spec.transport.resolved();
    for t in spec.transports.values_mut() {
        *t = t.resolved();
    }
    let mut specs = vec![spec.transport.clone()];
    let mut index_of = BTreeMap::new();
    for (name, t) in &spec.transports {
        t.validate().map_err(|e| format!("transports.{name}.{e}"))?;
        index_of.insert(name.clone(), specs.len() as u32);
        specs.push(t.clone());
    }
    Ok(Transports { specs, index_of })
}

/// Sets the switch and NIC disciplines of `spec` to what runs: a named one as written, an
/// unnamed one as the transports want it; where a named one lacks a feature a transport
/// needs (ExpressPass's credit shaping, say, on an ECN queue that DCTCP shares in a sweep),
/// the discipline that provides it wraps the named one. Returns one line for each choice
/// made, for `dcsim check`.
fn resolve_ports(
    spec: &mut ScenarioSpec,
    transports: &[TransportSpec],
) -> Result<Vec<String>, String> {
    let mut notes = Vec::new();
    if let Some(PortsSpec {
        jitter: Jitter::Quantiles(points),
        ..
    }) = &spec.ports
    {
        dcsim_net::Lateness::check(points).map_err(|e| format!("ports.jitter: {e}"))?;
    }
    let needs = |f: fn(&Needs) -> Option<(PortFeatures, &'static str)>| {
        transports
            .iter()
            .filter_map(|t| f(&t.needs()).map(|(w, why)| (t.label(), w, why)))
            .collect::<Vec<_>>()
    };
    let switch_needs = needs(|n| n.switch_ports);
    let queue = match spec.queue.take() {
        Some(q) => {
            q.validate().map_err(|e| format!("queue.{e}"))?;
            q
        }
        // Transports that each need a discipline of their own get it around the plain
        // buffer (their own signals replace the ECN threshold), except Pulser's
        // notification, which DCTCP's marking goes with; if any transport needs nothing
        // (DCTCP beside ExpressPass, say), the default ECN queue stays under the wrappers.
        None if transports.iter().all(|t| {
            t.needs()
                .switch_ports
                .is_some_and(|(w, _)| !(w - PortFeatures::INCAST_NOTIFICATION).is_empty())
        }) =>
        {
            super::spec::default_data_buffer()
        }
        None => super::spec::default_queue(),
    };
    spec.queue = Some(wrap_for(
        queue,
        ("queue", "needs"),
        &switch_needs,
        &mut notes,
    ));
    let nic = match spec.nic.take() {
        Some(q) => {
            q.validate().map_err(|e| format!("nic.{e}"))?;
            q
        }
        None => wrap_for(
            super::spec::default_nic(),
            ("nic", "is run with"),
            &needs(|n| n.nic_preference),
            &mut notes,
        ),
    };
    spec.nic = Some(wrap_for(
        nic,
        ("nic", "needs"),
        &needs(|n| n.nics),
        &mut notes,
    ));
    Ok(notes)
}

/// `q` wrapped in the discipline providing each feature `wanted` names that `q` lacks, the
/// credit shaper outermost (credits must pass every other discipline); one note per
/// wrapper, "KEY: ... because TRANSPORT VERB FEATURE (why)".
fn wrap_for(
    mut q: QdiscSpec,
    (key, verb): (&str, &str),
    wanted: &[(&'static str, PortFeatures, &'static str)],
    notes: &mut Vec<String>,
) -> QdiscSpec {
    for &(feature, what, kind) in PortFeatures::DESCRIPTIONS.iter().rev() {
        let Some(&(name, _, why)) = wanted.iter().find(|(_, w, _)| w.contains(feature)) else {
            continue;
        };
        if q.features().contains(feature) {
            continue;
        }
        let mut inner = format!("\"{}\"", q.name());
        // HULL's marks replace the switch's ECN threshold (its real queue only holds
        // packets): an ECN queue keeps its buffer and loses its threshold.
        if feature == PortFeatures::PHANTOM_MARKING
            && let QdiscSpec::Ecn(c) = &q
        {
            inner = format!(
                "\"droptail\" (the \"ecn\" queue's buffer, {}, without its threshold)",
                c.buffer
            );
            q = QdiscSpec::DropTail(dcsim_net::qdisc::DropTailConfig { buffer: c.buffer });
        }
        if let Some(w) = QdiscSpec::providing(feature, q.clone()) {
            notes.push(format!(
                "{key}: \"{kind}\" around {inner}, because {name} {verb} {what} ({why})"
            ));
            q = w;
        }
    }
    q
}

/// Checks what transport `t` needs of the network against the scenario's routing and
/// queue disciplines; the error names the key to change.
fn check_needs(t: &TransportSpec, spec: &ScenarioSpec) -> Result<(), String> {
    let needs = t.needs();
    let name = t.label();
    if let Some(why) = needs.symmetric_routes
        && spec.routing.mode != dcsim_net::RoutingMode::SymmetricEcmp
    {
        return Err(format!(
            "routing.mode: {name} needs \"symmetric-ecmp\" ({why})"
        ));
    }
    if let Some(why) = needs.flow_routes
        && spec.routing.mode == dcsim_net::RoutingMode::Spray
    {
        return Err(format!(
            "routing.mode: {name} needs one route per flow, \"ecmp\" or \"symmetric-ecmp\", \
             not \"spray\" ({why})"
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
        let Some(q) = q else { continue };
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

/// The explicit flows of `spec`, in flow-number order, with their hosts (of `hosts` in the
/// topology), times and transports checked.
fn explicit_flows(
    spec: &ScenarioSpec,
    hosts: u32,
    transports: &Transports,
) -> Result<Vec<FlowSpec>, String> {
    let host = |h: u32, at: String| -> Result<HostId, String> {
        if h < hosts {
            Ok(HostId(h))
        } else {
            Err(format!(
                "{at}: host {h} is out of range (the topology has {hosts} hosts, 0..{})",
                hosts - 1
            ))
        }
    };
    let mut flows = Vec::new();
    for (i, f) in spec.flows.iter().enumerate() {
        let at = format!("flows[{i}]");
        let (src, dst) = (
            host(f.src, format!("{at}.src"))?,
            host(f.dst, format!("{at}.dst"))?,
        );
        if src == dst {
            return Err(format!(
                "{at}.dst: a flow cannot go from host {} to itself",
                f.src
            ));
        }
        if let Some(stop) = f.stop
            && stop < f.start
        {
            return Err(format!("{at}.stop: {stop} is before the start {}", f.start));
        }
        flows.push(FlowSpec {
            src,
            dst,
            size_bytes: f.size.0,
            start: Time::from_dur(f.start),
            stop: f.stop.map(Time::from_dur),
            transport: transports.pick(&f.transport, &at)?,
        });
    }
    Ok(flows)
}

/// Samples go to disk as they are taken: refuses a series no disk is meant to hold. With
/// `flows = "all"` every flow is sampled from its creation to the end of the run, so a
/// flow that a generator makes part-way counts for the part of the run after it (half, on
/// average over flows arriving at a steady rate); `flows` is the explicit flows plus half
/// the generators' expected flows.
fn check_sample_rows(spec: &ScenarioSpec, graph: &Graph, flows: f64) -> Result<(), String> {
    let (Some(ts), Some(d)) = (&spec.output.timeseries, spec.sim.duration) else {
        return Ok(());
    };
    if ts.every == Dur::ZERO {
        return Ok(());
    }
    let per_sample = match &ts.flows {
        FlowSelection::List(l) => l.len() as f64,
        FlowSelection::Keyword(FlowKeyword::All) => flows,
        FlowSelection::Keyword(FlowKeyword::None) => 0.0,
    } + ts.ports.len() as f64
        * if ts.ports.iter().any(|p| p == "switches") {
            graph.links.len() as f64 * 2.0
        } else {
            1.0
        };
    let rows = (d.as_ps() / ts.every.as_ps()) as f64 * per_sample;
    if rows > MAX_SAMPLE_ROWS as f64 {
        return Err(format!(
            "output.timeseries: about {rows:.3e} samples ({:.0} GB of timeseries.csv) for {d} \
             every {}; sample less often or fewer flows and ports (at most \
             {MAX_SAMPLE_ROWS})",
            rows * 40.0 / 1e9,
            ts.every
        ));
    }
    Ok(())
}

/// Checks the run's times: a duration wherever one of the explicit `flows` would never
/// finish, and a warmup and cooldown that leave time to measure.
fn check_sim_times(sim: &SimSpec, flows: &[FlowSpec]) -> Result<(), String> {
    if sim.duration.is_none()
        && let Some(i) = flows
            .iter()
            .position(|f| f.size_bytes.is_none() && f.stop.is_none())
    {
        return Err(format!(
            "sim.duration: required, because flow {i} is long-lived (size \"inf\" without a \
             stop time) and would never finish"
        ));
    }
    if let Some(d) = sim.duration {
        if d == Dur::ZERO {
            return Err("sim.duration: must be greater than zero".into());
        }
        if sim.warmup >= d {
            return Err(format!(
                "sim.warmup: {} is not before the end of the run ({d})",
                sim.warmup
            ));
        }
        if sim.cooldown.as_ps() > 0
            && sim.warmup.as_ps().saturating_add(sim.cooldown.as_ps()) >= d.as_ps()
        {
            return Err(format!(
                "sim.cooldown: warmup {} plus cooldown {} leave no time to measure in a run of \
                 {d}",
                sim.warmup, sim.cooldown
            ));
        }
    }
    Ok(())
}

/// Memory per flow kept to the end of a run, bytes: generous (the flow table holds about
/// 180 B a flow; the rows were built at the end at 700 B before they were streamed).
pub(crate) const FLOW_BYTES: f64 = 700.0;

/// Checks `[output]` against the network and the number of explicit flows.
/// The shortest sampling interval.
const MIN_SAMPLE_EVERY: Dur = Dur::from_ns(100);
/// The most time-series samples a run may write: about 40 GB of timeseries.csv at 40 bytes
/// a row (samples go to disk as they are taken; memory does not grow with them).
const MAX_SAMPLE_ROWS: u64 = 1_000_000_000;

fn check_output(spec: &ScenarioSpec, graph: &Graph, flows: usize) -> Result<(), String> {
    if let Some(t) = &spec.output.trace {
        check_trace(t, spec, graph, flows)?;
    }
    if let Some(e) = &spec.output.events {
        match &e.flows {
            FlowSelection::Keyword(FlowKeyword::None) => {
                return Err(
                    "output.events.flows: \"none\" logs nothing; name flows or \"all\"".into(),
                );
            }
            FlowSelection::List(l) if spec.generators.is_empty() => {
                if let Some(&bad) = l.iter().find(|&&f| f as usize >= flows) {
                    return Err(format!(
                        "output.events.flows: flow {bad} does not exist ({flows} flows)"
                    ));
                }
            }
            _ => {}
        }
    }
    let Some(ts) = &spec.output.timeseries else {
        return Ok(());
    };
    if ts.every < MIN_SAMPLE_EVERY {
        return Err(format!(
            "output.timeseries.every: {} is shorter than {MIN_SAMPLE_EVERY} (one minimum \
             frame at 10 Gb/s takes 67 ns)",
            ts.every
        ));
    }
    check_sample_rows(spec, graph, flows as f64)?;
    if let FlowSelection::List(l) = &ts.flows
        && spec.generators.is_empty()
        && let Some(&bad) = l.iter().find(|&&f| f as usize >= flows)
    {
        return Err(format!(
            "output.timeseries.flows: flow {bad} does not exist ({flows} flows)"
        ));
    }
    for p in &ts.ports {
        if p != "switches" && port_by_label(graph, p).is_none() {
            return Err(format!(
                "output.timeseries.ports: no port {p:?} (labels are \"node->peer\", e.g. \"{}\")",
                example_label(graph)
            ));
        }
    }
    Ok(())
}

/// The smallest size a packet trace may be given: a pcap header and a few packets.
const MIN_TRACE_BYTES: u64 = 1000;

/// Checks `[output.trace]`: hosts and ports exist, flows exist (unless generated), the time
/// window is not empty.
fn check_trace(
    t: &TraceSpec,
    spec: &ScenarioSpec,
    graph: &Graph,
    flows: usize,
) -> Result<(), String> {
    if t.hosts.is_empty() && t.ports.is_empty() {
        return Err("output.trace: names no hosts and no ports to record".into());
    }
    let n = graph.hosts.len();
    if let Some(&bad) = t.hosts.iter().find(|&&h| h as usize >= n) {
        return Err(format!(
            "output.trace.hosts: host {bad} does not exist (hosts are 0..{n})"
        ));
    }
    for p in &t.ports {
        if port_by_label(graph, p).is_none() {
            return Err(format!(
                "output.trace.ports: no port {p:?} (labels are \"node->peer\", e.g. \"{}\")",
                example_label(graph)
            ));
        }
    }
    if let Some(l) = &t.flows
        && spec.generators.is_empty()
        && let Some(&bad) = l.iter().find(|&&f| f as usize >= flows)
    {
        return Err(format!(
            "output.trace.flows: flow {bad} does not exist ({flows} flows)"
        ));
    }
    if let (Some(s), Some(e)) = (t.start, t.end)
        && e <= s
    {
        return Err(format!(
            "output.trace.end: {e} is not after output.trace.start ({s})"
        ));
    }
    if t.max_bytes.0 < MIN_TRACE_BYTES {
        return Err(format!(
            "output.trace.max_bytes: {} is less than {MIN_TRACE_BYTES}B (a file header and \
             a few packets)",
            t.max_bytes
        ));
    }
    Ok(())
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

/// An example port label of `g` (the last link's `a->b`), for error messages.
fn example_label(g: &Graph) -> String {
    g.links
        .last()
        .map(|l| format!("{}->{}", g.nodes[l.a].name, g.nodes[l.b].name))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use crate::scenario::tests::{BASE, build};

    /// A transport brings the ports it needs: unnamed, the discipline that provides them
    /// around the default buffer; named without them, that discipline around the named one;
    /// named with them, as written. Routing it needs is still checked by key.
    #[test]
    fn transports_bring_the_ports_they_need() {
        use dcsim_net::qdisc::{Amount, QdiscSpec};
        let with = |transport: &str| BASE.replace("[[flows]]", &format!("{transport}\n[[flows]]"));
        let drop_tail =
            |b: Amount| QdiscSpec::DropTail(dcsim_net::qdisc::DropTailConfig { buffer: b });
        let inner = |q: &QdiscSpec| -> (String, QdiscSpec) {
            let text = toml::to_string(q).unwrap();
            let inner = match q {
                QdiscSpec::Credit(c) => *c.inner.clone(),
                QdiscSpec::Rcp(c) => *c.inner.clone(),
                QdiscSpec::Phantom(c) => *c.inner.clone(),
                QdiscSpec::Ein(c) => *c.inner.clone(),
                q => q.clone(),
            };
            (text, inner)
        };
        let ports = |text: &str, sets: &[&str]| {
            let s = build(text, sets).unwrap();
            let (q, n) = s.ports();
            (q.clone(), n.clone(), s.port_notes.clone())
        };
        let buffer = Amount::Bytes(250 * 1538);
        // DCTCP: the default ECN queue, nothing to say.
        let (q, n, notes) = ports(&with("[transport]\nkind = \"tcp\"\ncc = \"dctcp\""), &[]);
        assert_eq!((q, n), (crate::default_queue(), crate::default_nic()));
        assert!(notes.is_empty(), "{notes:?}");
        // ExpressPass: credit shaping on switch ports and NICs, around the same buffers.
        let xp = with("[transport]\nkind = \"expresspass\"");
        let (q, n, notes) = ports(&xp, &[]);
        assert_eq!(q.name(), "credit-shaper");
        assert_eq!(inner(&q).1, drop_tail(buffer));
        assert_eq!(n.name(), "credit-shaper");
        assert_eq!(inner(&n).1, crate::default_nic());
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[0].starts_with("queue: \"credit-shaper\" around \"droptail\", because expresspass needs credit shaping"), "{notes:?}");
        // A named queue without credit shaping is wrapped, a named NIC kept as written (the
        // authors' dumbbell shapes no NIC), a named credit shaper kept.
        let ecn = "queue={kind=\"ecn\", buffer=\"100pkts\", mark_threshold=\"20pkts\"}";
        let (q, n, _) = ports(&xp, &[ecn, "nic={kind=\"droptail\", buffer=\"100pkts\"}"]);
        assert_eq!(q.name(), "credit-shaper");
        assert_eq!(inner(&q).1.name(), "ecn");
        assert_eq!(n.name(), "droptail");
        let (q, _, _) = ports(
            &xp,
            &["queue={kind=\"credit-shaper\", credit_buffer=\"4pkts\"}"],
        );
        assert!(inner(&q).0.contains("4pkts"), "{q:?}");
        let e = build(&xp, &["routing.mode=ecmp"]).unwrap_err();
        assert!(
            e.message
                .starts_with("routing.mode: expresspass needs \"symmetric-ecmp\""),
            "{e}"
        );
        // RCP's router and HULL's phantom queue around the plain buffer; on a named ECN
        // queue HULL keeps its buffer without the threshold (the phantom's marks replace it).
        let rcp = with("[transport]\nkind = \"tcp\"\ncc = \"rcp\"");
        let (q, _, _) = ports(&rcp, &[]);
        assert_eq!((q.name(), inner(&q).1), ("rcp", drop_tail(buffer)));
        let hull = with("[transport]\nkind = \"tcp\"\ncc = \"hull\"");
        let (q, _, _) = ports(&hull, &[]);
        assert_eq!((q.name(), inner(&q).1), ("phantom", drop_tail(buffer)));
        let (q, _, notes) = ports(&hull, &[ecn]);
        assert_eq!(
            (q.name(), inner(&q).1),
            ("phantom", drop_tail(Amount::Packets(100)))
        );
        assert!(notes[0].contains("without its threshold"), "{notes:?}");
        // Pulser's notification goes with DCTCP's marking.
        let pulser = with("[transport]\nkind = \"tcp\"\ncc = \"pulser\"");
        let (q, _, _) = ports(&pulser, &[]);
        assert_eq!((q.name(), inner(&q).1), ("ein", crate::default_queue()));
        // Two transports: DCTCP's queue, credit-shaped for the ExpressPass flows.
        let mixed = with(
            "[transport]\nkind = \"tcp\"\ncc = \"dctcp\"\n[transports.xp]\nkind = \"expresspass\"",
        );
        let (q, _, _) = ports(&mixed, &[]);
        assert_eq!(
            (q.name(), inner(&q).1),
            ("credit-shaper", crate::default_queue())
        );
        // The oracle paces each flow over its one route; sprayed packets have none (this
        // once panicked at the first flow's start, found by the structured fuzzer).
        let ideal = with("[transport]\nkind = \"ideal\"");
        let e = build(&ideal, &["routing.mode=spray"]).unwrap_err();
        assert!(
            e.message
                .starts_with("routing.mode: ideal needs one route per flow"),
            "{e}"
        );
        assert!(build(&ideal, &["routing.mode=ecmp"]).is_ok());
        // What `dcsim show` prints names the ports, and runs the same.
        let shown = build(&xp, &[]).unwrap().to_toml();
        let again = build(&shown, &[]).unwrap();
        assert_eq!(again.ports(), build(&xp, &[]).unwrap().ports());
        assert!(again.port_notes.is_empty(), "{:?}", again.port_notes);
    }

    #[test]
    fn build_errors_name_key_path() {
        // Shown at the value (or, for a missing key, its table) in the text.
        let text = BASE.replace("dst = 2", "dst = 9");
        let e = build(&text, &[]).unwrap_err();
        let line = text.lines().position(|l| l == "dst = 9").unwrap() + 1;
        assert!(
            e.message
                .starts_with(&format!("at line {line}, column 7\n"))
                && e.message.contains("\nflows[0].dst: host 9 is out of range"),
            "{e}"
        );
        let e = build(&BASE.replace("duration = \"10ms\"", ""), &[]).unwrap_err();
        assert!(e.message.contains("[sim]\n"), "{e}");
        assert!(e.message.contains("\nsim.duration: required"), "{e}");
        // Set by an override: the path alone.
        let e = build(BASE, &["flows[0].dst=9"]).unwrap_err();
        assert!(
            e.message
                .starts_with("flows[0].dst: host 9 is out of range"),
            "{e}"
        );
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
