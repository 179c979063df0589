#!/usr/bin/env python3
"""Times two dcsim builds (or one build under two environments) on one scenario, or on
rows of `dcsim bench --quick`, in turns.

On a shared virtual machine a run's speed moves by tens of per cent within minutes, so one
run of each build proves nothing about a change of a few per cent. This script runs the two
in ABBA order (A B, B A, A B, ...: a drift that is linear in time favours neither), checks
that every run wrote the same digest (a speed change must not change results), and reports
the ratio of each adjacent pair with a distribution-free 95 % interval of their median (from
the order of the ratios, which needs 6 pairs at least; with 8 it is their range). When the
interval holds 1, it says that the difference cannot be told from the machine's noise at
this number of pairs, and how large that noise was, rather than a figure.

    python3 validation/ab_time.py OLD_BIN NEW_BIN SCENARIO.toml [--pairs 8] \\
        [--set sim.duration=20ms ...] [--env-a VAR=VALUE] [--env-b VAR=VALUE] [--json FILE]
    python3 validation/ab_time.py OLD_BIN NEW_BIN --bench dumbbell,k8-,k24 [--pairs 8]

The time of a run is the `wall_seconds` of its summary.json (the event loop alone: not the
scenario's checking and building, nor the writing of results), divided by its events: ns
per event. A ratio above 1 means B is faster.

With `--bench ROWS` a run is `dcsim bench --quick --repeat 1 --only ROWS`, and each row
named gets its own ratios and verdict, in ns per packet-hop. Bench rows carry no digest:
the check is instead that every run of a row handled the same events and packet-hops.

Examples:
    # a change: the release before it against the new build
    python3 validation/ab_time.py /tmp/dcsim-old target/release/dcsim /tmp/dm5k.toml
    # the benchmark's dumbbell, k = 8 and k = 24 rows, 20 pairs
    python3 validation/ab_time.py /tmp/dcsim-old target/release/dcsim --bench dumbbell,k8-,k24 \\
        --pairs 20
    # one build, malloc tunables for B only
    python3 validation/ab_time.py target/release/dcsim target/release/dcsim S.toml \\
        --env-b GLIBC_TUNABLES=glibc.malloc.hugetlb=1
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def parse_env(items: list[str], flag: str) -> dict[str, str]:
    env = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            sys.exit(f"ab_time: {flag} {item!r}: expected VAR=VALUE")
        env[name] = value
    return env


def run_once(binary: str, scenario: Path, sets: list[str], env: dict[str, str],
             out: Path) -> dict:
    cmd = [binary, "run", str(scenario), "--out", str(out), "--quiet"]
    for s in sets:
        cmd += ["--set", s]
    proc = subprocess.run(cmd, text=True, capture_output=True, env={**os.environ, **env})
    if proc.returncode != 0:
        sys.exit(f"ab_time: {' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr.strip()}")
    summary = json.loads((out / "summary.json").read_text())
    events = summary["events"]
    if not events:
        sys.exit(f"ab_time: {scenario}: the run handled no events; nothing to time")
    return {
        "wall_seconds": summary["wall_seconds"],
        "events": events,
        "ns_per_event": summary["wall_seconds"] / events * 1e9,
        "digest": summary["digest"],
    }


def bench_once(binary: str, rows: str, env: dict[str, str], out: Path) -> dict[str, dict]:
    """One `dcsim bench --quick --repeat 1 --only ROWS` run: its rows by scenario name."""
    cmd = [binary, "bench", "--quick", "--repeat", "1", "--only", rows, "--json", str(out)]
    proc = subprocess.run(cmd, text=True, capture_output=True, env={**os.environ, **env})
    if proc.returncode != 0:
        sys.exit(f"ab_time: {' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr.strip()}")
    found = json.loads(out.read_text())["rows"]
    if not found:
        sys.exit(f"ab_time: --bench {rows}: no benchmark row matches")
    return {r["scenario"]: {
        "wall_seconds": r["wall_seconds"],
        "events": r["events"],
        "packet_hops": r["packet_hops"],
        "ns_per_hop": r["ns_per_hop"],
    } for r in found}


def median_interval(ratios: list[float]) -> tuple[float, float, float] | None:
    """A distribution-free interval of the median ratio: the k-th smallest and k-th largest
    ratios, with the largest k for which each tail holds at most 2.5 % of a binomial(n, 1/2),
    and the interval's exact coverage; None below 6 pairs, which allow no 95 % interval."""
    n = len(ratios)
    r = sorted(ratios)
    tail = 0.0
    k = 0
    while True:
        tail_next = tail + math.comb(n, k) / 2**n
        if tail_next > 0.025:
            break
        tail = tail_next
        k += 1
    if k == 0:
        return None
    return r[k - 1], r[n - k], 1 - 2 * tail


def spread(values: list[float]) -> float:
    """Half the range of `values` over their median, in per cent."""
    return (max(values) - min(values)) / 2 / statistics.median(values) * 100


def verdict(interval: tuple[float, float, float] | None, noise: float, pairs: int) -> str:
    if interval is None:
        return (f"cannot tell: {pairs} pairs allow no 95 % interval of the median ratio "
                "(6 pairs at least)")
    lo, hi, cover = interval
    what = f"{cover * 100:.1f} % interval of the median ratio"
    if lo > 1:
        return f"B is faster: by {lo:.3f}x to {hi:.3f}x ({what})"
    if hi < 1:
        return f"B is slower: A/B {lo:.3f} to {hi:.3f} ({what})"
    return (f"cannot tell: the {what}, {lo:.3f} to {hi:.3f}, holds 1; each build's runs "
            f"spread by +-{noise:.1f} % here, so {pairs} pairs resolve only a larger difference")


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def report(label: str, unit: str, runs: dict[str, list[dict]], key: str, pairs: int,
           same: str) -> dict:
    """Prints the ratios of one series (a scenario, or a bench row, then named by `label`),
    what its runs agreed on (`same`), and its verdict."""
    ratios = [a[key] / b[key] for a, b in zip(runs["a"], runs["b"])]
    interval = median_interval(ratios)
    noise = max(spread([r[key] for r in runs[s]]) for s in ("a", "b"))
    med = {s: statistics.median(r[key] for r in runs[s]) for s in ("a", "b")}
    text = verdict(interval, noise, pairs)
    print(f"{label}median {unit}: A {med['a']:.2f}, B {med['b']:.2f}; median A/B "
          f"{statistics.median(ratios):.3f}; B faster in {sum(r > 1 for r in ratios)} of "
          f"{len(ratios)} pairs; {same}")
    print(f"{label}{text}")
    return {
        "ratios_a_over_b": ratios,
        "median_ratio": statistics.median(ratios),
        "interval": None if interval is None else {
            "low": interval[0], "high": interval[1], "coverage": interval[2]},
        "spread_percent": noise,
        "verdict": text,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", help="the first dcsim binary (the baseline)")
    ap.add_argument("b", help="the second dcsim binary (the change); may be the same file")
    ap.add_argument("scenario", type=Path, nargs="?",
                    help="the scenario to run (or --bench)")
    ap.add_argument("--bench", metavar="ROWS",
                    help="time these rows of `dcsim bench --quick` instead of a scenario "
                         "(as its --only takes them, e.g. dumbbell,k8-,k24)")
    ap.add_argument("--pairs", type=int, default=8, help="pairs of runs (default 8)")
    ap.add_argument("--set", dest="sets", action="append", default=[], metavar="PATH=VALUE",
                    help="passed to both runs as dcsim run --set")
    ap.add_argument("--env-a", action="append", default=[], metavar="VAR=VALUE")
    ap.add_argument("--env-b", action="append", default=[], metavar="VAR=VALUE")
    ap.add_argument("--allow-different", action="store_true",
                    help="time builds whose results differ (the digests are still reported)")
    ap.add_argument("--json", type=Path, help="write the timings and the verdict here")
    args = ap.parse_args()

    if args.pairs < 2:
        sys.exit("ab_time: --pairs must be at least 2")
    if (args.scenario is None) == (args.bench is None):
        sys.exit("ab_time: give a scenario or --bench ROWS, not both or neither")
    if args.bench is not None and args.sets:
        sys.exit("ab_time: --set applies to a scenario, not to --bench")
    if args.scenario is not None and not args.scenario.is_file():
        sys.exit(f"ab_time: {args.scenario}: no such scenario file")
    for b in (args.a, args.b):
        if not (Path(b).is_file() and os.access(b, os.X_OK)):
            sys.exit(f"ab_time: {b}: not an executable file")
    env = {"a": parse_env(args.env_a, "--env-a"), "b": parse_env(args.env_b, "--env-b")}
    binary = {"a": args.a, "b": args.b}

    # One series per scenario or bench row: the runs of each side, in pair order.
    series: dict[str, dict[str, list[dict]]] = {}
    key, unit = ("ns_per_event", "ns/event") if args.bench is None else ("ns_per_hop", "ns/hop")
    with tempfile.TemporaryDirectory(prefix="dcsim-ab-") as tmp:
        for i in range(args.pairs):
            order = ("a", "b") if i % 2 == 0 else ("b", "a")
            for side in order:
                out = Path(tmp) / f"{side}{i}"
                if args.bench is None:
                    rows = {str(args.scenario): run_once(binary[side], args.scenario,
                                                         args.sets, env[side], out)}
                else:
                    rows = bench_once(binary[side], args.bench, env[side], out)
                for name, r in rows.items():
                    series.setdefault(name, {"a": [], "b": []})[side].append(r)
            for name, runs in series.items():
                if len(runs["a"]) != len(runs["b"]):
                    sys.exit(f"ab_time: {name}: only one of the builds has this bench row")
                a, b = runs["a"][-1], runs["b"][-1]
                label = "" if args.bench is None else f" {name}:"
                print(f"pair {i + 1}/{args.pairs} ({order[0].upper()} first):{label} "
                      f"A {a[key]:.2f} {unit}, B {b[key]:.2f}, A/B {a[key] / b[key]:.3f}",
                      flush=True)

    # The same results on both sides: the digests of scenario runs, the counts of bench rows.
    same = {}
    for name, runs in series.items():
        if args.bench is None:
            same[name] = sorted({r["digest"] for side in runs.values() for r in side})
        else:
            same[name] = sorted({f"{r['events']} events, {r['packet_hops']} packet-hops"
                                 for side in runs.values() for r in side})
        if len(same[name]) > 1 and not args.allow_different:
            what = "digests" if args.bench is None else "counts"
            sys.exit(f"ab_time: {name}: the runs' {what} differ ({'; '.join(same[name])}): the "
                     "builds do not give the same results; --allow-different times them anyway")

    results = {}
    for name, runs in series.items():
        label = "" if args.bench is None else f"{name}: "
        agreed = f"{'digests' if args.bench is None else 'counts'}: {'; '.join(same[name])}"
        results[name] = report(label, unit, runs, key, args.pairs, agreed)
    if args.json:
        doc = {
            "sets": args.sets,
            "a": {"binary": args.a, "env": env["a"]},
            "b": {"binary": args.b, "env": env["b"]},
        }
        if args.bench is None:
            name = str(args.scenario)
            doc.update({"scenario": name, "digests": same[name], **results[name]})
            doc["a"]["runs"] = series[name]["a"]
            doc["b"]["runs"] = series[name]["b"]
        else:
            doc["bench"] = args.bench
            doc["rows"] = {name: {"a_runs": series[name]["a"], "b_runs": series[name]["b"],
                                  "counts": same[name], **results[name]}
                           for name in series}
        write_atomically(args.json, json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
