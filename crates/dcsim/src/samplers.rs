//! The world's samplers: time series of chosen flows and ports (`output.timeseries`), and
//! queue-length percentiles of every switch port by tier (`output.queue_occupancy`). Each
//! is one pending event that takes its samples and schedules the next.

use std::fmt::Write as _;

use dcsim_engine::{Dur, Time};
use dcsim_metrics::SampleSpill;
use dcsim_net::{FlowId, Graph, Network, PacketPool, PortId};
use dcsim_transport::Flows;
use hdrhistogram::Histogram;

use crate::scenario::{FlowKeyword, FlowSelection, TimeseriesSpec, port_by_label};

pub(crate) struct Sampler {
    pub every: Dur,
    /// Every flow, including those generated later (`flows = "all"`).
    pub all_flows: bool,
    pub flows: Vec<FlowId>,
    pub cwnd: bool,
    pub ports: Vec<(PortId, String)>,
    pub last_bytes: Vec<u64>,
    /// Whether the bytes delivered at the start of the first interval are known: not
    /// until the first event of a sampler with an offset, which only reads them.
    primed: bool,
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
            primed: ts.offset == Dur::ZERO,
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

impl Occupancy {
    /// Records every sampled port's backlog at `now` in its tier's histogram; returns the
    /// time of the next sample.
    pub(crate) fn record(&mut self, net: &mut Network, pool: &mut PacketPool, now: Time) -> Time {
        for &(p, t) in &self.ports {
            let q = net.backlog_bytes_at(p, now, pool);
            self.tiers[t].1.saturating_record(q);
        }
        now + self.every
    }
}

impl Sampler {
    /// Writes one sample of every chosen flow and port at `now`; returns the time of the
    /// next sample.
    pub(crate) fn record(
        &mut self,
        flows: &Flows,
        net: &mut Network,
        pool: &mut PacketPool,
        now: Time,
    ) -> Time {
        let t = now.as_ns();
        let secs = self.every.as_secs_f64();
        if self.all_flows {
            for f in self.flows.len()..flows.len() {
                self.flows.push(FlowId::new(f));
                self.last_bytes.push(0);
            }
        }
        if !self.primed {
            // The offset: the first interval starts here.
            self.primed = true;
            for (k, &f) in self.flows.iter().enumerate() {
                if f.index() < flows.len() {
                    self.last_bytes[k] = flows.delivered_bytes(f);
                }
            }
            return now + self.every;
        }
        for (k, &f) in self.flows.iter().enumerate() {
            // A listed generator flow that has not been created yet has nothing to sample.
            if f.index() >= flows.len() {
                continue;
            }
            let b = flows.delivered_bytes(f);
            self.id.clear();
            let _ = write!(self.id, "{}", f.0);
            let gbps = (b - self.last_bytes[k]) as f64 * 8.0 / secs / 1e9;
            self.spill.push(t, "throughput_gbps", &self.id, gbps);
            self.last_bytes[k] = b;
            if self.cwnd {
                flows.sample_into(f, &mut self.values);
                for &(kind, value) in &self.values {
                    self.spill.push(t, kind, &self.id, value);
                }
            }
        }
        for (p, label) in &self.ports {
            let q = net.backlog_bytes_at(*p, now, pool);
            self.spill.push(t, "queue_bytes", label, q as f64);
        }
        now + self.every
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
