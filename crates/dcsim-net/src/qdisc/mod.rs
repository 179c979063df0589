//! Queue disciplines: the policy inside a port.
//!
//! A [`crate::Port`] owns the mechanism (transmitter, its one pending event, counters,
//! freeing dropped packets); a queue discipline owns only admission, ordering and marking
//! ([`QueueDisc`]). Adding one means a new file here implementing [`QueueDisc`] and
//! [`Discipline`], plus one line in the `disciplines!` registry.
//!
//! | kind | file | what it does |
//! |---|---|---|
//! | `droptail` | `droptail.rs` | FIFO, tail drop at a byte or packet limit |
//! | `ecn` | `ecn.rs` | drop-tail plus DCTCP-style marking when the instantaneous queue ≥ K |
//! | `red` | `red.rs` | Floyd–Jacobson RED: EWMA average, linear ramp, count spacing, gentle, mark or drop |
//! | `prio` | `prio.rs` | strict priority of control packets over an inner discipline |
//! | `credit-shaper` | `credit.rs` | ExpressPass: credits behind a token bucket, ahead of an inner discipline |
//! | `rcp` | `rcp.rs` | RCP router: a rate per interval from spare capacity and queue, stamped into data |
//! | `phantom` | `phantom.rs` | HULL phantom queue: a counter drained at γ·C marks ECN before a queue forms |
//! | `ein` | `ein.rs` | Pulser: explicit incast notification from the queue's gradient, over an inner discipline |

mod credit;
mod droptail;
mod ecn;
mod ein;
mod phantom;
mod prio;
mod rcp;
mod red;

use core::fmt;
use core::str::FromStr;
use std::collections::VecDeque;

use dcsim_engine::spec::{self, Kind};
use dcsim_engine::units::{SIZE_UNITS, UnitError, parse_quantity};
use dcsim_engine::{ByteSize, Rate, RngTree, Time};
use serde::de::{self, DeserializeOwned};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use credit::{CreditShaper, CreditShaperConfig};
pub use droptail::{DropTail, DropTailConfig};
pub use ecn::{EcnConfig, EcnThreshold};
pub use ein::{EinConfig, EinPort, EinStats, Gradient, Hysteresis, QueueCount};
pub use phantom::{PhantomConfig, PhantomQueue};
pub use prio::{Prio, PrioConfig};
pub use rcp::{RcpRouter, RcpRouterConfig};
pub use red::{Red, RedConfig};

use crate::{Class, Ecn, Packet, PacketId, PacketPool};

/// Why a packet was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// The buffer is full.
    Overflow,
    /// An active queue management decision (RED early drop of a non-ECN packet).
    Aqm,
}

/// The outcome of [`QueueDisc::enqueue`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The discipline now holds the packet.
    Accept,
    /// Refused: the caller keeps ownership, frees the packet and counts the drop.
    Drop(DropReason),
}

/// What a queue discipline may touch while handling one packet.
pub struct QdiscCx<'a> {
    /// The current time.
    pub now: Time,
    /// The port's line rate.
    pub line_rate: Rate,
    /// The packet pool: read sizes and classes, set ECN, stamp rates.
    pub pool: &'a mut PacketPool,
    /// The port's ECN mark counter; use [`QdiscCx::mark_ce`], which counts consistently.
    pub marks: &'a mut u64,
}

impl QdiscCx<'_> {
    /// Sets CE on `pkt` if it is ECN-capable and counts the mark. Returns whether it marked;
    /// a non-ECT packet is left alone (the caller decides whether to drop it instead).
    #[inline]
    pub fn mark_ce(&mut self, pkt: PacketId) -> bool {
        mark_ce(self.pool.get_mut(pkt), self.marks)
    }
}

/// Sets CE on `p` if it is ECN-capable and adds one to `marks` if it was ECT; returns
/// whether the packet now carries CE.
#[inline]
pub(crate) fn mark_ce(p: &mut Packet, marks: &mut u64) -> bool {
    match p.ip.ecn() {
        Ecn::NotEct => false,
        Ecn::Ect => {
            p.ip.set_ecn(Ecn::Ce);
            *marks += 1;
            true
        }
        Ecn::Ce => true,
    }
}

/// The thresholds of a discipline that decides by the instantaneous backlog alone
/// ([`QueueDisc::thresholds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// A packet that would take the backlog beyond this is dropped (an overflow).
    pub buffer: Amount,
    /// An ECN-capable packet is CE-marked when the backlog before it has reached this.
    pub mark: Option<Amount>,
}

/// Admission, ordering and marking policy of one port.
pub trait QueueDisc {
    /// Offers a packet. On [`Verdict::Drop`] the caller still owns the packet.
    fn enqueue(&mut self, pkt: PacketId, cx: &mut QdiscCx<'_>) -> Verdict;
    /// The next packet to transmit. `None` means empty *or* nothing eligible yet (see
    /// [`QueueDisc::next_wakeup`]).
    fn dequeue(&mut self, cx: &mut QdiscCx<'_>) -> Option<PacketId>;
    /// Bytes (on the wire) held.
    fn backlog_bytes(&self) -> u64;
    /// Packets held.
    fn backlog_pkts(&self) -> u32;
    /// Earliest time the discipline becomes able to send without a new arrival (a token
    /// refill). The port schedules one wake-up for it when `dequeue` returned `None`.
    fn next_wakeup(&self, _now: Time) -> Option<Time> {
        None
    }
    /// Whether this is a single FIFO whose every decision is made in `enqueue`: `dequeue`
    /// always returns the oldest packet held, is never refused, and reads and changes
    /// nothing of the packet. The port then knows each accepted packet's departure time on
    /// arrival and needs no event to dequeue it: it calls `dequeue` lazily, before the next
    /// arrival or reading, with `cx.now` set to the time the packet's transmission started
    /// (so a discipline may still note when its queue empties, as RED does). Drop-tail, the
    /// ECN threshold and RED are; a discipline that reorders, shapes or decides at dequeue
    /// is not (the default).
    fn is_fifo(&self) -> bool {
        false
    }
    /// Called once on a FIFO port, before its first packet: the port keeps the packets in
    /// order itself and will call [`QueueDisc::depart`] instead of `dequeue`, so the
    /// discipline may stop storing IDs (a [`Fifo`] switches to [`Fifo::count_only`]).
    fn port_keeps_order(&mut self) {}
    /// Whether this FIFO decides every packet by thresholds on the instantaneous backlog
    /// alone, and which: drop-tail and the ECN threshold do. A FIFO port (see
    /// [`QueueDisc::is_fifo`]) then admits, drops and marks by these from its own backlog
    /// and never calls the discipline on the packet path (two calls per hop fewer), so
    /// the discipline's own counts stay at zero. `enqueue` must decide exactly as the
    /// thresholds say, which a test checks for each built-in discipline that has them.
    fn thresholds(&self) -> Option<Thresholds> {
        None
    }
    /// On a FIFO port: the oldest packet held, of `wire_bytes` on the wire, starts its
    /// transmission at `cx.now`. The default dequeues it.
    #[inline]
    fn depart(&mut self, wire_bytes: u32, cx: &mut QdiscCx<'_>) {
        let _ = wire_bytes;
        let taken = self.dequeue(cx);
        debug_assert!(taken.is_some(), "FIFO discipline lost a packet");
    }
}

/// A buffer limit or threshold, in bytes (`"150KB"`) or in packets (`"65pkts"`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum Amount {
    /// Wire bytes.
    Bytes(u64),
    /// Packets, whatever their size.
    Packets(u64),
}

impl Amount {
    /// Whether a queue holding `bytes` in `pkts` packets has reached this amount.
    #[inline]
    pub const fn reached_by(self, bytes: u64, pkts: u64) -> bool {
        match self {
            Self::Bytes(b) => bytes >= b,
            Self::Packets(n) => pkts >= n,
        }
    }
    /// Whether adding a packet of `size` to a queue of `bytes` / `pkts` would exceed this
    /// limit.
    #[inline]
    pub const fn exceeded_by(self, bytes: u64, pkts: u64, size: u64) -> bool {
        match self {
            Self::Bytes(b) => bytes + size > b,
            Self::Packets(n) => pkts + 1 > n,
        }
    }
    /// The amount in bytes, counting a packet as `pkt_bytes`.
    pub const fn as_bytes(self, pkt_bytes: u64) -> u64 {
        match self {
            Self::Bytes(b) => b,
            Self::Packets(n) => n * pkt_bytes,
        }
    }
}

impl FromStr for Amount {
    type Err = UnitError;
    fn from_str(s: &str) -> Result<Self, UnitError> {
        let t = s.trim();
        for suffix in ["packets", "packet", "pkts", "pkt"] {
            if let Some(n) = t.strip_suffix(suffix) {
                let n = n.trim();
                return n.parse::<u64>().map(Self::Packets).map_err(|_| UnitError {
                    input: s.to_string(),
                    reason: "expected a whole number of packets, such as \"65pkts\"".into(),
                });
            }
        }
        parse_quantity(s, SIZE_UNITS, "size")
            .map(Self::Bytes)
            .map_err(|mut e| {
                e.reason.push_str(", or a packet count such as \"65pkts\"");
                e
            })
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Bytes(b) => fmt::Display::fmt(&ByteSize(b), f),
            Self::Packets(n) => write!(f, "{n}pkts"),
        }
    }
}
impl fmt::Debug for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}
impl Serialize for Amount {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        const EXPECTING: &str = "a size such as \"375KB\" or a packet count such as \"250pkts\"";
        impl de::Visitor<'_> for V {
            type Value = Amount;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(EXPECTING)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Amount, E> {
                v.parse().map_err(E::custom)
            }
            // A bare number is refused with what to write instead: bytes or packets?
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Amount, E> {
                Err(E::custom(format!(
                    "{v} has no unit; write it as a string with a unit, e.g. {EXPECTING}"
                )))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Amount, E> {
                Err(E::custom(format!(
                    "{v} has no unit; write it as a string with a unit, e.g. {EXPECTING}"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

/// A FIFO of packet IDs with byte accounting: the storage every simple discipline uses.
///
/// Entries carry the packet's wire size so that dequeue does not touch the packet.
/// Push and pop are O(1); the ring buffer grows to the peak backlog and is then reused.
///
/// On a FIFO port the port keeps the packets in order itself ([`QueueDisc::port_keeps_order`]):
/// the FIFO then only counts ([`Fifo::count_only`]), and the port names each departure's
/// size ([`Fifo::take`]), so a hop touches one ring buffer instead of two.
#[derive(Default, Debug)]
pub struct Fifo {
    q: VecDeque<(PacketId, u32)>,
    bytes: u64,
    pkts: u32,
    counting: bool,
}

impl Fifo {
    /// Appends a packet of `wire_bytes`.
    #[inline]
    pub fn push(&mut self, pkt: PacketId, wire_bytes: u32) {
        if !self.counting {
            self.q.push_back((pkt, wire_bytes));
        }
        self.bytes += u64::from(wire_bytes);
        self.pkts += 1;
    }
    /// Removes the head packet (not in counting mode, which has no IDs).
    #[inline]
    pub fn pop(&mut self) -> Option<PacketId> {
        debug_assert!(!self.counting, "a counting FIFO has no packet IDs");
        let (p, b) = self.q.pop_front()?;
        self.bytes -= u64::from(b);
        self.pkts -= 1;
        Some(p)
    }
    /// Removes the head packet, whose wire size the caller knows to be `wire_bytes` (in
    /// either mode). Returns `false` if the FIFO was empty.
    #[inline]
    pub fn take(&mut self, wire_bytes: u32) -> bool {
        if self.pkts == 0 {
            return false;
        }
        if !self.counting {
            let (_, b) = self.q.pop_front().expect("counted packets are stored");
            debug_assert_eq!(b, wire_bytes, "the FIFO's head has another size");
        }
        self.bytes -= u64::from(wire_bytes);
        self.pkts -= 1;
        true
    }
    /// From now on only counts: stores no IDs ([`Fifo::pop`] is then not available).
    /// Only while empty.
    pub fn count_only(&mut self) {
        debug_assert_eq!(self.pkts, 0, "switching a non-empty FIFO to counting");
        self.counting = true;
        self.q = VecDeque::new();
    }
    /// The head packet and its wire size (not in counting mode).
    #[inline]
    pub fn peek(&self) -> Option<(PacketId, u32)> {
        debug_assert!(!self.counting, "a counting FIFO has no packet IDs");
        self.q.front().copied()
    }
    /// Bytes held.
    #[inline]
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// Packets held.
    #[inline]
    pub fn len(&self) -> u32 {
        self.pkts
    }
    /// Whether empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pkts == 0
    }
    /// Whether a packet of `wire_bytes` fits under `limit`.
    #[inline]
    pub fn fits(&self, limit: Amount, wire_bytes: u32) -> bool {
        !limit.exceeded_by(self.bytes, u64::from(self.pkts), u64::from(wire_bytes))
    }
}

/// A queue discipline that scenarios can name: its name, its parameters and how to build
/// it. Implementing this in the discipline's own file and adding one line to the
/// `disciplines!` registry below is all a new discipline needs; the scenario syntax,
/// validation, `dcsim list` and dispatch all come from here.
pub trait Discipline: QueueDisc + Sized {
    /// Name in scenario files (`kind = "red"`).
    const NAME: &'static str;
    /// One line for `dcsim list`.
    const ABOUT: &'static str;
    /// Parameters; `Default` gives the documented defaults where a parameter has one.
    type Config: Clone + fmt::Debug + PartialEq + Serialize + DeserializeOwned;
    /// The discipline of one port.
    fn build(cfg: &Self::Config, cx: &BuildCx<'_>) -> Self;
    /// Checks parameter ranges; the error starts with the parameter's name.
    fn validate(_cfg: &Self::Config) -> Result<(), String> {
        Ok(())
    }
    /// What ports with this discipline do besides queueing, including what its inner
    /// disciplines do.
    fn features(_cfg: &Self::Config) -> PortFeatures {
        PortFeatures::empty()
    }
}

/// A boxed discipline is registered like the discipline itself (large or rare disciplines
/// are boxed so that ports stay small).
impl<T: Discipline> Discipline for Box<T> {
    const NAME: &'static str = T::NAME;
    const ABOUT: &'static str = T::ABOUT;
    type Config = T::Config;
    fn build(cfg: &Self::Config, cx: &BuildCx<'_>) -> Self {
        Self::new(T::build(cfg, cx))
    }
    fn validate(cfg: &Self::Config) -> Result<(), String> {
        T::validate(cfg)
    }
    fn features(cfg: &Self::Config) -> PortFeatures {
        T::features(cfg)
    }
}

impl<T: QueueDisc + ?Sized> QueueDisc for Box<T> {
    #[inline]
    fn enqueue(&mut self, pkt: PacketId, cx: &mut QdiscCx<'_>) -> Verdict {
        (**self).enqueue(pkt, cx)
    }
    #[inline]
    fn dequeue(&mut self, cx: &mut QdiscCx<'_>) -> Option<PacketId> {
        (**self).dequeue(cx)
    }
    #[inline]
    fn backlog_bytes(&self) -> u64 {
        (**self).backlog_bytes()
    }
    #[inline]
    fn backlog_pkts(&self) -> u32 {
        (**self).backlog_pkts()
    }
    #[inline]
    fn next_wakeup(&self, now: Time) -> Option<Time> {
        (**self).next_wakeup(now)
    }
    fn is_fifo(&self) -> bool {
        (**self).is_fifo()
    }
    fn port_keeps_order(&mut self) {
        (**self).port_keeps_order();
    }
    fn thresholds(&self) -> Option<Thresholds> {
        (**self).thresholds()
    }
    #[inline]
    fn depart(&mut self, wire_bytes: u32, cx: &mut QdiscCx<'_>) {
        (**self).depart(wire_bytes, cx);
    }
}

bitflags::bitflags! {
    /// What a port does besides queueing, for protocols that need it of every port
    /// (declared by the discipline, checked against the transports' needs when a scenario
    /// is built).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct PortFeatures: u32 {
        /// Credits are rate-limited to their share of the link (ExpressPass).
        const CREDIT_SHAPING = 1;
        /// Data packets leave with a rate stamp computed by the port (RCP).
        const RATE_STAMPING = 2;
        /// ECN marks come from a phantom queue drained below the line rate (HULL).
        const PHANTOM_MARKING = 4;
        /// Data packets leave with an explicit incast notification when the queue grows
        /// steeply (Pulser).
        const INCAST_NOTIFICATION = 8;
    }
}

impl PortFeatures {
    /// What each feature is called in messages, and a discipline that provides it.
    pub const DESCRIPTIONS: &'static [(Self, &'static str, &'static str)] = &[
        (Self::CREDIT_SHAPING, "credit shaping", "credit-shaper"),
        (Self::RATE_STAMPING, "rate stamping", "rcp"),
        (Self::PHANTOM_MARKING, "phantom-queue marking", "phantom"),
        (
            Self::INCAST_NOTIFICATION,
            "explicit incast notification",
            "ein",
        ),
    ];
}

impl QdiscSpec {
    /// The discipline that provides `feature` (one of [`PortFeatures::DESCRIPTIONS`]), with
    /// its default parameters, around `inner`: how a scenario gets the ports a transport
    /// needs without naming them.
    pub fn providing(feature: PortFeatures, inner: Self) -> Option<Self> {
        let inner = Box::new(inner);
        if feature == PortFeatures::CREDIT_SHAPING {
            Some(Self::Credit(CreditShaperConfig {
                inner,
                ..CreditShaperConfig::default()
            }))
        } else if feature == PortFeatures::RATE_STAMPING {
            Some(Self::Rcp(RcpRouterConfig {
                inner,
                ..RcpRouterConfig::default()
            }))
        } else if feature == PortFeatures::PHANTOM_MARKING {
            Some(Self::Phantom(PhantomConfig {
                inner,
                ..PhantomConfig::default()
            }))
        } else if feature == PortFeatures::INCAST_NOTIFICATION {
            Some(Self::Ein(EinConfig {
                inner,
                ..EinConfig::default()
            }))
        } else {
            None
        }
    }
}

/// What building a port's discipline may use.
pub struct BuildCx<'a> {
    /// The run's random streams; a discipline draws from its stream for this port.
    pub rng: &'a RngTree,
    /// The port's number.
    pub port: u64,
    /// The port's line rate.
    pub line: Rate,
}

impl BuildCx<'_> {
    /// Builds an inner discipline of the same port.
    pub fn inner(&self, spec: &QdiscSpec) -> Qdisc {
        spec.build(self.rng, self.port, self.line)
    }
}

/// The registry: one line per discipline, `Variant(path::Type)` (a `Box` for large or rare
/// ones). Generates [`Qdisc`] (static dispatch, plus `Custom` for disciplines out of tree)
/// and [`QdiscSpec`] (the scenario syntax).
macro_rules! disciplines {
    ($($(#[$doc:meta])* $V:ident($T:ty)),+ $(,)?) => {
        /// Statically dispatched queue discipline of a port.
        pub enum Qdisc {
            $($(#[$doc])* $V($T),)+
            /// A discipline from outside this crate.
            Custom(Box<dyn QueueDisc + Send>),
        }

        impl Qdisc {
            /// The discipline's name (`"custom"` for one from outside the registry).
            pub fn name(&self) -> &'static str {
                match self {
                    $(Self::$V(_) => <$T as Discipline>::NAME,)+
                    Self::Custom(_) => "custom",
                }
            }
        }

        impl QueueDisc for Qdisc {
            #[inline]
            fn enqueue(&mut self, pkt: PacketId, cx: &mut QdiscCx<'_>) -> Verdict {
                match self { $(Self::$V(q) => q.enqueue(pkt, cx),)+ Self::Custom(q) => q.enqueue(pkt, cx) }
            }
            #[inline]
            fn dequeue(&mut self, cx: &mut QdiscCx<'_>) -> Option<PacketId> {
                match self { $(Self::$V(q) => q.dequeue(cx),)+ Self::Custom(q) => q.dequeue(cx) }
            }
            #[inline]
            fn backlog_bytes(&self) -> u64 {
                match self { $(Self::$V(q) => q.backlog_bytes(),)+ Self::Custom(q) => q.backlog_bytes() }
            }
            #[inline]
            fn backlog_pkts(&self) -> u32 {
                match self { $(Self::$V(q) => q.backlog_pkts(),)+ Self::Custom(q) => q.backlog_pkts() }
            }
            #[inline]
            fn next_wakeup(&self, now: Time) -> Option<Time> {
                match self { $(Self::$V(q) => q.next_wakeup(now),)+ Self::Custom(q) => q.next_wakeup(now) }
            }
            fn is_fifo(&self) -> bool {
                match self { $(Self::$V(q) => q.is_fifo(),)+ Self::Custom(q) => q.is_fifo() }
            }
            fn port_keeps_order(&mut self) {
                match self { $(Self::$V(q) => q.port_keeps_order(),)+ Self::Custom(q) => q.port_keeps_order() }
            }
            fn thresholds(&self) -> Option<Thresholds> {
                match self { $(Self::$V(q) => q.thresholds(),)+ Self::Custom(q) => q.thresholds() }
            }
            #[inline]
            fn depart(&mut self, wire_bytes: u32, cx: &mut QdiscCx<'_>) {
                match self { $(Self::$V(q) => q.depart(wire_bytes, cx),)+ Self::Custom(q) => q.depart(wire_bytes, cx) }
            }
        }

        /// A queue discipline as written in a scenario file (`kind = "..."`).
        #[derive(Clone, Debug, PartialEq)]
        pub enum QdiscSpec {
            $($(#[$doc])* $V(<$T as Discipline>::Config),)+
        }

        impl QdiscSpec {
            /// The disciplines a scenario can name, in registration order.
            pub const KINDS: &'static [Kind] = &[$(Kind {
                name: <$T as Discipline>::NAME,
                about: <$T as Discipline>::ABOUT,
            }),+];
            const NAMES: &'static [&'static str] = &[$(<$T as Discipline>::NAME),+];

            /// The discipline's name.
            pub fn name(&self) -> &'static str {
                match self { $(Self::$V(_) => <$T as Discipline>::NAME,)+ }
            }
            /// Builds the discipline for port `port_index` on a link of `line` rate, drawing
            /// any randomness from `rng`'s streams for that port.
            pub fn build(&self, rng: &RngTree, port_index: u64, line: Rate) -> Qdisc {
                let cx = BuildCx { rng, port: port_index, line };
                match self { $(Self::$V(c) => Qdisc::$V(<$T as Discipline>::build(c, &cx)),)+ }
            }
            /// Checks parameter ranges; the error names the offending field.
            pub fn validate(&self) -> Result<(), String> {
                match self { $(Self::$V(c) => <$T as Discipline>::validate(c),)+ }
            }
            /// What ports with this discipline do besides queueing.
            pub fn features(&self) -> PortFeatures {
                match self { $(Self::$V(c) => <$T as Discipline>::features(c),)+ }
            }
        }

        impl Serialize for QdiscSpec {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(Self::$V(c) => spec::serialize_tagged(<$T as Discipline>::NAME, c, s),)+
                }
            }
        }

        impl<'de> Deserialize<'de> for QdiscSpec {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                spec::deserialize_tagged(d, Self::NAMES, |kind, params| {
                    $(if kind == <$T as Discipline>::NAME {
                        return spec::params(params).map(Self::$V);
                    })+
                    Err(de::Error::custom(format_args!("no queue discipline {kind:?}")))
                })
            }
        }
    };
}

disciplines! {
    /// See [`DropTail`].
    DropTail(DropTail),
    /// See [`EcnThreshold`].
    // Boxed although small: a FIFO port applies its thresholds itself and never reaches
    // it, and inline it made `Qdisc` 80 bytes and the port seven lines.
    Ecn(Box<EcnThreshold>),
    /// See [`Red`].
    Red(Box<Red>),
    /// See [`Prio`].
    Prio(Box<Prio>),
    /// See [`CreditShaper`].
    Credit(Box<CreditShaper>),
    /// See [`RcpRouter`].
    Rcp(Box<RcpRouter>),
    /// See [`PhantomQueue`].
    Phantom(Box<PhantomQueue>),
    /// See [`EinPort`].
    Ein(Box<EinPort>),
}

/// Checks that a buffer or threshold is not zero.
pub(crate) fn nonzero(a: &Amount, name: &str) -> Result<(), String> {
    match a {
        Amount::Bytes(0) | Amount::Packets(0) => Err(format!("{name}: must be greater than zero")),
        _ => Ok(()),
    }
}

/// A data buffer: nonzero, and in bytes at least one full frame (a smaller one could never
/// accept a full-sized data packet, and a drained run would never end).
pub(crate) fn holds_a_frame(a: &Amount, name: &str) -> Result<(), String> {
    nonzero(a, name)?;
    match a {
        Amount::Bytes(b) if *b < u64::from(crate::wire::MAX_WIRE_BYTES) => Err(format!(
            "{name}: {b} B cannot hold one full frame ({} B on the wire)",
            crate::wire::MAX_WIRE_BYTES
        )),
        _ => Ok(()),
    }
}

/// Class of `pkt`; a helper for disciplines that classify.
#[inline]
pub(crate) fn class_of(pool: &PacketPool, pkt: PacketId) -> (Class, u32) {
    let p = pool.get(pkt);
    (p.class, u32::from(p.wire_bytes))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::testkit::QdiscDriver;

    /// Every feature a transport may need has a discipline that provides it around any
    /// other, the one its description names.
    #[test]
    fn every_feature_has_a_discipline_providing_it() {
        let inner = QdiscSpec::DropTail(DropTailConfig {
            buffer: Amount::Packets(7),
        });
        for &(feature, _, kind) in PortFeatures::DESCRIPTIONS {
            let q = QdiscSpec::providing(feature, inner.clone()).unwrap();
            assert_eq!(q.name(), kind);
            assert!(q.features().contains(feature), "{kind}");
            assert!(toml::to_string(&q).unwrap().contains("7pkts"), "{kind}");
            q.validate().unwrap();
        }
        assert!(QdiscSpec::providing(PortFeatures::empty(), inner).is_none());
    }

    #[test]
    fn a_counting_fifo_counts_as_a_storing_one() {
        let (mut stored, mut counted) = (Fifo::default(), Fifo::default());
        counted.count_only();
        for (i, size) in [1538, 84, 1538, 300].into_iter().enumerate() {
            stored.push(PacketId(i as u32), size);
            counted.push(PacketId(i as u32), size);
        }
        assert_eq!((counted.len(), counted.bytes()), (4, 3460));
        assert!(!counted.fits(Amount::Packets(4), 84));
        assert!(counted.fits(Amount::Bytes(3460 + 84), 84));
        assert_eq!(stored.pop(), Some(PacketId(0)));
        assert!(counted.take(1538));
        assert!(stored.take(84), "take works on a storing FIFO too");
        assert!(counted.take(84));
        assert_eq!(stored.peek(), Some((PacketId(2), 1538)));
        assert_eq!(
            (counted.len(), counted.bytes()),
            (stored.len(), stored.bytes())
        );
        assert!(counted.take(1538) && counted.take(300));
        assert!(
            counted.is_empty() && !counted.take(84),
            "nothing left to take"
        );
    }

    #[test]
    fn amount_parses_bytes_and_packets() {
        assert_eq!("65pkts".parse::<Amount>().unwrap(), Amount::Packets(65));
        assert_eq!("65 packets".parse::<Amount>().unwrap(), Amount::Packets(65));
        assert_eq!("150KB".parse::<Amount>().unwrap(), Amount::Bytes(150_000));
        assert!("65pk".parse::<Amount>().is_err());
        assert!("1.5pkts".parse::<Amount>().is_err());
    }

    fn all_kinds() -> Vec<QdiscSpec> {
        let b = Amount::Bytes(20_000);
        vec![
            QdiscSpec::DropTail(DropTailConfig { buffer: b }),
            QdiscSpec::Ecn(EcnConfig {
                buffer: b,
                mark_threshold: Amount::Packets(5),
            }),
            QdiscSpec::Red(RedConfig::dctcp_like(b, Amount::Packets(5))),
            QdiscSpec::Red(RedConfig {
                buffer: b,
                ..RedConfig::default()
            }),
            QdiscSpec::Credit(CreditShaperConfig {
                inner: Box::new(QdiscSpec::DropTail(DropTailConfig { buffer: b })),
                ..CreditShaperConfig::default()
            }),
            QdiscSpec::Phantom(PhantomConfig {
                inner: Box::new(QdiscSpec::DropTail(DropTailConfig { buffer: b })),
                ..PhantomConfig::default()
            }),
            QdiscSpec::Ein(EinConfig {
                inner: Box::new(QdiscSpec::Ecn(EcnConfig {
                    buffer: b,
                    mark_threshold: Amount::Packets(5),
                })),
                ..EinConfig::default()
            }),
            QdiscSpec::Rcp(RcpRouterConfig {
                inner: Box::new(QdiscSpec::DropTail(DropTailConfig { buffer: b })),
                ..RcpRouterConfig::default()
            }),
            QdiscSpec::Prio(PrioConfig {
                control_buffer: Amount::Packets(4),
                inner: Box::new(QdiscSpec::Ecn(EcnConfig {
                    buffer: b,
                    mark_threshold: Amount::Packets(5),
                })),
            }),
        ]
    }

    /// Every registered discipline appears in the property test's list, has a unique name,
    /// validates, prints with `kind` first and reads back unchanged.
    #[test]
    fn every_registered_discipline_is_tested_and_reads_back() {
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct Doc {
            queue: QdiscSpec,
        }
        let specs = all_kinds();
        for k in QdiscSpec::KINDS {
            assert!(
                specs.iter().any(|s| s.name() == k.name),
                "{} untested",
                k.name
            );
            assert_eq!(
                QdiscSpec::KINDS.iter().filter(|o| o.name == k.name).count(),
                1
            );
        }
        for spec in specs {
            spec.validate().unwrap();
            let text = toml::to_string(&Doc {
                queue: spec.clone(),
            })
            .unwrap();
            assert!(
                text.starts_with(&format!("[queue]\nkind = \"{}\"", spec.name())),
                "{text}"
            );
            assert_eq!(toml::from_str::<Doc>(&text).unwrap().queue, spec);
            let q = spec.build(&RngTree::new(1), 0, Rate::from_gbps(10));
            assert_eq!(q.name(), spec.name());
        }
    }

    proptest! {
        /// For every discipline, under random arrivals and departures:
        /// enqueued = dequeued + backlog, and the backlog never exceeds the buffer.
        #[test]
        fn every_qdisc_conserves_packets_and_respects_its_buffer(
            ops in proptest::collection::vec((any::<bool>(), 64u32..1600, 0u8..3), 1..600)
        ) {
            for spec in all_kinds() {
                let mut q = spec.build(&RngTree::new(1), 0, Rate::from_gbps(10));
                let mut d = QdiscDriver::new();
                let mut out = Vec::new();
                for &(arrive, size, class) in &ops {
                    d.now = Time(d.now.0 + 100_000);
                    if arrive {
                        let class = [Class::Data, Class::Control, Class::Credit][class as usize];
                        d.offer(&mut q, size, class, Ecn::Ect);
                    } else if let Some(p) = d.take(&mut q) {
                        out.push(p);
                    }
                    prop_assert_eq!(d.enqueued, d.dequeued + u64::from(q.backlog_pkts()), "{}", q.name());
                    // 20 KB of data, plus at most 8 credits or 4 control packets in a side queue.
                    prop_assert!(q.backlog_bytes() <= 20_000 + 8 * 1600, "{}", q.name());
                }
                for p in out { d.pool.free(p); }
            }
        }
    }
}
