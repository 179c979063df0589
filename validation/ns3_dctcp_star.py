#!/usr/bin/env python3
"""DCTCP on a star, ns-3.44's TcpDctcp beside dcsim's `linux` TCP profile, side by side.

N long DCTCP flows from N senders into one receiver through one switch, whose port to the
receiver marks ECN at K (a step: RED with weight 1, thresholds K and K + 1, probability
1); every link at one rate with 25 us of delay (base RTT 100 us). The set-ups of
docs/protocols/tcp.md's table: N = 2, 8, 32 at 10 Gb/s (K = 65, the DCTCP paper's) and
N = 2, 8, 32 at 1 Gb/s (K = 20, the paper's 1 Gb/s value). Flow i starts at i x 1 ms;
the queue is sampled every 10 us from 100 ms to the end (300 ms).

ns-3 is set as the comparison needs it: one ACK per segment, no SACK or timestamps,
minimum RTO 1 ms, initial window 10, fixed buffers of 64 MB; dcsim's `linux` profile is
given the same (`sack = false`, `delayed_ack = false`, `min_rto = "1ms"`, `rcv_buf =
"64MiB"`, `rcv_autotune = false`).

    python3 -m venv /tmp/ns3venv && /tmp/ns3venv/bin/pip install ns3   # ns-3.44, PyPI
    /tmp/ns3venv/bin/python validation/ns3_dctcp_star.py [--dcsim target/ci/dcsim]
        [--quick] [--json out.json]

It prints a Markdown table with the targets (queue mean within 5 % of ns-3's, 1st and
99th percentiles within 5 packets). `--quick` runs N = 2 and 8 at 1 Gb/s only. One
10 Gb/s ns-3 run takes about a minute here; dcsim's, well under a second.
"""

from __future__ import annotations

import argparse
import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ns3_dctcp_dumbbell import configure_dctcp  # noqa: E402 (the same ns-3 settings)

HERE = Path(__file__).resolve().parent
PKT = 1538  # wire bytes of a 1460-byte segment, as dcsim counts the queue
BUFFER_PKTS = 1000
RUN_S = 0.3
WARMUP_S = 0.1
SAMPLE_S = 10e-6
DELAY_US = 25
STAGGER_S = 0.001


def run_ns3(n: int, gbps: int, k: int) -> dict:
    """ns-3.44: N BulkSend flows into one PacketSink host through one router."""
    from ns import ns  # noqa: PLC0415 (only this mode needs ns-3)
    import cppyy  # noqa: PLC0415

    configure_dctcp(ns, k, BUFFER_PKTS)
    ns.Config.SetDefault("ns3::RedQueueDisc::LinkBandwidth", ns.DataRateValue(ns.DataRate(f"{gbps}Gbps")))

    senders, hub, receiver = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
    senders.Create(n)
    hub.Create(1)
    receiver.Create(1)
    internet = ns.InternetStackHelper()
    for c in (senders, hub, receiver):
        internet.Install(c)
    p2p = ns.PointToPointHelper()
    p2p.SetDeviceAttribute("DataRate", ns.StringValue(f"{gbps}Gbps"))
    p2p.SetChannelAttribute("Delay", ns.StringValue(f"{DELAY_US}us"))
    p2p.SetQueue("ns3::DropTailQueue", "MaxSize", ns.QueueSizeValue(ns.QueueSize("1p")))
    addr = ns.Ipv4AddressHelper()
    red = ns.TrafficControlHelper()
    red.SetRootQueueDisc("ns3::RedQueueDisc")
    fifo = ns.TrafficControlHelper()
    fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", ns.QueueSizeValue(ns.QueueSize("10000p")))
    for i in range(n):
        d = p2p.Install(senders.Get(i), hub.Get(0))
        fifo.Install(d)
        addr.SetBase(ns.Ipv4Address(f"10.{i // 200 + 1}.{i % 200}.0"), ns.Ipv4Mask("255.255.255.0"))
        addr.Assign(d)
    d = p2p.Install(hub.Get(0), receiver.Get(0))
    qdiscs = red.Install(d.Get(0))
    fifo.Install(d.Get(1))
    addr.SetBase(ns.Ipv4Address("10.250.0.0"), ns.Ipv4Mask("255.255.255.0"))
    dst = addr.Assign(d).GetAddress(1)
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    sinks = []
    for i in range(n):
        port = 5000 + i
        sink = ns.PacketSinkHelper(
            "ns3::TcpSocketFactory", ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo()
        )
        app = sink.Install(receiver.Get(0))
        app.Start(ns.Seconds(0))
        sinks.append(app.Get(0))
        bulk = ns.BulkSendHelper("ns3::TcpSocketFactory", ns.InetSocketAddress(dst, port).ConvertTo())
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        bulk.SetAttribute("SendSize", ns.UintegerValue(1460))
        bulk.Install(senders.Get(i)).Start(ns.Seconds(i * STAGGER_S))

    # Sampling inside the simulator (C++ through cppyy): stopping it from Python every
    # 10 us would cost ~0.1 s per call.
    if not hasattr(cppyy.gbl, "dcsimstar"):
        cppyy.cppdef(
            """
            #include "ns3/core-module.h"
            #include "ns3/applications-module.h"
            #include "ns3/traffic-control-module.h"
            namespace dcsimstar {
            std::vector<uint32_t> samples;
            std::vector<uint64_t> rx0;
            std::vector<ns3::Ptr<ns3::Application>> apps;
            void Sample(ns3::Ptr<ns3::QueueDisc> q, double every, double from) {
                if (ns3::Simulator::Now().GetSeconds() > from) samples.push_back(q->GetNPackets());
                ns3::Simulator::Schedule(ns3::Seconds(every), &Sample, q, every, from);
            }
            uint64_t Rx(ns3::Ptr<ns3::Application> a) {
                return ns3::DynamicCast<ns3::PacketSink>(a)->GetTotalRx();
            }
            void Snap() { rx0.clear(); for (auto& a : apps) rx0.push_back(Rx(a)); }
            void Add(ns3::Ptr<ns3::Application> a) { apps.push_back(a); }
            void Start(ns3::Ptr<ns3::QueueDisc> q, double every, double from) {
                ns3::Simulator::Schedule(ns3::Seconds(every), &Sample, q, every, from);
                ns3::Simulator::Schedule(ns3::Seconds(from), &Snap);
            }
            }
            """
        )
    v = cppyy.gbl.dcsimstar
    for s in sinks:
        v.Add(s)
    q = qdiscs.Get(0)
    v.Start(q, SAMPLE_S, WARMUP_S)
    ns.Simulator.Stop(ns.Seconds(RUN_S))
    ns.Simulator.Run()
    window = RUN_S - WARMUP_S
    goodput = [(v.Rx(s) - r0) * 8 / window / 1e9 for s, r0 in zip(sinks, v.rx0)]
    stats = q.GetStats()
    return {
        "queue_pkts": [float(x) for x in v.samples],
        "goodput_gbps": goodput,
        "drops": int(stats.nTotalDroppedPackets),
        "marks": int(stats.nTotalMarkedPackets),
    }


def scenario(n: int, gbps: int, k: int) -> str:
    lines = [
        "schema_version = 1",
        f'description = "{n} DCTCP flows into one receiver, {gbps} Gb/s star, K = {k} (the ns-3 twin)"',
        "[sim]", f'duration = "{int(RUN_S * 1000)}ms"', f'warmup = "{int(WARMUP_S * 1000)}ms"', "seed = 1",
        "[topology]", 'kind = "star"', f"hosts = {n + 1}",
        f'host_link = {{ rate = "{gbps}Gbps", delay = "{DELAY_US}us" }}',
        "[queue]", 'kind = "ecn"', f'buffer = "{BUFFER_PKTS}pkts"', f'mark_threshold = "{k}pkts"',
        "[transport]", 'kind = "tcp"', 'profile = "linux"', 'cc = { kind = "dctcp", g = 0.0625 }',
        "sack = false", "delayed_ack = false", 'min_rto = "1ms"', 'rcv_buf = "64MiB"',
        "rcv_autotune = false",
        "[output.timeseries]", f'every = "{int(SAMPLE_S * 1e6)}us"', 'ports = ["sw->h0"]',
    ]
    for i in range(n):
        lines += ["[[flows]]", f"src = {i + 1}", "dst = 0", f'start = "{i * int(STAGGER_S * 1000)}ms"']
    return "\n".join(lines) + "\n"


def run_dcsim(n: int, gbps: int, k: int, dcsim: str, work: Path) -> dict:
    path = work / f"star-{n}-{gbps}g.toml"
    path.write_text(scenario(n, gbps, k))
    out = work / f"star-{n}-{gbps}g"
    done = subprocess.run([dcsim, "run", str(path), "--out", str(out), "--quiet"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"dcsim failed on {path}:\n{done.stderr.strip()}")
    queue = [float(r["value"]) / PKT for r in csv.DictReader(open(out / "timeseries.csv"))
             if r["kind"] == "queue_bytes" and r["id"] == "sw->h0" and int(r["time_ns"]) > WARMUP_S * 1e9]
    goodput = [float(r["window_goodput_gbps"]) for r in csv.DictReader(open(out / "flows.csv"))]
    port = next(r for r in csv.DictReader(open(out / "ports.csv")) if r["node"] == "sw" and r["peer"] == "h0")
    return {"queue_pkts": queue, "goodput_gbps": goodput, "drops": int(port["drops"]),
            "marks": int(port.get("ecn_marks") or 0)}


def summary(r: dict) -> dict:
    q = sorted(r["queue_pkts"])
    pct = lambda p: q[min(len(q) - 1, len(q) * p // 100)]  # noqa: E731
    g = r["goodput_gbps"]
    return {"mean": sum(q) / len(q), "p1": pct(1), "p50": pct(50), "p99": pct(99),
            "goodput": sum(g), "jain": sum(g) ** 2 / (len(g) * sum(x * x for x in g)),
            "drops": r["drops"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dcsim", default=str(HERE.parent / "target/ci/dcsim"))
    ap.add_argument("--quick", action="store_true", help="N = 2 and 8 at 1 Gb/s only")
    ap.add_argument("--json", type=Path, help="write every sample and figure here")
    a = ap.parse_args()
    setups = [(n, g, 65 if g == 10 else 20) for g in (10, 1) for n in (2, 8, 32)]
    if a.quick:
        setups = [s for s in setups if s[1] == 1 and s[0] <= 8]
    rows, raw = [], {}
    with tempfile.TemporaryDirectory(prefix="ns3-star-") as tmp:
        for n, g, k in setups:
            print(f"running N = {n} at {g} Gb/s ...", file=sys.stderr)
            # ns-3's simulator is a process-wide singleton: each run in its own process.
            ns3 = json.loads(subprocess.run(
                [sys.executable, __file__, "--ns3-only", str(n), str(g), str(k)],
                capture_output=True, text=True, check=True).stdout)
            sim = run_dcsim(n, g, k, a.dcsim, Path(tmp))
            raw[f"{n}@{g}G"] = {"ns3": ns3, "dcsim": sim}
            rows.append((n, g, k, summary(ns3), summary(sim)))
    print("| set-up | queue, ns-3: mean (p1/p50/p99), packets | dcsim `linux` | goodput, Gb/s (ns-3 / dcsim) | Jain | drops | targets |")
    print("|---|---|---|---|---|---|---|")
    for n, g, k, s3, sd in rows:
        mean_ok = abs(sd["mean"] / s3["mean"] - 1) <= 0.05
        tails_ok = abs(sd["p1"] - s3["p1"]) <= 5 and abs(sd["p99"] - s3["p99"]) <= 5
        print(f"| N = {n}, {g} Gb/s, K = {k} | {s3['mean']:.1f} ({s3['p1']:.0f}/{s3['p50']:.0f}/{s3['p99']:.0f}) "
              f"| {sd['mean']:.1f} ({sd['p1']:.0f}/{sd['p50']:.0f}/{sd['p99']:.0f}) "
              f"| {s3['goodput']:.2f} / {sd['goodput']:.2f} | {s3['jain']:.3f} / {sd['jain']:.3f} "
              f"| {s3['drops']} / {sd['drops']} | mean {'✓' if mean_ok else '✗'}, p1/p99 {'✓' if tails_ok else '✗'} |")
    if a.json:
        a.json.write_text(json.dumps(raw))
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--ns3-only":
        print(json.dumps(run_ns3(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))))
        sys.exit(0)
    sys.exit(main())
