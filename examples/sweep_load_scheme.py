"""FCT slowdown against load for three TCP congestion controllers on the web-search star.

Sweeps load x congestion control x seed on Dask (a LocalCluster on this machine's cores,
or the scheduler given with --scheduler), loads the sweep's index into pandas and plots the
mean slowdown of the measured flows against load, one line per scheme, with 95 %
confidence intervals over the seeds.

    python examples/sweep_load_scheme.py            # 4 loads x 3 schemes x 3 seeds, 3000 flows
    python examples/sweep_load_scheme.py --quick    # 2 loads x 2 schemes x 2 seeds, 300 flows (CI)

Writes results/examples/sweep-load-scheme[-quick]/ (the sweep) and slowdown.png in it.
Run again and it finds every finished run and only redraws.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import dcsim

HERE = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the short form")
    ap.add_argument("--scheduler", help="a Dask scheduler address (default: a LocalCluster here)")
    ap.add_argument("--out", type=Path, help="output folder")
    a = ap.parse_args()

    flows, loads, schemes, seeds = (
        (300, [0.3, 0.6], ["dctcp", "cubic"], 2)
        if a.quick
        else (3000, [0.2, 0.4, 0.6, 0.8], ["dctcp", "reno", "cubic"], 3)
    )
    out = a.out or Path("results/examples") / ("sweep-load-scheme" + ("-quick" if a.quick else ""))
    scenario = dcsim.Scenario.from_file(HERE / "scenarios/websearch-star.toml")
    scenario.set("generators[0].pattern.max_flows", flows)
    sw = dcsim.sweep(
        scenario,
        {"generators[0].pattern.load": loads, "transport.cc": schemes},
        seeds=seeds,
        out=out,
        client=a.scheduler,
    )
    if sw.failed:
        raise SystemExit(f"{len(sw.failed)} runs failed: {sw.failed}")

    idx = sw.index  # one row per run, load as a number, scheme as text
    stats = (
        idx.groupby(["transport.cc", "generators[0].pattern.load"])["slowdown_mean"]
        .agg(["mean", "std", "count"])
        .reset_index()
    )
    # 95 % confidence interval of the mean over seeds (Student t for small samples).
    t95 = {1: math.nan, 2: 12.71, 3: 4.30, 4: 3.18, 5: 2.78}
    stats["ci95"] = [
        t95.get(int(n), 1.96) * s / math.sqrt(n) if n > 1 else math.nan
        for s, n in zip(stats["std"], stats["count"])
    ]
    print(stats.to_string(index=False))

    try:
        import matplotlib
    except ImportError:
        print("slowdown.png not drawn: matplotlib is not installed (pip install '.[plot]');"
              f" the sweep's data is complete in {out}")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for scheme, g in stats.groupby("transport.cc"):
        ax.errorbar(g["generators[0].pattern.load"], g["mean"], yerr=g["ci95"], marker="o", capsize=3, label=scheme)
    ax.set_xlabel("offered load (fraction of host link capacity)")
    ax.set_ylabel("mean FCT slowdown (FCT / unloaded FCT)")
    ax.set_ylim(bottom=1)
    ax.set_title(f"web-search flows on a 16-host 10 Gb/s star, {seeds} seeds, 95 % CI")
    ax.legend(title="congestion control")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    png = out / "slowdown.png"
    fig.savefig(png, dpi=120)
    print(f"plot: {png}")


if __name__ == "__main__":
    main()
