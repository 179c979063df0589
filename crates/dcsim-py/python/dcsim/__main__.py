"""``python -m dcsim sweep FILE --vary PATH=V1,V2 ... [--scheduler ADDRESS]``: a sweep on
Dask, with the arguments of ``dcsim sweep`` (docs/python.md)."""

from __future__ import annotations

import argparse
import sys

from dcsim import ScenarioError, Scenario, sweep


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
    a = p.parse_args(argv)
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


if __name__ == "__main__":
    sys.exit(main())
