#!/usr/bin/env python3
"""ExpressPass's convergence in its authors' own ns-2 (kaist-ina/ns2-xpass) beside dcsim's.

The standing check of dcsim's ExpressPass against the code the papers' curves came from:
one long flow on a 2-pair dumbbell, a second joins at 2 ms, base RTT 100 us (host links
20 us, bottleneck 10 us), 10 and 100 Gb/s, initial credit rate alpha = 1 (the paper era's
code) and 0.5 (today's). The authors' code runs its own feedback law, which dcsim calls
`code`; dcsim's side is its `xpass-convergence` experiment's own scenarios
(`expresspass-code-alpha1` and `expresspass-code`), run over as many seeds.

    # Debian: build-essential tcl8.6-dev tk8.6-dev libotcl1-dev libtclcl1-dev tclcl
    #         otcl-shells libx11-dev libxt-dev libxmu-dev
    python3 validation/xpass_ns2.py --clone PATH/TO/ns2-xpass(.git)
        [--work target/ns2-xpass] [--seeds 100] [--dcsim target/release/dcsim] [--json out.json]

The 800 runs of 100 seeds take about 6 minutes once ns-2 is built (about 2 minutes).

What it does:
1. Exports the clone's `master` into WORK/src (two data blobs that a bare clone may lack
   and ExpressPass does not use are left out) and builds `ns` against Debian's Tcl, Tk,
   OTcl and TclCL through folders of symlinks laid out as ns-2's configure expects, with
   validation/ns2_int64_bind.cc (ours) for the two 64-bit bindings Debian's TclCL lacks
   and validation/ns2_srand.cc (ours), which seeds the C library's rand() from NS2_SRAND.
   Nothing of ns-2 is copied into this repository.
2. For each speed, alpha and seed, writes a copy of the authors' scripts/dumbell-topology.tcl
   with this set-up's values put in (N, rates, delays, alpha, credit rate, the join, the end)
   and runs it with NS2_SRAND = s. The credit jitter of the authors' agent draws from the
   C library's rand(), which nothing in the dumbbell seeds: without the seed every run of a
   configuration draws the same jitter, and 20 "seeds" are one sample.
3. Reads the bottleneck's queue trace (the script's own trace-queue), bins each flow's
   data payload leaving the bottleneck queue per RTT (100 us) and measures convergence as
   dcsim's experiment does: the first bin wholly after the join in which both flows are
   within 10 % of the fair share (half the lone flow's goodput over the millisecond before
   the join), and the first from which they stay there (5-RTT trailing average), in RTTs.
4. Runs dcsim's twins, the scenarios `dcsim repro xpass-convergence` writes (run once into
   WORK/dcsim-repro), with seeds 1..N and a pcap trace of the bottleneck port added, and
   measures them at the same point: the payload of the data leaving the bottleneck, binned
   by departure (as the experiment itself now bins it, through its time series' offset;
   the trace keeps this check independent of that).

It prints a Markdown table: per speed and alpha, the median and range over the seeds of the
RTTs to reach the fair share and to stay there, ns-2 beside dcsim.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
LIB = Path("/usr/lib/x86_64-linux-gnu")
CCOPT = "-O2 -std=gnu++98 -fpermissive -Wno-narrowing -w -DUSE_INTERP_RESULT -DUSE_INTERP_ERRORLINE"
# Blobs that a bare clone may not hold; ExpressPass needs neither.
MISSING = ["tcl/ex/pi/picoeff.dat.gz", "tcl/mobility/scene/scen-1500x300-60-0-20-2"]

RTT_US = 100.0
BIN_US = 100.0
JOIN_MS = 2.0
AFTER_MS = 20.0
# The authors' credit rate at 10 Gb/s, bytes per second (their script's 40 Gb/s value / 4).
CREDIT_RATE_10G = 64734895
SMOOTH = 5
# Payload per wire byte of a full data packet.
PAYLOAD = 1460 / 1538


def sh(cmd: list[str], **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def link(target: Path, name: Path) -> None:
    name.parent.mkdir(parents=True, exist_ok=True)
    if name.is_symlink() or name.exists():
        name.unlink()
    name.symlink_to(target)


def deps(work: Path) -> Path:
    """Debian's Tcl, Tk, OTcl and TclCL in the folder layout ns-2's configure searches."""
    d = work / "deps"
    inc = Path("/usr/include/tcl8.6")
    for pkg, private in [("tcl", "tcl-private"), ("tk", "tk-private")]:
        for part in ["generic", "unix"]:
            link(inc / private / part, d / pkg / part)
        link(LIB / f"lib{pkg}8.6.so", d / pkg / "lib" / f"lib{pkg}8.6.so")
        link(Path("/usr/share/tcltk") / f"{pkg}8.6", d / pkg / "lib" / f"{pkg}8.6")
    link(Path("/usr/include/otcl.h"), d / "otcl" / "include" / "otcl.h")
    link(LIB / "libotcl.so", d / "otcl" / "lib" / "libotcl1.14.so")
    for h in Path("/usr/include/tclcl").glob("*.h"):
        link(h, d / "tclcl" / "include" / h.name)
    link(LIB / "libtclcl.so", d / "tclcl" / "lib" / "libtclcl.so")
    link(Path("/usr/bin/tcl2c++"), d / "tclcl" / "bin" / "tcl2c++")
    return d


def build(clone: Path, work: Path) -> Path:
    """The authors' ns, built once in WORK/src."""
    src = work / "src"
    ns = src / "ns"
    shims = [HERE / "ns2_int64_bind.cc", HERE / "ns2_srand.cc"]
    stamp = work / "shims.txt"
    wanted = "\n".join(p.name for p in shims)
    if ns.exists() and stamp.exists() and stamp.read_text() == wanted:
        return ns
    missing = [p for p in ["/usr/include/tcl8.6/tcl-private", "/usr/include/otcl.h", "/usr/include/tclcl/tclcl.h",
                           "/usr/bin/tcl2c++"] if not Path(p).exists()]
    if missing:
        sys.exit(f"error: Debian's Tcl/OTcl/TclCL development files are missing ({', '.join(missing)}); "
                 "install the packages named at the top of this script")
    d = deps(work)
    includes = [f"-I{d}/tclcl/include", f"-I{d}/otcl/include", f"-I{d}/tk/generic", f"-I{d}/tcl/generic",
                f"-I{d}/tcl/unix", "-I."]
    if (src / "Makefile").exists() and (src / "xpass" / "xpass.cc").exists():
        # Built before with other shims: relink only.
        link_ns(src, work, shims, includes)
        stamp.write_text(wanted)
        return ns
    src.mkdir(parents=True, exist_ok=True)
    print(f"exporting {clone} (master) into {src}", file=sys.stderr)
    excludes = [f":(exclude){p}" for p in MISSING]
    # git may still complain about the excluded blobs; the tree it writes is complete.
    git = subprocess.Popen(["git", "-C", str(clone), "archive", "master", "--", ".", *excludes],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(src)], stdin=git.stdout, check=True)
    err = git.communicate()[1].decode()
    if not (src / "xpass" / "xpass.cc").exists():
        sys.exit(f"error: {clone} has no xpass/xpass.cc on master: {err[-300:]}")
    print("configuring and building ns (about 2 minutes on 2 cores)", file=sys.stderr)
    sh(["./configure", f"--with-otcl={d}/otcl", f"--with-tclcl={d}/tclcl", f"--with-tcl={d}/tcl",
        "--with-tcl-ver=8.6", f"--with-tk={d}/tk", "--with-tk-ver=8.6"], cwd=src)
    link_ns(src, work, shims, includes)
    stamp.write_text(wanted)
    return ns


def link_ns(src: Path, work: Path, shims: list[Path], includes: list[str]) -> None:
    """Compiles our shims and builds (or relinks) ns with them."""
    objs = []
    for c in shims:
        o = work / (c.stem + ".o")
        sh(["g++", "-c", *CCOPT.split(), *includes, str(c), "-o", str(o)], cwd=src)
        objs.append(str(o))
    (src / "ns").unlink(missing_ok=True)
    # The shims join ns's objects through OBJ_GETOPT, a list of extra objects that is empty
    # on Linux (LDFLAGS would also reach the helper programs linked without Tcl).
    jobs = str(os.cpu_count() or 2)
    sh(["make", f"-j{jobs}", "ns", f"CCOPT={CCOPT}", f"OBJ_GETOPT={' '.join(objs)}"], cwd=src)


def script(template: str, gbps: int, alpha: float, join_s: float, end_s: float) -> str:
    """The authors' dumbbell script with this set-up's values put in; each substitution
    must find its line (a changed script is an error, not a silent mismatch)."""
    credit = CREDIT_RATE_10G * gbps // 10
    subs = [
        (r"^set N .*$", "set N 2"),
        # The script's ALPHA sets cur_credit_rate_, which the agent overwrites from alpha_
        # when a flow starts: set alpha_ as well.
        (r"^set ALPHA .*$", f"set ALPHA {alpha}\nAgent/XPass set alpha_ {alpha}"),
        (r"^set linkBW .*$", f"set linkBW {gbps}Gb"),
        (r"^set inputlinkBW .*$", f"set inputlinkBW {gbps}Gb"),
        (r"^set linkLatency .*$", "set linkLatency 10us\nset hostLatency 20us"),
        (r"^set creditRate .*$", f"set creditRate {credit}"),
        (r"^set creditRate2 .*$", f"set creditRate2 {credit}"),
        (r"^set interFlowDelay .*$", f"set interFlowDelay {join_s:.9f}"),
        (r"\$inputlinkBW \$linkLatency", "$inputlinkBW $hostLatency"),
        (r'^\$ns at [0-9.]+ "finish"$', f'$ns at {end_s:.6f} "finish"'),
        # Long flows: 2 GB, which outlast the run at 100 Gb/s (the script's 100 MB end at
        # 10 ms there).
        (r"advance-bytes 100000000", "advance-bytes 2000000000"),
    ]
    out = template
    for pattern, repl in subs:
        out, n = re.subn(pattern, repl, out, flags=re.M)
        if n == 0:
            sys.exit(f"error: the authors' script has no line matching {pattern!r}; it changed")
    return out


def goodputs(trace: Path, end_us: float) -> dict[int, list[tuple[float, float]]]:
    """Per flow id, (bin end in us, Gb/s of payload) of its data leaving the bottleneck
    queue, in whole bins up to `end_us`. The trace gives wire sizes (1538 B a packet);
    dcsim's goodput counts payload (1460 B), so the rates are scaled to payload."""
    bins: dict[int, dict[int, int]] = {}
    last = 0
    with open(trace) as f:
        for line in f:
            if not line.startswith("- ") or " XPASS_DATA " not in line:
                continue
            p = line.split()
            t_us, size, fid = float(p[1]) * 1e6, int(p[5]), int(p[7])
            b = int(t_us // BIN_US)
            last = max(last, b)
            bins.setdefault(fid, {})
            bins[fid][b] = bins[fid].get(b, 0) + size
    whole = min(last + 1, int(end_us // BIN_US))
    return {fid: [((b + 1) * BIN_US, v.get(b, 0) * PAYLOAD * 8 / (BIN_US * 1e3)) for b in range(whole)]
            for fid, v in bins.items()}


def departures(pcap: Path, end_us: float) -> dict[int, list[tuple[float, float]]]:
    """Per flow id, (bin end in us, Gb/s of payload) of its data leaving a dcsim port, from
    the port's pcap trace (docs/trace.md: Ethernet, IPv4 and UDP headers, then dcsim's
    header: class (0 data) at byte 0, flow id at 2-5, payload bytes at 14-17, big-endian)."""
    bins: dict[int, dict[int, int]] = {}
    with open(pcap, "rb") as f:
        f.read(24)
        while len(h := f.read(16)) == 16:
            sec, frac, incl, _ = struct.unpack("<IIII", h)
            rec = f.read(incl)
            d = rec[14 + 20 + 8:]
            if len(d) < 18 or d[0] != 0:
                continue
            t_us = sec * 1e6 + frac / 1e3
            fid, payload = struct.unpack(">I", d[2:6])[0], struct.unpack(">I", d[14:18])[0]
            b = int(t_us // BIN_US)
            bins.setdefault(fid, {})
            bins[fid][b] = bins[fid].get(b, 0) + payload
    whole = int(end_us // BIN_US)
    return {fid: [((b + 1) * BIN_US, v.get(b, 0) * 8 / (BIN_US * 1e3)) for b in range(whole)]
            for fid, v in bins.items()}


def first_within(a, b, join_us: float, fair: float) -> float | None:
    """The end of the first bin wholly after the join in which both flows are within
    10 % of `fair`, minus the join (dcsim's `first_within_us`)."""
    for (t, x), (_, y) in zip(a, b):
        if t - BIN_US >= join_us and abs(x - fair) <= 0.1 * fair and abs(y - fair) <= 0.1 * fair:
            return t - join_us
    return None


def sustained(a, b, join_us: float, fair: float) -> float | None:
    """The end of the first bin from which both flows' 5-bin trailing averages stay within
    10 % of `fair` to the end, minus the join (dcsim's `convergence_us`)."""
    avg = lambda s, i: statistics.fmean(v for _, v in s[i - SMOOTH + 1:i + 1])  # noqa: E731
    first = next((i for i, (t, _) in enumerate(a) if t - BIN_US >= join_us), None)
    if first is None:
        return None
    first += SMOOTH - 1
    n = min(len(a), len(b))
    settled = None
    for i in range(first, n):
        ok = abs(avg(a, i) - fair) <= 0.1 * fair and abs(avg(b, i) - fair) <= 0.1 * fair
        if ok and settled is None:
            settled = i
        elif not ok:
            settled = None
    return None if settled is None else a[settled][0] - join_us


def run_ns2(ns: Path, template: str, work: Path, gbps: int, alpha: float, seed: int) -> dict:
    join_us = JOIN_MS * 1e3
    end_s = (join_us + AFTER_MS * 1e3) / 1e6
    d = work / "runs" / f"{gbps}g-alpha{alpha}-s{seed}"
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    (d / "run.tcl").write_text(script(template, gbps, alpha, join_us / 1e6, end_s))
    env = dict(os.environ, LD_LIBRARY_PATH=str(work / "deps" / "otcl" / "lib"), NS2_SRAND=str(seed))
    subprocess.run([str(ns), "run.tcl"], cwd=d, env=env, check=True, capture_output=True, timeout=1800)
    g = goodputs(d / "outputs" / "trace.out", end_s * 1e6)
    a, b = g.get(0, []), g.get(1, [])
    lone = [v for t, v in a if JOIN_MS * 1e3 / 2 < t <= join_us]
    fair = statistics.fmean(lone) / 2 if lone else 0.0
    rtts = lambda us: None if us is None else round(us / RTT_US, 1)  # noqa: E731
    return {"reached_rtts": rtts(first_within(a, b, join_us, fair)),
            "sustained_rtts": rtts(sustained(a, b, join_us, fair)),
            "single_flow_gbps": round(2 * fair, 3)}


def dcsim_twin(dcsim: Path, work: Path, gbps: int, key: str, seed: int) -> dict:
    """dcsim's own scenario of the experiment for this speed and alpha, with `seed`."""
    repro = work / "dcsim-repro"
    if not (repro / "result.json").exists():
        print("running dcsim repro xpass-convergence for its scenarios", file=sys.stderr)
        sh([str(dcsim), "repro", "xpass-convergence", "--out", str(repro)])
    base = (repro / "runs" / f"{key}-{gbps}g-s1" / "scenario.toml").read_text()
    if "[output.trace]" in base:
        sys.exit("error: the experiment's scenario already has [output.trace]; this script adds its own")
    out = work / "dcsim-runs" / f"{key}-{gbps}g-s{seed}"
    out.mkdir(parents=True, exist_ok=True)
    scenario = out.parent / f"{key}-{gbps}g.toml"
    scenario.write_text(base + '\n[output.trace]\nports = ["left->right"]\n')
    sh([str(dcsim), "run", str(scenario), "--seed", str(seed), "--out", str(out), "--quiet"])
    series = departures(out / "trace-left-to-right.pcap", (JOIN_MS + AFTER_MS) * 1e3)
    a, b = series.get(0, []), series.get(1, [])
    join_us = JOIN_MS * 1e3
    lone = [v for t, v in a if join_us / 2 < t <= join_us]
    fair = statistics.fmean(lone) / 2 if lone else 0.0
    rtts = lambda us: None if us is None else round(us / RTT_US, 1)  # noqa: E731
    return {"reached_rtts": rtts(first_within(a, b, join_us, fair)),
            "sustained_rtts": rtts(sustained(a, b, join_us, fair)),
            "single_flow_gbps": round(2 * fair, 3)}


def fmt(xs: list) -> str:
    """Median (range) over the seeds; a seed that never converges counts as the longest."""
    done = sorted(x for x in xs if x is not None)
    never = len(xs) - len(done)
    if not done or never * 2 >= len(xs):
        return f"— ({never} of {len(xs)} never)"
    ranked = done + [float("inf")] * never
    med = statistics.median(ranked)
    hi = "never" if never else f"{done[-1]:g}"
    return f"{med:g} ({done[0]:g}–{hi})"


def ks(xs: list, ys: list) -> tuple[float, float]:
    """Two-sample Kolmogorov-Smirnov statistic D of two lists of RTTs (None, never, counts
    as longer than any) and its asymptotic p-value (the Kolmogorov distribution with
    Stephens' small-sample correction): how likely two samples of one distribution part
    this much."""
    inf = float("inf")
    a = sorted(inf if x is None else x for x in xs)
    b = sorted(inf if y is None else y for y in ys)
    d = max(abs(sum(x <= v for x in a) / len(a) - sum(y <= v for y in b) / len(b)) for v in a + b)
    en = math.sqrt(len(a) * len(b) / (len(a) + len(b)))
    lam = (en + 0.12 + 0.11 / en) * d
    p = 2 * sum((-1) ** (j - 1) * math.exp(-2 * j * j * lam * lam) for j in range(1, 101))
    return d, min(1.0, max(0.0, p)) if d > 0 else 1.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clone", type=Path, required=True, help="a clone (bare or not) of kaist-ina/ns2-xpass")
    ap.add_argument("--work", type=Path, default=REPO / "target" / "ns2-xpass")
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--dcsim", type=Path, default=REPO / "target" / "release" / "dcsim")
    ap.add_argument("--json", type=Path, help="write every figure here")
    a = ap.parse_args()
    if not a.dcsim.exists():
        sys.exit(f"error: no dcsim at {a.dcsim}; build it (cargo build --release -p dcsim-cli) or give --dcsim")
    work = a.work.resolve()
    ns = build(a.clone.resolve(), work)
    template = (work / "src" / "scripts" / "dumbell-topology.tcl").read_text()
    seeds = range(1, a.seeds + 1)
    rows, out = [], {}
    for gbps in [10, 100]:
        for alpha, key in [(1.0, "expresspass-code-alpha1"), (0.5, "expresspass-code")]:
            theirs = [run_ns2(ns, template, work, gbps, alpha, s) for s in seeds]
            ours = [dcsim_twin(a.dcsim.resolve(), work, gbps, key, s) for s in seeds]
            out[f"{gbps}g-alpha{alpha}"] = {"ns2": theirs, "dcsim": ours}
            col = lambda rs, k: fmt([r[k] for r in rs])  # noqa: E731
            tests = []
            for k in ["reached_rtts", "sustained_rtts"]:
                d, p = ks([r[k] for r in theirs], [r[k] for r in ours])
                out[f"{gbps}g-alpha{alpha}"][f"ks_{k}"] = {"d": round(d, 3), "p": round(p, 3)}
                tests.append(f"{d:.2f} ({p:.2f})")
            rows.append(f"| {gbps} Gb/s | {alpha:g} | {col(theirs, 'reached_rtts')} | {col(ours, 'reached_rtts')} | "
                        f"{tests[0]} | {col(theirs, 'sustained_rtts')} | {col(ours, 'sustained_rtts')} | {tests[1]} |")
            print(f"{gbps} Gb/s alpha {alpha:g} done", file=sys.stderr)
    print(f"RTTs after the join, median (range) over {a.seeds} seeds:")
    print("(KS: the two-sample Kolmogorov-Smirnov distance of ns-2's and dcsim's seeds, and its p-value)")
    print("| link | alpha | ns-2: to reach the share | dcsim | KS D (p) | ns-2: to stay within 10 % | dcsim | KS D (p) |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
