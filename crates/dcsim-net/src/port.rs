//! Ports: an output queue, a transmitter and the outgoing half of a link.
//!
//! A port is the mechanism around a queue discipline: it serializes one packet at a time at
//! its line rate, keeps the packets that are propagating on its link in a FIFO (a constant
//! delay keeps them in order, so only the head needs an event, as in htsim's `Pipe`), counts
//! everything, and frees what the discipline refuses.
//!
//! Events: at most one pending `PortReady` (transmitter free, or the discipline's wake-up)
//! and at most one pending `LinkArrive` (the head of the link FIFO) per port. A packet
//! that finds the port idle starts serializing at once, and its arrival at the far end is
//! known then, so an uncongested hop costs one event and a congested one two.
//!
//! **FIFO ports** ([`QueueDisc::is_fifo`]: drop-tail, ECN threshold) need no `PortReady`
//! at all: a packet accepted behind others starts when the transmitter has sent everything
//! before it, which is known on arrival, so the port computes its departure and its
//! arrival at the far end at once and appends it to the link FIFO. The waiting packets are
//! the last entries of that FIFO (each starts at its arrival time less the delay and its
//! serialization time, so nothing else is stored), and the discipline only counts them
//! ([`QueueDisc::port_keeps_order`]): a hop touches one ring buffer, not three (ADR 0006).
//! The port brings its counters (backlog, bytes sent, the time integral) and the
//! discipline's up to date lazily, at the next arrival, departure or reading, exactly as if
//! a `PortReady` had run at each start. Every hop then costs one event, congested or not.
//! Where a packet arrives at the very picosecond a waiting one starts, the start counts
//! first (with events, the order of scheduling decided).
//!
//! **Threshold ports.** Drop-tail and the ECN threshold decide each packet by comparing the
//! instantaneous backlog with a buffer and a marking threshold
//! ([`QueueDisc::thresholds`]). On a FIFO port the backlog they would count is the port's
//! own, so the port applies the thresholds itself and never calls the discipline on the
//! packet path: two dispatched calls per hop fewer (the dumbbell benchmark 7.5 % fewer
//! instructions), and the discipline's line is not touched.
//!
//! **Timing noise** ([`PortNoise`], scenario key `ports.jitter`). A port may hand each
//! packet on late by a random time, as an emulator's software shaper does: htb takes a
//! packet out of its queue when its timer fires, after the packet's tokens were due, and
//! catches up with the next one from its bucket. The packet keeps its place in the queue
//! (and counts against the buffer) until it is handed on, and reaches the far end that
//! much later; the link's schedule is kept, so the rate is, and arrivals keep their order.
//! Such a shaper also releases each packet whole when its turn comes and charges its
//! tokens after (key `ports.release = "start"`): the link stays busy for the packet's
//! transmission time, but the packet reaches the far end a propagation delay after its
//! transmission started, which matters for the 64 KB super-packets of an emulator with
//! segmentation offloads (5 ms at 100 Mb/s). A noisy port runs its queue event by event (no FIFO fast path: a FIFO
//! port derives each start from its arrival time).

use std::collections::VecDeque;

use dcsim_engine::{Dur, Rate, Rng, Time, define_id};
use rand::RngExt;

use crate::qdisc::{self, Amount, DropReason, Qdisc, QdiscCx, QueueDisc, Thresholds, Verdict};
use crate::{Class, HostId, NodeId, PacketId, PacketPool};

define_id!(
    /// An egress port (and the one-way link leaving it).
    PortId
);

impl PortId {
    /// No port (a packet's [`crate::Packet::next`] before the network sets it).
    pub const NONE: Self = Self(u32::MAX);

    /// The port of the opposite direction of the same link: a link's two ports are made
    /// together, numbers 2i and 2i + 1 ([`crate::Network::new`]).
    #[inline]
    pub const fn reverse(self) -> Self {
        Self(self.0 ^ 1)
    }
}

/// Counters of one port. Plain integers updated inline; aggregation happens at the end.
/// Fields are in the order the packet path touches them (the drops last).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct PortStats {
    /// Integral of the backlog over time, in byte·picoseconds (for the time-weighted mean).
    pub backlog_area: u128,
    /// Packets accepted by the queue discipline.
    pub enqueued_pkts: u64,
    /// Packets whose transmission started.
    pub tx_pkts: u64,
    /// Wire bytes transmitted, per [`Class`].
    pub tx_bytes: [u64; Class::COUNT],
    /// Packets CE-marked here.
    pub ecn_marks: u64,
    /// Largest backlog seen, in wire bytes.
    pub max_backlog_bytes: u64,
    /// Largest backlog seen, in packets.
    pub max_backlog_pkts: u64,
    /// Largest backlog of each [`Class`] alone, in wire bytes (the credit queue and the
    /// data queue of an ExpressPass port).
    pub max_class_backlog_bytes: [u64; Class::COUNT],
    /// Packets dropped, per [`Class`].
    pub drops: [u64; Class::COUNT],
    /// Of the drops, those decided by an AQM rather than a full buffer.
    pub aqm_drops: u64,
}

impl PortStats {
    /// Total wire bytes transmitted.
    pub fn tx_bytes_total(&self) -> u64 {
        self.tx_bytes.iter().sum()
    }
    /// Total drops.
    pub fn drops_total(&self) -> u64 {
        self.drops.iter().sum()
    }
    /// The counters accumulated since `base` (maxima are taken as they are: the caller
    /// resets them at the start of a window).
    pub fn since(&self, base: &Self) -> Self {
        let sub = |a: [u64; 3], b: [u64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
        Self {
            enqueued_pkts: self.enqueued_pkts - base.enqueued_pkts,
            tx_pkts: self.tx_pkts - base.tx_pkts,
            tx_bytes: sub(self.tx_bytes, base.tx_bytes),
            drops: sub(self.drops, base.drops),
            aqm_drops: self.aqm_drops - base.aqm_drops,
            ecn_marks: self.ecn_marks - base.ecn_marks,
            max_backlog_bytes: self.max_backlog_bytes,
            max_backlog_pkts: self.max_backlog_pkts,
            max_class_backlog_bytes: self.max_class_backlog_bytes,
            backlog_area: self.backlog_area - base.backlog_area,
        }
    }
}

/// One egress port and the link leaving it.
///
/// Laid out by use, on cache-line boundaries (on a fat-tree with thousands of ports a hop
/// is bound by the lines it touches): what an arrival reads first, then the backlog, the
/// counters and the thresholds, then what the packet path never touches, and last the
/// discipline, which only a port that does not apply thresholds reaches.
#[repr(C, align(64))]
pub struct Port {
    /// Packets on the wire, with their arrival times at the far end (non-decreasing).
    /// On a FIFO port, also the packets still waiting in the queue: the last `queued`.
    pipe: VecDeque<OnLink>,
    pub(crate) delay: Dur,
    /// Picoseconds per wire byte when the rate divides 8·10¹² exactly (every standard
    /// Ethernet rate does), else 0: serialization is then one multiplication.
    ps_per_byte: u64,
    /// When the packet being serialized has left the transmitter.
    busy_until: Time,
    /// On a FIFO port: how many packets at the back of `pipe` have not started their
    /// transmission yet. Each starts at its arrival time less the delay and its
    /// serialization time, so the one ring holds the link and the queue.
    queued: u32,
    /// Whether the discipline is a FIFO (see the module documentation).
    fifo: bool,
    /// Whether the port applies the discipline's thresholds itself (`admit`), and never
    /// calls it.
    thresholds: bool,
    /// What the link does besides carrying packets: [`Port::TAPPED`], [`Port::CROSSING`]
    /// (one byte for both: a second `bool` here would push the discipline into a seventh
    /// line).
    pub(crate) marks: u8,
    /// How the port adds queueing delay to data packets' `queue_delay_ns`, if it does.
    delay_stamp: DelayStamp,
    /// The host at the far end, if the link leads to a host.
    pub(crate) to_host: Option<HostId>,
    pub(crate) peer_node: NodeId,
    /// A `u32`, unlike the byte counts beside it: with two equal-sized neighbours the
    /// compiler reads both maxima as one 16-byte load right after two 8-byte stores, a
    /// store-forwarding stall on every enqueue.
    backlog_pkts: u32,
    backlog_bytes: u64,
    last_change: Time,
    class_backlog: [u64; Class::COUNT],
    pub(crate) rate: Rate,
    pub(crate) stats: PortStats,
    /// With `thresholds`: the discipline's, applied to the port's own backlog.
    admit: Admit,
    /// Time of the pending `PortReady` event, or `Time::MAX`.
    pending_at: Time,
    pub(crate) node: NodeId,
    /// The host this port belongs to, if it is a NIC (four bytes: with an `Option` the
    /// noise would not fit in this line).
    from_host: MaybeHost,
    /// Timing noise, if the port has any (see the module documentation).
    noise: Option<Box<PortNoise>>,
    /// Last: a port whose discipline is thresholds only never touches it.
    pub(crate) qdisc: Qdisc,
}

/// A host or none, in four bytes (an `Option<HostId>` takes eight).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MaybeHost(u32);

impl MaybeHost {
    const NONE: Self = Self(u32::MAX);

    fn of(h: Option<HostId>) -> Self {
        h.map_or(Self::NONE, |h| {
            debug_assert!(h.0 != u32::MAX);
            Self(h.0)
        })
    }

    #[inline(always)]
    fn get(self) -> Option<HostId> {
        (self != Self::NONE).then_some(HostId(self.0))
    }
}

/// A port's timing noise: each packet is handed on late by a time drawn uniformly from [0,
/// `max`], or from a measured distribution, from the port's own random stream, and, as a
/// software shaper releases it, possibly whole at the start of its transmission (see the
/// module documentation).
#[derive(Clone, Debug)]
pub struct PortNoise {
    max_ps: u64,
    /// A measured distribution instead: (probability, picoseconds) points of its inverse
    /// cumulative distribution.
    quantiles: Option<Box<[(f64, u64)]>>,
    at_start: bool,
    rng: Rng,
    /// The release the port waits for, if any: the head packet leaves the queue late.
    hold: Option<Hold>,
    /// When each queued packet arrived, oldest first (exact for a FIFO discipline; for
    /// another, the oldest arrival, never later than the next packet's): a shaper that
    /// catches up starts the next packet's slot when the one before ended or when it
    /// arrived, whichever is later.
    arrivals: VecDeque<Time>,
}

/// A transmission whose start is due but whose packet is still queued: it is taken out of
/// the queue at `release`, and its transmission counts from `start` (the link's schedule).
#[derive(Clone, Copy, Debug)]
struct Hold {
    start: Time,
    release: Time,
    late: Late,
}

/// When a noisy port's packet reaches the far end: `by` after its last bit would, or with
/// `at_start` after its first bit.
#[derive(Clone, Copy, Debug)]
struct Late {
    by: Dur,
    at_start: bool,
}

impl PortNoise {
    /// Lateness up to `max`, drawn from `rng`.
    pub fn new(max: Dur, rng: Rng) -> Self {
        Self {
            max_ps: max.as_ps(),
            quantiles: None,
            at_start: false,
            rng,
            hold: None,
            arrivals: VecDeque::new(),
        }
    }

    /// Lateness drawn from a measured distribution: `points` (probability, lateness) of its
    /// inverse cumulative distribution, linear between them ([`crate::Lateness::check`]
    /// says what they must be).
    pub fn with_quantiles(points: &[(f64, Dur)], rng: Rng) -> Self {
        debug_assert_eq!(crate::Lateness::check(points), Ok(()));
        Self {
            quantiles: Some(points.iter().map(|&(p, d)| (p, d.as_ps())).collect()),
            ..Self::new(Dur::ZERO, rng)
        }
    }

    /// Packets released whole when their transmission starts, as a token-bucket shaper on
    /// an emulator's virtual link releases them (htb charges a packet's tokens after
    /// sending it): the link stays busy for the transmission time, but a packet reaches
    /// the far end a propagation delay after it started, not after its last bit.
    #[must_use]
    pub fn released_at_start(mut self) -> Self {
        self.at_start = true;
        self
    }

    /// Nothing is drawn without noise: a port that only releases at the start keeps its
    /// stream untouched.
    #[inline]
    fn draw(&mut self) -> Late {
        let by = if let Some(q) = &self.quantiles {
            Dur::from_ps(inverse_cdf(q, self.rng.random::<f64>()))
        } else if self.max_ps == 0 {
            Dur::ZERO
        } else {
            Dur::from_ps(self.rng.random_range(0..=self.max_ps))
        };
        Late {
            by,
            at_start: self.at_start,
        }
    }
}

/// The value at probability `u` (in [0, 1)) of an inverse cumulative distribution given as
/// points (probability, value) from 0 to 1, linear between them.
pub(crate) fn inverse_cdf(points: &[(f64, u64)], u: f64) -> u64 {
    let i = points
        .partition_point(|&(p, _)| p <= u)
        .clamp(1, points.len() - 1);
    let ((p0, v0), (p1, v1)) = (points[i - 1], points[i]);
    let frac = ((u - p0) / (p1 - p0)).clamp(0.0, 1.0);
    v0 + ((v1 - v0) as f64 * frac) as u64
}

/// A discipline's [`Thresholds`] as a FIFO port applies them to its backlog: each amount
/// is a byte count and a packet count, the unused one at its maximum (so neither test
/// branches on the unit). Packet counts are clamped to `u32::MAX`, which a backlog of
/// 32-bit packet counts cannot pass.
#[derive(Clone, Copy, Debug)]
struct Admit {
    limit_bytes: u64,
    mark_bytes: u64,
    limit_pkts: u32,
    mark_pkts: u32,
}

impl Admit {
    /// Nothing dropped, nothing marked.
    const OPEN: Self = Self {
        limit_bytes: u64::MAX,
        mark_bytes: u64::MAX,
        limit_pkts: u32::MAX,
        mark_pkts: u32::MAX,
    };

    fn new(t: Thresholds) -> Self {
        let split = |a: Amount| match a {
            Amount::Bytes(b) => (b, u32::MAX),
            Amount::Packets(n) => (u64::MAX, u32::try_from(n).unwrap_or(u32::MAX)),
        };
        let (limit_bytes, limit_pkts) = split(t.buffer);
        let (mark_bytes, mark_pkts) = t.mark.map_or((u64::MAX, u32::MAX), split);
        Self {
            limit_bytes,
            mark_bytes,
            limit_pkts,
            mark_pkts,
        }
    }
}

/// A packet in a port's link FIFO: when it reaches the far end, and (for a FIFO port's
/// queue) its wire size and class, packed into 16 bytes.
#[derive(Clone, Copy, Debug)]
struct OnLink {
    arrive: Time,
    pkt: PacketId,
    /// Wire size in the low 30 bits (frames are at most a few KB), class in the top 2.
    size_class: u32,
}

impl OnLink {
    const SIZE_BITS: u32 = 30;

    #[inline]
    fn new(arrive: Time, pkt: PacketId, size: u32, class: Class) -> Self {
        debug_assert!(size < 1 << Self::SIZE_BITS, "frame of {size} B");
        Self {
            arrive,
            pkt,
            size_class: size | (class as u32) << Self::SIZE_BITS,
        }
    }
    #[inline]
    fn size(self) -> u32 {
        self.size_class & ((1 << Self::SIZE_BITS) - 1)
    }
    #[inline]
    fn class(self) -> Class {
        match self.size_class >> Self::SIZE_BITS {
            0 => Class::Data,
            1 => Class::Control,
            _ => Class::Credit,
        }
    }
}

/// How a port measures the queueing delay of the data packets it sends
/// ([`crate::Telemetry::QUEUE_DELAY`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DelayStamp {
    /// Not measured.
    Off,
    /// A FIFO port knows each packet's start on arrival and adds the wait then.
    Fifo,
    /// Other ports subtract the arrival time (in ns, modulo 2³²) on enqueue and add the
    /// start time when the packet is dequeued, so nothing needs to be stored.
    Evented,
}

/// What a port asks its owner to schedule.
pub(crate) struct PortSched {
    pub ready_at: Option<Time>,
    /// A new head of the link: when it arrives, and which packet it is.
    pub arrive_at: Option<(Time, PacketId)>,
}

impl Port {
    /// A packet trace records what crosses this link ([`crate::Network::tap`]).
    pub(crate) const TAPPED: u8 = 1;
    /// The link leads to another part of a split run ([`crate::Network::split_links`]):
    /// the sending part's copy of the port keeps the packets for its own accounting and
    /// sends copies, the receiving part's takes them in.
    pub(crate) const CROSSING: u8 = 2;

    /// Whether the link is marked [`Port::TAPPED`].
    #[inline]
    pub(crate) fn tapped(&self) -> bool {
        self.marks & Self::TAPPED != 0
    }
    /// Whether the link is marked [`Port::CROSSING`].
    #[inline]
    pub(crate) fn crossing(&self) -> bool {
        self.marks & Self::CROSSING != 0
    }

    pub(crate) fn new(
        qdisc: Qdisc,
        rate: Rate,
        delay: Dur,
        node: NodeId,
        peer_node: NodeId,
        to_host: Option<HostId>,
        noise: Option<PortNoise>,
    ) -> Self {
        let fifo = qdisc.is_fifo() && noise.is_none();
        let thresholds = qdisc.thresholds().filter(|_| fifo);
        let mut qdisc = qdisc;
        if fifo && thresholds.is_none() {
            qdisc.port_keeps_order();
        }
        Self {
            qdisc,
            thresholds: thresholds.is_some(),
            admit: thresholds.map_or(Admit::OPEN, Admit::new),
            rate,
            ps_per_byte: if rate.bps() > 0 && 8_000_000_000_000 % rate.bps() == 0 {
                8_000_000_000_000 / rate.bps()
            } else {
                0
            },
            delay,
            busy_until: Time::ZERO,
            pending_at: Time::MAX,
            pipe: VecDeque::new(),
            fifo,
            marks: 0,
            queued: 0,
            backlog_bytes: 0,
            backlog_pkts: 0,
            class_backlog: [0; Class::COUNT],
            last_change: Time::ZERO,
            node,
            peer_node,
            to_host,
            from_host: MaybeHost::NONE,
            delay_stamp: DelayStamp::Off,
            stats: PortStats::default(),
            noise: noise.map(Box::new),
        }
    }

    /// Line rate.
    pub fn rate(&self) -> Rate {
        self.rate
    }
    /// Propagation delay of the link.
    pub fn delay(&self) -> Dur {
        self.delay
    }
    /// Whether the port hands each packet on whole when its transmission starts
    /// ([`PortNoise::released_at_start`]), so that it reaches the far end a propagation
    /// delay after it started.
    pub fn releases_at_start(&self) -> bool {
        self.noise.as_ref().is_some_and(|n| n.at_start)
    }
    /// The node this port belongs to.
    pub fn node(&self) -> NodeId {
        self.node
    }
    /// The node at the far end of the link.
    pub fn peer_node(&self) -> NodeId {
        self.peer_node
    }
    /// The host at the far end, if the link leads to a host.
    pub fn to_host(&self) -> Option<HostId> {
        self.to_host
    }
    /// The host this port belongs to, if it is a host's NIC.
    #[inline(always)]
    pub fn from_host(&self) -> Option<HostId> {
        self.from_host.get()
    }
    /// Makes this port host `h`'s NIC.
    pub(crate) fn set_from_host(&mut self, h: HostId) {
        self.from_host = MaybeHost::of(Some(h));
    }
    /// Counters so far.
    pub fn stats(&self) -> &PortStats {
        &self.stats
    }
    /// The queue discipline. On a FIFO port whose discipline has
    /// [`QueueDisc::thresholds`], the port applies them itself and the discipline holds
    /// nothing.
    pub fn qdisc(&self) -> &Qdisc {
        &self.qdisc
    }
    /// Backlog in wire bytes (excluding the packet being serialized) as of the port's last
    /// event; [`Port::settle`] brings a FIFO port's up to a given time.
    pub fn backlog_bytes(&self) -> u64 {
        self.backlog_bytes
    }
    /// Packets in the port: queued or on the wire.
    pub fn packets_inside(&self) -> u64 {
        let queued = if self.fifo {
            0 // already in `pipe`
        } else {
            u64::from(self.qdisc.backlog_pkts())
        };
        queued + self.pipe.len() as u64
    }
    /// Whether the port runs as a FIFO without dequeue events (see the module documentation).
    pub fn is_fifo(&self) -> bool {
        self.fifo
    }

    /// Makes the port add each data packet's wait in its queue to the packet's
    /// `queue_delay_ns`.
    pub(crate) fn measure_queue_delay(&mut self) {
        self.delay_stamp = if self.fifo {
            DelayStamp::Fifo
        } else {
            DelayStamp::Evented
        };
    }

    /// Brings the backlog integral up to `now`.
    #[inline]
    fn account(&mut self, now: Time) {
        let dt = now.saturating_since(self.last_change).as_ps();
        self.stats.backlog_area += u128::from(self.backlog_bytes) * u128::from(dt);
        self.last_change = now;
    }

    /// A packet of `size` wire bytes and `class` left the queue at `at` to be transmitted.
    #[inline]
    fn started(&mut self, at: Time, size: u32, class: Class) {
        self.account(at);
        self.backlog_bytes -= u64::from(size);
        self.class_backlog[class as usize] -= u64::from(size);
        self.backlog_pkts -= 1;
        self.count_tx(size, class);
    }

    /// Counts a transmission of `size` wire bytes of `class`.
    #[inline]
    fn count_tx(&mut self, size: u32, class: Class) {
        self.stats.tx_pkts += 1;
        self.stats.tx_bytes[class as usize] += u64::from(size);
    }

    /// Starts a measurement window at `now`: returns the counters so far (the caller keeps
    /// them as the base) and restarts the maxima from the current backlog.
    pub fn begin_window(&mut self, now: Time, pool: &mut PacketPool) -> PortStats {
        self.settle(now, pool);
        self.stats.max_backlog_bytes = self.backlog_bytes;
        self.stats.max_backlog_pkts = u64::from(self.backlog_pkts);
        self.stats.max_class_backlog_bytes = self.class_backlog;
        self.stats
    }

    /// Brings the counters and the backlog up to `now` (call before reading them).
    pub fn settle(&mut self, now: Time, pool: &mut PacketPool) {
        self.start_due::<false>(now, pool);
        self.account(now);
    }

    /// On a FIFO port: takes every packet whose transmission has started by `now` out of
    /// the discipline and the backlog, at its start time (what a `PortReady` would have
    /// done then). With `ARRIVAL` (for an arriving packet), a transmission that starts at
    /// `now` exactly is not yet taken out: an arrival is handled before a transmission
    /// start at the same instant, as in ns-2 and ns-3, whose schedulers order equal-time
    /// events by insertion (the arrival was scheduled a propagation delay earlier) and as
    /// our own event-driven ports do. The other order hands the freed slot to the arrival
    /// every time, which locks a flow whose NIC is back-to-back at the bottleneck's rate
    /// onto the freed slots for ever and every other flow out (ARCHITECTURE.md, step 2).
    ///
    /// The test for a waiting packet is inlined into every caller and the loop is not:
    /// most calls find none (as one function, the calls cost the dumbbell benchmark 3.5 %
    /// of its instructions).
    #[inline(always)]
    fn start_due<const ARRIVAL: bool>(&mut self, now: Time, pool: &mut PacketPool) {
        if self.queued > 0 {
            self.start_waiting::<ARRIVAL>(now, pool);
        }
    }

    /// [`Port::start_due`] with at least one packet waiting.
    #[inline(never)]
    fn start_waiting<const ARRIVAL: bool>(&mut self, now: Time, pool: &mut PacketPool) {
        while self.queued > 0 {
            let next = self.pipe[self.pipe.len() - self.queued as usize];
            let (size, class) = (next.size(), next.class());
            let start = next.arrive - self.delay - self.tx_dur(size);
            if start > now || (ARRIVAL && start == now) {
                break;
            }
            self.queued -= 1;
            self.depart(start, size, pool);
            self.started(start, size, class);
        }
    }

    /// On a FIFO port: the start time of the queued packet after which the backlog, as far
    /// as the packets queued now go, is at most `bytes` (`None` if it already is).
    pub(crate) fn drains_to(&self, bytes: u64) -> Option<Time> {
        let mut left = self.backlog_bytes;
        let waiting = self.pipe.len() - self.queued as usize;
        for next in self.pipe.range(waiting..) {
            if left <= bytes {
                return None;
            }
            left -= u64::from(next.size());
            if left <= bytes {
                return Some(next.arrive - self.delay - self.tx_dur(next.size()));
            }
        }
        None
    }

    /// Asks for a `PortReady` at `at` (a FIFO port uses it only to wake a waiting host);
    /// returns `Some(at)` if it must be scheduled.
    pub(crate) fn wake_at(&mut self, at: Time) -> Option<Time> {
        self.want_event(at)
    }

    /// On a FIFO port: the oldest packet held, of `size` wire bytes, starts at `at`; tells
    /// the discipline, unless the port applies its thresholds itself.
    #[inline]
    fn depart(&mut self, at: Time, size: u32, pool: &mut PacketPool) {
        if self.thresholds {
            return;
        }
        let mut cx = QdiscCx {
            now: at,
            line_rate: self.rate,
            pool,
            marks: &mut self.stats.ecn_marks,
        };
        self.qdisc.depart(size, &mut cx);
    }

    /// A FIFO port's admission by the discipline's thresholds, from the port's backlog:
    /// what the discipline's `enqueue` would decide (the backlog is the discipline's).
    #[inline]
    fn admit(&mut self, pkt: PacketId, pool: &mut PacketPool) -> Verdict {
        let a = self.admit;
        let p = pool.get_mut(pkt);
        let pkts = self.backlog_pkts;
        if self.backlog_bytes + u64::from(p.wire_bytes) > a.limit_bytes || pkts >= a.limit_pkts {
            return Verdict::Drop(DropReason::Overflow);
        }
        if self.backlog_bytes >= a.mark_bytes || pkts >= a.mark_pkts {
            qdisc::mark_ce(p, &mut self.stats.ecn_marks);
        }
        Verdict::Accept
    }

    /// Offers `pkt`. Returns what to schedule (if the transmitter must be woken). This and
    /// [`Port::transmit_fifo`] are always inlined into their one caller each: LLVM stopped
    /// doing so on its own when unrelated code grew (2026-11-27).
    #[inline(always)]
    pub(crate) fn enqueue(&mut self, pkt: PacketId, now: Time, pool: &mut PacketPool) -> PortSched {
        if self.fifo {
            self.start_due::<true>(now, pool);
        }
        let verdict = if self.thresholds {
            self.admit(pkt, pool)
        } else {
            let mut cx = QdiscCx {
                now,
                line_rate: self.rate,
                pool,
                marks: &mut self.stats.ecn_marks,
            };
            self.qdisc.enqueue(pkt, &mut cx)
        };
        match verdict {
            Verdict::Accept => {
                let p = pool.get_mut(pkt);
                let (wire, pclass) = (u32::from(p.wire_bytes), p.class);
                self.stats.enqueued_pkts += 1;
                if self.fifo && now >= self.busy_until {
                    return self.transmit_fifo(pkt, wire, pclass, now, pool);
                }
                let (size, class) = (u64::from(wire), pclass as usize);
                self.account(now);
                self.backlog_bytes += size;
                self.class_backlog[class] += size;
                self.backlog_pkts += 1;
                let s = if self.fifo {
                    self.queue_fifo(pkt, wire, pclass, now, pool)
                } else {
                    if self.delay_stamp == DelayStamp::Evented && pclass == Class::Data {
                        let p = pool.get_mut(pkt);
                        p.queue_delay_ns = p.queue_delay_ns.wrapping_sub(now.as_ns() as u32);
                    }
                    // A noisy port holding a release has its event at that release.
                    let held = match self.noise.as_deref_mut() {
                        Some(n) => {
                            n.arrivals.push_back(now);
                            n.hold.is_some()
                        }
                        None => false,
                    };
                    if held {
                        PortSched {
                            ready_at: None,
                            arrive_at: None,
                        }
                    } else if now >= self.busy_until {
                        self.try_transmit(now, pool)
                    } else {
                        PortSched {
                            ready_at: self.want_event(self.busy_until),
                            arrive_at: None,
                        }
                    }
                };
                // Maxima after the transmitter took what it could: a packet that finds the
                // port idle goes straight into service and never waits in the queue.
                self.stats.max_class_backlog_bytes[class] =
                    self.stats.max_class_backlog_bytes[class].max(self.class_backlog[class]);
                self.stats.max_backlog_bytes = self.stats.max_backlog_bytes.max(self.backlog_bytes);
                self.stats.max_backlog_pkts = self
                    .stats
                    .max_backlog_pkts
                    .max(u64::from(self.backlog_pkts));
                s
            }
            Verdict::Drop(reason) => {
                let class = pool.get(pkt).class;
                self.stats.drops[class as usize] += 1;
                if reason == DropReason::Aqm {
                    self.stats.aqm_drops += 1;
                }
                pool.free(pkt);
                PortSched {
                    ready_at: None,
                    arrive_at: None,
                }
            }
        }
    }

    /// Starts loading the lines an arrival reads: the link FIFO's descriptor and the far
    /// end (the port's first two lines), and the counters (the third), which an arrival
    /// updates when packets waiting behind the one that arrives have started meanwhile.
    /// The third line was added on measurement: k = 24 3.9 % faster per hop in 12
    /// alternating pairs of `bench --quick`, k = 8 (which never looks this far ahead)
    /// unchanged.
    #[inline]
    pub(crate) fn prefetch_arrival_early(&self) {
        dcsim_engine::prefetch::prefetch(&self.pipe);
        dcsim_engine::prefetch::prefetch(&self.peer_node);
        dcsim_engine::prefetch::prefetch(&self.stats);
    }

    /// Starts loading what an arrival reads: the head of the link FIFO and the port's
    /// second line (the far end, the backlog).
    #[inline]
    pub(crate) fn prefetch_arrival(&self) {
        if let Some(head) = self.pipe.front() {
            dcsim_engine::prefetch::prefetch(head);
        }
        dcsim_engine::prefetch::prefetch(&self.peer_node);
    }

    /// On the sending side of a link between parts, where nothing arrives: forgets the
    /// packets that have arrived before `now` (they are the receiving part's), keeping
    /// those still waiting to start.
    pub(crate) fn drop_arrived(&mut self, now: Time) {
        while self.pipe.len() > self.queued as usize
            && self.pipe.front().is_some_and(|e| e.arrive < now)
        {
            self.pipe.pop_front();
        }
    }

    /// The last packet put on the link (its arrival, the packet, its wire size and class
    /// packed as the link keeps them), and the arrival of the one before it, if any.
    pub(crate) fn last_put(&self) -> Option<((Time, PacketId, u32), Option<Time>)> {
        let n = self.pipe.len();
        let last = self.pipe.back()?;
        let before = n.checked_sub(2).map(|i| self.pipe[i].arrive);
        Some(((last.arrive, last.pkt, last.size_class), before))
    }

    /// On the receiving side of a link between parts: appends `pkt`, a copy of the packet
    /// the sending part put on the link, due at `arrive` (`size_class` as
    /// [`Port::last_put`] gives it).
    pub(crate) fn push_copy(&mut self, arrive: Time, pkt: PacketId, size_class: u32) {
        debug_assert!(self.pipe.back().is_none_or(|e| e.arrive < arrive));
        self.pipe.push_back(OnLink {
            arrive,
            pkt,
            size_class,
        });
    }

    /// The next arrival on the link, if any.
    #[inline]
    pub(crate) fn pipe_front(&self) -> Option<(Time, PacketId)> {
        self.pipe.front().map(|e| (e.arrive, e.pkt))
    }

    /// Handles a `PortReady` event at `now`.
    #[inline]
    pub(crate) fn on_ready(&mut self, now: Time, pool: &mut PacketPool) -> PortSched {
        if now != self.pending_at {
            return PortSched {
                ready_at: None,
                arrive_at: None,
            }; // superseded
        }
        self.pending_at = Time::MAX;
        if self.fifo {
            // Only a wake-up for a waiting host: transmissions need no event.
            self.start_due::<false>(now, pool);
            return PortSched {
                ready_at: None,
                arrive_at: None,
            };
        }
        if now < self.busy_until {
            return PortSched {
                ready_at: self.want_event(self.busy_until),
                arrive_at: None,
            };
        }
        self.try_transmit(now, pool)
    }

    /// Records that an event is wanted at `at`; returns `Some(at)` if it must be scheduled
    /// (no earlier event is pending).
    #[inline]
    fn want_event(&mut self, at: Time) -> Option<Time> {
        if at < self.pending_at {
            self.pending_at = at;
            Some(at)
        } else {
            None
        }
    }

    /// On a FIFO port whose transmitter is busy: `pkt` (just accepted at `now`) starts
    /// when everything before it has been sent; its departure and arrival are known now.
    /// Always inlined into its one caller, as [`Port::enqueue`].
    #[inline(always)]
    fn queue_fifo(
        &mut self,
        pkt: PacketId,
        size: u32,
        class: Class,
        now: Time,
        pool: &mut PacketPool,
    ) -> PortSched {
        let start = self.busy_until;
        if self.delay_stamp == DelayStamp::Fifo && class == Class::Data {
            let p = pool.get_mut(pkt);
            let wait = (start.as_ns() - now.as_ns()) as u32;
            p.queue_delay_ns = p.queue_delay_ns.saturating_add(wait);
        }
        let (_, arrive_at) = self.put_on_link(start, pkt, size, class, None);
        self.queued += 1;
        PortSched {
            ready_at: None,
            arrive_at,
        }
    }

    /// `pkt` starts its transmission at `start`: appends it to the link FIFO, on a noisy
    /// port to arrive `late.by` after its last bit would have (after its first, if the
    /// port releases packets at the start) and after the packet ahead of it, however late
    /// that one was. Returns when it has left the transmitter and, if it is the new head
    /// of the link, its arrival.
    #[inline]
    fn put_on_link(
        &mut self,
        start: Time,
        pkt: PacketId,
        size: u32,
        class: Class,
        late: Option<Late>,
    ) -> (Time, Option<(Time, PacketId)>) {
        let done = start + self.tx_dur(size);
        self.busy_until = done;
        let mut arrive = done + self.delay;
        if let Some(late) = late {
            if late.at_start {
                arrive = start + self.delay;
            }
            arrive += late.by;
            if let Some(ahead) = self.pipe.back() {
                arrive = arrive.max(ahead.arrive + Dur::from_ps(1));
            }
        }
        let arrive_at = self.pipe.is_empty().then_some((arrive, pkt));
        self.pipe.push_back(OnLink::new(arrive, pkt, size, class));
        debug_assert!(late.is_some() || start == arrive - self.delay - self.tx_dur(size));
        (done, arrive_at)
    }

    /// Serialization time of `size` wire bytes.
    #[inline]
    fn tx_dur(&self, size: u32) -> Dur {
        let tx = if self.ps_per_byte > 0 {
            Dur::from_ps(u64::from(size) * self.ps_per_byte)
        } else {
            self.rate.tx_time(u64::from(size))
        };
        debug_assert_eq!(tx, self.rate.tx_time(u64::from(size)));
        tx
    }

    /// On a FIFO port whose transmitter is free at `now`: `pkt`, just accepted, finds
    /// nothing waiting (every earlier packet started before `now`) and starts at once. The
    /// backlog is empty before and after, so neither it nor its integral and maxima change:
    /// only the transmission is counted.
    #[inline(always)]
    fn transmit_fifo(
        &mut self,
        pkt: PacketId,
        size: u32,
        class: Class,
        now: Time,
        pool: &mut PacketPool,
    ) -> PortSched {
        debug_assert!(self.queued == 0 && self.backlog_pkts == 0 && self.backlog_bytes == 0);
        self.depart(now, size, pool);
        self.count_tx(size, class);
        let (_, arrive_at) = self.put_on_link(now, pkt, size, class, None);
        PortSched {
            ready_at: None,
            arrive_at,
        }
    }

    /// The transmitter of a port that is not a FIFO port is free at `now`: start the next
    /// eligible packet, if any. On a noisy port the packet is taken out of the queue only
    /// when its lateness has passed ([`Hold`]), and its transmission counts from when it
    /// was due.
    #[inline]
    fn try_transmit(&mut self, now: Time, pool: &mut PacketPool) -> PortSched {
        let mut start = now;
        let mut late = None;
        if let Some(n) = self.noise.as_deref_mut() {
            match n.hold {
                Some(h) if now < h.release => {
                    let release = h.release;
                    return PortSched {
                        ready_at: self.want_event(release),
                        arrive_at: None,
                    };
                }
                Some(h) => {
                    (start, late) = (h.start, Some(h.late));
                    n.hold = None;
                }
                None if self.backlog_pkts > 0 => {
                    let l = n.draw();
                    if l.by > Dur::ZERO {
                        let release = now + l.by;
                        n.hold = Some(Hold {
                            start: now,
                            release,
                            late: l,
                        });
                        return PortSched {
                            ready_at: self.want_event(release),
                            arrive_at: None,
                        };
                    }
                    late = Some(l);
                }
                None => {}
            }
        }
        let mut cx = QdiscCx {
            now,
            line_rate: self.rate,
            pool,
            marks: &mut self.stats.ecn_marks,
        };
        let Some(pkt) = self.qdisc.dequeue(&mut cx) else {
            let ready_at = if self.backlog_pkts > 0 {
                self.qdisc
                    .next_wakeup(now)
                    .and_then(|t| self.want_event(t.max(now)))
            } else {
                None
            };
            return PortSched {
                ready_at,
                arrive_at: None,
            };
        };
        let p = pool.get_mut(pkt);
        let size = u32::from(p.wire_bytes);
        let class = p.class;
        if self.delay_stamp == DelayStamp::Evented && class == Class::Data {
            p.queue_delay_ns = p.queue_delay_ns.wrapping_add(now.as_ns() as u32);
        }
        self.started(now, size, class);
        if let Some(n) = self.noise.as_deref_mut() {
            // Packets the discipline dropped inside leave no arrival behind.
            while n.arrivals.len() > self.backlog_pkts as usize {
                n.arrivals.pop_front();
            }
        }
        let (done, arrive_at) = self.put_on_link(start, pkt, size, class, late);
        let ready_at = if self.backlog_pkts == 0 {
            None
        } else if let Some(n) = self.noise.as_deref_mut() {
            // The next packet is due when this one's transmission ends, or when it arrived
            // if that was later; it is handed on its lateness after that, or now if this
            // one was released later still (the shaper catches up). Drawn now, so that a
            // packet costs one event at this port, its release.
            let next = done.max(n.arrivals.front().copied().unwrap_or(done));
            let l = n.draw();
            let release = (next + l.by).max(now);
            n.hold = Some(Hold {
                start: next,
                release,
                late: Late {
                    by: release - next,
                    ..l
                },
            });
            self.want_event(release)
        } else {
            self.want_event(done)
        };
        PortSched {
            ready_at,
            arrive_at,
        }
    }

    /// Handles a `LinkArrive` event: removes the head packet of the link. Returns it and
    /// the arrival time of the next packet, if any (to be scheduled).
    #[inline]
    pub(crate) fn on_arrive(
        &mut self,
        now: Time,
        pool: &mut PacketPool,
    ) -> (PacketId, Option<(Time, PacketId)>) {
        if self.fifo {
            // The packet left the queue before it arrives: take it out of the discipline
            // before its receiver may free it.
            self.start_due::<false>(now, pool);
        }
        let head = self
            .pipe
            .pop_front()
            .expect("LinkArrive with an empty link");
        debug_assert_eq!(head.arrive, now, "link FIFO out of order");
        debug_assert!(
            self.pipe.len() >= self.queued as usize,
            "a packet arrived before its transmission started"
        );
        (head.pkt, self.pipe_front())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Six lines, the discipline in the last: a port whose discipline is thresholds only
    /// touches the first five on its packet path.
    #[test]
    fn a_port_is_six_lines_with_the_discipline_last() {
        assert_eq!(size_of::<Port>(), 384);
        assert!(size_of::<Qdisc>() <= 64, "{} B", size_of::<Qdisc>());
        assert_eq!(std::mem::offset_of!(Port, qdisc), 320);
        assert!(std::mem::offset_of!(Port, admit) + size_of::<Admit>() <= 320);
    }

    #[test]
    fn a_link_entry_keeps_size_and_class_in_sixteen_bytes() {
        assert_eq!(size_of::<OnLink>(), 16);
        for class in [Class::Data, Class::Control, Class::Credit] {
            for size in [84, 1538, 9038, (1 << OnLink::SIZE_BITS) - 1] {
                let e = OnLink::new(Time(7), PacketId(3), size, class);
                assert_eq!(
                    (e.arrive, e.pkt, e.size(), e.class()),
                    (Time(7), PacketId(3), size, class)
                );
            }
        }
    }
}
