"""``python -m dcsim sweep FILE --vary PATH=V1,V2 ... [--scheduler ADDRESS]``: a sweep on
Dask, with the arguments of ``dcsim sweep``; ``python -m dcsim repro NAME [--quick]
[--scheduler ADDRESS]``: a paper reproduction on Dask, one task per run (docs/python.md)."""

from __future__ import annotations

import argparse
import os
import sys

from dcsim import ScenarioError, Scenario, repro, sweep


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dcsim", description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sweep", help="run a sweep on Dask (a LocalCluster, or --scheduler)")
    s.add_argument("file", help="scenario file (TOML)")
    s.add_argument("--vary", action="append", default=[], metavar="PATH=V1,V2,...")
    s.add_argument("--variant", dest="variants", action="append", default=[], metavar="NAME:PATH=VALUE,...")
    s.add_argument("--seeds", type=int, help="seeds s..s+N-1 of each point")
    s.add_argument("--set", dest="sets", action="append", default=[], metavar="PATH=VALUE")
    s.add_argument("--out", help="output folder (default results/sweep/<name>); every worker must see it")
    s.add_argument("--column", dest="columns", action="append", default=[], metavar="NAME=/json/pointer")
    s.add_argument("--scheduler", help="address of a Dask scheduler (default: a LocalCluster here)")
    s.add_argument("--workers", type=int, help="LocalCluster worker processes (default: cores)")
    s.add_argument("--quiet", "-q", action="store_true")
    r = sub.add_parser("repro", help="run a paper reproduction on Dask (a LocalCluster, or --scheduler)")
    r.add_argument("name", help="experiment name (dcsim list)")
    r.add_argument("--quick", action="store_true", help="the short form")
    r.add_argument("--out", help="output folder (default results/repro/NAME[-quick]); every worker must see it")
    r.add_argument("--fresh", action="store_true", help="run every run again")
    r.add_argument("--scheduler", help="address of a Dask scheduler (default: a LocalCluster here)")
    r.add_argument("--workers", type=int, help="LocalCluster worker processes (default: cores)")
    r.add_argument("--quiet", "-q", action="store_true")
    a = p.parse_args(argv)
    if a.cmd == "repro":
        return _repro(a)
    try:
        sc = Scenario.from_file(a.file)
        for kv in a.sets:
            sc.override(kv)
        res = sweep(
            sc,
            a.vary,
            seeds=a.seeds,
            out=a.out,
            client=a.scheduler,
            columns=a.columns,
            workers=a.workers,
            progress=not a.quiet,
            variants=a.variants,
        )
    except ScenarioError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if res.failed:
        print(f"error: {len(res.failed)} runs failed: {', '.join(sorted(res.failed))}", file=sys.stderr)
        return 1
    return 0


def _repro(a: argparse.Namespace) -> int:
    """``python -m dcsim repro``: prints the verdicts as ``dcsim repro`` does; exit 1 if a
    check failed or a run failed, 2 for an unknown experiment."""
    try:
        res = repro(
            a.name,
            quick=a.quick,
            out=a.out,
            fresh=a.fresh,
            client=a.scheduler,
            workers=a.workers or (None if a.scheduler else os.cpu_count() or 1),
            progress=not a.quiet,
        )
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    for c in res.result.get("claims", []):
        print(f"{a.name}: claim {c['id']}: {c['metric']} = {c['measured']} ({c['verdict']})")
    failed = [c for c in res.result.get("checks", []) if not c.get("passed", True)]
    for c in failed:
        print(f"{a.name}: check {c['id']} FAILED: {c['what']} = {c['measured']}", file=sys.stderr)
    print(f"{a.name}: result.json, CSV data and plots in {res.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
