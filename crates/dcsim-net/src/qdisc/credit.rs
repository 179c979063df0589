//! ExpressPass's credit shaper: credits in a small queue of their own behind a token bucket
//! at the credit share of the line rate, served before data when tokens allow.

use dcsim_engine::{Rate, Time};
use serde::{Deserialize, Serialize};

use super::{
    Amount, BuildCx, Discipline, DropReason, Fifo, PortFeatures, Qdisc, QdiscCx, QdiscSpec,
    QueueDisc, Verdict, class_of, nonzero,
};
use crate::wire::{MAX_WIRE_BYTES, MIN_WIRE_BYTES};
use crate::{Class, PacketId};

/// Credit-shaper parameters as written in a scenario (`kind = "credit-shaper"`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreditShaperConfig {
    /// Credit queue capacity: credits (`"8pkts"`) or bytes. Arrivals beyond it are dropped.
    /// Default 8 credits (ExpressPass SIGCOMM'17 testbed and fat-tree script).
    #[serde(default = "default_credit_buffer")]
    pub credit_buffer: Amount,
    /// Token bucket depth: credits (`"2pkts"`, counted at `credit_size`) or bytes. Default
    /// 2 credits (testbed; the ns-2 default is 10).
    #[serde(default = "default_burst")]
    pub credit_burst: Amount,
    /// Average credit wire size used for the credit share and to count `pkts` (84 B).
    #[serde(default = "default_credit_size")]
    pub credit_size: dcsim_engine::ByteSize,
    /// Token rate as a fraction of the line rate. Default: credit_size / (credit_size +
    /// 1538), 5.18 % for 84 B credits, so data answering credits can never exceed the
    /// remaining 94.82 % of a link.
    #[serde(default)]
    pub credit_share: Option<f64>,
    /// Discipline of everything that is not a credit (default drop-tail, 100 full frames,
    /// the ns-2 `data_limit_`).
    #[serde(default = "default_inner")]
    pub inner: Box<QdiscSpec>,
}

fn default_credit_buffer() -> Amount {
    Amount::Packets(8)
}
fn default_burst() -> Amount {
    Amount::Packets(2)
}
fn default_credit_size() -> dcsim_engine::ByteSize {
    dcsim_engine::ByteSize(u64::from(MIN_WIRE_BYTES))
}
fn default_inner() -> Box<QdiscSpec> {
    Box::new(QdiscSpec::DropTail(super::DropTailConfig {
        buffer: Amount::Bytes(100 * u64::from(MAX_WIRE_BYTES)),
    }))
}

impl Default for CreditShaperConfig {
    fn default() -> Self {
        Self {
            credit_buffer: default_credit_buffer(),
            credit_burst: default_burst(),
            credit_size: default_credit_size(),
            credit_share: None,
            inner: default_inner(),
        }
    }
}

impl CreditShaperConfig {
    fn validate(&self) -> Result<(), String> {
        nonzero(&self.credit_buffer, "credit_buffer")?;
        if self.credit_size.0 == 0 {
            return Err("credit_size: must be greater than zero".into());
        }
        if let Some(s) = self.credit_share
            && !(s > 0.0 && s <= 1.0)
        {
            return Err(format!("credit_share: must be in (0, 1], got {s}"));
        }
        if self.credit_burst.as_bytes(self.credit_size.0) < self.credit_size.0 {
            return Err("credit_burst: must hold at least one credit".into());
        }
        self.inner.validate().map_err(|e| format!("inner.{e}"))
    }

    /// The token rate on a link of `line`: the credit share of it, as a fraction
    /// `(numerator, denominator)` of the line rate in parts per 10⁹ when a share is given,
    /// else exactly `credit_size / (credit_size + 1538)`.
    pub fn share(&self) -> (u64, u64) {
        match self.credit_share {
            Some(s) => ((s * 1e9).round() as u64, 1_000_000_000),
            None => (
                self.credit_size.0,
                self.credit_size.0 + u64::from(MAX_WIRE_BYTES),
            ),
        }
    }

    pub(crate) fn build(&self, inner: Qdisc, line: Rate) -> CreditShaper {
        let (num, den) = self.share();
        CreditShaper {
            credits: Fifo::default(),
            credit_limit: self.credit_buffer,
            credit_size: self.credit_size.0,
            inner,
            max_tokens: self.credit_burst.as_bytes(self.credit_size.0),
            tokens: 0,
            acc: 0,
            clock: Time::ZERO,
            rate_num: u128::from(line.bps()) * u128::from(num),
            unit: 8 * 1_000_000_000_000 * u128::from(den),
            max_credit_bytes: 0,
        }
    }
}

/// The credit shaper (ns-2 `Queue/XPassDropTail`, with exact token arithmetic).
///
/// - Credits (class [`Class::Credit`]) go to their own FIFO, tail-dropped at
///   `credit_buffer`; everything else goes to `inner`.
/// - Tokens, in bytes, accrue at the credit share of the line rate and are capped at the
///   burst. They are computed lazily: the bucket keeps the exact remainder (in
///   bit·picoseconds), so no rounding drifts over any run length.
/// - Dequeue: the head credit if the tokens cover its size; otherwise the next packet of
///   `inner`; otherwise, with a credit waiting, nothing until the tokens suffice
///   ([`QueueDisc::next_wakeup`]).
///
/// Starting with an empty bucket at time zero, the bytes of credits sent in any interval
/// `[t, t + d]` never exceed `burst + rate·d` (property-tested).
pub struct CreditShaper {
    credits: Fifo,
    credit_limit: Amount,
    credit_size: u64,
    inner: Qdisc,
    max_tokens: u64,
    tokens: u64,
    /// Accrued but not yet whole bytes of tokens, in bit·ps·(share denominator).
    acc: u128,
    clock: Time,
    /// line bps × share numerator: tokens accrue at `rate_num / unit` bytes per ps.
    rate_num: u128,
    /// 8·10¹² × share denominator.
    unit: u128,
    max_credit_bytes: u64,
}

impl CreditShaper {
    /// Brings the bucket up to `now`.
    #[inline]
    fn refill(&mut self, now: Time) {
        if now <= self.clock {
            return;
        }
        let dt = u128::from(now.0 - self.clock.0);
        self.clock = now;
        if self.tokens >= self.max_tokens {
            self.acc = 0;
            return;
        }
        self.acc += dt * self.rate_num;
        let whole = self.acc / self.unit;
        self.acc %= self.unit;
        let t = u128::from(self.tokens) + whole;
        if t >= u128::from(self.max_tokens) {
            self.tokens = self.max_tokens;
            self.acc = 0;
        } else {
            self.tokens = t as u64;
        }
    }

    /// Bytes of credits waiting.
    pub fn credit_backlog_bytes(&self) -> u64 {
        self.credits.bytes()
    }
    /// The largest credit backlog seen, bytes.
    pub fn max_credit_backlog_bytes(&self) -> u64 {
        self.max_credit_bytes
    }
    /// Tokens now (as of the last refill), bytes.
    pub fn tokens(&self) -> u64 {
        self.tokens
    }
    /// Average credit size this shaper counts with, bytes.
    pub fn credit_size(&self) -> u64 {
        self.credit_size
    }
}

impl Discipline for CreditShaper {
    const NAME: &'static str = "credit-shaper";
    const ABOUT: &'static str =
        "ExpressPass: credit queue + token bucket at 84/(84+1538) of the line, then data";
    type Config = CreditShaperConfig;
    fn build(cfg: &CreditShaperConfig, cx: &BuildCx<'_>) -> Self {
        cfg.build(cx.inner(&cfg.inner), cx.line)
    }
    fn validate(cfg: &CreditShaperConfig) -> Result<(), String> {
        cfg.validate()
    }
    fn features(cfg: &CreditShaperConfig) -> PortFeatures {
        PortFeatures::CREDIT_SHAPING | cfg.inner.features()
    }
}

impl QueueDisc for CreditShaper {
    #[inline]
    fn enqueue(&mut self, pkt: PacketId, cx: &mut QdiscCx<'_>) -> Verdict {
        let (class, size) = class_of(cx.pool, pkt);
        if class != Class::Credit {
            return self.inner.enqueue(pkt, cx);
        }
        if !self.credits.fits(self.credit_limit, size) {
            return Verdict::Drop(DropReason::Overflow);
        }
        self.credits.push(pkt, size);
        self.max_credit_bytes = self.max_credit_bytes.max(self.credits.bytes());
        Verdict::Accept
    }
    #[inline]
    fn dequeue(&mut self, cx: &mut QdiscCx<'_>) -> Option<PacketId> {
        if let Some((pkt, size)) = self.credits.peek() {
            self.refill(cx.now);
            if self.tokens >= u64::from(size) {
                self.tokens -= u64::from(size);
                self.credits.pop();
                return Some(pkt);
            }
        }
        self.inner.dequeue(cx)
    }
    fn backlog_bytes(&self) -> u64 {
        self.credits.bytes() + self.inner.backlog_bytes()
    }
    fn backlog_pkts(&self) -> u32 {
        self.credits.len() + self.inner.backlog_pkts()
    }
    /// When the tokens will cover the head credit (only asked when nothing was eligible).
    fn next_wakeup(&self, now: Time) -> Option<Time> {
        let (_, size) = self.credits.peek()?;
        let need = u128::from(u64::from(size).saturating_sub(self.tokens));
        // Time for `acc` to grow from its value at `clock` to need·unit.
        let target = need * self.unit;
        let missing = target.saturating_sub(self.acc);
        let ps = missing.div_ceil(self.rate_num.max(1));
        let at = Time(
            self.clock
                .0
                .saturating_add(u64::try_from(ps).unwrap_or(u64::MAX)),
        );
        Some(at.max(now))
    }
}

#[cfg(test)]
mod tests {
    use dcsim_engine::RngTree;
    use proptest::prelude::*;

    use super::*;
    use crate::Ecn;
    use crate::testkit::QdiscDriver;

    fn shaper(burst_credits: u64, buffer_credits: u64) -> CreditShaper {
        let spec = CreditShaperConfig {
            credit_burst: Amount::Packets(burst_credits),
            credit_buffer: Amount::Packets(buffer_credits),
            ..CreditShaperConfig::default()
        };
        let inner = spec.inner.build(&RngTree::new(0), 0, Rate::from_gbps(10));
        spec.build(inner, Rate::from_gbps(10))
    }

    #[test]
    fn credit_share_is_84_over_1622_and_matches_ns2_at_10g() {
        let s = CreditShaperConfig::default();
        assert_eq!(s.share(), (84, 1622));
        // ns-2's token_refresh_rate_ for 10G: 64,734,895 B/s.
        let mut q = shaper(1_000_000, 8);
        q.refill(Time(1_000_000_000_000));
        assert_eq!(q.tokens, 64_734_895);
    }

    #[test]
    fn credits_go_first_when_tokens_allow_else_data() {
        let mut q = shaper(2, 8);
        let mut d = QdiscDriver::new();
        d.offer(&mut q, 1538, Class::Data, Ecn::NotEct);
        d.offer(&mut q, 84, Class::Credit, Ecn::NotEct);
        // No tokens yet at t = 0: data goes first, the credit waits.
        let p = d.take(&mut q).unwrap();
        assert_eq!(d.pool.get(p).class, Class::Data);
        assert!(d.take(&mut q).is_none());
        let wake = q.next_wakeup(d.now).unwrap();
        // 84 B at 10 Gb/s x 84/1622 = 1622 x 8 / 10 Gb/s = 1297.6 ns.
        assert_eq!(wake, Time(1_297_600));
        d.now = wake;
        let p = d.take(&mut q).unwrap();
        assert_eq!(d.pool.get(p).class, Class::Credit);
        assert_eq!(q.tokens, 0);
    }

    #[test]
    fn credit_queue_drops_beyond_its_capacity() {
        let mut q = shaper(2, 8);
        let mut d = QdiscDriver::new();
        for _ in 0..8 {
            assert_eq!(
                d.offer(&mut q, 84, Class::Credit, Ecn::NotEct),
                Verdict::Accept
            );
        }
        assert_eq!(
            d.offer(&mut q, 84, Class::Credit, Ecn::NotEct),
            Verdict::Drop(DropReason::Overflow)
        );
        // Data is unaffected by a full credit queue.
        assert_eq!(
            d.offer(&mut q, 1538, Class::Data, Ecn::NotEct),
            Verdict::Accept
        );
        assert_eq!(q.max_credit_backlog_bytes(), 8 * 84);
    }

    proptest! {
        /// Token bucket: over every window [t_i, t_j] between two credit departures, bytes
        /// of credits sent ≤ burst + rate·(t_j − t_i), and
        /// the credit queue never exceeds its capacity. Credits arrive at random times and
        /// sizes (76–92 B), data competes.
        #[test]
        fn token_bucket_never_exceeds_its_rate_over_any_window(
            ops in proptest::collection::vec((0u64..3_000_000, 76u32..=92, any::<bool>()), 1..300),
            burst in 1u64..10,
        ) {
            let mut q = shaper(burst, 8);
            let mut d = QdiscDriver::new();
            let mut sent: Vec<(u64, u32)> = Vec::new();
            for (dt, size, data) in ops {
                d.now = Time(d.now.0 + dt);
                d.offer(&mut q, if data { 1538 } else { size }, if data { Class::Data } else { Class::Credit }, Ecn::NotEct);
                prop_assert!(q.credits.len() <= 8);
                while let Some(p) = d.take(&mut q) {
                    let pk = *d.pool.get(p);
                    if pk.class == Class::Credit { sent.push((d.now.0, u32::from(pk.wire_bytes))); }
                    d.pool.free(p);
                }
            }
            // rate in bytes per ps = 10e9 * 84 / 1622 / 8 / 1e12
            let rate = 10e9 * 84.0 / 1622.0 / 8.0 / 1e12;
            let burst_b = (burst * 84) as f64;
            for i in 0..sent.len() {
                let mut bytes = 0.0;
                for j in i..sent.len() {
                    bytes += f64::from(sent[j].1);
                    let window = (sent[j].0 - sent[i].0) as f64;
                    prop_assert!(bytes <= burst_b + rate * window + 1e-6,
                        "{bytes} B in {window} ps (burst {burst_b})");
                }
            }
        }
    }
}
