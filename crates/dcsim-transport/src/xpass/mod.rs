//! ExpressPass: end-to-end credit-based congestion control (Cho, Jang, Han, SIGCOMM 2017,
//! and the earlier workshop paper; ns-2 reference code kaist-ina/ns2-xpass).
//!
//! The receiver paces small credit packets toward the sender; every port shapes credits to
//! the credit share of its link ([`dcsim_net::qdisc::CreditShaper`]) and drops the excess;
//! each credit that reaches the sender releases one data packet, which takes the reverse
//! path of the credit. The receiver's feedback law ([`feedback`]) sets its credit rate from
//! the credit loss it infers from the credit sequence numbers echoed by data.
//!
//! # Messages (header use)
//! | packet | class | wire | fields |
//! |---|---|---|---|
//! | request | control | 84 B | `seq` = flow size (`u64::MAX` long-lived), `ack` = packets to send, `sent_at` |
//! | credit | credit | 84 B (or uniform in a range) | `seq` = credit sequence (from 1), `sent_at` |
//! | data | data | payload + 78 B, ≥ 84 B | `seq` = first byte, `payload_bytes`, `ack` = credit sequence, `echo` = credit's `sent_at` |
//! | stop | control | 84 B | `seq` = final flow size |
//! | NACK | control | 84 B | `seq`..`ack` = a missing byte range |
//!
//! # Loss recovery (better than the reference, which cannot recover tail loss)
//! The receiver knows the flow size from the request (or the stop). It keeps out-of-order
//! data (no go-back-N): a gap in the byte stream is reported at once by a NACK naming the
//! missing range, repeated every `rto` while the hole persists, and also after a stop that
//! leaves the flow incomplete (tail loss). The sender retransmits NACKed ranges first, on
//! the next credits, and re-requests credits if it had stopped. A lost stop is repeated
//! when credits keep arriving more than two RTTs after it; a lost request after `rto`.

pub mod feedback;
mod receiver;
mod sender;

use dcsim_engine::{Dur, Rate, RngTree};
use dcsim_net::qdisc::PortFeatures;
use dcsim_net::wire::{MAX_WIRE_BYTES, MIN_WIRE_BYTES, TCP_MSS_BYTES};
use dcsim_net::{Class, IpBits, Packet, RateStamp, Telemetry};
use serde::{Deserialize, Serialize};

pub use feedback::{Feedback, Law, LawParams, Period};
pub use receiver::XpassReceiver;
pub use sender::XpassSender;

use crate::endpoint::{FlowInfo, Needs, PacketFormat, Transport};
use crate::record::FlowRecord;

/// Packet flag: credit request.
pub const FLAG_REQUEST: u8 = 8;
/// Packet flag: credit stop.
pub const FLAG_STOP: u8 = 16;
/// Packet flag: credit.
pub const FLAG_CREDIT: u8 = 32;
/// Packet flag: data.
pub const FLAG_XDATA: u8 = 64;
/// Packet flag: negative acknowledgement of a byte range.
pub const FLAG_NACK: u8 = 128;

/// Named parameter sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// SIGCOMM'17 paper: Algorithm 1, target loss 10 %, w_max 0.5, w_min 0.01,
    /// α = w_init = 1/16, no AIR or ECS.
    #[default]
    Paper,
    /// The ns-2 code at HEAD (f4e38bc): the code law (dynamic target 0.125·(1 − r/R),
    /// w += 0.05), α = w_init = 0.5, w_min 0.01, AIR and ECS on.
    Code,
}

/// ExpressPass parameters as written in a scenario; unset fields come from `profile`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct XpassConfig {
    /// Parameter profile (default `paper`).
    pub profile: Option<Profile>,
    /// Feedback law: `none`, `workshop`, `paper`, `paper-literal` or `code`.
    pub law: Option<Law>,
    /// Initial credit rate as a fraction of the maximum (α).
    pub alpha: Option<f64>,
    /// Initial aggressiveness w.
    pub w_init: Option<f64>,
    /// Upper bound of w.
    pub w_max: Option<f64>,
    /// Lower bound of w.
    pub w_min: Option<f64>,
    /// Paper law: target credit loss.
    pub target_loss: Option<f64>,
    /// Code law: scaling of the dynamic target.
    pub target_loss_scaling: Option<f64>,
    /// Adaptive initial rate: flows of fewer than 40 packets start at α·max·packets/40.
    pub air: Option<bool>,
    /// Early credit stop: stop credits once the credits of the last RTT cover what is
    /// left (at most once per RTT).
    pub ecs: Option<bool>,
    /// Relative jitter of the inter-credit gap: uniform in `[min, max]` (±0.1).
    pub jitter: Option<[f64; 2]>,
    /// Credit wire size range in bytes, uniform (84..84; the fat-tree script uses 76..92).
    pub credit_size: Option<[u32; 2]>,
    /// Maximum credit rate (default: the credit share of the receiver's link,
    /// link · avg credit / (avg credit + 1538)).
    pub max_credit_rate: Option<Rate>,
    /// Retransmission timeout of requests and NACKs (100 µs, the fat-tree script's).
    pub rto: Option<Dur>,
}

/// Resolved parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct XpassParams {
    /// Feedback law and its constants (`max_rate` filled per flow).
    pub law: LawParams,
    /// α.
    pub alpha: f64,
    /// AIR on.
    pub air: bool,
    /// ECS on.
    pub ecs: bool,
    /// Jitter range.
    pub jitter: [f64; 2],
    /// Credit size range.
    pub credit_size: [u32; 2],
    /// Explicit maximum credit rate.
    pub max_credit_rate: Option<Rate>,
    /// Request/NACK timeout.
    pub rto: Dur,
}

impl XpassConfig {
    /// Fills unset fields from the profile.
    pub fn resolve(&self) -> Self {
        let profile = self.profile.unwrap_or_default();
        let (law, alpha, w_init, air, ecs) = match profile {
            Profile::Paper => (Law::Paper, 1.0 / 16.0, 1.0 / 16.0, false, false),
            Profile::Code => (Law::Code, 0.5, 0.5, true, true),
        };
        Self {
            profile: Some(profile),
            law: Some(self.law.unwrap_or(law)),
            alpha: Some(self.alpha.unwrap_or(alpha)),
            w_init: Some(self.w_init.unwrap_or(w_init)),
            w_max: Some(self.w_max.unwrap_or(0.5)),
            w_min: Some(self.w_min.unwrap_or(0.01)),
            target_loss: Some(self.target_loss.unwrap_or(0.1)),
            target_loss_scaling: Some(self.target_loss_scaling.unwrap_or(0.125)),
            air: Some(self.air.unwrap_or(air)),
            ecs: Some(self.ecs.unwrap_or(ecs)),
            jitter: Some(self.jitter.unwrap_or([-0.1, 0.1])),
            credit_size: Some(self.credit_size.unwrap_or([MIN_WIRE_BYTES, MIN_WIRE_BYTES])),
            max_credit_rate: self.max_credit_rate,
            rto: Some(self.rto.unwrap_or(Dur::from_us(100))),
        }
    }

    /// Checks ranges; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        let r = self.resolve();
        let frac = |v: Option<f64>, name: &str, lo: f64| match v {
            Some(x) if x > lo && x <= 1.0 => Ok(()),
            Some(x) => Err(format!("{name}: must be in ({lo}, 1], got {x}")),
            None => Ok(()),
        };
        frac(r.alpha, "alpha", 0.0)?;
        frac(r.w_init, "w_init", 0.0)?;
        frac(r.w_max, "w_max", 0.0)?;
        frac(r.w_min, "w_min", 0.0)?;
        frac(r.target_loss, "target_loss", -1e-300)?;
        frac(r.target_loss_scaling, "target_loss_scaling", -1e-300)?;
        if r.w_min > r.w_max {
            return Err("w_min: must not exceed w_max".into());
        }
        let [a, b] = r.jitter.unwrap_or_default();
        if !(a <= b && a > -1.0 && b < 10.0) {
            return Err(format!(
                "jitter: expected [min, max] with -1 < min <= max, got [{a}, {b}]"
            ));
        }
        let [lo, hi] = r.credit_size.unwrap_or_default();
        if !(lo > 0 && lo <= hi && hi <= MAX_WIRE_BYTES) {
            return Err(format!(
                "credit_size: expected [min, max] bytes with 0 < min <= max <= 1538, got [{lo}, {hi}]"
            ));
        }
        if r.rto == Some(Dur::ZERO) {
            return Err("rto: must be greater than zero".into());
        }
        if r.max_credit_rate == Some(Rate::ZERO) {
            return Err("max_credit_rate: must be greater than zero".into());
        }
        Ok(())
    }

    /// The resolved parameters.
    pub fn params(&self) -> XpassParams {
        let r = self.resolve();
        let f = |v: Option<f64>| v.expect("resolved");
        XpassParams {
            law: LawParams {
                law: r.law.expect("resolved"),
                max_rate: 0.0,
                w_init: f(r.w_init),
                w_max: f(r.w_max),
                w_min: f(r.w_min),
                target_loss: f(r.target_loss),
                target_loss_scaling: f(r.target_loss_scaling),
                w_step: 0.05,
            },
            alpha: f(r.alpha),
            air: r.air.expect("resolved"),
            ecs: r.ecs.expect("resolved"),
            jitter: r.jitter.expect("resolved"),
            credit_size: r.credit_size.expect("resolved"),
            max_credit_rate: r.max_credit_rate,
            rto: r.rto.expect("resolved"),
        }
    }
}

/// Positions in [`FlowRecord::counters`].
const CREDITS_SENT: usize = 0;
const CREDITS_WASTED: usize = 1;

/// ExpressPass (`kind = "expresspass"`).
pub struct Xpass;

impl Transport for Xpass {
    const NAME: &'static str = "expresspass";
    const ABOUT: &'static str =
        "credit-based: receiver-paced credits, one data packet per credit; profile paper | code";
    type Config = XpassConfig;
    type Sender = XpassSender;
    type Receiver = XpassReceiver;
    type Host = ();

    fn validate(cfg: &XpassConfig) -> Result<(), String> {
        cfg.validate()
    }
    fn resolve(cfg: &XpassConfig) -> XpassConfig {
        cfg.resolve()
    }
    fn needs(_cfg: &XpassConfig) -> Needs {
        Needs {
            symmetric_routes: Some("data must take the reverse path of its credits"),
            flow_routes: None,
            switch_ports: Some((
                PortFeatures::CREDIT_SHAPING,
                "credits must be rate-limited at every hop",
            )),
            nics: None,
            nic_preference: Some((
                PortFeatures::CREDIT_SHAPING,
                "the authors' fat-tree script shapes credits at host NICs too",
            )),
            telemetry: Telemetry::empty(),
        }
    }
    fn packet_format(_cfg: &XpassConfig) -> PacketFormat {
        PacketFormat {
            payload_bytes: u64::from(TCP_MSS_BYTES),
            full_wire_bytes: MAX_WIRE_BYTES,
        }
    }
    fn open(cfg: &XpassConfig, flow: &FlowInfo, rng: &RngTree) -> (XpassSender, XpassReceiver) {
        let mut p = cfg.params();
        let avg = f64::from(p.credit_size[0] + p.credit_size[1]) / 2.0;
        let max_rate = match p.max_credit_rate {
            Some(r) => r.bps() as f64 / 8.0,
            None => flow.dst_link.bps() as f64 / 8.0 * avg / (avg + f64::from(MAX_WIRE_BYTES)),
        };
        p.law.max_rate = max_rate;
        let rng = rng.stream("flow", u64::from(flow.flow.0));
        (
            XpassSender::new(p, flow),
            XpassReceiver::new(p, flow, max_rate, rng),
        )
    }
    /// `credits_sent` by the receiver; `credits_wasted`: credits that reached the sender
    /// with nothing to send, including those that arrived after the flow had finished.
    const FLOW_COUNTERS: &'static [&'static str] = &["credits_sent", "credits_wasted"];
    fn record(tx: &XpassSender, rx: &XpassReceiver, r: &mut FlowRecord) {
        r.retransmits = tx.stats().retransmits;
        r.counters[CREDITS_SENT] = rx.stats().credits_sent;
        // Stragglers already counted by the flow table stay counted.
        r.counters[CREDITS_WASTED] = r.counters[CREDITS_WASTED].max(tx.stats().credits_wasted);
    }
    fn sample(_tx: &XpassSender, rx: &XpassReceiver, out: &mut Vec<(&'static str, f64)>) {
        out.push(("credit_rate_gbps", rx.credit_rate() * 8.0 / 1e9));
        out.push(("w", rx.w()));
    }
    const COUNTS_STRAGGLERS: bool = true;

    /// A credit that arrives after the flow has finished is wasted.
    fn on_straggler(pkt: &Packet, r: &mut FlowRecord) {
        if pkt.class == Class::Credit {
            r.counters[CREDITS_WASTED] += 1;
        }
    }
}

/// Counters of one ExpressPass flow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XpassStats {
    /// Credits the receiver sent.
    pub credits_sent: u64,
    /// Credits that reached the sender.
    pub credits_received: u64,
    /// Credits that reached the sender with nothing to send.
    pub credits_wasted: u64,
    /// Data packets sent again after a NACK.
    pub retransmits: u64,
    /// Requests sent (1 plus re-requests).
    pub requests: u64,
    /// NACKs sent.
    pub nacks: u64,
}

/// A control packet (request, stop, NACK: 84 bytes on the wire) of `flow`, from the
/// sender (`from_sender`) or the receiver.
fn control(
    flow: &FlowInfo,
    from_sender: bool,
    now: dcsim_engine::Time,
    flags: u8,
    seq: u64,
    ack: u64,
) -> Packet {
    Packet {
        seq,
        ack,
        sent_at: now,
        echo: dcsim_engine::Time::ZERO,
        rate: RateStamp::NONE,
        flow: flow.flow,
        route: if from_sender { flow.fwd } else { flow.rev },
        dst: if from_sender { flow.dst } else { flow.src },
        next: dcsim_net::PortId::NONE,
        queue_delay_ns: 0,
        payload_bytes: 0,
        wire_bytes: dcsim_net::bytes16(MIN_WIRE_BYTES),
        hop: 0,
        class: Class::Control,
        ip: IpBits::NOT_ECT,
        flags,
    }
}
