//! Typed scenario builders that the experiments share: the run settings, the topologies
//! (dumbbell, parking lot, star, the ExpressPass fat-tree), each scheme's queues and
//! transport, traffic patterns and time series. An experiment starts from
//! [`scenario`], lets a scheme [configure](Scheme::configure) it and adds its traffic.

use dcsim::engine::{ByteSize, Dur};
use dcsim::net::qdisc::{
    Amount, CreditShaperConfig, DropTailConfig, EcnConfig, PhantomConfig, QdiscSpec,
    RcpRouterConfig,
};
use dcsim::net::topo::{
    DumbbellSpec, FatTreePreset, FatTreeSpec, LinkSpec, ParkingLotSpec, StarSpec,
};
use dcsim::net::{RoutingMode, RoutingSpec, TopologySpec};
use dcsim::transport::cc::{CcSpec, DctcpConfig, DxConfig, HullConfig, RcpConfig};
use dcsim::transport::xpass::{Law, Profile, XpassConfig};
use dcsim::transport::{TcpConfig, TcpProfile, TransportSpec};
use dcsim::workload::{
    BuiltinCdf, FlowSize, GeneratorSpec, LoadBasis, PairsSpec, PoissonSpec, Ratio, SizeSpec,
};
use dcsim::{
    FlowEntry, FlowKeyword, FlowSelection, GeneratorEntry, OutputSpec, SCHEMA_VERSION,
    ScenarioSpec, SimSpec, TimeseriesSpec, default_nic, default_queue,
};

/// A scenario on `topology` with run settings `sim` and every other table at its default
/// (no traffic, no time series).
pub fn scenario(sim: SimSpec, topology: TopologySpec) -> ScenarioSpec {
    ScenarioSpec {
        schema_version: SCHEMA_VERSION,
        name: None,
        description: None,
        sim,
        topology,
        routing: RoutingSpec::default(),
        ports: None,
        queue: Some(default_queue()),
        nic: Some(default_nic()),
        transport: TransportSpec::default(),
        transports: Default::default(),
        flows: Vec::new(),
        generators: Vec::new(),
        output: OutputSpec::default(),
        controller: None,
        base_dir: None,
        origin: Default::default(),
    }
}

/// Run settings with seed 1: `duration` (`None`: until every flow is done and the network
/// is empty) and the measurement window from `warmup`.
pub fn sim(duration: Option<Dur>, warmup: Dur) -> SimSpec {
    SimSpec {
        duration,
        seed: SEED,
        warmup,
        ..SimSpec::default()
    }
}

/// A dumbbell of `pairs` pairs at `gbps` (host links 20 µs, bottleneck 10 µs: base RTT
/// 100 µs).
pub fn dumbbell(pairs: usize, gbps: u64) -> TopologySpec {
    TopologySpec::Dumbbell(DumbbellSpec {
        pairs: Some(pairs as u32),
        host_link: Some(LinkSpec::new(gbps, 20)),
        bottleneck: Some(LinkSpec::new(gbps, 10)),
    })
}

/// A parking lot of `bottlenecks` links in series, with the topology's defaults (the
/// ExpressPass parking-lot script's 10 Gb/s and 4 µs everywhere).
pub fn parking_lot(bottlenecks: usize) -> TopologySpec {
    TopologySpec::ParkingLot(ParkingLotSpec {
        bottlenecks: Some(bottlenecks as u32),
        host_link: None,
        bottleneck: None,
    })
}

/// `hosts` hosts on one switch, links of `gbps` and 5 µs.
pub fn star(hosts: u32, gbps: u64) -> TopologySpec {
    TopologySpec::Star(StarSpec {
        hosts: Some(hosts),
        host_link: Some(LinkSpec::new(gbps, 5)),
    })
}

/// The ExpressPass fat-tree (preset `xpass`: 192 hosts, 32 ToRs, 16 aggregation and 8 core
/// switches, 1 µs host delay) with every link at `gbps` and 4 µs.
pub fn xpass_fat_tree(gbps: u64) -> TopologySpec {
    let link = Some(LinkSpec::new(gbps, 4));
    TopologySpec::FatTree(FatTreeSpec {
        preset: Some(FatTreePreset::Xpass),
        host_link: link,
        tor_link: link,
        core_link: link,
        ..FatTreeSpec::default()
    })
}

/// A long-lived flow from host `src` to host `dst` starting at `start`.
pub fn flow(src: u32, dst: u32, start: Dur) -> FlowEntry {
    FlowEntry {
        src,
        dst,
        size: FlowSize(None),
        start,
        stop: None,
        transport: None,
    }
}

/// Long-lived flows between host pairs (the `pairs` pattern): flow `i` goes from host
/// `src + i·src_step` to host `dst + i·dst_step` and starts at `i·start_every`; with
/// `stop`, the flows leave in the order they joined, the first at `stop`, then one every
/// `stop_every`. [`Pairs::new`] gives steps of 1, simultaneous starts and no stop.
#[derive(Clone, Copy, Debug)]
pub struct Pairs {
    /// Number of flows.
    pub count: usize,
    /// First sender.
    pub src: u32,
    /// Sender step.
    pub src_step: u32,
    /// First receiver.
    pub dst: u32,
    /// Receiver step.
    pub dst_step: u32,
    /// Gap between starts.
    pub start_every: Dur,
    /// Stop time of the first flow to leave, if the flows leave.
    pub stop: Option<Dur>,
    /// Gap between stops.
    pub stop_every: Dur,
}

impl Pairs {
    /// `count` flows from `src, src + 1, …` to `dst, dst + 1, …`, all from t = 0, never
    /// stopping.
    pub fn new(count: usize, src: u32, dst: u32) -> Self {
        Self {
            count,
            src,
            src_step: 1,
            dst,
            dst_step: 1,
            start_every: Dur::ZERO,
            stop: None,
            stop_every: Dur::ZERO,
        }
    }

    /// The pattern, with the default transport.
    pub fn entry(self) -> GeneratorEntry {
        GeneratorEntry {
            pattern: GeneratorSpec::Pairs(PairsSpec {
                count: self.count as u32,
                src: self.src,
                dst: self.dst,
                src_step: self.src_step,
                dst_step: self.dst_step,
                size: FlowSize(None),
                start: Dur::ZERO,
                start_every: self.start_every,
                stop: self.stop,
                stop_every: self.stop_every,
                leave_order: Default::default(),
            }),
            transport: None,
        }
    }
}

/// Poisson arrivals of `max_flows` flows with sizes from `cdf` at `load` of the capacity
/// that `basis` names, counted in wire bytes (1538 per 1460 of payload, as the ExpressPass
/// script); source uniform, destination uniform among the others.
pub fn poisson(load: f64, basis: LoadBasis, cdf: BuiltinCdf, max_flows: u64) -> GeneratorEntry {
    GeneratorEntry {
        pattern: GeneratorSpec::Poisson(PoissonSpec {
            flow_size: SizeSpec::Cdf(cdf),
            load,
            load_relative_to: basis,
            oversubscription: None,
            wire_factor: Ratio::new(1538.0, 1460.0).expect("a positive ratio"),
            mean_size_for_load: None,
            first: 0,
            hosts: None,
            destinations: Default::default(),
            hosts_per_rack: None,
            start: Dur::ZERO,
            max_flows: Some(max_flows),
            until: None,
        }),
        transport: None,
    }
}

/// Samples every `every` the goodput of every flow and the queues of `ports` (labels
/// `"node->peer"`).
pub fn timeseries(every: Dur, ports: &[&str]) -> OutputSpec {
    OutputSpec {
        timeseries: Some(TimeseriesSpec {
            every,
            flows: FlowSelection::Keyword(FlowKeyword::All),
            cwnd: false,
            ports: ports.iter().map(|p| (*p).to_string()).collect(),
            offset: Dur::ZERO,
        }),
        ..OutputSpec::default()
    }
}

/// A scheme's switch and NIC queue configuration and transport.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// ExpressPass with a feedback law, in the authors' microbenchmark setting.
    Xpass(Law),
    /// DCTCP with K and g for the link speed (K = 65, g = 1/16 at 10 Gb/s; K = 650,
    /// g = 0.01976 at 100 Gb/s; K scaled with the speed in between), buffers of 250
    /// packets per 10 Gb/s, TCP profile `ns2` ([`TCP_BASELINE`]).
    Dctcp,
    /// RCP: routers on every switch port (the original paper's α = 0.1, β = 1, d̄ = the
    /// 100 µs base RTT, 250-packet buffers per 10 Gb/s), senders paced at the echoed rate.
    Rcp,
}

/// Queue discipline of the host NICs under ExpressPass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nics {
    /// Drop-tail only: credits leave at line rate.
    DropTail,
    /// The same credit-shaping queue as the switch ports, data buffer included: the
    /// authors' parking-lot and multi-bottleneck scripts build every link, host links
    /// included, as a duplex `XPassDropTail` link, so both directions shape credits.
    LikeSwitch,
}

impl Scheme {
    /// Short name for result keys.
    pub fn key(self) -> &'static str {
        match self {
            Self::Xpass(Law::Paper) => "expresspass",
            Self::Xpass(_) => "expresspass-code",
            Self::Dctcp => "dctcp",
            Self::Rcp => "rcp",
        }
    }

    /// Sets routing, switch queues, NIC queues and transport of `s` for links of `gbps`,
    /// with `credit_buffer` credits (ExpressPass) and `nics` (ExpressPass; DCTCP's NICs are
    /// drop-tail).
    pub fn configure(self, s: &mut ScenarioSpec, gbps: u64, credit_buffer: u64, nics: Nics) {
        let nic = drop_tail(1_538_000);
        s.routing = symmetric_ecmp();
        match self {
            // The authors' ns-2 microbenchmark scripts (dumbbell, parking lot,
            // multi-bottleneck): credit shaping on switch ports (the dumbbell's host uplinks
            // are plain drop-tail; the parking lot and multi-bottleneck shape them too:
            // `Nics::LikeSwitch`), 2-credit queues, the default 10-credit burst, data queues
            // of 100 packets, and the ns-2 defaults α = w_init = 0.5 (the scripts' own
            // settings of w do not take effect, see expresspass.md §1.6.4; the parking lot
            // and multi-bottleneck set α = 1/32: `script_alpha`), and ns-2's request and
            // NACK timeout of 100 ms, which none of them changes.
            Self::Xpass(law) => {
                s.queue = Some(credit_shaper(
                    credit_buffer,
                    10,
                    drop_tail(100 * 1538 * gbps.div_ceil(10)),
                ));
                s.nic = match nics {
                    Nics::DropTail => Some(nic),
                    Nics::LikeSwitch => s.queue.clone(),
                };
                s.transport = TransportSpec::Expresspass(XpassConfig {
                    profile: Some(Profile::Paper),
                    law: Some(law),
                    alpha: Some(0.5),
                    w_init: Some(0.5),
                    rto: Some(NS2_XPASS_RTO),
                    ..XpassConfig::default()
                });
            }
            Self::Dctcp => {
                let (k, g) = if gbps >= 100 {
                    (650, 0.01976)
                } else {
                    (65 * gbps.div_ceil(10), 1.0 / 16.0)
                };
                s.queue = Some(QdiscSpec::Ecn(EcnConfig {
                    buffer: Amount::Packets(250 * gbps.div_ceil(10)),
                    mark_threshold: Amount::Packets(k),
                }));
                s.nic = Some(nic);
                s.transport = dctcp(g, gbps);
            }
            Self::Rcp => {
                s.queue = Some(QdiscSpec::Rcp(RcpRouterConfig {
                    rtt: Dur::from_us(100),
                    inner: Box::new(drop_tail(250 * 1538 * gbps.div_ceil(10))),
                    ..RcpRouterConfig::default()
                }));
                s.nic = Some(nic);
                // The paper's handshake: the SYN collects the routers' rate, and the first
                // data goes at the rate the SYN-ACK returns.
                s.transport = TransportSpec::Tcp(TcpConfig {
                    handshake: Some(true),
                    ..tcp_config(CcSpec::Rcp(RcpConfig::default()))
                });
            }
        }
    }
}

/// A scheme of the fat-tree comparison (and of `fct-ps`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FatTreeScheme {
    /// ExpressPass as the fat-tree script first ran it (October 2017, two months after the
    /// paper; before AIR and ECS): the code law, α = w_init = 1/16.
    Xpass,
    /// ExpressPass as the fat-tree script runs it today (HEAD): the code law with AIR and
    /// ECS, α = 1/2, w_init = 1/16.
    XpassHead,
    /// DCTCP, K = 65 packets per 10 Gb/s, g = 1/16, TCP profile [`TCP_BASELINE`].
    Dctcp,
    /// HULL: phantom queues (γ = 0.95, 1 KB) on every switch port, DCTCP hosts with the
    /// NIC pacer (docs/protocols/hull.md).
    Hull,
    /// DX with exact queueing-delay feedback, drop-tail switch ports
    /// (docs/protocols/dx.md).
    Dx,
    /// DX as above, but a queueing delay up to one full frame's transmission time at the
    /// link rate counts as none (ours: the paper's threshold was not available), so a
    /// single collision does not stop a window's growth.
    DxFrame,
}

impl FatTreeScheme {
    /// Short name for result keys.
    pub fn key(self) -> &'static str {
        match self {
            Self::Xpass => "expresspass",
            Self::XpassHead => "expresspass-head",
            Self::Dctcp => "dctcp",
            Self::Hull => "hull",
            Self::Dx => "dx",
            Self::DxFrame => "dx-frame-threshold",
        }
    }

    /// Sets routing, switch queues, NIC queues and transport of `s` for links of `gbps`.
    /// Switch data buffers are the script's 250 packets of 1538 B per 10 Gb/s, NIC buffers
    /// 1000; DCTCP marks at K = 65 packets per 10 Gb/s (so buffer/K is the same at both
    /// speeds).
    pub fn configure(self, s: &mut ScenarioSpec, gbps: u64) {
        let scale = gbps.div_ceil(10);
        let (buffer, nic) = (250 * 1538 * scale, 1000 * 1538);
        s.routing = symmetric_ecmp();
        match self {
            // The fat-tree script: credit shaping on every port including host NICs,
            // 8-credit queues (672 B), a 2-credit burst (168 B), credit sizes 76..92 B,
            // request and NACK timeout 100 µs, the code law (the law of the code since
            // 26 October 2017; the first public code, two weeks older, already had its
            // dynamic target).
            Self::Xpass | Self::XpassHead => {
                s.queue = Some(credit_shaper(8, 2, drop_tail(buffer)));
                s.nic = Some(credit_shaper(8, 2, drop_tail(nic)));
                s.transport =
                    TransportSpec::Expresspass(xpass_large_scale(self == Self::XpassHead));
            }
            Self::Dctcp => {
                s.queue = Some(QdiscSpec::Ecn(EcnConfig {
                    buffer: Amount::Bytes(buffer),
                    mark_threshold: Amount::Packets(65 * scale),
                }));
                s.nic = Some(drop_tail(nic));
                s.transport = dctcp(0.0625, gbps);
            }
            // The ExpressPass evaluation: "HULL (target utilization 0.95)"; the paper's other HULL
            // settings are not known, so HULL's own (docs/protocols/hull.md).
            Self::Hull => {
                s.queue = Some(QdiscSpec::Phantom(PhantomConfig {
                    inner: Box::new(drop_tail(buffer)),
                    ..PhantomConfig::default()
                }));
                s.nic = Some(drop_tail(nic));
                s.transport = tcp_baseline(CcSpec::Hull(HullConfig::default()), gbps);
            }
            Self::Dx | Self::DxFrame => {
                let threshold = if self == Self::DxFrame {
                    Dur::from_ps(1538 * 8 * 1000 / gbps)
                } else {
                    Dur::ZERO
                };
                s.queue = Some(drop_tail(buffer));
                s.nic = Some(drop_tail(nic));
                s.transport = tcp_baseline(
                    CcSpec::Dx(DxConfig {
                        threshold,
                        ..DxConfig::default()
                    }),
                    gbps,
                );
            }
        }
    }
}

/// ExpressPass as the authors' large-scale (fat-tree) script sets it: the code law, credit
/// sizes 76..92 B, the request and NACK timeout of 100 µs, w_init = 1/16, and either the
/// script's first version (October 2017: α = 1/16, no AIR or ECS, which came in April 2018;
/// the paper's likely setting) or today's (`head`: α = 1/2 with AIR, ECS).
pub fn xpass_large_scale(head: bool) -> XpassConfig {
    XpassConfig {
        profile: Some(Profile::Code),
        alpha: Some(if head { 0.5 } else { 0.0625 }),
        w_init: Some(0.0625),
        air: Some(head),
        ecs: Some(head),
        credit_size: Some([76, 92]),
        rto: Some(Dur::from_us(100)),
        ..XpassConfig::default()
    }
}

/// Symmetric per-flow ECMP (ExpressPass needs credits and data on the same path).
fn symmetric_ecmp() -> RoutingSpec {
    RoutingSpec {
        mode: RoutingMode::SymmetricEcmp,
        salt: 0,
    }
}

/// Sets ExpressPass's initial rate α to 1/32, as the authors' parking-lot and
/// multi-bottleneck scripts do (`Agent/XPass set alpha_`; their `w_` line names no bound
/// variable, so w_init stays at the ns-2 default 0.5).
pub fn script_alpha(s: &mut ScenarioSpec) {
    xpass_alpha(s, 1.0 / 32.0);
}

/// Sets the token bucket of every credit shaper (switch ports, and NICs if they shape) to
/// `credits` credits.
pub fn credit_burst(s: &mut ScenarioSpec, credits: u64) {
    for q in [&mut s.queue, &mut s.nic] {
        if let Some(QdiscSpec::Credit(c)) = q {
            c.credit_burst = Amount::Packets(credits);
        }
    }
}

/// Sets ExpressPass's credit-gap jitter to ±`j` of the gap.
pub fn xpass_jitter(s: &mut ScenarioSpec, j: f64) {
    if let TransportSpec::Expresspass(c) = &mut s.transport {
        c.jitter = Some([-j, j]);
    }
}

/// Sets ExpressPass's initial rate α (a fraction of the maximum credit rate).
pub fn xpass_alpha(s: &mut ScenarioSpec, alpha: f64) {
    if let TransportSpec::Expresspass(c) = &mut s.transport {
        c.alpha = Some(alpha);
    }
}

/// Drop-tail with a buffer of `bytes`.
fn drop_tail(bytes: u64) -> QdiscSpec {
    QdiscSpec::DropTail(DropTailConfig {
        buffer: Amount::Bytes(bytes),
    })
}

/// ExpressPass's credit shaper: queues of `credits` credits, a bucket of `burst` credits,
/// and `inner` for everything else.
fn credit_shaper(credits: u64, burst: u64, inner: QdiscSpec) -> QdiscSpec {
    QdiscSpec::Credit(CreditShaperConfig {
        credit_buffer: Amount::Packets(credits),
        credit_burst: Amount::Packets(burst),
        inner: Box::new(inner),
        ..CreditShaperConfig::default()
    })
}

/// TCP with controller `cc` (every other parameter at its default).
pub fn tcp(cc: CcSpec) -> TransportSpec {
    TransportSpec::Tcp(tcp_config(cc))
}

/// TCP's defaults with controller `cc`.
fn tcp_config(cc: CcSpec) -> TcpConfig {
    TcpConfig {
        cc,
        ..TcpConfig::default()
    }
}

/// The TCP profile of the ExpressPass papers' baselines (DCTCP, HULL, DX): they ran in
/// ns-2, whose FullTcp opens with a SYN handshake and an initial window of 2 segments and
/// queues into a finite host buffer that drops (docs/protocols/tcp.md). The minimum RTO
/// stays at 1 ms, the ExpressPass group's fat-tree DCTCP setting.
pub const TCP_BASELINE: TcpProfile = TcpProfile::Ns2;

/// [`TCP_BASELINE`] as result.json records it.
pub const TCP_BASELINE_ABOUT: &str = "TCP profile ns2 (ns-2 FullTcp, as the papers ran it: \
    SYN handshake, initial window 2 segments, a 1000-packet host queue that drops, no \
    back-pressure), window cap 180 segments per 10 Gb/s of link (the group's window_ 180 at \
    10 Gb/s, scaled as K and the buffers), min RTO 1 ms, one ACK per segment";

/// The request and NACK timeout of ExpressPass in ns-2 (`retransmit_timeout_`, 100 ms in
/// ns-default.tcl); only the 2018 fat-tree script lowers it (to 100 µs).
pub const NS2_XPASS_RTO: Dur = Dur::from_ms(100);

/// TCP with controller `cc` and the papers' baseline profile [`TCP_BASELINE`] on links of
/// `gbps`: the window cap of 180 segments (the group's `window_` at 10 Gb/s) grows with the
/// link, as K and the buffers do, or a lone flow at 100 Gb/s would be held to 21 Gb/s.
fn tcp_baseline(cc: CcSpec, gbps: u64) -> TransportSpec {
    let mss = TcpConfig::default().mss.0;
    TransportSpec::Tcp(TcpConfig {
        cc,
        profile: Some(TCP_BASELINE),
        max_window: Some(ByteSize(180 * gbps.div_ceil(10) * mss)),
        ..TcpConfig::default()
    })
}

/// DCTCP of gain `g` with the papers' baseline profile on links of `gbps`.
fn dctcp(g: f64, gbps: u64) -> TransportSpec {
    tcp_baseline(
        CcSpec::Dctcp(DctcpConfig {
            g,
            ..DctcpConfig::default()
        }),
        gbps,
    )
}

/// Sets the TCP profile of a scenario configured for a TCP scheme (an extra series beside
/// the baseline profile).
pub fn tcp_profile(s: &mut ScenarioSpec, profile: TcpProfile) {
    if let TransportSpec::Tcp(c) = &mut s.transport {
        c.profile = Some(profile);
    }
}

/// The seed of every experiment's runs.
const SEED: u64 = 1;
