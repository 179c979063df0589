//! Transports of dcsim: the shared reliable transport ([`tcp`]) with pluggable congestion
//! control ([`cc`]), and the flow table that dispatches packets and timers to them.
//!
//! An endpoint is a sans-IO state machine: `on_start`, `on_packet`, `on_timer`, each taking
//! a [`FlowCx`] that lets it allocate packets, hand them to its host NIC and arm timers. It
//! never touches ports or links.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod cc;
mod flows;
pub mod tcp;
pub mod xpass;

use dcsim_engine::{Schedule, Time, TimerFire, TimerTable};
use dcsim_net::{HostId, NetCx, NetEvent, Network, PacketId, PacketPool};
use serde::{Deserialize, Serialize};

pub use dcsim_net::FlowId;
pub use flows::{FlowRecord, FlowSpec, Flows, ideal_fct};
pub use tcp::TcpConfig;

/// Events of the transport layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowEvent {
    /// The flow starts.
    Start(FlowId),
    /// A flow timer: (flow, timer kind, generation).
    Timer(FlowId, u8, u32),
}

/// What an endpoint may touch while handling one event.
pub struct FlowCx<'a, S> {
    /// The current time.
    pub now: Time,
    /// The packet pool.
    pub pool: &'a mut PacketPool,
    /// The network (only to hand packets to a host NIC).
    pub net: &'a mut Network,
    /// The scheduler.
    pub sched: &'a mut S,
}

impl<S: Schedule<NetEvent>> FlowCx<'_, S> {
    /// Hands `pkt` to the NIC of `host`.
    #[inline]
    pub fn send(&mut self, host: HostId, pkt: PacketId) {
        let mut ncx = NetCx {
            now: self.now,
            pool: self.pool,
            sched: self.sched,
        };
        self.net.send(host, pkt, &mut ncx);
    }

    /// Whether `host`'s NIC has room within the host transmit budget for a packet of
    /// `wire_bytes` (see [`Network::nic_room`]); if not, the flow table wakes the caller's
    /// flow when it has.
    #[inline]
    pub fn nic_room(&mut self, host: HostId, wire_bytes: u32) -> bool {
        let mut ncx = NetCx {
            now: self.now,
            pool: self.pool,
            sched: self.sched,
        };
        self.net.nic_room(host, wire_bytes, &mut ncx)
    }
}

/// What a popped timer event means for its connection.
pub(crate) enum Due {
    /// Timer `kind` is due: run its handler.
    Fire(usize),
    /// A cancelled or superseded event (counted as stale).
    Stale,
    /// The deadline had moved later; the event was scheduled again.
    Later,
}

/// Arms timer `kind` of `flow` for `at`, scheduling an event only when the table needs one
/// (see [`TimerTable`]).
pub(crate) fn arm_timer<const N: usize, S: Schedule<FlowEvent>>(
    timers: &mut TimerTable<N>,
    flow: FlowId,
    kind: usize,
    at: Time,
    cx: &mut FlowCx<'_, S>,
) {
    if let Some(g) = timers.set(kind, at) {
        cx.sched.at(at, FlowEvent::Timer(flow, kind as u8, g));
    }
}

/// Resolves a popped timer event of `flow` against its table, rescheduling a deadline that
/// moved later.
pub(crate) fn timer_due<const N: usize, S: Schedule<FlowEvent>>(
    timers: &mut TimerTable<N>,
    flow: FlowId,
    kind: u8,
    generation: u32,
    cx: &mut FlowCx<'_, S>,
) -> Due {
    match timers.on_fire(usize::from(kind), generation, cx.now) {
        TimerFire::Stale => Due::Stale,
        TimerFire::Reschedule(at) => {
            cx.sched.at(at, FlowEvent::Timer(flow, kind, generation));
            Due::Later
        }
        TimerFire::Fire => Due::Fire(usize::from(kind)),
    }
}

/// A transport as written in a scenario (`kind = "..."`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum TransportSpec {
    /// The shared reliable transport (TCP) with a congestion controller.
    Tcp(TcpConfig),
    /// ExpressPass: receiver-driven credits.
    Expresspass(xpass::XpassConfig),
}

impl Default for TransportSpec {
    fn default() -> Self {
        Self::Tcp(TcpConfig::default())
    }
}

impl TransportSpec {
    /// Checks parameter ranges; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Self::Tcp(c) => c.validate(),
            Self::Expresspass(c) => c.validate(),
        }
    }

    /// The spec with every profile default filled in (what `dcsim show` prints).
    pub fn resolved(&self) -> Self {
        match self {
            Self::Tcp(c) => Self::Tcp(c.clone()),
            Self::Expresspass(c) => Self::Expresspass(c.resolve()),
        }
    }

    /// Whether the transport needs credit-shaping ports and symmetric routes.
    pub fn is_credit_based(&self) -> bool {
        matches!(self, Self::Expresspass(_))
    }
    /// Short name for output ("dctcp", "reno").
    pub fn label(&self) -> &'static str {
        match self {
            Self::Tcp(c) => c.cc.name(),
            Self::Expresspass(_) => "expresspass",
        }
    }
    /// Wire bytes of a full data packet (for ideal completion times).
    pub fn full_packet_wire_bytes(&self) -> u32 {
        match self {
            Self::Tcp(c) => c.full_segment_wire_bytes(),
            Self::Expresspass(_) => dcsim_net::wire::MAX_WIRE_BYTES,
        }
    }
    /// Payload bytes of a full data packet.
    pub fn payload_per_packet(&self) -> u64 {
        match self {
            Self::Tcp(c) => c.mss.0,
            Self::Expresspass(_) => u64::from(dcsim_net::wire::TCP_MSS_BYTES),
        }
    }
    /// The transports a scenario can name (for `dcsim list`).
    pub const KINDS: &'static [(&'static str, &'static str)] = &[
        (
            "tcp",
            "reliable transport (NewReno mechanics) with a congestion controller `cc`",
        ),
        (
            "expresspass",
            "credit-based: receiver-paced credits, one data packet per credit; profile paper | code",
        ),
    ];
}
