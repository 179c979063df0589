"""The Python API against the command line: same scenarios, same digests, same tables, same
error messages."""

from __future__ import annotations

import json
import os
import pickle
import signal
import threading
import time

import pandas as pd
import pyarrow.parquet as pq
import pytest

import dcsim
from conftest import SCENARIOS, run_cli

# Short forms of example scenarios (a few hundred milliseconds each).
SHORT = {
    "dctcp-dumbbell.toml": [],
    "websearch-star.toml": ["generators[0].pattern.max_flows=300"],
    "xpass-dumbbell.toml": ["sim.warmup=\"2ms\"", "sim.duration=\"8ms\""],
}


def short(name: str) -> dcsim.Scenario:
    sc = dcsim.Scenario.from_file(SCENARIOS / name)
    for s in SHORT[name]:
        sc.override(s)
    return sc


def cli_digest(cli, tmp_path, name: str, *extra: str) -> str:
    out = tmp_path / f"cli-{name}"
    args = ["run", str(SCENARIOS / name), "--out", str(out), "--quiet", *extra]
    for s in SHORT[name]:
        args += ["--set", s]
    run_cli(cli, *args)
    return json.loads((out / "summary.json").read_text())["digest"]


@pytest.mark.parametrize("name", sorted(SHORT))
def test_file_dict_and_toml_give_the_cli_scenario_and_digest(cli, tmp_path, name):
    sc = short(name)
    from_dict = dcsim.Scenario.from_dict(sc.resolved())
    from_toml = dcsim.Scenario.from_toml(sc.to_toml())
    assert from_dict.resolved() == sc.resolved() == from_toml.resolved()
    assert from_dict == sc == from_toml
    shown = run_cli(cli, "show", str(SCENARIOS / name), *sum((["--set", s] for s in SHORT[name]), [])).stdout
    assert dcsim.Scenario.from_toml(shown) == sc  # `dcsim show` prints the same scenario
    digest = cli_digest(cli, tmp_path, name)
    assert sc.run().digest == digest
    assert from_dict.run().digest == digest
    assert from_toml.run().digest == digest


def test_set_uses_the_paths_of_dash_dash_set(cli, tmp_path):
    sc = dcsim.Scenario.from_file(SCENARIOS / "websearch-star.toml")
    sc.set("generators[0].pattern.max_flows", 300).set("generators[0].pattern.load", 0.3)
    assert sc.resolved()["generators"][0]["pattern"]["load"] == 0.3
    out = tmp_path / "cli"
    run_cli(cli, "run", str(SCENARIOS / "websearch-star.toml"), "--out", str(out), "-q",
            "--set", "generators[0].pattern.max_flows=300", "--set", "generators[0].pattern.load=0.3",
            "--seed", "7")
    assert sc.run(seed=7).digest == json.loads((out / "summary.json").read_text())["digest"]
    assert sc.with_seed(7).run().digest == sc.run(seed=7).digest
    assert sc.resolved()["sim"]["seed"] == 1  # with_seed copies


def test_dataframes_equal_the_cli_csv_files(cli, tmp_path):
    sc = short("websearch-star.toml")
    sc.set("output.timeseries", {"every": "200us", "flows": [0, 1], "ports": ["sw->h0"]})
    sc.set("output.events", {"flows": [0, 1]})
    res = sc.run()
    out = tmp_path / "cli"
    res.write(out)
    assert len(res.events) > 0 and set(res.events["id"]) == {0, 1}
    for name in ("flows", "ports", "buckets", "tiers", "timeseries", "events"):
        csv = pd.read_csv(out / f"{name}.csv", keep_default_na=False, na_values=[""])
        df = getattr(res, name)
        assert list(df.columns) == list(csv.columns), name
        pd.testing.assert_frame_equal(df, csv, check_dtype=False, obj=name)
    assert res.flows.attrs["units"]["fct_ns"] == "ns"
    assert res.summary["digest"] == res.digest
    # The written folder is the CLI's: same digest as `dcsim run` with the same overrides.
    args = ["run", str(SCENARIOS / "websearch-star.toml"), "--out", str(tmp_path / "c2"), "-q"]
    for s in sc.overrides:
        args += ["--set", s]
    run_cli(cli, *args)
    for f in ("flows.csv", "ports.csv", "buckets.csv", "tiers.csv", "timeseries.csv", "events.csv"):
        assert (out / f).read_bytes() == (tmp_path / "c2" / f).read_bytes(), f
    assert res.to_polars("flows").shape == res.flows.shape


def test_expresspass_counters_and_no_timeseries():
    res = short("xpass-dumbbell.toml").run()
    assert res.timeseries is not None  # this example samples
    assert {"credits_sent", "credits_wasted"} <= set(res.flows.columns)
    assert (res.flows["credits_sent"] > 0).all()
    plain = dcsim.Scenario.from_file(SCENARIOS / "websearch-star.toml").set("generators[0].pattern.max_flows", 50)
    assert plain.run().timeseries is None
    assert plain.run().events is None


@pytest.mark.parametrize(
    "sets",
    [
        ["sim.duration=10"],
        ["topology.pairs=-1"],
        ["queue.mark_thresh=3"],
        ["sim.duration=\"5 parsecs\""],
    ],
)
def test_bad_input_raises_the_cli_message(cli, sets):
    args = ["check", str(SCENARIOS / "dctcp-dumbbell.toml")]
    for s in sets:
        args += ["--set", s]
    r = run_cli(cli, *args, check=False)
    assert r.returncode == 2
    message = r.stderr.strip().removeprefix("error: ")
    sc = dcsim.Scenario.from_file(SCENARIOS / "dctcp-dumbbell.toml")
    with pytest.raises(dcsim.ScenarioError) as e:
        for s in sets:
            sc.override(s)
    assert str(e.value) == message
    assert sc.overrides == []  # a refused change leaves the scenario as it was


def test_bad_files_and_values_raise_scenario_error(tmp_path):
    with pytest.raises(dcsim.ScenarioError, match="cannot read the file"):
        dcsim.Scenario.from_file(tmp_path / "missing.toml")
    with pytest.raises(dcsim.ScenarioError, match="None"):
        dcsim.Scenario.from_file(SCENARIOS / "dctcp-dumbbell.toml").set("sim.duration", None)
    with pytest.raises(dcsim.ScenarioError, match="unknown field"):
        dcsim.Scenario.from_dict({"sim": {"duraton": "1ms"}})
    # A number where a unit is needed: the command line's advice, named as written here.
    sc = dcsim.Scenario.from_file(SCENARIOS / "dctcp-dumbbell.toml")
    for path, value, example in [
        ("sim.duration", 10, '"10us"'),
        ("topology.host_link.rate", 10, '"10Gbps"'),
        ("queue.buffer", 250, '"250pkts"'),
    ]:
        with pytest.raises(dcsim.ScenarioError) as e:
            sc.set(path, value)
        said = str(e.value)
        assert f"set({path!r}, {value!r}): {value} has no unit" in said, said
        assert example in said and "--set" not in said, said
    assert sc.overrides == []
    with pytest.raises(dcsim.ScenarioError, match=r"flows\[0\]"):
        dcsim.Scenario.from_dict({"topology": {"kind": "dumbbell"}, "flows": [None]})


def test_parquet_files_equal_the_csv_files_and_read_everywhere(cli, tmp_path):
    out = tmp_path / "both"
    run_cli(cli, "run", str(SCENARIOS / "dctcp-dumbbell.toml"), "--out", str(out), "-q",
            "--format", "both")
    import duckdb
    import polars as pl

    for name in ("flows", "ports", "buckets", "tiers", "timeseries"):
        csv = pd.read_csv(out / f"{name}.csv", keep_default_na=False, na_values=[""])
        pdf = pd.read_parquet(out / f"{name}.parquet")
        pd.testing.assert_frame_equal(pdf, csv, check_dtype=False, obj=name)
        assert pl.read_parquet(out / f"{name}.parquet").height == len(csv)
        n = duckdb.sql(f"select count(*) from read_parquet('{out / f'{name}.parquet'}')").fetchall()[0][0]
        assert n == len(csv)
    meta = pq.read_schema(out / "flows.parquet")
    assert meta.field("fct_ns").metadata[b"unit"] == b"ns"
    assert meta.metadata[b"dcsim.table"] == b"flows"
    only = tmp_path / "pq"
    run_cli(cli, "run", str(SCENARIOS / "dctcp-dumbbell.toml"), "--out", str(only), "-q",
            "--format", "parquet")
    assert not list(only.glob("*.csv"))
    assert json.loads((only / "summary.json").read_text())["digest"] == json.loads((out / "summary.json").read_text())["digest"]


def test_runs_release_the_gil_and_threads_agree():
    sc = short("websearch-star.toml")
    digests = []
    ticks = []

    def work():
        digests.append(sc.run().digest)

    threads = [threading.Thread(target=work) for _ in range(2)]
    start = time.monotonic()
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        ticks.append(time.monotonic())  # the main thread keeps running Python meanwhile
        time.sleep(0.001)
    elapsed = time.monotonic() - start
    assert len(set(digests)) == 1 and len(digests) == 2
    # A run holding the GIL would stop the main thread for the whole run: one gap as long
    # as the run. Released, the main thread ticks throughout.
    gaps = [b - a for a, b in zip([start, *ticks], ticks)]
    assert len(ticks) >= 5 and max(gaps) < elapsed / 2, (len(ticks), max(gaps), elapsed)


def test_ctrl_c_stops_a_run():
    # 200 s simulated takes about 40 s on the machine of docs/performance.md: a run that
    # missed the interrupt would end far outside the bound below.
    long = dcsim.Scenario.from_file(SCENARIOS / "dctcp-dumbbell.toml").set("sim.duration", "200s")
    # A real SIGINT, as Ctrl-C sends, to this process. Python's own handler, which raises
    # KeyboardInterrupt: a process started in the background by a shell inherits SIGINT
    # ignored, and Python then keeps it ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        timer = threading.Timer(0.3, os.kill, args=(os.getpid(), signal.SIGINT))
        start = time.monotonic()
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            long.run()
        assert time.monotonic() - start < 2.0  # the run checks for signals every 50 ms
    finally:
        signal.signal(signal.SIGINT, previous)


def test_estimate_times_a_short_run_and_extrapolates_a_long_one():
    done = short("dctcp-dumbbell.toml").estimate(seconds=60)
    assert done["covered"] == 1.0 and done["basis"] is None, done
    assert "ran it to the end" in done["text"]
    # 100 simulated seconds of a fat-tree do not fit in 0.3 s of wall time.
    long = dcsim.Scenario.from_file(SCENARIOS / "dctcp-fattree-permutation.toml").set(
        "sim.duration", "100s"
    )
    e = long.estimate(seconds=0.3)
    assert e["basis"] == "simulated time" and 0 < e["covered"] < 1, e
    assert e["seconds"] > e["probe_seconds"] > 0 and "on this machine" in e["text"]
    with pytest.raises(ValueError, match="between 0.1 and 3600"):
        long.estimate(seconds=0)


def test_scenarios_pickle():
    sc = short("websearch-star.toml")
    back = pickle.loads(pickle.dumps(sc))
    assert back == sc and back.overrides == sc.overrides and back.path == sc.path


def test_repro_returns_result_json_and_tables(tmp_path):
    rep = dcsim.repro("xpass-credit-queue", quick=True, out=tmp_path / "cq")
    assert rep.result == json.loads((tmp_path / "cq" / "result.json").read_text())
    plot = rep.plots["credit_queue"]
    assert set(plot.columns) >= {"panel", "series", "x", "y"} and len(plot) > 0
    assert set(plot["series"]) >= {"code", "workshop"}
    assert all(len(t) > 0 for t in rep.tables.values())
    assert list(rep.claims["id"]) == ["saturates-small"]
    assert set(rep.claims["verdict"]) == {"smoke test (quick form): cannot decide"}
    assert rep.checks["passed"].all() and len(rep.checks) > 0
    assert "xpass-credit-queue" in dcsim.experiments()
    with pytest.raises(ValueError, match="no experiment"):
        dcsim.repro("no-such-thing")


def test_compare_puts_written_runs_side_by_side(tmp_path):
    sc = dcsim.Scenario.from_file(SCENARIOS / "websearch-star.toml").set(
        "generators[0].pattern.max_flows", 150
    )
    sc.run().write(tmp_path / "dctcp")
    sc.set("transport.cc", "cubic").run().write(tmp_path / "cubic")
    cmp = dcsim.compare(tmp_path / "dctcp", tmp_path / "cubic", names=["DCTCP", "CUBIC"], out=tmp_path / "cmp")
    assert list(cmp.runs["run"]) == ["DCTCP", "CUBIC"] and "DCTCP" in cmp.table
    b = cmp.buckets
    allf = b[b["bucket"] == "all"].set_index("run")
    assert (allf["completed"] > 0).all()
    assert (allf["fct_p50_us_lo"] <= allf["fct_p50_us"]).all() and (allf["fct_p50_us"] <= allf["fct_p50_us_hi"]).all()
    assert (tmp_path / "cmp" / "report.html").is_file()
    with pytest.raises(ValueError, match="2 names for 1 runs"):
        dcsim.compare(tmp_path / "dctcp", names=["a", "b"], out=tmp_path / "cmp2")
