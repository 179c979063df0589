//! The [`Service`] trait and the handles its methods get.

use dcsim_engine::{Dur, RngTree, Schedule, Time};
use dcsim_net::{HostId, NetCx, NetEvent, Network, Packet, PacketPool, TopologySpec};
use dcsim_transport::{FlowCx, FlowEvent, FlowInfo, Flows, TransportSpec};
use serde_json::Value;

use crate::{ControllerSpec, ServiceEvent};

/// What a service's handlers create events on: the facade's scheduler, for the services'
/// own events and for the network's and the transports' (a service sends packets and wakes
/// flows).
pub trait ServiceSched: Schedule<ServiceEvent> + Schedule<NetEvent> + Schedule<FlowEvent> {}
impl<S: Schedule<ServiceEvent> + Schedule<NetEvent> + Schedule<FlowEvent>> ServiceSched for S {}

/// The handle of one service event or hook: the time, the network, the flow table, the
/// packet pool and the scheduler. The facade lends its own, so a service changes the
/// simulation only through their public methods.
pub struct ServiceCx<'a, S> {
    /// The current time.
    pub now: Time,
    /// The network.
    pub net: &'a mut Network,
    /// The flow table.
    pub flows: &'a mut Flows,
    /// The packet pool.
    pub pool: &'a mut PacketPool,
    /// The scheduler.
    pub sched: &'a mut S,
}

impl<S: ServiceSched> ServiceCx<'_, S> {
    /// Schedules one of the service's own events at `t`.
    pub fn at(&mut self, t: Time, ev: impl Into<ServiceEvent>) {
        self.sched.at(t, ev.into());
    }

    /// Sends `pkt` (allocated in the pool) from `host` into the network.
    pub fn send(&mut self, host: HostId, pkt: Packet) {
        let id = self.pool.alloc(pkt);
        let mut cx = NetCx {
            now: self.now,
            pool: self.pool,
            sched: self.sched,
        };
        self.net.send(host, id, &mut cx);
    }

    /// The flow table, and the handle its methods take (to grant a flow something).
    pub fn flows(&mut self) -> (&mut Flows, FlowCx<'_, S>) {
        (
            self.flows,
            FlowCx {
                now: self.now,
                pool: self.pool,
                net: self.net,
                sched: self.sched,
            },
        )
    }
}

/// What a service may read of a scenario to check it, before anything is built.
pub struct CheckCx<'a> {
    /// The scenario's transports, in index order.
    pub transports: &'a [TransportSpec],
    /// The index of a named transport (`[transports.NAME]`), if there is one.
    pub transport_index: &'a dyn Fn(&str) -> Option<u32>,
    /// The names of `[transports]`.
    pub transport_names: &'a [&'a str],
    /// The scenario's `[controller]`.
    pub controller: Option<&'a ControllerSpec>,
    /// The topology, presets resolved.
    pub topology: &'a TopologySpec,
    /// The number of hosts.
    pub hosts: u32,
    /// The run's duration (`None` for a run that drains).
    pub duration: Option<Dur>,
}

/// What a service is built from: the scenario's parts, the network (a service may intern
/// routes) and the flow table (before any flow starts).
pub struct BuildCx<'a, S> {
    /// The scenario's transports, in index order.
    pub transports: &'a [TransportSpec],
    /// The index of a named transport (`[transports.NAME]`), if there is one.
    pub transport_index: &'a dyn Fn(&str) -> Option<u32>,
    /// The scenario's `[controller]`.
    pub controller: Option<&'a ControllerSpec>,
    /// The topology, presets resolved.
    pub topology: &'a TopologySpec,
    /// The network.
    pub net: &'a mut Network,
    /// The flow table.
    pub flows: &'a mut Flows,
    /// The run's random streams (a service draws from streams of its own name).
    pub rng: &'a RngTree,
    /// The scheduler, for the service's first events.
    pub sched: &'a mut S,
}

/// Sets a service's number in the registry (`services!`).
pub(crate) trait Registered {
    /// The number of its control packets' flow ([`crate::control_flow`]).
    const INDEX: u8;
}

/// A component that acts beside the packet path.
///
/// The facade builds every registered service that the scenario wants, in registry order,
/// and calls its hooks: its own events when they are due, each flow's start, completed
/// flows (if it asks), its control packets, and its summary at the end. Every hook gets a
/// [`ServiceCx`]. Methods with a body are optional.
pub trait Service: Sized {
    /// The service's own events (small and `Copy`: they travel inside the facade's event).
    type Event: Copy + core::fmt::Debug + PartialEq + Eq;

    /// Its key in `summary.json` (`null` there when it does not run).
    const SUMMARY_KEY: &'static str;
    /// What in a scenario brings it in, as the scenario writes it (for messages).
    const CONFIGURED_BY: &'static str;
    /// Whether it hears of completed flows ([`Service::on_completions`]).
    const WANTS_COMPLETIONS: bool = false;
    /// Whether a run split between threads can carry it (none can yet: each reads or
    /// changes the whole network at an instant).
    const SPLITTABLE: bool = false;

    /// Whether the scenario wants the service (it then builds it): known from the
    /// scenario alone, before anything is built.
    fn wanted(cx: &CheckCx<'_>) -> bool;

    /// Checks what the service needs of the scenario, if the scenario wants it.
    ///
    /// # Errors
    /// The problem, starting with the key path to change.
    fn check(_cx: &CheckCx<'_>) -> Result<(), String> {
        Ok(())
    }

    /// The service, if the scenario wants it, with its first events scheduled.
    ///
    /// # Errors
    /// What the scenario check could not know (a network it cannot run on).
    fn build<S: ServiceSched>(cx: &mut BuildCx<'_, S>) -> Result<Option<Self>, String>;

    /// One of its events is due.
    fn on_event<S: ServiceSched>(&mut self, ev: Self::Event, cx: &mut ServiceCx<'_, S>);

    /// A flow started: its transport has opened it on `info`'s routes.
    fn on_flow_start<S: ServiceSched>(&mut self, _info: &FlowInfo, _cx: &mut ServiceCx<'_, S>) {}

    /// Flows completed (taken with [`Flows::take_completed`]); called after each packet
    /// delivered to a host, if [`Service::WANTS_COMPLETIONS`].
    fn on_completions<S: ServiceSched>(&mut self, _cx: &mut ServiceCx<'_, S>) {}

    /// One of its control packets (flow [`crate::control_flow`] of its number) arrived at
    /// `host`. The facade frees the packet.
    fn on_packet<S: ServiceSched>(
        &mut self,
        _host: HostId,
        _pkt: &Packet,
        _cx: &mut ServiceCx<'_, S>,
    ) {
    }

    /// Control packets its hosts consumed.
    fn packets_delivered(&self) -> u64 {
        0
    }

    /// Its figures for summary.json.
    fn summary(&self, net: &Network, flows: &Flows) -> Value;
}
