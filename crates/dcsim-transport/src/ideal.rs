//! The Ideal scheme (`kind = "ideal"`): senders pace their data at the rate a global oracle
//! gives them, the max-min fair share of their route computed over every running flow of
//! this transport and recomputed whenever one of them starts or completes (the oracle of
//! `dcsim_control`, a control-plane service). Nothing else: no window, no ACKs, no loss recovery. With
//! every link's rates summing to at most its capacity, queues stay at the few packets that
//! meet at a port at once, and nothing is lost with ordinary buffers.
//!
//! # Header usage
//! Data only: `seq` = first byte, `payload_bytes`, `sent_at`.

use dcsim_engine::{RngTree, Time, TimerTable};
use dcsim_net::wire::{MAX_WIRE_BYTES, TCP_IP_HEADER_BYTES, TCP_MSS_BYTES, wire_bytes};
use dcsim_net::{Class, FlowId, HostId, IpBits, Packet, RateStamp, RouteId};
use serde::{Deserialize, Serialize};

use crate::endpoint::{
    EndpointCx, FlowInfo, Grant, Needs, PacketFormat, Receiver, Sched, Sender, Transport,
};
use crate::record::FlowRecord;

/// Ideal parameters (none yet; `kind = "ideal"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct IdealConfig {}

/// The Ideal transport.
pub struct Ideal;

const T_SEND: usize = 0;
const T_STOP: usize = 1;

impl Transport for Ideal {
    const NAME: &'static str = "ideal";
    const ABOUT: &'static str =
        "oracle: senders paced at the max-min fair rate of their route, recomputed globally";
    type Config = IdealConfig;
    type Sender = IdealSender;
    type Receiver = CountingReceiver;
    type Host = ();

    fn needs(_cfg: &IdealConfig) -> Needs {
        Needs {
            flow_routes: Some("the oracle shares each link among the flows whose route crosses it"),
            ..Needs::default()
        }
    }
    fn packet_format(_cfg: &IdealConfig) -> PacketFormat {
        PacketFormat {
            payload_bytes: u64::from(TCP_MSS_BYTES),
            full_wire_bytes: MAX_WIRE_BYTES,
        }
    }
    fn open(
        _cfg: &IdealConfig,
        flow: &FlowInfo,
        _rng: &RngTree,
    ) -> (IdealSender, CountingReceiver) {
        (
            IdealSender {
                flow: flow.flow,
                route: flow.fwd,
                dst: flow.dst,
                next: 0,
                last_sent: None,
                stop: flow.stop,
                timers: TimerTable::default(),
                done: false,
            },
            CountingReceiver::default(),
        )
    }
    const FLOW_COUNTERS: &'static [&'static str] = &[];
    fn record(_tx: &IdealSender, _rx: &CountingReceiver, _r: &mut FlowRecord) {}
    fn sample(_tx: &IdealSender, _rx: &CountingReceiver, _out: &mut Vec<(&'static str, f64)>) {}
}

/// The sending end: one packet per `wire bytes / rate`.
pub struct IdealSender {
    flow: FlowId,
    route: RouteId,
    dst: HostId,
    /// The next byte to send.
    next: u64,
    /// When the last packet left and its wire size.
    last_sent: Option<(Time, u32)>,
    /// When a long-lived flow stops sending.
    stop: Option<Time>,
    timers: TimerTable<2>,
    done: bool,
}

impl IdealSender {
    /// The wire bytes of the next packet.
    fn next_wire(&self, limit: u64) -> u32 {
        let len = u64::from(TCP_MSS_BYTES).min(limit - self.next) as u32;
        wire_bytes(len + TCP_IP_HEADER_BYTES)
    }

    /// Arms the next departure: `wire / rate` after the last one (or now).
    fn schedule<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, ()>) {
        let Some(Grant::Rate(rate)) = cx.shared.grant else {
            return;
        };
        if rate.bps() == 0 {
            return;
        }
        if self.done {
            return;
        }
        let at = match self.last_sent {
            None => cx.now(),
            Some((t, wire)) => (t + rate.tx_time(u64::from(wire))).max(cx.now()),
        };
        cx.arm(&mut self.timers, T_SEND, at);
    }
}

impl Sender for IdealSender {
    type Host = ();

    fn on_start<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, ()>) {
        if let Some(at) = self.stop {
            cx.arm(&mut self.timers, T_STOP, at.max(cx.now()));
        }
        self.schedule(cx);
    }
    fn on_packet<S: Sched>(&mut self, _pkt: &Packet, _cx: &mut EndpointCx<'_, S, ()>) {}
    fn on_timer<S: Sched>(&mut self, kind: usize, generation: u32, cx: &mut EndpointCx<'_, S, ()>) {
        let due = cx.due(&mut self.timers, kind, generation);
        if due == Some(T_STOP) && !self.done {
            // A long-lived flow stops: what it has sent is all it delivers.
            cx.shared.limit_bytes = cx.shared.limit_bytes.min(self.next);
            self.done = true;
            self.timers.cancel(T_SEND);
            return;
        }
        if due != Some(T_SEND) || self.done {
            return;
        }
        let limit = cx.shared.limit_bytes;
        if self.next >= limit {
            self.done = true;
            return;
        }
        let len = u64::from(TCP_MSS_BYTES).min(limit - self.next) as u32;
        let wire = self.next_wire(limit);
        let now = cx.now();
        cx.send(Packet {
            seq: self.next,
            ack: 0,
            sent_at: now,
            echo: Time::ZERO,
            rate: RateStamp::NONE,
            queue_delay_ns: 0,
            flow: self.flow,
            route: self.route,
            dst: self.dst,
            next: dcsim_net::PortId::NONE,
            payload_bytes: dcsim_net::bytes16(len),
            wire_bytes: dcsim_net::bytes16(wire),
            hop: 0,
            class: Class::Data,
            ip: IpBits::NOT_ECT,
            flags: 0,
        });
        self.next += u64::from(len);
        self.last_sent = Some((now, wire));
        self.done = self.next >= limit;
        self.schedule(cx);
    }
    /// The oracle's rate changed: the next departure is re-timed from the last one at the
    /// new rate (at once if that time has passed).
    fn on_wake<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, ()>) {
        self.schedule(cx);
    }
    fn is_done(&self) -> bool {
        self.done
    }
}

/// The receiving end of a centrally scheduled flow (the oracle's, the arbiter's): counts
/// what arrives, acknowledges nothing (the scheduler does not lose data).
#[derive(Default)]
pub struct CountingReceiver {
    received: u64,
    complete: bool,
}

impl Receiver for CountingReceiver {
    type Host = ();

    fn on_packet<S: Sched>(&mut self, pkt: &Packet, cx: &mut EndpointCx<'_, S, ()>) {
        self.received += u64::from(pkt.payload_bytes);
        self.complete = self.received >= cx.shared.limit_bytes;
    }
    fn on_timer<S: Sched>(&mut self, _k: usize, _g: u32, _cx: &mut EndpointCx<'_, S, ()>) {}
    fn delivered_bytes(&self) -> u64 {
        self.received
    }
    fn is_complete(&self) -> bool {
        self.complete
    }
    fn is_idle(&self) -> bool {
        true
    }
}
