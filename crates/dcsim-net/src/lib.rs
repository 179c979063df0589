//! The network model of dcsim: packets, ports with queue disciplines, links, switches,
//! host NICs, routing and topologies.
//!
//! The network does not know any transport. Packets carry a generic header; queue
//! disciplines classify by [`Class`] and never by protocol.
//!
//! A packet's life: a transport allocates it from the [`PacketPool`] and calls
//! [`Network::send`]; the host NIC port enqueues it and, if idle, starts serializing it at
//! once. When serialization ends the packet is on the link; on `LinkArrive` at a switch the
//! route (or the forwarding table) picks the egress port and the packet is enqueued there
//! within the same event (a zero-time hop). On arrival at a host, [`Network::on_link_arrive`]
//! returns it to the caller, which hands it to the transport; the transport frees it.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

mod cross;
mod forward;
mod network;
mod nic;
mod packet;
mod port;
pub mod qdisc;
mod route;
pub mod rules;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod topo;
pub mod wire;

use dcsim_engine::{Rate, Time, define_id};

pub use cross::Crossed;
pub use network::{BuildError, Captured, Lateness, Network, Shaper};
pub use nic::DEFAULT_TX_BUDGET_BYTES;
pub use packet::{
    Class, Ecn, FlowId, IpBits, Packet, PacketExt, PacketId, PacketPool, RateStamp, bytes16,
};
pub use port::{Port, PortId, PortNoise, PortStats};
pub use route::{FIB_SLOT_BYTES, RouteId, RoutingMode, RoutingSpec};
pub use topo::{Graph, NodeKind, TopologySpec};

bitflags::bitflags! {
    /// Header fields the network fills in when a protocol needs them (declared in its
    /// needs; see `docs/adr/0004-packet-header-budget.md`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
    pub struct Telemetry: u32 {
        /// Every switch port adds the time each data packet waited in its queue to the
        /// packet's `queue_delay_ns` (host NICs do not: they are the senders' own queues).
        const QUEUE_DELAY = 1;
    }
}

define_id!(
    /// A node (host or switch).
    NodeId
);
define_id!(
    /// A host, numbered as its topology documents.
    HostId
);

/// Events of the network layer. At most one of each is pending per port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetEvent {
    /// The port's transmitter is free, or its queue discipline asked to be woken.
    PortReady(PortId),
    /// The head packet of the port's link reaches the far end. The event names the packet
    /// too, so that the run loop can start loading it before the port (ADR 0006).
    LinkArrive(PortId, PacketId),
}

/// What the network needs from its caller for one operation.
pub struct NetCx<'a, S> {
    /// The current time.
    pub now: Time,
    /// The packet pool.
    pub pool: &'a mut PacketPool,
    /// The scheduler, for [`NetEvent`]s.
    pub sched: &'a mut S,
}

/// Description of a port, for choosing its queue discipline.
#[derive(Clone, Copy, Debug)]
pub struct PortInfo<'a> {
    /// The port.
    pub id: PortId,
    /// Whether the port is a host NIC.
    pub on_host: bool,
    /// Tier of the node the port belongs to.
    pub tier: &'a str,
    /// Tier of the node at the far end.
    pub peer_tier: &'a str,
    /// Line rate.
    pub rate: Rate,
}
