//! Strict priority for control packets.

use serde::{Deserialize, Serialize};

use super::{
    Amount, BuildCx, Discipline, DropReason, Fifo, PortFeatures, Qdisc, QdiscCx, QdiscSpec,
    QueueDisc, Verdict, class_of, nonzero,
};
use crate::{Class, PacketId};

/// Priority parameters (`kind = "prio"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrioConfig {
    /// Limit of the control band.
    pub control_buffer: Amount,
    /// Discipline for everything else.
    pub inner: Box<QdiscSpec>,
}

/// Two strict-priority classes: control packets (ACKs, NACKs, credit requests and stops) in
/// a small FIFO served first; everything else in `inner`. Credits are not control: their
/// shaping belongs to the credit shaper.
pub struct Prio {
    control: Fifo,
    control_limit: Amount,
    inner: Qdisc,
}

impl Prio {
    /// A control band of `control_limit` ahead of `inner`.
    pub fn new(control_limit: Amount, inner: Qdisc) -> Self {
        Self {
            control: Fifo::default(),
            control_limit,
            inner,
        }
    }
}

impl Discipline for Prio {
    const NAME: &'static str = "prio";
    const ABOUT: &'static str =
        "strict priority of control packets (ACKs, signalling) over an inner discipline";
    type Config = PrioConfig;
    fn build(cfg: &PrioConfig, cx: &BuildCx<'_>) -> Self {
        Self::new(cfg.control_buffer, cx.inner(&cfg.inner))
    }
    fn validate(cfg: &PrioConfig) -> Result<(), String> {
        nonzero(&cfg.control_buffer, "control_buffer")?;
        cfg.inner.validate().map_err(|e| format!("inner.{e}"))
    }
    fn features(cfg: &PrioConfig) -> PortFeatures {
        cfg.inner.features()
    }
}

impl QueueDisc for Prio {
    #[inline]
    fn enqueue(&mut self, pkt: PacketId, cx: &mut QdiscCx<'_>) -> Verdict {
        let (class, size) = class_of(cx.pool, pkt);
        if class != Class::Control {
            return self.inner.enqueue(pkt, cx);
        }
        if !self.control.fits(self.control_limit, size) {
            return Verdict::Drop(DropReason::Overflow);
        }
        self.control.push(pkt, size);
        Verdict::Accept
    }
    #[inline]
    fn dequeue(&mut self, cx: &mut QdiscCx<'_>) -> Option<PacketId> {
        self.control.pop().or_else(|| self.inner.dequeue(cx))
    }
    fn backlog_bytes(&self) -> u64 {
        self.control.bytes() + self.inner.backlog_bytes()
    }
    fn backlog_pkts(&self) -> u32 {
        self.control.len() + self.inner.backlog_pkts()
    }
    fn next_wakeup(&self, now: dcsim_engine::Time) -> Option<dcsim_engine::Time> {
        self.inner.next_wakeup(now)
    }
}

#[cfg(test)]
mod tests {
    use super::super::DropTail;
    use super::*;
    use crate::Ecn;
    use crate::testkit::QdiscDriver;

    #[test]
    fn prio_serves_control_before_data() {
        let mut q = Prio::new(
            Amount::Packets(2),
            Qdisc::DropTail(DropTail::new(Amount::Packets(10))),
        );
        let mut d = QdiscDriver::new();
        d.offer(&mut q, 1538, Class::Data, Ecn::Ect);
        d.offer(&mut q, 84, Class::Control, Ecn::NotEct);
        d.offer(&mut q, 84, Class::Control, Ecn::NotEct);
        assert!(matches!(
            d.offer(&mut q, 84, Class::Control, Ecn::NotEct),
            Verdict::Drop(_)
        ));
        let ids: Vec<PacketId> = std::iter::from_fn(|| d.take(&mut q)).collect();
        let sizes: Vec<u16> = ids.iter().map(|&p| d.pool.get(p).wire_bytes).collect();
        assert_eq!(sizes, [84, 84, 1538]);
    }
}
