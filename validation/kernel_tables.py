#!/usr/bin/env python3
"""dcsim's `linux` TCP profile beside the real kernel (validation/kernel_twin.py), side by side.

Runs, as root, each set-up on the kernel in network namespaces and then in dcsim with the
same scenario, and prints the tables of docs/protocols/tcp.md (Markdown) with a verdict per
target; `--json FILE` keeps every figure.

    sudo python3 validation/kernel_tables.py [--quick] [--seeds N] [--kernel-runs M] [--json out.json] [--dcsim BIN]

Two dcsim builds against one kernel run: keep the run's folders with `--work DIR`, then run
again with the other build, `--work DIR --reuse-kernel`, which takes the kernel's side (and
the path measured on it) from DIR instead of running it again.

Set-ups (a star at 100 Mb/s, its port to host 0 drop-tail of 100, 1,000 or 3,000 packets):

- long flows: 2 or 3 CUBIC or Reno flows into host 0 for 60 s (`--quick`: 20 s, the
  1,000-packet port only);
- 2 MB flows: ten 2 MB transfers, one every 4 s from 10 s, beside two long flows, with
  CUBIC and Reno (`--quick`: three).

dcsim runs each with the kernel's measured path: every link's delay is a quarter of the
smallest base RTT the twin measured (ICMP, timed by the kernel), the kernel's own
processing noise, the spread of that RTT (median less minimum), is `stack_jitter`, the
timing noise of the kernel's shapers (htb releases a backlogged packet when a timer fires,
a little late each time; the twin times the bottleneck's departures, `shaper_noise` in its
summary) is `ports.jitter`, every port releases a packet whole when its transmission
starts (`ports.release = "start"`: htb charges a packet's tokens after sending it), and
`snd_buf` holds as many segments as the kernel's 4 MiB send buffer did (TCP_INFO).

With `--offloads` the kernel keeps its segmentation offloads (TSO/GSO super-packets of up
to 64 KB cross the emulated network whole, and a pfifo limit counts one as one packet),
and dcsim runs with `transport.gso = "64KiB"`, its model of exactly that, with the
send buffer that the kernel's 4 MiB held with offloads on (1,901 segments), and with the
kernel's 1,448-byte segments (`transport.mss`), so that a 64 KiB write is 45 segments and
376 B on both sides. Both sides' applications write 64 KiB at a time (`app_write`).

Targets (from the model's validation plan): queue mean within 10 % of the kernel's, drops
within 3x, no timeout where the kernel has none, 2 MB FCT means within 30 %.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
# What the kernel's 4 MiB send buffer (`tcp_wmem[2]`) holds in this twin (offloads off):
# 1,269 segments of 1,448 bytes, unacknowledged and not yet sent, measured by TCP_INFO on
# three CUBIC flows into a 3,000-packet port (each segment is charged its buffer's true
# size, about 3.3 KB). Every run uses it; each also reports what TCP_INFO says of its own
# flows that the buffer held at some time (their segments out at the end, at most this).
SNDBUF_SEGMENTS = 1269
# dcsim gives that buffer as Linux counts it: 4 MiB of memory, each 1,460-byte segment
# charged its payload and this much more until it is SACKed (4 MiB / 1,269 = 3,305 B per
# segment), then its payload only, as Linux merges SACKed buffers (`tcp_shift_skb_data`).
# A sender in recovery so holds more than 1,269 segments: the twin's window samples show
# 1,402 unacknowledged with 856 SACKed (two Reno flows into 1,000 packets).
SNDBUF_BYTES = 4 << 20
SNDBUF_OVERHEAD = SNDBUF_BYTES // SNDBUF_SEGMENTS - 1460
# The same buffer with offloads on, where a 64 KB buffer's true size is close to its
# payload: 1,901 segments, what every flow that ended held back by it held (TCP_INFO, at
# 1,000 and 3,000 packets, 1,901-1,925). A flow that was held back only early on (the
# buffer grows with the window) holds less at the end than the buffer takes, so an
# end-of-run reading is not the size.
SNDBUF_SEGMENTS_OFFLOADS = 1901
TWIN = HERE / "kernel_twin.py"
PKT = 1538


def scenario(hosts: int, buffer: int, cc: str, seconds: int, fct_flows: int) -> str:
    """A star of `hosts` at 100 Mb/s: long flows from hosts 1.. into host 0, and with
    `fct_flows` the last host sends that many 2 MB flows, one every 4 s from 10 s."""
    long_hosts = hosts - 1 - (1 if fct_flows else 0)
    lines = [
        "schema_version = 1",
        f'description = "{long_hosts} long {cc} flows into a 100 Mb/s drop-tail port of {buffer} packets"',
        "[sim]", f'duration = "{seconds}s"', "seed = 1",
        "[topology]", 'kind = "star"', f"hosts = {hosts}",
        'host_link = { rate = "100Mbps", delay = "50us" }',
        "[queue]", 'kind = "droptail"', f'buffer = "{buffer}pkts"',
        "[transport]", 'kind = "tcp"', 'profile = "linux"', f'cc = "{cc}"',
        # The twin's senders hand their sockets 64 KiB per send(); dcsim's application
        # writes the same.
        'app_write = "64KiB"',
        "[output.timeseries]", 'every = "1ms"', 'ports = ["sw->h0"]',
    ]
    for h in range(1, long_hosts + 1):
        lines += ["[[flows]]", f"src = {h}", "dst = 0"]
    for i in range(fct_flows):
        lines += ["[[flows]]", f"src = {hosts - 1}", "dst = 0", 'size = "2MB"', f'start = "{10 + 4 * i}s"']
    return "\n".join(lines) + "\n"


def nearest(v: list[float], p: float) -> float:
    return v[max(1, math.ceil(p / 100 * len(v))) - 1]


def figures(folder: Path, seconds: float) -> dict:
    """What both folders report alike, for the port sw->h0."""
    flows = list(csv.DictReader(open(folder / "flows.csv")))
    ports = {f"{r['node']}->{r['peer']}": r for r in csv.DictReader(open(folder / "ports.csv"))}
    q = sorted(float(r["value"]) / PKT for r in csv.DictReader(open(folder / "timeseries.csv"))
               if r["kind"] == "queue_bytes" and r["id"] == "sw->h0")
    longs = [f for f in flows if not f["size_bytes"]]
    fcts = [int(f["fct_ns"]) / 1e6 for f in flows if f["size_bytes"] and f["fct_ns"]]
    goodputs = [float(f["window_goodput_gbps"]) * 1e3 for f in longs]
    return {
        "queue_mean_pkts": statistics.fmean(q),
        "queue_p1_pkts": nearest(q, 1), "queue_p50_pkts": nearest(q, 50), "queue_p99_pkts": nearest(q, 99),
        "drops_per_min": int(ports["sw->h0"]["drops"]) / (seconds / 60),
        "timeouts": sum(int(f.get("timeouts") or 0) for f in flows),
        "retransmits": sum(int(f.get("retransmits") or 0) for f in flows),
        "goodput_mbps": goodputs,
        "jain": sum(goodputs) ** 2 / (len(goodputs) * sum(g * g for g in goodputs)) if goodputs else None,
        "fct_ms": fcts,
        "unfinished": sum(1 for f in flows if f["size_bytes"] and not f["fct_ns"]),
    }


def run(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{done.stderr.strip()}")


def measured_path(ksum: dict, offloads: bool) -> list[str]:
    """dcsim's `--set` arguments for the path the twin measured (its summary.json): link
    delays, the stack's and the shapers' noise, htb's release, the send buffer."""
    rtt = ksum["base_rtt"]
    lo, mid = rtt["min_us"], rtt["median_us"]
    # dcsim's send buffer holds as many segments as the kernel's does.
    segments = SNDBUF_SEGMENTS_OFFLOADS if offloads else SNDBUF_SEGMENTS
    # With offloads the super-packets' make-up depends on the bytes of a segment: dcsim
    # sends the kernel's 1,448 B of payload (the timestamps option takes 12 of 1,460).
    mss = 1448 if offloads else 1460
    if offloads:
        extra = ["--set", f"transport.snd_buf={segments * mss}B"]
    else:
        extra = ["--set", f"transport.snd_buf={SNDBUF_BYTES}B",
                 "--set", f"transport.snd_buf_overhead={SNDBUF_OVERHEAD}B"]
    if offloads:
        extra += ["--set", 'transport.gso="64KiB"', "--set", f"transport.mss={mss}B"]
    # The shapers' lateness as the twin measured its distribution (older runs: the
    # uniform bound with the same spread).
    noise = ksum.get("shaper_noise", {}).get("uniform_equivalent_us")
    lateness = ksum.get("shaper_noise", {}).get("lateness_us")
    if lateness:
        extra += ["--set", "ports.jitter=" + jitter_table(lateness)]
    elif noise:
        extra += ["--set", f"ports.jitter={noise:.3f}us"]
    # The twin's links are htb shapers, which release a packet whole at the start of its
    # slot and charge it after.
    return ["--set", f"topology.host_link.delay={lo / 4:.3f}us",
            "--set", f"transport.stack_jitter={max(0.0, mid - lo):.3f}us",
            "--set", 'ports.release="start"'] + extra


def side_by_side(name: str, text: str, seconds: int, dcsim: str, work: Path,
                 offloads: bool = False, seeds: int = 1, kernel_runs: int = 1,
                 reuse_kernel: bool = False) -> dict:
    path = work / f"{name}.toml"
    if reuse_kernel and path.is_file() and path.read_text() != text:
        sys.exit(f"--reuse-kernel: {path} is another set-up than this run's (--quick or not?); "
                 "run with the options of the kept run")
    path.write_text(text)
    kernel = work / f"{name}-kernel"
    twin = [sys.executable, str(TWIN), str(path), "--dcsim", dcsim, "-q"] \
        + (["--offloads"] if offloads else [])

    def kernel_run(out: Path) -> None:
        if reuse_kernel:
            if not (out / "summary.json").is_file():
                sys.exit(f"--reuse-kernel: {out} holds no kernel run (run once without it)")
        else:
            run(twin + ["--out", str(out)])

    kernel_run(kernel)
    ksum = json.load(open(kernel / "summary.json"))
    kept = ksum.get("setup", {}).get("offloads_flag")
    if reuse_kernel and kept is not None and kept != offloads:
        sys.exit(f"--reuse-kernel: {kernel} ran with offloads {'on' if kept else 'off'}; "
                 f"run {'with' if kept else 'without'} --offloads")
    # The kernel again: some set-ups have more than one outcome there too. dcsim's side
    # runs on the first run's measured path.
    kernel_more = []
    for index in range(2, kernel_runs + 1):
        out = work / f"{name}-kernel-run{index}"
        kernel_run(out)
        kernel_more.append(figures(out, seconds))
    rtt = ksum["base_rtt"]
    lo, mid = rtt["min_us"], rtt["median_us"]
    # What the kernel's flows held in their send buffer, where it held them back (TCP_INFO).
    held = [f["tcp_info"]["unacked"] + f["tcp_info"]["notsent_bytes"] // f["tcp_info"]["snd_mss"]
            for f in ksum["flows"] if f.get("tcp_info", {}).get("sndbuf_limited")]
    segments = SNDBUF_SEGMENTS_OFFLOADS if offloads else SNDBUF_SEGMENTS
    noise = ksum.get("shaper_noise", {}).get("uniform_equivalent_us")
    lateness = ksum.get("shaper_noise", {}).get("lateness_us")
    sim = work / f"{name}-dcsim"
    path_sets = measured_path(ksum, offloads)
    run([dcsim, "run", str(path), "--out", str(sim), "--quiet"] + path_sets)
    # The same measured path with dcsim's other seeds: one run decides a row by one draw of
    # dcsim's noise.
    more = []
    for seed in range(2, seeds + 1):
        out = work / f"{name}-dcsim-seed{seed}"
        run([dcsim, "run", str(path), "--out", str(out), "--quiet", "--set", f"sim.seed={seed}"]
            + path_sets)
        more.append(figures(out, seconds))
    return {"kernel": figures(kernel, seconds), "dcsim": figures(sim, seconds),
            "dcsim_other_seeds": more, "kernel_other_runs": kernel_more,
            "base_rtt_us": {"min": lo, "median": mid}, "snd_buf_segments": segments,
            "shaper_noise": ksum.get("shaper_noise"), "port_jitter_us": noise,
            "port_lateness_us": lateness,
            "kernel_sndbuf_held_segments": held}


def jitter_table(points: list) -> str:
    """`ports.jitter` as a TOML table of (probability, lateness) points."""
    return "[" + ", ".join(f'[{p}, "{us:.3f}us"]' for p, us in points) + "]"


def verdicts(k: dict, d: dict) -> list[str]:
    out = []
    within = abs(d["queue_mean_pkts"] / k["queue_mean_pkts"] - 1) <= 0.10
    out.append("queue ✓" if within else "queue ✗")
    kd, dd = k["drops_per_min"], d["drops_per_min"]
    out.append("drops ✓" if (kd == dd == 0) or (kd > 0 and dd > 0 and 1 / 3 <= dd / kd <= 3) else "drops ✗")
    if k["timeouts"] == 0:
        out.append("timeouts ✓" if d["timeouts"] == 0 else "timeouts ✗")
    if k["fct_ms"] and d["fct_ms"]:
        ratio = statistics.fmean(d["fct_ms"]) / statistics.fmean(k["fct_ms"])
        out.append("FCT ✓" if abs(ratio - 1) <= 0.30 else "FCT ✗")
    return out


def meets(k: dict, d: dict) -> bool:
    return not any("✗" in v for v in verdicts(k, d))


def spread(r: dict) -> str:
    """How many of dcsim's seeds meet every target against the first kernel run and against
    some kernel run, and the range of the queue's mean on each side."""
    sims = [r["dcsim"]] + r["dcsim_other_seeds"]
    kernels = [r["kernel"]] + r.get("kernel_other_runs", [])
    first = sum(1 for d in sims if meets(kernels[0], d))
    text = f"{first} of {len(sims)}"
    if len(kernels) > 1:
        some = sum(1 for d in sims if any(meets(k, d) for k in kernels))
        text += f" ({some} against at least one of {len(kernels)} kernel runs)"
    def means(xs):
        values = [x["queue_mean_pkts"] for x in xs]
        return f"{min(values):.0f}–{max(values):.0f}"
    return f"{text}; queue means: kernel {means(kernels)}, dcsim {means(sims)} packets"


def row(name: str, r: dict) -> str:
    k, d = r["kernel"], r["dcsim"]
    def q(x):
        return f"{x['queue_mean_pkts']:.0f} ({x['queue_p1_pkts']:.0f}/{x['queue_p50_pkts']:.0f}/{x['queue_p99_pkts']:.0f})"
    def fct(x):
        return f"{statistics.fmean(x['fct_ms']):.0f} ± {statistics.pstdev(x['fct_ms']):.0f}" if x["fct_ms"] else "–"
    return (f"| {name} | {q(k)} | {q(d)} | {k['drops_per_min']:.0f} / {d['drops_per_min']:.0f} | "
            f"{k['timeouts']} / {d['timeouts']} | {k['retransmits']} / {d['retransmits']} | "
            f"{(k['jain'] or 0):.3f} / {(d['jain'] or 0):.3f} | {fct(k)} | {fct(d)} | {', '.join(verdicts(k, d))} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="20 s runs, one buffer size")
    ap.add_argument("--json", type=Path, help="write every figure here")
    ap.add_argument("--dcsim", default=str(HERE.parent / "target/ci/dcsim"))
    ap.add_argument("--offloads", action="store_true",
                    help="the kernel with TSO/GSO on, dcsim with transport.gso")
    ap.add_argument("--seeds", type=int, default=1, metavar="N",
                    help="run dcsim's side with seeds 1 to N (the table shows seed 1's; a "
                         "line per set-up says in how many every target is met)")
    ap.add_argument("--kernel-runs", type=int, default=1, metavar="M",
                    help="run the kernel's side M times (the table shows the first; a line "
                         "per set-up gives the spread of both sides and how many of dcsim's "
                         "seeds meet every target against some kernel run)")
    ap.add_argument("--only", metavar="NAME", action="append",
                    help="run only this set-up (e.g. 2MB-reno-3000pkts); repeatable")
    ap.add_argument("--work", type=Path, metavar="DIR",
                    help="keep every run's folder here (default: a temporary folder)")
    ap.add_argument("--reuse-kernel", action="store_true",
                    help="take the kernel's runs from --work instead of running them again")
    a = ap.parse_args()
    if a.reuse_kernel and not a.work:
        ap.error("--reuse-kernel needs --work DIR, the folder of an earlier run")
    buffers = [1000] if a.quick else [100, 1000, 3000]
    seconds = 20 if a.quick else 60
    results = {}
    if a.work:
        a.work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="kernel-tables-") as tmp:
        work = a.work or Path(tmp)
        for buffer in buffers:
            for cc in ("cubic", "reno"):
                for n in (2, 3):
                    name = f"{n}x{cc}-{buffer}pkts"
                    if a.only and name not in a.only:
                        continue
                    print(f"running {name} ...", file=sys.stderr)
                    results[name] = side_by_side(name, scenario(n + 1, buffer, cc, seconds, 0), seconds, a.dcsim, work,
                                                 a.offloads, a.seeds, a.kernel_runs, a.reuse_kernel)
                fct_n = 3 if a.quick else 10
                name = f"2MB-{cc}-{buffer}pkts"
                secs = 10 + 4 * fct_n + 6
                if a.only and name not in a.only:
                    continue
                print(f"running {name} ...", file=sys.stderr)
                results[name] = side_by_side(name, scenario(4, buffer, cc, secs, fct_n), secs, a.dcsim, work,
                                          a.offloads, a.seeds, a.kernel_runs, a.reuse_kernel)
    print("| set-up | queue, kernel: mean (p1/p50/p99), packets | dcsim | drops/min, kernel / dcsim | "
          "timeouts | retransmits | Jain (long flows) | 2 MB FCT, kernel (ms) | dcsim | targets |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        print(row(name, r))
    if a.seeds > 1 or a.kernel_runs > 1:
        print(f"\nSet-ups meeting every target, of dcsim's seeds 1 to {a.seeds}:")
        for name, r in results.items():
            print(f"- {name}: {spread(r)}")
    if a.json:
        a.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
