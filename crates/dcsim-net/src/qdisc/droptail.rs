//! First in, first out, with tail drop.

use serde::{Deserialize, Serialize};

use super::{
    Amount, BuildCx, Discipline, DropReason, Fifo, QdiscCx, QueueDisc, Thresholds, Verdict,
    holds_a_frame,
};
use crate::PacketId;

/// Drop-tail parameters (`kind = "droptail"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropTailConfig {
    /// Buffer limit (bytes or packets).
    pub buffer: Amount,
}

/// FIFO that refuses a packet which would take the backlog over `limit`.
#[derive(Debug)]
pub struct DropTail {
    fifo: Fifo,
    limit: Amount,
}

impl DropTail {
    /// A drop-tail queue with buffer `limit`.
    pub fn new(limit: Amount) -> Self {
        Self {
            fifo: Fifo::default(),
            limit,
        }
    }
}

impl Discipline for DropTail {
    const NAME: &'static str = "droptail";
    const ABOUT: &'static str = "FIFO with tail drop at a byte or packet limit";
    type Config = DropTailConfig;
    fn build(cfg: &DropTailConfig, _cx: &BuildCx<'_>) -> Self {
        Self::new(cfg.buffer)
    }
    fn validate(cfg: &DropTailConfig) -> Result<(), String> {
        holds_a_frame(&cfg.buffer, "buffer")
    }
}

impl QueueDisc for DropTail {
    #[inline]
    fn enqueue(&mut self, pkt: PacketId, cx: &mut QdiscCx<'_>) -> Verdict {
        let size = u32::from(cx.pool.get(pkt).wire_bytes);
        if !self.fifo.fits(self.limit, size) {
            return Verdict::Drop(DropReason::Overflow);
        }
        self.fifo.push(pkt, size);
        Verdict::Accept
    }
    #[inline]
    fn dequeue(&mut self, _cx: &mut QdiscCx<'_>) -> Option<PacketId> {
        self.fifo.pop()
    }
    fn backlog_bytes(&self) -> u64 {
        self.fifo.bytes()
    }
    fn backlog_pkts(&self) -> u32 {
        self.fifo.len()
    }
    fn is_fifo(&self) -> bool {
        true
    }
    fn port_keeps_order(&mut self) {
        self.fifo.count_only();
    }
    fn thresholds(&self) -> Option<Thresholds> {
        Some(Thresholds {
            buffer: self.limit,
            mark: None,
        })
    }
    #[inline]
    fn depart(&mut self, wire_bytes: u32, _cx: &mut QdiscCx<'_>) {
        let taken = self.fifo.take(wire_bytes);
        debug_assert!(taken, "FIFO discipline lost a packet");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::QdiscDriver;
    use crate::{Class, Ecn};

    #[test]
    fn droptail_drops_only_when_full() {
        let mut q = DropTail::new(Amount::Bytes(3000));
        let mut d = QdiscDriver::new();
        assert_eq!(
            d.offer(&mut q, 1538, Class::Data, Ecn::Ect),
            Verdict::Accept
        );
        assert_eq!(
            d.offer(&mut q, 1538, Class::Data, Ecn::Ect),
            Verdict::Drop(DropReason::Overflow)
        );
        assert_eq!(
            d.offer(&mut q, 84, Class::Control, Ecn::NotEct),
            Verdict::Accept
        );
        assert_eq!(q.backlog_bytes(), 1622);
        let mut q = DropTail::new(Amount::Packets(2));
        d.offer(&mut q, 1538, Class::Data, Ecn::Ect);
        d.offer(&mut q, 1538, Class::Data, Ecn::Ect);
        assert_eq!(
            d.offer(&mut q, 84, Class::Data, Ecn::Ect),
            Verdict::Drop(DropReason::Overflow)
        );
    }
}
