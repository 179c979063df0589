#!/usr/bin/env python3
"""ns-3 run of scenarios/dctcp-dumbbell.toml, to compare with dcsim's `linux` TCP profile.

Not part of CI (ns-3 is a large install). Usage:

    python3 -m venv /tmp/ns3venv && /tmp/ns3venv/bin/pip install ns3   # ns-3.44 from PyPI
    /tmp/ns3venv/bin/python validation/ns3_dctcp_dumbbell.py > /tmp/ns3.json
    cargo run --release -p dcsim-cli -- run scenarios/dctcp-dumbbell.toml \\
        --set transport.profile=linux --set transport.min_rto=1ms --set transport.sack=false \\
        --set transport.delayed_ack=false --set transport.rcv_buf=64MiB \\
        --set transport.rcv_autotune=false --set output.timeseries.every=10us --out /tmp/dcsim-linux
    python3 validation/ns3_dctcp_dumbbell.py --compare /tmp/ns3.json /tmp/dcsim-linux

The set-up is the scenario's: two senders and two receivers on a dumbbell, host links
10 Gb/s and 20 us, bottleneck 10 Gb/s and 10 us (base RTT 100 us), a 250-packet bottleneck
queue marking ECN at 65 packets (RED with a weight of 1 and a step at K), DCTCP with
g = 1/16, 1460-byte segments, one ACK per segment, minimum RTO 1 ms, flow 1 joining at
5 ms, 300 ms run, measurements over 100-300 ms. ns-3's TcpDctcp follows Linux: SYN
handshake, initial window 10, proportional rate reduction, alpha starting at 1.
"""

import json
import sys

K_PKTS = 65
BUFFER_PKTS = 250
PKT = 1538  # bytes on the wire, as dcsim counts a 1460-byte segment
RUN_S = 0.3
WARMUP_S = 0.1
SAMPLE_S = 10e-6


def configure_dctcp(ns, k_pkts: int, buffer_pkts: int) -> None:
    """ns-3's defaults for the comparison: TcpDctcp (g = 1/16, IW 10, one ACK per segment,
    no SACK or timestamps, minimum RTO 1 ms, 64 MB socket buffers) and RED as a step at
    `k_pkts` in a queue disc of `buffer_pkts` packets."""
    ns.Config.SetDefault("ns3::TcpL4Protocol::SocketType", ns.StringValue("ns3::TcpDctcp"))
    ns.Config.SetDefault("ns3::TcpSocket::SegmentSize", ns.UintegerValue(1460))
    ns.Config.SetDefault("ns3::TcpSocket::InitialCwnd", ns.UintegerValue(10))
    ns.Config.SetDefault("ns3::TcpSocket::DelAckCount", ns.UintegerValue(1))
    ns.Config.SetDefault("ns3::TcpSocket::SndBufSize", ns.UintegerValue(1 << 26))
    ns.Config.SetDefault("ns3::TcpSocket::RcvBufSize", ns.UintegerValue(1 << 26))
    ns.Config.SetDefault("ns3::TcpSocketBase::MinRto", ns.TimeValue(ns.MilliSeconds(1)))
    ns.Config.SetDefault("ns3::TcpSocketBase::Sack", ns.BooleanValue(False))
    ns.Config.SetDefault("ns3::TcpSocketBase::Timestamp", ns.BooleanValue(False))
    ns.Config.SetDefault("ns3::TcpDctcp::DctcpShiftG", ns.DoubleValue(1.0 / 16.0))
    # Step marking at K: RED with an instantaneous queue (weight 1) marking every packet
    # above K (minimum and maximum threshold one packet apart, maximum probability 1).
    ns.Config.SetDefault("ns3::RedQueueDisc::UseEcn", ns.BooleanValue(True))
    ns.Config.SetDefault("ns3::RedQueueDisc::UseHardDrop", ns.BooleanValue(False))
    ns.Config.SetDefault("ns3::RedQueueDisc::MeanPktSize", ns.UintegerValue(1500))
    ns.Config.SetDefault("ns3::RedQueueDisc::QW", ns.DoubleValue(1.0))
    ns.Config.SetDefault("ns3::RedQueueDisc::MinTh", ns.DoubleValue(k_pkts))
    ns.Config.SetDefault("ns3::RedQueueDisc::MaxTh", ns.DoubleValue(k_pkts + 1))
    ns.Config.SetDefault("ns3::RedQueueDisc::LInterm", ns.DoubleValue(1.0))
    ns.Config.SetDefault(
        "ns3::RedQueueDisc::MaxSize", ns.QueueSizeValue(ns.QueueSize(f"{buffer_pkts}p"))
    )


def run_ns3():
    from ns import ns  # noqa: PLC0415 (imported here: only this mode needs ns-3)

    configure_dctcp(ns, K_PKTS, BUFFER_PKTS)

    senders, receivers, routers = ns.NodeContainer(), ns.NodeContainer(), ns.NodeContainer()
    senders.Create(2)
    receivers.Create(2)
    routers.Create(2)
    internet = ns.InternetStackHelper()
    for c in (senders, receivers, routers):
        internet.Install(c)

    def link(delay_us):
        p2p = ns.PointToPointHelper()
        p2p.SetDeviceAttribute("DataRate", ns.StringValue("10Gbps"))
        p2p.SetChannelAttribute("Delay", ns.StringValue(f"{delay_us}us"))
        p2p.SetQueue("ns3::DropTailQueue", "MaxSize", ns.QueueSizeValue(ns.QueueSize("1p")))
        return p2p

    addr = ns.Ipv4AddressHelper()
    tch_red = ns.TrafficControlHelper()
    tch_red.SetRootQueueDisc("ns3::RedQueueDisc")
    tch_fifo = ns.TrafficControlHelper()
    tch_fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", ns.QueueSizeValue(ns.QueueSize("1000p")))

    receiver_addrs = []
    subnet = 1
    for i in range(2):
        d = link(20).Install(senders.Get(i), routers.Get(0))
        tch_fifo.Install(d)
        addr.SetBase(ns.Ipv4Address(f"10.{subnet}.0.0"), ns.Ipv4Mask("255.255.255.0"))
        addr.Assign(d)
        subnet += 1
    bottleneck = link(10).Install(routers.Get(0), routers.Get(1))
    qdiscs = tch_red.Install(bottleneck)
    addr.SetBase(ns.Ipv4Address(f"10.{subnet}.0.0"), ns.Ipv4Mask("255.255.255.0"))
    addr.Assign(bottleneck)
    subnet += 1
    for i in range(2):
        d = link(20).Install(routers.Get(1), receivers.Get(i))
        tch_fifo.Install(d)
        addr.SetBase(ns.Ipv4Address(f"10.{subnet}.0.0"), ns.Ipv4Mask("255.255.255.0"))
        ifs = addr.Assign(d)
        receiver_addrs.append(ifs.GetAddress(1))
        subnet += 1
    ns.Ipv4GlobalRoutingHelper.PopulateRoutingTables()

    sinks = []
    for i in range(2):
        port = 5000 + i
        sink = ns.PacketSinkHelper(
            "ns3::TcpSocketFactory",
            ns.InetSocketAddress(ns.Ipv4Address.GetAny(), port).ConvertTo(),
        )
        app = sink.Install(receivers.Get(i))
        app.Start(ns.Seconds(0))
        sinks.append(app.Get(0))
        bulk = ns.BulkSendHelper(
            "ns3::TcpSocketFactory", ns.InetSocketAddress(receiver_addrs[i], port).ConvertTo()
        )
        bulk.SetAttribute("MaxBytes", ns.UintegerValue(0))
        bulk.SetAttribute("SendSize", ns.UintegerValue(1460))
        sender = bulk.Install(senders.Get(i))
        sender.Start(ns.Seconds(0.0 if i == 0 else 0.005))

    # Sampling and the warm-up snapshot run inside the simulator (C++ through cppyy):
    # stopping the simulator from Python every 10 us costs ~0.1 s per call.
    import cppyy  # noqa: PLC0415

    cppyy.cppdef(
        """
        #include "ns3/core-module.h"
        #include "ns3/applications-module.h"
        #include "ns3/traffic-control-module.h"
        namespace dcsimval {
        std::vector<uint32_t> samples;
        std::vector<uint64_t> rx0;
        void Sample(ns3::Ptr<ns3::QueueDisc> q, double every, double from) {
            if (ns3::Simulator::Now().GetSeconds() > from) samples.push_back(q->GetNPackets());
            ns3::Simulator::Schedule(ns3::Seconds(every), &Sample, q, every, from);
        }
        uint64_t Rx(ns3::Ptr<ns3::Application> a) {
            return ns3::DynamicCast<ns3::PacketSink>(a)->GetTotalRx();
        }
        void Snap(ns3::Ptr<ns3::Application> a, ns3::Ptr<ns3::Application> b) {
            rx0 = {Rx(a), Rx(b)};
        }
        void Start(ns3::Ptr<ns3::QueueDisc> q, ns3::Ptr<ns3::Application> a,
                   ns3::Ptr<ns3::Application> b, double every, double from) {
            ns3::Simulator::Schedule(ns3::Seconds(every), &Sample, q, every, from);
            ns3::Simulator::Schedule(ns3::Seconds(from), &Snap, a, b);
        }
        }
        """
    )
    v = cppyy.gbl.dcsimval
    red = qdiscs.Get(0)
    v.Start(red, sinks[0], sinks[1], SAMPLE_S, WARMUP_S)
    ns.Simulator.Stop(ns.Seconds(RUN_S))
    ns.Simulator.Run()
    rx = [v.Rx(s) - r0 for s, r0 in zip(sinks, v.rx0)]
    samples = list(v.samples)
    stats = red.GetStats()
    window = RUN_S - WARMUP_S
    return {
        "simulator": "ns-3",
        "goodput_gbps": [b * 8 / window / 1e9 for b in rx],
        "queue_pkts": samples,
        "drops": stats.nTotalDroppedPackets,
        "marks": stats.nTotalMarkedPackets,
    }


def summarize(name, goodput, queue):
    q = sorted(queue)
    n = len(q)
    pct = lambda p: q[min(n - 1, n * p // 100)]  # noqa: E731
    return {
        "run": name,
        "goodput_gbps": [round(g, 3) for g in goodput],
        "queue_pkts_mean": round(sum(q) / n, 1),
        "queue_pkts_p1_p50_p99": [pct(1), pct(50), pct(99)],
        "queue_pkts_min_max": [q[0], q[-1]],
    }


def read_dcsim(out_dir):
    import csv  # noqa: PLC0415

    with open(f"{out_dir}/flows.csv") as f:
        goodput = [float(r["window_goodput_gbps"]) for r in csv.DictReader(f)]
    with open(f"{out_dir}/timeseries.csv") as f:
        queue = [
            float(r["value"]) / PKT
            for r in csv.DictReader(f)
            if r["kind"] == "queue_bytes"
            and r["id"] == "left->right"
            and int(r["time_ns"]) > WARMUP_S * 1e9
        ]
    # dcsim's goodput counts payload; ns-3's sink counts payload too.
    return goodput, queue


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--compare":
        with open(sys.argv[2]) as f:
            ns3 = json.load(f)
        g, q = read_dcsim(sys.argv[3])
        print(json.dumps(summarize("ns-3.44 TcpDctcp", ns3["goodput_gbps"], ns3["queue_pkts"])))
        print(json.dumps(summarize("dcsim linux", g, q)))
        print(json.dumps({"ns3_drops": ns3["drops"], "ns3_marks": ns3["marks"]}))
        return
    print(json.dumps(run_ns3()))


if __name__ == "__main__":
    main()
