#!/usr/bin/env python3
"""How evenly a fat-tree run's events would split between two parts of the network.

ADR 0009 projects what two threads would gain on one run from `parbench`, a model whose
parts are always about equally busy. A network is not: a part's share of the events moves
with the flows that cross it. In a parallel run each window of half the look-ahead lasts
as long as its busiest part, so what two parts can gain at best is

    2 / imbalance,    imbalance = sum over windows of max(part events) / (all events / 2)

and every packet that crosses between parts must be copied into the other part's memory.
This script measures both on a real run, from packet traces of every port:

1. Runs the scenario for 1 µs to learn its ports, then to --end with every port traced in
   the stretch [--start, --end) (pcap, one file per port; `docs/trace.md`).
2. Reads the traces. Each record is a packet starting down a link; it arrives at the far
   end (the event of that hop, handled by the part that owns the far node) after its
   serialization and the link's delay (the rates from the run's ports.csv, the delays
   from `dcsim show`).
3. Splits the fat-tree into two parts: pods (what is left connected when the core
   switches are taken out) in two contiguous halves, and the core switches by index, half
   to each part. The look-ahead is the shortest delay of a link between the parts plus the
   shortest frame's serialization; windows are half of it, as in `dcsim_engine::parallel`.
4. Prints the events, the share that crosses between parts, the imbalance, and the events
   per part per window; `--overhead` (ns per event, wall, from parbench: numbering,
   renumbering, the logs and the barrier) and `--event-ns` (the one-thread cost per event
   of the run being projected) turn them into a projected speed-up.

    python3 validation/parallel_balance.py SCENARIO.toml --dcsim target/release/dcsim \\
        --start 3s --end 3030ms [--split alternate] [--event-ns 88.8] [--overhead 14] \\
        [--set PATH=VALUE ...]

The xpass-fattree DCTCP run: SCENARIO is `runs/datamining-10g-dctcp/scenario.toml` of
`dcsim repro xpass-fattree --quick --out DIR`, with
`--set generators[0].pattern.max_flows=100000` (the full run's flows).

Only fat-trees (node names hN, torN, aggN, coreN) are split; the script refuses others.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import struct
import subprocess
import sys
import tempfile
import tomllib
from collections import defaultdict
from pathlib import Path

PS_PER_NS = 1000
# Ethernet framing as dcsim charges it (crates/dcsim-net/src/wire.rs): the frame with its
# check sequence, at least 64 bytes, plus preamble and inter-frame gap.
FCS, MIN_FRAME, PREAMBLE_IFG = 4, 64, 20

UNITS_NS = {"ps": 1e-3, "ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def duration_ns(text: str) -> float:
    m = re.fullmatch(r"\s*([0-9.]+)\s*(ps|ns|us|ms|s)\s*", text)
    if not m:
        sys.exit(f"error: {text!r} is not a duration such as 4us or 200ms")
    return float(m.group(1)) * UNITS_NS[m.group(2)]


def wire_bytes(frame: int) -> int:
    return max(frame + FCS, MIN_FRAME) + PREAMBLE_IFG


def run(dcsim: str, scenario: Path, out: Path, sets: list[str]) -> None:
    cmd = [dcsim, "run", "-q", "--out", str(out), str(scenario)]
    for s in sets:
        cmd += ["--set", s]
    r = subprocess.run(cmd, text=True, capture_output=True)
    if r.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{r.stderr}")


def traced_scenario(scenario: Path, labels: list[str], start: str, end: str, dest: Path):
    text = scenario.read_text()
    spec = tomllib.loads(text)
    if "trace" in spec.get("output", {}):
        sys.exit(f"error: {scenario}: [output.trace] is already set; remove it")
    ports = ", ".join(f'"{label}"' for label in labels)
    dest.write_text(
        text
        + f'\n[output.trace]\nports = [{ports}]\nstart = "{start}"\nend = "{end}"\n'
        + 'max_bytes = "4000MB"\n'
    )


def pods_and_parts(ports: list[dict], split: str) -> dict[str, int]:
    """Part 0 or 1 of every node: pods and cores in two contiguous halves by index
    (`halves`) or alternately (`alternate`)."""
    nodes = {r["node"] for r in ports}
    for n in nodes:
        if not re.fullmatch(r"(h|tor|agg|core)\d+", n):
            sys.exit(f"error: node {n!r}: only fat-trees (h, tor, agg, core) are split")
    # Pods: components of the graph without the cores, numbered by their lowest host.
    parent = {n: n for n in nodes}

    def find(n: str) -> str:
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n

    for r in ports:
        a, b = r["node"], r["peer"]
        if not a.startswith("core") and not b.startswith("core"):
            parent[find(a)] = find(b)
    members = defaultdict(list)
    for n in nodes:
        if not n.startswith("core"):
            members[find(n)].append(n)

    def lowest_host(group: list[str]) -> int:
        return min(int(n[1:]) for n in group if n.startswith("h"))

    pods = sorted(members.values(), key=lowest_host)
    part = {}
    cores = sorted((n for n in nodes if n.startswith("core")), key=lambda n: int(n[4:]))

    def side(i: int, count: int) -> int:
        return i % 2 if split == "alternate" else int(2 * i >= count)

    for i, group in enumerate(pods):
        for n in group:
            part[n] = side(i, len(pods))
    for i, n in enumerate(cores):
        part[n] = side(i, len(cores))
    return part


def link_delays_ns(resolved: dict) -> dict[tuple[str, str], float]:
    """Delay of each tier's links, in each direction, from the resolved scenario."""
    topo = resolved.get("topology", {})
    if topo.get("kind") != "fat-tree":
        sys.exit("error: only fat-tree scenarios are split")

    def tier(name: str) -> float:
        return duration_ns(topo[name]["delay"])

    host_extra = duration_ns(topo.get("host_delay", "0ps"))
    return {
        ("host", "tor"): tier("host_link") + host_extra,
        ("tor", "host"): tier("host_link"),
        ("tor", "agg"): tier("tor_link"),
        ("agg", "tor"): tier("tor_link"),
        ("agg", "core"): tier("core_link"),
        ("core", "agg"): tier("core_link"),
    }


def read_pcap(path: Path):
    """Yields (start ns, frame bytes) of each record."""
    data = path.read_bytes()
    if len(data) < 24:
        return
    magic = struct.unpack_from("<I", data, 0)[0]
    if magic != 0xA1B23C4D:
        sys.exit(f"error: {path}: not a nanosecond pcap file")
    off = 24
    rec = struct.Struct("<IIII")
    while off + 16 <= len(data):
        sec, nsec, incl, orig = rec.unpack_from(data, off)
        yield sec * 1_000_000_000 + nsec, orig
        off += 16 + incl


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", type=Path)
    ap.add_argument("--dcsim", default="target/release/dcsim")
    ap.add_argument("--start", default="200ms", help="start of the traced stretch")
    ap.add_argument("--end", default="230ms", help="end of the traced stretch (and of the run)")
    ap.add_argument("--event-ns", type=float, help="one-thread ns per event to project from")
    ap.add_argument(
        "--overhead",
        type=float,
        default=14.0,
        help="ns per event (wall) that two parts add to perfect halves: ADR 0009's parbench "
        "run at 81-82 ns per event took about 55 on two parts, against 41 for halves",
    )
    ap.add_argument(
        "--split",
        choices=["halves", "alternate"],
        default="halves",
        help="pods and cores to the two parts in contiguous halves or alternately",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="a scenario override for dcsim run (repeatable)",
    )
    ap.add_argument("--keep", type=Path, help="keep the traced run in this folder")
    args = ap.parse_args()
    if not args.scenario.is_file():
        sys.exit(f"error: {args.scenario}: no such scenario file")
    cmd = [args.dcsim, "show", str(args.scenario)]
    for o in args.set:
        cmd += ["--set", o]
    shown = subprocess.run(cmd, text=True, capture_output=True)
    if shown.returncode != 0:
        sys.exit(f"error: {' '.join(cmd)} failed:\n{shown.stderr}")
    delays = link_delays_ns(tomllib.loads(shown.stdout))
    start_ns, end_ns = duration_ns(args.start), duration_ns(args.end)
    if not 0 <= start_ns < end_ns:
        sys.exit("error: --start must come before --end")

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        # A run of 1 µs lists the ports.
        short = ['sim.duration="1us"', 'sim.warmup="0ps"', 'sim.cooldown="0ps"']
        run(args.dcsim, args.scenario, tmp / "plain", [*args.set, *short])
        ports = list(csv.DictReader(open(tmp / "plain" / "ports.csv")))
        labels = [f"{r['node']}->{r['peer']}" for r in ports]
        traced = tmp / "traced.toml"
        traced_scenario(args.scenario, labels, args.start, args.end, traced)
        out = args.keep or tmp / "traced"
        run(args.dcsim, traced, out, [*args.set, f'sim.duration="{args.end}"'])
        summary = json.loads((out / "summary.json").read_text())
        left_out = sum(t["packets_over_max_bytes"] for t in summary["packet_traces"] or [])
        if left_out:
            sys.exit(f"error: {left_out} packets did not fit in the traces; trace less time")
        part = pods_and_parts(ports, args.split)
        cross_delay = min(
            delays[(r["tier"], r["peer_tier"])]
            for r in ports
            if part[r["node"]] != part[r["peer"]]
        )
        min_ser = min(wire_bytes(MIN_FRAME - FCS) * 8 / float(r["rate_gbps"]) for r in ports)
        lookahead = cross_delay + min_ser
        window = lookahead / 2
        counts: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        events = crossing = 0
        for r in ports:
            label = f"{r['node']}-to-{r['peer']}"
            path = out / f"trace-{label}.pcap"
            if not path.exists():
                continue
            delay = delays[(r["tier"], r["peer_tier"])]
            ns_per_byte = 8 / float(r["rate_gbps"])
            dst = part[r["peer"]]
            crosses = part[r["node"]] != dst
            for t, frame in read_pcap(path):
                arrive = t + wire_bytes(frame) * ns_per_byte + delay
                counts[int(arrive // window)][dst] += 1
                events += 1
                crossing += crosses

    if events == 0:
        sys.exit("error: the traces hold no packets: is the stretch inside the run?")
    traced_packets = sum(t["packets"] for t in summary["packet_traces"])
    if events != traced_packets:
        sys.exit(f"error: {events} packets in the traces, {traced_packets} in summary.json")
    busiest = sum(max(c) for c in counts.values())
    windows = (end_ns - start_ns) / window
    imbalance = busiest / (events / 2)
    share0 = sum(c[0] for c in counts.values()) / events
    print(f"scenario {args.scenario}, stretch {args.start}..{args.end}, two parts (pods and")
    print(f"cores split {args.split}): look-ahead {lookahead:.0f} ns, windows of {window:.0f} ns")
    print(f"events (packet arrivals)       {events:,}")
    print(f"part 0's share                 {share0:.3f}")
    print(f"crossing between parts         {crossing / events:.3%}")
    print(f"events per part per window     {events / 2 / windows:.0f}")
    print(f"imbalance (busiest part)       {imbalance:.3f}")
    print(f"speed-up bound (2/imbalance)   {2 / imbalance:.2f}x")
    if args.event_ns:
        two = args.event_ns / 2 * imbalance + args.overhead
        print(
            f"projected, {args.event_ns} ns/event on one thread and {args.overhead} ns/event "
            f"of overhead: {args.event_ns / two:.2f}x (before packet copies)"
        )


if __name__ == "__main__":
    main()
