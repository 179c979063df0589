//! Packet traces (`[output.trace]`): read back with a pcap library and a packet parser, and
//! checked against the run's own counters.

use std::path::Path;

use etherparse::{Ethernet2Header, Ipv4Header, TcpHeader, UdpHeader};
use pcap_file::pcap::PcapReader;

use crate::run_text;

/// Two DCTCP flows of 600 KB across a dumbbell whose bottleneck marks at 20 packets, run
/// to the end (so every packet sent has arrived), with `trace` appended.
pub(crate) fn dumbbell(trace: &str) -> String {
    format!(
        r#"
[sim]
seed = 3
[topology]
kind = "dumbbell"
pairs = 2
host_link = {{ rate = "10Gbps", delay = "2us" }}
bottleneck = {{ rate = "10Gbps", delay = "1us" }}
[queue]
kind = "ecn"
buffer = "100pkts"
mark_threshold = "20pkts"
[transport]
kind = "tcp"
cc = "dctcp"
[[flows]]
src = 0
dst = 2
size = "600KB"
[[flows]]
src = 1
dst = 3
size = "600KB"
start = "10us"
{trace}
"#
    )
}

/// One record: time in ns, captured bytes, frame length.
pub(crate) struct Record {
    ns: u64,
    data: Vec<u8>,
    orig_len: u32,
}

pub(crate) fn read(dir: &Path, name: &str) -> Vec<Record> {
    let f = std::fs::File::open(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut r = PcapReader::new(f).unwrap();
    assert_eq!(r.header().datalink, pcap_file::DataLink::ETHERNET);
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.unwrap();
        out.push(Record {
            ns: p.timestamp.as_nanos() as u64,
            data: p.data.into_owned(),
            orig_len: p.orig_len,
        });
    }
    out
}

/// What a record holds: source and destination host (from 10.0.0.h+1), the ECN field, and
/// the TCP segment's payload length, SYN, ECE flags, sequence and ACK numbers.
#[derive(Debug)]
pub(crate) struct Seg {
    pub(crate) src: u8,
    pub(crate) dst: u8,
    pub(crate) ecn: u8,
    len: u32,
    ece: bool,
    seq: u32,
    ack: u32,
}

pub(crate) fn parse(r: &Record) -> Seg {
    let (ip, tcp) = headers(r);
    let Some(t) = tcp else { panic!("not TCP") };
    Seg {
        src: ip.source[3] - 1,
        dst: ip.destination[3] - 1,
        ecn: ip.ecn.value(),
        len: u32::from(ip.total_len) - 40,
        ece: t.ece,
        seq: t.sequence_number,
        ack: t.acknowledgment_number,
    }
}

/// The IPv4 header (checked: checksum, frame length) and the TCP header if it is TCP; the
/// trace holds headers only, so each is parsed on its own.
fn headers(r: &Record) -> (Ipv4Header, Option<TcpHeader>) {
    let (eth, rest) = Ethernet2Header::from_slice(&r.data).unwrap();
    assert_eq!(eth.ether_type, etherparse::EtherType::IPV4);
    let (ip, rest) = Ipv4Header::from_slice(rest).unwrap();
    assert_eq!(ip.calc_header_checksum(), ip.header_checksum, "IP checksum");
    assert_eq!((u32::from(ip.total_len) + 14).max(60), r.orig_len);
    let tcp =
        (ip.protocol == etherparse::IpNumber::TCP).then(|| TcpHeader::from_slice(rest).unwrap().0);
    (ip, tcp)
}

fn port_stat(r: &dcsim::Results, label: &str) -> dcsim::metrics::PortRow {
    r.ports
        .iter()
        .find(|p| format!("{}->{}", p.node, p.peer) == label)
        .unwrap_or_else(|| panic!("no port {label}"))
        .clone()
}

#[test]
fn host_and_port_traces_match_the_runs_counters() {
    let (_, r) = run_text(&dumbbell(
        "[output.trace]\nhosts = [0]\nports = [\"left->right\"]\n",
    ));
    let dir = tempfile::tempdir().unwrap();
    r.write(dir.path()).unwrap();
    let host = read(dir.path(), "trace-h0.pcap");
    let port = read(dir.path(), "trace-left-to-right.pcap");
    for recs in [&host, &port] {
        assert!(recs.windows(2).all(|w| w[0].ns <= w[1].ns), "time order");
    }
    let segs: Vec<Seg> = host.iter().map(parse).collect();
    let sent: Vec<&Seg> = segs.iter().filter(|s| s.src == 0).collect();
    let received: Vec<&Seg> = segs.iter().filter(|s| s.dst == 0).collect();
    assert_eq!(
        sent.len() + received.len(),
        segs.len(),
        "every packet is h0's"
    );
    // Host 0's NIC sent what its trace shows as sent, its edge switch delivered the rest.
    assert_eq!(sent.len() as u64, port_stat(&r, "h0->left").tx_pkts);
    assert_eq!(received.len() as u64, port_stat(&r, "left->h0").tx_pkts);
    // Data: every byte of the flow at least once, sequence numbers from 0; ACKs from h2,
    // the last one acknowledging all 600 KB.
    let flow0 = &r.flows().unwrap()[0];
    let payload: u64 = sent.iter().map(|s| u64::from(s.len)).sum();
    assert!(payload >= 600_000, "{payload}");
    assert_eq!(sent.iter().map(|s| s.seq).min(), Some(0));
    assert!(received.iter().all(|s| s.src == 2 && s.len == 0));
    assert_eq!(received.iter().map(|s| s.ack).max(), Some(600_000));
    assert!(flow0.end_ns.is_some());
    // The bottleneck is the only marking port: its trace shows every CE mark it made
    // (ECT(0) = 2, CE = 3), and h0 saw them echoed.
    let ps: Vec<Seg> = port.iter().map(parse).collect();
    let ce = ps.iter().filter(|s| s.ecn == 3).count() as u64;
    let marks = port_stat(&r, "left->right").ecn_marks;
    assert!(marks > 0, "the test must exercise marking");
    assert_eq!(ce, marks);
    assert!(ps.iter().all(|s| s.ecn == 2 || s.ecn == 3));
    assert!(received.iter().any(|s| s.ece));
    assert_eq!(
        r.summary["packet_traces"][0]["packets"].as_u64(),
        Some(host.len() as u64)
    );
}

#[test]
fn a_port_that_releases_at_the_start_stamps_each_packet_when_it_started() {
    // Host 1's flow starts at 10 us on an idle NIC: its first packet starts then, on a
    // wire and with htb's release alike. Each later one starts when the one before it
    // has been serialized, so the stamps are one transmission time apart at 10 Gb/s.
    for ports in ["", "[ports]\nrelease = \"start\"\n"] {
        let (_, r) = run_text(&dumbbell(&format!("{ports}[output.trace]\nhosts = [1]\n")));
        let dir = tempfile::tempdir().unwrap();
        r.write(dir.path()).unwrap();
        let sent: Vec<(u64, Seg)> = read(dir.path(), "trace-h1.pcap")
            .iter()
            .map(|rec| (rec.ns, parse(rec)))
            .filter(|(_, s)| s.src == 1)
            .collect();
        assert_eq!(sent[0].0, 10_000, "{ports:?}");
        // 1,460 B of payload, 1,538 B on the wire: 1,230.4 ns at 10 Gb/s.
        assert_eq!(sent[1].0 - sent[0].0, 1_230, "{ports:?}");
        assert!(
            sent.windows(2).all(|w| w[0].1.seq < w[1].1.seq),
            "{ports:?}"
        );
    }
}

#[test]
fn a_trace_changes_no_other_output_and_is_reproducible() {
    let (_, plain) = run_text(&dumbbell(""));
    let spec = "[output.trace]\nhosts = [0, 3]\n";
    let (_, a) = run_text(&dumbbell(spec));
    let (_, b) = run_text(&dumbbell(spec));
    assert_eq!(plain.digest(), a.digest());
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    a.write(da.path()).unwrap();
    b.write(db.path()).unwrap();
    for f in ["trace-h0.pcap", "trace-h3.pcap"] {
        let (x, y) = (
            std::fs::read(da.path().join(f)).unwrap(),
            std::fs::read(db.path().join(f)).unwrap(),
        );
        assert!(x.len() > 1000);
        assert!(x == y, "{f} differs between runs");
    }
}

#[test]
fn filters_keep_only_the_flows_and_time_asked_for_and_the_size_is_bounded() {
    let (_, r) = run_text(&dumbbell(
        "[output.trace]\nports = [\"left->right\"]\nflows = [1]\nstart = \"100us\"\nend = \"200us\"\n",
    ));
    let dir = tempfile::tempdir().unwrap();
    r.write(dir.path()).unwrap();
    let recs = read(dir.path(), "trace-left-to-right.pcap");
    assert!(!recs.is_empty());
    for rec in &recs {
        assert!((100_000..200_000).contains(&rec.ns), "{}", rec.ns);
        assert_eq!(parse(rec).src, 1, "only flow 1 (h1 -> h3)");
    }

    let (_, r) = run_text(&dumbbell(
        "[output.trace]\nhosts = [0]\nmax_bytes = \"20KB\"\n",
    ));
    let dir = tempfile::tempdir().unwrap();
    r.write(dir.path()).unwrap();
    let size = std::fs::metadata(dir.path().join("trace-h0.pcap"))
        .unwrap()
        .len();
    let t = &r.summary["packet_traces"][0];
    assert!(size <= 20_000 && size > 19_000, "{size}");
    assert_eq!(t["bytes"].as_u64(), Some(size));
    assert!(t["packets_over_max_bytes"].as_u64().unwrap() > 100, "{t}");
}

#[test]
fn expresspass_packets_are_udp_with_the_generic_header() {
    let (_, r) = run_text(
        r#"
[sim]
seed = 1
[topology]
kind = "dumbbell"
pairs = 1
[queue]
kind = "credit-shaper"
[nic]
kind = "credit-shaper"
inner = { kind = "droptail", buffer = "1538000B" }
[transport]
kind = "expresspass"
[[flows]]
src = 0
dst = 1
size = "100KB"
[output.trace]
hosts = [0]
"#,
    );
    let dir = tempfile::tempdir().unwrap();
    r.write(dir.path()).unwrap();
    let recs = read(dir.path(), "trace-h0.pcap");
    let mut kinds = [0u32; 3];
    for rec in &recs {
        let (ip, tcp) = headers(rec);
        assert!(tcp.is_none() && ip.protocol == etherparse::IpNumber::UDP);
        let (_, g) = UdpHeader::from_slice(&rec.data[34..]).unwrap();
        assert_eq!(g.len(), dcsim::trace::UDP_HEADER_BYTES);
        assert_eq!(u32::from_be_bytes(g[2..6].try_into().unwrap()), 0, "flow 0");
        kinds[g[0] as usize] += 1;
    }
    // Data packets out, credits in, a request and a stop.
    assert!(
        kinds[0] >= 69 && kinds[2] >= 69 && kinds[1] >= 2,
        "{kinds:?}"
    );
}
