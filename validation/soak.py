#!/usr/bin/env python3
"""Soak: dcsim left running on generator-heavy work, its memory sampled.

Two phases, each given half of --minutes (the hour form: --minutes 60; CI: --minutes 5):

1. one long run: `scenarios/websearch-star.toml` (Poisson web-search flows at load 0.5,
   DCTCP) with enough flows to last its half, sampling every switch port each
   millisecond (the time series goes to disk as it is taken). Resident memory is read
   from /proc every 0.2 s. What grows is stated in docs/reliability.md: a flow is in memory
   while it runs and leaves for a file when it has finished, and the results are written
   from that file with statistics from an external sort. The checks: between a quarter
   and three quarters of the run memory grows by at most RUN_PER_FLOW per flow (nothing
   accumulates per flow), and the peak is at most BASE + PER_FLOW x flows.
2. many runs in one process: a `dcsim sweep` of the same scenario at 3,000 flows over
   as many seeds as fit its half, one job. Every run frees what it held, so memory is
   flat across runs: the peak of the second half of the sweep is within BAND of the peak
   of its first half.

Prints the figures and exits 1 if a check fails. Linux only (reads /proc).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIO = os.path.join(ROOT, "scenarios", "websearch-star.toml")
# The stated bounds (docs/reliability.md): while a run goes on, its memory grows by at
# most RUN_PER_FLOW per flow (finished flows leave memory; what is left is 8 B a flow
# for the flows that existed when the measurement window began); its peak, the results
# written (the external sort holds up to 32 MB), is at most BASE plus PER_FLOW per flow;
# runs in one process stay within BAND of each other.
BASE_MB = 64.0
RUN_PER_FLOW_B = 16.0
PER_FLOW_B = 16.0
BAND = 0.10


def rss_mb(pid):
    """Resident memory of process pid in MB, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def watch(cmd, deadline_s=None, progress=lambda: 0):
    """Runs cmd, sampling its memory every 0.2 s: (exit code, [(seconds, MB, progress())])."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    samples = []
    while p.poll() is None:
        m = rss_mb(p.pid)
        if m is not None:
            samples.append((time.monotonic() - t0, m, progress()))
        if deadline_s is not None and time.monotonic() - t0 > deadline_s:
            p.terminate()
        time.sleep(0.2)
    err = p.stderr.read()
    if p.returncode != 0 and deadline_s is None:
        sys.exit(f"soak: {' '.join(cmd)} failed ({p.returncode}):\n{err}")
    return p.returncode, samples


def long_run(dcsim, out, seconds):
    # Calibrate: flows per wall second on this machine, from a run of 20,000 flows (a
    # shorter one overestimates the rate of a long run: the hour form planned for 27
    # minutes ran 55 on a busy machine with a 3,000-flow calibration).
    t0 = time.monotonic()
    subprocess.run([dcsim, "run", SCENARIO, "--out", os.path.join(out, "calibrate"), "--quiet",
                    "--set", "generators[0].pattern.max_flows=20000"], check=True)
    rate = 20000 / (time.monotonic() - t0)
    flows = max(20000, int(rate * seconds * 0.8))
    cmd = [dcsim, "run", SCENARIO, "--out", os.path.join(out, "long"), "--quiet",
           "--set", f"generators[0].pattern.max_flows={flows}",
           "--set", 'output.timeseries={every = "1ms", ports = ["switches"], flows = "none"}']
    _, samples = watch(cmd)
    s = json.load(open(os.path.join(out, "long", "summary.json")))
    n = s["flows_total"]
    peak = max(m for _, m, _ in samples)
    bound = BASE_MB + PER_FLOW_B * n / 1e6
    wall = samples[-1][0] if samples else 0.0
    ts = os.path.getsize(os.path.join(out, "long", "timeseries.csv")) / 1e6
    # Growth per flow during the run (before the results are built at the end): between a
    # quarter and three quarters of the wall time, flows are about proportional to time.
    q1 = [m for t, m, _ in samples if t <= wall * 0.25]
    q3 = [m for t, m, _ in samples if t <= wall * 0.75]
    if not q1 or len(q3) <= len(q1):
        # Growth cannot be measured without samples in both quarters: a failure, not a pass.
        sys.exit(f"soak: too few memory samples during the long run ({len(samples)} in {wall:.1f} s)")
    per_flow_run = (max(q3) - max(q1)) * 1e6 / (n * 0.5)
    print(f"long run: {n} flows, {s['events']} events in {wall:.0f} s; timeseries.csv "
          f"{ts:.0f} MB on disk; peak memory {peak:.1f} MB (bound {bound:.1f} MB = "
          f"{BASE_MB:.0f} MB + {PER_FLOW_B:.0f} B x flows); during the run "
          f"{per_flow_run:.0f} B per flow (bound {RUN_PER_FLOW_B:.0f})")
    ok = peak <= bound and per_flow_run <= RUN_PER_FLOW_B
    return ok, {"flows": n, "events": s["events"], "wall_s": wall, "peak_mb": peak,
                "bound_mb": bound, "run_bytes_per_flow": per_flow_run,
                "timeseries_mb": ts}


def many_runs(dcsim, out, seconds):
    # As many 3,000-flow runs as fit (each about 1 s here), in one process.
    t0 = time.monotonic()
    subprocess.run([dcsim, "run", SCENARIO, "--out", os.path.join(out, "one"), "--quiet"],
                   check=True)
    per_run = time.monotonic() - t0
    seeds = max(8, int(seconds / per_run * 0.9))
    sweep = os.path.join(out, "sweep")
    cmd = [dcsim, "sweep", SCENARIO, "--seeds", str(seeds), "--jobs", "1", "--quiet",
           "--out", sweep]

    def runs_done():
        try:
            return sum(1 for e in os.scandir(sweep) if e.is_dir() and e.name[0] != ".")
        except OSError:
            return 0

    _, samples = watch(cmd, progress=runs_done)
    wall = samples[-1][0] if samples else 0.0
    # Compare the runs of the second half with those of the first, leaving out the first
    # tenth (allocator warm-up) and the index built once every run is done (it reads every
    # run's summary, so it grows with the sweep, not with time).
    first = [m for _, m, d in samples if seeds * 0.1 <= d < seeds * 0.5]
    second = [m for _, m, d in samples if seeds * 0.5 <= d < seeds]
    if not first or not second:
        sys.exit("soak: too few memory samples during the sweep's runs")
    a, b = max(first), max(second)
    print(f"many runs: {seeds} runs in one process in {wall:.0f} s; peak memory "
          f"{a:.1f} MB during runs 10-50 %, {b:.1f} MB during runs 50-100 % "
          f"(band {BAND:.0%}); {max(m for _, m, _ in samples):.1f} MB with the index")
    return b <= a * (1 + BAND), {"runs": seeds, "wall_s": wall,
                                       "peak_first_half_mb": a, "peak_second_half_mb": b}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=60.0, help="total wall time (default 60)")
    ap.add_argument("--dcsim", default=os.path.join(ROOT, "target", "release", "dcsim"))
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--only", choices=["long", "many"], help="run one phase (all the time)")
    a = ap.parse_args()
    if not os.path.exists("/proc/self/status"):
        sys.exit("soak: needs Linux (/proc)")
    out = tempfile.mkdtemp(prefix="dcsim-soak-")
    try:
        half = a.minutes * 60 / (1 if a.only else 2)
        ok1, r1 = long_run(a.dcsim, out, half) if a.only != "many" else (True, None)
        ok2, r2 = many_runs(a.dcsim, out, half) if a.only != "long" else (True, None)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"minutes": a.minutes, "long_run": r1, "many_runs": r2}, f, indent=2)
    if not (ok1 and ok2):
        sys.exit("soak: memory outside the stated bounds")
    print("soak: memory within the stated bounds")


if __name__ == "__main__":
    main()
