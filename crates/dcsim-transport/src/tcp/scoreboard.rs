//! The sender's scoreboard for SACK (RFC 2018): every segment sent and not yet cumulatively
//! acknowledged, with what is known of it (SACKed, lost, retransmitted) and when it was last
//! sent, as Linux's retransmission queue keeps them. On it:
//!
//! - the bytes in flight, RFC 6675's `pipe` (Linux's `tcp_packets_in_flight`): sent, less
//!   SACKed and lost, plus retransmitted;
//! - RFC 6675's loss rule (`IsLost`: at least `DupThresh` segments SACKed above), used by
//!   the `ns2` profile;
//! - RACK (RFC 8985 §6, Linux's `tcp_rack_detect_loss`): a segment is lost once a segment
//!   sent after it has been delivered and it has been out for longer than that segment's
//!   round trip plus a reordering window; the earliest time a segment would be lost is
//!   returned, for the reordering timer.
//!
//! Memory: one 32-byte entry per segment in flight, in a ring that keeps its capacity,
//! so steady state allocates nothing.

use std::collections::VecDeque;

use dcsim_engine::{Dur, Time};

const SACKED: u8 = 1;
const LOST: u8 = 2;
/// Retransmitted, and that retransmission is neither delivered nor lost yet.
const RETRANS: u8 = 4;
/// Retransmitted at least once (a delivery then gives no unambiguous round trip).
const EVER_RETRANS: u8 = 8;

#[derive(Clone, Copy, Debug)]
struct Seg {
    start: u64,
    end: u64,
    /// When it was last sent.
    sent: Time,
    flags: u8,
}

impl Seg {
    fn len(&self) -> u64 {
        self.end - self.start
    }
}

/// What one acknowledgement changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct AckResult {
    /// Bytes newly delivered: cumulatively acknowledged or SACKed for the first time.
    pub delivered: u64,
    /// Of those, bytes newly SACKed.
    pub sacked: u64,
    /// Whether a segment sent after RACK's reference was delivered (RACK advanced).
    pub rack_advanced: bool,
    /// When the oldest segment the ACK acknowledged cumulatively, not SACKed before, was
    /// sent, if no segment it acknowledged cumulatively was ever retransmitted (Linux's
    /// `first_ackt`, its round-trip sample; `FLAG_RETRANS_DATA_ACKED` voids it).
    pub first_sent: Option<Time>,
}

/// The scoreboard of one sender.
#[derive(Default)]
pub(crate) struct Scoreboard {
    segs: VecDeque<Seg>,
    /// Bytes of the segments held.
    out: u64,
    sacked: u64,
    lost: u64,
    retrans: u64,
    /// RACK: the send time and end of the most recently sent delivered segment, and the
    /// round trip of the last delivery that advanced it.
    rack_sent: Time,
    rack_end: u64,
    rack_rtt: Dur,
}

impl Scoreboard {
    /// Records a new segment `[start, end)` sent at `now` (above everything held).
    pub(crate) fn sent_new(&mut self, start: u64, end: u64, now: Time) {
        debug_assert!(self.segs.back().is_none_or(|s| s.end <= start));
        self.segs.push_back(Seg {
            start,
            end,
            sent: now,
            flags: 0,
        });
        self.out += end - start;
    }

    /// Records a retransmission of the segment that starts at `start`, at `now`; returns
    /// its length (0 if no such segment is held).
    pub(crate) fn retransmitted(&mut self, start: u64, now: Time) -> u64 {
        let Some(i) = self.index_of(start) else {
            return 0;
        };
        let s = &mut self.segs[i];
        if s.flags & RETRANS == 0 {
            self.retrans += s.len();
        }
        s.flags |= RETRANS | EVER_RETRANS;
        s.sent = now;
        s.len()
    }

    /// Splits the segment that starts at `start` at byte `at` (inside it) into two with the
    /// same state, so that a part of a super-packet can go again alone (`gso`).
    pub(crate) fn split(&mut self, start: u64, at: u64) {
        let Some(i) = self.index_of(start) else {
            return;
        };
        let s = self.segs[i];
        if at <= s.start || at >= s.end {
            return;
        }
        self.segs[i].end = at;
        self.segs.insert(i + 1, Seg { start: at, ..s });
    }

    fn index_of(&self, start: u64) -> Option<usize> {
        let i = self.segs.partition_point(|s| s.start < start);
        (i < self.segs.len() && self.segs[i].start == start).then_some(i)
    }

    /// Bytes in flight (RFC 6675's pipe): held, less SACKed and lost, plus retransmitted.
    pub(crate) fn pipe(&self) -> u64 {
        (self.out + self.retrans).saturating_sub(self.sacked + self.lost)
    }
    /// Bytes SACKed.
    pub(crate) fn sacked_bytes(&self) -> u64 {
        self.sacked
    }
    /// Bytes marked lost and not yet delivered (retransmitted or not: Linux's `lost_out`).
    pub(crate) fn lost_bytes(&self) -> u64 {
        self.lost
    }
    /// When the oldest segment held was last sent.
    pub(crate) fn first_sent(&self) -> Option<Time> {
        self.segs.front().map(|s| s.sent)
    }
    /// Whether nothing is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// The first segment marked lost that is neither SACKed nor retransmitted since:
    /// `(start, end)` (RFC 6675's NextSeg, rule 1).
    pub(crate) fn next_lost(&self) -> Option<(u64, u64)> {
        if self.lost == 0 {
            return None;
        }
        self.segs
            .iter()
            .find(|s| s.flags & (LOST | SACKED | RETRANS) == LOST)
            .map(|s| (s.start, s.end))
    }

    /// The highest segment held that is not SACKed (what a loss probe resends).
    pub(crate) fn last_unsacked(&self) -> Option<(u64, u64)> {
        self.segs
            .iter()
            .rev()
            .find(|s| s.flags & SACKED == 0)
            .map(|s| (s.start, s.end))
    }

    /// Takes in an acknowledgement at `now`: everything below `ack` is delivered, and the
    /// SACK blocks (absolute byte ranges) are. RACK's reference advances with the most
    /// recently sent segment it delivers; `min_rtt` is the connection's smallest round
    /// trip, below which the delivery of a retransmitted segment is taken as its original's.
    /// `echo` is the send time of the data the ACK answers (the timestamp option's echo,
    /// `Time::ZERO` for none): a retransmitted segment acknowledged cumulatively by an ACK
    /// that echoes an earlier send was delivered by an earlier transmission, and moves
    /// nothing (Linux's `tcp_skb_spurious_retrans`).
    pub(crate) fn on_ack(
        &mut self,
        ack: u64,
        blocks: impl IntoIterator<Item = (u64, u64)>,
        now: Time,
        min_rtt: Dur,
        echo: Time,
    ) -> AckResult {
        let mut r = AckResult::default();
        let mut retrans_acked = false;
        while let Some(s) = self.segs.front().copied() {
            if s.end > ack {
                break;
            }
            self.segs.pop_front();
            self.out -= s.len();
            retrans_acked |= s.flags & EVER_RETRANS != 0;
            if s.flags & SACKED != 0 {
                self.sacked -= s.len();
            } else {
                if r.first_sent.is_none() {
                    r.first_sent = Some(s.sent);
                }
                r.delivered += s.len();
                if s.flags & LOST != 0 {
                    self.lost -= s.len();
                }
                if s.flags & RETRANS != 0 {
                    self.retrans -= s.len();
                }
                let by_earlier = s.flags & EVER_RETRANS != 0 && echo > Time::ZERO && echo < s.sent;
                if !by_earlier {
                    r.rack_advanced |= self.rack_advance(s, now, min_rtt);
                }
            }
        }
        for (start, end) in blocks {
            if end <= ack {
                continue;
            }
            let mut i = self.segs.partition_point(|s| s.end <= start);
            while i < self.segs.len() && self.segs[i].start < end {
                let s = self.segs[i];
                if s.flags & SACKED == 0 && s.start >= start && s.end <= end {
                    let len = s.len();
                    self.segs[i].flags = (s.flags | SACKED) & !(LOST | RETRANS);
                    self.sacked += len;
                    if s.flags & LOST != 0 {
                        self.lost -= len;
                    }
                    if s.flags & RETRANS != 0 {
                        self.retrans -= len;
                    }
                    r.delivered += len;
                    r.sacked += len;
                    r.rack_advanced |= self.rack_advance(s, now, min_rtt);
                }
                i += 1;
            }
        }
        if retrans_acked {
            r.first_sent = None;
        }
        r
    }

    /// RFC 8985 §6.2 step 2 (Linux's `tcp_rack_advance`): a delivery of `s` at `now`.
    fn rack_advance(&mut self, s: Seg, now: Time, min_rtt: Dur) -> bool {
        let rtt = now.saturating_since(s.sent);
        // A retransmitted segment delivered sooner than a round trip after its
        // retransmission was delivered by its original: no reliable sample.
        if s.flags & EVER_RETRANS != 0 && rtt < min_rtt {
            return false;
        }
        self.rack_rtt = rtt;
        if s.sent > self.rack_sent || (s.sent == self.rack_sent && s.end > self.rack_end) {
            self.rack_sent = s.sent;
            self.rack_end = s.end;
        }
        true
    }

    /// RACK's loss detection (RFC 8985 §6.2 step 5) at `now` with reordering window
    /// `reo_wnd`: marks lost every segment not delivered that was sent before RACK's
    /// reference and has been out for at least its round trip plus `reo_wnd`. Returns the
    /// bytes newly marked, and the latest time one of the others would be (RFC 8985's and
    /// Linux's reordering timeout: the timer waits for all of them).
    pub(crate) fn rack_detect(&mut self, now: Time, reo_wnd: Dur) -> (u64, Option<Time>) {
        let mut marked = 0;
        let mut next: Option<Time> = None;
        if self.rack_end == 0 {
            return (0, None);
        }
        let limit = self.rack_rtt + reo_wnd;
        for s in &mut self.segs {
            if s.flags & SACKED != 0 || s.flags & (LOST | RETRANS) == LOST {
                continue;
            }
            let sent_before =
                s.sent < self.rack_sent || (s.sent == self.rack_sent && s.end <= self.rack_end);
            if !sent_before {
                // Original transmissions above are later still; retransmissions were
                // sent later than every original segment held.
                if s.flags & RETRANS == 0 {
                    break;
                }
                continue;
            }
            let due = s.sent + limit;
            if due <= now {
                let len = s.end - s.start;
                if s.flags & RETRANS != 0 {
                    self.retrans -= len;
                }
                // A retransmission lost again was counted lost the first time (Linux's
                // `tcp_mark_skb_lost`).
                if s.flags & LOST == 0 {
                    self.lost += len;
                }
                s.flags = (s.flags | LOST) & !RETRANS;
                marked += len;
            } else {
                next = Some(next.map_or(due, |n| n.max(due)));
            }
        }
        (marked, next)
    }

    /// RFC 6675's `IsLost` applied to every segment (the `ns2` profile): a segment not
    /// SACKed with at least `dupthresh` SACKed segments above it, or at least
    /// `(dupthresh − 1)·mss + 1` SACKed bytes, is lost. Returns the bytes newly marked.
    pub(crate) fn mark_lost_by_dupthresh(&mut self, dupthresh: u32, mss: u64) -> u64 {
        if self.sacked == 0 {
            return 0; // nothing SACKed, nothing above any hole
        }
        let mut above_segs = 0u32;
        let mut above_bytes = 0u64;
        let mut marked = 0;
        let bytes_needed = u64::from(dupthresh.saturating_sub(1)) * mss + 1;
        for s in self.segs.iter_mut().rev() {
            if s.flags & SACKED != 0 {
                above_segs += 1;
                above_bytes += s.end - s.start;
                continue;
            }
            if s.flags & (LOST | RETRANS) != 0 {
                continue;
            }
            if above_segs >= dupthresh || above_bytes >= bytes_needed {
                s.flags |= LOST;
                let len = s.end - s.start;
                self.lost += len;
                marked += len;
            }
        }
        marked
    }

    /// After a retransmission timeout (Linux's `tcp_enter_loss`): every segment not SACKed
    /// is lost and none is in flight any more; with `clear_sacks` (ns-2's
    /// `clear_on_timeout_`) the SACK marks are forgotten too, so everything is resent.
    pub(crate) fn on_timeout(&mut self, clear_sacks: bool) {
        self.lost = 0;
        self.retrans = 0;
        if clear_sacks {
            self.sacked = 0;
        }
        for s in &mut self.segs {
            if clear_sacks {
                s.flags &= !SACKED;
            }
            if s.flags & SACKED == 0 {
                s.flags = (s.flags | LOST) & !RETRANS;
                self.lost += s.end - s.start;
            }
        }
    }

    /// Forgets everything (the flow is done).
    pub(crate) fn clear(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn t(us: u64) -> Time {
        Time::ZERO + Dur::from_us(us)
    }

    /// Ten segments sent 1 µs apart.
    fn ten() -> Scoreboard {
        let mut b = Scoreboard::default();
        for k in 0..10 {
            b.sent_new(k * MSS, (k + 1) * MSS, t(k));
        }
        b
    }

    #[test]
    fn pipe_counts_sent_less_sacked_and_lost_plus_retransmitted() {
        let mut b = ten();
        let min_rtt = Dur::from_us(50);
        assert_eq!(b.pipe(), 10 * MSS);
        // Segments 0 and 1 cumulatively acknowledged, 3 SACKed.
        let r = b.on_ack(2 * MSS, [(3 * MSS, 4 * MSS)], t(100), min_rtt, Time::ZERO);
        assert_eq!((r.delivered, r.sacked), (3 * MSS, MSS));
        assert_eq!(b.pipe(), 7 * MSS, "8 held, 1 SACKed");
        // The same block again, and 5 to 7: only the new ones count.
        let r = b.on_ack(
            2 * MSS,
            [(3 * MSS, 4 * MSS), (5 * MSS, 8 * MSS)],
            t(101),
            min_rtt,
            Time::ZERO,
        );
        assert_eq!((r.delivered, r.sacked), (3 * MSS, 3 * MSS));
        assert_eq!(b.pipe(), 4 * MSS);
        // RFC 6675: segments 2 and 4 have at least three SACKed segments above; 8 and 9
        // have none.
        assert_eq!(b.mark_lost_by_dupthresh(3, MSS), 2 * MSS);
        assert_eq!(b.pipe(), 2 * MSS, "only 8 and 9 in flight");
        assert_eq!(b.next_lost(), Some((2 * MSS, 3 * MSS)));
        assert_eq!(b.retransmitted(2 * MSS, t(102)), MSS);
        assert_eq!(b.pipe(), 3 * MSS, "the retransmission is in flight");
        assert_eq!(b.next_lost(), Some((4 * MSS, 5 * MSS)));
        // The retransmission delivered: the ACK jumps over the SACKed segment 3.
        let r = b.on_ack(4 * MSS, [(5 * MSS, 8 * MSS)], t(150), min_rtt, Time::ZERO);
        assert_eq!(r.delivered, MSS);
        assert_eq!((b.lost_bytes(), b.sacked_bytes()), (MSS, 3 * MSS));
    }

    /// RFC 8985: once a later segment is delivered, an earlier one is lost after the
    /// delivered segment's round trip plus the reordering window, not before.
    #[test]
    fn rack_marks_a_hole_lost_after_the_round_trip_and_the_window() {
        let mut b = ten();
        // Segment 0 lost; segment 1 (sent at 1 µs) SACKed at 101 µs: RTT 100 µs.
        let r = b.on_ack(0, [(MSS, 2 * MSS)], t(101), Dur::from_us(50), Time::ZERO);
        assert!(r.rack_advanced);
        let reo = Dur::from_us(25);
        // Segment 0 was sent at 0: lost at 0 + 100 + 25 = 125 µs.
        assert_eq!(b.rack_detect(t(101), reo), (0, Some(t(125))));
        assert_eq!(b.rack_detect(t(125), reo), (MSS, None));
        assert_eq!(b.next_lost(), Some((0, MSS)));
        // Segments sent after the reference are never judged by it.
        assert_eq!(b.lost_bytes(), MSS);
        // A lost retransmission is detected again once a later-sent segment is delivered.
        b.retransmitted(0, t(130));
        b.sent_new(10 * MSS, 11 * MSS, t(131));
        b.on_ack(
            0,
            [(MSS, 2 * MSS), (10 * MSS, 11 * MSS)],
            t(231),
            Dur::from_us(50),
            Time::ZERO,
        );
        let (marked, _) = b.rack_detect(t(231 + 100 + 25), reo);
        assert_eq!(
            marked,
            9 * MSS,
            "the retransmission of segment 0 is lost again, and 2 to 9 with it"
        );
        assert_eq!(b.next_lost(), Some((0, MSS)));
        // Segment 0 counts once: held 9, SACKed 2 (1 and 10), lost 9 (0, 2 to 9).
        assert_eq!(b.lost_bytes(), 9 * MSS);
        assert_eq!(b.pipe(), 0);
    }

    #[test]
    fn the_reordering_timeout_waits_for_the_last_segment_due() {
        // Segment 5 (sent at 5 µs) SACKed at 105 µs: 0 to 4 are due at 125 to 129 µs.
        let mut b = ten();
        b.on_ack(
            0,
            [(5 * MSS, 6 * MSS)],
            t(105),
            Dur::from_us(50),
            Time::ZERO,
        );
        let reo = Dur::from_us(25);
        assert_eq!(b.rack_detect(t(105), reo), (0, Some(t(129))));
        assert_eq!(b.rack_detect(t(127), reo), (3 * MSS, Some(t(129))));
        assert_eq!(b.rack_detect(t(129), reo), (2 * MSS, None));
    }

    #[test]
    fn a_cumulative_ack_that_echoes_the_original_send_moves_no_reference() {
        // Ten segments sent at 10 to 19 µs; segment 0 is marked lost and sent again at
        // 200 µs, and its original, only late, fills the hole 1 µs later.
        let board = || {
            let mut b = Scoreboard::default();
            for k in 0..10 {
                b.sent_new(k * MSS, (k + 1) * MSS, t(10 + k));
            }
            b.on_ack(0, [(MSS, 2 * MSS)], t(111), Dur::from_us(50), Time::ZERO);
            b.rack_detect(t(200), Dur::ZERO);
            b.retransmitted(0, t(200));
            b
        };
        // The ACK echoes the original's send time: nothing is learnt of the resend.
        let mut b = board();
        let r = b.on_ack(MSS, [], t(201), Dur::ZERO, t(10));
        assert_eq!(r.delivered, MSS);
        assert!(!r.rack_advanced);
        assert_eq!(b.rack_detect(t(201), Dur::ZERO).0, 0);
        // Taken as the resend's delivery, everything sent before it would be judged by a
        // 1 µs round trip: segments 2 to 9 lost at once.
        let mut c = board();
        assert!(c.on_ack(MSS, [], t(201), Dur::ZERO, t(200)).rack_advanced);
        assert_eq!(c.rack_detect(t(201), Dur::ZERO).0, 8 * MSS);
    }

    /// Linux's `first_ackt`: a cumulative ACK's round trip runs from the oldest segment it
    /// newly acknowledges (not one SACKed before), and from none if it acknowledges a
    /// retransmitted one.
    #[test]
    fn a_cumulative_ack_times_its_oldest_new_segment() {
        let mut b = Scoreboard::default();
        for k in 0..6 {
            b.sent_new(k * MSS, (k + 1) * MSS, t(10 + k));
        }
        // Segment 0 SACKed first: the ACK of 0-2 times from segment 1.
        b.on_ack(0, [(0, MSS)], t(100), Dur::ZERO, Time::ZERO);
        assert_eq!(
            b.on_ack(3 * MSS, [], t(101), Dur::ZERO, t(12)).first_sent,
            Some(t(11))
        );
        // Segment 3 resent: the ACK covering it gives no sample.
        b.retransmitted(3 * MSS, t(150));
        let r = b.on_ack(5 * MSS, [], t(160), Dur::ZERO, t(14));
        assert_eq!(r.delivered, 2 * MSS);
        assert_eq!(r.first_sent, None);
    }

    /// After a timeout everything not SACKed is lost; ns-2's clear_on_timeout forgets the
    /// SACK marks so that everything is sent again.
    #[test]
    fn a_split_super_packet_keeps_its_bytes_and_state() {
        let mut b = Scoreboard::default();
        b.sent_new(0, 10 * MSS, t(1));
        b.sent_new(10 * MSS, 20 * MSS, t(2));
        // RACK: the second delivered 100 µs later, the first lost.
        b.on_ack(
            0,
            [(10 * MSS, 20 * MSS)],
            t(102),
            Dur::from_us(50),
            Time::ZERO,
        );
        b.rack_detect(t(200), Dur::ZERO);
        assert_eq!((b.pipe(), b.lost_bytes()), (0, 10 * MSS));
        b.split(0, 4 * MSS);
        assert_eq!(b.next_lost(), Some((0, 4 * MSS)));
        assert_eq!(b.retransmitted(0, t(201)), 4 * MSS);
        assert_eq!(b.pipe(), 4 * MSS, "only the part sent again is in flight");
        assert_eq!(b.next_lost(), Some((4 * MSS, 10 * MSS)));
        // A split outside a segment, or at its edge, changes nothing.
        b.split(4 * MSS, 4 * MSS);
        b.split(3 * MSS, 5 * MSS);
        assert_eq!(b.first_sent(), Some(t(201)));
        assert_eq!(
            b.on_ack(20 * MSS, [], t(300), Dur::from_us(50), Time::ZERO)
                .delivered,
            10 * MSS
        );
        assert!(b.is_empty());
    }

    #[test]
    fn a_timeout_keeps_or_clears_the_sacked_segments() {
        let mut b = ten();
        b.on_ack(
            0,
            [(5 * MSS, 10 * MSS)],
            t(100),
            Dur::from_us(50),
            Time::ZERO,
        );
        b.on_timeout(false);
        assert_eq!(
            (b.lost_bytes(), b.sacked_bytes(), b.pipe()),
            (5 * MSS, 5 * MSS, 0)
        );
        let mut c = ten();
        c.on_ack(
            0,
            [(5 * MSS, 10 * MSS)],
            t(100),
            Dur::from_us(50),
            Time::ZERO,
        );
        c.on_timeout(true);
        assert_eq!(
            (c.lost_bytes(), c.sacked_bytes(), c.pipe()),
            (10 * MSS, 0, 0)
        );
    }
}
