#!/usr/bin/env python3
"""Draw every plot specification (*.json) in a folder as PNG and SVG.

Usage: python3 plot.py PLOTS_DIR

The specifications are written by `dcsim repro`, `dcsim sweep --plot` and `dcsim plot`: a
figure has panels; a panel has a title, axis labels, a kind (line, step, points, bar),
optional log axes, an optional floor of the y axis (`ymin`), series of x/y values,
optional error bars (`err`, one list of half-widths per series) and optional intervals
(`lo`/`hi`, one list of absolute bounds per series, NaN or null where a side is unbounded:
drawn as a caret). Points over categories are dodged so that series do not hide each
other; legends sit outside the data.
This is the only plotting code of the project: every experiment goes through it.
"""
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402

# Plain numbers on log axes (1, 10, 100 or 0.5, 2, 8), not 6x10^0 on minor ticks.
PLAIN = FuncFormatter(lambda v, _: f"{v:g}")


def draw(spec, out_dir):
    panels = spec["panels"]
    nan = float("nan")
    for p in panels:  # an empty statistic is null: no point, not a zero
        for s in p["series"]:
            s["y"] = [nan if v is None else v for v in s["y"]]
        for key in ("lo", "hi"):
            p[key] = [[nan if v is None else v for v in b] for b in p.get(key) or []]
    legends = any(1 < len(p["series"]) <= 12 for p in panels)
    width = 5.2 + (1.8 if legends else 0)
    fig, axes = plt.subplots(1, len(panels), figsize=(width * len(panels), 3.8), squeeze=False)
    for ax, p in zip(axes[0], panels):
        cats = p.get("categories") or []
        if p["kind"] == "bar" and cats:
            # Grouped bars: one group per category, one bar per series.
            n = max(len(p["series"]), 1)
            width = 0.8 / n
            for i, s in enumerate(p["series"]):
                xs = [x - 0.4 + width * (i + 0.5) for x in s["x"]]
                ax.bar(xs, s["y"], width=width, label=s["label"])
            ax.set_xticks(range(len(cats)))
            long = max(len(c) for c in cats) * len(cats) > 48
            ax.set_xticklabels(cats, fontsize=8, rotation=20 if long else 0, ha="right" if long else "center")
        if p["kind"] == "points" and cats:
            # Dodged points with their intervals, one column of points per category.
            n = max(len(p["series"]), 1)
            for i, s in enumerate(p["series"]):
                xs = [x - 0.3 + 0.6 * (i + 0.5) / n for x in s["x"]]
                lo = p["lo"][i] if i < len(p["lo"]) else [nan] * len(xs)
                hi = p["hi"][i] if i < len(p["hi"]) else [nan] * len(xs)
                below = [y - l if l == l and y == y else 0 for y, l in zip(s["y"], lo)]
                above = [h - y if h == h and y == y else 0 for y, h in zip(s["y"], hi)]
                line = ax.errorbar(xs, s["y"], yerr=[below, above], fmt="o", capsize=3, label=s["label"])
                open_up = [(x, y) for x, y, h in zip(xs, s["y"], hi) if y == y and h != h and p["hi"]]
                if open_up:
                    ax.plot(*zip(*open_up), linestyle="none", marker="^", markersize=9,
                            markerfacecolor="none", color=line[0].get_color())
            ax.set_xticks(range(len(cats)))
            ax.set_xticklabels(cats, fontsize=8)
            ax.set_xlim(-0.5, len(cats) - 0.5)
        errs = p.get("err") or []
        for i, s in enumerate(p["series"] if not (p["kind"] in ("bar", "points") and cats) else []):
            e = errs[i] if i < len(errs) and any(errs[i]) else None
            if e is not None:
                # Mean over seeds with its 95 % confidence interval.
                ax.errorbar(s["x"], s["y"], yerr=e, marker="o", capsize=3, label=s["label"])
            elif p["kind"] == "step":
                ax.step(s["x"], s["y"], where="post", label=s["label"])
            elif p["kind"] == "points":
                ax.plot(s["x"], s["y"], marker="o", label=s["label"])
            elif p["kind"] == "bar":
                ax.bar([str(x) for x in s["x"]], s["y"], label=s["label"], alpha=0.7)
            else:
                ax.plot(s["x"], s["y"], label=s["label"], linewidth=1.2)
        if p.get("logx"):
            ax.set_xscale("log", base=p.get("log_base", 2))
            ax.xaxis.set_major_formatter(PLAIN)
            ax.xaxis.set_minor_formatter(NullFormatter())
        if p.get("logy"):
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(PLAIN)
            ax.yaxis.set_minor_formatter(NullFormatter())
        elif p.get("ymin") is not None:
            # From zero (or the given floor), so that a 3 % difference looks like one.
            ax.set_ylim(bottom=p["ymin"])
        ax.set_title(p["title"], fontsize=10)
        ax.set_xlabel(p["xlabel"])
        ax.set_ylabel(p["ylabel"])
        ax.grid(True, alpha=0.3)
        if len(p["series"]) > 1 and len(p["series"]) <= 12:
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    fig.tight_layout()
    for ext in ("png", "svg"):
        fig.savefig(out_dir / f"{spec['file']}.{ext}", dpi=120, bbox_inches="tight")
    plt.close(fig)


def main():
    out_dir = pathlib.Path(sys.argv[1])
    specs = sorted(out_dir.glob("*.json"))
    for f in specs:
        draw(json.loads(f.read_text()), out_dir)
    print(f"drew {len(specs)} figure(s) in {out_dir}")


if __name__ == "__main__":
    main()
