//! `sdn-ecn`: the SDN ECN controller of the central-control thesis ("Prioritising
//! Interactive Flows in Data Center Networks With Central Control", arXiv:2402.00870) on
//! its set-ups at 100 Mb/s: one switch (two long flows into one receiver and the
//! interactive flow from a third sender; and ours, three long flows), a two-switch dumbbell
//! with three pairs, and a multi-hop chain of seven switches (six bottlenecks in series;
//! its flow layout ours). Long-lived CUBIC flows plus a 2 MB interactive flow repeated 30
//! times; CUBIC on drop-tail, CUBIC on RED (drop) and with ECN marking by RED at the switch,
//! both with Mininet's RED parameters as the thesis ran them, and CUBIC with ECN marked
//! only by the controller's rules; our variants: rules that last 100 ms instead of 1 s, and
//! RED with the tc-red(8) example's parameters. Per-flow and total throughput, interactive
//! FCT (mean and standard deviation), drops and marks.

use dcsim::controller::{ControllerSpec, SdnEcnConfig};
use dcsim::engine::{ByteSize, Dur, Rate};
use dcsim::net::TopologySpec;
use dcsim::net::qdisc::{Amount, DropTailConfig, QdiscSpec, RedConfig};
use dcsim::net::topo::{DumbbellSpec, LinkSpec, ParkingLotSpec, StarSpec};
use dcsim::transport::cc::{CcSpec, CubicConfig};
use dcsim::transport::{TcpConfig, TcpProfile, TransportSpec};
use dcsim::workload::FlowSize;
use dcsim::{FlowEntry, Results, ScenarioSpec};
use serde_json::{Value, json};

use crate::build;
use crate::common::{Ctx, Panel, Plot, RunSpec, put, rows, to_series};

/// The thesis's set-ups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Topo {
    /// The thesis's: two long flows into one receiver, the interactive flow from a third
    /// sender.
    OneSwitch,
    /// Ours, as run before: three long flows, the interactive flow beside the first.
    OneSwitchThreeLong,
    Dumbbell,
    MultiHop,
}

const TOPOS: [Topo; 4] = [
    Topo::OneSwitch,
    Topo::OneSwitchThreeLong,
    Topo::Dumbbell,
    Topo::MultiHop,
];

impl Topo {
    fn key(self) -> &'static str {
        match self {
            Self::OneSwitch => "one-switch",
            Self::OneSwitchThreeLong => "one-switch-3-long",
            Self::Dumbbell => "dumbbell",
            Self::MultiHop => "multi-hop",
        }
    }

    fn spec(self) -> TopologySpec {
        let link = Some(LinkSpec {
            rate: Rate::from_bps(LINK_MBPS * 1_000_000),
            delay: Dur::from_us(LINK_DELAY_US),
        });
        match self {
            Self::OneSwitch | Self::OneSwitchThreeLong => TopologySpec::Star(StarSpec {
                hosts: Some(4),
                host_link: link,
            }),
            Self::Dumbbell => TopologySpec::Dumbbell(DumbbellSpec {
                pairs: Some(3),
                host_link: link,
                bottleneck: link,
            }),
            Self::MultiHop => TopologySpec::ParkingLot(ParkingLotSpec {
                bottlenecks: Some(HOPS),
                host_link: link,
                bottleneck: link,
            }),
        }
    }

    /// The long-lived flows `(src, dst)`.
    fn long_flows(self) -> Vec<(u32, u32)> {
        match self {
            // Hosts 0 and 1 send to host 3.
            Self::OneSwitch => vec![(0, 3), (1, 3)],
            // Hosts 0-2 send to host 3.
            Self::OneSwitchThreeLong => vec![(0, 3), (1, 3), (2, 3)],
            // Left hosts 0-2 to right hosts 3-5.
            Self::Dumbbell => vec![(0, 3), (1, 4), (2, 5)],
            // Host 0 to host 1 across every link, and one flow on each link alone.
            Self::MultiHop => std::iter::once((0, 1))
                .chain((0..HOPS).map(|i| (2 + 2 * i, 3 + 2 * i)))
                .collect(),
        }
    }

    /// The interactive flow's `(src, dst)`: from the third sender on one switch, else
    /// beside the first long flow.
    fn interactive(self) -> (u32, u32) {
        match self {
            Self::OneSwitch => (2, 3),
            _ => self.long_flows()[0],
        }
    }
}

/// The schemes: the thesis's four (RED with Mininet's parameters), and ours: the
/// controller with a 100 ms hard timeout, and RED with the tc-red(8) example's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scheme {
    Cubic,
    Red,
    Ecn,
    Controller,
    ControllerShort,
    RedTcExample,
    EcnTcExample,
}

const SCHEMES: [Scheme; 7] = [
    Scheme::Cubic,
    Scheme::Red,
    Scheme::Ecn,
    Scheme::Controller,
    Scheme::ControllerShort,
    Scheme::RedTcExample,
    Scheme::EcnTcExample,
];

impl Scheme {
    fn key(self) -> &'static str {
        match self {
            Self::Cubic => "cubic",
            Self::Red => "red",
            Self::Ecn => "ecn",
            Self::Controller => "controller",
            Self::ControllerShort => "controller-100ms",
            Self::RedTcExample => "red-tc-example",
            Self::EcnTcExample => "ecn-tc-example",
        }
    }
    fn ecn(self) -> bool {
        !matches!(self, Self::Cubic | Self::Red | Self::RedTcExample)
    }
}

const LINK_MBPS: u64 = 100;
/// Per link (ours: the thesis ran Mininet, whose links have no delay unless given).
const LINK_DELAY_US: u64 = 1000;
const HOPS: u32 = 6;
/// Linux's default transmit queue (`txqueuelen` 1000), Mininet's switch and host queues.
const QUEUE_PKTS: u64 = 1000;
/// The hard timeout of our variant's rules: a few round trips of a full queue, so that a
/// rule costs a flow a few window reductions rather than a second of them.
const SHORT_RULES: Dur = Dur::from_ms(100);
const INTERACTIVE_BYTES: u64 = 2_000_000;
/// The interactive flows: the first at 10 s, then one every 3.5 s (ours: the thesis
/// repeats the 2 MB flow 30 times during a 2-minute run).
const FIRST_S: f64 = 10.0;
const EVERY_S: f64 = 3.5;

/// RED as Mininet's links configure it (`enable_red` / `enable_ecn` of TCLink: `red limit
/// 1000000 min 30000 max 35000 avpkt 1500 burst 20 probability 1`), which the thesis used:
/// tc's EWMA weight for that burst is 2^-1 (iproute2's tc_red_eval_ewma), marking ramps to
/// certainty over 5 KB, and the queue holds 1 MB.
fn mininet_red(ecn: bool) -> QdiscSpec {
    QdiscSpec::Red(RedConfig {
        buffer: Amount::Bytes(1_000_000),
        min_th: Amount::Bytes(30_000),
        max_th: Amount::Bytes(35_000),
        max_p: 1.0,
        weight: 0.5,
        ecn,
        ..RedConfig::default()
    })
}

/// RED as the tc-red(8) manual's example configures it (min 30 KB, max 90 KB, max_p 0.02),
/// over the same 1000-packet queue (ours).
fn red(ecn: bool) -> QdiscSpec {
    QdiscSpec::Red(RedConfig {
        buffer: Amount::Packets(QUEUE_PKTS),
        min_th: Amount::Bytes(30_000),
        max_th: Amount::Bytes(90_000),
        max_p: 0.02,
        ecn,
        ..RedConfig::default()
    })
}

fn tcp(ecn: bool) -> TransportSpec {
    TransportSpec::Tcp(TcpConfig {
        profile: Some(TcpProfile::Linux),
        cc: CcSpec::Cubic(CubicConfig::default()),
        ecn: Some(ecn),
        min_rto: Some(Dur::from_ms(200)),
        init_rto: Some(Dur::from_secs(1)),
        // The thesis's kernel's `tcp_rmem[2]`, autotuned up to it (with Linux 6.18's rule).
        rcv_buf: Some(ByteSize(6 << 20)),
        ..TcpConfig::default()
    })
}

fn scenario(t: Topo, s: Scheme, duration: Dur, reps: u32) -> ScenarioSpec {
    let mut sc = build::scenario(build::sim(Some(duration), Dur::ZERO), t.spec());
    let droptail = QdiscSpec::DropTail(DropTailConfig {
        buffer: Amount::Packets(QUEUE_PKTS),
    });
    sc.nic = Some(droptail.clone());
    sc.queue = Some(match s {
        Scheme::Red => mininet_red(false),
        Scheme::Ecn => mininet_red(true),
        Scheme::RedTcExample => red(false),
        Scheme::EcnTcExample => red(true),
        _ => droptail,
    });
    sc.transport = tcp(s.ecn());
    sc.transports.insert("interactive".into(), tcp(s.ecn()));
    if matches!(s, Scheme::Controller | Scheme::ControllerShort) {
        sc.controller = Some(ControllerSpec::SdnEcn(SdnEcnConfig {
            hard_timeout: Some(if s == Scheme::ControllerShort {
                SHORT_RULES
            } else {
                SdnEcnConfig::default()
                    .hard_timeout
                    .expect("a default hard timeout")
            }),
            ..SdnEcnConfig::default()
        }));
    }
    let long = t.long_flows();
    sc.flows = long
        .iter()
        .map(|&(src, dst)| build::flow(src, dst, Dur::ZERO))
        .collect();
    let (src, dst) = t.interactive();
    for i in 0..reps {
        sc.flows.push(FlowEntry {
            size: FlowSize(Some(INTERACTIVE_BYTES)),
            transport: Some("interactive".into()),
            ..build::flow(
                src,
                dst,
                Dur::from_secs_f64(FIRST_S + EVERY_S * f64::from(i)),
            )
        });
    }
    sc
}

/// Mean and (population) standard deviation.
fn mean_std(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let n = xs.len() as f64;
    let m = xs.iter().sum::<f64>() / n;
    let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n;
    (m, v.sqrt())
}

/// Long-flow goodputs (Mb/s over the run) and interactive FCTs (s) of one run.
fn measure(r: &Results, longs: usize, secs: f64) -> (Vec<f64>, Vec<f64>, f64) {
    let tput: Vec<f64> = rows(r)[..longs]
        .iter()
        .map(|f| f.delivered_bytes as f64 * 8.0 / secs / 1e6)
        .collect();
    let fcts: Vec<f64> = rows(r)[longs..]
        .iter()
        .filter_map(|f| f.fct_ns.map(|n| n as f64 / 1e9))
        .collect();
    let total = rows(r).iter().map(|f| f.delivered_bytes).sum::<u64>() as f64 * 8.0 / secs / 1e6;
    (tput, fcts, total)
}

/// `sdn-ecn`.
pub fn sdn_ecn(ctx: &Ctx) -> Result<Value, String> {
    let (secs, reps) = ctx.pick((30u64, 6u32), (120, 30));
    let duration = Dur::from_secs(secs);
    let mut cases = Vec::new();
    let mut runs = Vec::new();
    for &t in &TOPOS {
        for &s in &SCHEMES {
            cases.push((t, s));
            runs.push(RunSpec::new(
                format!("{}-{}", t.key(), s.key()),
                scenario(t, s, duration, reps),
            ));
        }
    }
    let results = ctx.run_many(runs)?;
    let mut out = json!({});
    let mut fct_bars: Vec<Vec<(f64, f64)>> = vec![Vec::new(); SCHEMES.len()];
    let mut total_bars: Vec<Vec<(f64, f64)>> = vec![Vec::new(); SCHEMES.len()];
    for (&(t, s), r) in cases.iter().zip(&results) {
        let longs = t.long_flows().len();
        let (tput, fcts, total) = measure(r, longs, secs as f64);
        let (tk, sk) = (t.key(), s.key());
        let (m, sd) = mean_std(&fcts);
        put(&mut out, &["total_tput_mbps", tk, sk], total);
        put(&mut out, &["flow_tput_mbps", tk, sk], tput);
        put(&mut out, &["interactive_fct_s", tk, sk, "mean"], m);
        put(&mut out, &["interactive_fct_s", tk, sk, "std"], sd);
        put(&mut out, &["interactive_fct_s", tk, sk, "runs"], fcts.len());
        put(
            &mut out,
            &["drops", tk, sk],
            r.summary["packets_dropped"].clone(),
        );
        put(
            &mut out,
            &["ecn_marks", tk, sk],
            r.summary["ecn_marks"].clone(),
        );
        if let Some(c) = r.summary.get("controller").filter(|c| !c.is_null()) {
            put(&mut out, &["controller", tk, sk], c.clone());
        }
        let si = SCHEMES.iter().position(|&x| x == s).expect("a scheme");
        let ti = TOPOS.iter().position(|&x| x == t).expect("a topology") as f64;
        fct_bars[si].push((ti, m));
        total_bars[si].push((ti, total));
    }
    let cats: Vec<String> = TOPOS.iter().map(|t| t.key().to_string()).collect();
    ctx.plot(&Plot {
        file: "sdn_ecn".into(),
        panels: vec![
            Panel::bars(
                format!("2 MB interactive flow, mean of {reps}"),
                cats.clone(),
                "FCT (s)",
                SCHEMES
                    .iter()
                    .zip(&fct_bars)
                    .map(|(s, v)| to_series(s.key(), v))
                    .collect(),
            ),
            Panel::bars(
                "total throughput",
                cats,
                "Mb/s",
                SCHEMES
                    .iter()
                    .zip(&total_bars)
                    .map(|(s, v)| to_series(s.key(), v))
                    .collect(),
            ),
        ],
    })?;
    let c = SdnEcnConfig::default();
    put(
        &mut out,
        &["parameters"],
        json!({
            "links": format!("{LINK_MBPS} Mb/s, {LINK_DELAY_US} us per link (delay ours)"),
            "topologies": {
                "one-switch": "star (the thesis's): hosts 0 and 1 send long flows to host 3, host 2 the interactive flow",
                "one-switch-3-long": "star (ours): hosts 0-2 send long flows to host 3, the interactive flow from host 0",
                "dumbbell": "3 pairs across two switches: left i to right 3+i",
                "multi-hop": format!("parking lot of {} switches ({HOPS} bottlenecks in series): \
                    host 0 to host 1 across all, one flow on each link alone", HOPS + 1),
            },
            "queues": format!("drop-tail {QUEUE_PKTS} packets on switches and NICs (Linux \
                txqueuelen, Mininet); red / ecn: Mininet's TCLink RED (limit 1,000,000 B, min \
                30,000 B, max 35,000 B, probability 1, burst 20 with avpkt 1500: w_q 2^-1 as tc \
                computes it), drop or ECN mark; red-tc-example / ecn-tc-example (ours): RED \
                over the {QUEUE_PKTS}-packet queue, min 30 KB, max 90 KB, max_p 0.02, w_q 0.002 \
                (the tc-red(8) example)"),
            "tcp": "CUBIC (C 0.4, beta 0.7) with HyStart, profile linux (SACK, RACK-TLP, PRR, \
                Linux's delayed ACKs, a receive buffer autotuned from 128 KiB to 6 MiB as \
                Linux 6.18 does it), min RTO 200 ms, initial RTO 1 s; \
                ECN on for ecn and the controller",
            "long_flows": "from 0 s to the end",
            "interactive": format!("{INTERACTIVE_BYTES} B from host 2 to host 3 on one switch, \
                beside the first long flow elsewhere, {reps} times, at {FIRST_S} s + {EVERY_S} s \
                x i (spacing ours)"),
            "interactive_flows_per_run": reps,
            "duration_s": secs,
            "controller": {
                "probe_interval": c.probe_interval.to_string(),
                "threshold": c.threshold,
                "max_fraction": c.max_fraction,
                "hard_timeout": c.hard_timeout.map(|d| d.to_string()),
                "idle_timeout": c.idle_timeout.map(|d| d.to_string()),
                "control_delay": c.control_delay.to_string(),
                "rounding": "floor(p x n + 1/2) of a link's n flows with traffic",
                "flow_rates": "bytes delivered in order per probe interval",
                "controller-100ms": "the same with a hard timeout of 100 ms (ours)",
            },
            "seed": 1,
        }),
    );
    Ok(out)
}
