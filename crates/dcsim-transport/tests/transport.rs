//! Tests of the transport interface through the test kit: every registered congestion
//! controller under random input, pacing, and per-packet network feedback over a link.

use std::sync::{Arc, Mutex};

use dcsim_engine::{Dur, Rate, RngTree, Time};
use dcsim_net::Telemetry;
use dcsim_net::topo::LinkSpec;
use dcsim_testkit::{CcDriver, LinkPair, Round};
use dcsim_transport::cc::{AckSample, Cc, CcSpec, CongestionControl, WindowLimits};
use dcsim_transport::tcp::{Tcp, TcpReceiver, TcpSender};
use dcsim_transport::{FlowInfo, TcpConfig, Transport};
use proptest::prelude::*;

fn limits() -> WindowLimits {
    WindowLimits {
        mss: 1460,
        init_cwnd: 10 * 1460,
        min_cwnd: 2 * 1460,
    }
}

/// One step of the random input of the controller harness.
#[derive(Clone, Copy, Debug)]
enum Op {
    Round {
        marked: u64,
        of: u64,
        rtt_us: u64,
        queue_us: Option<u64>,
        rate_mbps: Option<u64>,
        limited: bool,
    },
    Loss,
    Timeout,
    Idle(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..5, 1u64..5, 5u64..2000, proptest::option::of(0u64..500),
              proptest::option::of(1u64..100_000), any::<bool>())
            .prop_map(|(marked, of, rtt_us, queue_us, rate_mbps, limited)| Op::Round {
                marked: marked.min(of), of, rtt_us, queue_us, rate_mbps, limited
            }),
        1 => Just(Op::Loss),
        1 => Just(Op::Timeout),
        1 => (1u64..10_000).prop_map(Op::Idle),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Every registered controller, under any sequence of windows (marked or not, with any
    /// RTT, queueing delay and rate echo), losses, timeouts and idle periods: the window
    /// never falls below the floor, the state stays finite and a pacing rate stays
    /// positive (the driver checks after every ACK). A new controller is covered by
    /// registering it.
    #[test]
    fn every_controller_keeps_a_sane_window_under_any_input(
        ops in proptest::collection::vec(op(), 1..40)
    ) {
        for spec in CcSpec::defaults() {
            let mut d = CcDriver::new(spec.build(limits())).with_limits(limits());
            for op in &ops {
                match *op {
                    Op::Round { marked, of, rtt_us, queue_us, rate_mbps, limited } => {
                        let mut r = Round::marked(marked, of).with_rtt(Dur::from_us(rtt_us));
                        r.cwnd_limited = limited;
                        if let Some(q) = queue_us {
                            r = r.with_queue_delay(Dur::from_us(q));
                        }
                        if let Some(m) = rate_mbps {
                            r = r.with_rate(Rate::from_mbps(m));
                        }
                        d.round(r);
                    }
                    Op::Loss => d.loss(),
                    Op::Timeout => d.timeout(),
                    Op::Idle(us) => d.idle(Dur::from_us(us)),
                }
            }
        }
    }
}

/// A controller for tests: a fixed window, an optional fixed pacing rate, and a log of
/// every ACK sample it saw.
struct Fixed {
    cwnd: u64,
    pace: Option<Rate>,
    log: Arc<Mutex<Vec<AckSample>>>,
}

impl CongestionControl for Fixed {
    fn cwnd_bytes(&self) -> u64 {
        self.cwnd
    }
    fn pacing_rate(&self) -> Option<Rate> {
        self.pace
    }
    fn on_ack(&mut self, ack: &AckSample) {
        self.log.lock().unwrap().push(*ack);
    }
    fn on_ecn(&mut self, _now: Time, _in_flight: u64) {}
    fn on_loss(&mut self, _now: Time, _in_flight: u64) {}
    fn on_rto(&mut self, _now: Time, _in_flight: u64) {}
}

/// The samples a [`Fixed`] controller saw.
type Log = Arc<Mutex<Vec<AckSample>>>;

/// A TCP flow's two ends with a [`Fixed`] controller, and its log.
fn fixed(
    cwnd: u64,
    pace: Option<Rate>,
) -> (impl FnOnce(&FlowInfo) -> (TcpSender, TcpReceiver), Log) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let cc = Fixed {
        cwnd,
        pace,
        log: log.clone(),
    };
    let open = move |info: &FlowInfo| {
        let cfg = TcpConfig::default();
        (
            TcpSender::new(&cfg, Cc::Custom(Box::new(cc)), info, None),
            TcpReceiver::new(&cfg, info),
        )
    };
    (open, log)
}

/// A sender pacing at 1 Gb/s on 10 Gb/s links, with a window far larger than the path
/// holds, spaces its segments by their wire time at 1 Gb/s (12.304 µs for 1538 B): they
/// reach the receiver at least that far apart, and the flow takes the paced time.
#[test]
fn paced_sender_spaces_segments_at_its_rate() {
    let (open, _) = fixed(10_000_000, Some(Rate::from_gbps(1)));
    let setup = LinkPair::new(LinkSpec::new(10, 2), LinkSpec::new(10, 2));
    let size = 1460 * 200;
    let run = setup.run(Some(size), Time::from_dur(Dur::from_ms(50)), open);
    let data: Vec<Time> = run
        .deliveries
        .iter()
        .filter(|d| d.to_receiver)
        .map(|d| d.at)
        .collect();
    assert_eq!(data.len(), 200);
    let gap = Rate::from_gbps(1).tx_time(1538);
    for w in data.windows(2) {
        assert!(
            w[1] - w[0] >= gap,
            "{:?} apart, pacing gap {gap:?}",
            w[1] - w[0]
        );
    }
    // 199 gaps at 1 Gb/s plus one path crossing: within 1 % of 199 · 12.304 µs + path.
    let fct = run.completed_at.unwrap().as_ps() as f64;
    let paced = (gap * 199).as_ps() as f64;
    assert!(
        fct > paced && fct < paced * 1.01 + 20e6,
        "fct {fct} ps, paced {paced} ps"
    );
}

/// With queue-delay telemetry on and a 1 Gb/s bottleneck behind 10 Gb/s host links, the
/// data packets wait at the bottleneck; every ACK echoes the wait of the segment that
/// triggered it, and the controller sees exactly those waits in its samples (in order).
/// Without telemetry the samples carry no queueing delay.
#[test]
fn acks_echo_the_switch_queueing_delay_of_their_data() {
    let setup = LinkPair::new(LinkSpec::new(10, 2), LinkSpec::new(1, 2))
        .with_telemetry(Telemetry::QUEUE_DELAY);
    let (open, log) = fixed(40 * 1460, None);
    let run = setup.run(Some(1460 * 300), Time::from_dur(Dur::from_ms(50)), open);
    assert!(run.completed_at.is_some());
    let waits: Vec<u32> = run
        .deliveries
        .iter()
        .filter(|d| d.to_receiver)
        .map(|d| d.packet.queue_delay_ns)
        .collect();
    let echoed: Vec<u32> = log
        .lock()
        .unwrap()
        .iter()
        .map(|a| a.queue_delay.expect("telemetry is on").as_ns() as u32)
        .collect();
    assert_eq!(waits.len(), 300);
    assert_eq!(echoed, waits);
    // 40 segments in flight against a 1 Gb/s bottleneck: most of them queue, up to about
    // 40 - BDP (8 µs RTT at 1 Gb/s is under one segment) frame times of 12.3 µs.
    let max = *waits.iter().max().unwrap();
    assert!(max > 300_000 && max < 40 * 12_304, "largest wait {max} ns");

    let plain = LinkPair::new(LinkSpec::new(10, 2), LinkSpec::new(1, 2));
    let (open, log) = fixed(40 * 1460, None);
    plain.run(Some(1460 * 30), Time::from_dur(Dur::from_ms(50)), open);
    assert!(log.lock().unwrap().iter().all(|a| a.queue_delay.is_none()));
}

/// A registered transport runs over the link through the same interface: a TCP flow with
/// the default controller delivers every byte, and both ends finish.
#[test]
fn registered_tcp_completes_over_a_link() {
    let cfg = TcpConfig::default();
    let setup = LinkPair::new(LinkSpec::new(10, 1), LinkSpec::new(10, 1));
    let run = setup.run(Some(1_000_000), Time::from_dur(Dur::from_ms(20)), |info| {
        Tcp::open(&cfg, info, &RngTree::new(0))
    });
    assert!(run.completed_at.is_some());
    assert_eq!(run.shared.limit_bytes, 1_000_000);
    let mut r = dcsim_transport::FlowRecord::default();
    Tcp::record(&run.tx, &run.rx, &mut r);
    assert_eq!(r.retransmits, 0);
}

/// One flow of `size` bytes over a 10 Gb/s pair with `delay_us` per link (a round trip of
/// six link delays) with the TCP profile `profile` and the data segments numbered in `lost`
/// (counted from 0) lost once.
fn lossy_run(
    profile: dcsim_transport::TcpProfile,
    delay_us: u64,
    size: u64,
    lost: &[u64],
) -> dcsim_testkit::PairRun<TcpSender, TcpReceiver> {
    let cfg = TcpConfig {
        profile: Some(profile),
        ..TcpConfig::default()
    };
    lossy_run_with(&cfg, delay_us, size, lost)
}

fn lossy_run_with(
    cfg: &TcpConfig,
    delay_us: u64,
    size: u64,
    lost: &[u64],
) -> dcsim_testkit::PairRun<TcpSender, TcpReceiver> {
    LinkPair::new(LinkSpec::new(10, delay_us), LinkSpec::new(10, delay_us))
        .dropping(lost.iter().map(|k| k * 1460))
        .run(Some(size), Time::from_dur(Dur::from_secs(10)), |info| {
            Tcp::open(cfg, info, &RngTree::new(0))
        })
}

/// The `linux` profile with one ACK per segment (no delayed ACKs).
fn linux_one_ack_per_segment() -> TcpConfig {
    TcpConfig {
        profile: Some(dcsim_transport::TcpProfile::Linux),
        delayed_ack: Some(dcsim_transport::tcp::DelayedAck::Off),
        ..TcpConfig::default()
    }
}

/// How many times each data segment (by number) reached the receiver.
fn arrivals(
    run: &dcsim_testkit::PairRun<TcpSender, TcpReceiver>,
) -> std::collections::BTreeMap<u64, u32> {
    let mut n = std::collections::BTreeMap::new();
    for d in run
        .deliveries
        .iter()
        .filter(|d| d.to_receiver && d.packet.payload_bytes > 0)
    {
        *n.entry(d.packet.seq / 1460).or_insert(0) += 1;
    }
    n
}

/// SACK recovery (RFC 6675, with RACK as Linux runs it) repairs every hole of a window in
/// one round trip, with no timeout and no segment sent more often than it was lost;
/// NewReno repairs one hole per round trip.
#[test]
fn sack_recovery_repairs_a_window_of_losses_in_one_round_trip() {
    use dcsim_transport::TcpProfile;
    let lost = [20, 22, 24, 26, 28, 30];
    let linux = lossy_run(TcpProfile::Linux, 2, 200 * 1460, &lost);
    let s = linux.tx.stats();
    assert_eq!((s.timeouts, s.retransmits), (0, lost.len() as u64), "{s:?}");
    let newreno = lossy_run_with(
        &TcpConfig {
            profile: Some(TcpProfile::Linux),
            sack: Some(false),
            rack: Some(false),
            ..TcpConfig::default()
        },
        2,
        200 * 1460,
        &lost,
    );
    let (l, n) = (linux.completed_at.unwrap(), newreno.completed_at.unwrap());
    // Six holes: NewReno needs five more round trips (at least the 12 µs of propagation
    // each) than SACK: measured 69.5 µs.
    assert!(
        n.saturating_since(l) > Dur::from_us(50),
        "sack {l:?}, newreno {n:?}"
    );
}

/// RACK-TLP (RFC 8985 §7, Linux's timing): the last two segments lost, the loss probe two
/// round trips plus 2 ms later resends the last, whose SACK lets RACK mark the other: both
/// repaired long before the retransmission timeout (Linux's is at least 200 ms). One lost
/// last segment waits 200 ms more, as in Linux, which allows for a delayed ACK when one
/// segment is out.
#[test]
fn a_tail_loss_is_repaired_by_the_loss_probe() {
    use dcsim_transport::TcpProfile;
    let run = lossy_run(TcpProfile::Linux, 2, 40 * 1460, &[38, 39]);
    let s = run.tx.stats();
    assert_eq!(
        (s.timeouts, s.loss_probes, s.retransmits),
        (0, 1, 2),
        "{s:?}"
    );
    let done = run.completed_at.expect("completes");
    assert!(done < Time::from_dur(Dur::from_ms(5)), "{done:?}");
    // One ACK per segment, so that the lost segment is the only one out.
    let one = lossy_run_with(&linux_one_ack_per_segment(), 2, 40 * 1460, &[39]);
    let (s, done) = (one.tx.stats(), one.completed_at.expect("completes"));
    assert_eq!((s.timeouts, s.loss_probes), (0, 1), "{s:?}");
    assert!(done > Time::from_dur(Dur::from_ms(200)), "{done:?}");
}

/// RACK's reordering timer as Linux arms it: a segment lost with only two segments after
/// it (too few SACKed to drop the reordering window) is marked lost by the timer, set for
/// its round trip plus the window plus Linux's 2 ms (`tcp_rack_mark_lost`), and resent
/// once, with no timeout and no probe.
#[test]
fn a_hole_with_two_segments_after_it_waits_for_the_reordering_timer() {
    let run = lossy_run_with(&linux_one_ack_per_segment(), 2, 40 * 1460, &[37]);
    let s = run.tx.stats();
    assert_eq!(
        (s.timeouts, s.loss_probes, s.retransmits),
        (0, 0, 1),
        "{s:?}"
    );
    let done = run.completed_at.expect("completes");
    assert!(
        done > Time::from_dur(Dur::from_ms(2)) && done < Time::from_dur(Dur::from_ms(3)),
        "{done:?}"
    );
}

/// Linux restarts the retransmission timer when it resends the oldest data out
/// (`tcp_xmit_retransmit_queue`). A segment lost three times in a row (its first two
/// resends too) holds the cumulative ACK for three round trips while RACK finds each loss;
/// each resend restarts the timer, so the third is acknowledged before it expires. A timer
/// left running from the last cumulative ACK (a round trip plus 200 ms) expires first and
/// sends the rest of the window again (15 segments instead of 3).
#[test]
fn resending_the_oldest_data_restarts_the_retransmission_timer() {
    let run = lossy_run_with(
        &linux_one_ack_per_segment(),
        20_000,
        300 * 1460,
        &[100, 100, 100],
    );
    let s = run.tx.stats();
    assert_eq!((s.timeouts, s.retransmits), (0, 3), "{s:?}");
    assert!(run.completed_at.is_some());
}

/// Linux's delayed ACKs: the first 16 segments are acknowledged one by one (quick ACKs),
/// then every second one; the last segment at once (the flow is complete). With the
/// receive buffer's autotuning every segment that grows `rcv_ssthresh` is acknowledged at
/// once too (`tcp_grow_window`), so more go one by one.
#[test]
fn linux_acks_quickly_then_every_second_segment() {
    use dcsim_transport::TcpProfile;
    let acks_of = |autotune: bool| {
        let cfg = TcpConfig {
            profile: Some(TcpProfile::Linux),
            rcv_autotune: Some(autotune),
            ..TcpConfig::default()
        };
        let run = lossy_run_with(&cfg, 2, 100 * 1460, &[]);
        let s = run.tx.stats();
        assert_eq!((s.timeouts, s.retransmits), (0, 0), "{s:?}");
        run.deliveries
            .iter()
            .filter(|d| !d.to_receiver && d.packet.payload_bytes == 0 && d.packet.ack > 0)
            .count()
    };
    assert_eq!(acks_of(false), 16 + 84 / 2, "ACKs of 100 segments");
    let tuned = acks_of(true);
    assert!(
        tuned > 16 + 84 / 2 && tuned <= 100,
        "{tuned} ACKs of 100 segments"
    );
}

/// A receive buffer of 20 segments advertises 10 (half of it): at most 10 segments are
/// ever unacknowledged, so 200 segments over a 400 µs round trip take at least 20 round
/// trips, and the sender reports being held by the receiver's window.
#[test]
fn the_receive_window_bounds_what_is_in_flight() {
    use dcsim_transport::TcpProfile;
    let cfg = TcpConfig {
        profile: Some(TcpProfile::Linux),
        rcv_buf: Some(dcsim_engine::ByteSize(20 * 1460)),
        rcv_autotune: Some(false),
        ..TcpConfig::default()
    };
    let run = lossy_run_with(&cfg, 100, 200 * 1460, &[]);
    let mut out = 0i64;
    let mut most = 0;
    let mut acked = 0u64;
    let mut sent = 0u64;
    for d in &run.deliveries {
        // Segments reach the receiver in order, ACKs the sender in order: what has arrived
        // minus what has been acknowledged bounds what the sender had out.
        if d.to_receiver && d.packet.payload_bytes > 0 {
            sent = sent.max(d.packet.seq + u64::from(d.packet.payload_bytes));
        } else if !d.to_receiver {
            acked = acked.max(d.packet.ack);
        }
        out = (sent - acked.min(sent)) as i64;
        most = most.max(out);
    }
    assert!(out >= 0 && most <= 10 * 1460, "{most} bytes out");
    let done = run.completed_at.expect("completes");
    assert!(done > Time::from_dur(Dur::from_ms(8)), "{done:?}");
    assert!(run.tx.stats().rwnd_limited > 0);
    let free = lossy_run(TcpProfile::Linux, 100, 200 * 1460, &[]);
    assert!(free.completed_at.expect("completes") < done);
}

/// What a sender had out at most (segments reach the receiver and ACKs the sender in
/// order), within `first` of the first data's arrival and over the whole run.
fn most_out(run: &dcsim_testkit::PairRun<TcpSender, TcpReceiver>, first: Dur) -> (u64, u64) {
    let (mut sent, mut acked, mut early, mut most) = (0u64, 0u64, 0u64, 0u64);
    let start = run
        .deliveries
        .iter()
        .find(|d| d.to_receiver && d.packet.payload_bytes > 0)
        .map_or(Time::ZERO, |d| d.at);
    let until = start + first;
    for d in &run.deliveries {
        if d.to_receiver && d.packet.payload_bytes > 0 {
            sent = sent.max(d.packet.seq + u64::from(d.packet.payload_bytes));
        } else if !d.to_receiver {
            acked = acked.max(d.packet.ack);
        }
        let out = sent - acked.min(sent);
        most = most.max(out);
        if d.at < until {
            early = early.max(out);
        }
    }
    (early, most)
}

/// Linux's autotuning: the window starts at the SYN-ACK's 64 KiB and the buffer at
/// 128 KiB, and grows once per round trip to what the data read asks. Over a 200 µs round
/// trip at 10 Gb/s (250 KB in flight), with an initial window of 100 segments, the sender
/// is held by the receiver's window at first, has more than the first buffer out later,
/// and finishes after a sender with a large fixed buffer.
#[test]
fn the_autotuned_window_starts_small_and_grows_with_what_is_read() {
    use dcsim_transport::TcpProfile;
    let cfg = |autotune: bool| TcpConfig {
        profile: Some(TcpProfile::Linux),
        init_cwnd_pkts: Some(100),
        rcv_buf: Some(dcsim_engine::ByteSize(64 << 20)),
        rcv_autotune: Some(autotune),
        ..TcpConfig::default()
    };
    let tuned = lossy_run_with(&cfg(true), 100, 4000 * 1460, &[]);
    let (early, most) = most_out(&tuned, Dur::from_us(400));
    assert!(
        early <= 65_536,
        "{early} bytes out in the first two round trips of data"
    );
    assert!(most > 256 * 1024, "{most} bytes out at most");
    assert!(tuned.tx.stats().rwnd_limited > 0);
    let fixed = lossy_run_with(&cfg(false), 100, 4000 * 1460, &[]);
    let (early_fixed, _) = most_out(&fixed, Dur::from_us(400));
    assert!(early_fixed > early, "{early_fixed} against {early}");
    let done =
        |r: &dcsim_testkit::PairRun<TcpSender, TcpReceiver>| r.completed_at.expect("completes");
    assert!(
        done(&fixed) < done(&tuned),
        "{:?} against {:?}",
        done(&fixed),
        done(&tuned)
    );
}

/// A send buffer of 12 segments: at most 12 segments are ever unacknowledged, so 200
/// segments take at least 16 round trips of 400 µs, and the sender reports being held by
/// its buffer, not the receiver's window.
#[test]
fn the_send_buffer_bounds_what_is_unacknowledged() {
    use dcsim_transport::TcpProfile;
    let cfg = TcpConfig {
        profile: Some(TcpProfile::Linux),
        snd_buf: Some(dcsim_engine::ByteSize(12 * 1460)),
        ..TcpConfig::default()
    };
    let run = lossy_run_with(&cfg, 100, 200 * 1460, &[]);
    let (_, most) = most_out(&run, Dur::ZERO);
    assert!(most <= 12 * 1460 && most > 10 * 1460, "{most} bytes out");
    let done = run.completed_at.expect("completes");
    assert!(done > Time::from_dur(Dur::from_us(16 * 400)), "{done:?}");
    let st = run.tx.stats();
    assert!(st.sndbuf_limited > 0 && st.rwnd_limited == 0, "{st:?}");
}

/// `snd_buf_overhead`: the send buffer is memory, each segment charged its payload and the
/// overhead until it is SACKed, then its payload only (Linux merges SACKed buffers). A
/// buffer of 12 segments' memory with a hole that takes a round trip to repair: while the
/// receiver SACKs what follows the hole, the sender has more than 12 segments out; counted
/// in payload (no overhead), never more than 12.
#[test]
fn a_send_buffer_with_overhead_charges_sacked_segments_their_payload_only() {
    use dcsim_transport::TcpProfile;
    let most_out_with = |cfg: &TcpConfig| {
        let run = lossy_run_with(cfg, 100, 200 * 1460, &[30]);
        assert!(run.completed_at.is_some());
        most_out(&run, Dur::ZERO).1
    };
    let payload = TcpConfig {
        profile: Some(TcpProfile::Linux),
        snd_buf: Some(dcsim_engine::ByteSize(12 * 1460)),
        ..TcpConfig::default()
    };
    let memory = TcpConfig {
        snd_buf: Some(dcsim_engine::ByteSize(12 * 2920)),
        snd_buf_overhead: Some(dcsim_engine::ByteSize(1460)),
        ..payload.clone()
    };
    let plain = most_out_with(&payload);
    assert!(plain <= 12 * 1460, "{plain} bytes out");
    let merged = most_out_with(&memory);
    assert!(
        merged > 14 * 1460 && merged < 24 * 1460,
        "{merged} bytes out"
    );
}

/// The two keys that depend on another name it in their error: TCP small queues hold a
/// sender that waits for its NIC, and a buffer's overhead needs the buffer.
#[test]
fn small_queues_and_the_buffer_overhead_need_the_key_they_depend_on() {
    use dcsim_transport::TcpProfile;
    let linux = TcpConfig {
        profile: Some(TcpProfile::Linux),
        ..TcpConfig::default()
    };
    assert!(linux.validate().is_ok());
    // Off with back-pressure in `linux`, unless asked for.
    let no_wait = TcpConfig {
        host_backpressure: Some(false),
        ..linux.clone()
    };
    assert!(no_wait.validate().is_ok());
    assert_eq!(no_wait.resolve().small_queues, Some(false));
    let e = TcpConfig {
        small_queues: Some(true),
        ..no_wait
    }
    .validate()
    .unwrap_err();
    assert!(
        e.starts_with("small_queues: needs host_backpressure"),
        "{e}"
    );
    let e = TcpConfig {
        snd_buf_overhead: Some(dcsim_engine::ByteSize(1845)),
        ..linux
    }
    .validate()
    .unwrap_err();
    assert!(e.starts_with("snd_buf_overhead: needs snd_buf"), "{e}");
}

/// After a timeout the sender resends only what the receiver lacks: segments the SACK
/// blocks reported are skipped, with NewReno (`simple`) as with the scoreboard (`linux`).
/// ns-2's FullTcp/Sack clears its scoreboard on a timeout and resends them (`ns2`).
#[test]
fn a_timeout_resends_only_what_the_receiver_lacks() {
    use dcsim_transport::TcpProfile;
    // Nine holes around a delivered segment, on a 300 µs round trip: NewReno's one hole
    // per round trip outlasts its 1 ms timer.
    let lost: Vec<u64> = (20..30).filter(|&k| k != 25).collect();
    for profile in [TcpProfile::Simple, TcpProfile::Linux] {
        let run = lossy_run(profile, 50, 100 * 1460, &lost);
        assert!(run.completed_at.is_some());
        let n = arrivals(&run);
        // Segment 25 and everything from 30 on reached the receiver once: the SACK blocks
        // reported them, and no timeout resent them. (A hole's retransmission in flight
        // when the timer fires is sent again: the receiver did lack it then.)
        let twice: Vec<u64> = n
            .iter()
            .filter(|(k, c)| **c > 1 && (**k == 25 || **k >= 30))
            .map(|(k, _)| *k)
            .collect();
        assert!(
            twice.is_empty(),
            "{profile:?}: SACKed segments sent again {twice:?}, {:?}",
            run.tx.stats()
        );
    }
    let simple = lossy_run(TcpProfile::Simple, 50, 100 * 1460, &lost);
    assert!(simple.tx.stats().timeouts >= 1, "{:?}", simple.tx.stats());
    // ns-2 clears its scoreboard on a timeout and resends what the receiver holds.
    let ns2 = lossy_run(TcpProfile::Ns2, 50, 100 * 1460, &lost);
    assert!(ns2.completed_at.is_some());
}

/// `stack_jitter`: the sender answers each ACK after a random delay of at most the
/// jitter: the flow takes longer, by at most one jitter per ACK-clocked send, and the same
/// seed gives the same run.
#[test]
fn stack_jitter_delays_answers_to_acks_within_its_bound() {
    use dcsim_transport::TcpProfile;
    let cfg = |us| TcpConfig {
        profile: Some(TcpProfile::Linux),
        delayed_ack: Some(dcsim_transport::tcp::DelayedAck::Off),
        stack_jitter: Dur::from_us(us),
        ..TcpConfig::default()
    };
    let plain = lossy_run_with(&cfg(0), 2, 50 * 1460, &[]);
    let noisy = lossy_run_with(&cfg(20), 2, 50 * 1460, &[]);
    let again = lossy_run_with(&cfg(20), 2, 50 * 1460, &[]);
    let (p, n) = (plain.completed_at.unwrap(), noisy.completed_at.unwrap());
    assert!(n > p, "{n:?} {p:?}");
    // 50 segments, 49 ACKs at most, each answer at most 20 µs late.
    assert!(
        n.saturating_since(p) <= Dur::from_us(20 * 49),
        "{n:?} {p:?}"
    );
    assert_eq!(noisy.completed_at, again.completed_at);
    let times = |r: &dcsim_testkit::PairRun<TcpSender, TcpReceiver>| {
        r.deliveries.iter().map(|d| d.at).collect::<Vec<_>>()
    };
    assert_eq!(times(&noisy), times(&again));
}

/// `app_write`: an application that writes 64 KiB at a time (45 segments of 1,448 B and
/// 376 B) into a send buffer that holds it back tops up the unsent last buffer by 376 B a
/// write, and about every fourth write that buffer holds a whole segment, which leaves as
/// a super-packet of its own (Nagle keeps back only less than a segment): the kernel
/// twin's senders do the same. Writing everything at once, none.
#[test]
fn an_application_writing_64_kib_into_a_full_send_buffer_sends_lone_segments() {
    use dcsim_transport::TcpProfile;
    const MSS: u64 = 1448;
    let cfg = |app_write: Option<u64>| TcpConfig {
        profile: Some(TcpProfile::Linux),
        mss: dcsim_engine::ByteSize(MSS),
        gso: Some(dcsim_engine::ByteSize(64 << 10)),
        snd_buf: Some(dcsim_engine::ByteSize(200 * MSS)),
        app_write: app_write.map(dcsim_engine::ByteSize),
        ..TcpConfig::default()
    };
    let size = 6000 * MSS;
    let pieces = |run: &dcsim_testkit::PairRun<TcpSender, TcpReceiver>| {
        let data: Vec<u64> = run
            .deliveries
            .iter()
            .filter(|d| d.to_receiver && d.packet.payload_bytes > 0)
            .map(|d| u64::from(d.packet.payload_bytes))
            .collect();
        assert_eq!(data.iter().sum::<u64>(), size, "each byte once");
        data
    };
    let writes = lossy_run_with(&cfg(Some(65_536)), 100, size, &[]);
    assert!(writes.completed_at.is_some());
    let data = pieces(&writes);
    assert!(data[..data.len() - 1].iter().all(|l| l % MSS == 0));
    let lone = data.iter().filter(|&&l| l == MSS).count() as f64;
    let full = data.iter().filter(|&&l| l == 45 * MSS).count() as f64;
    // 376 B a write: a whole segment every 3.85 writes of 45 segments.
    assert!(
        (0.2..0.32).contains(&(lone / full)),
        "{lone} lone segments, {full} full"
    );
    let at_once = lossy_run_with(&cfg(None), 100, size, &[]);
    let lone_at_once = pieces(&at_once).iter().filter(|&&l| l == MSS).count();
    assert_eq!(lone_at_once, 0);
}

/// `gso`: the sender builds super-packets of whole segments up to 64 KiB less Linux's
/// header room (44 segments of 1,460 B), each crossing the network as one packet and
/// acknowledged by one ACK; a lost one is repaired without a timeout, sent again whole or
/// in parts that the window holds, and nothing else is sent twice.
#[test]
fn gso_sends_super_packets_that_are_acknowledged_and_repaired_whole() {
    use dcsim_transport::TcpProfile;
    let cfg = TcpConfig {
        profile: Some(TcpProfile::Linux),
        gso: Some(dcsim_engine::ByteSize(64 << 10)),
        ..TcpConfig::default()
    };
    let size = 2000 * 1460;
    let run = lossy_run_with(&cfg, 2, size, &[]);
    assert!(run.completed_at.is_some());
    let data: Vec<_> = run
        .deliveries
        .iter()
        .filter(|d| d.to_receiver && d.packet.payload_bytes > 0)
        .map(|d| (d.packet.seq, u64::from(d.packet.payload_bytes)))
        .collect();
    let acks = run.deliveries.iter().filter(|d| !d.to_receiver).count();
    let largest = data.iter().map(|d| d.1).max().unwrap();
    assert_eq!(largest, 44 * 1460, "the largest super-packet");
    // Linux's `tcp_cwnd_test` gives one super-packet at most half the window: the
    // initial window of 10 leaves as two of 5.
    assert_eq!(&data[..2], &[(0, 5 * 1460), (5 * 1460, 5 * 1460)]);
    assert!(data.iter().all(|&(s, l)| l % 1460 == 0 || s + l == size));
    assert_eq!(
        data.iter().map(|d| d.1).sum::<u64>(),
        size,
        "each byte once"
    );
    assert!(data.len() < 2000 / 10, "{} packets", data.len());
    // One ACK per super-packet (each is more than one full segment), and the handshake's.
    assert!(
        acks <= data.len() + 2,
        "{acks} ACKs for {} packets",
        data.len()
    );

    // Lose the tenth super-packet once.
    let (seq, len) = data[9];
    let lossy = lossy_run_with(&cfg, 2, size, &[seq / 1460]);
    assert!(lossy.completed_at.is_some());
    let st = lossy.tx.stats();
    assert_eq!(st.timeouts, 0, "{st:?}");
    // Counted in segments, as Linux's `total_retrans`: those of the lost super-packet.
    assert_eq!(
        st.retransmits,
        len.div_ceil(1460),
        "the super-packet was lost and sent again: {st:?}"
    );
    let mut twice = 0;
    let mut seen = std::collections::BTreeSet::new();
    for d in lossy
        .deliveries
        .iter()
        .filter(|d| d.to_receiver && d.packet.payload_bytes > 0)
    {
        for k in 0..u64::from(d.packet.payload_bytes).div_ceil(1460) {
            if !seen.insert(d.packet.seq + k * 1460) {
                twice += 1;
            }
        }
    }
    assert_eq!(twice, 0, "only the lost super-packet goes again ({len} B)");
    assert_eq!(seen.len() as u64, 2000);
}

/// Linux starts a recovery whenever data is marked lost and not yet delivered
/// (`tcp_time_to_recover`), so a recovery that ends while a loss among the data sent during
/// it is still being repaired starts the next at once, with its own reduction. Reno, one
/// ACK per segment: segment 300 lost twice keeps the first recovery open for three round
/// trips; segment 520, sent during it, is lost too and resent before it ends. One loss
/// episode halves the window once (171 segments at the end of 3,000), the chained one
/// twice (about 100); without the rule the second loss was repaired with no reduction.
#[test]
fn a_recovery_that_ends_with_a_loss_outstanding_starts_another() {
    let cfg = TcpConfig {
        cc: CcSpec::Reno(Default::default()),
        ..linux_one_ack_per_segment()
    };
    let once = lossy_run_with(&cfg, 20, 3000 * 1460, &[300, 300]);
    let chained = lossy_run_with(&cfg, 20, 3000 * 1460, &[300, 300, 520]);
    let (a, b) = (
        once.tx.cc().cwnd_bytes() / 1460,
        chained.tx.cc().cwnd_bytes() / 1460,
    );
    assert!((160..=180).contains(&a), "one reduction: {a} segments");
    assert!((90..=110).contains(&b), "two reductions: {b} segments");
    for run in [&once, &chained] {
        assert_eq!(run.tx.stats().timeouts, 0);
        assert!(run.completed_at.is_some());
    }
}
