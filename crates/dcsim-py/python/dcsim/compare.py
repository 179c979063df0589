"""Runs side by side: ``dcsim compare`` from Python."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from dcsim import _dcsim


@dataclass
class Comparison:
    """A comparison written to ``out``: ``table`` is the text ``dcsim compare`` prints;
    ``runs`` (one row per run: flows, FCT, losses, the compared port's queue) and
    ``buckets`` (FCT and slowdown per flow size with their 95 % intervals, ``_lo`` and
    ``_hi``; empty cells where a sample cannot bound a side) are its CSV files; the
    figures are in ``out/plots`` and the page is ``out/report.html``."""

    out: Path
    table: str

    @property
    def runs(self) -> pd.DataFrame:
        return pd.read_csv(self.out / "runs.csv")

    @property
    def buckets(self) -> pd.DataFrame:
        return pd.read_csv(self.out / "buckets.csv")

    def __repr__(self) -> str:
        return f"<dcsim.Comparison in {str(self.out)!r}>\n{self.table}"


def compare(
    *folders: str | os.PathLike,
    names: list[str] | None = None,
    out: str | os.PathLike = "results/compare",
    port: str | None = None,
) -> Comparison:
    """Put results folders side by side, as ``dcsim compare``: runs of ``Scenario.run``
    written with ``Result.write``, of the CLI, of the kernel twin, or folders of runs (a
    reproduction, a sweep). ``names`` label the runs in order; ``port`` (``"sw->h0"``) is
    the port whose sampled queue is compared. Raises ValueError on a folder that holds no
    run, more names than runs, or an ``out`` that is itself a results folder."""
    text = _dcsim.compare([os.fspath(f) for f in folders], list(names or []), os.fspath(out), port)
    return Comparison(Path(out), text.rsplit("\nwrote ", 1)[0])
