"""Paper reproductions: ``dcsim repro NAME`` from Python."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from dcsim import _dcsim
from dcsim._dask import dask_client

if TYPE_CHECKING:
    from distributed import Client


@dataclass
class Repro:
    """A finished experiment.

    ``result`` is its result.json (the figures named in the paper's experiments list and the
    parameters that ran); ``plots`` the data of each figure, by plot file name, as a long
    DataFrame (``panel``, ``xlabel``, ``ylabel``, ``series``, ``x``, ``y``, and ``category``
    for bar charts); ``tables`` the CSV files the experiment wrote (``fct_buckets``,
    ``throughput``, ..., by file stem); ``out`` the folder holding them and every run's own
    results (``out/runs/NAME``). ``claims`` and ``checks`` are result.json's claims tested
    (with their verdicts) and checks, one row each.
    """

    name: str
    out: Path
    result: dict[str, Any]
    plots: dict[str, pd.DataFrame] = field(default_factory=dict)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def claims(self) -> pd.DataFrame:
        """The paper's claims the experiment tests: id, paper, metric, measured, bound, verdict."""
        return pd.DataFrame(self.result.get("claims", []))

    @property
    def checks(self) -> pd.DataFrame:
        """What must hold in any form: id, what, measured, bound, passed."""
        return pd.DataFrame(self.result.get("checks", []))

    def __repr__(self) -> str:
        return f"<dcsim.Repro {self.name!r} in {str(self.out)!r}: plots {sorted(self.plots)}, tables {sorted(self.tables)}>"


def _plot_frame(spec: dict[str, Any]) -> pd.DataFrame:
    """A plot specification (plots/NAME.json) as one long DataFrame."""
    rows = []
    for panel in spec["panels"]:
        cats = panel.get("categories") or []
        for s in panel["series"]:
            for x, y in zip(s["x"], s["y"]):
                row = {
                    "panel": panel["title"],
                    "xlabel": panel["xlabel"],
                    "ylabel": panel["ylabel"],
                    "series": s["label"],
                    "x": x,
                    "y": y,
                }
                if cats:
                    i = int(x)
                    row["category"] = cats[i] if 0 <= i < len(cats) else None
                rows.append(row)
    return pd.DataFrame(rows)


def experiments() -> dict[str, str]:
    """The experiments ``repro`` runs, name -> what each reproduces."""
    return dict(_dcsim.experiments())


def _repro_run(name: str, quick: bool, out: str, fresh: bool, run: str) -> str:
    """One Dask task: runs one run of an experiment into its folder; returns its name."""
    _dcsim.repro_run(name, quick, out, fresh, run)
    return run


def repro(
    name: str,
    quick: bool = True,
    out: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    fresh: bool = False,
    client: Client | str | None = None,
    workers: int | None = None,
    progress: bool = True,
) -> Repro:
    """Runs a paper-reproduction experiment, as ``dcsim repro NAME [--quick]``.

    ``out`` defaults to ``results/repro/NAME`` (``NAME-quick`` for the quick form), like
    the command line; complete runs found there are reused unless ``fresh``. ``jobs`` is
    the number of runs executed in parallel (default: the number of cores). The GIL is
    released while it runs.

    On Dask: with ``client`` (a ``distributed.Client`` or a scheduler address), or with
    ``workers`` (a LocalCluster of that many single-threaded worker processes, started and
    closed here), each of the experiment's runs is one task that writes its folder under
    ``out/runs/`` whole, exactly as the command line does; ``out`` must be a path every
    worker sees. When the last run lands, the experiment is assembled here from the
    finished runs (tables, plots, result.json with its verdicts), byte-identical to a local
    run. A worker that dies mid-run loses only that run, which Dask runs again elsewhere;
    an interrupted call resumes where it stopped, as ``dcsim repro`` does. An experiment
    that runs the others (``xpass-zero-loss``) runs here. The longest run bounds the wall
    time however many workers there are.
    """
    if out is None:
        out = Path("results/repro") / (f"{name}-quick" if quick else name)
    out = Path(out)
    jobs = jobs or os.cpu_count() or 1
    if client is not None or workers is not None:
        _on_dask(name, quick, out, fresh, client, workers, progress)
        fresh = False  # every run is in its folder now: the assembly reuses them all
    result = json.loads(_dcsim.repro(name, quick, os.fspath(out), jobs, fresh))
    tables = {p.stem: pd.read_csv(p) for p in sorted(out.glob("*.csv"))}
    plots = {p.stem: _plot_frame(json.loads(p.read_text())) for p in sorted((out / "plots").glob("*.json"))}
    return Repro(name=name, out=out, result=result, plots=plots, tables=tables)


def _on_dask(
    name: str,
    quick: bool,
    out: Path,
    fresh: bool,
    client: Client | str | None,
    workers: int | None,
    progress: bool,
) -> None:
    """Runs the runs of the experiment's plan that are not complete, one Dask task each;
    raises RuntimeError naming the runs that failed."""
    from distributed import as_completed

    say = (lambda m: print(m, file=sys.stderr, flush=True)) if progress else (lambda m: None)
    plan = json.loads(_dcsim.repro_plan(name, quick, os.fspath(out), fresh))
    if plan["runs"] is None:
        say(f"{name} runs the other experiments: it runs here")
        return
    todo = [r["name"] for r in plan["runs"] if not r["complete"]]
    say(f"{name}: {len(plan['runs'])} runs, {len(plan['runs']) - len(todo)} complete, {len(todo)} to run")
    if not todo:
        return
    failed = {}
    with dask_client(client, workers) as client:
        started = time.monotonic()
        where = os.fspath(out.resolve())
        # Keys name the folder too: two reproductions of one experiment into two folders
        # on one cluster are different tasks.
        folder = hashlib.sha256(where.encode()).hexdigest()[:12]
        futures = {
            client.submit(
                _repro_run, name, quick, where, fresh, run, key=f"dcsim-repro-{name}-{folder}-{run}", pure=False
            ): run
            for run in todo
        }
        for i, f in enumerate(as_completed(list(futures)), 1):
            run = futures[f]
            try:
                f.result()
                say(f"  [{i}/{len(todo)}] {run} done ({time.monotonic() - started:.1f} s)")
            except Exception as e:  # reported together below
                failed[run] = f"{type(e).__name__}: {e}"
                say(f"  [{i}/{len(todo)}] {run} FAILED: {e}")
    if failed:
        raise RuntimeError(f"{name}: {len(failed)} runs failed: " + "; ".join(f"{k}: {v}" for k, v in sorted(failed.items())))
