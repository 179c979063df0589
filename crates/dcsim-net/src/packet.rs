//! Packets and the packet pool.
//!
//! Packets live in a [`PacketPool`] (a slab with a free list); everything else passes a
//! 4-byte [`PacketId`]. A packet is never cloned and is freed exactly once: by the port that
//! drops it or by the endpoint that consumes it. Debug builds track liveness to catch
//! double frees and use after free.
//!
//! The header is generic: the network reads only `route`, `hop`, `next`, `dst`, `class`,
//! `ip`, `wire_bytes`, `rate` and `queue_delay_ns`. The transport fields (`seq`, `ack`,
//! `sent_at`, `echo`, `flags`, `payload_bytes`) mean whatever the transport that owns `flow`
//! says they mean. The layout and its 64-byte budget are explained in
//! `docs/adr/0004-packet-header-budget.md`.

use dcsim_engine::{Rate, Time, define_id};

use crate::{HostId, PortId, RouteId};

define_id!(
    /// A packet slot in the [`PacketPool`].
    PacketId
);
define_id!(
    /// A flow: the endpoints' handle for demultiplexing packets. Opaque to the network.
    FlowId
);

/// Traffic class, set by the transport; queue disciplines classify and prioritise by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Class {
    /// Payload-carrying packets.
    #[default]
    Data = 0,
    /// Acknowledgements and signalling (ACK, NACK, credit request and stop).
    Control = 1,
    /// ExpressPass credits.
    Credit = 2,
}

impl Class {
    /// Number of classes, for per-class counter arrays.
    pub const COUNT: usize = 3;
    /// Every class, in counter-array order.
    pub const ALL: [Self; Self::COUNT] = [Self::Data, Self::Control, Self::Credit];
    /// Lowercase name for output columns.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Data => "data",
            Self::Control => "control",
            Self::Credit => "credit",
        }
    }
}

/// The IP ECN field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Ecn {
    /// Not ECN-capable: AQMs drop instead of marking.
    #[default]
    NotEct = 0,
    /// ECN-capable transport.
    Ect = 1,
    /// Congestion experienced.
    Ce = 3,
}

/// The network-signal byte of the IP header: the ECN field (bits 0–1, [`Ecn`]) and Pulser's
/// explicit incast notification (EIN, bit 2; Almasi et al.), both set by switch ports and
/// echoed by transports, and whether the packet has options beside its header (bit 3,
/// [`PacketExt`]). A transport sets the ECN field it sends with; the network only ever adds
/// CE and EIN.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IpBits(u8);

impl IpBits {
    const ECN_MASK: u8 = 0b11;
    const EIN: u8 = 0b100;
    const EXT: u8 = 0b1000;
    const RATE_REQUEST: u8 = 0b1_0000;

    /// Not ECN-capable, no incast notification.
    pub const NOT_ECT: Self = Self(Ecn::NotEct as u8);
    /// ECN-capable, no incast notification.
    pub const ECT: Self = Self(Ecn::Ect as u8);

    /// The bits of a packet sent with ECN field `ecn`.
    pub const fn new(ecn: Ecn) -> Self {
        Self(ecn as u8)
    }
    /// The ECN field.
    #[inline]
    pub fn ecn(self) -> Ecn {
        match self.0 & Self::ECN_MASK {
            0 => Ecn::NotEct,
            3 => Ecn::Ce,
            _ => Ecn::Ect,
        }
    }
    /// Sets the ECN field.
    #[inline]
    pub fn set_ecn(&mut self, ecn: Ecn) {
        self.0 = (self.0 & !Self::ECN_MASK) | ecn as u8;
    }
    /// Whether a control packet asks the ports on its path to stamp their rate into it as
    /// they stamp data ([`Packet::rate`]; RCP's SYN, Dukkipati and McKeown 2006). Its
    /// answer carries the stamp back without this bit, so no port changes the echo.
    #[inline]
    pub fn wants_rate(self) -> bool {
        self.0 & Self::RATE_REQUEST != 0
    }
    /// The same bits asking for rate stamps.
    #[must_use]
    pub const fn with_rate_request(self) -> Self {
        Self(self.0 | Self::RATE_REQUEST)
    }
    /// Whether a port set the explicit incast notification.
    #[inline]
    pub fn ein(self) -> bool {
        self.0 & Self::EIN != 0
    }
    /// Sets the explicit incast notification.
    #[inline]
    pub fn set_ein(&mut self) {
        self.0 |= Self::EIN;
    }
    /// Whether the packet carries options beside its header ([`PacketPool::ext`]).
    #[inline]
    pub fn has_ext(self) -> bool {
        self.0 & Self::EXT != 0
    }
}

/// Transport options that do not fit the 64-byte header, kept beside it in the packet's
/// pool slot (ADR 0004): 32 bytes whose meaning the transport that owns the packet sets.
/// TCP carries its SACK blocks here, as offsets from the acknowledgement number. Only
/// packets sent with [`PacketPool::alloc_with_ext`] have them ([`IpBits::has_ext`]), so
/// the hot path of every other packet never reads them.
pub type PacketExt = [u32; 8];

/// A rate carried in a packet header, in kb/s (switch-computed rates, RCP): 32 bits hold
/// up to 4.29 Tb/s with 1 kb/s resolution. [`RateStamp::NONE`] means no stamp.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RateStamp(pub u32);

impl RateStamp {
    /// No rate stamped (larger than any stamp, so `min` with a stamp gives the stamp).
    pub const NONE: Self = Self(u32::MAX);

    /// The stamp of `r`, rounded down to whole kb/s and capped below [`RateStamp::NONE`].
    pub fn of(r: Rate) -> Self {
        Self((r.bps() / 1000).min(u64::from(u32::MAX - 1)) as u32)
    }
    /// The stamped rate, if any.
    pub fn rate(self) -> Option<Rate> {
        (self != Self::NONE).then(|| Rate::from_bps(u64::from(self.0) * 1000))
    }
}

impl Default for RateStamp {
    fn default() -> Self {
        Self::NONE
    }
}

/// A frame or payload size in the 16 bits a packet gives it. Sizes derive from an MSS of
/// at most 9,000 B (checked when a scenario is read), far below the limit; a larger one is
/// a bug, which debug builds catch.
#[inline]
pub fn bytes16(n: u32) -> u16 {
    debug_assert!(
        n <= u32::from(u16::MAX),
        "{n} B does not fit a packet's size field"
    );
    n.min(u32::from(u16::MAX)) as u16
}

/// One packet: 64 bytes, one cache line (`docs/adr/0004-packet-header-budget.md`).
///
/// The network writes `rate` and `queue_delay_ns` only on [`Class::Data`] packets, so a
/// transport may use them on its other packets to echo what its data carried.
#[derive(Clone, Copy, Debug, Default)]
pub struct Packet {
    /// Transport sequence number (bytes or credit sequence; meaning set by the transport).
    pub seq: u64,
    /// Transport acknowledgement number.
    pub ack: u64,
    /// When the transport sent this packet (for RTT samples).
    pub sent_at: Time,
    /// A timestamp echoed back by the peer.
    pub echo: Time,
    /// The flow this packet belongs to.
    pub flow: FlowId,
    /// The interned route, or [`RouteId::NONE`] for per-hop (FIB) forwarding.
    pub route: RouteId,
    /// Destination host (used by per-hop forwarding).
    pub dst: HostId,
    /// Rate stamp for switch-computed-rate protocols (the smallest rate of the ports that
    /// stamped it; [`RateStamp::NONE`] = no stamp).
    pub rate: RateStamp,
    /// Time this data packet has waited in switch queues so far, in ns (saturating), when
    /// the network measures it ([`crate::Telemetry::QUEUE_DELAY`]); host NICs do not add.
    pub queue_delay_ns: u32,
    /// Set by the network on a source-routed packet: the port it leaves its next switch by,
    /// looked up one hop ahead, so that a switch's choice of egress does not wait for a
    /// load from the route table (ADR 0004, "Update (next hop)"). Transports leave it.
    pub next: PortId,
    /// Transport payload carried, in bytes (at most an MSS of 9,000 B).
    pub payload_bytes: u16,
    /// Size on the wire including framing (see [`crate::wire`]); what links serialize.
    pub wire_bytes: u16,
    /// Index into the route of the port this packet is at or was last sent from.
    pub hop: u8,
    /// Traffic class.
    pub class: Class,
    /// The ECN field and the explicit incast notification.
    pub ip: IpBits,
    /// Transport flags (meaning set by the transport).
    pub flags: u8,
}

const _: () = assert!(size_of::<Packet>() == 64, "Packet must stay one cache line");

/// A slab of packets with a free list. `alloc` and `free` are O(1) and allocate nothing once
/// the slab has grown to the peak number of live packets.
#[derive(Default)]
pub struct PacketPool {
    slots: Vec<Packet>,
    /// The options of packets that have them ([`IpBits::has_ext`]), by slot; grown with
    /// the first one.
    ext: Vec<PacketExt>,
    free: Vec<PacketId>,
    allocated: u64,
    freed: u64,
    /// Slots used by the pools of the other parts of a split run ([`PacketPool::add_counts`]).
    slots_elsewhere: usize,
    #[cfg(debug_assertions)]
    live: Vec<bool>,
}

impl PacketPool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stores `p` and returns its ID.
    #[inline]
    pub fn alloc(&mut self, p: Packet) -> PacketId {
        self.allocated += 1;
        let id = if let Some(id) = self.free.pop() {
            self.slots[id.index()] = p;
            id
        } else {
            self.slots.push(p);
            #[cfg(debug_assertions)]
            self.live.push(false);
            PacketId::new(self.slots.len() - 1)
        };
        #[cfg(debug_assertions)]
        {
            debug_assert!(!self.live[id.index()]);
            self.live[id.index()] = true;
        }
        id
    }

    /// Stores `p` with its options `ext` (the packet is marked as having them).
    pub fn alloc_with_ext(&mut self, mut p: Packet, ext: &PacketExt) -> PacketId {
        p.ip.0 |= IpBits::EXT;
        let id = self.alloc(p);
        if self.ext.len() < self.slots.len() {
            self.ext.resize(self.slots.len(), [0; 8]);
        }
        self.ext[id.index()] = *ext;
        id
    }

    /// The options of packet `id`, if it was sent with them.
    #[inline]
    pub fn ext(&self, id: PacketId) -> Option<&PacketExt> {
        if self.get(id).ip.has_ext() {
            Some(&self.ext[id.index()])
        } else {
            None
        }
    }

    /// Stores `p` (with its options `ext`, if it has them), a copy of a packet that another
    /// part of a split run created and counted ([`PacketPool::release_copied`]): it is not
    /// counted as allocated here, and its free is the one that counts.
    pub fn adopt(&mut self, p: Packet, ext: Option<&PacketExt>) -> PacketId {
        let id = match ext {
            Some(e) => self.alloc_with_ext(p, e),
            None => self.alloc(p),
        };
        self.allocated -= 1;
        id
    }

    /// Returns the slot of `id`, a packet copied to another part of a split run
    /// ([`PacketPool::adopt`]), without counting it as freed: it lives on there.
    pub fn release_copied(&mut self, id: PacketId) {
        self.free(id);
        self.freed -= 1;
    }

    /// The packet in slot `id`, live or not, or `None` beyond the pool: for prefetch
    /// hints, which may name a packet already freed or one of another part's pool.
    #[inline]
    pub fn peek(&self, id: PacketId) -> Option<&Packet> {
        self.slots.get(id.index())
    }

    /// Returns the slot of `id` to the pool.
    #[inline]
    pub fn free(&mut self, id: PacketId) {
        #[cfg(debug_assertions)]
        {
            assert!(self.live[id.index()], "double free of packet {id}");
            self.live[id.index()] = false;
        }
        self.freed += 1;
        self.free.push(id);
    }

    /// The packet `id`.
    #[inline]
    pub fn get(&self, id: PacketId) -> &Packet {
        #[cfg(debug_assertions)]
        debug_assert!(self.live[id.index()], "use of freed packet {id}");
        &self.slots[id.index()]
    }

    /// The packet `id`, mutably.
    #[inline]
    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        #[cfg(debug_assertions)]
        debug_assert!(self.live[id.index()], "use of freed packet {id}");
        &mut self.slots[id.index()]
    }

    /// Packets allocated so far.
    pub fn allocated(&self) -> u64 {
        self.allocated
    }
    /// Packets freed so far.
    pub fn freed(&self) -> u64 {
        self.freed
    }
    /// Packets currently live: `allocated - freed`.
    pub fn live(&self) -> u64 {
        self.allocated - self.freed
    }
    /// Slots ever used (the peak number of simultaneously live packets). After
    /// [`PacketPool::add_counts`], the sum of the parts' peaks: at least the whole
    /// network's, which a split run does not know.
    pub fn capacity_used(&self) -> usize {
        self.slots.len() + self.slots_elsewhere
    }
    /// Adds the counts of `other`, a pool of another part of the same network in a split
    /// run: allocated, freed and live become the whole network's, and the peak the sum of
    /// the parts' peaks (the slots stay each part's own).
    pub fn add_counts(&mut self, other: &Self) {
        self.allocated += other.allocated;
        self.freed += other.freed;
        self.slots_elsewhere += other.capacity_used();
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Random alloc/free sequences never leak: allocated == freed + live, and slots are
        /// reused so the slab never exceeds the peak number of live packets.
        #[test]
        fn pool_never_leaks(ops in proptest::collection::vec(any::<bool>(), 1..500)) {
            let mut pool = PacketPool::new();
            let mut live = Vec::new();
            let mut peak = 0;
            for alloc in ops {
                if alloc || live.is_empty() {
                    live.push(pool.alloc(Packet::default()));
                } else {
                    pool.free(live.swap_remove(0));
                }
                peak = peak.max(live.len());
                prop_assert_eq!(pool.allocated(), pool.freed() + live.len() as u64);
            }
            prop_assert_eq!(pool.capacity_used(), peak);
        }
    }
}
