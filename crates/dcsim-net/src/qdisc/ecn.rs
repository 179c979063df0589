//! DCTCP-style ECN marking on the instantaneous queue.

use serde::{Deserialize, Serialize};

use super::{
    Amount, BuildCx, Discipline, DropReason, Fifo, QdiscCx, QueueDisc, Thresholds, Verdict,
    holds_a_frame,
};
use crate::PacketId;

/// ECN-threshold parameters (`kind = "ecn"`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EcnConfig {
    /// Buffer limit (bytes or packets).
    pub buffer: Amount,
    /// DCTCP's K: mark when the instantaneous queue, before this packet, is ≥ K. Default
    /// 65 packets, the DCTCP paper's K at 10 Gb/s (the default queue's).
    #[serde(default = "EcnConfig::default_mark_threshold")]
    pub mark_threshold: Amount,
}

impl EcnConfig {
    /// DCTCP's K at 10 Gb/s, 65 packets.
    pub const DEFAULT_MARK_THRESHOLD: Amount = Amount::Packets(65);

    fn default_mark_threshold() -> Amount {
        Self::DEFAULT_MARK_THRESHOLD
    }
}

/// Drop-tail FIFO that CE-marks an ECT packet when, at its arrival, the queue already holds
/// at least `k` (DCTCP, Alizadeh et al. SIGCOMM'10 §3.1: "mark when the instantaneous queue
/// exceeds K"; ns-2's RED with `q_weight = 1`, `thresh = maxthresh = K` compares the queue
/// before the arriving packet with `≥`, and so do we).
///
/// Non-ECT packets (TCP ACKs) are never marked and never dropped early.
#[derive(Debug)]
pub struct EcnThreshold {
    fifo: Fifo,
    limit: Amount,
    k: Amount,
}

impl EcnThreshold {
    /// Buffer `limit`, marking threshold `k`.
    pub fn new(limit: Amount, k: Amount) -> Self {
        Self {
            fifo: Fifo::default(),
            limit,
            k,
        }
    }
}

impl Discipline for EcnThreshold {
    const NAME: &'static str = "ecn";
    const ABOUT: &'static str =
        "drop-tail plus CE marking when the instantaneous queue >= K (DCTCP)";
    type Config = EcnConfig;
    fn build(cfg: &EcnConfig, _cx: &BuildCx<'_>) -> Self {
        Self::new(cfg.buffer, cfg.mark_threshold)
    }
    fn validate(cfg: &EcnConfig) -> Result<(), String> {
        holds_a_frame(&cfg.buffer, "buffer")
    }
}

impl QueueDisc for EcnThreshold {
    #[inline]
    fn enqueue(&mut self, pkt: PacketId, cx: &mut QdiscCx<'_>) -> Verdict {
        let size = u32::from(cx.pool.get(pkt).wire_bytes);
        if !self.fifo.fits(self.limit, size) {
            return Verdict::Drop(DropReason::Overflow);
        }
        if self
            .k
            .reached_by(self.fifo.bytes(), u64::from(self.fifo.len()))
        {
            cx.mark_ce(pkt);
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
            mark: Some(self.k),
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

    /// `kind = "ecn"` needs only its buffer: K defaults to the default queue's 65 packets.
    #[test]
    fn the_marking_threshold_has_a_default() {
        let c: EcnConfig = toml::from_str("buffer = \"100pkts\"").unwrap();
        assert_eq!(c.mark_threshold, Amount::Packets(65));
        let c: EcnConfig =
            toml::from_str("buffer = \"100pkts\"\nmark_threshold = \"20pkts\"").unwrap();
        assert_eq!(c.mark_threshold, Amount::Packets(20));
    }

    #[test]
    fn ecn_threshold_marks_iff_backlog_at_least_k() {
        let mut q = EcnThreshold::new(Amount::Packets(100), Amount::Packets(3));
        let mut d = QdiscDriver::new();
        let mut ids = Vec::new();
        for _ in 0..6 {
            d.offer(&mut q, 1538, Class::Data, Ecn::Ect);
        }
        while let Some(p) = d.take(&mut q) {
            ids.push(d.ecn_of(p));
        }
        assert_eq!(
            ids,
            [Ecn::Ect, Ecn::Ect, Ecn::Ect, Ecn::Ce, Ecn::Ce, Ecn::Ce]
        );
        assert_eq!(d.marks, 3);
        // ACKs (not ECT) above K pass unmarked.
        for _ in 0..4 {
            d.offer(&mut q, 84, Class::Control, Ecn::NotEct);
        }
        assert_eq!(d.marks, 3);
    }
}
