//! Packet traces opened by tshark (Wireshark's command-line form): its TCP analysis works
//! on them (round-trip times, retransmissions), nothing is malformed, and the Lua
//! dissector of tools/wireshark reads the UDP header. The two tests that run tshark are
//! ignored by `cargo test` (reported as such, never passed without tshark); CI installs
//! tshark and runs them with `cargo test -p dcsim-cli --test cli -- --ignored trace::`.

use std::path::Path;
use std::process::Command;

use super::{dcsim, tmp, write};

/// tshark's output for `args` (a test that calls it fails where tshark cannot run).
fn tshark(args: &[&str]) -> String {
    let o = Command::new("tshark")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("tshark cannot run ({e}): install Wireshark's tshark"));
    assert!(
        o.status.success(),
        "tshark {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn count(file: &Path, filter: &str) -> usize {
    tshark(&["-r", file.to_str().unwrap(), "-Y", filter])
        .lines()
        .count()
}

/// Two Reno flows through an 8-packet drop-tail bottleneck: losses, fast retransmits and
/// recovery, all of it visible to Wireshark's TCP analysis.
const LOSSY: &str = r#"
[sim]
seed = 3
[topology]
kind = "dumbbell"
pairs = 2
host_link = { rate = "10Gbps", delay = "2us" }
bottleneck = { rate = "10Gbps", delay = "1us" }
[queue]
kind = "droptail"
buffer = "8pkts"
[transport]
kind = "tcp"
cc = "reno"
[[flows]]
src = 0
dst = 2
size = "2MB"
[[flows]]
src = 1
dst = 3
size = "2MB"
[output.trace]
hosts = [0]
"#;

#[test]
#[ignore = "needs tshark: cargo test -p dcsim-cli --test cli -- --ignored trace::"]
fn tshark_analyses_tcp_in_a_trace() {
    let dir = tmp("trace-tcp");
    let d = dir.path();
    let f = write(d, LOSSY);
    let out = d.join("out");
    let o = dcsim(&["run", &f, "--out", out.to_str().unwrap(), "--quiet"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let pcap = out.join("trace-h0.pcap");
    let rtts = tshark(&[
        "-r",
        pcap.to_str().unwrap(),
        "-T",
        "fields",
        "-e",
        "tcp.analysis.ack_rtt",
    ]);
    let rtts: Vec<f64> = rtts.lines().filter_map(|l| l.parse().ok()).collect();
    // Propagation 2 x (2 + 1 + 2) us plus three serializations of a full frame (3.7 us):
    // no RTT can be shorter; with 8 packets of queue none is much longer than 30 us, but
    // a segment acknowledged only after recovery waits longer.
    assert!(rtts.len() > 500, "{} RTT samples", rtts.len());
    let min = rtts.iter().copied().fold(f64::MAX, f64::min);
    assert!((13.6e-6..13.9e-6).contains(&min), "shortest RTT {min}");
    assert_eq!(count(&pcap, "_ws.malformed"), 0);
    // Every retransmission of flow 0 is one Wireshark flags: as a retransmission, or, when
    // it follows the original within an RTT (NewReno's partial-ACK repairs), as
    // out-of-order.
    let flows = std::fs::read_to_string(out.join("flows.csv")).unwrap();
    let header: Vec<&str> = flows.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|c| *c == "retransmits").unwrap();
    let ours: usize = flows
        .lines()
        .nth(1)
        .unwrap()
        .split(',')
        .nth(col)
        .unwrap()
        .parse()
        .unwrap();
    assert!(ours > 10, "the test needs losses: {ours} retransmissions");
    let theirs = count(
        &pcap,
        "tcp.analysis.retransmission || tcp.analysis.out_of_order",
    );
    assert_eq!(theirs, ours);
}

#[test]
#[ignore = "needs tshark: cargo test -p dcsim-cli --test cli -- --ignored trace::"]
fn the_lua_dissector_reads_expresspass_packets() {
    let dir = tmp("trace-xpass");
    let d = dir.path();
    let f = write(
        d,
        r#"
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
size = "146KB"
[output.trace]
hosts = [1]
"#,
    );
    let out = d.join("out");
    let o = dcsim(&["run", &f, "--out", out.to_str().unwrap(), "--quiet"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lua = super::root().join("tools/wireshark/dcsim.lua");
    let fields = tshark(&[
        "-X",
        &format!("lua_script:{}", lua.display()),
        "-r",
        out.join("trace-h1.pcap").to_str().unwrap(),
        "-T",
        "fields",
        "-e",
        "dcsim.class",
        "-e",
        "dcsim.flow",
        "-e",
        "dcsim.payload",
    ]);
    // 146 KB is 100 full packets: 100 data packets arrive carrying 146,000 bytes, and the
    // receiver sends at least as many credits.
    let (mut data, mut bytes, mut credits) = (0, 0u64, 0);
    for l in fields.lines() {
        let v: Vec<&str> = l.split('\t').collect();
        assert_eq!(v[1], "0", "flow 0: {l}");
        match v[0] {
            "0" => {
                data += 1;
                bytes += v[2].parse::<u64>().unwrap();
            }
            "2" => credits += 1,
            _ => {}
        }
    }
    assert_eq!((data, bytes), (100, 146_000));
    assert!(credits >= 100, "{credits} credits");
}

/// A packet trace is written once whatever the format of the tables; the event log is a
/// table, in the format asked for (both files with `both`).
#[test]
fn traces_and_the_event_log_are_written_in_every_format() {
    let dir = tmp("trace-formats");
    let d = dir.path();
    let f = write(
        d,
        "[topology]\nkind = \"dumbbell\"\npairs = 1\n[[flows]]\nsrc = 0\ndst = 1\nsize = \"100KB\"\n\
         [output.trace]\nhosts = [0]\n[output.events]\nflows = \"all\"\n",
    );
    for format in ["csv", "parquet", "both"] {
        let out = d.join(format);
        let o = dcsim(&[
            "run",
            &f,
            "--out",
            out.to_str().unwrap(),
            "--quiet",
            "--format",
            format,
        ]);
        assert!(
            o.status.success(),
            "{format}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let (csv, parquet) = (format != "parquet", format != "csv");
        for (file, wanted) in [
            ("trace-h0.pcap", true),
            ("events.csv", csv),
            ("events.parquet", parquet),
        ] {
            let len = std::fs::metadata(out.join(file))
                .map(|m| m.len())
                .unwrap_or(0);
            assert_eq!(len > 100, wanted, "{format}: {file} has {len} bytes");
        }
        let manifest = std::fs::read_to_string(out.join("manifest.json")).unwrap();
        assert_eq!(
            manifest.matches("trace-h0.pcap").count(),
            1,
            "{format}: {manifest}"
        );
    }
}
