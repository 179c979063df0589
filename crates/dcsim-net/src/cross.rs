//! Links between the parts of a run split between threads (ADR 0010, items 1 and 2).
//!
//! Each part holds a copy of the whole network and handles the events of its own nodes.
//! A link between two parts is one port in both copies. The sending part's copy keeps
//! the packets it puts on the link, for its own accounting (the queue of a FIFO port is
//! the back of that ring), and forgets them once they have arrived, which it knows by
//! time, since their arrivals are handled in the other part. For every packet it puts on
//! the link it sends the receiving part a copy ([`Crossed`]); the receiving part's copy of
//! the port holds the copies, which its arrivals take in turn.
//!
//! Only the head of a link has an arrival event (ADR 0002): the first packet on an empty
//! link gets it from the handler that puts it there, every later one from the arrival of
//! the packet before it, and which handler creates an event decides its place among
//! events at the same time. The sending part knows which handler one thread would have
//! used, and says so in the copy; when the receiving part hears of a packet after the
//! arrival that should have created its event, it creates the event late, in the slot
//! that arrival reserved ([`dcsim_engine::parallel::Late`]).

use dcsim_engine::parallel::Slot;
use dcsim_engine::{Schedule, Time};

use crate::{NetCx, NetEvent, Network, Packet, PacketExt, PacketId, PacketPool, Port, PortId};

/// Which handler creates the arrival event of a packet put on a link between parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Creator {
    /// The handler that put it on the link, which found the link empty: it has.
    Sender,
    /// The arrival of the packet before it, at the time given.
    Receiver(Time),
    /// The packet was put on the link at the very time the one before arrives: whichever
    /// of the two handlers comes second (the sender reserved the slot given).
    Tie(Time, Slot),
}

/// A copy of a packet put on a link between parts, for the part the link leads to
/// ([`Network::take_copy`]).
#[derive(Clone, Copy, Debug)]
pub struct Crossed {
    port: PortId,
    arrive: Time,
    /// Wire size and class, packed as the link keeps them.
    size_class: u32,
    creator: Creator,
    pkt: Packet,
    /// The packet's options beside its header, if it has them.
    ext: Option<PacketExt>,
}

impl Crossed {
    /// The port whose link the packet is on.
    pub fn port(&self) -> PortId {
        self.port
    }
}

/// The state of the links between parts, per port (empty in a run that is not split).
#[derive(Default)]
pub(crate) struct Crossings {
    /// Sending side: the arrival time of the last packet copied.
    copied: Vec<Time>,
    /// Receiving side: the last arrival that left the link empty, and the slot it
    /// reserved for the next packet's arrival event.
    emptied: Vec<Option<(Time, Slot)>>,
    /// Copies not yet taken by the caller ([`Network::take_copies`]).
    outbox: Vec<Crossed>,
}

impl Crossings {
    /// An arrival at `now` on the link of `port` left it empty; `slot` is reserved for the
    /// next packet's arrival.
    #[inline(never)]
    pub(crate) fn emptied(&mut self, port: PortId, now: Time, slot: Option<Slot>) {
        if let Some(slot) = slot {
            self.emptied[port.index()] = Some((now, slot));
        }
    }
}

impl Network {
    /// Marks the links that lead from one part of a split run to another: `crossing`
    /// chooses their ports. Every part's copy of the network marks the same ones.
    pub fn split_links(&mut self, mut crossing: impl FnMut(PortId) -> bool) {
        let n = self.ports.len();
        for (i, p) in self.ports.iter_mut().enumerate() {
            if crossing(PortId::new(i)) {
                p.marks |= Port::CROSSING;
            } else {
                p.marks &= !Port::CROSSING;
            }
        }
        self.crossings.copied = vec![Time::ZERO; n];
        self.crossings.emptied = vec![None; n];
    }

    /// The copies of packets put on links between parts since the last call, in the order
    /// they were put, for the parts the links lead to.
    pub fn take_copies(&mut self) -> std::vec::Drain<'_, Crossed> {
        self.crossings.outbox.drain(..)
    }

    /// Whether copies wait to be taken ([`Network::take_copies`]).
    #[inline]
    pub fn has_copies(&self) -> bool {
        !self.crossings.outbox.is_empty()
    }

    /// After `port`, whose link leads to another part, was offered a packet or woken: if a
    /// packet went on the link, copies it for the other part, creates its arrival event if
    /// one thread's handler here would have (the link was empty), reserves a slot if it
    /// cannot know (the packet before arrives now), and returns the packet to the pool.
    #[cold]
    #[inline(never)]
    pub(crate) fn copy_out<S: Schedule<NetEvent>>(&mut self, port: PortId, cx: &mut NetCx<'_, S>) {
        let i = port.index();
        let p = &mut self.ports[i];
        let Some(((arrive, pkt, size_class), _)) = p.last_put() else {
            return;
        };
        if arrive <= self.crossings.copied[i] {
            return; // nothing went on the link
        }
        p.drop_arrived(cx.now);
        let (_, before) = p.last_put().expect("the packet just put on the link");
        let creator = match before {
            None => {
                cx.sched.at(arrive, NetEvent::LinkArrive(port, pkt));
                Creator::Sender
            }
            Some(a1) if a1 > cx.now => Creator::Receiver(a1),
            Some(a1) => Creator::Tie(
                a1,
                cx.sched
                    .reserve()
                    .expect("a link between parts in a run that is not split"),
            ),
        };
        self.crossings.copied[i] = arrive;
        self.crossings.outbox.push(Crossed {
            port,
            arrive,
            size_class,
            creator,
            pkt: *cx.pool.get(pkt),
            ext: cx.pool.ext(pkt).copied(),
        });
        cx.pool.release_copied(pkt);
    }

    /// Takes in `c`, sent by the part the link comes from, on the receiving side. Returns
    /// the packet's arrival event if this part must create it late, because the arrival
    /// that should have created it has been handled: when, and the slots it takes the
    /// later of.
    pub fn take_copy(
        &mut self,
        c: &Crossed,
        pool: &mut PacketPool,
    ) -> Option<(Time, NetEvent, Slot, Slot)> {
        let i = c.port.index();
        let pkt: PacketId = pool.adopt(c.pkt, c.ext.as_ref());
        self.ports[i].push_copy(c.arrive, pkt, c.size_class);
        let ev = NetEvent::LinkArrive(c.port, pkt);
        let emptied_at = |a1: Time| self.crossings.emptied[i].filter(|e| e.0 == a1);
        match c.creator {
            Creator::Sender => None,
            Creator::Receiver(a1) => emptied_at(a1).map(|(_, s)| (c.arrive, ev, s, s)),
            Creator::Tie(a1, sender) => emptied_at(a1).map(|(_, s)| (c.arrive, ev, sender, s)),
        }
    }
}
