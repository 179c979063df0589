//! Structured scenarios: the input is decoded (`arbitrary`) into a small, valid-looking
//! scenario (a topology of a few hosts, links, a queue discipline, a transport, a few flows
//! and generators, a short duration), written as TOML, parsed and checked; one that passes
//! the check runs as in `scenario_run` (at most 200 µs of simulated time, packets
//! conserved). Refused scenarios are fine; panics are bugs. Values come mostly from small
//! sets of sensible ones, sometimes raw, so that the validator's limits are crossed too.
#![no_main]

use std::fmt::Write as _;

use arbitrary::Arbitrary;
use dcsim::engine::spec::Kind;
use dcsim::net::qdisc::QdiscSpec;
use dcsim::transport::TransportSpec;
use dcsim::transport::cc::CcSpec;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    topology: Topology,
    host_link: Link,
    fabric_link: Link,
    /// `None`: the discipline the transport needs (so that most inputs pass the check).
    queue: Option<Queue>,
    transport: Transport,
    routing: u8,
    flows: Vec<Flow>,
    generators: Vec<Generator>,
    /// Microseconds; `None`: a drained run (still cut at 200 µs).
    duration_us: Option<u16>,
    seed: u8,
    /// A packet trace of one host.
    trace: Option<Trace>,
    /// An event log: of one flow (0-3), or of all with 4 and above; at most 1000 rows.
    events: Option<u8>,
}

#[derive(Arbitrary, Debug)]
struct Trace {
    host: u8,
    /// Only this flow, if given.
    flow: Option<u8>,
    start_us: Option<u8>,
    /// The file's bound in kB, at least 1.
    max_kb: u8,
}

#[derive(Arbitrary, Debug)]
enum Topology {
    Dumbbell {
        pairs: u8,
    },
    Star {
        hosts: u8,
    },
    ParkingLot {
        bottlenecks: u8,
    },
    LeafSpine {
        leaves: u8,
        hosts_per_leaf: u8,
        spines: u8,
    },
    FatTree {
        half_k: bool,
    },
}

#[derive(Arbitrary, Debug)]
struct Link {
    rate: u8,
    raw_rate_mbps: u16,
    delay: u8,
    raw_delay_ns: u32,
}

/// A buffer or flow size: one of a few sensible values, or the raw number of bytes.
#[derive(Arbitrary, Debug)]
struct Bytes {
    sel: u8,
    raw: u32,
}

#[derive(Arbitrary, Debug)]
enum Queue {
    Droptail(Bytes),
    Ecn(Bytes, u8),
    Red {
        buffer: Bytes,
        min_th: u8,
        max_th: u8,
        ecn: bool,
        gentle: bool,
    },
    Prio(Bytes),
    CreditShaper(Bytes),
    Rcp(Bytes),
    Phantom(Bytes),
    Ein(Bytes),
}

#[derive(Arbitrary, Debug)]
enum Transport {
    Tcp {
        cc: u8,
        profile: u8,
        ecn: Option<bool>,
        delayed_ack: bool,
        mss: Option<u16>,
    },
    Expresspass {
        code: bool,
    },
    Ideal,
    Fastpass,
}

#[derive(Arbitrary, Debug)]
struct Flow {
    src: u8,
    dst: u8,
    size: Bytes,
    start_us: u8,
}

#[derive(Arbitrary, Debug)]
enum Dist {
    Cdf(u8),
    Fixed(Bytes),
    Uniform(Bytes, Bytes),
    Pareto(Bytes, u8),
}

#[derive(Arbitrary, Debug)]
enum Generator {
    Poisson {
        load: u8,
        tor: bool,
        size: Dist,
        dests: u8,
        max_flows: u8,
    },
    Incast {
        receiver: u8,
        senders: u8,
        size: Bytes,
    },
    Permutation {
        size: Bytes,
    },
    Pairs {
        count: u8,
        src: u8,
        dst: u8,
        size: Bytes,
    },
    Shuffle {
        bytes: Bytes,
        tasks: u8,
    },
    PartitionAggregate {
        degree: u8,
        size: Dist,
        every_us: u8,
        max_flows: u8,
    },
    Pulser {
        load: u8,
        degree: u8,
        size: Bytes,
        every_us: u8,
        max_flows: u8,
    },
}

/// One of `table`, or (one time in `table.len() + 1`) the raw value in `unit`.
fn pick(sel: u8, table: &[&str], raw: impl std::fmt::Display, unit: &str) -> String {
    table
        .get(usize::from(sel) % (table.len() + 1))
        .map_or_else(|| format!("{raw}{unit}"), |s| (*s).to_string())
}

fn link(l: &Link) -> String {
    let rates = ["1Gbps", "10Gbps", "40Gbps", "100Gbps"];
    let rate = pick(l.rate, &rates, l.raw_rate_mbps, "Mbps");
    let delay = pick(
        l.delay,
        &["0ns", "1us", "5us", "20us"],
        l.raw_delay_ns,
        "ns",
    );
    format!("{{ rate = \"{rate}\", delay = \"{delay}\" }}")
}

fn amount(a: &Bytes) -> String {
    pick(a.sel, &["8pkts", "65pkts", "250pkts", "100KB"], a.raw, "B")
}

fn size(s: &Bytes) -> String {
    pick(s.sel, &["1KB", "64KB", "1MB", "inf"], s.raw, "B")
}

/// A size without `inf`, for patterns whose sizes must be finite.
fn finite(s: &Bytes) -> String {
    pick(s.sel, &["1KB", "64KB", "1MB"], s.raw, "B")
}

fn dist(d: &Dist) -> String {
    match d {
        Dist::Cdf(c) => {
            let names = ["websearch", "datamining", "cachefollower", "webserver"];
            format!("{{ cdf = \"{}\" }}", names[usize::from(*c) % 4])
        }
        Dist::Fixed(s) => format!("{{ fixed = \"{}\" }}", finite(s)),
        Dist::Uniform(a, b) => format!("{{ uniform = [\"{}\", \"{}\"] }}", finite(a), finite(b)),
        Dist::Pareto(m, shape) => format!(
            "{{ pareto = {{ mean = \"{}\", shape = {} }} }}",
            finite(m),
            1.0 + f64::from(*shape) / 64.0
        ),
    }
}

fn queue(q: &Queue) -> String {
    let droptail = |a: &Bytes| format!("{{ kind = \"droptail\", buffer = \"{}\" }}", amount(a));
    match q {
        Queue::Droptail(a) => format!("kind = \"droptail\"\nbuffer = \"{}\"", amount(a)),
        Queue::Ecn(a, k) => {
            format!(
                "kind = \"ecn\"\nbuffer = \"{}\"\nmark_threshold = \"{k}pkts\"",
                amount(a)
            )
        }
        Queue::Red {
            buffer,
            min_th,
            max_th,
            ecn,
            gentle,
        } => format!(
            "kind = \"red\"\nbuffer = \"{}\"\nmin_th = \"{min_th}pkts\"\nmax_th = \"{}pkts\"\n\
             ecn = {ecn}\ngentle = {gentle}\nweight = 1.0",
            amount(buffer),
            u16::from(*min_th) + u16::from(*max_th),
        ),
        Queue::Prio(a) => format!(
            "kind = \"prio\"\ncontrol_buffer = \"64pkts\"\ninner = {}",
            droptail(a)
        ),
        Queue::CreditShaper(a) => format!("kind = \"credit-shaper\"\ninner = {}", droptail(a)),
        Queue::Rcp(a) => format!("kind = \"rcp\"\nrtt = \"20us\"\ninner = {}", droptail(a)),
        Queue::Phantom(a) => format!("kind = \"phantom\"\ninner = {}", droptail(a)),
        Queue::Ein(a) => format!(
            "kind = \"ein\"\ninner = {{ kind = \"ecn\", buffer = \"{}\", mark_threshold = \"65pkts\" }}",
            amount(a)
        ),
    }
}

/// The congestion controllers, from their registry: a new one is fuzzed at once.
fn ccs() -> &'static [Kind] {
    CcSpec::KINDS
}

/// The names of the transports `Transport` writes, in the order of its variants; checked
/// against the registry, so that a new transport is not silently left unfuzzed.
const TRANSPORTS: [&str; 4] = ["tcp", "expresspass", "ideal", "fastpass"];

/// The names of the disciplines `Queue` writes, in the registry's order; checked against
/// the registry, so that a new discipline is not silently left unfuzzed.
const QUEUES: [&str; 8] = [
    "droptail",
    "ecn",
    "red",
    "prio",
    "credit-shaper",
    "rcp",
    "phantom",
    "ein",
];

/// The fuzzed queues that can provide a port feature, tried in this order.
fn feature_queues(a: Bytes) -> [Queue; 5] {
    [
        Queue::CreditShaper(Bytes { ..a }),
        Queue::Rcp(Bytes { ..a }),
        Queue::Phantom(Bytes { ..a }),
        Queue::Ein(Bytes { ..a }),
        Queue::Prio(a),
    ]
}

/// The `[queue]` a transport needs on switch ports: the first fuzzed queue whose
/// discipline provides the port features the transport's needs name (from the registries,
/// so a new controller or transport is matched without a line here, or stops the fuzzer
/// with a message naming it), else ECN marking for controllers that use ECN, else
/// drop-tail.
fn needed_queue(t: &Transport) -> Queue {
    let a = || Bytes { sel: 2, raw: 0 }; // 250pkts
    let spec = transport_spec(t);
    let (features, uses_ecn) = match &spec {
        TransportSpec::Tcp(c) => (c.cc.needs().switch_ports, c.cc.uses_ecn()),
        other => (other.needs().switch_ports, false),
    };
    let Some((want, _)) = features else {
        return if uses_ecn { Queue::Ecn(a(), 65) } else { Queue::Droptail(a()) };
    };
    feature_queues(a())
        .into_iter()
        .find(|q| {
            let text = format!("[queue]\n{}\n", queue(q));
            let parsed: toml::Table = toml::from_str(&text).expect("the fuzz target's own TOML");
            let spec: QdiscSpec = parsed["queue"].clone().try_into().expect("a discipline");
            spec.features().contains(want)
        })
        .unwrap_or_else(|| {
            panic!("no fuzzed queue provides {want:?} for {}: add one to `Queue`", spec.name())
        })
}

/// The transport `t` writes, as the registry parses it.
fn transport_spec(t: &Transport) -> TransportSpec {
    let parsed: toml::Table = toml::from_str(&format!("[transport]\n{}", transport(t)))
        .expect("the fuzz target's own TOML");
    parsed["transport"].clone().try_into().expect("a registered transport")
}

fn transport(t: &Transport) -> String {
    match t {
        Transport::Tcp {
            cc,
            profile,
            ecn,
            delayed_ack,
            mss,
        } => {
            let mut s = format!(
                "kind = \"tcp\"\ncc = \"{}\"\nprofile = \"{}\"\ndelayed_ack = {delayed_ack}\n",
                ccs()[usize::from(*cc) % ccs().len()].name,
                ["simple", "ns2", "linux"][usize::from(*profile) % 3],
            );
            if let Some(e) = ecn {
                let _ = writeln!(s, "ecn = {e}");
            }
            if let Some(m) = mss {
                let _ = writeln!(s, "mss = \"{m}B\"");
            }
            s
        }
        Transport::Expresspass { code } => {
            format!(
                "kind = \"expresspass\"\nprofile = \"{}\"\n",
                if *code { "code" } else { "paper" }
            )
        }
        Transport::Ideal => "kind = \"ideal\"\n".into(),
        Transport::Fastpass => "kind = \"fastpass\"\n".into(),
    }
}

/// The `[topology]` section and the number of hosts.
fn topology(inp: &Input) -> (String, u32) {
    let (h, f) = (link(&inp.host_link), link(&inp.fabric_link));
    match inp.topology {
        Topology::Dumbbell { pairs } => {
            let p = pairs % 5;
            (
                format!("kind = \"dumbbell\"\npairs = {p}\nhost_link = {h}\nbottleneck = {f}"),
                2 * u32::from(p),
            )
        }
        Topology::Star { hosts } => {
            let n = 1 + hosts % 8;
            (
                format!("kind = \"star\"\nhosts = {n}\nhost_link = {h}"),
                u32::from(n),
            )
        }
        Topology::ParkingLot { bottlenecks } => {
            let b = bottlenecks % 4;
            (
                format!(
                    "kind = \"parking-lot\"\nbottlenecks = {b}\nhost_link = {h}\nbottleneck = {f}"
                ),
                2 * u32::from(b) + 2,
            )
        }
        Topology::LeafSpine {
            leaves,
            hosts_per_leaf,
            spines,
        } => {
            let (l, n, s) = (1 + leaves % 3, 1 + hosts_per_leaf % 4, spines % 5);
            (
                format!(
                    "kind = \"leaf-spine\"\nleaves = {l}\nhosts_per_leaf = {n}\nspines = {s}\n\
                     host_link = {h}\nfabric_link = {f}"
                ),
                u32::from(l) * u32::from(n),
            )
        }
        Topology::FatTree { half_k } => {
            let k = if half_k { 2 } else { 4 };
            (
                format!(
                    "kind = \"fat-tree\"\nk = {k}\nhost_link = {h}\ntor_link = {f}\ncore_link = {f}"
                ),
                k * k * k / 4,
            )
        }
    }
}

fn generator(g: &Generator, hosts: u32) -> String {
    let host = |x: u8| u32::from(x) % hosts.max(1);
    let load = |l: u8| ["0.1", "0.5", "0.9", "1.5"][usize::from(l) % 4];
    match g {
        Generator::Poisson {
            load: l,
            tor,
            size,
            dests,
            max_flows,
        } => format!(
            "{{ kind = \"poisson\", load = {}, load_relative_to = \"{}\", flow_size = {}, \
             destinations = \"{}\", max_flows = {} }}",
            load(*l),
            if *tor { "tor-uplinks" } else { "host-links" },
            dist(size),
            ["uniform", "inter-rack", "permutation"][usize::from(*dests) % 3],
            1 + max_flows % 16,
        ),
        Generator::Incast {
            receiver,
            senders,
            size: s,
        } => format!(
            "{{ kind = \"incast\", receiver = {}, senders = {}, size = \"{}\", jitter = \"1us\" }}",
            host(*receiver),
            senders % 8,
            finite(s)
        ),
        Generator::Permutation { size: s } => {
            format!("{{ kind = \"permutation\", size = \"{}\" }}", size(s))
        }
        Generator::Pairs {
            count,
            src,
            dst,
            size: s,
        } => format!(
            "{{ kind = \"pairs\", count = {}, src = {}, dst = {}, size = \"{}\", start_every = \"5us\" }}",
            1 + count % 4,
            host(*src),
            host(*dst),
            size(s)
        ),
        Generator::Shuffle { bytes, tasks } => format!(
            "{{ kind = \"shuffle\", bytes_per_pair = \"{}\", tasks_per_host = {} }}",
            finite(bytes),
            1 + tasks % 2
        ),
        Generator::PartitionAggregate {
            degree,
            size,
            every_us,
            max_flows,
        } => format!(
            "{{ kind = \"partition-aggregate\", degree = {}, response_size = {}, \
             queries = {{ every = \"{}us\" }}, max_flows = {} }}",
            1 + degree % 4,
            dist(size),
            1 + every_us % 50,
            1 + max_flows % 16
        ),
        Generator::Pulser {
            load: l,
            degree,
            size: s,
            every_us,
            max_flows,
        } => format!(
            "{{ kind = \"pulser\", load = {}, load_relative_to = \"host-links\", incast_degree = {}, \
             incast_response_size = \"{}\", incast_queries = {{ every = \"{}us\" }}, max_flows = {} }}",
            load(*l),
            1 + degree % 4,
            finite(s),
            1 + every_us % 50,
            1 + max_flows % 16
        ),
    }
}

/// The scenario as TOML text.
fn render(inp: &Input) -> String {
    let (topo, hosts) = topology(inp);
    let mut s = format!("schema_version = 1\n\n[sim]\nseed = {}\n", inp.seed);
    if let Some(d) = inp.duration_us {
        let _ = writeln!(s, "duration = \"{d}us\"");
    }
    let routing = ["symmetric-ecmp", "ecmp", "spray"][usize::from(inp.routing) % 3];
    let q = queue(inp.queue.as_ref().unwrap_or(&needed_queue(&inp.transport)));
    let _ = write!(
        s,
        "\n[topology]\n{topo}\n\n[routing]\nmode = \"{routing}\"\n\n[queue]\n{q}\n\n[transport]\n{}",
        transport(&inp.transport)
    );
    let host = |x: u8| u32::from(x) % hosts.max(1);
    for f in inp.flows.iter().take(4) {
        let _ = write!(
            s,
            "\n[[flows]]\nsrc = {}\ndst = {}\nsize = \"{}\"\nstart = \"{}us\"\n",
            host(f.src),
            host(f.dst),
            size(&f.size),
            f.start_us
        );
    }
    for g in inp.generators.iter().take(2) {
        let _ = write!(s, "\n[[generators]]\npattern = {}\n", generator(g, hosts));
    }
    if let Some(t) = &inp.trace {
        let _ = write!(
            s,
            "\n[output.trace]\nhosts = [{}]\nmax_bytes = \"{}kB\"\n",
            host(t.host),
            t.max_kb.max(1)
        );
        if let Some(f) = t.flow {
            let _ = writeln!(s, "flows = [{}]", f % 4);
        }
        if let Some(us) = t.start_us {
            let _ = writeln!(s, "start = \"{us}us\"");
        }
    }
    if let Some(e) = inp.events {
        let flows = if e < 4 { format!("[{e}]") } else { "\"all\"".into() };
        let _ = write!(s, "\n[output.events]\nflows = {flows}\nmax_rows = 1000\n");
    }
    s
}

/// Stops the fuzzer, once, if a registered transport or discipline has no `Transport` or
/// `Queue` variant here.
fn check_coverage() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let registered: Vec<&str> = TransportSpec::KINDS.iter().map(|k| k.name).collect();
        assert_eq!(
            registered, TRANSPORTS,
            "the registered transports changed: add the new one to `Transport` here"
        );
        let registered: Vec<&str> = QdiscSpec::KINDS.iter().map(|k| k.name).collect();
        assert_eq!(
            registered, QUEUES,
            "the registered disciplines changed: add the new one to `Queue` here"
        );
    });
}

fuzz_target!(|input: Input| {
    check_coverage();
    let text = render(&input);
    let Ok(spec) = dcsim::ScenarioSpec::parse(&text, "structured.toml", &[]) else {
        return;
    };
    if let Ok(scenario) = spec.build("structured.toml") {
        dcsim_fuzz::run_bounded(scenario);
    }
});
