"""dcsim: a fast, deterministic packet-level simulator for datacenter transports.

The simulator is Rust; this package loads and edits scenarios, runs them (with the GIL
released, so threads run several at once), returns results as pandas (or polars)
DataFrames built from Arrow columns, runs the paper reproductions, and runs parameter
sweeps locally or on a Dask cluster.

>>> import dcsim
>>> sc = dcsim.Scenario.from_file("scenarios/dctcp-dumbbell.toml")
>>> res = sc.set("sim.duration", "5ms").run()
>>> res.flows[["flow_id", "window_goodput_gbps"]]

The API reference is docs/python.md.
"""

from dcsim._dcsim import ScenarioError, __version__
from dcsim.compare import Comparison, compare
from dcsim.repro import Repro, experiments, repro
from dcsim.result import Result
from dcsim.scenario import Scenario
from dcsim.sweep import Sweep, sweep

__all__ = [
    "Comparison",
    "Repro",
    "Result",
    "Scenario",
    "ScenarioError",
    "Sweep",
    "__version__",
    "compare",
    "experiments",
    "repro",
    "sweep",
]
