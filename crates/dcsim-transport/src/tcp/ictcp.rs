//! ICTCP (Wu, Feng, Guo, Zhang, "ICTCP: Incast Congestion Control for TCP in Data Center
//! Networks", CoNEXT 2010): the receiver sets each connection's advertised window from
//! what the connection achieves and what its interface has to spare, so that many senders
//! answering one receiver cannot overrun its last hop.
//!
//! Per receiving interface (host): time runs in slots of 2T, T the average RTT of the
//! controlled connections, each of two sub-slots. In the first the interface measures its
//! incoming rate BW_T; at the second the available bandwidth BW_A = max(0, α·C − BW_T)
//! becomes a quota that window increases spend (an increase of one segment spends
//! MSS / RTT of the connection).
//!
//! Per connection, once per RTT: the measured throughput b_m ← max(b_s, β·b_m + (1−β)·b_s)
//! (b_s: bytes received in the last RTT / that time), the expected throughput
//! b_e = max(b_m, rwnd / RTT), and d = (b_e − b_m) / b_e. A connection changes its window
//! at most once per two of its RTTs: by one segment up if d ≤ γ1 while the interface is in
//! its second sub-slot and the quota covers it; one segment down if d > γ2 has held for
//! three RTTs in a row; and one segment down when BW_A is under the fairness threshold
//! and its window is above the interface's average. Windows stay ≥ 2 segments, and only
//! connections whose RTT is under 2 ms are controlled.

use dcsim_engine::{Dur, Time};
use serde::{Deserialize, Serialize};

/// ICTCP parameters (`transport.ictcp = {}` turns it on with these defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IctcpConfig {
    /// α: the share of the interface ICTCP may fill (0.9).
    pub alpha: f64,
    /// β: smoothing of the measured throughput (0.75).
    pub beta: f64,
    /// γ1: at or below this d the window may grow (0.1).
    pub gamma1: f64,
    /// γ2: above this d for `decrease_rtts` RTTs the window shrinks (0.5).
    pub gamma2: f64,
    /// RTTs in a row above γ2 before a decrease (3).
    pub decrease_rtts: u32,
    /// Smallest and initial window, segments (2).
    pub min_rwnd_pkts: u32,
    /// Connections with a longer RTT are not controlled (2 ms).
    pub max_rtt: Dur,
    /// Below this share of the interface as BW_A, windows above the average shrink (0.2).
    pub fairness_threshold: f64,
    /// RTT estimate before the first sample (100 µs, as the reference code).
    pub init_rtt: Dur,
    /// Fast start: until its first decrease a connection doubles its window at each
    /// increase the interface's quota allows, instead of adding one segment (true; false
    /// is the one-segment rule throughout).
    pub fast_start: bool,
}

impl Default for IctcpConfig {
    fn default() -> Self {
        Self {
            alpha: 0.9,
            beta: 0.75,
            gamma1: 0.1,
            gamma2: 0.5,
            decrease_rtts: 3,
            min_rwnd_pkts: 2,
            max_rtt: Dur::from_ms(2),
            fairness_threshold: 0.2,
            init_rtt: Dur::from_us(100),
            fast_start: true,
        }
    }
}

impl IctcpConfig {
    /// Checks ranges; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        let frac = |v: f64, name: &str| {
            if v > 0.0 && v <= 1.0 {
                Ok(())
            } else {
                Err(format!("ictcp.{name}: must be in (0, 1], got {v}"))
            }
        };
        frac(self.alpha, "alpha")?;
        frac(self.beta, "beta")?;
        frac(self.gamma1, "gamma1")?;
        frac(self.gamma2, "gamma2")?;
        frac(self.fairness_threshold, "fairness_threshold")?;
        if self.gamma1 > self.gamma2 {
            return Err("ictcp.gamma1: must not exceed gamma2".into());
        }
        if self.min_rwnd_pkts == 0 {
            return Err("ictcp.min_rwnd_pkts: must be at least 1".into());
        }
        if self.init_rtt == Dur::ZERO {
            return Err("ictcp.init_rtt: must be greater than zero".into());
        }
        Ok(())
    }
}

/// ICTCP's state of one receiving interface (in the host's TCP state).
#[derive(Debug, Default)]
pub struct IctcpHost {
    /// Interface capacity, bytes/s.
    capacity: f64,
    /// The current slot: its start and its T.
    slot_start: Time,
    slot_t: Dur,
    /// Bytes received in the first sub-slot of the current slot.
    measured: u64,
    /// Whether the second sub-slot's quota has been set.
    quota_set: bool,
    /// BW_A of the current slot (bytes/s), known from its second sub-slot.
    available: f64,
    /// What is left of the quota in the second sub-slot (bytes/s).
    quota: f64,
    /// Controlled connections: their number, the sum of their RTTs and windows.
    conns: u32,
    rtt_sum: Dur,
    rwnd_sum: u64,
}

impl IctcpHost {
    /// Advances the slots to `now` (lazily, at each data arrival): a new slot takes the
    /// current average RTT as its T; the first arrival in a second sub-slot turns the first
    /// sub-slot's rate into the slot's quota.
    fn advance(&mut self, now: Time, init_rtt: Dur, alpha: f64) {
        let t = if self.conns == 0 {
            init_rtt
        } else {
            self.rtt_sum / u64::from(self.conns)
        };
        if self.slot_t == Dur::ZERO || now >= self.slot_start + self.slot_t * 2 {
            // Idle slots in between measured nothing; the new one starts at the slot
            // boundary at or before `now`.
            if self.slot_t != Dur::ZERO {
                let len = (self.slot_t * 2).as_ps();
                let over = now.saturating_since(self.slot_start).as_ps() / len;
                self.slot_start += Dur::from_ps(over * len);
            } else {
                self.slot_start = now;
            }
            self.slot_t = t;
            self.measured = 0;
            self.quota_set = false;
            self.available = 0.0;
            self.quota = 0.0;
        }
        if !self.quota_set && self.in_second_subslot(now) {
            let bw_t = self.measured as f64 / self.slot_t.as_secs_f64();
            self.available = (alpha * self.capacity - bw_t).max(0.0);
            self.quota = self.available;
            self.quota_set = true;
        }
    }

    fn in_second_subslot(&self, now: Time) -> bool {
        now >= self.slot_start + self.slot_t
    }

    /// `bytes` arrived at `now` on this interface.
    fn arrived(&mut self, now: Time, bytes: u64) {
        if !self.in_second_subslot(now) {
            self.measured = self.measured.saturating_add(bytes);
        }
    }

    /// The interface's average advertised window, bytes.
    fn average_rwnd(&self) -> u64 {
        self.rwnd_sum / u64::from(self.conns.max(1))
    }
}

/// ICTCP's state of one connection, at its receiver.
#[derive(Debug)]
pub struct IctcpConn {
    cfg: IctcpConfig,
    mss: u64,
    rwnd: u64,
    srtt: Option<Dur>,
    /// Measured throughput b_m, bytes/s.
    measured: f64,
    /// Start of the current measurement RTT and the bytes received since.
    since: Time,
    bytes: u64,
    last_change: Time,
    over_gamma2: u32,
    /// Whether this connection counts on its interface (RTT under `max_rtt`).
    controlled: bool,
    /// In fast start (until the first decrease).
    fast: bool,
    changes: (u64, u64),
}

impl IctcpConn {
    /// A connection of `mss`-byte segments, at its smallest window.
    pub fn new(cfg: &IctcpConfig, mss: u64) -> Self {
        Self {
            cfg: cfg.clone(),
            mss,
            rwnd: u64::from(cfg.min_rwnd_pkts) * mss,
            srtt: None,
            measured: 0.0,
            since: Time::ZERO,
            bytes: 0,
            last_change: Time::ZERO,
            over_gamma2: 0,
            controlled: false,
            fast: cfg.fast_start,
            changes: (0, 0),
        }
    }

    /// The advertised window, bytes.
    pub fn rwnd(&self) -> u64 {
        self.rwnd
    }

    /// Window increases and decreases so far.
    pub fn changes(&self) -> (u64, u64) {
        self.changes
    }

    fn rtt(&self) -> Dur {
        self.srtt.unwrap_or(self.cfg.init_rtt)
    }

    /// A data packet of `bytes` arrived at `now`; `rtt` is the receiver's RTT sample from
    /// it (the time since the ACK it answers left), if any. Updates the interface and
    /// returns the window to advertise.
    pub fn on_data(
        &mut self,
        host: &mut IctcpHost,
        capacity_bps: f64,
        now: Time,
        bytes: u64,
        rtt: Option<Dur>,
    ) -> u64 {
        if host.capacity == 0.0 {
            host.capacity = capacity_bps;
        }
        if let Some(s) = rtt.filter(|s| *s > Dur::ZERO) {
            let old = self.rtt();
            // The reference code's smoothing: 7/8 old, 1/8 new.
            let new = match self.srtt {
                None => s,
                Some(r) => Dur::from_ps((r.as_ps() * 7 + s.as_ps()) / 8),
            };
            self.srtt = Some(new);
            if self.controlled {
                host.rtt_sum = host.rtt_sum.saturating_sub(old) + new;
            }
        }
        self.set_controlled(host, self.rtt() < self.cfg.max_rtt);
        host.advance(now, self.cfg.init_rtt, self.cfg.alpha);
        host.arrived(now, bytes);
        if self.since == Time::ZERO && self.bytes == 0 {
            self.since = now;
            self.last_change = now;
        }
        self.bytes += bytes;
        let rtt = self.rtt();
        if now.saturating_since(self.since) < rtt {
            return self.rwnd;
        }
        // One RTT measured: b_s, then b_m.
        let secs = now.saturating_since(self.since).as_secs_f64();
        let sample = self.bytes as f64 / secs;
        let beta = self.cfg.beta;
        self.measured = sample.max(beta * self.measured + (1.0 - beta) * sample);
        self.since = now;
        self.bytes = 0;
        if !self.controlled {
            return self.rwnd;
        }
        let expected = self.measured.max(self.rwnd as f64 / rtt.as_secs_f64());
        let d = (expected - self.measured) / expected;
        self.over_gamma2 = if d > self.cfg.gamma2 {
            self.over_gamma2 + 1
        } else {
            0
        };
        if now.saturating_since(self.last_change) < rtt * 2 {
            return self.rwnd;
        }
        let floor = u64::from(self.cfg.min_rwnd_pkts) * self.mss;
        let secs = rtt.as_secs_f64();
        // The quota pays for an increase at its rate over one RTT: whole segments.
        let affordable = (host.quota * secs / self.mss as f64).floor() as u64 * self.mss;
        let increase = if self.fast { self.rwnd } else { self.mss }.min(affordable);
        let mut new = self.rwnd;
        if d <= self.cfg.gamma1 && host.in_second_subslot(now) && increase >= self.mss {
            host.quota -= increase as f64 / secs;
            new += increase;
        } else if self.over_gamma2 >= self.cfg.decrease_rtts {
            new = new.saturating_sub(self.mss).max(floor);
            self.over_gamma2 = 0;
        } else if host.available < self.cfg.fairness_threshold * host.capacity
            && host.in_second_subslot(now)
            && self.rwnd > host.average_rwnd()
        {
            new = new.saturating_sub(self.mss).max(floor);
        }
        if new != self.rwnd {
            if new > self.rwnd {
                self.changes.0 += 1;
            } else {
                self.changes.1 += 1;
                self.fast = false;
            }
            host.rwnd_sum = host.rwnd_sum + new - self.rwnd;
            self.rwnd = new;
            self.last_change = now;
        }
        self.rwnd
    }

    fn set_controlled(&mut self, host: &mut IctcpHost, on: bool) {
        if on == self.controlled {
            return;
        }
        self.controlled = on;
        if on {
            host.conns += 1;
            host.rtt_sum += self.rtt();
            host.rwnd_sum += self.rwnd;
        } else {
            host.conns -= 1;
            host.rtt_sum = host.rtt_sum.saturating_sub(self.rtt());
            host.rwnd_sum -= self.rwnd;
        }
    }

    /// The connection ends: it no longer counts on its interface.
    pub fn close(&mut self, host: &mut IctcpHost) {
        self.set_controlled(host, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1460;
    const CAPACITY: f64 = 1.25e9; // 10 Gb/s in bytes/s
    const RTT: Dur = Dur::from_us(100);

    /// Feeds `conns` (all on `host`) for `rtts` RTTs: every 10 µs each receives what
    /// `rate(conn)` (bytes/s) gives in 10 µs, with an RTT sample of 100 µs; returns the
    /// time reached.
    fn feed(
        host: &mut IctcpHost,
        conns: &mut [IctcpConn],
        mut now: Time,
        rtts: u64,
        rate: impl Fn(&IctcpConn) -> f64,
    ) -> Time {
        let step = Dur::from_us(10);
        for _ in 0..rtts * 10 {
            now += step;
            for c in conns.iter_mut() {
                let bytes = (rate(c) * step.as_secs_f64()) as u64;
                c.on_data(host, CAPACITY, now, bytes.max(1), Some(RTT));
            }
        }
        now
    }

    /// In fast start a connection that receives a full window every RTT (d = 0) on an
    /// idle interface doubles its window at each increase, until the quota stops it at
    /// about α of the link (0.9 × 10 Gb/s × 100 µs: 77 segments): from 2 segments in six
    /// increases, where one segment per increase would have taken 75.
    #[test]
    fn fast_start_doubles_the_window_up_to_the_quota() {
        let cfg = IctcpConfig::default();
        let mut host = IctcpHost::default();
        let mut c = [IctcpConn::new(&cfg, MSS)];
        feed(&mut host, &mut c, Time::ZERO, 40, |c| {
            c.rwnd() as f64 / RTT.as_secs_f64()
        });
        let segments = c[0].rwnd() / MSS;
        assert!((70..=78).contains(&segments), "{segments} segments");
        assert!(c[0].changes().0 <= 7, "{:?}", c[0].changes());
        assert_eq!(c[0].changes().1, 0);
    }

    /// Without fast start a connection that receives a full window every RTT (d = 0) on an
    /// idle interface grows by one segment per two RTTs, from the 2-segment start.
    #[test]
    fn a_window_limited_connection_grows_a_segment_every_two_rtts() {
        let cfg = IctcpConfig {
            fast_start: false,
            ..IctcpConfig::default()
        };
        let mut host = IctcpHost::default();
        let mut c = [IctcpConn::new(&cfg, MSS)];
        assert_eq!(c[0].rwnd(), 2 * MSS);
        feed(&mut host, &mut c, Time::ZERO, 40, |c| {
            c.rwnd() as f64 / RTT.as_secs_f64()
        });
        let grown = c[0].rwnd() / MSS - 2;
        // At most one change per two RTTs, and only in a second sub-slot: 40 RTTs give at
        // most 20 increases; the slot gating costs some.
        assert!((12..=20).contains(&grown), "{grown} segments");
        assert_eq!(c[0].changes().1, 0);
    }

    /// A connection that receives far less than its window allows (d > γ2) loses a segment
    /// after three such RTTs in a row, at most one per two RTTs, down to 2 segments.
    #[test]
    fn an_idle_window_shrinks_to_the_floor_after_three_rtts_each() {
        let cfg = IctcpConfig {
            fast_start: false,
            ..IctcpConfig::default()
        };
        let mut host = IctcpHost::default();
        let mut c = [IctcpConn::new(&cfg, MSS)];
        let t = feed(&mut host, &mut c, Time::ZERO, 40, |c| {
            c.rwnd() as f64 / RTT.as_secs_f64()
        });
        let top = c[0].rwnd();
        // Now the sender has little to send: 5 % of what its window allows.
        feed(&mut host, &mut c, t, 6, |c| {
            0.05 * c.rwnd() as f64 / RTT.as_secs_f64()
        });
        assert_eq!(c[0].rwnd(), top - MSS, "one segment after three RTTs");
        feed(&mut host, &mut c, t + RTT * 6, 400, |c| {
            0.05 * c.rwnd() as f64 / RTT.as_secs_f64()
        });
        assert_eq!(c[0].rwnd(), 2 * MSS, "floor");
    }

    /// Increases spend the interface's quota: 20 connections, each receiving its window
    /// every RTT (2 segments each ask 47 % of the link), grow until they ask about α of
    /// the link and never more than α plus one segment's worth; the fairness rule then
    /// takes windows above the average back down (so the total swings between about 0.7
    /// and 0.9 at this granularity of a segment per connection).
    #[test]
    fn the_interface_quota_bounds_the_total() {
        let cfg = IctcpConfig::default();
        let mut host = IctcpHost::default();
        let mut c: Vec<IctcpConn> = (0..20).map(|_| IctcpConn::new(&cfg, MSS)).collect();
        let asked = |c: &[IctcpConn]| {
            c.iter().map(|c| c.rwnd()).sum::<u64>() as f64 / RTT.as_secs_f64() / CAPACITY
        };
        let mut now = Time::ZERO;
        let mut seen = Vec::new();
        for _ in 0..300 {
            now = feed(&mut host, &mut c, now, 1, |c| {
                c.rwnd() as f64 / RTT.as_secs_f64()
            });
            seen.push(asked(&c));
        }
        let tail = &seen[100..];
        let max = tail.iter().copied().fold(0.0, f64::max);
        let min = tail.iter().copied().fold(1.0, f64::min);
        let step = MSS as f64 / RTT.as_secs_f64() / CAPACITY;
        assert!(max >= 0.85 && max <= 0.9 + step, "max {max}");
        assert!(min >= 0.65, "min {min}");
    }
}
