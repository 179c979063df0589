//! The Ideal scheme's oracle (`transport = { kind = "ideal" }`, docs/protocols/ideal.md):
//! max-min fair rates over the egress ports of the running `ideal` flows' routes, updated
//! when one of them starts or completes, and handed to each flow's sender as a rate grant.

pub mod maxmin;

use dcsim_engine::Rate;
use dcsim_net::{FlowId, Network};
use dcsim_transport::{FlowInfo, Flows, Grant, TransportSpec};
use maxmin::{MaxMin, Slot};
use serde_json::Value;

use crate::{BuildCx, CheckCx, Service, ServiceCx, ServiceSched};

/// The oracle.
pub struct Oracle {
    mm: MaxMin,
    /// Per flow: its slot while it runs under the oracle.
    slots: Vec<Option<Slot>>,
    /// Per slot: its flow.
    flow_of: Vec<FlowId>,
    /// Scratch.
    changed: Vec<(Slot, f64)>,
    done: Vec<FlowId>,
    links: Vec<u32>,
}

/// The oracle has no events of its own: it acts at flows' starts and completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OracleEvent {}

impl Oracle {
    /// Hands every changed rate to its flow's sender.
    fn apply<S: ServiceSched>(&mut self, cx: &mut ServiceCx<'_, S>) {
        let (flows, mut fcx) = cx.flows();
        for &(s, r) in &self.changed {
            let f = self.flow_of[s.0 as usize];
            flows.grant(f, Grant::Rate(Rate::from_bps(r as u64)), &mut fcx);
        }
    }
}

impl Service for Oracle {
    type Event = OracleEvent;
    const SUMMARY_KEY: &'static str = "oracle";
    const CONFIGURED_BY: &'static str = "transport \"ideal\"";
    const WANTS_COMPLETIONS: bool = true;

    fn wanted(cx: &CheckCx<'_>) -> bool {
        cx.transports
            .iter()
            .any(|t| matches!(t, TransportSpec::Ideal(_)))
    }

    fn build<S: ServiceSched>(cx: &mut BuildCx<'_, S>) -> Result<Option<Self>, String> {
        if !cx
            .transports
            .iter()
            .any(|t| matches!(t, TransportSpec::Ideal(_)))
        {
            return Ok(None);
        }
        let caps = cx
            .net
            .ports()
            .iter()
            .map(|p| p.rate().bps() as f64)
            .collect();
        Ok(Some(Self {
            mm: MaxMin::new(caps),
            slots: Vec::new(),
            flow_of: Vec::new(),
            changed: Vec::new(),
            done: Vec::new(),
            links: Vec::new(),
        }))
    }

    fn on_event<S: ServiceSched>(&mut self, ev: OracleEvent, _cx: &mut ServiceCx<'_, S>) {
        match ev {}
    }

    /// An `ideal` flow starts across the egress ports of its route.
    fn on_flow_start<S: ServiceSched>(&mut self, info: &FlowInfo, cx: &mut ServiceCx<'_, S>) {
        let f = info.flow;
        if !matches!(cx.flows.transport_of(f), TransportSpec::Ideal(_)) {
            return;
        }
        self.links.clear();
        self.links
            .extend(cx.net.route_ports(info.fwd).iter().map(|p| p.0));
        let (slot, changed) = self.mm.add(&self.links);
        self.changed.clear();
        self.changed.extend_from_slice(changed);
        if self.slots.len() <= f.index() {
            self.slots.resize(f.index() + 1, None);
        }
        self.slots[f.index()] = Some(slot);
        if self.flow_of.len() <= slot.0 as usize {
            self.flow_of.resize(slot.0 as usize + 1, FlowId(0));
        }
        self.flow_of[slot.0 as usize] = f;
        self.apply(cx);
    }

    /// Takes the flows that completed out of the allocation.
    fn on_completions<S: ServiceSched>(&mut self, cx: &mut ServiceCx<'_, S>) {
        cx.flows.take_completed(&mut self.done);
        for i in 0..self.done.len() {
            let f = self.done[i];
            if let Some(slot) = self.slots.get_mut(f.index()).and_then(Option::take) {
                let changed = self.mm.remove(slot);
                self.changed.clear();
                self.changed.extend_from_slice(changed);
                self.apply(cx);
            }
        }
    }

    /// Recomputations (one per start or completion of an `ideal` flow), the links and
    /// flows they visited, and that work per recomputation.
    fn summary(&self, _net: &Network, _flows: &Flows) -> Value {
        let per = if self.mm.changes == 0 {
            Value::Null
        } else {
            Value::from(self.mm.work as f64 / self.mm.changes as f64)
        };
        serde_json::json!({
            "changes": self.mm.changes,
            "work": self.mm.work,
            "work_per_change": per,
        })
    }
}
