//! Fastpass (`kind = "fastpass"`; Perry et al., SIGCOMM 2014): every data packet leaves in
//! a timeslot and on a path that a central arbiter chose. This module is the flow's two
//! ends: the sender sends one packet each time the facade hands it a granted slot (with the
//! route through the granted spine), the receiver counts bytes. The demand reports, the
//! arbiter, the grants and the slot clock are the facade's (`dcsim::fastpass`), because
//! they belong to hosts and to the fabric, not to a flow.
//!
//! No window, no ACKs, no retransmission of data: as in the paper, end-to-end reliability
//! is the business of the transport above Fastpass, and with every packet in its own slot
//! on its own path nothing queues, so nothing is lost with ordinary buffers.
//!
//! # Header usage
//! Data only: `seq` = first byte, `payload_bytes`, `sent_at`.

use dcsim_engine::{Dur, RngTree, Time, TimerTable};
use dcsim_net::wire::{MAX_WIRE_BYTES, TCP_IP_HEADER_BYTES, TCP_MSS_BYTES, wire_bytes};
use dcsim_net::{Class, FlowId, HostId, IpBits, Packet, RateStamp};
use serde::{Deserialize, Serialize};

use crate::endpoint::{EndpointCx, FlowInfo, Grant, Needs, PacketFormat, Sched, Sender, Transport};
use crate::ideal::CountingReceiver;
use crate::record::FlowRecord;

/// Fastpass parameters: where the arbiter is and how the control protocol behaves.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FastpassConfig {
    /// The host that runs the arbiter (default: the last host). It sends and receives
    /// only control packets.
    #[serde(default)]
    pub arbiter: Option<u32>,
    /// Timeslots the arbiter allocates at once (8, 16, 32, 64, 128, 256 or 512; default 64,
    /// as the arbiter library and the Fastpass paper's allocator; the thesis's allocator
    /// works on 8 at a time).
    #[serde(default = "default_batch_slots")]
    pub batch_slots: u32,
    /// How long before a batch's first slot the arbiter allocates it and sends its grants
    /// (default: the longest arbiter-to-host delay of the fabric, computed, plus one slot).
    #[serde(default)]
    pub lead: Option<Dur>,
    /// Slots a host asks for ahead of a long-lived flow's use (default 128).
    #[serde(default = "default_max_outstanding")]
    pub max_outstanding: u32,
    /// An unacknowledged demand report is sent again after this long (default 200 µs).
    #[serde(default = "default_request_timeout")]
    pub request_timeout: Dur,
    /// A grant whose receipt the host has not acknowledged after this long is taken as lost
    /// and its slots are allocated again (default 500 µs).
    #[serde(default = "default_grant_timeout")]
    pub grant_timeout: Dur,
    /// Probability that a control packet is lost on arrival (default 0): a fault to test
    /// the protocol's recovery, drawn from its own seeded stream.
    #[serde(default)]
    pub control_loss: f64,
    /// Length of a timeslot in wire bytes at the host link rate (default 1538: one full
    /// frame, no gap). Longer slots leave each host link room for its control packets.
    #[serde(default = "default_slot_bytes")]
    pub slot_bytes: u32,
}

fn default_slot_bytes() -> u32 {
    MAX_WIRE_BYTES
}

fn default_batch_slots() -> u32 {
    64
}
fn default_max_outstanding() -> u32 {
    128
}
fn default_request_timeout() -> Dur {
    Dur::from_us(200)
}
fn default_grant_timeout() -> Dur {
    Dur::from_us(500)
}

impl Default for FastpassConfig {
    fn default() -> Self {
        Self {
            arbiter: None,
            batch_slots: default_batch_slots(),
            lead: None,
            max_outstanding: default_max_outstanding(),
            request_timeout: default_request_timeout(),
            grant_timeout: default_grant_timeout(),
            control_loss: 0.0,
            slot_bytes: default_slot_bytes(),
        }
    }
}

/// The Fastpass transport (the flows' ends).
pub struct Fastpass;

const T_STOP: usize = 0;

impl Transport for Fastpass {
    const NAME: &'static str = "fastpass";
    const ABOUT: &'static str =
        "central arbiter: each packet in a granted timeslot on a granted spine (leaf-spine)";
    type Config = FastpassConfig;
    type Sender = FastpassSender;
    type Receiver = CountingReceiver;
    type Host = ();

    fn validate(cfg: &FastpassConfig) -> Result<(), String> {
        if ![8, 16, 32, 64, 128, 256, 512].contains(&cfg.batch_slots) {
            return Err(format!(
                "batch_slots: {} is not 8, 16, 32, 64, 128, 256 or 512",
                cfg.batch_slots
            ));
        }
        if cfg.max_outstanding == 0 {
            return Err("max_outstanding: must be at least 1".into());
        }
        if cfg.request_timeout == Dur::ZERO || cfg.grant_timeout == Dur::ZERO {
            return Err("request_timeout / grant_timeout: must be greater than zero".into());
        }
        if cfg.slot_bytes < MAX_WIRE_BYTES {
            return Err(format!(
                "slot_bytes: {} is shorter than a full frame ({MAX_WIRE_BYTES} B)",
                cfg.slot_bytes
            ));
        }
        if !(0.0..1.0).contains(&cfg.control_loss) {
            return Err(format!(
                "control_loss: {} is not a probability below 1",
                cfg.control_loss
            ));
        }
        Ok(())
    }
    fn needs(_cfg: &FastpassConfig) -> Needs {
        Needs::default()
    }
    fn packet_format(_cfg: &FastpassConfig) -> PacketFormat {
        PacketFormat {
            payload_bytes: u64::from(TCP_MSS_BYTES),
            full_wire_bytes: MAX_WIRE_BYTES,
        }
    }
    fn open(
        _cfg: &FastpassConfig,
        flow: &FlowInfo,
        _rng: &RngTree,
    ) -> (FastpassSender, CountingReceiver) {
        (
            FastpassSender {
                flow: flow.flow,
                dst: flow.dst,
                next: 0,
                stop: flow.stop,
                timers: TimerTable::default(),
                done: false,
                wasted: 0,
            },
            CountingReceiver::default(),
        )
    }
    const FLOW_COUNTERS: &'static [&'static str] = &["fastpass_wasted_slots"];
    fn record(tx: &FastpassSender, _rx: &CountingReceiver, r: &mut FlowRecord) {
        r.counters[0] = tx.wasted;
    }
    fn sample(_tx: &FastpassSender, _rx: &CountingReceiver, _out: &mut Vec<(&'static str, f64)>) {}
}

/// The sending end: one packet per granted slot.
pub struct FastpassSender {
    flow: FlowId,
    dst: HostId,
    /// The next byte to send.
    next: u64,
    /// When a long-lived flow stops sending.
    stop: Option<Time>,
    timers: TimerTable<1>,
    done: bool,
    /// Slots granted to this flow that found nothing to send.
    wasted: u64,
}

impl FastpassSender {
    /// Whether the flow has stopped at `now` (a long-lived flow at its stop time).
    fn stopped<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, ()>) -> bool {
        if !self.done && self.stop.is_some_and(|t| cx.now() >= t) {
            // What it has sent is all it delivers.
            cx.shared.limit_bytes = cx.shared.limit_bytes.min(self.next);
            self.done = true;
        }
        self.done
    }
}

impl Sender for FastpassSender {
    type Host = ();

    fn on_start<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, ()>) {
        if let Some(at) = self.stop {
            cx.arm(&mut self.timers, T_STOP, at.max(cx.now()));
        }
    }
    fn on_packet<S: Sched>(&mut self, _pkt: &Packet, _cx: &mut EndpointCx<'_, S, ()>) {}
    fn on_timer<S: Sched>(&mut self, kind: usize, generation: u32, cx: &mut EndpointCx<'_, S, ()>) {
        if cx.due(&mut self.timers, kind, generation) == Some(T_STOP) {
            self.stopped(cx);
        }
    }
    /// A granted slot begins now: send one packet on its route.
    fn on_wake<S: Sched>(&mut self, cx: &mut EndpointCx<'_, S, ()>) {
        let Some(Grant::Slot(route)) = cx.shared.grant.take() else {
            return;
        };
        let limit = cx.shared.limit_bytes;
        if self.stopped(cx) || self.next >= limit {
            self.done = true;
            self.wasted += 1;
            return;
        }
        let len = u64::from(TCP_MSS_BYTES).min(limit - self.next) as u32;
        let now = cx.now();
        cx.send(Packet {
            seq: self.next,
            ack: 0,
            sent_at: now,
            echo: Time::ZERO,
            rate: RateStamp::NONE,
            queue_delay_ns: 0,
            flow: self.flow,
            route,
            dst: self.dst,
            next: dcsim_net::PortId::NONE,
            payload_bytes: dcsim_net::bytes16(len),
            wire_bytes: dcsim_net::bytes16(wire_bytes(len + TCP_IP_HEADER_BYTES)),
            hop: 0,
            class: Class::Data,
            ip: IpBits::NOT_ECT,
            flags: 0,
        });
        self.next += u64::from(len);
        self.done = self.next >= limit;
    }
    fn is_done(&self) -> bool {
        self.done
    }
}
