//! Test helpers for congestion controllers (compiled for this crate's tests and with the
//! `testkit` feature; `dcsim-testkit` re-exports them for tests of other crates).

use dcsim_engine::{Dur, Rate, Time};

use crate::cc::{AckSample, CongestionControl, WindowLimits};

/// One window of acknowledgements that [`CcDriver::round`] feeds a controller.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Round {
    /// Segment `i` of the window is reported CE-marked iff `i % of < marked`.
    pub marked: u64,
    /// See `marked`.
    pub of: u64,
    /// RTT sample of every ACK.
    pub rtt: Dur,
    /// Queueing delay echoed with every ACK (controllers that measure it), if any.
    pub queue_delay: Option<Dur>,
    /// Rate stamp echoed with every ACK, if any.
    pub rate_echo: Option<Rate>,
    /// Whether the window was the sender's limit (it grows only then).
    pub cwnd_limited: bool,
    /// Whether every ACK echoes an explicit incast notification (Pulser).
    pub ein: bool,
}

impl Round {
    /// A window without marks, at an RTT of 100 µs.
    pub fn clean() -> Self {
        Self {
            marked: 0,
            of: 1,
            rtt: Dur::from_us(100),
            queue_delay: None,
            rate_echo: None,
            cwnd_limited: true,
            ein: false,
        }
    }
    /// `marked` of every `of` segments CE-marked.
    pub fn marked(marked: u64, of: u64) -> Self {
        Self {
            marked,
            of,
            ..Self::clean()
        }
    }
    /// The same window with this queueing delay echoed.
    pub fn with_queue_delay(self, d: Dur) -> Self {
        Self {
            queue_delay: Some(d),
            ..self
        }
    }
    /// The same window with this rate echoed.
    pub fn with_rate(self, r: Rate) -> Self {
        Self {
            rate_echo: Some(r),
            ..self
        }
    }
    /// The same window with this RTT.
    pub fn with_rtt(self, rtt: Dur) -> Self {
        Self { rtt, ..self }
    }
    /// The same window with every ACK echoing an explicit incast notification.
    pub fn with_ein(self) -> Self {
        Self { ein: true, ..self }
    }
}

/// What a controller looked like after one round.
#[derive(Clone, Debug, PartialEq)]
pub struct RoundOut {
    /// Segments acknowledged in the round (the window at its start, in segments).
    pub segments: u64,
    /// Fraction of them reported marked.
    pub marked_fraction: f64,
    /// Window after the round.
    pub cwnd_bytes: u64,
    /// Pacing rate after the round.
    pub pacing_rate: Option<Rate>,
    /// The controller's own state after the round (see [`CongestionControl::sample`]).
    pub state: Vec<(&'static str, f64)>,
}

impl RoundOut {
    /// The controller's state variable `kind` after the round.
    ///
    /// # Panics
    /// If the controller does not report `kind`.
    pub fn get(&self, kind: &str) -> f64 {
        self.state
            .iter()
            .find(|s| s.0 == kind)
            .unwrap_or_else(|| panic!("no state {kind:?} in {:?}", self.state))
            .1
    }
}

/// Feeds a congestion controller scripted windows of ACKs, marks, losses and timeouts the
/// way the shared transport would, without a network, and checks after every call that
/// its window and rate are sane (positive window, finite state, positive rate).
///
/// As the transport does, it calls `on_ecn` at most once per window (at the first marked
/// ACK), flags the last ACK of a window as `round_start`, and keeps the smallest RTT.
///
/// ```
/// use dcsim_transport::cc::{CcSpec, CongestionControl, RenoConfig, WindowLimits};
/// use dcsim_transport::testkit::{CcDriver, Round};
///
/// let limits = WindowLimits { mss: 1460, init_cwnd: 14600, min_cwnd: 2920 };
/// let mut d = CcDriver::new(CcSpec::Reno(RenoConfig::default()).build(limits)).with_limits(limits);
/// let out = d.rounds(3, Round::clean());
/// assert_eq!(out.last().unwrap().cwnd_bytes, 80 * 1460); // slow start doubles
/// d.loss();
/// assert_eq!(d.cc.cwnd_bytes(), 40 * 1460);
/// ```
pub struct CcDriver<C> {
    /// The controller.
    pub cc: C,
    /// The time of the next ACK.
    pub now: Time,
    /// Segment size, bytes.
    pub mss: u64,
    /// The smallest window the controller may set, bytes.
    pub min_cwnd: u64,
    min_rtt: Dur,
    /// Bytes acknowledged before the current round.
    acked: u64,
}

impl<C: CongestionControl> CcDriver<C> {
    /// A driver for `cc` at time zero, 1460-byte segments, no window floor.
    pub fn new(cc: C) -> Self {
        Self {
            cc,
            now: Time::ZERO,
            mss: 1460,
            min_cwnd: 1,
            min_rtt: Dur::MAX,
            acked: 0,
        }
    }

    /// The same driver checking the window against `limits` (segment size and floor).
    pub fn with_limits(self, limits: WindowLimits) -> Self {
        Self {
            mss: limits.mss,
            min_cwnd: limits.min_cwnd,
            ..self
        }
    }

    /// Acknowledges one window of segments, one ACK each, spread evenly over `r.rtt`.
    pub fn round(&mut self, r: Round) -> RoundOut {
        let mss = self.mss;
        let segs = (self.cc.cwnd_bytes() / mss).max(1);
        let step = r.rtt / segs.max(1);
        self.min_rtt = self.min_rtt.min(r.rtt);
        let mut ecn_done = false;
        let mut n_marked = 0;
        for i in 0..segs {
            self.now += step.max(Dur::from_ps(1));
            let ce = i % r.of.max(1) < r.marked;
            n_marked += u64::from(ce);
            if ce && !ecn_done {
                self.cc.on_ecn(self.now, segs * mss);
                ecn_done = true;
            }
            let a = AckSample {
                now: self.now,
                acked_bytes: mss,
                ce_bytes: if ce { mss } else { 0 },
                in_flight_bytes: (segs - i - 1) * mss,
                rtt: Some(r.rtt),
                min_rtt: self.min_rtt,
                round_start: i == segs - 1,
                snd_una: self.acked + (i + 1) * mss,
                snd_nxt: self.acked + segs * mss,
                in_recovery: false,
                cwnd_limited: r.cwnd_limited,
                max_out_bytes: 0,
                mss,
                queue_delay: r.queue_delay,
                rate_echo: r.rate_echo,
                data_arrival: Some(self.now),
                ein: r.ein,
            };
            self.cc.on_ack(&a);
            self.check();
        }
        self.acked += segs * mss;
        RoundOut {
            segments: segs,
            marked_fraction: n_marked as f64 / segs as f64,
            cwnd_bytes: self.cc.cwnd_bytes(),
            pacing_rate: self.cc.pacing_rate(),
            state: self.state(),
        }
    }

    /// `n` rounds of `r`.
    pub fn rounds(&mut self, n: usize, r: Round) -> Vec<RoundOut> {
        (0..n).map(|_| self.round(r)).collect()
    }

    /// A loss detected by duplicate ACKs with one window in flight.
    pub fn loss(&mut self) {
        let w = self.cc.cwnd_bytes();
        self.cc.on_loss(self.now, w);
        self.check();
    }

    /// A retransmission timeout with one window in flight.
    pub fn timeout(&mut self) {
        let w = self.cc.cwnd_bytes();
        self.cc.on_rto(self.now, w);
        self.check();
    }

    /// The controller's own state now.
    pub fn state(&self) -> Vec<(&'static str, f64)> {
        let mut out = Vec::new();
        self.cc.sample(&mut out);
        out
    }

    /// Lets `d` pass without ACKs.
    pub fn idle(&mut self, d: Dur) {
        self.now += d;
    }

    /// Panics unless the window is at least the floor, the controller's state is finite
    /// and its pacing rate, if any, is positive.
    pub fn check(&self) {
        let w = self.cc.cwnd_bytes();
        assert!(
            w >= self.min_cwnd.max(1),
            "window {w} below the floor {}",
            self.min_cwnd
        );
        let state = self.state();
        assert!(
            state.iter().all(|s| s.1.is_finite()),
            "non-finite state {state:?}"
        );
        if let Some(r) = self.cc.pacing_rate() {
            assert!(r > Rate::ZERO, "zero pacing rate");
        }
    }
}
