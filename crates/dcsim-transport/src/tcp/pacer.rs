//! A host's pacer (HULL's NIC pacer): one token bucket shared by the flows of a host that
//! are associated with it, whose rate follows what they send.

use dcsim_engine::{Dur, Rate, Time};

use crate::cc::PacerParams;

/// What the TCP transport keeps per host.
#[derive(Debug, Default)]
pub struct TcpHost {
    /// The host's pacer, created when the first flow asks for it.
    pub pacer: Option<HostPacer>,
    /// ICTCP's state of the host's receiving interface.
    pub ictcp: crate::tcp::IctcpHost,
}

/// A pacer between a host's associated flows and its NIC (HULL §4.2).
///
/// Packets of associated flows leave no closer together than their wire size at the rate
/// R, in the order the flows ask (the bucket holds no burst). Every interval T_r the rate
/// follows the demand: `R ← (1 − η)·R + η·(L + β·Q)/T_r`, where L is the bytes sent through
/// the pacer in the interval and Q the bytes the waiting flows' windows hold back (the
/// pacer's backlog); R stays between 1 % of the line and the line rate.
///
/// # Deviations
/// - The HULL pacer queues packets in hardware; here a waiting flow keeps its window's
///   packets and asks again when the pacer is free (the same departures when one flow is
///   waiting; with several, the first to ask goes first).
/// - HULL writes `R ← (1 − η)·R + η·L/T_r + β·Q` with β = 16 in units we could not
///   determine; read as a rate per second, β·Q is negligible and the rate ratchets down
///   with the flows it holds back (measured: 3 % utilization on a 10 Gb/s dumbbell). Here
///   the backlog counts as demand of the interval, weighted by a dimensionless β
///   (default 1).
#[derive(Debug)]
pub struct HostPacer {
    params: PacerParams,
    /// Line rate, bytes/s.
    line: f64,
    /// R, bytes/s.
    rate: f64,
    next_free: Time,
    window_start: Time,
    window_bytes: u64,
    waiting_bytes: u64,
}

impl HostPacer {
    /// A pacer at line rate on a NIC of `line`.
    pub fn new(params: PacerParams, line: Rate) -> Self {
        let line = line.bps() as f64 / 8.0;
        Self {
            params,
            line,
            rate: line,
            next_free: Time::ZERO,
            window_start: Time::ZERO,
            window_bytes: 0,
            waiting_bytes: 0,
        }
    }

    /// The rate R now.
    pub fn rate(&self) -> Rate {
        Rate::from_bps((self.rate * 8.0) as u64)
    }

    /// Brings the rate estimate up to `now`.
    fn update(&mut self, now: Time) {
        let tr = self.params.interval;
        while self.window_start + tr <= now {
            let t = tr.as_secs_f64();
            let p = &self.params;
            // HULL's update, the backlog read as demand: R ← (1 − η)·R + η·(L + β·Q)/T_r
            let demand = self.window_bytes as f64 + p.beta * self.waiting_bytes as f64;
            self.rate =
                ((1.0 - p.eta) * self.rate + p.eta * demand / t).clamp(0.01 * self.line, self.line);
            self.window_bytes = 0;
            self.window_start += tr;
            if self.waiting_bytes == 0 && self.next_free <= self.window_start {
                // Idle: the estimate decays geometrically; skip the empty intervals.
                let n = now.saturating_since(self.window_start).as_ps() / tr.as_ps();
                let decay = libm::pow(1.0 - p.eta, n as f64);
                self.rate = (self.rate * decay).max(0.01 * self.line);
                self.window_start += tr * n;
            }
        }
    }

    /// When a packet may leave the pacer, at `now` or later.
    pub fn ready_at(&mut self, now: Time) -> Time {
        self.update(now);
        self.next_free.max(now)
    }

    /// A flow waits for the pacer with `bytes` its window would send now (the backlog).
    pub fn wait(&mut self, bytes: u64) {
        self.waiting_bytes += bytes;
    }

    /// A flow that waited with `bytes` no longer does.
    pub fn unwait(&mut self, bytes: u64) {
        self.waiting_bytes -= bytes;
    }

    /// A packet of `wire_bytes` leaves the pacer at `now` (call [`HostPacer::ready_at`]
    /// first): the next may leave one wire time at R later.
    pub fn send(&mut self, now: Time, wire_bytes: u32) {
        self.update(now);
        let start = self.next_free.max(now);
        let gap = f64::from(wire_bytes) / self.rate;
        self.next_free = start + Dur::from_secs_f64(gap).max(Dur::from_ps(1));
        self.window_bytes += u64::from(wire_bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> PacerParams {
        PacerParams {
            eta: 0.125,
            beta: 1.0,
            interval: Dur::from_us(64),
        }
    }

    /// Back-to-back sends through the pacer leave one wire time at R apart; at first R is
    /// the line rate.
    #[test]
    fn pacer_spaces_packets_at_its_rate() {
        let mut p = HostPacer::new(params(), Rate::from_gbps(10));
        let now = Time::ZERO;
        assert_eq!(p.ready_at(now), now);
        p.send(now, 1538);
        let next = p.ready_at(now);
        assert_eq!(next - now, Rate::from_gbps(10).tx_time(1538));
    }

    /// A flow that sends steadily at 2 Gb/s through the pacer brings R from the line rate
    /// down to about 2 Gb/s: the EWMA with η = 1/8 per 64 µs interval.
    #[test]
    fn pacer_rate_follows_the_sending_rate() {
        let mut p = HostPacer::new(params(), Rate::from_gbps(10));
        let gap = Rate::from_gbps(2).tx_time(1538);
        let mut t = Time::ZERO;
        for _ in 0..20_000 {
            t = p.ready_at(t);
            p.send(t, 1538);
            t += gap;
        }
        // An interval holds 10 or 11 frames at 2 Gb/s, so L/T_r itself varies by 5 %.
        let r = p.rate().bps() as f64 / 2e9;
        assert!((0.95..=1.05).contains(&r), "R = {r} of 2 Gb/s");
    }
}
