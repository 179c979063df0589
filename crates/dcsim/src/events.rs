//! The per-flow event log (`[output.events]`, `events.csv`): for the flows chosen, every
//! change of the transport's state (window, DCTCP's α, ExpressPass's credit rate, ...) and
//! counters (retransmissions, timeouts, credits sent and wasted), each CE-marked packet
//! that reaches one of the flow's ends, and the flow's start and completion, with the
//! simulated time. For debugging a protocol, where fixed-interval samples miss what
//! happened between two samples.
//!
//! The state is compared after each of the flow's own events (a packet reaching one of its
//! ends, one of its timers, its start), so a change is logged at the event that made it.
//! Rows go to disk as they are made ([`SampleSpill`], the long format of timeseries.csv:
//! `time_ns, kind, id, value` with the flow number as `id`). A run without a log pays one
//! predictable branch per delivered packet and per timer.

use std::fmt::Write as _;

use dcsim_engine::Time;
use dcsim_metrics::SampleSpill;
use dcsim_net::{Ecn, FlowId, Packet};
use dcsim_transport::{FlowRecord, Flows};

use crate::scenario::{EventsSpec, FlowKeyword, FlowSelection};

/// What was last logged of one flow.
#[derive(Default)]
struct Last {
    started: bool,
    completed: bool,
    values: Vec<(&'static str, f64)>,
    record: FlowRecord,
}

/// The event log of a run.
pub(crate) struct EventLog {
    /// Every flow, including those generated later.
    all: bool,
    /// Per flow: what was last logged, if the flow is logged.
    flows: Vec<Option<Box<Last>>>,
    pub(crate) spill: SampleSpill,
    max_rows: u64,
    /// Rows left out once `max_rows` were written.
    pub(crate) rows_over: u64,
    values: Vec<(&'static str, f64)>,
    id: String,
}

impl EventLog {
    pub(crate) fn new(spec: &EventsSpec) -> Self {
        let mut flows: Vec<Option<Box<Last>>> = Vec::new();
        let all = match &spec.flows {
            FlowSelection::Keyword(FlowKeyword::All) => true,
            FlowSelection::Keyword(FlowKeyword::None) => false,
            FlowSelection::List(l) => {
                for &f in l {
                    let i = f as usize;
                    if flows.len() <= i {
                        flows.resize_with(i + 1, || None);
                    }
                    flows[i] = Some(Box::default());
                }
                false
            }
        };
        Self {
            all,
            flows,
            spill: SampleSpill::new(None),
            max_rows: spec.max_rows,
            rows_over: 0,
            values: Vec::new(),
            id: String::new(),
        }
    }

    /// Rows written so far.
    pub(crate) fn rows(&self) -> u64 {
        self.spill.rows()
    }

    /// Whether flow `f` is logged.
    #[inline]
    pub(crate) fn wants(&self, f: FlowId) -> bool {
        self.all || self.flows.get(f.index()).is_some_and(Option::is_some)
    }

    fn push(&mut self, now: Time, kind: &str, f: FlowId, value: f64) {
        if self.spill.rows() >= self.max_rows {
            self.rows_over += 1;
            return;
        }
        self.id.clear();
        let _ = write!(self.id, "{}", f.0);
        self.spill.push(now.as_ns(), kind, &self.id, value);
    }

    /// Packet `p` reached one of its flow's ends: if the flow is logged, logs a CE mark on
    /// the packet (the value is its `seq`) and returns the flow, to be observed once the
    /// transport has handled the packet.
    #[inline]
    pub(crate) fn arrival(&mut self, now: Time, p: &Packet) -> Option<FlowId> {
        if !self.wants(p.flow) {
            return None;
        }
        if p.ip.ecn() == Ecn::Ce {
            self.push(now, "ce_arrived", p.flow, p.seq as f64);
        }
        Some(p.flow)
    }

    /// Logs what changed in flow `f` since it was last looked at.
    pub(crate) fn observe(&mut self, now: Time, f: FlowId, flows: &Flows) {
        let i = f.index();
        if self.flows.len() <= i {
            self.flows.resize_with(i + 1, || None);
        }
        let mut last = self.flows[i].take().unwrap_or_default();
        let spec = *flows.spec(f);
        let record = flows.record(f);
        let first = !last.started;
        if first {
            last.started = true;
            let size = spec.size_bytes.map_or(f64::INFINITY, |s| s as f64);
            self.push(now, "start", f, size);
        }
        let mut values = std::mem::take(&mut self.values);
        flows.sample_into(f, &mut values);
        for &(kind, value) in &values {
            let before = last.values.iter().find(|v| v.0 == kind).map(|v| v.1);
            if before.is_none_or(|b| b.to_bits() != value.to_bits()) {
                self.push(now, kind, f, value);
            }
        }
        // A flow whose connection is gone samples nothing: keep its last state.
        if !values.is_empty() {
            std::mem::swap(&mut last.values, &mut values);
        }
        self.values = values;
        if first || record.retransmits != last.record.retransmits {
            self.push(now, "retransmits", f, record.retransmits as f64);
        }
        for (k, name) in flows.transport_of(f).flow_counters().iter().enumerate() {
            if first || record.counters[k] != last.record.counters[k] {
                self.push(now, name, f, record.counters[k] as f64);
            }
        }
        if let Some(end) = record.end
            && !last.completed
        {
            last.completed = true;
            self.push(end, "completed", f, (end - spec.start).as_ns() as f64);
        }
        last.record = record;
        self.flows[i] = Some(last);
    }
}
