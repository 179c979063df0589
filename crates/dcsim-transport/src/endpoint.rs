//! The transport interface: what a transport is made of and what it may touch.
//!
//! A transport ([`Transport`]) is two sans-IO state machines per flow, a [`Sender`] on the
//! source host and a [`Receiver`] on the destination host, plus optional per-host state
//! ([`Transport::Host`]) shared by every flow of that transport on a host (an interface's
//! receive quota, a NIC pacer). The two ends of a flow talk only through packets. They
//! share one number that both applications know, the flow's byte limit ([`FlowShared`]).
//!
//! Each handler gets an [`EndpointCx`]: the time, sending on the endpoint's own NIC, its
//! timers and its host state. It never sees the network, other flows or the scheduler:
//! routes are chosen by the caller before the flow starts ([`FlowInfo`]) and the caller
//! computes whatever needs the topology (unloaded completion times).

use core::fmt;

use dcsim_engine::{Dur, Rate, RngTree, Schedule, Time, TimerFire, TimerTable};
use dcsim_net::qdisc::PortFeatures;
use dcsim_net::{
    FlowId, HostId, NetCx, NetEvent, Network, Packet, PacketExt, PacketId, PacketPool, RouteId,
    Telemetry,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::record::FlowRecord;

/// Events of the transport layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowEvent {
    /// The flow starts.
    Start(FlowId),
    /// A timer of one end of a flow: (flow, end and kind, generation); see [`TimerKey`].
    Timer(FlowId, TimerKey, u32),
}

/// Which end of a flow a timer belongs to, and its kind (the index in that end's
/// [`TimerTable`]); one byte, so that [`FlowEvent`] stays small.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimerKey(u8);

impl TimerKey {
    const RECEIVER: u8 = 0x80;

    fn new(side: Side, kind: usize) -> Self {
        debug_assert!(kind < usize::from(Self::RECEIVER), "too many timer kinds");
        let side = match side {
            Side::Sender => 0,
            Side::Receiver => Self::RECEIVER,
        };
        Self(side | kind as u8)
    }
    /// The end of the flow.
    pub fn side(self) -> Side {
        if self.0 & Self::RECEIVER != 0 {
            Side::Receiver
        } else {
            Side::Sender
        }
    }
    /// The timer's index in that end's table.
    pub fn kind(self) -> usize {
        usize::from(self.0 & !Self::RECEIVER)
    }
}

/// One end of a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The source host's end.
    Sender,
    /// The destination host's end.
    Receiver,
}

/// A scheduler a transport can use: one that takes network and transport events.
pub trait Sched: Schedule<NetEvent> + Schedule<FlowEvent> {}
impl<S: Schedule<NetEvent> + Schedule<FlowEvent>> Sched for S {}

/// What the caller tells a transport about a flow when it starts.
#[derive(Clone, Copy, Debug)]
pub struct FlowInfo {
    /// The flow.
    pub flow: FlowId,
    /// Sending host.
    pub src: HostId,
    /// Receiving host.
    pub dst: HostId,
    /// Route of packets from the sender ([`RouteId::NONE`] with per-packet spraying).
    pub fwd: RouteId,
    /// Route of packets from the receiver.
    pub rev: RouteId,
    /// Bytes to deliver; `None` for a long-lived flow.
    pub size_bytes: Option<u64>,
    /// Time after which the sender sends no new data, if any.
    pub stop: Option<Time>,
    /// Line rate of the sender's NIC.
    pub src_link: Rate,
    /// Line rate of the receiver's NIC.
    pub dst_link: Rate,
    /// Header fields the network fills in on this flow's data packets.
    pub telemetry: Telemetry,
}

/// What both ends of a flow know: the applications' agreement on how much is sent.
///
/// # Deviations
/// The receiver learns a long-lived flow's final size at the moment its sender stops (a
/// real stack would learn it from a FIN); the receiver then counts the flow complete
/// when it holds every byte sent, without waiting for a packet that says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowShared {
    /// Bytes the flow delivers: its size, or `u64::MAX` while a long-lived flow runs, then
    /// the bytes it had sent when it stopped.
    pub limit_bytes: u64,
    /// What a control-plane service granted the flow, if anything: set by
    /// [`crate::Flows::grant`], which then wakes the sender ([`Sender::on_wake`]).
    pub grant: Option<Grant>,
}

/// What a control-plane service grants a flow's sender, the one way a central scheduler
/// reaches a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    /// Send at this rate until another grant (a rate allocator, such as the Ideal scheme's
    /// oracle); the sender reads it and leaves it.
    Rate(Rate),
    /// Send one packet now, on this route (a timeslot allocator, such as Fastpass); the
    /// sender takes it.
    Slot(RouteId),
}

/// Sizes of a transport's packets, for unloaded completion times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacketFormat {
    /// Payload bytes of a full data packet.
    pub payload_bytes: u64,
    /// Wire bytes of a full data packet.
    pub full_wire_bytes: u32,
}

/// How a packet appears in a packet trace (`[output.trace]`, docs/trace.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceHeader {
    /// A UDP datagram carrying dcsim's generic 18-byte header (class, the transport's flag
    /// byte, flow, `seq`, `ack`): the default, and the form of ExpressPass's packets.
    Udp,
    /// A TCP segment without options.
    Tcp(TcpView),
}

/// The TCP header of a segment in a packet trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpView {
    /// Sequence number (of the first payload byte; the SYN's own number for a SYN).
    pub seq: u32,
    /// Acknowledgement number (meaningful with [`TcpView::ACK`]).
    pub ack: u32,
    /// The flag bits of the TCP header's 12-bit flags field ([`TcpView::FIN`] ...).
    pub flags: u16,
    /// Advertised window, in bytes (no window scaling).
    pub window: u16,
    /// Payload bytes (the trace keeps headers only; lengths say how many there were).
    pub payload_bytes: u32,
}

impl TcpView {
    /// FIN.
    pub const FIN: u16 = 0x001;
    /// SYN.
    pub const SYN: u16 = 0x002;
    /// ACK.
    pub const ACK: u16 = 0x010;
    /// ECN echo (RFC 3168).
    pub const ECE: u16 = 0x040;
    /// Congestion window reduced (RFC 3168).
    pub const CWR: u16 = 0x080;
    /// The NS bit (RFC 3540, historic; Wireshark shows it as "Accurate ECN"), used for
    /// Pulser's incast-notification echo.
    pub const EIN_ECHO: u16 = 0x100;
}

/// What a transport needs of the network, checked when a scenario is built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// Both directions of a flow must cross the same links, in reverse; why.
    pub symmetric_routes: Option<&'static str>,
    /// Every flow must keep one route (no per-packet spraying); why.
    pub flow_routes: Option<&'static str>,
    /// What every switch port must do, and why.
    pub switch_ports: Option<(PortFeatures, &'static str)>,
    /// What every host NIC must do, and why.
    pub nics: Option<(PortFeatures, &'static str)>,
    /// What host NICs should do when the scenario names no NIC discipline, and why (a
    /// paper's setting that the transport runs without, as some of its authors' own
    /// set-ups do).
    pub nic_preference: Option<(PortFeatures, &'static str)>,
    /// Header fields the network must fill in.
    pub telemetry: Telemetry,
}

impl Needs {
    /// What both `self` and `other` need (the first reason given for each requirement).
    pub fn and(self, other: Self) -> Self {
        let ports = |a: Option<(PortFeatures, &'static str)>,
                     b: Option<(PortFeatures, &'static str)>| match (a, b) {
            (Some((fa, why)), Some((fb, _))) => Some((fa | fb, why)),
            (a, b) => a.or(b),
        };
        Self {
            symmetric_routes: self.symmetric_routes.or(other.symmetric_routes),
            flow_routes: self.flow_routes.or(other.flow_routes),
            switch_ports: ports(self.switch_ports, other.switch_ports),
            nics: ports(self.nics, other.nics),
            nic_preference: ports(self.nic_preference, other.nic_preference),
            telemetry: self.telemetry | other.telemetry,
        }
    }
}

/// A transport that scenarios can name (`transport = { kind = "..." }`): its name,
/// parameters, needs and endpoints. Implementing this in the transport's own module and
/// adding one line to the `transports!` registry is all a new transport needs.
pub trait Transport: Sized {
    /// Name in scenario files (`kind = "tcp"`).
    const NAME: &'static str;
    /// One line for `dcsim list`.
    const ABOUT: &'static str;
    /// Parameters; `Default` gives the documented defaults.
    type Config: Clone + fmt::Debug + PartialEq + Default + Serialize + DeserializeOwned;
    /// The sending end of one flow.
    type Sender: Sender<Host = Self::Host>;
    /// The receiving end of one flow.
    type Receiver: Receiver<Host = Self::Host>;
    /// State this transport keeps per host, shared by the endpoints of all its flows on
    /// that host (`()` for none).
    type Host: Default;

    /// Checks parameter ranges; the error starts with the parameter's name.
    fn validate(_cfg: &Self::Config) -> Result<(), String> {
        Ok(())
    }
    /// The configuration with every profile default filled in (what `dcsim show` prints).
    fn resolve(cfg: &Self::Config) -> Self::Config {
        cfg.clone()
    }
    /// Short name for output (`"dctcp"` for TCP with DCTCP).
    fn label(_cfg: &Self::Config) -> &'static str {
        Self::NAME
    }
    /// What the transport needs of the network.
    fn needs(_cfg: &Self::Config) -> Needs {
        Needs::default()
    }
    /// Sizes of its data packets.
    fn packet_format(cfg: &Self::Config) -> PacketFormat;
    /// The two ends of a new flow; randomness comes from `rng`'s streams for this flow.
    fn open(cfg: &Self::Config, flow: &FlowInfo, rng: &RngTree) -> (Self::Sender, Self::Receiver);
    /// Names of the per-flow counters the transport reports in
    /// [`FlowRecord::counters`] (columns of `flows.csv`; at most
    /// [`MAX_FLOW_COUNTERS`](crate::record::MAX_FLOW_COUNTERS), and unique across all
    /// registered transports).
    const FLOW_COUNTERS: &'static [&'static str] = &[];
    /// Copies the flow's retransmissions and [`Transport::FLOW_COUNTERS`] into its record
    /// (when sampled, and when the flow ends).
    fn record(tx: &Self::Sender, rx: &Self::Receiver, r: &mut FlowRecord);
    /// State for the time series: `(kind, value)` pairs.
    fn sample(tx: &Self::Sender, rx: &Self::Receiver, out: &mut Vec<(&'static str, f64)>);
    /// A packet arrived for the flow after both ends had finished.
    fn on_straggler(_pkt: &Packet, _r: &mut FlowRecord) {}
    /// Whether [`Transport::on_straggler`] may change the record (so that the flow table
    /// keeps the stragglers of flows that have left it).
    const COUNTS_STRAGGLERS: bool = false;
    /// Whether the sender alone knows when a flow without a stop time has finished: once
    /// the sender is done, the receiver holds every byte and is idle, and stays so, and
    /// [`Transport::record`] reads the sender only. A run split between threads can then
    /// run the two ends of a flow in different parts (ADR 0010, item 3): the sender's part
    /// decides the finish and tells the receiver's. Debug builds check the first half at
    /// every event of every flow that runs whole.
    const SENDER_FINISHES: bool = false;
    /// How `pkt` appears in a packet trace; the default is the generic UDP form.
    fn trace_header(_cfg: &Self::Config, _pkt: &Packet) -> TraceHeader {
        TraceHeader::Udp
    }
}

/// The sending end of a flow.
pub trait Sender {
    /// The transport's per-host state.
    type Host;
    /// The flow starts.
    fn on_start<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, Self::Host>);
    /// A packet of this flow arrived at the sender's host (already freed: `pkt` is a copy).
    fn on_packet<S: Sched>(&mut self, pkt: &Packet, cx: &mut EndpointCx<'_, S, Self::Host>);
    /// A timer event of the sender popped; see [`EndpointCx::due`].
    fn on_timer<S: Sched>(
        &mut self,
        kind: usize,
        generation: u32,
        cx: &mut EndpointCx<'_, S, Self::Host>,
    );
    /// The host's NIC queue has drained after [`EndpointCx::nic_room`] refused.
    fn on_nic_ready<S: Sched>(&mut self, _cx: &mut EndpointCx<'_, S, Self::Host>) {}
    /// Something the facade keeps in [`FlowShared`] changed (the oracle's rate).
    fn on_wake<S: Sched>(&mut self, _cx: &mut EndpointCx<'_, S, Self::Host>) {}
    /// Nothing left to send or resend.
    fn is_done(&self) -> bool;
    /// Waiting for room in the NIC queue.
    fn is_nic_blocked(&self) -> bool {
        false
    }
}

/// The receiving end of a flow.
pub trait Receiver {
    /// The transport's per-host state.
    type Host;
    /// A packet of this flow arrived at the receiver's host (already freed).
    fn on_packet<S: Sched>(&mut self, pkt: &Packet, cx: &mut EndpointCx<'_, S, Self::Host>);
    /// A timer event of the receiver popped; see [`EndpointCx::due`].
    fn on_timer<S: Sched>(
        &mut self,
        kind: usize,
        generation: u32,
        cx: &mut EndpointCx<'_, S, Self::Host>,
    );
    /// Bytes held in order.
    fn delivered_bytes(&self) -> u64;
    /// Every byte of the flow has arrived.
    fn is_complete(&self) -> bool;
    /// Nothing pending (an ACK held back, credits still being paced).
    fn is_idle(&self) -> bool;
}

/// What a caller hands the flow table for one event.
pub struct FlowCx<'a, S> {
    /// The current time.
    pub now: Time,
    /// The packet pool.
    pub pool: &'a mut PacketPool,
    /// The network (to hand packets to host NICs).
    pub net: &'a mut Network,
    /// The scheduler.
    pub sched: &'a mut S,
}

/// The handle an endpoint gets for one event: the time, its NIC, its timers, its host's
/// state and what both ends of its flow share. Nothing else of the simulation.
pub struct EndpointCx<'a, S, H> {
    now: Time,
    pool: &'a mut PacketPool,
    net: &'a mut Network,
    sched: &'a mut S,
    host: HostId,
    flow: FlowId,
    side: Side,
    stale: &'a mut u64,
    /// The options beside the header of the packet being handled, if it has them.
    pub(crate) ext: Option<&'a PacketExt>,
    /// What both ends of the flow know.
    pub shared: &'a mut FlowShared,
    /// The transport's state on this endpoint's host.
    pub host_state: &'a mut H,
}

impl<'a, S: Sched, H> EndpointCx<'a, S, H> {
    /// The handle of the `side` end of flow `f` on `host`, for the flow table and test
    /// harnesses: stale timer events are counted in `stale`.
    #[allow(clippy::too_many_arguments)] // one field each; only dispatchers build it
    pub fn new(
        cx: &'a mut FlowCx<'_, S>,
        host: HostId,
        flow: FlowId,
        side: Side,
        stale: &'a mut u64,
        shared: &'a mut FlowShared,
        host_state: &'a mut H,
    ) -> Self {
        Self {
            now: cx.now,
            pool: cx.pool,
            net: cx.net,
            sched: cx.sched,
            host,
            flow,
            side,
            stale,
            ext: None,
            shared,
            host_state,
        }
    }

    /// The options beside the header of the packet being handled (TCP's SACK blocks), if
    /// it was sent with them ([`EndpointCx::send_with_ext`]).
    #[inline]
    pub fn packet_ext(&self) -> Option<&PacketExt> {
        self.ext
    }

    /// Hands the endpoint the options of the packet it is given next (for dispatchers: the
    /// flow table, test harnesses).
    pub fn set_packet_ext(&mut self, ext: Option<&'a PacketExt>) {
        self.ext = ext;
    }

    /// The current time.
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }

    /// The host this endpoint runs on.
    pub fn host(&self) -> HostId {
        self.host
    }

    /// Sends `pkt` from this endpoint's host: it joins the NIC queue.
    #[inline]
    pub fn send(&mut self, pkt: Packet) {
        let id = self.pool.alloc(pkt);
        self.send_id(id);
    }

    /// [`EndpointCx::send`] with options beside the header (TCP's SACK blocks), which the
    /// peer reads with [`EndpointCx::packet_ext`].
    pub fn send_with_ext(&mut self, pkt: Packet, ext: &PacketExt) {
        let id = self.pool.alloc_with_ext(pkt, ext);
        self.send_id(id);
    }

    #[inline]
    fn send_id(&mut self, id: PacketId) {
        let mut ncx = NetCx {
            now: self.now,
            pool: self.pool,
            sched: self.sched,
        };
        self.net.send(self.host, id, &mut ncx);
    }

    /// Whether the NIC has room within the host transmit budget for a packet of
    /// `wire_bytes` (see [`Network::nic_room`]); if not, the endpoint's
    /// [`Sender::on_nic_ready`] runs when it has.
    #[inline]
    pub fn nic_room(&mut self, wire_bytes: u32) -> bool {
        let mut ncx = NetCx {
            now: self.now,
            pool: self.pool,
            sched: self.sched,
        };
        self.net.nic_room(self.host, wire_bytes, &mut ncx)
    }

    /// [`EndpointCx::nic_room`], also refused while the NIC queue holds more than `small`
    /// bytes (see [`Network::nic_room_within`]).
    #[inline]
    pub fn nic_room_within(&mut self, wire_bytes: u32, small: u64) -> bool {
        let mut ncx = NetCx {
            now: self.now,
            pool: self.pool,
            sched: self.sched,
        };
        self.net
            .nic_room_within(self.host, wire_bytes, small, &mut ncx)
    }

    /// Arms timer `kind` of `timers` (this endpoint's table) for `at`, scheduling an event
    /// only when the table needs one (see [`TimerTable`]).
    #[inline]
    pub fn arm<const N: usize>(&mut self, timers: &mut TimerTable<N>, kind: usize, at: Time) {
        if let Some(g) = timers.set(kind, at) {
            let key = TimerKey::new(self.side, kind);
            self.sched.at(at, FlowEvent::Timer(self.flow, key, g));
        }
    }

    /// Arms timer `kind` to fire `after` from now.
    #[inline]
    pub fn arm_in<const N: usize>(&mut self, timers: &mut TimerTable<N>, kind: usize, after: Dur) {
        let at = self.now + after;
        self.arm(timers, kind, at);
    }

    /// Resolves a popped timer event against this endpoint's table: `Some(kind)` if it is
    /// due now; `None` if it was cancelled or superseded (counted as stale) or its deadline
    /// had moved later (scheduled again).
    #[inline]
    pub fn due<const N: usize>(
        &mut self,
        timers: &mut TimerTable<N>,
        kind: usize,
        generation: u32,
    ) -> Option<usize> {
        match timers.on_fire(kind, generation, self.now) {
            TimerFire::Fire => Some(kind),
            TimerFire::Stale => {
                *self.stale += 1;
                None
            }
            TimerFire::Reschedule(at) => {
                let key = TimerKey::new(self.side, kind);
                self.sched
                    .at(at, FlowEvent::Timer(self.flow, key, generation));
                None
            }
        }
    }
}
