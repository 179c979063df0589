//! Congestion control: the window and rate policy inside the reliable transport.
//!
//! The transport owns sequence space, ACK processing, loss detection, RTT estimation,
//! retransmission, timers and the "once per window" bookkeeping for ECN; a controller owns
//! only the congestion window (and a pacing rate, if it paces). This is the Linux
//! `tcp_congestion_ops` split. A new controller is one file here implementing
//! [`CongestionControl`] and [`Controller`], plus one line in the `controllers!` registry
//! below.

mod cubic;
mod dctcp;
mod dx;
mod hull;
mod pulser;
mod rcp;
mod reno;

use core::fmt;

use dcsim_engine::spec::{self, Kind};
use dcsim_engine::{Dur, Rate, Rng, RngTree, Time};
#[cfg(doc)]
use dcsim_net::Telemetry;
use serde::de::{self, DeserializeOwned};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::endpoint::Needs;

pub use cubic::{Cubic, CubicConfig};
pub use dctcp::{Dctcp, DctcpConfig};
pub use dx::{Dx, DxConfig, Estimator, Measurement, Normalizer, Timestamps};
pub use hull::{Hull, HullConfig};
pub use pulser::{Pulser, PulserConfig};
pub use rcp::{Rcp, RcpConfig};
pub use reno::{Reno, RenoConfig, RenoCore};

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
    /// The first byte not yet acknowledged after this ACK (bytes from the flow's start).
    pub snd_una: u64,
    /// The next byte to send, before anything this ACK lets the sender send.
    pub snd_nxt: u64,
    /// The sender is in fast recovery (window growth is suspended).
    pub in_recovery: bool,
    /// The sender used its whole window when it last sent (RFC 7661): a window that was
    /// not the limit (the application or the NIC was) must not grow. With the `linux`
    /// profile, whether it did at any send over the last window of data, as Linux's
    /// `tcp_cwnd_validate` keeps it.
    pub cwnd_limited: bool,
    /// With the `linux` profile, the most bytes out at once over the last window of data
    /// (Linux's `max_packets_out`): slow start may grow the window to twice that even when
    /// something else held the sender (`tcp_is_cwnd_limited`); 0 otherwise.
    pub max_out_bytes: u64,
    /// Time the data packet that triggered this ACK waited in switch queues, echoed by the
    /// receiver; `Some` only for controllers that need [`Telemetry::QUEUE_DELAY`].
    pub queue_delay: Option<Dur>,
    /// The rate stamped into that data packet by the ports on its path, echoed by the
    /// receiver, if any port stamped one.
    pub rate_echo: Option<Rate>,
    /// When that data packet reached the receiver (the receiver's clock, which is exact in
    /// the simulation), as echoed in the ACK.
    pub data_arrival: Option<Time>,
    /// Maximum segment size in bytes.
    pub mss: u64,
    /// The ACK echoes an explicit incast notification (Pulser): a port on the data's path
    /// saw its queue grow steeply.
    pub ein: bool,
}

impl AckSample {
    /// Whether a window of `cwnd` bytes may grow: the window was the limit, or (slow start)
    /// it is below twice the most that was out (Linux's `tcp_is_cwnd_limited`).
    #[inline]
    pub fn may_grow(&self, cwnd: u64, slow_start: bool) -> bool {
        self.cwnd_limited || (slow_start && cwnd < 2 * self.max_out_bytes)
    }
}

/// Window and rate policy of one sender.
pub trait CongestionControl {
    /// Bytes the sender may have in flight now.
    fn cwnd_bytes(&self) -> u64;
    /// Pacing rate, if this algorithm paces. `None`: window-limited only.
    fn pacing_rate(&self) -> Option<Rate> {
        None
    }
    /// The slow-start threshold in bytes (unbounded by default). Linux's pacing rate, which
    /// sizes TCP small queues, doubles the window's rate below half of it.
    fn ssthresh_bytes(&self) -> u64 {
        u64::MAX
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
    /// Whether the SYN asks the switches for their rate (RCP). Default: no.
    fn requests_rate(&self) -> bool {
        false
    }
    /// The handshake completed after `rtt`, its SYN-ACK echoing `rate_echo`, the smallest
    /// rate the switches stamped into the SYN (when [`Self::requests_rate`]). Default:
    /// nothing.
    fn on_syn_ack(&mut self, _rate_echo: Option<Rate>, _rtt: Dur) {}
    /// Whether the sender's packets go through its host's pacer now, and the pacer's
    /// parameters (HULL). Default: never.
    fn host_pacer(&self, _now: Time) -> Option<PacerParams> {
        None
    }
    /// The controller's own state for the time series (`output.timeseries.cwnd`), as
    /// `(kind, value)` pairs: DCTCP's `alpha`, DX's measured delay. The transport samples
    /// the window itself. Default: nothing.
    fn sample(&self, _out: &mut Vec<(&'static str, f64)>) {}
}

/// A congestion controller that scenarios can name: its name, its parameters and how to
/// build it. Implementing this in the controller's own file and adding one line to
/// [`controllers!`](crate::cc) below is all a new controller needs; the scenario syntax,
/// validation, `dcsim list`, output labels and dispatch all come from here.
pub trait Controller: CongestionControl + Sized {
    /// Name in scenario files and output (`cc = "dctcp"`).
    const NAME: &'static str;
    /// One line for `dcsim list`.
    const ABOUT: &'static str;
    /// Whether the controller reacts to ECN by design: its flows are then ECN-capable
    /// unless the scenario says otherwise.
    const USES_ECN: bool = false;
    /// Parameters; `Default` gives the documented defaults.
    type Config: Clone + fmt::Debug + PartialEq + Default + Serialize + DeserializeOwned;
    /// The controller of one sender.
    fn build(cfg: &Self::Config, setup: CcSetup) -> Self;
    /// Checks parameter ranges; the error starts with the parameter's name.
    fn validate(_cfg: &Self::Config) -> Result<(), String> {
        Ok(())
    }
    /// What the controller needs of the network (header fields, port features).
    fn needs(_cfg: &Self::Config) -> Needs {
        Needs::default()
    }
}

/// The registry: one line per controller, `Variant(path::Type)`. The first is the default.
/// Generates [`Cc`] (static dispatch, plus `Custom` for controllers out of tree) and
/// [`CcSpec`] (the scenario syntax).
macro_rules! controllers {
    ($($(#[$doc:meta])* $V:ident($T:ty)),+ $(,)?) => {
        /// Statically dispatched congestion controller.
        pub enum Cc {
            $($(#[$doc])* $V($T),)+
            /// A controller from outside this crate.
            Custom(Box<dyn CongestionControl + Send>),
        }

        impl Cc {
            /// The controller's name (`"custom"` for one from outside the registry).
            pub fn name(&self) -> &'static str {
                match self {
                    $(Self::$V(_) => <$T as Controller>::NAME,)+
                    Self::Custom(_) => "custom",
                }
            }
        }

        impl CongestionControl for Cc {
            #[inline]
            fn cwnd_bytes(&self) -> u64 {
                match self { $(Self::$V(c) => c.cwnd_bytes(),)+ Self::Custom(c) => c.cwnd_bytes() }
            }
            #[inline]
            fn pacing_rate(&self) -> Option<Rate> {
                match self { $(Self::$V(c) => c.pacing_rate(),)+ Self::Custom(c) => c.pacing_rate() }
            }
            fn ssthresh_bytes(&self) -> u64 {
                match self { $(Self::$V(c) => c.ssthresh_bytes(),)+ Self::Custom(c) => c.ssthresh_bytes() }
            }
            #[inline]
            fn on_ack(&mut self, ack: &AckSample) {
                match self { $(Self::$V(c) => c.on_ack(ack),)+ Self::Custom(c) => c.on_ack(ack) }
            }
            fn on_ecn(&mut self, now: Time, in_flight_bytes: u64) {
                match self {
                    $(Self::$V(c) => c.on_ecn(now, in_flight_bytes),)+
                    Self::Custom(c) => c.on_ecn(now, in_flight_bytes),
                }
            }
            fn on_loss(&mut self, now: Time, in_flight_bytes: u64) {
                match self {
                    $(Self::$V(c) => c.on_loss(now, in_flight_bytes),)+
                    Self::Custom(c) => c.on_loss(now, in_flight_bytes),
                }
            }
            fn on_rto(&mut self, now: Time, in_flight_bytes: u64) {
                match self {
                    $(Self::$V(c) => c.on_rto(now, in_flight_bytes),)+
                    Self::Custom(c) => c.on_rto(now, in_flight_bytes),
                }
            }
            fn requests_rate(&self) -> bool {
                match self { $(Self::$V(c) => c.requests_rate(),)+ Self::Custom(c) => c.requests_rate() }
            }
            fn on_syn_ack(&mut self, rate_echo: Option<Rate>, rtt: Dur) {
                match self {
                    $(Self::$V(c) => c.on_syn_ack(rate_echo, rtt),)+
                    Self::Custom(c) => c.on_syn_ack(rate_echo, rtt),
                }
            }
            #[inline]
            fn host_pacer(&self, now: Time) -> Option<PacerParams> {
                match self { $(Self::$V(c) => c.host_pacer(now),)+ Self::Custom(c) => c.host_pacer(now) }
            }
            fn sample(&self, out: &mut Vec<(&'static str, f64)>) {
                match self { $(Self::$V(c) => c.sample(out),)+ Self::Custom(c) => c.sample(out) }
            }
        }

        /// A congestion controller as written in a scenario: a name (`cc = "dctcp"`) or a
        /// table with parameters (`cc = { kind = "dctcp", g = 0.0625 }`).
        #[derive(Clone, Debug, PartialEq)]
        pub enum CcSpec {
            $($(#[$doc])* $V(<$T as Controller>::Config),)+
        }

        impl CcSpec {
            /// The controllers a scenario can name, in registration order.
            pub const KINDS: &'static [Kind] = &[$(Kind {
                name: <$T as Controller>::NAME,
                about: <$T as Controller>::ABOUT,
            }),+];
            const NAMES: &'static [&'static str] = &[$(<$T as Controller>::NAME),+];

            /// The controller's name.
            pub fn name(&self) -> &'static str {
                match self { $(Self::$V(_) => <$T as Controller>::NAME,)+ }
            }
            /// Builds the controller of one sender.
            pub fn build_with(&self, setup: CcSetup) -> Cc {
                match self { $(Self::$V(c) => Cc::$V(<$T as Controller>::build(c, setup)),)+ }
            }
            /// Builds the controller of one sender on a 10 Gb/s link, with a fixed random
            /// stream (for tests and tools; a simulation uses [`CcSpec::build_with`]).
            pub fn build(&self, limits: WindowLimits) -> Cc {
                self.build_with(CcSetup {
                    limits,
                    line_rate: Rate::from_gbps(10),
                    rng: RngTree::new(0).stream("cc", 0),
                })
            }
            /// Whether the controller reacts to ECN by design (ECN is then on by default).
            pub fn uses_ecn(&self) -> bool {
                match self { $(Self::$V(_) => <$T as Controller>::USES_ECN,)+ }
            }
            /// Checks parameter ranges; the error names the field.
            pub fn validate(&self) -> Result<(), String> {
                match self { $(Self::$V(c) => <$T as Controller>::validate(c),)+ }
            }
            /// What the controller needs of the network.
            pub fn needs(&self) -> Needs {
                match self { $(Self::$V(c) => <$T as Controller>::needs(c),)+ }
            }
            /// Every registered controller with default parameters, in registration order.
            pub fn defaults() -> Vec<Self> {
                vec![$(Self::$V(Default::default())),+]
            }
        }

        impl Serialize for CcSpec {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(Self::$V(c) => spec::serialize_tagged(<$T as Controller>::NAME, c, s),)+
                }
            }
        }

        impl<'de> Deserialize<'de> for CcSpec {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                spec::deserialize_tagged(d, Self::NAMES, |kind, params| {
                    $(if kind == <$T as Controller>::NAME {
                        return spec::params(params).map(Self::$V);
                    })+
                    Err(de::Error::custom(format_args!("no congestion controller {kind:?}")))
                })
            }
        }
    };
}

controllers! {
    /// TCP NewReno (RFC 5681 / 6582) with classic ECN reaction (RFC 3168).
    Reno(Reno),
    /// DCTCP (Alizadeh et al., SIGCOMM'10; RFC 8257).
    Dctcp(Dctcp),
    /// DX (Lee et al., USENIX ATC'15): latency feedback.
    Dx(Dx),
    /// RCP (Dukkipati, McKeown, CCR 2006): the rate the switches offer.
    Rcp(Rcp),
    /// HULL's hosts (Alizadeh et al., NSDI'12): DCTCP on phantom-queue marks, paced.
    Hull(Hull),
    /// Pulser (Almasi et al.): DCTCP with the explicit incast notification.
    Pulser(Pulser),
    /// CUBIC (RFC 9438).
    Cubic(Cubic),
}

impl Default for CcSpec {
    fn default() -> Self {
        Self::Reno(RenoConfig::default())
    }
}

/// Parameters of a host's pacer (HULL), given by the controllers that use it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PacerParams {
    /// EWMA weight η of the rate estimate.
    pub eta: f64,
    /// Weight β of the backlog (bytes of demand per byte held back).
    pub beta: f64,
    /// Rate update interval T_r.
    pub interval: Dur,
}

/// What a controller is built with, besides its parameters.
pub struct CcSetup {
    /// Window limits.
    pub limits: WindowLimits,
    /// Line rate of the sender's NIC.
    pub line_rate: Rate,
    /// The controller's own random stream.
    pub rng: Rng,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Doc {
        cc: CcSpec,
    }

    /// Every registered controller: a unique name, its bare name parses to its defaults,
    /// which validate, print with `kind` first and read back unchanged, and build a
    /// controller of that name.
    #[test]
    fn every_registered_controller_parses_prints_and_builds() {
        let names: Vec<&str> = CcSpec::KINDS.iter().map(|k| k.name).collect();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "duplicate names in {names:?}");
        let limits = WindowLimits {
            mss: 1460,
            init_cwnd: 14600,
            min_cwnd: 2920,
        };
        for (spec, name) in CcSpec::defaults().into_iter().zip(names) {
            assert_eq!(spec.name(), name);
            spec.validate().unwrap();
            let bare: Doc = toml::from_str(&format!("cc = \"{name}\"")).unwrap();
            assert_eq!(bare.cc, spec);
            let text = toml::to_string(&Doc { cc: spec.clone() }).unwrap();
            assert!(
                text.starts_with(&format!("[cc]\nkind = \"{name}\"")),
                "{text}"
            );
            assert_eq!(toml::from_str::<Doc>(&text).unwrap().cc, spec);
            assert_eq!(spec.build(limits).name(), name);
        }
    }

    /// TCP small queues size the NIC queue by the pacing rate, which depends on the
    /// slow-start threshold: every window controller reports its threshold (unbounded in
    /// slow start, the cut window after a loss); only RCP, which sets a rate, has none.
    #[test]
    fn every_window_controller_reports_its_slow_start_threshold() {
        let limits = WindowLimits {
            mss: 1460,
            init_cwnd: 14600,
            min_cwnd: 2920,
        };
        for spec in CcSpec::defaults() {
            let mut cc = spec.build(limits);
            assert_eq!(cc.ssthresh_bytes(), u64::MAX, "{}", cc.name());
            cc.on_loss(Time::ZERO, 20 * 1460);
            let s = cc.ssthresh_bytes();
            if cc.name() == "rcp" {
                assert_eq!(s, u64::MAX);
            } else {
                assert!((2920..=14600).contains(&s), "{}: {s}", cc.name());
            }
        }
    }
}
