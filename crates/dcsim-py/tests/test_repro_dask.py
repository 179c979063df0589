"""Paper reproductions on Dask against `dcsim repro`: the same folders and byte-identical
tables and result.json; a worker killed mid-run loses only its run; a finished experiment
runs nothing again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

import dcsim
from conftest import REPO, run_cli

NAME = "sdn-ecn"  # 28 quick runs of about 0.2 s each


@pytest.fixture(scope="module")
def reference(cli, tmp_path_factory):
    """`dcsim repro NAME --quick`: what every other way must write."""
    out = tmp_path_factory.mktemp("cli") / NAME
    run_cli(cli, "repro", NAME, "--quick", "--out", str(out))
    return out


def outputs(out) -> dict[str, bytes]:
    """The experiment's own files (result.json, its CSV tables, the plot data) and every
    run's summary.json, by path."""
    files = [out / "result.json", *out.glob("*.csv"), *(out / "plots").glob("*.json"), *out.glob("runs/*/summary.json")]
    return {str(p.relative_to(out)): p.read_bytes() for p in files}


def same_outputs(a, b) -> None:
    x, y = outputs(a), outputs(b)
    assert sorted(x) == sorted(y)
    differ = [k for k in x if x[k] != y[k] and not k.endswith("summary.json")]
    assert differ == [], differ
    # A run's summary records its wall time too: its digest is the run's.
    for k in (k for k in x if k.endswith("summary.json")):
        assert json.loads(x[k])["digest"] == json.loads(y[k])["digest"], k


def test_dask_repro_equals_dcsim_repro(cluster, reference, tmp_path):
    rep = dcsim.repro(NAME, quick=True, out=tmp_path / "dask", client=cluster, progress=False)
    same_outputs(tmp_path / "dask", reference)
    assert rep.result == json.loads((reference / "result.json").read_text())
    # Complete now: planned again, nothing is left to run.
    plan = json.loads(dcsim._dcsim.repro_plan(NAME, True, str(tmp_path / "dask"), False))
    assert plan["runs"] and all(r["complete"] for r in plan["runs"])


def test_a_worker_killed_mid_run_loses_only_its_run(cluster, reference, tmp_path):
    pids = list(cluster.run(os.getpid).values())
    killed = threading.Event()

    def kill_one():
        time.sleep(1.0)  # a few runs in: the worker is mid-run
        os.kill(pids[0], signal.SIGKILL)
        killed.set()

    threading.Thread(target=kill_one).start()
    out = tmp_path / "killed"
    started = time.monotonic()
    dcsim.repro(NAME, quick=True, out=out, client=cluster, progress=False)
    # The kill came while runs were still going (it lands 1 s in).
    assert killed.is_set() and time.monotonic() - started > 1.0
    same_outputs(out, reference)
    # No half-written folder, lock or temporary file is left behind.
    assert [p for p in out.rglob(".*")] == []
    cluster.wait_for_workers(2, timeout=60)


def test_python_m_dcsim_repro_prints_verdicts_and_refuses_unknown_names(tmp_path):
    ok = subprocess.run(
        [sys.executable, "-m", "dcsim", "repro", "xpass-jitter", "--quick", "--workers", "2", "--quiet",
         "--out", str(tmp_path / "j")],
        capture_output=True, text=True, cwd=REPO, timeout=600,
    )
    assert ok.returncode == 0, ok.stderr
    assert "claim" in ok.stdout and (tmp_path / "j" / "result.json").exists()
    bad = subprocess.run([sys.executable, "-m", "dcsim", "repro", "no-such-thing", "--workers", "1"],
                         capture_output=True, text=True, cwd=REPO, timeout=600)
    assert bad.returncode == 2 and "no experiment" in bad.stderr
