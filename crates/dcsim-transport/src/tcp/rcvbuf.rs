//! Linux's receive-buffer autotuning (`rcv_autotune`), as Linux 6.18 runs it for an
//! application that reads data as soon as it is in order.
//!
//! The buffer starts at `tcp_rmem[1]` (128 KiB) and grows toward `tcp_rmem[2]` (`rcv_buf`)
//! once per receiver round trip, to what the data read in the last round trip asks for
//! (`tcp_rcv_space_adjust` and `tcp_rcvbuf_grow`: twice the data, plus twice its growth
//! over the round trip before, so that a window doubling in slow start is met). The window
//! advertised is the smaller of the free space and `rcv_ssthresh`, which grows by twice
//! each segment received (`tcp_grow_window`) up to the window the buffer allows
//! (`window_clamp`). Space converts to window by the share of a packet's memory its
//! payload takes (`scaling_ratio`, set from the first full segment). The receiver's round
//! trip comes from the timestamps data echoes (millisecond clock) and from the time a
//! window of data takes to arrive (`tcp_rcv_rtt_measure`), the smaller winning at once.
//!
//! What is not modelled: memory pressure, the window-update ACK after a read that doubles
//! the window (`tcp_cleanup_rbuf`), and the prune of a full buffer (the sender never
//! overruns the window it was given).

use dcsim_engine::{Dur, Time};

/// `tcp_rmem[1]`: the buffer a connection starts with.
pub(crate) const RMEM_INITIAL: u64 = 131_072;
/// What a received packet's memory takes beyond its payload (`skb->truesize - skb->len`),
/// measured on veth with Linux 6.18: 2,280 B for a 1,448-byte segment, 5,178 B for three,
/// so scaling ratios of 162 and (for super-packets of five segments) 229.
pub(crate) const TRUESIZE_OVERHEAD: u64 = 832;
/// `TCP_DEFAULT_SCALING_RATIO` (of 256): 50 % until the first full segment.
const DEFAULT_RATIO: u64 = 128;
/// `TCP_MSS_DEFAULT`: the receiver's segment-size estimate before data.
const RCV_MSS_DEFAULT: u64 = 536;
/// The receiver's timestamp clock: Linux's default millisecond TSval.
const TS_TICK: Dur = Dur::from_ms(1);

/// One connection's receive buffer under autotuning.
#[derive(Clone, Debug)]
pub(crate) struct RcvBuf {
    /// `sk_rcvbuf` and its ceiling (`tcp_rmem[2]`).
    rcvbuf: u64,
    rmem_max: u64,
    /// `scaling_ratio`, of 256.
    ratio: u64,
    window_clamp: u64,
    rcv_ssthresh: u64,
    wscale: u32,
    advmss: u64,
    /// `icsk_ack.rcv_mss`.
    rcv_mss: u64,
    /// `rcvq_space`: the data read in the last measured round trip, and where and when
    /// the current one began (none before the first data).
    space: u64,
    space_seq: u64,
    space_time: Option<Time>,
    /// `rcv_rtt_est` (zero: none yet), and the window measurement in progress.
    rtt: Dur,
    rtt_seq: u64,
    rtt_time: Option<Time>,
    last_echo: Time,
    /// The window the last segment advertised (`rcv_wnd`).
    rcv_wnd: u64,
}

impl RcvBuf {
    /// A passive opener's buffer after the handshake, with segments of `advmss` and a
    /// ceiling of `rmem_max` (`tcp_select_initial_window`, `tcp_init_buffer_space`).
    pub(crate) fn new(rmem_max: u64, advmss: u64) -> Self {
        let rcv_wnd = initial_window(advmss);
        // A ceiling below `tcp_rmem[1]` is the buffer from the start.
        let rcvbuf = RMEM_INITIAL.min(rmem_max);
        let full = (rcvbuf * DEFAULT_RATIO) >> 8;
        // `tcp_app_win` keeps one segment of the full space back.
        let window_clamp = (2 * advmss).max(full - advmss);
        let rcv_ssthresh = rcv_wnd.min(window_clamp);
        Self {
            rcvbuf,
            rmem_max,
            ratio: DEFAULT_RATIO,
            window_clamp,
            rcv_ssthresh,
            wscale: wscale(rmem_max),
            advmss,
            rcv_mss: RCV_MSS_DEFAULT,
            space: rcv_ssthresh.min(rcv_wnd).min(10 * advmss),
            space_seq: 0,
            space_time: None,
            rtt: Dur::ZERO,
            rtt_seq: 0,
            rtt_time: None,
            last_echo: Time::ZERO,
            rcv_wnd,
        }
    }

    fn win_from_space(&self, space: u64) -> u64 {
        (space * self.ratio) >> 8
    }

    /// Memory that `bytes` of payload take, at the ratio measured.
    pub(crate) fn truesize_of(&self, bytes: u64) -> u64 {
        (bytes << 8) / self.ratio
    }

    /// `tcp_space`: the window the free memory allows with `rmem` bytes held.
    fn tcp_space(&self, rmem: u64) -> u64 {
        self.win_from_space(self.rcvbuf.saturating_sub(rmem))
    }

    /// A data segment of `len` payload bytes arrived (`tcp_event_data_recv`, and the
    /// timestamp RTT of `tcp_rcv_rtt_measure_ts`): `in_order`, or held out of order and
    /// `sack` (Linux grows the window for those only with SACK). `rcv_nxt` is after it,
    /// `rmem` the memory held with it, `echo` the time it echoes (zero: none), `seg` the
    /// segment size it was cut to (its own length below one segment). Returns whether
    /// `rcv_ssthresh` grew, which makes Linux acknowledge at once.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn on_segment(
        &mut self,
        len: u64,
        seg: u64,
        in_order: bool,
        sack: bool,
        rcv_nxt: u64,
        rmem: u64,
        echo: Time,
        now: Time,
    ) -> bool {
        if echo > Time::ZERO && echo != self.last_echo {
            self.last_echo = echo;
            if len >= self.rcv_mss {
                let ticks = now.as_ps() / TS_TICK.as_ps() - echo.as_ps() / TS_TICK.as_ps();
                if ticks > 0 {
                    self.rtt_update(TS_TICK * ticks, false);
                }
            }
        }
        if !in_order && !sack {
            return false;
        }
        if in_order {
            if self.space_time.is_none() {
                self.space_time = Some(now);
            }
            self.measure_rcv_mss(len, seg);
            self.rtt_measure(rcv_nxt, now);
        }
        if len < 128 {
            return false;
        }
        self.grow_window(len, rmem)
    }

    /// `tcp_measure_rcv_mss`: the first segment of a new size sets the scaling ratio
    /// from its memory, and the window clamp with it.
    fn measure_rcv_mss(&mut self, len: u64, seg: u64) {
        if seg < self.rcv_mss {
            return;
        }
        if seg != self.rcv_mss {
            let ratio = ((len << 8) / (len + TRUESIZE_OVERHEAD)).max(1);
            if ratio != self.ratio {
                self.ratio = ratio;
                self.set_window_clamp(self.win_from_space(self.rcvbuf));
                self.space = self.space.min(self.window_clamp);
            }
        }
        self.rcv_mss = seg.min(self.advmss);
    }

    /// `tcp_set_window_clamp`.
    fn set_window_clamp(&mut self, clamp: u64) {
        let old = self.window_clamp;
        self.window_clamp = clamp;
        if clamp < old {
            self.rcv_ssthresh = self.rcv_ssthresh.min(clamp);
        } else {
            self.rcv_ssthresh = self.rcv_ssthresh.max(self.rcv_wnd.min(clamp));
        }
    }

    /// `tcp_rcv_rtt_measure`: the time one advertised window of data takes to arrive.
    fn rtt_measure(&mut self, rcv_nxt: u64, now: Time) {
        if let Some(t) = self.rtt_time {
            if rcv_nxt < self.rtt_seq {
                return;
            }
            self.rtt_update(now.saturating_since(t).max(Dur::from_us(1)), true);
        }
        self.rtt_seq = rcv_nxt + self.rcv_wnd;
        self.rtt_time = Some(now);
    }

    /// `tcp_rcv_rtt_update` (6.16): a lower sample is taken at once; a higher one from the
    /// timestamps enters an average of gain 1/8, from the window measure not at all.
    fn rtt_update(&mut self, sample: Dur, by_window: bool) {
        if self.rtt == Dur::ZERO || sample < self.rtt {
            self.rtt = sample;
        } else if !by_window {
            self.rtt = self.rtt - self.rtt / 8 + sample / 8;
        }
    }

    /// `tcp_grow_window` for a segment of `len` bytes, with `rmem` bytes of memory held.
    fn grow_window(&mut self, len: u64, rmem: u64) -> bool {
        let top = self.window_clamp.min(self.tcp_space(rmem));
        if top <= self.rcv_ssthresh {
            return false;
        }
        let room = top - self.rcv_ssthresh;
        let truesize = len + TRUESIZE_OVERHEAD;
        let incr = if self.win_from_space(truesize) <= len {
            2 * self.advmss
        } else {
            // `__tcp_grow_window`: a segment whose memory is large for its payload grows
            // the window only while it is small.
            let mut t = self.win_from_space(truesize) >> 1;
            let mut w = self.win_from_space(self.rmem_max) >> 1;
            let mut incr = 0;
            while self.rcv_ssthresh <= w {
                if t <= len {
                    incr = 2 * self.rcv_mss;
                    break;
                }
                t >>= 1;
                w >>= 1;
            }
            incr
        };
        if incr == 0 {
            return false;
        }
        self.rcv_ssthresh += room.min(incr.max(2 * len));
        true
    }

    /// The application has read everything in order up to `rcv_nxt` (`tcp_rcv_space_adjust`,
    /// at most once per receiver round trip); `ooo_end` is the end of the data held out
    /// of order, if any.
    pub(crate) fn on_read(&mut self, rcv_nxt: u64, ooo_end: Option<u64>, now: Time) {
        let Some(start) = self.space_time else {
            return;
        };
        if self.rtt == Dur::ZERO || now.saturating_since(start) < self.rtt {
            return;
        }
        let copied = rcv_nxt - self.space_seq;
        if copied > self.space {
            self.grow_buffer(copied, rcv_nxt, ooo_end);
        }
        self.space_seq = rcv_nxt;
        self.space_time = Some(now);
    }

    /// Data arrived out of order (Linux 6.16 grows the buffer to hold it as well).
    pub(crate) fn on_out_of_order(&mut self, rcv_nxt: u64, ooo_end: u64) {
        self.grow_buffer(self.space, rcv_nxt, Some(ooo_end));
    }

    /// `tcp_rcvbuf_grow` (6.18): room for twice what was read in the last round trip, plus
    /// twice its growth over the one before, plus what is held out of order.
    fn grow_buffer(&mut self, copied: u64, rcv_nxt: u64, ooo_end: Option<u64>) {
        let old = self.space;
        self.space = copied;
        let mut rcvwin = 2 * copied;
        rcvwin += 2 * (rcvwin * copied.saturating_sub(old) / old.max(1));
        if let Some(end) = ooo_end {
            rcvwin += end.saturating_sub(rcv_nxt);
        }
        let rcvbuf = ((rcvwin << 8) / self.ratio).min(self.rmem_max);
        if rcvbuf > self.rcvbuf {
            self.rcvbuf = rcvbuf;
            self.window_clamp = self.win_from_space(rcvbuf);
        }
    }

    /// The window an ACK advertises (`tcp_select_window`), with `rmem` bytes of memory
    /// held and the right edge advertised last at `right_edge`, which never moves back.
    /// Also returns whether the free space fell below half the window, which ends Linux's
    /// quick-ACK mode.
    pub(crate) fn select_window(&self, rcv_nxt: u64, right_edge: u64, rmem: u64) -> (u64, bool) {
        let unit = 1u64 << self.wscale;
        let allowed = self.win_from_space(self.rcvbuf);
        let full = self.window_clamp.min(allowed);
        let mss = self.rcv_mss.min(full);
        let mut free = self.tcp_space(rmem);
        let mut pressed = false;
        let mut window = 0;
        if mss > 0 {
            let mut open = true;
            if free < full / 2 {
                pressed = true;
                free = free / unit * unit;
                open = free >= allowed / 16 && free >= mss;
            }
            if open {
                window = free.min(self.rcv_ssthresh).next_multiple_of(unit);
            }
        }
        let current = right_edge.saturating_sub(rcv_nxt);
        if window < current {
            window = current.next_multiple_of(unit);
        }
        (window, pressed)
    }

    /// An ACK advertised `window` (`rcv_wnd`).
    pub(crate) fn advertised(&mut self, window: u64) {
        self.rcv_wnd = window;
    }
}

/// The window a passive opener's SYN-ACK carries (`tcp_select_initial_window`): 64 KiB
/// in whole segments, within 16 bits.
pub(crate) fn initial_window(advmss: u64) -> u64 {
    (65_536 - 65_536 % advmss).min(65_535)
}

/// The window scale for a buffer that may grow to `rmem_max` (`tcp_select_initial_window`).
pub(crate) fn wscale(rmem_max: u64) -> u32 {
    (rmem_max.max(1).ilog2().saturating_sub(15)).min(14)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1448;

    fn us(n: u64) -> Time {
        Time::from_dur(Dur::from_us(n))
    }

    #[test]
    fn the_start_is_linuxs_and_the_first_segment_sets_the_ratio() {
        // A passive opener with 1,448-byte segments: the SYN-ACK's 65,160, a clamp of the
        // full space less a segment, and ten segments as the first measure.
        let mut b = RcvBuf::new(32 << 20, MSS);
        assert_eq!(initial_window(MSS), 65_160);
        assert_eq!(initial_window(1460), 64_240);
        assert_eq!(b.wscale, 10);
        assert_eq!(
            (b.window_clamp, b.rcv_ssthresh, b.space),
            (64_088, 64_088, 14_480)
        );
        // The kernel twin's first segment (1,448 B in 2,280 B of memory): ratio 162, the
        // clamp 131,072 x 162 / 256 = 82,944 and rcv_ssthresh up to the SYN-ACK's window,
        // then grown by two segments to the free space (tracepoint tcp_rcvbuf_grow shows
        // 81,501 for the same memory in the kernel).
        let now = us(100);
        let grew = b.on_segment(MSS, MSS, true, true, MSS, 2_280, Time::ZERO, now);
        assert!(grew);
        assert_eq!(b.ratio, 162);
        assert_eq!(b.window_clamp, 82_944);
        assert_eq!(b.rcv_ssthresh, 65_160 + 2 * MSS);
        for i in 2..20 {
            b.on_segment(MSS, MSS, true, true, i * MSS, 2_280, Time::ZERO, now);
        }
        assert_eq!(b.rcv_ssthresh, ((131_072 - 2_280) * 162) >> 8);
    }

    #[test]
    fn the_buffer_grows_as_linux_6_18_grows_it() {
        // The kernel twin with offloads (ratio 229): 43,440 B read in a round trip after a
        // measure of 14,480 asks for 2 x 43,440 plus twice its growth over 14,480,
        // 434,400 B of window: a buffer of 485,617 and a clamp of 434,399, as the kernel's
        // tracepoint printed.
        let mut b = RcvBuf::new(32 << 20, MSS);
        b.ratio = 229;
        b.space_time = Some(Time::ZERO);
        b.rtt = Dur::from_ms(3);
        b.on_read(43_440, None, us(2_000));
        assert_eq!(b.rcvbuf, RMEM_INITIAL, "not before a round trip");
        b.on_read(43_440, None, us(4_314));
        assert_eq!(
            (b.rcvbuf, b.window_clamp, b.space),
            (485_617, 434_399, 43_440)
        );
        // Reading no more than the last measure leaves the buffer, and starts a new one.
        b.on_read(80_000, None, us(8_000));
        assert_eq!(b.rcvbuf, 485_617);
        assert_eq!(b.space_seq, 80_000);
        // Never beyond tcp_rmem[2].
        b.rmem_max = 1 << 20;
        b.on_read(2_000_000, None, us(20_000));
        assert_eq!(b.rcvbuf, 1 << 20);
    }

    #[test]
    fn the_round_trip_takes_lower_samples_at_once() {
        let mut b = RcvBuf::new(32 << 20, MSS);
        // Timestamps tick in milliseconds: an echo within the same tick is no sample.
        b.on_segment(MSS, MSS, true, true, MSS, 0, us(100), us(900));
        assert_eq!(b.rtt, Dur::ZERO);
        b.on_segment(MSS, MSS, true, true, 2 * MSS, 0, us(900), us(3_100));
        assert_eq!(b.rtt, Dur::from_ms(3));
        // A higher timestamp sample is averaged in; a lower window sample replaces it.
        b.rtt_update(Dur::from_ms(11), false);
        assert_eq!(b.rtt, Dur::from_ms(4));
        b.rtt_update(Dur::from_ms(9), true);
        assert_eq!(b.rtt, Dur::from_ms(4));
        b.rtt_update(Dur::from_ms(2), true);
        assert_eq!(b.rtt, Dur::from_ms(2));
    }

    #[test]
    fn the_window_is_the_smaller_of_free_space_and_rcv_ssthresh_and_never_recedes() {
        let mut b = RcvBuf::new(32 << 20, MSS);
        b.ratio = 162;
        b.window_clamp = 82_944;
        b.rcv_ssthresh = 70_000;
        b.rcv_mss = MSS;
        // rcv_ssthresh, rounded up to the 1,024-byte scale.
        assert_eq!(b.select_window(0, 0, 2_280), (70_656, false));
        // Free space below half the window: rounded down, and quick ACKs end.
        let (w, pressed) = b.select_window(0, 0, 80_000);
        assert!(pressed);
        assert_eq!(w, (131_072 - 80_000) * 162 / 256 / 1024 * 1024);
        // A right edge already advertised further stays.
        assert_eq!(b.select_window(10_000, 100_000, 80_000).0, 90_112);
    }
}
