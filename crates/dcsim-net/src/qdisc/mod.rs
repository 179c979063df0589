//! Queue disciplines: the policy inside a port.
//!
//! A [`crate::Port`] owns the mechanism (transmitter, its one pending event, counters,
//! freeing dropped packets); a queue discipline owns only admission, ordering and marking
//! ([`QueueDisc`]). Adding one means a new file here implementing the trait, one variant in
//! [`Qdisc`] and one in [`QdiscSpec`].
//!
//! | kind | file | what it does |
//! |---|---|---|
//! | `droptail` | `droptail.rs` | FIFO, tail drop at a byte or packet limit |
//! | `ecn` | `ecn.rs` | drop-tail plus DCTCP-style marking when the instantaneous queue ≥ K |
//! | `red` | `red.rs` | Floyd–Jacobson RED: EWMA average, linear ramp, count spacing, gentle, mark or drop |
//! | `prio` | `prio.rs` | strict priority of control packets over an inner discipline |

mod credit;
mod droptail;
mod ecn;
mod prio;
mod red;

use core::fmt;
use core::str::FromStr;
use std::collections::VecDeque;

use dcsim_engine::units::{SIZE_UNITS, UnitError, parse_quantity};
use dcsim_engine::{ByteSize, Rate, RngTree, Time};
use serde::{Deserialize, Serialize};

pub use credit::{CreditShaper, CreditShaperSpec};
pub use droptail::DropTail;
pub use ecn::EcnThreshold;
pub use prio::Prio;
pub use red::{Red, RedSpec};

use crate::{Class, Ecn, PacketId, PacketPool};

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
        let p = self.pool.get_mut(pkt);
        match p.ecn {
            Ecn::NotEct => false,
            Ecn::Ect => {
                p.ecn = Ecn::Ce;
                *self.marks += 1;
                true
            }
            Ecn::Ce => true,
        }
    }
}

/// Admission, ordering and marking policy of one port.
pub trait QueueDisc {
    /// Stable lowercase name used in scenario files and output ("red").
    fn name(&self) -> &'static str;
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
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}
impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// A FIFO of packet IDs with byte accounting: the storage every simple discipline uses.
///
/// Entries carry the packet's wire size so that dequeue does not touch the packet.
/// Push and pop are O(1); the ring buffer grows to the peak backlog and is then reused.
#[derive(Default, Debug)]
pub struct Fifo {
    q: VecDeque<(PacketId, u32)>,
    bytes: u64,
}

impl Fifo {
    /// Appends a packet of `wire_bytes`.
    #[inline]
    pub fn push(&mut self, pkt: PacketId, wire_bytes: u32) {
        self.q.push_back((pkt, wire_bytes));
        self.bytes += u64::from(wire_bytes);
    }
    /// Removes the head packet.
    #[inline]
    pub fn pop(&mut self) -> Option<PacketId> {
        let (p, b) = self.q.pop_front()?;
        self.bytes -= u64::from(b);
        Some(p)
    }
    /// The head packet and its wire size.
    #[inline]
    pub fn peek(&self) -> Option<(PacketId, u32)> {
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
        self.q.len() as u32
    }
    /// Whether empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    /// Whether a packet of `wire_bytes` fits under `limit`.
    #[inline]
    pub fn fits(&self, limit: Amount, wire_bytes: u32) -> bool {
        !limit.exceeded_by(self.bytes, self.q.len() as u64, u64::from(wire_bytes))
    }
}

/// Statically dispatched queue discipline of a port.
pub enum Qdisc {
    /// See [`DropTail`].
    DropTail(DropTail),
    /// See [`EcnThreshold`].
    Ecn(EcnThreshold),
    /// See [`Red`] (boxed: it is large and rare, and ports stay small).
    Red(Box<Red>),
    /// See [`Prio`].
    Prio(Box<Prio>),
    /// See [`CreditShaper`].
    Credit(Box<CreditShaper>),
    /// Out-of-tree disciplines.
    Custom(Box<dyn QueueDisc + Send>),
}

macro_rules! forward {
    ($self:ident, $q:ident => $e:expr) => {
        match $self {
            Qdisc::DropTail($q) => $e,
            Qdisc::Ecn($q) => $e,
            Qdisc::Red($q) => $e,
            Qdisc::Prio($q) => $e,
            Qdisc::Credit($q) => $e,
            Qdisc::Custom($q) => $e,
        }
    };
}

impl QueueDisc for Qdisc {
    fn name(&self) -> &'static str {
        forward!(self, q => q.name())
    }
    #[inline]
    fn enqueue(&mut self, pkt: PacketId, cx: &mut QdiscCx<'_>) -> Verdict {
        forward!(self, q => q.enqueue(pkt, cx))
    }
    #[inline]
    fn dequeue(&mut self, cx: &mut QdiscCx<'_>) -> Option<PacketId> {
        forward!(self, q => q.dequeue(cx))
    }
    #[inline]
    fn backlog_bytes(&self) -> u64 {
        forward!(self, q => q.backlog_bytes())
    }
    #[inline]
    fn backlog_pkts(&self) -> u32 {
        forward!(self, q => q.backlog_pkts())
    }
    #[inline]
    fn next_wakeup(&self, now: Time) -> Option<Time> {
        forward!(self, q => q.next_wakeup(now))
    }
    fn is_fifo(&self) -> bool {
        forward!(self, q => q.is_fifo())
    }
}

/// A queue discipline as written in a scenario file (`kind = "..."`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum QdiscSpec {
    /// Tail drop at `buffer`.
    Droptail {
        /// Buffer limit (bytes or packets).
        buffer: Amount,
    },
    /// Tail drop at `buffer`; CE-mark ECT packets arriving when the queue holds at least
    /// `mark_threshold` (DCTCP's K).
    Ecn {
        /// Buffer limit.
        buffer: Amount,
        /// DCTCP's K: mark when the instantaneous queue, before this packet, is ≥ K.
        mark_threshold: Amount,
    },
    /// Random early detection.
    Red(RedSpec),
    /// ExpressPass credit shaper: credits behind a token bucket at the credit share of the
    /// line rate, ahead of `inner` for everything else.
    CreditShaper(CreditShaperSpec),
    /// Control-class packets (ACKs, signalling) in a strict-priority band ahead of `inner`.
    Prio {
        /// Limit of the control band.
        control_buffer: Amount,
        /// Discipline for everything else.
        inner: Box<Self>,
    },
}

impl QdiscSpec {
    /// Builds the discipline for port `port_index` on a link of `line` rate, drawing any
    /// randomness from `rng`'s stream for that port.
    pub fn build(&self, rng: &RngTree, port_index: u64, line: Rate) -> Qdisc {
        match self {
            Self::Droptail { buffer } => Qdisc::DropTail(DropTail::new(*buffer)),
            Self::Ecn {
                buffer,
                mark_threshold,
            } => Qdisc::Ecn(EcnThreshold::new(*buffer, *mark_threshold)),
            Self::Red(spec) => Qdisc::Red(Box::new(Red::new(
                spec.clone(),
                rng.stream("red", port_index),
            ))),
            Self::Prio {
                control_buffer,
                inner,
            } => Qdisc::Prio(Box::new(Prio::new(
                *control_buffer,
                inner.build(rng, port_index, line),
            ))),
            Self::CreditShaper(spec) => {
                let inner = spec.inner.build(rng, port_index, line);
                Qdisc::Credit(Box::new(spec.build(inner, line)))
            }
        }
    }

    /// Checks parameter ranges; the error names the offending field.
    pub fn validate(&self) -> Result<(), String> {
        let nonzero = |a: &Amount, name: &str| match a {
            Amount::Bytes(0) | Amount::Packets(0) => {
                Err(format!("{name}: must be greater than zero"))
            }
            _ => Ok(()),
        };
        match self {
            Self::Droptail { buffer } => nonzero(buffer, "buffer"),
            Self::Ecn { buffer, .. } => nonzero(buffer, "buffer"),
            Self::Red(r) => {
                nonzero(&r.buffer, "buffer")?;
                r.validate()
            }
            Self::Prio {
                control_buffer,
                inner,
            } => {
                nonzero(control_buffer, "control_buffer")?;
                inner.validate().map_err(|e| format!("inner.{e}"))
            }
            Self::CreditShaper(spec) => {
                nonzero(&spec.credit_buffer, "credit_buffer")?;
                spec.validate()
            }
        }
    }

    /// Whether ports with this discipline shape credits (ExpressPass needs it everywhere).
    pub fn shapes_credits(&self) -> bool {
        match self {
            Self::CreditShaper(_) => true,
            Self::Prio { inner, .. } => inner.shapes_credits(),
            _ => false,
        }
    }

    /// The kinds a scenario can name, with one-line descriptions (for `dcsim list`).
    pub const KINDS: &'static [(&'static str, &'static str)] = &[
        ("droptail", "FIFO with tail drop at a byte or packet limit"),
        (
            "ecn",
            "drop-tail plus CE marking when the instantaneous queue >= K (DCTCP)",
        ),
        (
            "red",
            "RED: EWMA average, linear ramp, count spacing, gentle mode, mark or drop",
        ),
        (
            "prio",
            "strict priority of control packets (ACKs, signalling) over an inner discipline",
        ),
        (
            "credit-shaper",
            "ExpressPass: credit queue + token bucket at 84/(84+1538) of the line, then data",
        ),
    ];
}

/// Class of `pkt`; a helper for disciplines that classify.
#[inline]
pub(crate) fn class_of(pool: &PacketPool, pkt: PacketId) -> (Class, u32) {
    let p = pool.get(pkt);
    (p.class, p.wire_bytes)
}

#[cfg(test)]
pub(crate) mod testing {
    //! A tiny driver: offers packets to a discipline and records what happened.
    use super::*;
    use crate::Packet;

    pub(crate) struct Driver {
        pub pool: PacketPool,
        pub marks: u64,
        pub now: Time,
        pub rate: Rate,
        pub enqueued: u64,
        pub dequeued: u64,
        pub dropped: u64,
    }

    impl Driver {
        pub(crate) fn new() -> Self {
            Self {
                pool: PacketPool::new(),
                marks: 0,
                now: Time::ZERO,
                rate: Rate::from_gbps(10),
                enqueued: 0,
                dequeued: 0,
                dropped: 0,
            }
        }
        pub(crate) fn offer(
            &mut self,
            q: &mut impl QueueDisc,
            wire: u32,
            class: Class,
            ecn: Ecn,
        ) -> Verdict {
            let pkt = self.pool.alloc(Packet {
                wire_bytes: wire,
                class,
                ecn,
                ..Packet::default()
            });
            let mut cx = QdiscCx {
                now: self.now,
                line_rate: self.rate,
                pool: &mut self.pool,
                marks: &mut self.marks,
            };
            let v = q.enqueue(pkt, &mut cx);
            match v {
                Verdict::Accept => self.enqueued += 1,
                Verdict::Drop(_) => {
                    self.dropped += 1;
                    self.pool.free(pkt);
                }
            }
            v
        }
        pub(crate) fn take(&mut self, q: &mut impl QueueDisc) -> Option<PacketId> {
            let mut cx = QdiscCx {
                now: self.now,
                line_rate: self.rate,
                pool: &mut self.pool,
                marks: &mut self.marks,
            };
            let p = q.dequeue(&mut cx)?;
            self.dequeued += 1;
            Some(p)
        }
        pub(crate) fn ecn_of(&self, p: PacketId) -> Ecn {
            self.pool.get(p).ecn
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::testing::Driver;
    use super::*;

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
            QdiscSpec::Droptail { buffer: b },
            QdiscSpec::Ecn {
                buffer: b,
                mark_threshold: Amount::Packets(5),
            },
            QdiscSpec::Red(RedSpec::dctcp_like(b, Amount::Packets(5))),
            QdiscSpec::Red(RedSpec {
                buffer: b,
                ..RedSpec::default()
            }),
            QdiscSpec::CreditShaper(CreditShaperSpec {
                inner: Box::new(QdiscSpec::Droptail { buffer: b }),
                ..CreditShaperSpec::default()
            }),
            QdiscSpec::Prio {
                control_buffer: Amount::Packets(4),
                inner: Box::new(QdiscSpec::Ecn {
                    buffer: b,
                    mark_threshold: Amount::Packets(5),
                }),
            },
        ]
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
                let mut d = Driver::new();
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
