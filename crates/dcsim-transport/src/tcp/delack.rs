//! When a TCP receiver acknowledges: at once, every second segment, or as Linux does.
//!
//! Linux's rules (net/ipv4/tcp_input.c and tcp_output.c of 6.x: `tcp_event_data_recv`,
//! `__tcp_ack_snd_check`, `tcp_send_delayed_ack`, the delayed-ACK timer, and SACK
//! compression):
//!
//! - **Quick ACKs.** The first in-order data, a gap of more than the RTO since the last,
//!   or a duplicate segment puts the receiver in quick-ACK mode: the next 16
//!   (`TCP_MAX_QUICKACKS`) ACKs go at once. The first CE mark does too, for two ACKs
//!   (until the sender answers with CWR).
//! - **Every second full segment.** Otherwise an ACK goes when more than one full segment
//!   is unacknowledged; else the delayed-ACK timer is set to `ato`, which adapts to the
//!   gap between segments (at least 40 ms, `TCP_ATO_MIN`; capped by the RTT estimate's
//!   bound of 40 ms or more, and by 200 ms), doubles when the timer fires, and is not
//!   pushed later by new segments.
//! - **Out of order.** A segment that fills the last hole is acknowledged at once. While
//!   the out-of-order queue is not empty, the first three ACKs at a given `rcv_nxt` go at
//!   once (enough for the sender's fast retransmit); further ones are compressed: one ACK
//!   after 44 (`tcp_comp_sack_nr`) or after 5 % of the RTT, at most 1 ms
//!   (`tcp_comp_sack_delay_ns`).

use core::fmt;

use dcsim_engine::{Dur, Time};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A receiver's acknowledgement policy (`transport.delayed_ack`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DelayedAck {
    /// `false`: one ACK per segment (the reference data-centre simulations).
    #[default]
    Off,
    /// `true`: every second segment, or after `delack_timeout`; at once on reordering.
    EverySecond,
    /// `"linux"`: Linux's rules (this module's documentation).
    Linux,
}

impl Serialize for DelayedAck {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Off => s.serialize_bool(false),
            Self::EverySecond => s.serialize_bool(true),
            Self::Linux => s.serialize_str("linux"),
        }
    }
}

impl<'de> Deserialize<'de> for DelayedAck {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = DelayedAck;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("true, false or \"linux\"")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<DelayedAck, E> {
                Ok(if v {
                    DelayedAck::EverySecond
                } else {
                    DelayedAck::Off
                })
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<DelayedAck, E> {
                match v {
                    "linux" => Ok(DelayedAck::Linux),
                    _ => Err(E::invalid_value(de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// `TCP_ATO_MIN` and `TCP_DELACK_MIN` (HZ / 25).
const ATO_MIN: Dur = Dur::from_ms(40);
/// `TCP_DELACK_MAX` (HZ / 5), the default `icsk_delack_max`.
const DELACK_MAX: Dur = Dur::from_ms(200);
/// The delayed ACK's ceiling without the push flag or ping-pong mode (HZ / 2).
const ATO_CEILING: Dur = Dur::from_ms(500);
/// `TCP_MAX_QUICKACKS`.
const MAX_QUICKACKS: u32 = 16;
/// `tcp_comp_sack_nr`.
const COMP_SACK_NR: u32 = 44;
/// `tcp_comp_sack_delay_ns`.
const COMP_SACK_DELAY: Dur = Dur::from_ms(1);
/// Duplicate ACKs sent at once before compression (`TCP_FASTRETRANS_THRESH`).
const FAST_RETRANS_THRESH: u32 = 3;

/// What the receiver does after a segment, under Linux's rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AckNow {
    /// Send an ACK now.
    Send,
    /// Set the delayed-ACK timer for this time (it may already be set for then).
    Delay(Time),
    /// Hold the ACK for SACK compression; set the compression timer for this time unless
    /// it is set.
    Compress(Time),
}

/// Linux's delayed-ACK state of one receiver.
#[derive(Clone, Debug)]
pub(crate) struct LinuxAcks {
    /// `icsk_ack.ato` (zero before the first data).
    ato: Dur,
    /// `icsk_ack.quick`: ACKs still to send at once.
    quick: u32,
    /// When the last in-order data arrived (`lrcvtime`).
    lrcvtime: Time,
    /// The receiver's retransmission timeout, which bounds `ato`.
    rto: Dur,
    /// The receiver's RTT estimate, from the handshake or from the timestamps data echoes.
    rtt: Option<Dur>,
    /// `TCP_ECN_DEMAND_CWR`: a CE mark was seen and the sender has not yet answered.
    demand_cwr: bool,
    /// SACK compression: `rcv_nxt` of the current run, ACKs sent at once in it, ACKs held.
    compressed_rcv_nxt: u64,
    dup_acks: u32,
    compressed: u32,
    /// `rcv_nxt` when the last ACK left (`rcv_wup`).
    rcv_wup: u64,
}

impl LinuxAcks {
    /// The state of a receiver whose retransmission timeout is `rto`.
    pub(crate) fn new(rto: Dur) -> Self {
        Self {
            ato: Dur::ZERO,
            quick: 0,
            lrcvtime: Time::ZERO,
            rto,
            rtt: None,
            demand_cwr: false,
            compressed_rcv_nxt: 0,
            dup_acks: 0,
            compressed: 0,
            rcv_wup: 0,
        }
    }

    /// A round-trip sample: the handshake's, or a data segment's echo of an ACK's time.
    pub(crate) fn rtt_sample(&mut self, rtt: Dur) {
        // tcp_rcv_rtt_update: an average with gain 1/8.
        self.rtt = Some(match self.rtt {
            None => rtt,
            Some(old) => Dur::from_ps(old.as_ps() - old.as_ps() / 8 + rtt.as_ps() / 8),
        });
    }

    /// `tcp_incr_quickack`: at least `max` quick ACKs, as far as a window of `rcv_wnd`
    /// bytes at `mss` allows.
    fn incr_quickack(&mut self, max: u32, rcv_wnd: u64, mss: u64) {
        let n = (rcv_wnd / (2 * mss.max(1))).clamp(2, u64::from(max)) as u32;
        self.quick = self.quick.max(n);
    }

    /// `tcp_enter_quickack_mode`.
    fn enter_quickack(&mut self, max: u32, rcv_wnd: u64, mss: u64) {
        self.incr_quickack(max, rcv_wnd, mss);
        self.ato = ATO_MIN;
    }

    /// A segment arrived: `in_order` new data, or a `duplicate` of data already held; with
    /// CE if `ce`, with CWR if `cwr`. Updates the ACK clock (`tcp_event_data_recv`) and
    /// the quick-ACK mode.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_segment(
        &mut self,
        now: Time,
        in_order: bool,
        duplicate: bool,
        ce: bool,
        cwr: bool,
        rcv_wnd: u64,
        mss: u64,
    ) {
        if cwr {
            self.demand_cwr = false;
        }
        if duplicate {
            self.enter_quickack(MAX_QUICKACKS, rcv_wnd, mss);
        }
        if in_order {
            if self.ato == Dur::ZERO {
                self.incr_quickack(MAX_QUICKACKS, rcv_wnd, mss);
                self.ato = ATO_MIN;
            } else {
                let m = now.saturating_since(self.lrcvtime);
                if m <= ATO_MIN / 2 {
                    self.ato = self.ato / 2 + ATO_MIN / 2;
                } else if m < self.ato {
                    self.ato = (self.ato / 2 + m).min(self.rto);
                } else if m > self.rto {
                    self.incr_quickack(MAX_QUICKACKS, rcv_wnd, mss);
                }
            }
            self.lrcvtime = now;
        }
        if ce && !self.demand_cwr {
            self.enter_quickack(2, rcv_wnd, mss);
            self.demand_cwr = true;
        }
    }

    /// `__tcp_ack_snd_check` after a segment: `rcv_nxt` now, whether out-of-order data is
    /// held (`ofo`), whether this segment closed the last hole (`filled`), the delayed-ACK
    /// timer's deadline if it is set, and the full segment size.
    pub(crate) fn decide(
        &mut self,
        now: Time,
        rcv_nxt: u64,
        ofo: bool,
        filled: bool,
        delack_deadline: Option<Time>,
        mss: u64,
    ) -> AckNow {
        if filled || rcv_nxt - self.rcv_wup > mss || self.quick > 0 {
            return AckNow::Send;
        }
        if !ofo {
            return self.delayed(now, delack_deadline);
        }
        if self.compressed >= COMP_SACK_NR {
            return AckNow::Send;
        }
        if self.compressed_rcv_nxt != rcv_nxt {
            self.compressed_rcv_nxt = rcv_nxt;
            self.dup_acks = 0;
        }
        if self.dup_acks < FAST_RETRANS_THRESH {
            self.dup_acks += 1;
            return AckNow::Send;
        }
        self.compressed += 1;
        // 5 % of the RTT, at most 1 ms (with no estimate, the most).
        let delay = self
            .rtt
            .map_or(COMP_SACK_DELAY, |r| (r / 20).min(COMP_SACK_DELAY));
        AckNow::Compress(now + delay)
    }

    /// `tcp_send_delayed_ack`: when the delayed ACK is due (or now, if the timer set
    /// before is about to fire).
    fn delayed(&self, now: Time, deadline: Option<Time>) -> AckNow {
        let mut ato = self.ato;
        if ato > ATO_MIN {
            let mut max_ato = ATO_CEILING;
            if let Some(rtt) = self.rtt {
                max_ato = max_ato.min(rtt.max(ATO_MIN));
            }
            ato = ato.min(max_ato);
        }
        ato = ato.min(DELACK_MAX);
        let mut at = now + ato;
        if let Some(old) = deadline {
            if old <= now + ato / 4 {
                return AckNow::Send;
            }
            at = at.min(old);
        }
        AckNow::Delay(at)
    }

    /// The delayed-ACK timer fired with an ACK pending: `ato` doubles, up to the RTO.
    pub(crate) fn timer_fired(&mut self) {
        self.ato = (self.ato * 2).min(self.rto);
    }

    /// An ACK left at `rcv_nxt` (`tcp_event_ack_sent`): quick mode counts down; held ACKs
    /// are no longer held.
    /// `tcp_grow_window` raised `rcv_ssthresh`: acknowledge this segment at once
    /// (`icsk_ack.quick |= 1`).
    pub(crate) fn window_grew(&mut self) {
        self.quick |= 1;
    }

    /// `__tcp_select_window` found the free space below half the window: quick-ACK mode
    /// ends.
    pub(crate) fn space_short(&mut self) {
        self.quick = 0;
    }

    pub(crate) fn ack_sent(&mut self, rcv_nxt: u64) {
        self.rcv_wup = rcv_nxt;
        self.compressed = 0;
        if self.quick > 0 {
            self.quick -= 1;
            if self.quick == 0 {
                self.ato = ATO_MIN;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;
    const WND: u64 = 3 << 20;

    fn at_us(us: u64) -> Time {
        Time::ZERO + Dur::from_us(us)
    }

    /// The first 16 ACKs go at once; then one per two full segments, and a lone segment
    /// waits 40 ms.
    #[test]
    fn quick_acks_then_every_second_segment() {
        let mut a = LinuxAcks::new(Dur::from_ms(200));
        let mut nxt = 0;
        let mut sent = 0;
        for i in 0..40u64 {
            let now = at_us(10 * i);
            nxt += MSS;
            a.on_segment(now, true, false, false, false, WND, MSS);
            match a.decide(now, nxt, false, false, None, MSS) {
                AckNow::Send => {
                    a.ack_sent(nxt);
                    sent += 1;
                }
                AckNow::Delay(t) => assert_eq!(t, now + Dur::from_ms(40), "segment {i}"),
                AckNow::Compress(_) => unreachable!(),
            }
        }
        // 16 quick ACKs, then one for every second of the remaining 24 segments.
        assert_eq!(sent, 16 + 12);
    }

    /// Out of order: three ACKs at once per `rcv_nxt`, then compression at 5 % of the RTT;
    /// the 44th held ACK goes.
    #[test]
    fn sack_compression_after_three_dupacks() {
        let mut a = LinuxAcks::new(Dur::from_ms(200));
        a.rtt_sample(Dur::from_us(200));
        a.ack_sent(0);
        a.quick = 0;
        let now = at_us(1000);
        let mut kinds = Vec::new();
        for _ in 0..5 {
            a.on_segment(now, false, false, false, false, WND, MSS);
            kinds.push(a.decide(now, 0, true, false, None, MSS));
        }
        assert_eq!(kinds[..3], [AckNow::Send; 3]);
        assert_eq!(kinds[3], AckNow::Compress(now + Dur::from_us(10)));
        a.compressed = COMP_SACK_NR;
        assert_eq!(a.decide(now, 0, true, false, None, MSS), AckNow::Send);
    }

    /// ato adapts to the gap between segments and doubles when the timer fires, within the
    /// RTO; an earlier deadline is kept; a deadline within ato/4 sends at once.
    #[test]
    fn ato_adapts_and_the_timer_is_not_pushed_later() {
        let mut a = LinuxAcks::new(Dur::from_ms(200));
        a.on_segment(at_us(0), true, false, false, false, WND, MSS);
        a.quick = 0;
        a.on_segment(at_us(30_000), true, false, false, false, WND, MSS);
        assert_eq!(a.ato, Dur::from_ms(50)); // 40/2 + 30
        a.timer_fired();
        assert_eq!(a.ato, Dur::from_ms(100));
        for _ in 0..3 {
            a.timer_fired();
        }
        assert_eq!(a.ato, Dur::from_ms(200));
        // ato 200 ms: a timer set for 60 ms from now stays; one within 50 ms sends now.
        let now = at_us(100_000);
        assert_eq!(
            a.delayed(now, Some(now + Dur::from_ms(60))),
            AckNow::Delay(now + Dur::from_ms(60))
        );
        assert_eq!(a.delayed(now, Some(now + Dur::from_ms(50))), AckNow::Send);
        // With an RTT estimate the delay is at most max(RTT, 40 ms).
        a.rtt_sample(Dur::from_us(100));
        assert_eq!(a.delayed(now, None), AckNow::Delay(now + Dur::from_ms(40)));
    }

    #[test]
    fn the_option_reads_booleans_and_linux() {
        #[derive(Deserialize, Serialize)]
        struct T {
            d: DelayedAck,
        }
        let t: T = toml::from_str("d = \"linux\"").unwrap();
        assert_eq!(t.d, DelayedAck::Linux);
        assert_eq!(
            toml::from_str::<T>("d = true").unwrap().d,
            DelayedAck::EverySecond
        );
        let e = toml::from_str::<T>("d = \"yes\"")
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("true, false or \"linux\""), "{e}");
        assert_eq!(toml::to_string(&t).unwrap().trim(), "d = \"linux\"");
    }
}
