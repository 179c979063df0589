"""Sweeps on Dask against `dcsim sweep`: same folders, same digests; a worker killed mid-run
and a sweep killed part-way lose nothing and duplicate nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

import dcsim
from conftest import SCENARIOS, run_cli

FILE = str(SCENARIOS / "websearch-star.toml")
VARY = {"generators[0].pattern.load": [0.3, 0.5], "transport.cc": ["dctcp", "cubic"]}
VARY_CLI = ["--vary", "generators[0].pattern.load=0.3,0.5", "--vary", 'transport.cc="dctcp","cubic"']


def scenario(flows: int) -> dcsim.Scenario:
    return dcsim.Scenario.from_file(FILE).set("generators[0].pattern.max_flows", flows)


def digests(out) -> dict[str, str]:
    idx = pd.read_csv(out / "index.csv")
    assert (idx["status"] == "ok").all(), idx[["run", "status"]]
    assert idx["run"].is_unique
    return dict(zip(idx["run"], idx["digest"]))


@pytest.fixture(scope="module")
def reference(cli, tmp_path_factory):
    """`dcsim sweep` of the same points: the digests every other way must reproduce."""
    out = tmp_path_factory.mktemp("cli") / "sweep"
    run_cli(cli, "sweep", FILE, *VARY_CLI, "--seeds", "2", "--set", "generators[0].pattern.max_flows=1500",
            "--out", str(out))
    return out


def test_dask_sweep_equals_dcsim_sweep(cluster, reference, tmp_path):
    res = dcsim.sweep(scenario(1500), VARY, seeds=2, out=tmp_path / "dask", client=cluster, progress=False)
    assert not res.failed and len(res.ran) == 8
    assert digests(tmp_path / "dask") == digests(reference)
    assert sorted(p.name for p in (tmp_path / "dask").iterdir() if "seed=" in p.name) == sorted(digests(reference))
    # One Parquet dataset for the whole sweep, joined to the index on `run`.
    flows = res.joined("flows")
    assert len(flows) == 8 * 1500 and flows["run"].nunique() == 8
    assert set(flows["transport.cc"]) == {"dctcp", "cubic"}  # TOML strings, unquoted
    assert res.index["generators[0].pattern.load"].dtype.kind == "f"
    # The CLI's sweep folder has the same dataset.
    cli_flows = pd.read_parquet(reference / "dataset" / "flows").sort_values(["run", "flow_id"], ignore_index=True)
    pd.testing.assert_frame_equal(
        res.table("flows").sort_values(["run", "flow_id"], ignore_index=True), cli_flows
    )
    # A second call finds every run complete and runs nothing.
    again = dcsim.sweep(scenario(1500), VARY, seeds=2, out=tmp_path / "dask", client=cluster, progress=False)
    assert again.ran == []


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(cluster, reference, tmp_path):
    pids = list(cluster.run(os.getpid).values())
    out = tmp_path / "killed"
    killed = threading.Event()

    def kill_one():
        # Each run takes about half a second; wait until the first runs are well under way.
        time.sleep(0.3)
        os.kill(pids[0], signal.SIGKILL)
        killed.set()

    threading.Thread(target=kill_one).start()
    res = dcsim.sweep(scenario(1500), VARY, seeds=2, out=out, client=cluster, progress=False)
    assert killed.is_set()
    assert not res.failed and sorted(res.ran) == sorted(digests(reference))
    assert digests(out) == digests(reference)
    # No half-written folder, lock or temporary file is left behind.
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []
    assert pd.read_parquet(out / "dataset" / "flows")["run"].nunique() == 8
    cluster.wait_for_workers(2, timeout=60)


def test_an_interrupted_sweep_resumes(reference, tmp_path):
    out = tmp_path / "resumed"
    cmd = [sys.executable, "-m", "dcsim", "sweep", FILE, *VARY_CLI, "--seeds", "2",
           "--set", "generators[0].pattern.max_flows=1500", "--out", str(out), "--workers", "1"]
    p = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, start_new_session=True)
    done = 0
    for line in p.stderr:
        if " done (" in line:
            done += 1
            if done == 2:
                break
    os.killpg(p.pid, signal.SIGKILL)  # the client, its scheduler and workers, at once
    p.wait()
    assert not (out / "index.csv").exists()
    finished = {d.name for d in out.iterdir() if (d / "manifest.json").exists()}
    assert 2 <= len(finished) < 8
    res = dcsim.sweep(scenario(1500), VARY, seeds=2, out=out, workers=2, progress=False)
    assert not res.failed
    assert set(res.ran) == set(digests(reference)) - finished
    assert digests(out) == digests(reference)



def test_dcsim_sweep_resumes_a_python_sweep(cli, tmp_path):
    out = tmp_path / "py"
    dcsim.sweep(scenario(300), ["generators[0].pattern.load=0.3,0.5"], out=out, workers=1, progress=False)
    r = run_cli(cli, "sweep", FILE, "--vary", "generators[0].pattern.load=0.3,0.5",
                "--set", "generators[0].pattern.max_flows=300", "--out", str(out))
    assert "skipped 2 runs already complete" in r.stderr


def test_table_values_written_either_way_are_the_same_runs(cli, tmp_path):
    """A table varied on the command line (bare keys, no spaces) and from Python (quoted
    keys, another order) names the same runs: each side finds the other's complete."""
    out = tmp_path / "tables"
    run_cli(cli, "sweep", FILE, "--vary",
            'transport={kind="tcp",cc="dctcp"},{cc={kind="cubic",c=0.4},kind="tcp",profile="linux"}',
            "--set", "generators[0].pattern.max_flows=100", "--out", str(out))
    tables = [{"kind": "tcp", "cc": "dctcp"},
              {"kind": "tcp", "profile": "linux", "cc": {"c": 0.4, "kind": "cubic"}}]
    res = dcsim.sweep(scenario(100), {"transport": tables}, out=out, progress=False)
    assert res.ran == [] and not res.failed
    py = tmp_path / "py-tables"
    dcsim.sweep(scenario(100), {"transport": tables}, out=py, workers=1, progress=False)
    r = run_cli(cli, "sweep", FILE, "--vary",
                'transport={kind="tcp",cc="dctcp"},{cc={kind="cubic",c=0.4},kind="tcp",profile="linux"}',
                "--set", "generators[0].pattern.max_flows=100", "--out", str(py))
    assert "skipped 2 runs already complete" in r.stderr, r.stderr
    assert digests(py) == digests(out)


def test_named_variants_and_a_complete_sweep_without_a_client(cli, tmp_path):
    """Each scheme with its own ports, by name: the CLI's --variant and Python's variants=
    plan the same runs, and a sweep with nothing left to run starts no cluster."""
    out = tmp_path / "variants"
    run_cli(cli, "sweep", FILE, "--variant", 'dctcp:transport.cc="dctcp"',
            "--variant", "xpass:transport.kind=expresspass",
            "--set", "generators[0].pattern.max_flows=200", "--out", str(out))
    idx = pd.read_csv(out / "index.csv")
    assert list(idx["variant"]) == ["dctcp", "xpass"]
    assert (idx["status"] == "ok").all() and (idx["flows_completed"] == 200).all()
    assert all(r.startswith(f"variant={v}_seed=") for r, v in zip(idx["run"], idx["variant"]))
    assert json.loads((out / "index.json").read_text())["variants"]["xpass"] == ["transport.kind=expresspass"]
    res = dcsim.sweep(scenario(200), variants={"dctcp": {"transport.cc": "dctcp"},
                                               "xpass": {"transport.kind": "expresspass"}},
                      out=out, progress=False)
    assert res.ran == [] and not res.failed


def test_python_m_dcsim_sweep_refuses_bad_arguments(tmp_path):
    r = subprocess.run([sys.executable, "-m", "dcsim", "sweep", FILE, "--vary", "sim.nope=1,2",
                        "--out", str(tmp_path / "x")], capture_output=True, text=True)
    assert r.returncode == 2
    assert "--vary sim.nope=1" in r.stderr and "unknown field" in r.stderr
