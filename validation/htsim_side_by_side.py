#!/usr/bin/env python3
"""dcsim and htsim side by side on twin DCTCP scenarios, in alternating pairs.

Absolute speeds drift between machines and even between hours on one VM; a ratio measured
with the two simulators taking turns on the same machine does not. Every performance claim
in this repository is a ratio from this script.

    python3 validation/htsim_side_by_side.py --htsim-git /path/to/csg-htsim(.git) \\
        [--anchor ../shared/anchors/htsim] [--pairs 5] [--scenarios dumbbell,k8,k16,k24]

What it does:
1. Exports htsim's sim/ folder from the given clone (bare or not) into
   target/htsim-side-by-side/htsim and builds the anchor driver there with the anchor's own
   build.sh (htsim's Makefile, -O3). Nothing of htsim is copied into this repository.
2. Builds dcsim (cargo build --release -p dcsim-cli; with --pgo, tools/pgo/build.sh, the
   profile-guided build of ADR 0008) unless --dcsim names a binary.
3. For each scenario, runs htsim then dcsim, --pairs times, alternating, and reports the
   median ns per packet-hop of each and their ratio (htsim / dcsim: how many times faster
   dcsim is). Both count a packet-hop as one packet crossing one link, and both time the
   event loop only.

The twins: the anchor's dumbbell (2 long flows, 10 Gb/s, K = 65, 500-packet buffer) and
DCTCP permutations on k-ary fat-trees (10 Gb/s, 1 us links, 500-packet buffers, K = 15,
htsim's hard-coded threshold), k = 8, 16, 24 (128, 1,024, 3,456 hosts); the dcsim side is
the anchor's dcsim-*.toml with topology.k set.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# name -> (htsim arguments, dcsim twin file, dcsim overrides, simulated ms)
SCENARIOS = {
    "dumbbell": (["-mode", "dumbbell", "-n", "2", "-K", "65", "-buf", "500", "-delay_us", "25"],
                 "dcsim-dumbbell.toml", [], 500),
    "k8": (["-mode", "fattree", "-nodes", "128", "-buf", "500", "-delay_us", "1"],
           "dcsim-fattree-k8.toml", [], 10),
    "k16": (["-mode", "fattree", "-nodes", "1024", "-buf", "500", "-delay_us", "1"],
            "dcsim-fattree-k8.toml", ["topology.k=16"], 2),
    "k24": (["-mode", "fattree", "-nodes", "3456", "-buf", "500", "-delay_us", "1"],
            "dcsim-fattree-k8.toml", ["topology.k=24"], 1),
}


def sh(cmd: list[str], **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def build_htsim(git: Path, anchor: Path, work: Path) -> Path:
    tree = work / "htsim"
    if not (tree / "anchor_dctcp").exists():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(git), "archive", "HEAD", "sim"], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
        print(f"building htsim in {tree} (about 40 s on 2 cores)", file=sys.stderr)
        sh(["bash", str(anchor / "build.sh"), str(tree)])
    return tree / "anchor_dctcp"


def htsim_ns_per_hop(exe: Path, args: list[str], sim_ms: int, seed: int) -> float:
    out = sh([str(exe), *args, "-simms", str(sim_ms), "-seed", str(seed)]).stdout
    return json.loads(out.strip().splitlines()[-1])["ns_per_hop"]


def dcsim_ns_per_hop(exe: Path, twin: Path, sets: list[str], sim_ms: int, seed: int) -> float:
    with tempfile.TemporaryDirectory() as d:
        args = [str(exe), "run", str(twin), "--out", f"{d}/r", "-q", "--seed", str(seed),
                "--set", f'sim.duration="{sim_ms}ms"']
        for s in sets:
            args += ["--set", s]
        sh(args)
        s = json.loads(Path(f"{d}/r/summary.json").read_text())
        return s["wall_seconds"] * 1e9 / s["packet_hops"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--htsim-git", type=Path, required=True, help="a clone of Broadcom/csg-htsim (bare is fine)")
    ap.add_argument("--anchor", type=Path, default=REPO.parent / "shared/anchors/htsim",
                    help="the htsim anchor (driver, build.sh, twin scenarios)")
    ap.add_argument("--dcsim", type=Path, help="a dcsim binary (default: build target/release/dcsim)")
    ap.add_argument("--pgo", action="store_true", help="build and run the profile-guided build instead")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--scenarios", default="dumbbell,k8,k16,k24")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    a = ap.parse_args()

    work = REPO / "target/htsim-side-by-side"
    htsim = build_htsim(a.htsim_git.resolve(), a.anchor.resolve(), work)
    dcsim, build = a.dcsim, "given binary"
    if dcsim is None and a.pgo:
        dcsim = Path(subprocess.run([str(REPO / "tools/pgo/build.sh")], cwd=REPO, check=True,
                                    stdout=subprocess.PIPE, text=True).stdout.strip())
        build = "pgo"
    elif dcsim is None:
        sh(["cargo", "build", "--release", "--locked", "-p", "dcsim-cli"], cwd=REPO)
        dcsim, build = REPO / "target/release/dcsim", "release"
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"machine: {cpu}, {os.cpu_count()} cores; {a.pairs} alternating pairs per scenario, seed {a.seed}; dcsim: {dcsim} ({build})")
    print(f"{'scenario':<10} {'htsim ns/hop':>13} {'dcsim ns/hop':>13} {'htsim/dcsim':>12}  (medians; per-pair ratios)")
    rows = {}
    for name in a.scenarios.split(","):
        args, twin, sets, sim_ms = SCENARIOS[name]
        h, d = [], []
        for _ in range(a.pairs):
            h.append(htsim_ns_per_hop(htsim, args, sim_ms, a.seed))
            d.append(dcsim_ns_per_hop(dcsim, a.anchor / twin, sets, sim_ms, a.seed))
        ratios = [x / y for x, y in zip(h, d)]
        hm, dm = statistics.median(h), statistics.median(d)
        rows[name] = {"htsim_ns_per_hop": h, "dcsim_ns_per_hop": d, "ratio_median": statistics.median(ratios)}
        print(f"{name:<10} {hm:>13.1f} {dm:>13.1f} {statistics.median(ratios):>11.2f}x  "
              f"({', '.join(f'{r:.2f}' for r in ratios)})")
    if "k8" in rows and "k24" in rows:
        grow = statistics.median(rows["k24"]["dcsim_ns_per_hop"]) / statistics.median(rows["k8"]["dcsim_ns_per_hop"])
        print(f"dcsim per-hop cost at k = 24 over k = 8: {grow:.2f}x")
    if a.json:
        a.json.write_text(json.dumps({"machine": cpu, "pairs": a.pairs, "dcsim_build": build, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
