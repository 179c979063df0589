"""Paper reproductions: ``dcsim repro NAME`` from Python."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dcsim import _dcsim


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


def repro(
    name: str,
    quick: bool = True,
    out: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    fresh: bool = False,
) -> Repro:
    """Runs a paper-reproduction experiment, as ``dcsim repro NAME [--quick]``.

    ``out`` defaults to ``results/repro/NAME`` (``NAME-quick`` for the quick form), like
    the command line; complete runs found there are reused unless ``fresh``. ``jobs`` is
    the number of runs executed in parallel (default: the number of cores). The GIL is
    released while it runs.
    """
    if out is None:
        out = Path("results/repro") / (f"{name}-quick" if quick else name)
    out = Path(out)
    jobs = jobs or os.cpu_count() or 1
    result = json.loads(_dcsim.repro(name, quick, os.fspath(out), jobs, fresh))
    tables = {p.stem: pd.read_csv(p) for p in sorted(out.glob("*.csv"))}
    plots = {p.stem: _plot_frame(json.loads(p.read_text())) for p in sorted((out / "plots").glob("*.json"))}
    return Repro(name=name, out=out, result=result, plots=plots, tables=tables)
