"""Parameter sweeps on Dask: locally (a LocalCluster on this machine's cores) or on a
cluster, with the folders, index and resume rules of ``dcsim sweep`` (docs/sweep.md)."""

from __future__ import annotations

import json
import os
import sys
import time
from contextlib import nullcontext
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from dcsim import _dcsim
from dcsim._dask import dask_client
from dcsim.scenario import Scenario, toml_literal

if TYPE_CHECKING:
    from distributed import Client

TABLES = ("flows", "ports", "buckets", "tiers", "timeseries", "events")


@dataclass
class Sweep:
    """A finished sweep: ``out`` holds one folder per run, ``index.csv`` /
    ``index.json`` / ``index.parquet`` (parameters joined with headline results, one row per
    run) and ``dataset/`` (every run's tables as Parquet, each row tagged with its ``run``).

    ``ran`` lists the runs executed this time (the others were complete already) and
    ``failed`` maps the runs that failed to why.
    """

    out: Path
    scenario: str
    ran: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    @property
    def index(self) -> pd.DataFrame:
        """index.parquet: one row per run, the varied values typed (numbers as numbers)."""
        return pd.read_parquet(self.out / "index.parquet")

    def table(self, name: str) -> pd.DataFrame:
        """A table of every run at once (``flows``, ``ports``, ``buckets``, ``tiers``,
        ``timeseries``, ``events``) with a first column ``run``; join with :attr:`index` on ``run``."""
        if name not in TABLES:
            raise ValueError(f"no table {name!r}; tables: {', '.join(TABLES)}")
        d = self.out / "dataset" / name
        if not d.is_dir() or not any(d.glob("*.parquet")):
            raise FileNotFoundError(f"{d}: no run wrote a {name} table")
        return pd.read_parquet(d)

    def joined(self, name: str) -> pd.DataFrame:
        """:meth:`table` with each row's run parameters and seed from the index."""
        idx = self.index
        keep = [c for c in idx.columns if c == "run" or c == "seed" or c in self._params(idx)]
        return self.table(name).merge(idx[keep], on="run", how="left")

    @staticmethod
    def _params(idx: pd.DataFrame) -> list[str]:
        return list(idx.columns[: list(idx.columns).index("seed")])

    def __repr__(self) -> str:
        return f"<dcsim.Sweep {self.scenario!r} in {str(self.out)!r}: ran {len(self.ran)}, failed {len(self.failed)}>"


def _vary_args(vary: Mapping[str, Iterable[Any]] | Sequence[str]) -> list[str]:
    """``{"path": [v1, v2]}`` as ``--vary path=V1,V2`` arguments (values as TOML, so the
    folders are those ``dcsim sweep`` names); strings in ``--vary`` form pass as they are."""
    if isinstance(vary, Mapping):
        out = []
        for path, values in vary.items():
            values = list(values)
            if not values:
                raise ValueError(f"vary {path!r}: no values")
            out.append(f"{path}=" + ",".join(toml_literal(v) for v in values))
        return out
    return [str(v) for v in vary]


def _variant_args(variants: Mapping[str, Mapping[str, Any]] | Sequence[str]) -> list[str]:
    """``{"name": {"path": value}}`` as ``--variant name:path=V,path=V`` arguments (values
    as TOML); strings in ``--variant`` form pass as they are."""
    if isinstance(variants, Mapping):
        out = []
        for name, sets in variants.items():
            if not isinstance(sets, Mapping):
                raise ValueError(f"variant {name!r}: expected a mapping of key paths to values")
            out.append(f"{name}:" + ",".join(f"{k}={toml_literal(v)}" for k, v in sets.items()))
        return out
    return [str(v) for v in variants]


def _run_one(args: str, sets: list[str], out: str, name: str, point: str) -> tuple[str, str]:
    """One Dask task: runs a run and commits its folder; returns (name, digest)."""
    a = json.loads(args)
    return name, _dcsim.sweep_run(a["text"], a["path"], sets, out, name, point)


def sweep(
    scenario: Scenario | str | os.PathLike[str],
    vary: Mapping[str, Iterable[Any]] | Sequence[str] = (),
    seeds: int | None = None,
    out: str | os.PathLike[str] | None = None,
    client: Client | str | None = None,
    columns: Sequence[str] = (),
    workers: int | None = None,
    progress: bool = True,
    variants: Mapping[str, Mapping[str, Any]] | Sequence[str] = (),
) -> Sweep:
    """Runs ``scenario`` over the cross product of ``vary`` and ``seeds`` on Dask.

    ``vary`` maps key paths to values (``{"generators[0].pattern.load": [0.3, 0.5]}``) or
    is a list of ``--vary`` strings (``["generators[0].pattern.load=0.3,0.5"]``);
    ``seeds=N`` runs seeds s..s+N-1 of each point (s = the point's ``sim.seed``).
    ``variants`` names sets of overrides, one axis crossed with ``vary`` whose names label
    the folders, the index's ``variant`` column and the plots'
    (``{"dctcp": {"transport.cc": "dctcp"}, "xpass": {"transport.kind": "expresspass"}}``,
    or ``--variant`` strings).
    ``out`` defaults to ``results/sweep/<name>`` as for ``dcsim sweep``, and must be a path
    every worker sees. ``client`` is a ``distributed.Client`` or a scheduler address; with
    none, a LocalCluster with ``workers`` single-threaded worker processes (default: the
    number of cores) is started for the sweep and closed after.

    Each run is one task that runs the point and commits its folder whole, so a folder is
    the complete result of its point or absent; a run already complete on disk for the same
    point and scenario is skipped (``dcsim sweep`` and this function resume each other's
    sweeps), and a changed one is redone. A worker that dies mid-run loses only that run,
    which Dask retries on another worker. Results are identical (digests) however many
    workers run them. Runs that fail are reported in the index and in ``Sweep.failed``.
    """
    from distributed import as_completed

    if not isinstance(scenario, Scenario):
        scenario = Scenario.from_file(scenario)
    args = json.dumps(
        {
            "text": scenario.text,
            "path": scenario.path,
            "sets": scenario.overrides,
            "vary": _vary_args(vary),
            "variants": _variant_args(variants),
            "seeds": seeds,
            "out": None if out is None else os.fspath(out),
            "columns": list(columns),
        }
    )
    plan = json.loads(_dcsim.sweep_plan(args))
    out_dir = Path(plan["out"])
    todo = [r for r in plan["runs"] if r["state"] != "complete"]
    result = Sweep(out=out_dir, scenario=plan["scenario"])
    say = (lambda m: print(m, file=sys.stderr, flush=True)) if progress else (lambda m: None)
    say(f"{plan['scenario']}: {len(plan['runs'])} runs, {len(plan['runs']) - len(todo)} complete, {len(todo)} to run")
    out_dir.mkdir(parents=True, exist_ok=True)

    with dask_client(client, workers) if todo else nullcontext(None) as client:
        started = time.monotonic()
        futures = [
            client.submit(
                _run_one,
                args,
                r["sets"],
                str(out_dir.resolve()),
                r["name"],
                json.dumps(r["point"]),
                key=f"dcsim-run-{plan['scenario']}-{r['name']}-{r['point']['scenario_hash']}",
                pure=False,
            )
            for r in todo
        ]
        names = {f.key: r["name"] for f, r in zip(futures, todo)}
        # as_completed needs a client even for no futures: nothing to run, nothing to wait for.
        for i, f in enumerate(as_completed(futures) if futures else [], 1):
            name = names[f.key]
            try:
                f.result()
                result.ran.append(name)
                say(f"  [{i}/{len(todo)}] {name} done ({time.monotonic() - started:.1f} s)")
            except Exception as e:  # a run's failure is reported, not raised
                result.failed[name] = f"{type(e).__name__}: {e}"
                say(f"  [{i}/{len(todo)}] {name} FAILED: {e}")
    _dcsim.sweep_index(args, sorted(result.failed.items()))
    say(f"index: {out_dir / 'index.csv'}")
    return result
