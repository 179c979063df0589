"""Results of a run as pandas (or polars) DataFrames built from Arrow columns."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from dcsim import _dcsim

if TYPE_CHECKING:
    import pandas as pd
    import polars as pl

TABLES = ("flows", "ports", "buckets", "tiers", "timeseries", "events")


class Result:
    """Everything a run produced: ``summary`` (summary.json as a dict) and the tables of
    docs/output.md as DataFrames (``flows``, ``ports``, ``buckets``, ``tiers``,
    ``timeseries``, ``events``), with the columns, order and values of the CSV files ``dcsim run``
    writes. Each DataFrame's ``attrs["units"]`` maps its columns to their units.

    Integer columns that can be empty (``end_ns``, ``fct_ns``, ``size_bytes``, the
    per-transport counters) are float64 with NaN in pandas, as ``pandas.read_csv`` reads
    them; :meth:`table` keeps the exact Arrow types (nullable unsigned integers).
    """

    def __init__(self, native: _dcsim.NativeResult) -> None:
        self._native = native

    @cached_property
    def summary(self) -> dict[str, Any]:
        """summary.json: headline figures, conservation counters, the resolved scenario."""
        return json.loads(self._native.summary_json())

    @property
    def digest(self) -> str:
        """Hash of the CSV outputs: equal digests, byte-identical CSV files."""
        return self._native.digest

    def table(self, name: str) -> pa.Table | None:
        """The table ``name`` as a pyarrow Table with its schema metadata (units and
        meanings per field); None for ``timeseries`` of a run that did not sample and
        ``events`` of one that logged no flow."""
        batch = self._native.table(name)
        return None if batch is None else pa.Table.from_batches([batch])

    def _frame(self, name: str) -> pd.DataFrame | None:
        t = self.table(name)
        if t is None:
            return None
        df = t.to_pandas()
        df.attrs["units"] = {
            f.name: f.metadata.get(b"unit", b"").decode() for f in t.schema if f.metadata
        }
        return df

    @cached_property
    def flows(self) -> pd.DataFrame:
        """One row per flow (flows.csv)."""
        return self._frame("flows")

    @cached_property
    def ports(self) -> pd.DataFrame:
        """One row per port, counters over the measurement window (ports.csv)."""
        return self._frame("ports")

    @cached_property
    def buckets(self) -> pd.DataFrame:
        """FCT and slowdown by flow-size bucket (buckets.csv)."""
        return self._frame("buckets")

    @cached_property
    def tiers(self) -> pd.DataFrame:
        """Port counters aggregated per link tier (tiers.csv)."""
        return self._frame("tiers")

    @cached_property
    def timeseries(self) -> pd.DataFrame | None:
        """Periodic samples in long form (timeseries.csv); None without
        ``[output.timeseries]``."""
        return self._frame("timeseries")

    @cached_property
    def events(self) -> pd.DataFrame | None:
        """The per-flow event log in long form (events.csv: every change of the chosen
        flows' state and counters, stamped when it happened); None without
        ``[output.events]``."""
        return self._frame("events")

    def to_polars(self, name: str) -> pl.DataFrame | None:
        """The table ``name`` as a polars DataFrame (needs polars installed)."""
        import polars as pl

        t = self.table(name)
        return None if t is None else pl.from_arrow(t)

    def write(
        self,
        dir: str | os.PathLike[str],
        format: str = "csv",
        extra: Iterable[tuple[str, bytes]] = (),
    ) -> None:
        """Writes the files ``dcsim run`` writes into ``dir``, committed whole (a
        crash never leaves a mixed folder; docs/output.md): the tables as ``csv``,
        ``parquet`` or ``both``, then summary.json and manifest.json."""
        self._native.write(os.fspath(dir), format, list(extra))

    def __repr__(self) -> str:
        s = self.summary
        return (
            f"<dcsim.Result {s['scenario']!r} seed {s['seed']}: {s['flows_completed']}/"
            f"{s['flows_total']} flows done, {s['events']} events, digest {self.digest}>"
        )
