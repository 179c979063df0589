//! End-to-end physics within tolerances that say why.

use crate::{run, run_text};

const K_BYTES: f64 = 65.0 * 1538.0;
const PKT: f64 = 1538.0;

/// Median of the bottleneck's sampled queue, bytes.
fn median_queue(r: &dcsim::Results, port: &str) -> f64 {
    let mut q: Vec<f64> = r
        .samples()
        .unwrap()
        .into_iter()
        .flatten()
        .filter(|s| s.kind == "queue_bytes" && s.id == port)
        .map(|s| s.value)
        .collect();
    assert!(q.len() > 100, "{} samples", q.len());
    q.sort_by(f64::total_cmp);
    q[q.len() / 2]
}

/// The queue sampled at `port` after `from_ns`, in packets of 1538 bytes, sorted.
fn sorted_queue_pkts(r: &dcsim::Results, port: &str, from_ns: u64) -> Vec<f64> {
    let mut q: Vec<f64> = r
        .samples()
        .unwrap()
        .expect("the port is sampled")
        .into_iter()
        .filter(|t| t.kind == "queue_bytes" && t.id == port && t.time_ns > from_ns)
        .map(|t| t.value / PKT)
        .collect();
    q.sort_by(f64::total_cmp);
    q
}

/// DX on the same dumbbell as DCTCP (scenarios/dx-dumbbell.toml): DX's claim (ATC'15) is
/// full utilization with a several-times smaller queue than DCTCP.
#[test]
fn dx_dumbbell_is_full_with_a_queue_far_below_dctcp() {
    let dx = run("scenarios/dx-dumbbell.toml", &[]);
    let dctcp = run("scenarios/dctcp-dumbbell.toml", &[]);
    let util = |r: &dcsim::Results| {
        r.ports
            .iter()
            .find(|p| p.node == "left" && p.peer == "right")
            .expect("bottleneck port")
            .utilization
    };
    // DX adds a segment per RTT whenever the queue is empty, so the link idles for at most
    // a fraction of an RTT after each cut: 95 % as for DCTCP.
    assert!(util(&dx) >= 0.95, "DX utilization {}", util(&dx));
    assert_eq!(dx.summary["packets_dropped"], 0);
    // The queue DX keeps is a few packets; DCTCP's sits near K = 65 packets. "Several
    // times smaller" is asked; the exact delay feedback gives more than ten times.
    let (q_dx, q_dctcp) = (
        median_queue(&dx, "left->right"),
        median_queue(&dctcp, "left->right"),
    );
    assert!(q_dx <= 4.0 * PKT, "DX median queue {q_dx} B");
    assert!(q_dx * 10.0 <= q_dctcp, "DX {q_dx} B vs DCTCP {q_dctcp} B");
    let jain = dx.summary["jain_fairness"]
        .as_f64()
        .expect("two long-lived flows");
    assert!(jain >= 0.99, "Jain index {jain}");
}

/// HULL on the same dumbbell (scenarios/hull-dumbbell.toml): phantom queues drained at
/// γ = 0.95 of the line mark before a real queue forms, so HULL trades a little bandwidth
/// for a near-empty queue; without the hosts' pacer, line-rate window bursts trip the
/// phantom queue's 1 KB threshold and the flows lose much more.
#[test]
fn hull_keeps_the_real_queue_near_empty_at_about_gamma() {
    let util = |r: &dcsim::Results| {
        let p = r
            .ports
            .iter()
            .find(|p| p.node == "left" && p.peer == "right")
            .expect("bottleneck port");
        (p.utilization, p.avg_queue_bytes, p.max_queue_bytes)
    };
    let r = run("scenarios/hull-dumbbell.toml", &[]);
    let (u, avg, max) = util(&r);
    // Marks start when the link runs above γ = 95 %; DCTCP's cuts on them leave it some
    // per cent below (HULL reports 90-95 % at γ = 0.95). The real queue holds at most a
    // packet or two (only the jitter of paced arrivals).
    assert!((0.85..=0.96).contains(&u), "utilization {u}");
    assert!(
        avg <= PKT / 2.0 && max <= 2 * 1538,
        "queue avg {avg} B, max {max} B"
    );
    assert_eq!(r.summary["packets_dropped"], 0);
    let jain = r.summary["jain_fairness"]
        .as_f64()
        .expect("two long-lived flows");
    assert!(jain >= 0.99, "Jain index {jain}");
    let unpaced = run(
        "scenarios/hull-dumbbell.toml",
        &["transport.cc={ kind = \"hull\", pacer = false }"],
    );
    assert!(
        util(&unpaced).0 < u - 0.2,
        "unpaced {} vs paced {u}",
        util(&unpaced).0
    );
}

/// RCP with the handshake: the SYN collects the routers' rate and the newcomer's first data
/// goes at it (here the rate the first flow alone left, most of the link), where without
/// the handshake its first round trip goes at the routers' initial 5 % of the link.
#[test]
fn rcp_newcomer_starts_at_the_rate_its_syn_ack_returns() {
    // The newcomer's pacing rate when its first data reaches the receiver.
    let first_rate = |handshake: &str| {
        let r = run(
            "scenarios/rcp-dumbbell.toml",
            &[
                handshake,
                "sim.duration=6ms",
                "sim.warmup=1ms",
                "output.timeseries.every=\"20us\"",
            ],
        );
        let samples: Vec<_> = r
            .samples()
            .unwrap()
            .into_iter()
            .flatten()
            .filter(|s| s.id == "1" && s.time_ns > 5_000_000)
            .collect();
        let t = samples
            .iter()
            .find(|s| s.kind == "throughput_gbps" && s.value > 0.0)
            .expect("the newcomer delivers")
            .time_ns;
        samples
            .iter()
            .find(|s| s.kind == "rate_gbps" && s.time_ns == t)
            .expect("a rate sample")
            .value
    };
    let with = first_rate("transport.handshake=true");
    let without = first_rate("transport.handshake=false");
    assert!(
        (without - 0.5).abs() < 1e-6,
        "without the handshake: {without} Gb/s"
    );
    assert!(with > 4.0, "with the handshake: {with} Gb/s");
}

/// RCP on the same dumbbell (scenarios/rcp-dumbbell.toml), a second flow joining at 5 ms:
/// RCP's switches offer every flow one rate, so the two must share equally a few RTTs after
/// the join and stay equal, without loss, with a near-empty queue in the measurement window.
#[test]
fn rcp_flows_share_equally_within_a_few_rtts_of_a_join() {
    let r = run("scenarios/rcp-dumbbell.toml", &[]);
    let mut bins: std::collections::BTreeMap<u64, Vec<f64>> = Default::default();
    for s in r
        .samples()
        .unwrap()
        .into_iter()
        .flatten()
        .filter(|s| s.kind == "throughput_gbps")
    {
        bins.entry(s.time_ns).or_default().push(s.value);
    }
    let rtt_ns = 100_000;
    let mut checked = 0;
    for (&t, v) in bins.range(5_000_000 + 4 * rtt_ns..) {
        let j = dcsim::metrics::jain(v).unwrap_or(1.0);
        // 100 µs bins hold 40 packets: one packet of jitter between the flows is 2.5 %.
        assert!(j >= 0.98, "Jain {j} at {t} ns: {v:?}");
        checked += 1;
    }
    assert!(checked > 200);
    assert_eq!(r.summary["packets_dropped"], 0);
    let bottleneck = r
        .ports
        .iter()
        .find(|p| p.node == "left" && p.peer == "right")
        .expect("bottleneck port");
    // RCP aims at γ = 1 with an empty queue; the rate's multiplicative correction keeps
    // it a few per cent under (measured 95.6 %).
    assert!(
        bottleneck.utilization >= 0.9,
        "utilization {}",
        bottleneck.utilization
    );
    assert!(
        bottleneck.max_queue_bytes <= 10 * 1538,
        "{}",
        bottleneck.max_queue_bytes
    );
}

/// Two DCTCP flows on the 10 Gb/s dumbbell (scenarios/dctcp-dumbbell.toml), measured over
/// 200 ms after a 100 ms warm-up.
#[test]
fn dctcp_dumbbell_is_full_lossless_fair_with_queue_near_k() {
    let r = run("scenarios/dctcp-dumbbell.toml", &[]);
    let s = &r.summary;
    let bottleneck = r
        .ports
        .iter()
        .find(|p| p.node == "left" && p.peer == "right")
        .expect("bottleneck port");
    // DCTCP keeps the queue above zero at all times with K >= C·RTT/7 (DCTCP §3.3), so the
    // link never idles: 95 % leaves room only for ACK-clocking jitter.
    assert!(
        bottleneck.utilization >= 0.95,
        "utilization {}",
        bottleneck.utilization
    );
    // 250-packet buffers and a queue held near 65 packets: nothing may be dropped.
    assert_eq!(s["data_drops"], 0, "{s}");
    assert_eq!(s["packets_dropped"], 0, "{s}");
    // The queue must reach K (marking needs it) and, with 2 flows each adding at most one
    // packet per RTT before reacting, overshoot K by only a few packets; the sawtooth's
    // trough stays well above half of K (DCTCP §3.3 analysis: amplitude O(sqrt(C·RTT))).
    let max = bottleneck.max_queue_bytes as f64;
    let avg = bottleneck.avg_queue_bytes;
    assert!(
        (K_BYTES..=K_BYTES + 20.0 * PKT).contains(&max),
        "max queue {max} B vs K {K_BYTES} B"
    );
    assert!(
        (K_BYTES - 30.0 * PKT..=K_BYTES + 10.0 * PKT).contains(&avg),
        "avg queue {avg} B vs K {K_BYTES} B"
    );
    // Two identical flows converge to equal shares long before the window starts.
    // DCTCP §3.3 fluid analysis for N synchronized flows: W* = (C·RTT + K)/N packets,
    // α ≈ sqrt(2/W*), amplitude A = N(W*+1)α/2, Q_max = K + N, so the mean of the sawtooth
    // is about K + N − A/2. With N = 2, C·RTT = 81.3 packets: A ≈ 12.3, mean ≈ 60.9 packets.
    // The model ignores serialization jitter and desynchronization; 10 % covers them.
    let (n, bdp, k) = (2.0, 10e9 * 100e-6 / (PKT * 8.0), 65.0);
    let w = (bdp + k) / n;
    let a = n * (w + 1.0) * (2.0 / w).sqrt() / 2.0;
    let predicted = (k + n - a / 2.0) * PKT;
    assert!(
        (avg - predicted).abs() <= 0.10 * predicted,
        "avg queue {avg} B vs DCTCP model {predicted} B"
    );
    let jain = s["jain_fairness"].as_f64().expect("two long-lived flows");
    assert!(jain >= 0.99, "Jain index {jain}");
    let total: f64 = r
        .flows()
        .unwrap()
        .iter()
        .map(|f| f.window_goodput_gbps)
        .sum();
    // Goodput = 10 Gb/s x 1460/1538 payload share, less the ACK-free reverse direction.
    assert!(
        total > 0.95 * 10.0 * 1460.0 / 1538.0,
        "goodput {total} Gb/s"
    );
}

/// NewReno incast with a 100 KB buffer (scenarios/tcp-incast.toml): 32 x 64 KB answers
/// overflow the receiver's port, yet every byte arrives.
#[test]
fn reno_incast_with_small_buffer_drops_and_still_delivers_every_byte() {
    let r = run("scenarios/tcp-incast.toml", &[]);
    let s = &r.summary;
    assert!(
        s["data_drops"].as_u64().unwrap() > 0,
        "an incast into 100 KB must overflow: {s}"
    );
    assert_eq!(s["flows_completed"], 32);
    for f in r.flows().unwrap() {
        assert_eq!(Some(f.delivered_bytes), f.size_bytes, "flow {}", f.flow_id);
        assert!(f.fct_ns.unwrap() >= f.unloaded_fct_ns.unwrap());
    }
    assert!(
        r.flows()
            .unwrap()
            .iter()
            .map(|f| f.retransmits)
            .sum::<u64>()
            > 0
    );
    // The receiver's link is the bottleneck: 2 MB at 10 Gb/s take at least 1.68 ms.
    assert!(s["sim_time_ns"].as_u64().unwrap() > 1_680_000);
}

/// One segment from host 0 to host 1 of a one-pair dumbbell: three 10 Gb/s links.
const LONE_SEGMENT: &str = r#"
    [topology]
    kind = "dumbbell"
    pairs = 1
    [transport]
    kind = "tcp"
    cc = "dctcp"
    [[flows]]
    src = 0
    dst = 1
    size = "1460B"
    "#;

/// A one-segment flow alone on an empty path completes in exactly its ideal time, and the
/// ideal matches a hand computation.
#[test]
fn lone_flow_completes_near_ideal_and_ideal_matches_hand_computation() {
    let (_, r) = run_text(LONE_SEGMENT);
    let f = &r.flows().unwrap()[0];
    // One 1538 B frame over three 10 Gb/s links (1230.4 ns each) + 50 us propagation
    // = 53,691.2 ns, reported in whole ns.
    assert_eq!(f.unloaded_fct_ns, Some(53_691));
    assert_eq!(
        f.fct_ns, f.unloaded_fct_ns,
        "a single segment is sent at once and never waits"
    );
}

/// Ports that hand a packet on at the start of its transmission (`ports.release = "start"`,
/// an emulator's htb) take a transmission time per hop off a lone segment's FCT: three
/// hops of a 1,538-byte frame at 10 Gb/s, 3 × 1,230.4 ns. A value other than `end` or
/// `start` is refused with the key's place.
#[test]
fn ports_released_at_the_start_take_a_transmission_time_per_hop() {
    let text = LONE_SEGMENT;
    let fct = |release: &str| {
        let (_, r) = run_text(&format!("{text}\n[ports]\nrelease = \"{release}\"\n"));
        r.flows().unwrap()[0].fct_ns.unwrap()
    };
    assert_eq!(fct("end"), 53_691);
    assert_eq!(fct("end") - fct("start"), 3_691);
    let bad = dcsim::ScenarioSpec::parse(
        &format!("{text}\n[ports]\nrelease = \"middle\"\n"),
        "test",
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(bad.contains("release") && bad.contains("start"), "{bad}");
}

/// The `simple` TCP profile against the DCTCP paper's fluid model (§3.3) beyond the mean:
/// the sawtooth's top is Q_max = K + N and its amplitude A = N(W* + 1)·sqrt(2/W*)/2
/// (12.3 packets here). The queue sampled every 5 µs over 100 ms: its 99th percentile must
/// be within 2 packets of K + N (measured 67 = K + N), and its 1st-to-99th percentile
/// spread between 0.8 A and 1.5 A (measured 16 packets, 1.3 A: per-ACK window steps and
/// desynchronised cuts widen the fluid model's sawtooth).
#[test]
fn dctcp_queue_sawtooth_matches_the_fluid_model() {
    let r = run(
        "scenarios/dctcp-dumbbell.toml",
        &["output.timeseries.every=5us", "sim.duration=200ms"],
    );
    let q = sorted_queue_pkts(&r, "left->right", 100_000_000);
    assert!(q.len() > 10_000, "{} samples", q.len());
    let pct = |p: usize| q[q.len() * p / 100];
    let (n, bdp, k) = (2.0, 10e9 * 100e-6 / (PKT * 8.0), 65.0);
    let w = (bdp + k) / n;
    let a = n * (w + 1.0) * (2.0 / w).sqrt() / 2.0;
    assert!(
        (pct(99) - (k + n)).abs() <= 2.0,
        "top {} vs K + N {}",
        pct(99),
        k + n
    );
    let spread = pct(99) - pct(1);
    assert!(
        (0.8 * a..=1.5 * a).contains(&spread),
        "amplitude {spread} packets vs model {a}"
    );
}

/// The `ns2` TCP profile: a SYN round trip before the data (a 2-segment flow fits the
/// initial window of both profiles, so its FCT grows by exactly that round trip), and no
/// back-pressure: a 1 MB flow's slow-start bursts overflow a 100-packet host queue (the
/// ns-2 dumbbell script's), which the `simple` profile's back-pressure never lets happen
/// (its 128 KB budget fits in the queue); both deliver every byte. (The window is capped
/// at 1 MB here: `ns2`'s own cap of 180 segments would keep this flow's NIC queue, about
/// the window less the 83-packet bandwidth-delay product, under 100 packets.)
#[test]
fn ns2_profile_pays_a_handshake_and_drops_at_a_full_host_queue() {
    let text = |size: &str, profile: &str| {
        format!(
            r#"
            [topology]
            kind = "dumbbell"
            pairs = 1
            host_link = {{ rate = "10Gbps", delay = "20us" }}
            bottleneck = {{ rate = "10Gbps", delay = "10us" }}
            [nic]
            kind = "droptail"
            buffer = "100pkts"
            [transport]
            kind = "tcp"
            cc = "reno"
            profile = "{profile}"
            max_window = "1MB"
            [[flows]]
            src = 0
            dst = 1
            size = "{size}"
            "#
        )
    };
    let fct = |profile: &str| {
        let (_, r) = run_text(&text("2920B", profile));
        r.flows().unwrap()[0].fct_ns.expect("completes")
    };
    // The SYN and SYN-ACK: 2 x 50 us of propagation and 3 serializations of a 64 B
    // header frame (84 B on the wire, 67.2 ns at 10 Gb/s) each way.
    let extra = fct("ns2") as f64 - fct("simple") as f64;
    // `ideal`, the profile's name up to 0.1.0, still reads as `simple`.
    assert_eq!(fct("ideal"), fct("simple"));
    assert!(
        (extra - (100_000.0 + 6.0 * 67.2)).abs() < 2.0,
        "handshake cost {extra} ns"
    );
    let host_drops = |profile: &str| {
        let (_, r) = run_text(&text("1MB", profile));
        assert_eq!(
            r.flows().unwrap()[0].delivered_bytes,
            1_000_000,
            "{profile}"
        );
        r.ports
            .iter()
            .filter(|p| p.tier == "host")
            .map(|p| p.drops)
            .sum::<u64>()
    };
    assert!(host_drops("ns2") > 0);
    assert_eq!(host_drops("simple"), 0);
}

/// Two long NewReno flows share a full drop-tail bottleneck (the dumbbell's ECN queue drops
/// Reno's packets, which are not ECN-capable). Both hosts' NICs run at the bottleneck's
/// rate, so flow 0's back-to-back packets reach it exactly when a transmission starts;
/// when a start freed its slot before an arrival at the same instant, flow 0 took every
/// freed slot for good, never lost a packet, and flow 1 got nothing for 295 ms (8
/// timeouts). Over the second half of the run each flow must have a fair part.
#[test]
fn two_reno_flows_share_a_drop_tail_bottleneck() {
    let r = run(
        "scenarios/dctcp-dumbbell.toml",
        &["transport.cc=reno", "sim.duration=150ms", "sim.warmup=75ms"],
    );
    let g: Vec<f64> = r
        .flows()
        .unwrap()
        .iter()
        .map(|f| f.window_goodput_gbps)
        .collect();
    let total: f64 = g.iter().sum();
    assert!(total > 9.0, "bottleneck underused: {g:?}");
    for (i, x) in g.iter().enumerate() {
        assert!(*x > 0.35 * total, "flow {i} locked out: {g:?}");
    }
}

/// Two Reno flows from NICs at the bottleneck's rate into a 100-packet drop-tail port: on
/// exact links one flow's back-to-back packets reach the full queue just after each
/// departure, take every slot it frees, and lock the other flow out (timeouts, a Jain index
/// near 0.5), where the Linux kernel's flows share evenly (docs/protocols/tcp.md, "Against
/// the Linux kernel"). A few microseconds of the emulator's shaper noise (`ports.jitter`)
/// break the lock, as the kernel's timers do.
#[test]
fn port_jitter_breaks_the_phase_lock_of_two_reno_flows() {
    let text = r#"
        [sim]
        duration = "5s"
        [topology]
        kind = "star"
        hosts = 3
        host_link = { rate = "100Mbps", delay = "12us" }
        [queue]
        kind = "droptail"
        buffer = "100pkts"
        [transport]
        kind = "tcp"
        profile = "linux"
        cc = "reno"
        [[flows]]
        src = 1
        dst = 0
        [[flows]]
        src = 2
        dst = 0
        "#;
    let fairness = |jitter: &str| {
        let (_, r) = run_text(&format!("{text}\n[ports]\njitter = \"{jitter}\"\n"));
        let flows = r.flows().unwrap();
        let timeouts: u64 = flows.iter().map(|f| f.counters["timeouts"]).sum();
        (r.summary["jain_fairness"].as_f64().unwrap(), timeouts)
    };
    let (locked, locked_timeouts) = fairness("0s");
    assert!(
        locked < 0.6 && locked_timeouts > 0,
        "exact: Jain {locked}, {locked_timeouts} timeouts"
    );
    let (shared, timeouts) = fairness("5us");
    assert!(
        shared > 0.9 && timeouts == 0,
        "with jitter: Jain {shared}, {timeouts} timeouts"
    );
}

/// A sender held by its send buffer in slow start: Linux grows the window to twice the
/// most it had out (`tcp_is_cwnd_limited`), so that a loss later halves it from there; the
/// other profiles stop growing it when it is not the limit. Two Reno flows into one
/// host (so that the switch's port, not the sender's NIC, is the bottleneck), 100
/// segments of send buffer each, no loss.
#[test]
fn a_send_buffer_bound_slow_start_grows_the_window_to_twice_the_flight_as_linux() {
    let last_cwnd = |profile: &str| {
        let (_, r) = run_text(&format!(
            r#"
            [sim]
            duration = "300ms"
            [topology]
            kind = "star"
            hosts = 3
            host_link = {{ rate = "100Mbps", delay = "10us" }}
            [queue]
            kind = "droptail"
            buffer = "1000pkts"
            [transport]
            kind = "tcp"
            profile = "{profile}"
            cc = "reno"
            snd_buf = "146000B"
            [[flows]]
            src = 1
            dst = 0
            [[flows]]
            src = 2
            dst = 0
            [output.events]
            flows = [0]
            "#
        ));
        let dir = tempfile::tempdir().unwrap();
        r.write(dir.path()).unwrap();
        let rows: Vec<(u64, String, u32, f64)> =
            csv::Reader::from_path(dir.path().join("events.csv"))
                .unwrap()
                .deserialize()
                .map(|r| r.unwrap())
                .collect();
        assert_eq!(r.summary["packets_dropped"].as_u64(), Some(0), "{profile}");
        let cwnd = rows.iter().rev().find(|e| e.1 == "cwnd_bytes").unwrap().3;
        (cwnd / 1460.0).round() as u64
    };
    assert_eq!(last_cwnd("linux"), 200);
    let simple = last_cwnd("simple");
    assert!((100..=102).contains(&simple), "simple: {simple} segments");
}

/// TCP small queues (`linux`): two Reno senders in slow start toward one 100 Mb/s port
/// whose queue holds most of their windows (a smoothed RTT of tens of milliseconds) may
/// keep only about a millisecond of their pacing rate in their NICs, 24 KB of Linux's
/// buffers, about 11 frames (the kernel twin's senders held 8.6-13.1 on average in three
/// runs, 11-14 at most).
/// Without it their NICs queue what slow start sends beyond the link's rate (21 frames
/// here).
#[test]
fn tcp_small_queues_keep_a_slow_starting_senders_nic_queue_short() {
    let nic_max = |small_queues: bool| {
        let (_, r) = run_text(&format!(
            r#"
            [sim]
            duration = "240ms"
            [topology]
            kind = "star"
            hosts = 3
            host_link = {{ rate = "100Mbps", delay = "10us" }}
            [queue]
            kind = "droptail"
            buffer = "1000pkts"
            [transport]
            kind = "tcp"
            profile = "linux"
            cc = "reno"
            small_queues = {small_queues}
            [[flows]]
            src = 1
            dst = 0
            [[flows]]
            src = 2
            dst = 0
            "#
        ));
        r.ports
            .iter()
            .filter(|p| p.node == "h1" || p.node == "h2")
            .map(|p| p.max_queue_bytes)
            .max()
            .unwrap()
    };
    let small = nic_max(true);
    assert!(
        (8 * 1538..=13 * 1538).contains(&small),
        "with small queues: {small} B"
    );
    let budget = nic_max(false);
    assert!(
        budget >= 18 * 1538 && budget >= small + 6 * 1538,
        "without: {budget} B, with: {small} B"
    );
}

/// DCTCP with no ECN-marking switch behaves like NewReno: same window evolution, so the
/// same output (the transport differs only in the ECN bit, which nobody reads here).
#[test]
fn dctcp_without_marking_equals_reno_end_to_end() {
    let base = |cc: &str| {
        format!(
            r#"
            [sim]
            duration = "20ms"
            [topology]
            kind = "dumbbell"
            pairs = 2
            [queue]
            kind = "droptail"
            buffer = "100KB"
            [transport]
            kind = "tcp"
            cc = "{cc}"
            ecn = false
            [[flows]]
            src = 0
            dst = 2
            [[flows]]
            src = 1
            dst = 3
            start = "1ms"
            "#
        )
    };
    let (_, a) = run_text(&base("dctcp"));
    let (_, b) = run_text(&base("reno"));
    let strip = |r: &dcsim::Results| {
        r.flows()
            .unwrap()
            .iter()
            .map(|f| (f.delivered_bytes, f.retransmits, f.counters["timeouts"]))
            .collect::<Vec<_>>()
    };
    assert_eq!(strip(&a), strip(&b));
    assert!(
        a.summary["packets_dropped"].as_u64().unwrap() > 0,
        "the test must exercise loss recovery"
    );
}

/// Join/leave: a long-lived flow with a stop time sends nothing new after it, completes
/// once its last byte arrives, and reports the bytes it sent as its size.
#[test]
fn stopped_long_flow_completes_with_the_bytes_it_sent() {
    let (_, r) = run_text(
        r#"
        [sim]
        duration = "20ms"
        [topology]
        kind = "dumbbell"
        pairs = 2
        [transport]
        kind = "tcp"
        cc = "dctcp"
        [[generators]]
        pattern = { kind = "pairs", count = 2, src = 0, dst = 2, start_every = "2ms", stop = "8ms", stop_every = "4ms" }
        "#,
    );
    for (f, stop_ns) in r.flows().unwrap().iter().zip([8_000_000u64, 12_000_000]) {
        let size = f.size_bytes.expect("a stopped flow reports what it sent");
        assert_eq!(f.delivered_bytes, size);
        let end = f.end_ns.expect("completes after its stop time");
        assert!(
            end > stop_ns && end < stop_ns + 2_000_000,
            "flow {} ended at {end} ns",
            f.flow_id
        );
        // It ran at a few Gb/s for several ms: megabytes, not the initial window.
        assert!(size > 1_000_000, "flow {} sent only {size} B", f.flow_id);
    }
}

/// ExpressPass incast (scenarios/xpass-incast.toml): credits absorb the overload. No data
/// packet is lost and the receiver's data queue holds about one packet, where TCP on the
/// same incast overflows a 100 KB buffer.
#[test]
fn xpass_incast_loses_no_data_and_keeps_the_queue_tiny() {
    let r = run("scenarios/xpass-incast.toml", &[]);
    let s = &r.summary;
    assert_eq!(s["data_drops"], 0, "{s}");
    assert!(
        s["credit_drops"].as_u64().unwrap() > 0,
        "the overload must fall on credits: {s}"
    );
    assert_eq!(s["flows_completed"], 32);
    let port = r
        .ports
        .iter()
        .find(|p| p.node == "sw" && p.peer == "h0")
        .unwrap();
    // Network calculus bound of the paper: the data queue needs only the delay variation
    // between credit and data paths; here every path has the same length, so a couple of
    // packets from simultaneous credit releases.
    assert!(
        port.max_data_queue_bytes <= 3 * 1538,
        "max data queue {} B",
        port.max_data_queue_bytes
    );
    // The whole incast (32 x 64 KB of payload) at the full credit-limited goodput
    // (10 Gb/s x 1460/1622 = 9.0 Gb/s) takes 1.82 ms; the feedback ramp and the last
    // flows' tail cost some of that, measured 10-17 % over several seeds; 25 % bounds it.
    let ideal_us = 32.0 * 64_000.0 * 8.0 / 9.0e9 * 1e6;
    let last = s["fct_us"]["max"].as_f64().unwrap();
    assert!(
        last <= 1.25 * ideal_us + 100.0,
        "incast took {last} us, ideal {ideal_us} us"
    );
}

/// ExpressPass recovers lost data, including the tail of a flow, when data buffers are too
/// small (2 packets) to absorb what credits release: every byte arrives.
#[test]
fn xpass_recovers_data_loss_including_the_tail() {
    let (_, r) = run_text(
        r#"
        [topology]
        kind = "star"
        hosts = 9
        [queue]
        kind = "credit-shaper"
        credit_buffer = "16pkts"
        credit_burst = "16pkts"
        inner = { kind = "droptail", buffer = "2pkts" }
        # NICs that do not shape credits (an unnamed NIC would): credits arrive in bursts.
        [nic]
        kind = "droptail"
        buffer = "1538KB"
        [transport]
        kind = "expresspass"
        [[generators]]
        pattern = { kind = "incast", receiver = 0, size = "200KB" }
        "#,
    );
    let s = &r.summary;
    assert!(
        s["data_drops"].as_u64().unwrap() > 0,
        "the test must lose data: {s}"
    );
    assert_eq!(s["flows_completed"], 8, "{s}");
    for f in r.flows().unwrap() {
        assert_eq!(Some(f.delivered_bytes), f.size_bytes);
    }
    assert!(
        r.flows()
            .unwrap()
            .iter()
            .map(|f| f.retransmits)
            .sum::<u64>()
            > 0
    );
    assert_eq!(s["packets_in_network"], 0);
}

/// One ExpressPass flow alone gets the full credit rate: 10 Gb/s x 84/1622 of credits, each
/// releasing 1460 B of payload: 770,653 credits/s, 9.0 Gb/s of goodput.
#[test]
fn xpass_single_flow_runs_at_the_full_credit_rate() {
    let r = run(
        "scenarios/xpass-dumbbell.toml",
        &["flows[1].start=1s", "sim.warmup=2ms", "sim.duration=10ms"],
    );
    let g = r.flows().unwrap()[0].window_goodput_gbps;
    let expected = 10e9 * 84.0 / 1622.0 / 8.0 / 84.0 * 1460.0 * 8.0 / 1e9;
    assert!(
        (g - expected).abs() < 0.005 * expected,
        "goodput {g} vs {expected} Gb/s"
    );
    assert_eq!(r.summary["data_drops"], 0);
}

/// A long-lived ExpressPass flow whose stop time comes before its first credit still
/// stops the receiver's credits and completes (with zero bytes sent, it reports size 0 and
/// is complete at once when the stop arrives).
#[test]
fn xpass_flow_stopped_before_its_first_credit_ends_cleanly() {
    let (_, r) = run_text(
        r#"
        [topology]
        kind = "dumbbell"
        pairs = 1
        [queue]
        kind = "credit-shaper"
        [transport]
        kind = "expresspass"
        [[flows]]
        src = 0
        dst = 1
        stop = "10us"
        [[flows]]
        src = 0
        dst = 1
        size = "100KB"
        "#,
    );
    let s = &r.summary;
    assert_eq!(s["packets_in_network"], 0, "{s}");
    assert_eq!(r.flows().unwrap()[1].delivered_bytes, 100_000);
    assert_eq!(r.flows().unwrap()[0].size_bytes, Some(0));
}

/// Many ExpressPass flows starting within milliseconds: most first credits are dropped at
/// the credit bottleneck, and the senders' request retries back off instead of filling the
/// data queue with requests (regression: 871 data drops at 1024 flows with fixed retries).
#[test]
fn xpass_many_starting_flows_lose_no_data() {
    let (_, r) = run_text(
        r#"
        [sim]
        duration = "6ms"
        [topology]
        kind = "dumbbell"
        pairs = 512
        [queue]
        kind = "credit-shaper"
        credit_buffer = "2pkts"
        credit_burst = "10pkts"
        inner = { kind = "droptail", buffer = "153800B" }
        [nic]
        kind = "droptail"
        buffer = "1000pkts"
        [transport]
        kind = "expresspass"
        alpha = 0.5
        w_init = 0.5
        [[generators]]
        pattern = { kind = "pairs", count = 512, src = 0, dst = 512, start_every = "5ns" }
        "#,
    );
    assert_eq!(r.summary["data_drops"], 0, "{}", r.summary);
}

/// Warm-up and cool-down exclusion and the size buckets, end to end: flows that start
/// before `sim.warmup` or within `sim.cooldown` of the last start are in flows.csv but not in
/// the FCT statistics; every measured flow lands in exactly one bucket of each set.
#[test]
fn fct_statistics_take_only_flows_inside_the_measurement_window() {
    let (_, r) = run_text(
        r#"
        [sim]
        warmup = "1ms"
        cooldown = "1ms"
        [topology]
        kind = "dumbbell"
        pairs = 2
        [transport]
        kind = "tcp"
        cc = "dctcp"
        [[flows]]
        src = 0
        dst = 2
        size = "5KB"
        start = "0.5ms"
        [[flows]]
        src = 0
        dst = 2
        size = "5KB"
        start = "1ms"
        [[flows]]
        src = 1
        dst = 3
        size = "50KB"
        start = "1.5ms"
        [[flows]]
        src = 1
        dst = 3
        size = "2MB"
        start = "2ms"
        [[flows]]
        src = 0
        dst = 2
        size = "5KB"
        start = "3.5ms"
        "#,
    );
    let measured: Vec<bool> = r.flows().unwrap().iter().map(|f| f.measured).collect();
    // Last start 3.5 ms, cool-down 1 ms: measured starts are [1 ms, 2.5 ms).
    assert_eq!(measured, [false, true, true, true, false]);
    assert_eq!(r.summary["flows_measured"], 3);
    assert_eq!(r.summary["fct_us"]["count"], 3);
    let count = |b: &str| {
        r.buckets
            .iter()
            .find(|x| x.bucket == b)
            .map(|x| x.flows)
            .unwrap()
    };
    assert_eq!(count("all"), 3);
    assert_eq!(
        [
            count("0-10KB"),
            count("10KB-100KB"),
            count("100KB-1MB"),
            count("1MB+")
        ],
        [1, 1, 0, 1]
    );
    assert_eq!(
        [count("<100KB"), count("100KB-10MB"), count("10MB+")],
        [2, 1, 0]
    );
    // The 2 MB flow alone on the path: slowdown close to 1 (slow start costs a few RTTs).
    let big = r.buckets.iter().find(|x| x.bucket == "1MB+").unwrap();
    assert!(
        (1.0..1.5).contains(&big.slowdown_mean),
        "{}",
        big.slowdown_mean
    );
    assert_eq!(r.summary["fct_buckets"]["1MB+"]["flows"], 1);
    // Per-tier port statistics: the dumbbell's bottleneck tier carries the data.
    let tiers: Vec<&str> = r.tiers.iter().map(|t| t.tier.as_str()).collect();
    assert!(tiers.contains(&"switch->switch"), "{tiers:?}");
}

/// A short flow that starts behind long flows of the same host is not starved by the host's
/// NIC back-pressure: ACK-clocked long flows must not refill the NIC queue while it waits.
/// Its FCT is bounded by a few NIC-queue drains (128 KB at 10 Gb/s ≈ 105 µs each) plus the
/// network queue (DCTCP: about K = 65 packets, 80 µs) and an RTT; before the fix it waited
/// milliseconds.
#[test]
fn short_flow_behind_long_flows_of_its_host_is_not_starved() {
    let (_, r) = run_text(
        r#"
        [sim]
        duration = "30ms"
        [topology]
        kind = "dumbbell"
        pairs = 2
        [transport]
        kind = "tcp"
        cc = "dctcp"
        [[flows]]
        src = 0
        dst = 2
        [[flows]]
        src = 0
        dst = 3
        [[flows]]
        src = 0
        dst = 2
        size = "20KB"
        start = "10ms"
        [[flows]]
        src = 0
        dst = 3
        size = "20KB"
        start = "20ms"
        "#,
    );
    for f in &r.flows().unwrap()[2..] {
        let fct = f.fct_ns.expect("short flow completes");
        assert!(fct < 600_000, "short flow {} took {fct} ns", f.flow_id);
    }
}

/// Pulser on an incast (scenarios/pulser-incast.toml): the switch port signals the steep
/// queue rise, the senders drop to their safe window at once, and the receiver's queue
/// peaks well below DCTCP's on the same flows (measured 195.3-196.9 KB against 230.7 KB
/// for seeds 1 to 5), with the incast finishing sooner and nothing lost in either.
#[test]
fn pulser_keeps_the_incast_queue_below_dctcps() {
    let peak = |r: &dcsim::Results| {
        let p = r
            .ports
            .iter()
            .find(|p| p.node == "sw" && p.peer == "h0")
            .unwrap();
        (
            p.max_queue_bytes,
            r.summary["fct_us"]["max"].as_f64().unwrap(),
        )
    };
    let pulser = run("scenarios/pulser-incast.toml", &[]);
    let dctcp = run(
        "scenarios/pulser-incast.toml",
        &[
            "transport.cc=dctcp",
            r#"queue={kind="ecn",buffer="250pkts",mark_threshold="65pkts"}"#,
        ],
    );
    for r in [&pulser, &dctcp] {
        assert_eq!(r.summary["packets_dropped"], 0, "{}", r.summary);
        assert_eq!(r.summary["flows_completed"], 32);
    }
    let ((pq, pfct), (dq, dfct)) = (peak(&pulser), peak(&dctcp));
    assert!(
        (pq as f64) < 0.9 * dq as f64,
        "Pulser's peak {pq} B against DCTCP's {dq} B"
    );
    assert!(pfct < dfct, "incast done at {pfct} us against {dfct} us");
}

/// ICTCP on the NewReno incast (scenarios/tcp-incast.toml, 32 senders × 64 KB into a
/// 100 KB buffer): the receiver starts every connection at a 2-segment window and grows
/// it only into the bandwidth its link has to spare, so nothing is dropped and no sender
/// times out (without it: 413 drops, 55 timeouts), and the incast ends at 1.74 ms, near
/// the 1.73 ms the link needs for the bytes, against 3.75 ms.
#[test]
fn ictcp_removes_the_incast_losses() {
    let plain = run("scenarios/tcp-incast.toml", &[]);
    let ictcp = run("scenarios/tcp-incast.toml", &["transport.ictcp={}"]);
    assert!(plain.summary["data_drops"].as_u64().unwrap() > 100);
    assert_eq!(ictcp.summary["data_drops"], 0, "{}", ictcp.summary);
    assert_eq!(ictcp.summary["by_transport"]["tcp"]["timeouts"], 0);
    assert_eq!(ictcp.summary["flows_completed"], 32);
    // 32 × 64,000 B in 1460-byte segments of 1538 wire bytes at 10 Gb/s.
    let need_us = (32.0 * 64_000.0 / 1460.0_f64).ceil() * 1538.0 * 8.0 / 10e9 * 1e6;
    let last = ictcp.summary["fct_us"]["max"].as_f64().unwrap();
    assert!(
        last < 1.05 * need_us + 20.0,
        "incast took {last} us, the link needs {need_us}"
    );
}

/// CUBIC on the DCTCP dumbbell's bottleneck: on a 250-packet drop-tail queue two flows fill
/// the link and share it (loss-based: the queue stands near the buffer); with ECN on and
/// the K = 65 marking queue they keep the link nearly full with no loss and a far shorter
/// queue, each echo cutting the window to β = 0.7 of itself.
#[test]
fn cubic_shares_a_bottleneck_with_loss_or_with_ecn() {
    let bottleneck = |r: &dcsim::Results| {
        let p = r
            .ports
            .iter()
            .find(|p| p.node == "left" && p.peer == "right")
            .unwrap();
        (p.utilization, p.avg_queue_bytes, p.drops)
    };
    let loss = run(
        "scenarios/dctcp-dumbbell.toml",
        &[
            "transport.cc=cubic",
            r#"queue={kind="droptail",buffer="250pkts"}"#,
        ],
    );
    let (u, q, drops) = bottleneck(&loss);
    assert!(u > 0.99 && drops > 0 && q > 200_000.0, "{u} {q} {drops}");
    assert!(loss.summary["jain_fairness"].as_f64().unwrap() > 0.95);
    let ecn = run(
        "scenarios/dctcp-dumbbell.toml",
        &["transport.cc=cubic", "transport.ecn=true"],
    );
    let (u, q, _) = bottleneck(&ecn);
    assert_eq!(ecn.summary["packets_dropped"], 0);
    assert!(u > 0.97 && q < 100_000.0, "{u} {q}");
    assert!(ecn.summary["jain_fairness"].as_f64().unwrap() > 0.99);
}

/// The Ideal transport on a dumbbell: a long-lived flow alone gets the bottleneck's data
/// rate, two share it equally from the moment the second starts (the oracle re-rates the
/// first at once), and flows stop when told, so the run ends on its own.
#[test]
fn ideal_flows_share_a_bottleneck_exactly_and_stop() {
    let (_, r) = run_text(
        r#"
        [topology]
        kind = "dumbbell"
        pairs = 2
        [transport]
        kind = "ideal"
        [[flows]]
        src = 0
        dst = 2
        stop = "10ms"
        [[flows]]
        src = 1
        dst = 3
        start = "2ms"
        stop = "6ms"
        "#,
    );
    assert_eq!(r.summary["packets_dropped"], 0);
    // 10 Gb/s of 1538-byte frames carrying 1460 bytes each: 9.49 Gb/s of data; the second
    // flow has half of it for its 4 ms.
    let data_bps = 10e9 * 1460.0 / 1538.0;
    let second = r.flows().unwrap()[1].delivered_bytes as f64;
    let want = data_bps / 2.0 * 4e-3 / 8.0;
    assert!((second / want - 1.0).abs() < 0.01, "{second} B vs {want}");
    let first = r.flows().unwrap()[0].delivered_bytes as f64;
    let want = data_bps * (6e-3 + 2e-3) / 8.0;
    assert!((first / want - 1.0).abs() < 0.01, "{first} B vs {want}");
}

/// The SDN ECN controller on one switch (scenarios/sdn-ecn-star.toml): it probes every 2 s,
/// finds the receiver's link congested, installs rules that mark the fastest long flows,
/// and the 2 MB interactive flows finish far sooner on average than in the same run
/// without ECN (plain CUBIC on drop-tail; the rules leave non-ECT packets alone), with no
/// loss of total throughput beyond 10 %.
#[test]
fn sdn_controller_spares_the_interactive_flow() {
    let mean_fct = |r: &dcsim::Results| {
        let f: Vec<f64> = r.flows().unwrap()[3..]
            .iter()
            .map(|f| f.fct_ns.expect("every interactive flow finishes") as f64)
            .collect();
        f.iter().sum::<f64>() / f.len() as f64
    };
    let total = |r: &dcsim::Results| {
        r.flows()
            .unwrap()
            .iter()
            .map(|f| f.delivered_bytes)
            .sum::<u64>()
    };
    let ctl = run("scenarios/sdn-ecn-star.toml", &[]);
    let c = &ctl.summary["controller"];
    assert_eq!(c["probes"], 15, "{c}");
    assert!(c["congested_link_probes"].as_u64().unwrap() > 0, "{c}");
    assert!(c["rules_installed"].as_u64().unwrap() > 0, "{c}");
    let marked = c["packets_marked"].as_u64().unwrap();
    assert!(marked > 0 && ctl.summary["ecn_marks"] == marked, "{c}");
    let plain = run(
        "scenarios/sdn-ecn-star.toml",
        &["transport.ecn=false", "transports.interactive.ecn=false"],
    );
    assert_eq!(plain.summary["controller"]["packets_marked"], 0);
    assert_eq!(plain.summary["ecn_marks"], 0);
    let (a, b) = (mean_fct(&ctl), mean_fct(&plain));
    assert!(
        a < 0.5 * b,
        "interactive FCT {a} ns with rules, {b} without"
    );
    assert!(
        total(&ctl) as f64 > 0.9 * total(&plain) as f64,
        "{} vs {}",
        total(&ctl),
        total(&plain)
    );
}

/// `output.queue_occupancy`: queue lengths sampled every 1 µs estimate each switch tier's
/// time-weighted distribution: their mean agrees with the ports' own time-averaged queue
/// (an exact integral of the same backlog) within 2 %, the percentiles are ordered and
/// within the largest queue; sampling changes no result; without the option nothing is
/// reported.
#[test]
fn queue_occupancy_percentiles_agree_with_the_mean_queue() {
    let r = run(
        "scenarios/dctcp-dumbbell.toml",
        &["output.queue_occupancy=\"1us\""],
    );
    let occ = r.summary["queue_occupancy"].as_object().unwrap();
    assert!(!occ.is_empty());
    for t in r.tiers.iter().filter(|t| occ.contains_key(&t.tier)) {
        let o = &occ[&t.tier];
        let mean = o["mean_bytes"].as_f64().unwrap();
        assert!(
            (mean - t.avg_queue_bytes_mean).abs() <= 0.02 * t.avg_queue_bytes_mean + 1.0,
            "{}: {mean} vs {}",
            t.tier,
            t.avg_queue_bytes_mean
        );
        let (p50, p99, p999) = (
            o["p50_bytes"].as_u64().unwrap(),
            o["p99_bytes"].as_u64().unwrap(),
            o["p999_bytes"].as_u64().unwrap(),
        );
        assert!(p50 <= p99 && p99 <= p999, "{o}");
        assert!(
            p999 as f64 <= 1.01 * t.max_queue_bytes as f64,
            "{o} max {}",
            t.max_queue_bytes
        );
    }
    // The tier holds the bottleneck (its queue near K = 65 packets, at most the measured
    // 68) and the idle reverse port: half the time-weight at 0, the top percent near K.
    let tier = &occ["switch->switch"];
    assert_eq!(tier["p50_bytes"], 0, "{tier}");
    let p99 = tier["p99_bytes"].as_u64().unwrap();
    assert!((60 * 1538..70 * 1538).contains(&p99), "{tier}");
    let plain = run("scenarios/dctcp-dumbbell.toml", &[]);
    assert!(plain.summary["queue_occupancy"].is_null());
    assert_eq!(plain.digest(), r.digest());
}

/// A time series that names a generator flow by number samples it once it exists (it used
/// to index past the flow table and panic before the flow was created).
#[test]
fn sampling_a_generator_flow_before_it_starts_waits_for_it() {
    let r = run(
        "scenarios/websearch-star.toml",
        &[
            "output.timeseries.every=\"1ms\"",
            "output.timeseries.flows=[20]",
        ],
    );
    let rows: Vec<_> = r
        .samples()
        .unwrap()
        .expect("a time series")
        .into_iter()
        .filter(|s| s.kind == "throughput_gbps")
        .collect();
    assert!(!rows.is_empty() && rows.iter().all(|s| s.id == "20"));
    let start = r.flows().unwrap()[20].start_ns;
    assert!(
        rows.iter().all(|s| s.time_ns >= start),
        "sampled before flow 20 existed"
    );
}

/// Three long CUBIC flows with the `linux` profile into one 100 Mb/s drop-tail port of
/// 1,000 packets: as the Linux kernel does on the same set-up, the flows hold a standing
/// queue and lose few packets, with no timeout. HyStart ends slow start before the queue
/// overflows; SACK with RACK repairs each loss in a round trip. Measured: 59 drops in 10 s,
/// 108 in a minute (the kernel: 105). (Before both, the first second alone lost 2,071
/// packets, and a minute 3,290 with 29 timeouts.)
#[test]
fn linux_cubic_fills_a_drop_tail_queue_without_timeouts() {
    let r = run_text(
        r#"
        [sim]
        duration = "10s"
        [topology]
        kind = "star"
        hosts = 4
        host_link = { rate = "100Mbps", delay = "50us" }
        [queue]
        kind = "droptail"
        buffer = "1000pkts"
        [transport]
        kind = "tcp"
        profile = "linux"
        cc = "cubic"
        [[flows]]
        src = 1
        dst = 0
        [[flows]]
        src = 2
        dst = 0
        [[flows]]
        src = 3
        dst = 0
        "#,
    )
    .1;
    let p = r
        .ports
        .iter()
        .find(|p| p.node == "sw" && p.peer == "h0")
        .unwrap();
    assert_eq!(r.summary["by_transport"]["tcp"]["timeouts"], 0);
    assert!(p.drops <= 100, "drops {}", p.drops);
    assert!(p.utilization > 0.99, "{}", p.utilization);
    assert!(p.avg_queue_bytes > 400_000.0, "{}", p.avg_queue_bytes);
}

/// A time series with an offset samples at offset + k·every, each sample covering the
/// `every` before it: its bins are exactly the sums of a finer series' bins over the same
/// intervals, and nothing before the offset is reported.
#[test]
fn timeseries_offset_shifts_the_intervals_exactly() {
    let text = |every: &str, offset: &str| {
        format!(
            "[sim]\nduration = \"3ms\"\n[topology]\nkind = \"dumbbell\"\npairs = 1\n\
             [[flows]]\nsrc = 0\ndst = 1\nsize = \"2MB\"\n\
             [output.timeseries]\nevery = \"{every}\"\nflows = \"all\"\n{offset}"
        )
    };
    let series = |t: &str| -> Vec<(u64, f64)> {
        let (_, r) = run_text(t);
        r.samples()
            .unwrap()
            .into_iter()
            .flatten()
            .filter(|s| s.kind == "throughput_gbps")
            .map(|s| (s.time_ns, s.value))
            .collect()
    };
    let fine = series(&text("10us", ""));
    let shifted = series(&text("100us", "offset = \"30us\""));
    assert_eq!(
        shifted[0].0, 130_000,
        "the first interval starts at the offset"
    );
    assert!(shifted.iter().all(|&(t, _)| (t - 30_000) % 100_000 == 0));
    let mut compared = 0;
    for &(t, v) in &shifted {
        let within: Vec<f64> = fine
            .iter()
            .filter(|&&(u, _)| u > t - 100_000 && u <= t)
            .map(|&(_, x)| x)
            .collect();
        assert_eq!(within.len(), 10, "at {t} ns");
        let mean = within.iter().sum::<f64>() / 10.0;
        assert!(
            (mean - v).abs() < 1e-9 * v.abs().max(1.0),
            "{t}: {mean} vs {v}"
        );
        compared += usize::from(v > 0.0);
    }
    assert!(compared > 5, "{shifted:?}");
    // Unset, the offset is left out of the scenario as written and resolved.
    let spec = dcsim::ScenarioSpec::parse(&text("100us", ""), "t", &[]).unwrap();
    assert!(!toml::to_string(&spec).unwrap().contains("offset"));
}

/// DCTCP under the `linux` profile reduces as Linux does (CWR held until `snd_una` passes
/// `high_seq`, PRR over `prior_cwnd`, the cut in whole segments): 32 long flows into one
/// 10 Gb/s port marking at K = 65 (validation/ns3_dctcp_star.py's set-up) keep a queue
/// whose 1st percentile is 36 packets (ns-3.44's TcpDctcp: 29) and mean 67.4 (ns-3: 67.0).
/// Before, every window was cut again one ACK early, with PRR spreading the cut over the
/// flight instead of the window, and the queue dipped to 4 packets (mean 63.6).
#[test]
fn linux_dctcp_star_of_32_flows_holds_its_queue() {
    let mut text = String::from(
        r#"
        [sim]
        duration = "300ms"
        warmup = "100ms"
        [topology]
        kind = "star"
        hosts = 33
        host_link = { rate = "10Gbps", delay = "25us" }
        [queue]
        kind = "ecn"
        buffer = "1000pkts"
        mark_threshold = "65pkts"
        [transport]
        kind = "tcp"
        profile = "linux"
        cc = { kind = "dctcp", g = 0.0625 }
        sack = false
        delayed_ack = false
        min_rto = "1ms"
        rcv_buf = "64MiB"
        [output.timeseries]
        every = "10us"
        ports = ["sw->h0"]
        "#,
    );
    for i in 1..=32 {
        text += &format!("[[flows]]\nsrc = {i}\ndst = 0\nstart = \"{}ms\"\n", i - 1);
    }
    let (_, r) = run_text(&text);
    let q = sorted_queue_pkts(&r, "sw->h0", 100_000_000);
    assert!(q.len() > 10_000, "{} samples", q.len());
    let p1 = q[q.len() / 100];
    let mean = q.iter().sum::<f64>() / q.len() as f64;
    assert!(p1 >= 20.0, "1st percentile {p1} packets");
    assert!((65.0..=71.0).contains(&mean), "mean {mean} packets");
}
