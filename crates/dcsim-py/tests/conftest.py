"""Shared fixtures: the repository, the dcsim binary the Python results are compared with."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCENARIOS = REPO / "scenarios"


@pytest.fixture(scope="session")
def cli() -> Path:
    """The dcsim command-line binary (DCSIM_BIN, else target/release/dcsim): the Python
    package must agree with it byte for byte."""
    p = Path(os.environ.get("DCSIM_BIN", REPO / "target/release/dcsim"))
    if not p.exists():
        pytest.fail(f"{p} not found: build it with cargo build --release -p dcsim-cli, or set DCSIM_BIN")
    return p


def run_cli(cli: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([str(cli), *args], capture_output=True, text=True, cwd=REPO)
    if check and r.returncode != 0:
        raise AssertionError(f"dcsim {' '.join(args)} failed ({r.returncode}): {r.stderr}")
    return r


@pytest.fixture(scope="module")
def cluster():
    """A LocalCluster of two single-threaded worker processes, one per test module."""
    from distributed import Client, LocalCluster

    c = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0")
    client = Client(c)
    yield client
    client.close()
    c.close()

