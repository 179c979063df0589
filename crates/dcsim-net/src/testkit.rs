//! Test helpers for queue disciplines (compiled for this crate's tests and with the
//! `testkit` feature; `dcsim-testkit` re-exports them for tests of other crates).

use dcsim_engine::{Rate, Time};

use crate::qdisc::{QdiscCx, QueueDisc, Verdict};
use crate::{Class, Ecn, IpBits, Packet, PacketId, PacketPool};

/// Drives a queue discipline without a port: offers packets, takes them out, and counts
/// what happened, so that a test can script arrivals and departures at chosen times.
///
/// ```
/// use dcsim_engine::Time;
/// use dcsim_net::qdisc::{Amount, EcnThreshold, QueueDisc};
/// use dcsim_net::testkit::QdiscDriver;
/// use dcsim_net::{Class, Ecn};
///
/// let mut q = EcnThreshold::new(Amount::Packets(100), Amount::Packets(1));
/// let mut d = QdiscDriver::new();
/// d.offer(&mut q, 1538, Class::Data, Ecn::Ect);
/// d.offer(&mut q, 1538, Class::Data, Ecn::Ect); // finds one packet queued: marked
/// assert_eq!(d.marks, 1);
/// d.now = Time(1_000_000);
/// let first = d.take(&mut q).unwrap();
/// assert_eq!(d.ecn_of(first), Ecn::Ect);
/// assert_eq!(d.enqueued, d.dequeued + u64::from(q.backlog_pkts()));
/// ```
pub struct QdiscDriver {
    /// The packets.
    pub pool: PacketPool,
    /// CE marks the discipline made (through [`QdiscCx::mark_ce`]).
    pub marks: u64,
    /// The time of the next operation.
    pub now: Time,
    /// The port's line rate the discipline sees.
    pub rate: Rate,
    /// Packets accepted.
    pub enqueued: u64,
    /// Packets taken out.
    pub dequeued: u64,
    /// Packets refused (and freed).
    pub dropped: u64,
}

impl Default for QdiscDriver {
    fn default() -> Self {
        Self::new()
    }
}

impl QdiscDriver {
    /// A driver at time zero on a 10 Gb/s port.
    pub fn new() -> Self {
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

    /// Offers a packet of `wire` bytes, class `class` and ECN field `ecn` at [`Self::now`];
    /// a refused packet is freed and counted.
    pub fn offer(&mut self, q: &mut impl QueueDisc, wire: u32, class: Class, ecn: Ecn) -> Verdict {
        self.offer_packet(
            q,
            Packet {
                wire_bytes: crate::bytes16(wire),
                class,
                ip: IpBits::new(ecn),
                ..Packet::default()
            },
        )
    }

    /// Offers `p` at [`Self::now`]; a refused packet is freed and counted.
    pub fn offer_packet(&mut self, q: &mut impl QueueDisc, p: Packet) -> Verdict {
        let pkt = self.pool.alloc(p);
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

    /// Takes the next packet out at [`Self::now`], if the discipline gives one; the caller
    /// owns it (read it with [`Self::pool`], free it there).
    pub fn take(&mut self, q: &mut impl QueueDisc) -> Option<PacketId> {
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

    /// The ECN field of `p`.
    pub fn ecn_of(&self, p: PacketId) -> Ecn {
        self.pool.get(p).ip.ecn()
    }
}
