//! Congestion control: the window and rate policy inside the reliable transport.
//!
//! The transport owns sequence space, ACK processing, loss detection, RTT estimation,
//! retransmission, timers and the "once per window" bookkeeping for ECN; a controller owns
//! only the congestion window (and a pacing rate, if it paces). This is the Linux
//! `tcp_congestion_ops` split. A new controller is one file here implementing
//! [`CongestionControl`], one variant in [`Cc`] and one in [`CcSpec`].

mod dctcp;
mod reno;

use core::fmt;

use dcsim_engine::{Dur, Rate, Time};
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

pub use dctcp::{Dctcp, DctcpConfig};
pub use reno::{Reno, RenoCore};

/// Everything a controller may learn from one ACK that acknowledged new data. New fields
/// are added here, never as new method arguments.
#[derive(Clone, Copy, Debug, Default)]
pub struct AckSample {
    /// The current time.
    pub now: Time,
    /// Bytes newly acknowledged by this ACK.
    pub acked_bytes: u64,
    /// Of those, bytes the receiver reported as CE-marked (ECE).
    pub ce_bytes: u64,
    /// Bytes in flight after this ACK.
    pub in_flight_bytes: u64,
    /// RTT sample from this ACK's echoed timestamp.
    pub rtt: Option<Dur>,
    /// Smallest RTT seen by this flow.
    pub min_rtt: Dur,
    /// This ACK covers the last byte that was outstanding when the previous round began:
    /// one window of data has been acknowledged and a new round starts.
    pub round_start: bool,
    /// The sender is in fast recovery (window growth is suspended).
    pub in_recovery: bool,
    /// The sender used its whole window when it last sent (RFC 7661): a window that was
    /// not the limit (the application or the NIC was) must not grow.
    pub cwnd_limited: bool,
    /// Maximum segment size in bytes.
    pub mss: u64,
}

/// Internal state for samplers and traces.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CcMetrics {
    /// Congestion window, bytes.
    pub cwnd_bytes: u64,
    /// Slow-start threshold, bytes.
    pub ssthresh_bytes: u64,
    /// DCTCP's α (zero for controllers without one).
    pub alpha: f64,
}

/// Window and rate policy of one sender.
pub trait CongestionControl {
    /// Stable lowercase name used in scenario files and output ("dctcp").
    fn name(&self) -> &'static str;
    /// Bytes the sender may have in flight now.
    fn cwnd_bytes(&self) -> u64;
    /// Pacing rate, if this algorithm paces. `None`: window-limited only.
    fn pacing_rate(&self) -> Option<Rate> {
        None
    }
    /// New data was acknowledged. Called once per such ACK, after the transport updated its
    /// sequence state and RTT estimate.
    fn on_ack(&mut self, ack: &AckSample);
    /// The receiver echoed congestion (ECE). Called at most once per window of data: the
    /// transport ignores further echoes until the data outstanding now is acknowledged.
    fn on_ecn(&mut self, now: Time, in_flight_bytes: u64);
    /// Loss inferred from three duplicate ACKs; fast recovery begins.
    fn on_loss(&mut self, now: Time, in_flight_bytes: u64);
    /// The retransmission timer fired.
    fn on_rto(&mut self, now: Time, in_flight_bytes: u64);
    /// Internal state for samplers.
    fn metrics(&self) -> CcMetrics;
}

/// Statically dispatched congestion controller.
pub enum Cc {
    /// TCP NewReno (RFC 5681 / 6582) with classic ECN reaction (RFC 3168).
    Reno(Reno),
    /// DCTCP (Alizadeh et al., SIGCOMM'10; RFC 8257).
    Dctcp(Dctcp),
    /// Out-of-tree controllers.
    Custom(Box<dyn CongestionControl + Send>),
}

macro_rules! forward {
    ($self:ident, $c:ident => $e:expr) => {
        match $self {
            Cc::Reno($c) => $e,
            Cc::Dctcp($c) => $e,
            Cc::Custom($c) => $e,
        }
    };
}

impl CongestionControl for Cc {
    fn name(&self) -> &'static str {
        forward!(self, c => c.name())
    }
    #[inline]
    fn cwnd_bytes(&self) -> u64 {
        forward!(self, c => c.cwnd_bytes())
    }
    fn pacing_rate(&self) -> Option<Rate> {
        forward!(self, c => c.pacing_rate())
    }
    #[inline]
    fn on_ack(&mut self, ack: &AckSample) {
        forward!(self, c => c.on_ack(ack))
    }
    fn on_ecn(&mut self, now: Time, in_flight_bytes: u64) {
        forward!(self, c => c.on_ecn(now, in_flight_bytes))
    }
    fn on_loss(&mut self, now: Time, in_flight_bytes: u64) {
        forward!(self, c => c.on_loss(now, in_flight_bytes))
    }
    fn on_rto(&mut self, now: Time, in_flight_bytes: u64) {
        forward!(self, c => c.on_rto(now, in_flight_bytes))
    }
    fn metrics(&self) -> CcMetrics {
        forward!(self, c => c.metrics())
    }
}

/// Window limits every controller shares, in bytes.
#[derive(Clone, Copy, Debug)]
pub struct WindowLimits {
    /// Segment size.
    pub mss: u64,
    /// Initial window.
    pub init_cwnd: u64,
    /// Floor of the window after any decrease.
    pub min_cwnd: u64,
}

/// A congestion controller as written in a scenario: a name (`cc = "dctcp"`) or a table
/// with parameters (`cc = { kind = "dctcp", g = 0.0625 }`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[derive(Default)]
pub enum CcSpec {
    /// TCP NewReno.
    #[default]
    Reno,
    /// DCTCP.
    Dctcp(DctcpConfig),
}

#[derive(Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
enum CcSpecTable {
    Reno,
    Dctcp(DctcpConfig),
}

impl<'de> Deserialize<'de> for CcSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = CcSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a congestion control name (\"reno\", \"dctcp\") or a table with `kind`",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<CcSpec, E> {
                match v {
                    "reno" => Ok(CcSpec::Reno),
                    "dctcp" => Ok(CcSpec::Dctcp(DctcpConfig::default())),
                    other => Err(E::unknown_variant(other, &["reno", "dctcp"])),
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<CcSpec, A::Error> {
                Ok(
                    match CcSpecTable::deserialize(de::value::MapAccessDeserializer::new(m))? {
                        CcSpecTable::Reno => CcSpec::Reno,
                        CcSpecTable::Dctcp(c) => CcSpec::Dctcp(c),
                    },
                )
            }
        }
        d.deserialize_any(V)
    }
}

impl CcSpec {
    /// Builds the controller.
    pub fn build(&self, limits: WindowLimits) -> Cc {
        match self {
            Self::Reno => Cc::Reno(Reno::new(limits)),
            Self::Dctcp(c) => Cc::Dctcp(Dctcp::new(c, limits)),
        }
    }
    /// Whether the controller reacts to ECN by design (ECN is then on by default).
    pub fn wants_ecn(&self) -> bool {
        matches!(self, Self::Dctcp(_))
    }
    /// Checks parameter ranges; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Self::Reno => Ok(()),
            Self::Dctcp(c) => c.validate(),
        }
    }
    /// The controllers a scenario can name (for `dcsim list`).
    pub const KINDS: &'static [(&'static str, &'static str)] = &[
        (
            "reno",
            "TCP NewReno: slow start, AIMD, fast retransmit/recovery; classic ECN halving",
        ),
        (
            "dctcp",
            "DCTCP: alpha EWMA of the marked fraction per window, cwnd *= 1 - alpha/2",
        ),
    ];
}

#[cfg(test)]
pub(crate) mod driver {
    //! `CcDriver`: feeds a controller scripted rounds without a network.
    use super::*;

    /// Runs `rounds` windows of per-segment ACKs, `marked` of every `of` segments CE-marked,
    /// and returns (cwnd, α, marked fraction of the round) after each round.
    pub(crate) fn rounds(cc: &mut Cc, rounds: usize, marked: u64, of: u64) -> Vec<(u64, f64, f64)> {
        let mss = 1460;
        let mut out = Vec::new();
        let mut now = Time::ZERO;
        for _ in 0..rounds {
            let segs = (cc.cwnd_bytes() / mss).max(1);
            let mut ecn_done = false;
            let mut n_marked = 0;
            for i in 0..segs {
                now += Dur::from_us(1);
                let ce = i % of < marked;
                n_marked += u64::from(ce);
                if ce && !ecn_done {
                    cc.on_ecn(now, segs * mss);
                    ecn_done = true;
                }
                let a = AckSample {
                    now,
                    acked_bytes: mss,
                    ce_bytes: if ce { mss } else { 0 },
                    in_flight_bytes: (segs - i - 1) * mss,
                    rtt: Some(Dur::from_us(100)),
                    min_rtt: Dur::from_us(100),
                    round_start: i == segs - 1,
                    in_recovery: false,
                    cwnd_limited: true,
                    mss,
                };
                cc.on_ack(&a);
                let m = cc.metrics();
                assert!(m.cwnd_bytes >= mss, "window below one segment");
                assert!(m.alpha.is_finite() && (0.0..=1.0).contains(&m.alpha));
            }
            out.push((
                cc.cwnd_bytes(),
                cc.metrics().alpha,
                n_marked as f64 / segs as f64,
            ));
        }
        out
    }
}
