//! The shared reliable transport: TCP (SACK, loss recovery, timers) with a pluggable
//! congestion controller ([`crate::cc`]). Every window- or rate-based protocol (DCTCP and the others
//! of the `cc` registry) runs on it: the transport owns sequence space, acknowledgements,
//! loss recovery, RTT estimation and timers; the controller owns only the window.
//!
//! The sender ([`TcpSender`]) and the receiver ([`TcpReceiver`]) talk only through
//! packets. Sequence numbers count payload bytes from 0. Without a handshake (profile
//! `simple`) the first window leaves at the flow's start time (like ns-2's one-way TCP
//! agents and htsim); with one (`handshake`, profile `ns2`) a SYN and its SYN-ACK go first,
//! as with ns-2's FullTcp, which the ExpressPass group's DCTCP scripts use.
//!
//! Sender: slow start, congestion avoidance (policy in the controller), loss recovery by
//! NewReno (RFC 6582) or by a SACK scoreboard with RFC 6675's rules and RACK-TLP (RFC
//! 8985), retransmission timeout with exponential backoff (RFC 6298's or Linux's
//! estimator), RTT from echoed timestamps (like the TCP timestamp option), and the ECN echo
//! handled at most once per window (RFC 3168's CWR state) by calling the controller's
//! `on_ecn`. See the sender's module for which profile recovers how.
//!
//! Receiver: cumulative ACKs with an out-of-order range buffer and SACK blocks (RFC 2018,
//! three per ACK, in the packet's options beside its header), one ACK per segment by
//! default, or delayed ACKs (every second segment or a timeout, immediate on reordering)
//! with DCTCP's two-state CE machine so that marks are echoed exactly.
//!
//! # Header usage
//! Data: `seq` = first byte, `payload_bytes`, `sent_at`; ACK: `ack` = next expected byte,
//! `echo` = `sent_at` of the segment that triggered it, `sent_at` = when that segment
//! arrived (the ACK leaves then, unless delayed), flag `ECE`, and in `rate` and
//! `queue_delay_ns` what the network wrote into that segment (a rate stamp, its switch
//! queueing delay), so that controllers can use per-packet feedback. An ACK's SACK blocks
//! are its options beside the header ([`PacketExt`]: their count, then each block's start
//! and end as offsets from `ack`).
//!
//! # Pacing
//! A controller that returns a [`CongestionControl::pacing_rate`] gets its segments spaced
//! at that rate (each leaves no sooner than the previous one's wire size at the rate after
//! it); the window still applies. Without a rate the sender sends as the window allows.
//! A controller that asks for its host's pacer ([`CongestionControl::host_pacer`], HULL)
//! sends through the [`HostPacer`] the transport keeps per host ([`TcpHost`]).
//!
//! # Profiles
//! `simple` (default): no handshake, initial window 10, the host waits for room in its NIC
//! queue (back-pressure, like Linux's TCP small queues), instant window cuts. `ns2`: the
//! SYN handshake, initial window 2, no back-pressure: every packet goes to the NIC queue,
//! which drops when full (ns-2 agents hand packets to their link's queue), SACK recovery
//! that clears on a timeout. `linux`: the handshake, initial window 10, back-pressure,
//! reductions by proportional rate reduction (RFC 6937) for losses and ECN alike, DCTCP's
//! α from 1, RACK-TLP, Linux's timers and delayed ACKs, a 6 MiB receive buffer, HyStart and
//! Linux's rules for CUBIC. A field set in the scenario wins over its profile.
//!
//! # Deviations
//! No FIN, no Nagle, no DSACK, no receive buffer outside `linux` (unless `rcv_buf` or
//! `max_window` is set), no send buffer unless `snd_buf` is set. The SYN carries no data
//! and is retransmitted on the RTO like data.

mod delack;
mod ictcp;
mod pacer;
mod rcvbuf;
mod receiver;
mod scoreboard;
mod sender;

use dcsim_engine::{ByteSize, Dur, RngTree, Time};
use dcsim_net::wire::{TCP_IP_HEADER_BYTES, TCP_MSS_BYTES, wire_bytes};
use dcsim_net::{Class, FlowId, HostId, IpBits, Packet, PacketExt, RateStamp, RouteId};
use serde::{Deserialize, Serialize};

pub use delack::DelayedAck;
pub use ictcp::{IctcpConfig, IctcpConn, IctcpHost};
pub use pacer::{HostPacer, TcpHost};
pub use receiver::TcpReceiver;
pub use sender::{TcpSender, TcpStats};

use crate::cc::{CcSetup, CcSpec, CongestionControl, WindowLimits};
use crate::endpoint::{FlowInfo, Needs, PacketFormat, TcpView, TraceHeader, Transport};
use crate::record::FlowRecord;

/// Packet flag: carries data.
pub const FLAG_DATA: u8 = 1;
/// Packet flag: an acknowledgement.
pub const FLAG_ACK: u8 = 2;
/// Packet flag: ECN echo.
pub const FLAG_ECE: u8 = 4;
/// Packet flag: connection set-up (the SYN; with [`FLAG_ACK`], the SYN-ACK).
pub const FLAG_SYN: u8 = 8;
/// Packet flag: explicit incast notification echo (Pulser): a data segment this ACK
/// covers arrived with EIN set.
pub const FLAG_EIN: u8 = 16;
/// Packet flag: the ACK advertises a receive window, in bytes, in its `seq` field (ICTCP,
/// `rcv_buf`).
pub const FLAG_RWND: u8 = 32;
/// Packet flag: congestion window reduced (RFC 3168's CWR), on the first new data segment
/// after the sender answered an ECN echo.
pub const FLAG_CWR: u8 = 64;

/// SACK blocks per ACK: three, as Linux sends with timestamps on and ns-2's FullTcp/Sack
/// (`max_sack_blocks_`).
pub(crate) const SACK_BLOCKS_SENT: usize = 3;

/// SACK blocks (absolute byte ranges, each above `ack`) as a packet's options: their count,
/// then each block's start and end as offsets from `ack` (32 bits each, so a block must lie
/// within 4 GiB of the acknowledgement; one further out is left out).
pub(crate) fn encode_sack(ack: u64, blocks: &[(u64, u64)]) -> PacketExt {
    let mut ext = [0u32; 8];
    let mut n = 0;
    for &(s, e) in blocks.iter().take(SACK_BLOCKS_SENT) {
        let (Ok(so), Ok(eo)) = (u32::try_from(s - ack), u32::try_from(e - ack)) else {
            continue;
        };
        ext[1 + 2 * n] = so;
        ext[2 + 2 * n] = eo;
        n += 1;
    }
    ext[0] = n as u32;
    ext
}

/// The SACK blocks of an ACK's options ([`encode_sack`]), as absolute byte ranges.
pub(crate) fn decode_sack(ack: u64, ext: &PacketExt) -> impl Iterator<Item = (u64, u64)> + '_ {
    let n = (ext[0] as usize).min(SACK_BLOCKS_SENT);
    (0..n).map(move |i| {
        (
            ack + u64::from(ext[1 + 2 * i]),
            ack + u64::from(ext[2 + 2 * i]),
        )
    })
}

/// A header-only control segment of `flow` (the SYN and SYN-ACK): 40 B of TCP/IP header,
/// control class, sent now, echoing `echo`.
pub(crate) fn control_segment(
    flow: FlowId,
    route: RouteId,
    dst: HostId,
    now: Time,
    echo: Time,
    flags: u8,
) -> Packet {
    Packet {
        seq: 0,
        ack: 0,
        sent_at: now,
        echo,
        rate: RateStamp::NONE,
        queue_delay_ns: 0,
        flow,
        route,
        dst,
        next: dcsim_net::PortId::NONE,
        payload_bytes: 0,
        wire_bytes: dcsim_net::bytes16(wire_bytes(TCP_IP_HEADER_BYTES)),
        hop: 0,
        class: Class::Control,
        ip: IpBits::NOT_ECT,
        flags,
    }
}

/// Linux's largest receive buffer, `tcp_rmem[2]`: 32 MiB since 6.16 on a host of 4 GB
/// or more (6 MiB from 4.20).
pub(crate) const LINUX_RCV_BUF: u64 = 32 << 20;

/// The largest `gso`: Linux's `gso_max_size` without BIG TCP, 64 KiB.
pub const GSO_MAX_BYTES: u64 = 1 << 16;
/// What Linux keeps of `gso_max_size` for headers (`sk_setup_caps` takes off
/// `MAX_TCP_HEADER + 1`: 321 B on x86-64), so a 64 KiB limit carries 45 segments of 1,448 B.
pub const GSO_HEADER_ROOM: u64 = 321;

/// The receive window a buffer of `rcv_buf` bytes advertises at most (half of it), and the
/// window scale that carries it in 16 bits (as `tcp_select_initial_window` picks it, at
/// most 14).
pub(crate) fn rcv_window(rcv_buf: u64) -> (u64, u32) {
    let window = rcv_buf / 2;
    let mut scale = 0;
    while scale < 14 && (window >> scale) > u64::from(u16::MAX) {
        scale += 1;
    }
    (window, scale)
}

/// Named parameter sets of the reliable transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum TcpProfile {
    /// The model of the DCTCP paper's analysis and of most data-centre simulators: no
    /// handshake, initial window 10 (RFC 6928), NIC back-pressure (hosts never drop).
    /// Called `ideal` up to 0.1.0; that name is still read.
    #[default]
    #[serde(alias = "ideal")]
    Simple,
    /// ns-2's FullTcp as the ExpressPass group's DCTCP scripts run it: SYN handshake,
    /// initial window 2 (ns-2's `windowInit_` default), no back-pressure (a full host queue
    /// drops).
    Ns2,
    /// Linux (and ns-3's `TcpDctcp`, which follows it): SYN handshake, initial window 10,
    /// back-pressure (TCP small queues), window reductions by proportional rate reduction
    /// (RFC 6937) instead of an instant cut, and DCTCP's α starting at 1.
    Linux,
}

/// Parameters of the reliable transport. Defaults are data-centre values, each with its
/// source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TcpConfig {
    /// Parameter profile (default `simple`); the three fields below come from it unless set.
    pub profile: Option<TcpProfile>,
    /// Congestion controller (`"reno"`, `"dctcp"` or a table with parameters).
    pub cc: CcSpec,
    /// Maximum payload per segment (1460 B for a 1500 B MTU).
    pub mss: ByteSize,
    /// Initial window in segments (`simple` 10, RFC 6928; `ns2` 2).
    pub init_cwnd_pkts: Option<u32>,
    /// SYN and SYN-ACK before the first data segment (`simple` off; `ns2` on).
    pub handshake: Option<bool>,
    /// The sender waits for room in its host's NIC queue instead of handing it packets
    /// that a full queue drops (`simple` on; `ns2` off).
    pub host_backpressure: Option<bool>,
    /// Linux's TCP small queues (`tcp_small_queue_check`): a sender hands its NIC no more
    /// while the queue there holds more than about a millisecond of its pacing rate (the
    /// window's rate, doubled in early slow start, 1.2 times after), counted as Linux
    /// counts buffers' true size, at least two packets and at most `tcp_limit_output_bytes`
    /// (4 MiB); twice that for retransmissions. Without it a sender's NIC queue grows to
    /// the host transmit budget (128 KB) whenever the sender outruns its link, as in slow
    /// start. Needs `host_backpressure` (`linux` on; `simple`, `ns2` off).
    pub small_queues: Option<bool>,
    /// Window reductions (fast recovery, ECN) by proportional rate reduction, RFC 6937,
    /// instead of an instant cut with window inflation (`linux` on; `simple`, `ns2` off).
    pub prr: Option<bool>,
    /// Selective acknowledgements (RFC 2018): receivers report up to three blocks of data
    /// held out of order in every ACK (`simple`, `ns2` and `linux` on). What a sender does
    /// with them depends on the profile: `linux` and `ns2` recover by a scoreboard (RFC
    /// 6675), `simple` keeps NewReno recovery and only skips SACKed data after a timeout.
    pub sack: Option<bool>,
    /// RACK-TLP loss detection (RFC 8985), as Linux enables it by default: a segment is lost
    /// once a segment sent after it has been delivered and a round trip has passed, and a
    /// tail-loss probe goes out two round trips after the last send (`linux` on; needs
    /// `sack`).
    pub rack: Option<bool>,
    /// Floor of the window in segments after any decrease (2, as Linux and RFC 5681's
    /// `2·SMSS` ssthresh floor; ns-2 allows 1).
    pub min_cwnd_pkts: u32,
    /// Minimum retransmission timeout (`simple`, `ns2`: 1 ms, a data-centre value; `linux`:
    /// 200 ms, Linux's `TCP_RTO_MIN`). With `linux` it bounds the variation term, as
    /// Linux does: RTO = SRTT + max(4·mdev, `min_rto`).
    pub min_rto: Option<Dur>,
    /// Retransmission timeout before the first RTT sample (`simple`, `ns2`: 1 ms, as
    /// FlexPass's scripts; `linux`: 1 s, RFC 6298 and Linux's `TCP_TIMEOUT_INIT`).
    pub init_rto: Option<Dur>,
    /// Largest retransmission timeout after backoff (`simple`, `ns2`: 1 s; `linux`: 120 s,
    /// Linux's `TCP_RTO_MAX`).
    pub max_rto: Option<Dur>,
    /// ECN-capable transport. Default: on for controllers that use ECN (DCTCP).
    pub ecn: Option<bool>,
    /// Delayed ACKs: `false`, one ACK per segment (`simple`, `ns2`: the reference
    /// data-centre simulations); `true`, every second segment or after `delack_timeout`;
    /// `"linux"`, Linux's quick ACKs, adaptive delayed-ACK timer and SACK compression
    /// (`linux`).
    pub delayed_ack: Option<DelayedAck>,
    /// Delayed-ACK timeout of `delayed_ack = true` (50 µs, about one data-centre RTT).
    pub delack_timeout: Dur,
    /// The receive buffer, of which half is advertised as the receive window (Linux's
    /// `tcp_adv_win_scale` = 1), with window scaling; data held out of order takes room
    /// in it. With `rcv_autotune`, the most the buffer grows to. `linux`: 32 MiB, Linux
    /// 6.18's `tcp_rmem[2]`; others: none (no receive window).
    pub rcv_buf: Option<ByteSize>,
    /// Linux's receive-buffer autotuning: the buffer starts at 128 KiB (`tcp_rmem[1]`)
    /// and grows to `rcv_buf` once per receiver round trip, as the data read asks; the
    /// window follows the buffer and `rcv_ssthresh` (docs/protocols/tcp.md). `linux`: on;
    /// others: off.
    pub rcv_autotune: Option<bool>,
    /// The send buffer: the most payload the sender holds unacknowledged (as ns-3's
    /// `SndBufSize`). None (the default): no limit. Linux's `tcp_wmem[2]` (4 MiB) charges
    /// each segment its buffer's true size, so it holds less payload than its size: about
    /// 1.8 MB of 1,448-byte segments with offloads off (docs/protocols/tcp.md).
    pub snd_buf: Option<ByteSize>,
    /// With `snd_buf`: what the send buffer charges each segment beyond its payload, so
    /// that `snd_buf` is memory as Linux counts it against `tcp_wmem` (a segment's
    /// buffer's true size). A SACKed segment costs its payload only: Linux merges SACKed
    /// buffers (`tcp_shift_skb_data`). None (the default): `snd_buf` counts payload. The
    /// kernel twin's veths with offloads off charge 1,845 B per 1,460-byte segment
    /// (4 MiB held 1,269 segments; docs/protocols/tcp.md).
    pub snd_buf_overhead: Option<ByteSize>,
    /// The application's write size: it hands the sender this many bytes at a time,
    /// each as soon as what it has written and is unacknowledged is under `snd_buf`,
    /// and each write tops up the last unsent buffer (`tcp_sendmsg`); less than a
    /// segment at the end of what was written waits while data is out (Nagle). None (the
    /// default): the application writes everything at once. With `gso` and `snd_buf`
    /// it decides the size of the super-packets a sender held by its send buffer makes
    /// (docs/protocols/tcp.md, "Segmentation offload").
    pub app_write: Option<ByteSize>,
    /// Generic segmentation offload as an emulator carries it (veth, and so Mininet, with
    /// offloads on): the sender builds super-packets of up to this many bytes (Linux's
    /// `gso_max_size`, 64 KB) that cross the network as one packet each (one queue entry,
    /// serialized whole, dropped whole) and are acknowledged as one. Their size follows
    /// Linux's `tcp_tso_autosize` and the room the windows leave. None (the default): one
    /// segment per packet, as on a real wire, where a NIC's TSO sends the same bytes as
    /// back-to-back frames (docs/protocols/tcp.md, "Segmentation offload").
    pub gso: Option<ByteSize>,
    /// Cap on the window (a receiver window), if any (`ns2`: 180 segments, the ExpressPass
    /// group's `window_`).
    pub max_window: Option<ByteSize>,
    /// ICTCP: receivers set each connection's advertised window (`ictcp = {}` for the
    /// defaults); off unless given.
    pub ictcp: Option<IctcpConfig>,
    /// Host processing noise: the sender answers each ACK after a delay drawn uniformly
    /// from [0, `stack_jitter`] (from its own random stream), as a real stack's interrupt
    /// and scheduling latency varies. 0 (the default): at once. Without it, flows that a
    /// full drop-tail queue clocks stay in lock-step phase with its departures, which a
    /// real host's noise breaks (docs/protocols/tcp.md, the kernel twin).
    pub stack_jitter: Dur,
}

impl Default for TcpConfig {
    fn default() -> Self {
        Self {
            profile: None,
            cc: CcSpec::default(),
            mss: ByteSize(u64::from(TCP_MSS_BYTES)),
            init_cwnd_pkts: None,
            handshake: None,
            host_backpressure: None,
            small_queues: None,
            prr: None,
            sack: None,
            rack: None,
            min_cwnd_pkts: 2,
            min_rto: None,
            init_rto: None,
            max_rto: None,
            ecn: None,
            delayed_ack: None,
            delack_timeout: Dur::from_us(50),
            rcv_buf: None,
            rcv_autotune: None,
            snd_buf: None,
            snd_buf_overhead: None,
            app_write: None,
            gso: None,
            max_window: None,
            ictcp: None,
            stack_jitter: Dur::ZERO,
        }
    }
}

impl TcpConfig {
    /// Checks parameter ranges; the error names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.mss.0 == 0 || self.mss.0 > 9000 {
            return Err(format!(
                "mss: must be between 1B and 9000B, got {}",
                self.mss
            ));
        }
        if self.init_cwnd_pkts == Some(0) {
            return Err("init_cwnd_pkts: must be at least 1".into());
        }
        if self.min_cwnd_pkts == 0 {
            return Err("min_cwnd_pkts: must be at least 1".into());
        }
        let r = self.resolve();
        let (min_rto, init_rto, max_rto) = (r.min_rto(), r.init_rto(), r.max_rto());
        if min_rto == Dur::ZERO {
            return Err("min_rto: must be greater than zero".into());
        }
        if max_rto < min_rto {
            return Err("max_rto: must be at least min_rto".into());
        }
        if init_rto == Dur::ZERO {
            return Err("init_rto: must be greater than zero".into());
        }
        if r.rack == Some(true) && r.sack == Some(false) {
            return Err("rack: RACK-TLP needs sack = true (it reads the SACK blocks)".into());
        }
        if let Some(i) = &self.ictcp {
            i.validate()?;
        }
        if let Some(b) = self.rcv_buf
            && b.0 < 4 * self.mss.0
        {
            return Err(format!(
                "rcv_buf: must hold at least four segments ({}B), got {b}",
                4 * self.mss.0
            ));
        }
        if let Some(b) = self.snd_buf
            && b.0 < 2 * self.mss.0
        {
            return Err(format!(
                "snd_buf: must hold at least two segments ({}B), got {b}",
                2 * self.mss.0
            ));
        }
        if r.small_queues == Some(true) && r.host_backpressure == Some(false) {
            return Err(
                "small_queues: needs host_backpressure (a sender that waits for its NIC)".into(),
            );
        }
        if self.snd_buf_overhead.is_some() && self.snd_buf.is_none() {
            return Err("snd_buf_overhead: needs snd_buf (the buffer it charges)".into());
        }
        if let Some(w) = self.app_write
            && w.0 == 0
        {
            return Err("app_write: must be at least one byte, got 0B".into());
        }
        if let Some(g) = self.gso
            && !(2 * self.mss.0 + GSO_HEADER_ROOM..=GSO_MAX_BYTES).contains(&g.0)
        {
            return Err(format!(
                "gso: a super-packet holds two segments at least and 64KiB at most ({}B to {GSO_MAX_BYTES}B), got {g}",
                2 * self.mss.0 + GSO_HEADER_ROOM
            ));
        }
        if self.delayed_ack == Some(DelayedAck::EverySecond) && self.delack_timeout == Dur::ZERO {
            return Err("delack_timeout: must be greater than zero".into());
        }
        // Timers are added to the u64 picosecond clock (213 days): an hour is far beyond
        // any timer a TCP uses, and far below an overflow.
        const MAX_TIMER: Dur = Dur::from_secs(3600);
        for (name, d) in [
            ("min_rto", min_rto),
            ("max_rto", max_rto),
            ("init_rto", init_rto),
            ("delack_timeout", self.delack_timeout),
            ("stack_jitter", self.stack_jitter),
        ] {
            if d > MAX_TIMER {
                return Err(format!(
                    "{name}: {d} is longer than the largest timer, {MAX_TIMER}"
                ));
            }
        }
        self.cc.validate().map_err(|e| format!("cc.{e}"))
    }

    /// The configuration with the profile's values in every field it sets.
    pub fn resolve(&self) -> Self {
        let profile = self.profile.unwrap_or_default();
        let (iw, handshake, backpressure, prr, alpha) = match profile {
            TcpProfile::Simple => (10, false, true, false, 0.0),
            TcpProfile::Ns2 => (2, true, false, false, 0.0),
            TcpProfile::Linux => (10, true, true, true, 1.0),
        };
        // Timers: a data-centre minimum and ceiling, or Linux's (include/net/tcp.h).
        let (min_rto, init_rto, max_rto) = match profile {
            TcpProfile::Simple | TcpProfile::Ns2 => {
                (Dur::from_ms(1), Dur::from_ms(1), Dur::from_secs(1))
            }
            TcpProfile::Linux => (Dur::from_ms(200), Dur::from_secs(1), Dur::from_secs(120)),
        };
        let mut cc = self.cc.clone();
        match &mut cc {
            CcSpec::Dctcp(d) => {
                d.alpha_init.get_or_insert(alpha);
                d.linux_rules.get_or_insert(profile == TcpProfile::Linux);
            }
            CcSpec::Pulser(p) => {
                p.alpha_init.get_or_insert(alpha);
                p.linux_rules.get_or_insert(profile == TcpProfile::Linux);
            }
            CcSpec::Reno(r) => {
                r.linux_rules.get_or_insert(profile == TcpProfile::Linux);
            }
            CcSpec::Cubic(c) => {
                c.hystart.get_or_insert(profile == TcpProfile::Linux);
                c.linux_rules.get_or_insert(profile == TcpProfile::Linux);
            }
            _ => {}
        }
        // ns-2 caps the window at `window_` packets; the ExpressPass group's DCTCP scripts
        // set 180 (ns-2's own default, 20, would cap a 10 Gb/s fat-tree flow well below
        // its bandwidth-delay product).
        let max_window = match profile {
            TcpProfile::Ns2 => self.max_window.or(Some(ByteSize(180 * self.mss.0))),
            _ => self.max_window,
        };
        Self {
            profile: Some(profile),
            cc,
            max_window,
            init_cwnd_pkts: Some(self.init_cwnd_pkts.unwrap_or(iw)),
            handshake: Some(self.handshake.unwrap_or(handshake)),
            host_backpressure: Some(self.host_backpressure.unwrap_or(backpressure)),
            small_queues: Some(
                self.small_queues.unwrap_or(
                    profile == TcpProfile::Linux && self.host_backpressure != Some(false),
                ),
            ),
            prr: Some(self.prr.unwrap_or(prr)),
            sack: Some(self.sack.unwrap_or(true)),
            rack: Some(
                self.rack
                    .unwrap_or(profile == TcpProfile::Linux && self.sack != Some(false)),
            ),
            min_rto: Some(self.min_rto.unwrap_or(min_rto)),
            init_rto: Some(self.init_rto.unwrap_or(init_rto)),
            max_rto: Some(self.max_rto.unwrap_or(max_rto)),
            delayed_ack: Some(self.delayed_ack.unwrap_or(match profile {
                TcpProfile::Linux => DelayedAck::Linux,
                _ => DelayedAck::Off,
            })),
            rcv_buf: self.rcv_buf.or((profile == TcpProfile::Linux
                || self.rcv_autotune == Some(true))
            .then_some(ByteSize(LINUX_RCV_BUF))),
            rcv_autotune: Some(self.rcv_autotune.unwrap_or(profile == TcpProfile::Linux)),
            ..self.clone()
        }
    }

    /// The minimum retransmission timeout (of a resolved configuration).
    pub fn min_rto(&self) -> Dur {
        self.min_rto.unwrap_or(Dur::from_ms(1))
    }
    /// The retransmission timeout before the first sample (of a resolved configuration).
    pub fn init_rto(&self) -> Dur {
        self.init_rto.unwrap_or(Dur::from_ms(1))
    }
    /// The largest retransmission timeout (of a resolved configuration).
    pub fn max_rto(&self) -> Dur {
        self.max_rto.unwrap_or(Dur::from_secs(1))
    }

    /// Whether window reductions use proportional rate reduction.
    pub fn prr_enabled(&self) -> bool {
        self.resolve().prr.unwrap_or(false)
    }

    /// Whether a SYN handshake precedes the data.
    pub fn handshake_enabled(&self) -> bool {
        self.resolve().handshake.unwrap_or(false)
    }

    /// Whether senders wait for room in the NIC queue.
    pub fn backpressure_enabled(&self) -> bool {
        self.resolve().host_backpressure.unwrap_or(true)
    }

    /// Whether data packets are ECN-capable.
    pub fn ecn_enabled(&self) -> bool {
        self.ecn.unwrap_or_else(|| self.cc.uses_ecn())
    }

    /// Wire bytes of a full-size data segment.
    pub fn full_segment_wire_bytes(&self) -> u32 {
        wire_bytes(self.mss.0 as u32 + TCP_IP_HEADER_BYTES)
    }

    fn limits(&self) -> WindowLimits {
        let mss = self.mss.0;
        WindowLimits {
            mss,
            init_cwnd: u64::from(self.resolve().init_cwnd_pkts.unwrap_or(10)) * mss,
            min_cwnd: u64::from(self.min_cwnd_pkts) * mss,
        }
    }
}

/// The reliable transport (`kind = "tcp"`), with the congestion controller named by `cc`.
pub struct Tcp;

impl Transport for Tcp {
    const NAME: &'static str = "tcp";
    const ABOUT: &'static str = "reliable transport (SACK, NewReno or scoreboard recovery, RACK-TLP) with a congestion controller `cc`; profile simple | ns2 | linux";
    type Config = TcpConfig;
    type Sender = TcpSender;
    type Receiver = TcpReceiver;
    type Host = TcpHost;

    fn validate(cfg: &TcpConfig) -> Result<(), String> {
        cfg.validate()
    }
    fn resolve(cfg: &TcpConfig) -> TcpConfig {
        cfg.resolve()
    }
    fn label(cfg: &TcpConfig) -> &'static str {
        cfg.cc.name()
    }
    fn needs(cfg: &TcpConfig) -> Needs {
        cfg.cc.needs()
    }
    fn packet_format(cfg: &TcpConfig) -> PacketFormat {
        PacketFormat {
            payload_bytes: cfg.mss.0,
            full_wire_bytes: cfg.full_segment_wire_bytes(),
        }
    }
    /// Segments as TCP: sequence numbers count payload bytes from 0, or from 1 after a
    /// SYN (whose own number is 0, on both sides), as a real stack with initial sequence
    /// numbers of 0 would; the window is the advertised one (ICTCP's, or the receive
    /// buffer's shifted right by its window scale, which the SYN does not carry), else
    /// 65,535.
    fn trace_header(cfg: &TcpConfig, p: &Packet) -> TraceHeader {
        let handshake = cfg
            .handshake
            .unwrap_or(cfg.profile.unwrap_or_default() != TcpProfile::Simple);
        let isn = u32::from(handshake);
        let f = p.flags;
        let mut view = TcpView {
            seq: isn,
            ack: 0,
            flags: TcpView::ACK,
            window: u16::MAX,
            payload_bytes: 0,
        };
        if f & FLAG_SYN != 0 {
            view.seq = 0;
            view.flags = TcpView::SYN;
            if f & FLAG_ACK != 0 {
                view.flags |= TcpView::ACK;
                view.ack = 1;
            }
        } else if f & FLAG_DATA != 0 {
            view.seq = (p.seq as u32).wrapping_add(isn);
            view.ack = isn;
            view.payload_bytes = p.payload_bytes.into();
        } else {
            view.ack = (p.ack as u32).wrapping_add(isn);
            if f & FLAG_ECE != 0 {
                view.flags |= TcpView::ECE;
            }
            if f & FLAG_EIN != 0 {
                view.flags |= TcpView::EIN_ECHO;
            }
            if f & FLAG_RWND != 0 {
                let scale = match cfg.rcv_buf {
                    Some(b) if cfg.rcv_autotune == Some(true) => rcvbuf::wscale(b.0),
                    Some(b) => rcv_window(b.0).1,
                    None => 0,
                };
                view.window = (p.seq >> scale).min(u64::from(u16::MAX)) as u16;
            }
        }
        TraceHeader::Tcp(view)
    }
    fn open(cfg: &TcpConfig, flow: &FlowInfo, rng: &RngTree) -> (TcpSender, TcpReceiver) {
        let cfg = &cfg.resolve();
        let cc = cfg.cc.build_with(CcSetup {
            limits: cfg.limits(),
            line_rate: flow.src_link,
            rng: rng.stream("cc", u64::from(flow.flow.0)),
        });
        let jitter = (cfg.stack_jitter > Dur::ZERO).then(|| {
            (
                cfg.stack_jitter,
                rng.stream("tcp-stack", u64::from(flow.flow.0)),
            )
        });
        (
            TcpSender::new(cfg, cc, flow, jitter),
            TcpReceiver::new(cfg, flow),
        )
    }
    /// `timeouts`: retransmission timeouts; `loss_probes`: tail-loss probes (RACK-TLP);
    /// `rwnd_limited`: times the receiver's window stopped new data; `sndbuf_limited`:
    /// times the send buffer did.
    const FLOW_COUNTERS: &'static [&'static str] =
        &["timeouts", "loss_probes", "rwnd_limited", "sndbuf_limited"];
    /// The sender is done when every byte is acknowledged, so the receiver has them all,
    /// and a receiver that has every byte acknowledges each packet at once: it is idle.
    const SENDER_FINISHES: bool = true;
    fn record(tx: &TcpSender, _rx: &TcpReceiver, r: &mut FlowRecord) {
        r.retransmits = tx.stats().retransmits;
        let st = tx.stats();
        r.counters = [
            st.timeouts,
            st.loss_probes,
            st.rwnd_limited,
            st.sndbuf_limited,
        ];
    }
    fn sample(tx: &TcpSender, _rx: &TcpReceiver, out: &mut Vec<(&'static str, f64)>) {
        out.push(("cwnd_bytes", tx.cc().cwnd_bytes() as f64));
        tx.cc().sample(out);
    }
}
