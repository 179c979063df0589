//! The world's samplers: time series of chosen flows and ports (`output.timeseries`), and
//! queue-length percentiles of every switch port by tier (`output.queue_occupancy`). Each
//! is one pending event that takes its samples and schedules the next.

use std::fmt::Write as _;

use dcsim_engine::{Dur, Time};
use dcsim_metrics::SampleSpill;
use dcsim_net::{FlowId, Graph, Network, PortId};
use hdrhistogram::Histogram;

use crate::scenario::{FlowKeyword, FlowSelection, TimeseriesSpec, port_by_label};
use crate::world::{Event, World, WorldSched};

pub(crate) struct Sampler {
    pub every: Dur,
    /// Every flow, including those generated later (`flows = "all"`).
    pub all_flows: bool,
    pub flows: Vec<FlowId>,
    pub cwnd: bool,
    pub ports: Vec<(PortId, String)>,
    pub last_bytes: Vec<u64>,
    /// The rows, on disk as they are taken.
    pub spill: SampleSpill,
    /// Scratch for a flow's number and its transport's samples.
    id: String,
    values: Vec<(&'static str, f64)>,
}

impl Sampler {
    /// The time series of `ts` over `net` (named as in `graph`), with `flows` flows known
    /// before the run.
    pub(crate) fn new(ts: &TimeseriesSpec, net: &Network, graph: &Graph, flows: usize) -> Self {
        let n = flows;
        let flow_ids: Vec<FlowId> = match &ts.flows {
            FlowSelection::Keyword(FlowKeyword::All) => (0..n).map(FlowId::new).collect(),
            FlowSelection::List(l) => l.iter().map(|&f| FlowId(f)).collect(),
            FlowSelection::Keyword(FlowKeyword::None) => Vec::new(),
        };
        let mut ports = Vec::new();
        for label in &ts.ports {
            if label == "switches" {
                for (i, p) in net.ports().iter().enumerate() {
                    if net.is_switch(p.node()) {
                        ports.push((PortId::new(i), port_label(net, PortId::new(i))));
                    }
                }
            } else if let Some(i) = port_by_label(graph, label) {
                ports.push((PortId::new(i), label.clone()));
            }
        }
        Self {
            every: ts.every,
            all_flows: matches!(ts.flows, FlowSelection::Keyword(FlowKeyword::All)),
            last_bytes: vec![0; flow_ids.len()],
            flows: flow_ids,
            cwnd: ts.cwnd,
            ports,
            spill: SampleSpill::new(None),
            id: String::new(),
            values: Vec::new(),
        }
    }
}

/// Queue-length samples of every switch port, by tier (`"leaf->spine"`: the port's node's
/// tier and its peer's), for `output.queue_occupancy`.
pub(crate) struct Occupancy {
    every: Dur,
    /// Every switch port and the index of its tier.
    ports: Vec<(PortId, usize)>,
    pub(crate) tiers: Vec<(String, Histogram<u64>)>,
}

impl Occupancy {
    pub(crate) fn new(net: &Network, every: Dur) -> Self {
        let mut tiers: Vec<(String, Histogram<u64>)> = Vec::new();
        let mut ports = Vec::new();
        for (i, p) in net.ports().iter().enumerate() {
            if !net.is_switch(p.node()) {
                continue;
            }
            let name = format!(
                "{}->{}",
                net.node_tier(p.node()),
                net.node_tier(p.peer_node())
            );
            let t = match tiers.iter().position(|t| t.0 == name) {
                Some(t) => t,
                None => {
                    let h = Histogram::new_with_max(1 << 40, 3).expect("valid histogram bounds");
                    tiers.push((name, h));
                    tiers.len() - 1
                }
            };
            ports.push((PortId::new(i), t));
        }
        Self {
            every,
            ports,
            tiers,
        }
    }
}

impl World {
    pub(crate) fn sample_queues<S: WorldSched>(&mut self, sched: &mut S, now: Time) {
        let Some(o) = self.occupancy.as_mut() else {
            return;
        };
        for &(p, t) in &o.ports {
            let q = self.net.backlog_bytes_at(p, now, &mut self.pool);
            o.tiers[t].1.saturating_record(q);
        }
        let next = now + o.every;
        // In a drained run, stop sampling once nothing else is left to happen.
        if !sched.is_idle() && self.end.is_none_or(|e| next <= e) {
            sched.at(next, Event::QueueSample);
        }
    }

    pub(crate) fn sample<S: WorldSched>(&mut self, sched: &mut S, now: Time) {
        let Some(s) = self.sampler.as_mut() else {
            return;
        };
        let t = now.as_ns();
        let secs = s.every.as_secs_f64();
        if s.all_flows {
            for f in s.flows.len()..self.flows.len() {
                s.flows.push(FlowId::new(f));
                s.last_bytes.push(0);
            }
        }
        for (k, &f) in s.flows.iter().enumerate() {
            // A listed generator flow that has not been created yet has nothing to sample.
            if f.index() >= self.flows.len() {
                continue;
            }
            let b = self.flows.delivered_bytes(f);
            s.id.clear();
            let _ = write!(s.id, "{}", f.0);
            let gbps = (b - s.last_bytes[k]) as f64 * 8.0 / secs / 1e9;
            s.spill.push(t, "throughput_gbps", &s.id, gbps);
            s.last_bytes[k] = b;
            if s.cwnd {
                self.flows.sample_into(f, &mut s.values);
                for &(kind, value) in &s.values {
                    s.spill.push(t, kind, &s.id, value);
                }
            }
        }
        for (p, label) in &s.ports {
            let q = self.net.backlog_bytes_at(*p, now, &mut self.pool);
            s.spill.push(t, "queue_bytes", label, q as f64);
        }
        let next = now + s.every;
        // In a drained run, stop sampling once nothing else is left to happen.
        if !sched.is_idle() && self.end.is_none_or(|e| next <= e) {
            sched.at(next, Event::Sample);
        }
    }
}

/// `node->peer` label of port `p`.
pub(crate) fn port_label(net: &Network, p: PortId) -> String {
    let port = net.port(p);
    format!(
        "{}->{}",
        net.node_name(port.node()),
        net.node_name(port.peer_node())
    )
}
