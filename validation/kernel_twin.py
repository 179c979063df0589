#!/usr/bin/env python3
"""Kernel twin: run a small dcsim scenario on the running Linux kernel.

The script reads a dcsim scenario (resolved by ``dcsim show``), builds its network out of
network namespaces (one per host, one per switch, veth pairs for the links, IPv4
forwarding in each switch), shapes every port with htb at the link rate over a pfifo of the
scenario's buffer, runs each ``[[flows]]`` entry as a real TCP connection between two
namespaces, samples the bottleneck queue (and the goodput and window of the flows that
``output.timeseries`` names), and writes ``flows.csv``, ``ports.csv``,
``timeseries.csv`` and ``summary.json`` with dcsim's column names, so that a kernel run
and a dcsim run of the same file can be read side by side.

Usage (as root)::

    python3 validation/kernel_twin.py SCENARIO.toml --out DIR [--set K=V ...] [--duration S]
    python3 validation/kernel_twin.py --selftest

Only the Python 3.11 standard library is used: qdisc statistics are read over rtnetlink
with a plain ``AF_NETLINK`` socket, so pyroute2 is not needed. The system tools ``ip``,
``tc``, ``sysctl`` (iproute2, procps) and ``ethtool`` (``apt-get install
ethtool``; not needed with ``--offloads``) must be installed.

What it refuses (exit code 2, one message): topologies other than star and dumbbell, more
than 16 hosts, links faster than 1 Gb/s, queue disciplines other than droptail (no ECN
marking: it would need sch_red or tcp_dctcp), congestion controls the kernel does not
offer, CUBIC parameters other than the kernel's (they are global module parameters),
transports other than TCP, ICTCP, traffic generators, and more than 64 flows.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import platform
import re
import select
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

# A full data frame on the wire: 1500 B of IP packet, 14 B of Ethernet header, 4 B of FCS,
# 8 B of preamble and 12 B of inter-frame gap, as dcsim counts it.
FULL_FRAME_BYTES = 1538
# The kernel's packet length already holds the 14-byte Ethernet header; a size table on
# every shaped port adds the remaining 24 B (FCS, preamble, gap), so that htb shapes, and
# the qdiscs count, wire bytes as dcsim does.
WIRE_OVERHEAD_BYTES = 24
MAX_HOSTS = 16
MAX_FLOWS = 64
MAX_RATE_BPS = 1_000_000_000
DEFAULT_SAMPLE_NS = 1_000_000
MIN_SAMPLE_NS = 100_000
# A run without sim.duration (drained) ends when every flow has completed, or after this.
DRAIN_CAP_NS = 60_000_000_000
# The whole process ends by itself within the run's length plus this.
WATCHDOG_SLACK_S = 30
# Time reserved at the end of the watchdog's budget for cleaning up.
CLEANUP_RESERVE_S = 5
NS_PREFIX = "ktwin"
# Workers' files go to a temporary folder named kernel_twin-<pid>-*.
SCRATCH_PREFIX = "kernel_twin-"
# Host i has 10.213.i.0/24; the link between the two switches of a dumbbell 10.213.250.0/30.
NET_PREFIX = "10.213"
TRUNK_IPS = {"left": "10.213.250.1", "right": "10.213.250.2"}
TRUNK_MACS = {"left": "02:6b:74:02:00:01", "right": "02:6b:74:02:00:02"}
PORT_BASE = 20000
# What each sender hands its socket per send(), unless the scenario sets transport.app_write.
APP_WRITE_BYTES = 65536
# dcsim's output layout version whose columns these files follow (docs/output.md).
DCSIM_SCHEMA_VERSION = 4
EXIT_OK, EXIT_ERROR, EXIT_REFUSED, EXIT_INTERRUPTED = 0, 1, 2, 130

FLOW_COLUMNS = [
    "flow_id", "src", "dst", "transport", "size_bytes", "start_ns", "end_ns", "fct_ns",
    "ideal_fct_ns", "slowdown", "delivered_bytes", "window_goodput_gbps", "retransmits",
    "measured", "timeouts",
]
PORT_COLUMNS = [
    "port", "node", "peer", "tier", "peer_tier", "rate_gbps", "tx_pkts", "tx_bytes",
    "tx_data_bytes", "utilization", "max_queue_bytes", "max_data_queue_bytes",
    "max_credit_queue_bytes", "avg_queue_bytes", "drops", "data_drops", "control_drops",
    "credit_drops", "aqm_drops", "ecn_marks",
]
FLOW_COLUMNS_NOT_MEASURED = ["ideal_fct_ns", "slowdown"]
PORT_COLUMNS_NOT_MEASURED = [
    "tx_data_bytes", "max_data_queue_bytes", "max_credit_queue_bytes", "data_drops",
    "control_drops", "credit_drops",
]


class Refused(Exception):
    """The scenario asks for something the kernel twin cannot emulate."""


class Skipped(Exception):
    """The machine cannot run the twin at all (not root, no namespaces, no htb)."""


class Interrupted(Exception):
    """A signal (Ctrl-C, SIGTERM, SIGHUP) asked the run to stop."""


# Set in the environment of the twin run again inside a user namespace.
USERNS_ENV = "KTWIN_USERNS"


def in_user_namespace(argv: list[str]) -> int | None:
    """Without root: runs this command again as root of a new user namespace, with network
    and mount namespaces of its own, where the system allows unprivileged user namespaces,
    and returns that run's exit code; None when already root. Raises Skipped, naming why,
    when neither root nor a user namespace is available."""
    if os.geteuid() == 0:
        return None
    unshare = shutil.which("unshare")
    if unshare is None:
        raise Skipped("not root, and no `unshare` command (util-linux) to enter a user "
                      "namespace with; run it as root")
    command = [unshare, "--user", "--map-root-user", "--net", "--mount",
               "--propagation", "private"]
    probe = subprocess.run(command + ["true"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        raise Skipped("not root, and this system refuses unprivileged user namespaces "
                      f"({probe.stderr.strip() or 'unshare failed'}); run it as root")
    child = subprocess.Popen(command + ["--", sys.executable, str(Path(__file__).resolve())]
                             + argv, env=dict(os.environ, **{USERNS_ENV: "1"}))
    # Ctrl-C reaches the child from the terminal, which cleans up and exits; a SIGTERM or
    # SIGHUP sent to this process is passed on.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda n, _frame: child.send_signal(n))
    return child.wait()


def private_netns_folder() -> None:
    """Inside the user namespace: `ip netns` keeps its namespaces in /run/netns, which
    belongs to the real root; a tmpfs of this mount namespace replaces it (or /run, if the
    folder does not exist yet), seen by no other process."""
    if not os.environ.get(USERNS_ENV):
        return
    folder = Path("/run/netns")
    target = folder if folder.is_dir() else Path("/run")
    subprocess.run(["mount", "-t", "tmpfs", "ktwin", str(target)], check=True,
                   capture_output=True)
    folder.mkdir(exist_ok=True)


class WatchdogExpired(Exception):
    """The run took longer than its length plus the watchdog's slack."""


# ---------------------------------------------------------------------------------------
# Quantities in dcsim's notation.
# ---------------------------------------------------------------------------------------

_NUMBER_UNIT = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-zµ/]+)\s*")
_DURATION_NS = {"ps": 1e-3, "ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
_RATE_BPS = {"bps": 1.0, "Kbps": 1e3, "kbps": 1e3, "Mbps": 1e6, "Gbps": 1e9, "Tbps": 1e12}
_SIZE_B = {
    "B": 1, "KB": 1e3, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
    "KiB": 1024, "MiB": 1024**2, "GiB": 1024**3,
}
_PACKET_UNITS = {"pkts", "pkt", "packets", "packet"}


def _split_quantity(text: str, what: str) -> tuple[float, str]:
    """Split a dcsim quantity such as ``"100Mbps"`` into its number and its unit."""
    match = _NUMBER_UNIT.fullmatch(str(text))
    if not match:
        raise Refused(f"cannot read {what} {text!r}")
    return float(match.group(1)), match.group(2)


def parse_duration_ns(text: str) -> int:
    """Return a dcsim duration (``"50us"``) in whole nanoseconds."""
    value, unit = _split_quantity(text, "duration")
    if unit not in _DURATION_NS:
        raise Refused(f"unknown duration unit in {text!r}")
    return round(value * _DURATION_NS[unit])


def parse_rate_bps(text: str) -> int:
    """Return a dcsim rate (``"100Mbps"``) in bits per second."""
    value, unit = _split_quantity(text, "rate")
    if unit not in _RATE_BPS:
        raise Refused(f"unknown rate unit in {text!r}")
    return round(value * _RATE_BPS[unit])


def parse_size_bytes(text: str) -> int:
    """Return a dcsim size (``"2MB"``) in bytes."""
    value, unit = _split_quantity(text, "size")
    if unit not in _SIZE_B:
        raise Refused(f"unknown size unit in {text!r}")
    return round(value * _SIZE_B[unit])


def parse_buffer_pkts(text: str) -> tuple[int, str]:
    """Return a buffer amount as packets, converting bytes at one full frame per packet.

    The second value says how the amount was given, for the summary.
    """
    value, unit = _split_quantity(text, "buffer")
    if unit in _PACKET_UNITS:
        return max(1, int(value)), f"{text} as given"
    size = parse_size_bytes(text)
    packets = max(1, size // FULL_FRAME_BYTES)
    return packets, f"{text} = {packets} packets of {FULL_FRAME_BYTES} B"


def parse_flow_size(text) -> int | None:
    """Return a flow size in bytes, or None for a long-lived flow (``"inf"``)."""
    if str(text).strip().lower() in ("inf", "infinite", "unbounded"):
        return None
    return parse_size_bytes(text)


def seconds_text(seconds: float) -> str:
    """Write a number of seconds as a dcsim duration without an exponent."""
    return ("%.9f" % seconds).rstrip("0").rstrip(".") + "s"


# ---------------------------------------------------------------------------------------
# What the running kernel offers.
# ---------------------------------------------------------------------------------------


def read_kernel_config() -> dict[str, str]:
    """Return the options of /proc/config.gz that matter here (empty if it is absent)."""
    import gzip

    wanted = ("NET_SCH_NETEM", "NET_SCH_RED", "NET_SCH_HTB", "TCP_CONG_DCTCP", "MODULES")
    found: dict[str, str] = {}
    try:
        with gzip.open("/proc/config.gz", "rt") as handle:
            for line in handle:
                for option in wanted:
                    if line.startswith(f"CONFIG_{option}="):
                        found[option] = line.split("=", 1)[1].strip()
                    elif line.startswith(f"# CONFIG_{option} is not set"):
                        found[option] = "not set"
    except OSError:
        pass
    return found


def kernel_facts() -> dict:
    """Collect what the kernel offers without needing root: version, congestion
    controls, CUBIC's module parameters, whether modules can be loaded at all."""
    path = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
    try:
        ccs = path.read_text().split()
    except OSError:
        ccs = []
    cubic = {}
    params = Path("/sys/module/tcp_cubic/parameters")
    if params.is_dir():
        for item in params.iterdir():
            try:
                cubic[item.name] = int(item.read_text().strip())
            except (OSError, ValueError):
                pass
    modprobe = shutil.which("modprobe")
    modules_loadable = Path("/proc/modules").exists()
    if modprobe is None:
        modules_note = "modprobe is not installed"
    else:
        modules_note = f"modprobe at {modprobe}"
    if not modules_loadable:
        modules_note += "; the kernel cannot load modules (no /proc/modules)"
    return {
        "release": platform.release(),
        "version": platform.version(),
        "machine": platform.machine(),
        "congestion_controls": ccs,
        "cubic_parameters": cubic,
        "modprobe": modprobe,
        "modules_loadable": modules_loadable,
        "modules": modules_note,
        "config": read_kernel_config(),
    }


def try_modprobe(module: str, facts: dict) -> str:
    """Try to load a module and say what happened (modules may be unavailable)."""
    if not facts["modprobe"]:
        return f"modprobe {module}: {facts['modules']}"
    result = subprocess.run(
        [facts["modprobe"], module], capture_output=True, text=True, check=False
    )
    if result.returncode == 0:
        return f"modprobe {module}: loaded"
    return f"modprobe {module}: {result.stderr.strip() or 'failed'}"


def describe_missing(feature: str, facts: dict, probe: dict | None) -> str:
    """Explain why a qdisc or a congestion control is missing, from what was found."""
    config_key = {"sch_netem": "NET_SCH_NETEM", "sch_red": "NET_SCH_RED",
                  "tcp_dctcp": "TCP_CONG_DCTCP"}[feature]
    parts = []
    if probe and feature in probe:
        parts.append(probe[feature])
    setting = facts["config"].get(config_key)
    if setting:
        state = "is not set" if setting == "not set" else f"= {setting}"
        parts.append(f"CONFIG_{config_key} {state}")
    parts.append(facts["modules"])
    return f"no {feature} ({'; '.join(parts)})"


# ---------------------------------------------------------------------------------------
# The scenario, resolved by dcsim and turned into a plan of namespaces, ports and flows.
# ---------------------------------------------------------------------------------------


@dataclass
class PortPlan:
    """One output port of dcsim (a link end), and where the kernel shapes it."""

    number: int
    node: str
    peer: str
    tier: str
    peer_tier: str
    rate_bps: int
    namespace_node: str
    device: str
    buffer_pkts: int

    @property
    def label(self) -> str:
        """dcsim's port label ``node->peer``."""
        return f"{self.node}->{self.peer}"


@dataclass
class FlowPlan:
    """One ``[[flows]]`` entry."""

    flow_id: int
    src: int
    dst: int
    size: int | None
    start_ns: int
    stop_ns: int | None
    cc: str


@dataclass
class Plan:
    """Everything the run needs, derived from the resolved scenario."""

    name: str
    kind: str
    hosts: list[str]
    switches: list[str]
    links: list[tuple[str, str]]
    ports: list[PortPlan]
    flows: list[FlowPlan]
    duration_ns: int | None
    warmup_ns: int
    cooldown_ns: int
    sample_ns: int
    sampled_ports: list[str]
    bottleneck: str
    ping_pair: tuple[int, int]
    mtu: int
    sysctls: dict[str, str]
    route_options: list[str]
    unemulated: list[str] = field(default_factory=list)
    emulated: list[str] = field(default_factory=list)
    not_measured_series: list[str] = field(default_factory=list)
    # output.timeseries.flows (flow numbers) and .cwnd: goodput and TCP state sampled.
    series_flows: list[int] = field(default_factory=list)
    series_state: bool = False
    buffers: dict[str, str] = field(default_factory=dict)
    resolved_text: str = ""
    link_delays_ns: list[int] = field(default_factory=list)
    # transport.gso: the kernel keeps its offloads, each veth limited to this size.
    gso_bytes: int | None = None
    # transport.app_write: the senders' send() size (64 KiB when the scenario has none).
    app_write: int = APP_WRITE_BYTES

    @property
    def end_ns(self) -> int:
        """The latest moment the run may last, relative to time zero."""
        return self.duration_ns if self.duration_ns is not None else DRAIN_CAP_NS


def default_dcsim() -> Path:
    """The dcsim binary of this repository's ``ci`` profile."""
    return Path(__file__).resolve().parent.parent / "target" / "ci" / "dcsim"


def resolve_scenario(path: Path, sets: list[str], dcsim: Path) -> tuple[dict, str]:
    """Resolve a scenario with ``dcsim show`` and return it parsed and as text."""
    if not dcsim.exists():
        raise RuntimeError(
            f"dcsim binary {dcsim} is missing; build it with "
            "`cargo build --profile ci -p dcsim-cli` or pass --dcsim PATH"
        )
    command = [str(dcsim), "show", str(path)]
    for item in sets:
        command += ["--set", item]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise Refused(f"dcsim show rejected the scenario: {result.stderr.strip()}")
    return tomllib.loads(result.stdout), result.stdout


def _transport_of(scn: dict, flow: dict) -> tuple[str, dict]:
    """Return the name and table of the transport a flow uses."""
    name = flow.get("transport")
    if name is None:
        return "[transport]", scn["transport"]
    try:
        return f"transports.{name}", scn["transports"][name]
    except KeyError:
        raise Refused(f"flow names transport {name!r}, which [transports] does not define")


def _check_cc(where: str, cc: dict, facts: dict) -> str:
    """Refuse a congestion control the kernel cannot run as the scenario sets it."""
    kind = cc["kind"]
    available = facts["congestion_controls"]
    if kind not in available:
        reason = ""
        if kind == "dctcp":
            reason = "; " + describe_missing("tcp_dctcp", facts, None)
        raise Refused(
            f"{where}.cc = {kind!r} is not offered by this kernel "
            f"(tcp_available_congestion_control: {' '.join(available) or 'unreadable'}){reason}"
        )
    if kind == "cubic":
        kernel = facts["cubic_parameters"]
        # The kernel's CUBIC parameters are module parameters shared by the whole machine,
        # so the twin compares them instead of changing them.
        actual = {
            "c": kernel.get("bic_scale", 41) * 10 / 1024,
            "beta": kernel.get("beta", 717) / 1024,
            "fast_convergence": bool(kernel.get("fast_convergence", 1)),
            "reno_friendly": bool(kernel.get("tcp_friendliness", 1)),
            "hystart": bool(kernel.get("hystart", 1)),
            # The kernel is Linux: its CUBIC follows tcp_cubic.c, not RFC 9438's variant.
            "linux_rules": True,
        }
        for key, value in actual.items():
            wanted = cc.get(key, value)
            same = abs(wanted - value) < 0.005 if isinstance(value, float) else wanted == value
            if not same:
                raise Refused(
                    f"{where}.cc.{key} = {wanted} differs from the kernel's CUBIC ({value}); "
                    "it is a machine-wide module parameter, which the twin does not change"
                )
    return kind


def _tcp_settings(where: str, tcp: dict, plan_notes: list[str], emulated: list[str],
                  sysctls: dict[str, str], route_options: list[str]) -> None:
    """Map the scenario's TCP settings onto per-namespace sysctls and route options, and
    list those the kernel cannot follow."""
    if tcp.get("ictcp") is not None:
        raise Refused(f"{where}.ictcp: ICTCP is not part of the Linux kernel")
    init_cwnd = int(tcp.get("init_cwnd_pkts", 10))
    route_options.append(f"initcwnd {init_cwnd}")
    emulated.append(f"init_cwnd_pkts = {init_cwnd}: route option initcwnd on every host")
    if not tcp.get("delayed_ack", False):
        route_options.append("quickack 1")
        emulated.append("delayed_ack = false: route option quickack 1 (an ACK per segment)")
    else:
        plan_notes.append(
            "delack_timeout: the kernel's delayed ACK uses its own timer (40 ms floor, "
            "adapted to the RTT), not delack_timeout"
        )
    min_rto = tcp.get("min_rto", "200ms")
    min_rto_us = max(1, parse_duration_ns(min_rto) // 1000)
    if Path("/proc/sys/net/ipv4/tcp_rto_min_us").exists():
        sysctls["net.ipv4.tcp_rto_min_us"] = str(min_rto_us)
        how = "sysctl net.ipv4.tcp_rto_min_us"
    else:
        route_options.append(f"rto_min {max(1, min_rto_us // 1000)}ms")
        how = "route option rto_min"
    emulated.append(f"min_rto = {min_rto}: {how} (the kernel rounds it to its timer tick)")
    max_rto = tcp.get("max_rto", "120s")
    max_rto_ms = parse_duration_ns(max_rto) // 1_000_000
    if Path("/proc/sys/net/ipv4/tcp_rto_max_ms").exists() and 1000 <= max_rto_ms <= 120000:
        sysctls["net.ipv4.tcp_rto_max_ms"] = str(max_rto_ms)
        emulated.append(f"max_rto = {max_rto}: sysctl net.ipv4.tcp_rto_max_ms")
    elif max_rto_ms != 120000:
        plan_notes.append(f"max_rto = {max_rto}: the kernel keeps its own (120 s)")
    init_rto = tcp.get("init_rto", "1s")
    if parse_duration_ns(init_rto) != 1_000_000_000:
        plan_notes.append(f"init_rto = {init_rto}: the kernel's initial RTO is 1 s")
    sack = bool(tcp.get("sack", True))
    sysctls["net.ipv4.tcp_sack"] = "1" if sack else "0"
    rack = bool(tcp.get("rack", False))
    sysctls["net.ipv4.tcp_recovery"] = "1" if rack else "0"
    sysctls["net.ipv4.tcp_early_retrans"] = "3" if rack else "0"
    emulated.append(
        f"sack = {str(sack).lower()}, rack = {str(rack).lower()}: sysctls tcp_sack, "
        "tcp_recovery and tcp_early_retrans (RACK and tail-loss probes)"
    )
    for key, kernel_value, text in (
        ("handshake", True, "the kernel always opens with a handshake"),
        ("prr", True, "the kernel always reduces by PRR"),
        ("host_backpressure", True, "the kernel always holds a sender back at a full qdisc"),
        ("small_queues", True, "the kernel's TCP small queues are always on"),
    ):
        if bool(tcp.get(key, kernel_value)) != kernel_value:
            plan_notes.append(f"{key} = false: {text}")
    if int(tcp.get("min_cwnd_pkts", 2)) != 2:
        plan_notes.append("min_cwnd_pkts: the kernel's floor is 2 segments")
    if tcp.get("max_window") is not None:
        plan_notes.append("max_window: not emulated (the kernel autotunes its windows)")
    rcv_buf = tcp.get("rcv_buf")
    autotune = tcp.get("rcv_autotune")
    if autotune is False:
        # A fixed buffer: autotuning off, and the buffer Linux starts with is the one.
        rcv_bytes = parse_size_bytes(rcv_buf) if rcv_buf is not None else 33554432
        sysctls["net.ipv4.tcp_moderate_rcvbuf"] = "0"
        sysctls["net.ipv4.tcp_rmem"] = f"4096 {rcv_bytes} {rcv_bytes}"
        emulated.append(
            f"rcv_autotune = false, rcv_buf = {rcv_bytes} B: sysctls tcp_moderate_rcvbuf 0 "
            "and tcp_rmem's initial and largest sizes"
        )
    elif rcv_buf is not None:
        rcv_bytes = parse_size_bytes(rcv_buf)
        sysctls["net.ipv4.tcp_rmem"] = f"4096 131072 {rcv_bytes}"
        emulated.append(
            f"rcv_buf = {rcv_buf}: sysctl net.ipv4.tcp_rmem's largest size (the kernel "
            "autotunes its buffer up to it from 128 KiB, as dcsim's rcv_autotune does)"
        )
    jitter = tcp.get("stack_jitter", "0s")
    if parse_duration_ns(jitter) != 0:
        plan_notes.append(
            f"stack_jitter = {jitter}: the kernel has its own processing noise (the base "
            "RTT's spread in summary.json shows it), not this one"
        )
    mss = parse_size_bytes(tcp.get("mss", "1460B"))
    plan_notes.append(
        f"mss = {mss} B: the kernel sends {mss - 12} B of payload per segment, the "
        "other 12 B carry the TCP timestamps option (on by default in Linux)"
    )


def build_plan(scn: dict, resolved_text: str, facts: dict) -> Plan:
    """Turn a resolved scenario into a plan, refusing what cannot be emulated."""
    topo = scn["topology"]
    kind = topo["kind"]
    if kind not in ("star", "dumbbell"):
        raise Refused(f"topology kind {kind!r} is not emulated (only star and dumbbell)")
    if kind == "star":
        count = int(topo["hosts"])
        hosts = [f"h{i}" for i in range(count)]
        switches = ["sw"]
        attach = {h: "sw" for h in hosts}
        links = [(h, "sw", topo["host_link"]) for h in hosts]
        switch_tier = "tor"
    else:
        pairs = int(topo["pairs"])
        count = 2 * pairs
        hosts = [f"h{i}" for i in range(count)]
        switches = ["left", "right"]
        attach = {h: ("left" if i < pairs else "right") for i, h in enumerate(hosts)}
        links = [(h, attach[h], topo["host_link"]) for h in hosts]
        links.append(("left", "right", topo["bottleneck"]))
        switch_tier = "switch"
    if count > MAX_HOSTS:
        raise Refused(f"{count} hosts: the kernel twin emulates at most {MAX_HOSTS}")
    for a, b, link in links:
        rate = parse_rate_bps(link["rate"])
        if rate > MAX_RATE_BPS:
            raise Refused(
                f"link {a}-{b} runs at {link['rate']}: the kernel twin shapes at most 1 Gb/s"
            )
    queue, nic = scn["queue"], scn["nic"]
    for section, table in (("[queue]", queue), ("[nic]", nic)):
        if table["kind"] != "droptail":
            raise Refused(
                f"{section} kind {table['kind']!r} is not emulated; only droptail is. ECN "
                f"marking is left out: this kernel has {describe_missing('sch_red', facts, None)} "
                f"and {describe_missing('tcp_dctcp', facts, None)}"
            )
    if scn.get("generators"):
        raise Refused("[[generators]] are not emulated; list the flows as [[flows]]")
    if scn.get("controller"):
        raise Refused("[controller] is not emulated")
    flows_in = scn.get("flows", [])
    if not flows_in:
        raise Refused("the scenario has no [[flows]]")
    if len(flows_in) > MAX_FLOWS:
        raise Refused(f"{len(flows_in)} flows: the kernel twin runs at most {MAX_FLOWS}")

    unemulated: list[str] = []
    emulated: list[str] = []
    sysctls: dict[str, str] = {"net.ipv4.tcp_no_metrics_save": "1"}
    route_options: list[str] = []
    flows: list[FlowPlan] = []
    checked: dict[str, tuple] = {}
    for index, flow in enumerate(flows_in):
        where, tcp = _transport_of(scn, flow)
        if tcp.get("kind", "tcp") != "tcp":
            raise Refused(f"{where}.kind = {tcp['kind']!r}: only TCP runs on the kernel")
        if where not in checked:
            cc = _check_cc(where, tcp["cc"], facts)
            notes, emu, sys_, routes = [], [], {}, []
            _tcp_settings(where, tcp, notes, emu, sys_, routes)
            checked[where] = (cc, notes, emu, sys_, routes)
        cc, notes, emu, sys_, routes = checked[where]
        src, dst = int(flow["src"]), int(flow["dst"])
        if not (0 <= src < count and 0 <= dst < count) or src == dst:
            raise Refused(f"flows[{index}]: hosts {src} -> {dst} do not fit {count} hosts")
        stop = flow.get("stop")
        flows.append(FlowPlan(
            flow_id=index, src=src, dst=dst, size=parse_flow_size(flow.get("size", "inf")),
            start_ns=parse_duration_ns(flow.get("start", "0ps")),
            stop_ns=parse_duration_ns(stop) if stop else None, cc=cc,
        ))
    settings = {json.dumps(c[1:], sort_keys=True) for c in checked.values()}
    if len(settings) > 1:
        raise Refused(
            "flows use transports with different TCP settings; the kernel twin applies one "
            "set of sysctls and routes to every host"
        )
    _, notes, emu, sys_, routes = next(iter(checked.values()))
    unemulated += notes
    emulated += emu
    sysctls.update(sys_)
    route_options += routes
    mss = parse_size_bytes(_transport_of(scn, flows_in[0])[1].get("mss", "1460B"))
    gso = _transport_of(scn, flows_in[0])[1].get("gso")
    gso_bytes = parse_size_bytes(gso) if gso is not None else None
    app_write_key = _transport_of(scn, flows_in[0])[1].get("app_write")
    app_write = parse_size_bytes(app_write_key) if app_write_key is not None else APP_WRITE_BYTES
    if app_write_key is None:
        unemulated.append(
            f"transport.app_write unset: dcsim's application writes all its data at once, the "
            f"twin's senders {APP_WRITE_BYTES} B per send() (with offloads and a full send "
            "buffer this shapes the super-packets)"
        )
    else:
        emulated.append(f"app_write = {app_write_key}: each sender's send() size")
    if gso_bytes is not None:
        emulated.append(
            f"gso = {gso}: the kernel's segmentation offloads stay on (as with --offloads), "
            f"each veth's gso_max_size {min(gso_bytes, 65536)}"
        )

    sim = scn.get("sim", {})
    duration_ns = parse_duration_ns(sim["duration"]) if sim.get("duration") else None
    if duration_ns is None and any(f.size is None for f in flows):
        raise Refused("a long-lived flow needs sim.duration (or --duration)")
    warmup_ns = parse_duration_ns(sim.get("warmup", "0ps"))
    cooldown_ns = parse_duration_ns(sim.get("cooldown", "0ps"))

    queue_pkts, queue_note = parse_buffer_pkts(queue["buffer"])
    nic_pkts, nic_note = parse_buffer_pkts(nic["buffer"])
    ports: list[PortPlan] = []
    for a, b, link in links:
        rate = parse_rate_bps(link["rate"])
        for node, peer in ((a, b), (b, a)):
            is_host = node in attach
            ports.append(PortPlan(
                number=len(ports), node=node, peer=peer,
                tier="host" if is_host else switch_tier,
                peer_tier="host" if peer in attach else switch_tier,
                rate_bps=rate, namespace_node=node,
                device="eth0" if is_host else peer,
                buffer_pkts=nic_pkts if is_host else queue_pkts,
            ))
    labels = {p.label for p in ports}

    # The bottleneck: in a star the downlink of the host that receives most flows, in a
    # dumbbell the direction of the switch link that most flows cross.
    if kind == "star":
        receivers = [f.dst for f in flows]
        busiest = max(sorted(set(receivers)), key=receivers.count)
        bottleneck = f"sw->h{busiest}"
        ping_pair = (count - 1, 0)
    else:
        rightward = sum(1 for f in flows if attach[f"h{f.src}"] == "left"
                        and attach[f"h{f.dst}"] == "right")
        leftward = sum(1 for f in flows if attach[f"h{f.src}"] == "right"
                       and attach[f"h{f.dst}"] == "left")
        bottleneck = "right->left" if leftward > rightward else "left->right"
        ping_pair = (0, count // 2)

    output = scn.get("output", {}) or {}
    series = output.get("timeseries") or {}
    sample_ns = parse_duration_ns(series["every"]) if series.get("every") else DEFAULT_SAMPLE_NS
    sample_ns = max(sample_ns, MIN_SAMPLE_NS)
    sampled = [bottleneck]
    for label in series.get("ports", []) or []:
        chosen = [p.label for p in ports if p.tier != "host"] if label == "switches" else [label]
        for item in chosen:
            if item not in labels:
                raise Refused(
                    f"output.timeseries.ports names {item!r}, not a port of this topology")
            if item not in sampled:
                sampled.append(item)
    not_measured_series = []
    chosen_flows = series.get("flows", "none")
    if chosen_flows == "all":
        series_flows = [f.flow_id for f in flows]
    elif chosen_flows in (None, "none"):
        series_flows = []
    else:
        series_flows = sorted(set(int(n) for n in chosen_flows))
        unknown = [n for n in series_flows if not 0 <= n < len(flows)]
        if unknown:
            raise Refused(f"output.timeseries.flows names flow {unknown[0]}, but the "
                          f"scenario has {len(flows)} flows (numbered from 0)")
    series_state = bool(series.get("cwnd")) and bool(series_flows)
    if series_state and any(f.cc == "dctcp" for f in flows):
        not_measured_series.append(
            "alpha (output.timeseries.cwnd): the kernel's TCP_INFO gives DCTCP's window, not "
            "its alpha")
    for key in ("trace", "events", "queue_occupancy"):
        if output.get(key):
            unemulated.append(f"output.{key}: not produced by the kernel twin")

    delays = [parse_duration_ns(link["delay"]) for _, _, link in links]
    if scn.get("routing", {}).get("mode", "symmetric-ecmp") != "symmetric-ecmp":
        unemulated.append("routing.mode: a star or dumbbell has one path, so it plays no part")
    port_jitter = (scn.get("ports") or {}).get("jitter", "0s")
    if parse_duration_ns(port_jitter) != 0:
        unemulated.append(f"ports.jitter = {port_jitter}: the kernel's shapers have their own "
                          "timing noise (summary.json's shaper_noise measures it), not this one")
    if (scn.get("ports") or {}).get("release", "end") != "start":
        unemulated.append('ports.release = "end": htb hands each packet on whole when its '
                          'transmission starts, as dcsim does with ports.release = "start"')
    return Plan(
        name=scn.get("name", "scenario"), kind=kind, hosts=hosts, switches=switches,
        links=[(a, b) for a, b, _ in links], ports=ports, flows=flows,
        duration_ns=duration_ns, warmup_ns=warmup_ns, cooldown_ns=cooldown_ns,
        sample_ns=sample_ns, sampled_ports=sampled, bottleneck=bottleneck,
        ping_pair=ping_pair, mtu=mss + 40, sysctls=sysctls, route_options=route_options,
        unemulated=unemulated, emulated=emulated,
        not_measured_series=not_measured_series,
        series_flows=series_flows, series_state=series_state,
        buffers={"queue": queue_note, "nic": nic_note},
        resolved_text=resolved_text, link_delays_ns=delays, gso_bytes=gso_bytes,
        app_write=app_write,
    )


# ---------------------------------------------------------------------------------------
# Namespaces, links and shaping.
# ---------------------------------------------------------------------------------------


def host_ip(index: int) -> str:
    """The address of host ``index``: each host has a /24 of its own, shared only with the
    switch port it hangs off."""
    return f"{NET_PREFIX}.{index}.2"


def gateway_ip(index: int) -> str:
    """The address of the switch port toward host ``index``."""
    return f"{NET_PREFIX}.{index}.1"


def host_mac(index: int) -> str:
    """A fixed, locally administered MAC address for host ``index``."""
    return f"02:6b:74:00:00:{index + 1:02x}"


def gateway_mac(index: int) -> str:
    """The MAC address of the switch port toward host ``index``."""
    return f"02:6b:74:01:00:{index + 1:02x}"


def run_command(command: list[str], stdin: str | None = None) -> str:
    """Run a system command and return its output; fail with its error message."""
    result = subprocess.run(command, input=stdin, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        detail = (result.stderr or result.stdout).strip()
        shown = " ".join(command[:8]) + (" ..." if len(command) > 8 else "")
        raise RuntimeError(f"`{shown}` failed: {detail}")
    return result.stdout


def list_namespaces() -> list[str]:
    """The names of the named network namespaces (``ip netns list``)."""
    output = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                            check=False).stdout
    return [line.split()[0] for line in output.splitlines() if line.strip()]


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_namespace(name: str) -> None:
    """Stop the processes left in one of the twin's namespaces, then delete it."""
    output = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True,
                            check=False).stdout
    for token in output.split():
        try:
            os.kill(int(token), signal.SIGKILL)
        except (ValueError, ProcessLookupError):
            pass
    subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


def clear_stale_namespaces() -> list[str]:
    """Delete the namespaces and scratch folders that an earlier twin left behind when it
    was killed outright.

    A namespace of the twin is named ``ktwin<pid>-<node>`` and a scratch folder
    ``kernel_twin-<pid>-*``; either is stale when that process no longer exists.
    """
    removed = []
    for name in list_namespaces():
        match = re.fullmatch(rf"{NS_PREFIX}(\d+)-\w+", name)
        if match and not pid_alive(int(match.group(1))):
            remove_namespace(name)
            removed.append(name)
    for folder in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*"):
        match = re.fullmatch(rf"{SCRATCH_PREFIX}(\d+)-\w+", folder.name)
        if match and folder.is_dir() and not pid_alive(int(match.group(1))):
            shutil.rmtree(folder, ignore_errors=True)
    return removed


def probe_kernel(facts: dict) -> dict:
    """Check, in a throw-away namespace, that namespaces, htb, pfifo and veth work, and
    whether netem and red exist. Raises Skipped when the twin cannot run at all."""
    if os.geteuid() != 0:
        raise Skipped("not root")
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            raise Skipped(f"no `{tool}` command")
    name = f"{NS_PREFIX}{os.getpid()}-probe"
    result = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True,
                            check=False)
    if result.returncode != 0:
        raise Skipped(f"cannot create a network namespace: {result.stderr.strip()}")
    found: dict = {}
    try:
        def attempt(args: list[str]) -> str | None:
            out = subprocess.run(["tc", "-n", name, "qdisc", "replace", "dev", "lo", "root"]
                                 + args, capture_output=True, text=True, check=False)
            return None if out.returncode == 0 else (out.stderr.strip() or "failed")

        error = attempt(["handle", "1:", "htb", "default", "1"])
        if error:
            raise Skipped(f"no sch_htb ({error})")
        found["sch_htb"] = "present"
        veth = subprocess.run(["ip", "-n", name, "link", "add", "ktp0", "type", "veth", "peer",
                               "name", "ktp1"], capture_output=True, text=True, check=False)
        if veth.returncode != 0:
            raise Skipped(f"no veth ({veth.stderr.strip()})")
        for qdisc, args in (
            ("sch_netem", ["netem", "delay", "1ms"]),
            ("sch_red", ["red", "limit", "400000", "min", "30000", "max", "90000", "avpkt",
                         "1000", "burst", "55", "probability", "0.02", "bandwidth", "100mbit"]),
        ):
            error = attempt(args)
            if error and facts["modprobe"]:
                found[f"{qdisc}_modprobe"] = try_modprobe(qdisc, facts)
                error = attempt(args)
            found[qdisc] = "present" if error is None else f"tc says: {error}"
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
    return found


class Lab:
    """The namespaces, links, qdiscs and processes of one run.

    Everything it creates lives inside namespaces named ``ktwin<pid>-<node>``; nothing is
    added to the root namespace. ``cleanup`` stops every process and deletes every
    namespace (which removes the veths inside them).
    """

    def __init__(self, plan: Plan, offloads: bool):
        self.plan = plan
        self.offloads = offloads
        self.prefix = f"{NS_PREFIX}{os.getpid()}-"
        self.namespaces: list[str] = []
        self.processes: list[subprocess.Popen] = []
        self.scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
        self.setup: dict = {}

    def ns(self, node: str) -> str:
        """The namespace name of a node (``h3``, ``sw``, ``left``)."""
        return self.prefix + node

    def ip_batch(self, node: str, lines: list[str]) -> None:
        """Run ``ip`` commands inside a node's namespace in one process."""
        if lines:
            run_command(["ip", "-n", self.ns(node), "-batch", "-"], "\n".join(lines) + "\n")

    def tc_batch(self, node: str, lines: list[str]) -> None:
        """Run ``tc`` commands inside a node's namespace in one process."""
        if lines:
            run_command(["tc", "-n", self.ns(node), "-batch", "-"], "\n".join(lines) + "\n")

    def build(self) -> None:
        """Create the namespaces, links, addresses, routes and shapers of the plan.

        Switches route (IP forwarding) rather than bridge: a packet that a switch receives
        is detached from its sending socket there, as a real NIC's transmit completion
        does, so that TCP Small Queues counts only what waits in the sender's own host.
        Through a bridge, the packets waiting in the switch queue would still count
        against the sender's TSQ budget and cap each flow at about 200 KB in the network.
        """
        plan = self.plan
        nodes = plan.hosts + plan.switches
        for node in nodes:
            name = self.ns(node)
            # The name is recorded before the namespace exists, so that a failure half-way
            # still leaves it to the cleanup.
            self.namespaces.append(name)
            run_command(["ip", "netns", "add", name])
        # The congestion control is set on each socket (TCP_CONGESTION): a namespace other
        # than the root one may not make a restricted algorithm its default.
        host_sysctls = dict(plan.sysctls)
        common = {"net.ipv6.conf.all.disable_ipv6": "1",
                  "net.ipv6.conf.default.disable_ipv6": "1"}
        applied: dict[str, str] = {}
        for node in nodes:
            values = dict(common)
            if node in plan.hosts:
                values.update(host_sysctls)
            else:
                values.update({"net.ipv4.ip_forward": "1",
                               "net.ipv4.conf.all.send_redirects": "0",
                               "net.ipv4.conf.default.send_redirects": "0"})
            args = [f"{k}={v}" for k, v in values.items()]
            run_command(["ip", "netns", "exec", self.ns(node), "sysctl", "-q", "-e", "-w"] + args)
            applied.update(values)
        self.setup["sysctls"] = applied

        index = {h: i for i, h in enumerate(plan.hosts)}
        attach = {a: b for a, b in plan.links if a in index}
        # Without offloads every packet is its own buffer: gso_max_segs 1 stops TCP from
        # building multi-segment (software GSO) buffers, which qdiscs would count as one.
        segs = "" if self.offloads else " gso_max_segs 1"
        if self.offloads and plan.gso_bytes is not None and plan.gso_bytes < 65536:
            segs = f" gso_max_size {plan.gso_bytes}"
        for host, switch in attach.items():
            i = index[host]
            self.ip_batch(host, [
                f"link add eth0 address {host_mac(i)} mtu {plan.mtu}{segs} type veth peer name "
                f"{host} address {gateway_mac(i)} mtu {plan.mtu}{segs} netns {self.ns(switch)}",
            ])
        if plan.kind == "dumbbell":
            self.ip_batch("left", [
                f"link add right address {TRUNK_MACS['left']} mtu {plan.mtu}{segs} type veth "
                f"peer name left address {TRUNK_MACS['right']} mtu {plan.mtu}{segs} "
                f"netns {self.ns('right')}",
            ])
        for switch in plan.switches:
            lines = ["link set lo up"]
            for host, home in attach.items():
                i = index[host]
                if home == switch:
                    lines += [f"addr add {gateway_ip(i)}/24 dev {host}", f"link set {host} up",
                              f"neigh replace {host_ip(i)} lladdr {host_mac(i)} dev {host} "
                              "nud permanent"]
            if plan.kind == "dumbbell":
                other = "right" if switch == "left" else "left"
                lines += [f"addr add {TRUNK_IPS[switch]}/30 dev {other}", f"link set {other} up",
                          f"neigh replace {TRUNK_IPS[other]} lladdr {TRUNK_MACS[other]} "
                          f"dev {other} nud permanent"]
                lines += [f"route add {NET_PREFIX}.{index[h]}.0/24 via {TRUNK_IPS[other]}"
                          for h, home in attach.items() if home == other]
            self.ip_batch(switch, lines)
        route_tail = " ".join(plan.route_options)
        for host in plan.hosts:
            i = index[host]
            # Static neighbour entries: no ARP exchange delays a flow's first packet.
            self.ip_batch(host, [
                "link set lo up", f"addr add {host_ip(i)}/24 dev eth0", "link set eth0 up",
                f"neigh replace {gateway_ip(i)} lladdr {gateway_mac(i)} dev eth0 nud permanent",
                f"route add {NET_PREFIX}.0.0/16 via {gateway_ip(i)} dev eth0 {route_tail}".strip(),
            ])
        self.setup["routing"] = (
            f"each host has {NET_PREFIX}.<i>.0/24 and reaches the others through "
            f"{NET_PREFIX}.0.0/16 via its switch port ({route_tail or 'no route options'}); "
            "switches forward IPv4; neighbours are static"
        )

        if not self.offloads:
            for port in plan.ports:
                run_command(["ip", "netns", "exec", self.ns(port.namespace_node), "ethtool",
                             "-K", port.device, "tso", "off", "gso", "off", "gro", "off"])
        self.setup["offloads"] = "as the kernel sets them" if self.offloads else \
            "tso, gso and gro off and gso_max_segs 1 on every veth"

        bursts = {}
        for port in plan.ports:
            burst = htb_burst_bytes(port.rate_bps)
            bursts[port.label] = burst
            self.tc_batch(port.namespace_node, [
                f"qdisc replace dev {port.device} root handle 1: stab overhead "
                f"{WIRE_OVERHEAD_BYTES} linklayer ethernet htb default 1",
                f"class add dev {port.device} parent 1: classid 1:1 htb rate {port.rate_bps}bit "
                f"ceil {port.rate_bps}bit burst {burst}b cburst {burst}b "
                f"quantum {FULL_FRAME_BYTES}",
                f"qdisc add dev {port.device} parent 1:1 handle 10: pfifo limit {port.buffer_pkts}",
            ])
        self.setup["shaping"] = (
            f"every port: htb root (size table overhead {WIRE_OVERHEAD_BYTES} B, so rates and "
            "counters are in wire bytes), one class with ceil = rate, pfifo child of the buffer "
            "in packets"
        )
        self.setup["htb_burst_bytes"] = sorted(set(bursts.values()))
        self.setup["namespaces"] = list(self.namespaces)
        self.setup["addresses"] = f"{NET_PREFIX}.0.0/16 inside the twin's namespaces only"
        self.setup["mtu"] = plan.mtu

    def spawn(self, node: str, kind: str, args: dict, capture: bool = False) -> subprocess.Popen:
        """Start a worker of this script inside a node's namespace."""
        command = ["ip", "netns", "exec", self.ns(node), sys.executable,
                   str(Path(__file__).resolve()), "--worker", kind, json.dumps(args)]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
            stderr=open(self.scratch / f"{kind}-{len(self.processes)}.err", "w"),
            text=True, start_new_session=True,
        )
        self.processes.append(process)
        return process

    def cleanup(self) -> list[str]:
        """Stop every worker, delete every namespace and the scratch folder; return the
        namespaces that could not be removed (empty when all is clean)."""
        for process in self.processes:
            if process.poll() is None:
                process.kill()
        for process in self.processes:
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
            if process.stdout:
                process.stdout.close()
            if process.stderr:
                process.stderr.close()
        for name in reversed(self.namespaces):
            remove_namespace(name)
        shutil.rmtree(self.scratch, ignore_errors=True)
        left = set(list_namespaces())
        return [name for name in self.namespaces if name in left]


def htb_burst_bytes(rate_bps: int) -> int:
    """The htb bucket depth: two full frames, or 100 µs at the rate if that is more, so that
    a late timer does not cost throughput while the port still sends close to one frame at
    a time."""
    return max(2 * FULL_FRAME_BYTES, int(rate_bps * 100e-6 / 8))


# ---------------------------------------------------------------------------------------
# Workers: processes started inside the namespaces.
# ---------------------------------------------------------------------------------------

# struct tcp_info of Linux (include/uapi/linux/tcp.h), up to tcpi_total_rto_time (6.7+).
_TCP_INFO_FIELDS = (
    "state ca_state retransmits probes backoff options wscale flags "
    "rto ato snd_mss rcv_mss unacked sacked lost retrans fackets "
    "last_data_sent last_ack_sent last_data_recv last_ack_recv "
    "pmtu rcv_ssthresh rtt rttvar snd_ssthresh snd_cwnd advmss reordering "
    "rcv_rtt rcv_space total_retrans "
    "pacing_rate max_pacing_rate bytes_acked bytes_received segs_out segs_in "
    "notsent_bytes min_rtt data_segs_in data_segs_out delivery_rate "
    "busy_time rwnd_limited sndbuf_limited delivered delivered_ce bytes_sent bytes_retrans "
    "dsack_dups reord_seen rcv_ooopack snd_wnd rcv_wnd rehash "
    "total_rto total_rto_recoveries total_rto_time"
).split()
_TCP_INFO_FORMAT = "<8B24I4Q2I4IQ3Q2I2Q2I2I2I2HI"


def _tcp_info_layout() -> list[tuple[str, int, struct.Struct]]:
    """Each field of TCP_INFO with its offset and format, from the one format string."""
    codes = []
    for count, code in re.findall(r"(\d*)([BHIQ])", _TCP_INFO_FORMAT[1:]):
        codes += [code] * int(count or 1)
    layout, offset = [], 0
    for name, code in zip(_TCP_INFO_FIELDS, codes):
        item = struct.Struct("<" + code)
        layout.append((name, offset, item))
        offset += item.size
    return layout


_TCP_INFO_LAYOUT = _tcp_info_layout()


def read_tcp_info(sock: socket.socket) -> dict:
    """Read the kernel's TCP_INFO of a socket; fields the kernel does not return are
    left out."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 512)
    return {name: item.unpack_from(raw, offset)[0]
            for name, offset, item in _TCP_INFO_LAYOUT if offset + item.size <= len(raw)}


# What the sender's state sampler keeps of TCP_INFO (output.timeseries.cwnd), as the
# columns of kernel_tcp_samples.csv after time_ns and flow_id.
STATE_FIELDS = ("ca_state", "snd_cwnd", "snd_ssthresh", "snd_mss", "unacked", "sacked", "lost",
                "retrans", "total_retrans", "total_rto", "rtt", "rto")
STATE_COLUMNS = ("ca_state", "cwnd_pkts", "ssthresh_pkts", "mss_bytes", "unacked_pkts",
                 "sacked_pkts", "lost_pkts", "retrans_out_pkts", "total_retrans", "timeouts",
                 "srtt_us", "rto_us")


class Ticker:
    """Instants t0 + k * every (k >= 1), the grid of every sampler in a run; ``None`` when
    nothing is sampled."""

    def __init__(self, t0: int, every_ns: int | None):
        self.t0, self.every = t0, every_ns
        self.next = t0 + every_ns if every_ns else None

    def until(self, deadline: int) -> int:
        """The earlier of a deadline and the next tick."""
        return deadline if self.next is None else min(deadline, self.next)

    def due(self, now: int) -> bool:
        """True once per tick reached; a tick missed by more than an interval is skipped,
        not caught up in a burst."""
        if self.next is None or now < self.next:
            return False
        self.next = max(self.next + self.every,
                        self.t0 + ((now - self.t0) // self.every + 1) * self.every)
        return True


def mono_ns() -> int:
    """CLOCK_MONOTONIC in nanoseconds; every namespace shares it, so it is the common
    clock of all workers."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def sleep_until(deadline_ns: int) -> None:
    """Sleep until a CLOCK_MONOTONIC instant."""
    while True:
        left = deadline_ns - mono_ns()
        if left <= 0:
            return
        time.sleep(left / 1e9)


def wait_s(left_ns: int) -> float:
    """A select() timeout in seconds, at most 20 ms: the kernel lets a timeout run late by
    0.1 % of its length, so a long one would miss the end of the run by milliseconds."""
    return min(max(0, left_ns), 20_000_000) / 1e9


def write_json(path: str, data: dict) -> None:
    """Write a worker's result file in one step."""
    tmp = f"{path}.tmp"
    with open(tmp, "w") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)


def worker_receive(a: dict) -> None:
    """Accept one connection, read and discard until EOF or the end of the run, and
    record when every byte had arrived (and, when asked, the bytes read by every tick)."""
    t0, size = a["t0"], a["size"]
    ticker = Ticker(t0, a.get("every_ns"))
    end_abs = t0 + a["end_ns"]
    warm_abs = t0 + a["warmup_ns"]
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", a["port"]))
    server.listen(1)
    print("ready", flush=True)
    result = {"delivered": 0, "end_ns": None, "at_warmup": 0, "first_byte_ns": None,
              "connected": False, "read_by": []}
    server.settimeout(max(0.001, (end_abs - mono_ns()) / 1e9))
    try:
        conn, _ = server.accept()
    except (socket.timeout, OSError):
        write_json(a["result"], result)
        return
    result["connected"] = True
    if ticker.next is not None:
        # Nothing was read by the last tick before the connection; ticks before it pass.
        now = mono_ns()
        ticker.due(now)
        result["read_by"].append([(now - t0) // ticker.every * ticker.every, 0])
    buffer = bytearray(1 << 20)
    total = 0
    warm_taken = a["warmup_ns"] == 0
    while True:
        now = mono_ns()
        if not warm_taken and now >= warm_abs:
            result["at_warmup"], warm_taken = total, True
        if now >= end_abs:
            break
        if ticker.due(now):
            result["read_by"].append([now - t0, total])
        wake = ticker.until(end_abs if warm_taken else min(end_abs, warm_abs))
        ready, _, _ = select.select([conn], [], [], wait_s(wake - now))
        if not ready:
            continue
        try:
            n = conn.recv_into(buffer)
        except ConnectionResetError:
            break
        if n == 0:
            break
        if result["first_byte_ns"] is None:
            result["first_byte_ns"] = mono_ns() - t0
        total += n
        if size is not None and total >= size and result["end_ns"] is None:
            result["end_ns"] = mono_ns() - t0
    result["delivered"] = total
    write_json(a["result"], result)
    conn.close()


def worker_send(a: dict) -> None:
    """Open a connection at the flow's start, send its bytes (or until its stop or the end
    of the run), and record the sender's TCP_INFO at the end (and, when asked, part of it
    at every tick while the connection is open)."""
    t0, size = a["t0"], a["size"]
    ticker = Ticker(t0, a.get("every_ns"))
    states = []

    def sample(now: int) -> None:
        if ticker.due(now):
            info = read_tcp_info(sock)
            states.append([now - t0] + [info.get(name) for name in STATE_FIELDS])

    stop_abs = t0 + a["stop_ns"]
    end_abs = t0 + a["end_ns"]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, a["cc"].encode())
    cc = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).split(b"\0")[0]
    if cc.decode() != a["cc"]:
        raise RuntimeError(f"TCP_CONGESTION is {cc.decode()!r}, not {a['cc']!r}")
    sleep_until(t0 + a["start_ns"])
    result = {"start_ns": mono_ns() - t0, "cc": cc.decode(), "sent": 0, "closed_ns": None}
    sock.settimeout(max(0.001, (end_abs - mono_ns()) / 1e9))
    try:
        sock.connect((a["dst_ip"], a["port"]))
    except OSError as error:
        result["error"] = f"connect: {error}"
        write_json(a["result"], result)
        return
    result["connected_ns"] = mono_ns() - t0
    sock.setblocking(False)
    chunk = memoryview(bytes(a.get("write", APP_WRITE_BYTES)))
    sent = 0
    while size is None or sent < size:
        now = mono_ns()
        if now >= stop_abs:
            break
        sample(now)
        _, writable, _ = select.select([], [sock], [], wait_s(ticker.until(stop_abs) - now))
        if not writable:
            continue
        want = len(chunk) if size is None else min(len(chunk), size - sent)
        try:
            sent += sock.send(chunk[:want])
        except BlockingIOError:
            continue
        except OSError as error:
            # The receiver closes at the end of the run; if it does so a moment before
            # this side sees the end, that is the end and not an error.
            if mono_ns() < stop_abs - 50_000_000:
                result["error"] = f"send: {error}"
            break
    result["sent"] = sent
    if size is not None and sent == size:
        # Close the sending side and wait for the receiver to close too: by then every
        # byte has been acknowledged, and TCP_INFO counts every retransmission.
        sock.shutdown(socket.SHUT_WR)
        while True:
            now = mono_ns()
            if now >= end_abs:
                break
            sample(now)
            readable, _, _ = select.select([sock], [], [], wait_s(ticker.until(end_abs) - now))
            if readable:
                try:
                    if not sock.recv(4096):
                        result["closed_ns"] = mono_ns() - t0
                        break
                except BlockingIOError:
                    continue
                except OSError:
                    break
    elif mono_ns() < end_abs and a["stop_ns"] < a["end_ns"]:
        # A flow with a stop time keeps its connection until the end of the run, so that
        # what it still has in flight is delivered.
        while (now := mono_ns()) < end_abs:
            sample(now)
            sleep_until(ticker.until(end_abs))
    result["tcp_info"] = read_tcp_info(sock)
    result["states"] = states
    if size is None or sent < size:
        # Wait (briefly) for the receiver to close first, so that nothing it has not read
        # yet is thrown away by a reset from this side.
        readable, _, _ = select.select([sock], [], [], 2.0)
        while readable:
            try:
                if not sock.recv(4096):
                    break
            except OSError:
                break
            readable, _, _ = select.select([sock], [], [], 2.0)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()
    write_json(a["result"], result)


# SO_TIMESTAMPNS (asm-generic/socket.h); the socket module does not name it.
SO_TIMESTAMPNS = 35


def _icmp_checksum(data: bytes) -> int:
    """The Internet checksum of an ICMP message."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def worker_ping(a: dict) -> None:
    """Send ICMP echo requests (56 B of data, as ping does) and record the round trips,
    from just before the send to the kernel's receive timestamp of the reply (so the time
    this process takes to wake up is not counted); the first one is a warm-up."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    ident = os.getpid() & 0xFFFF
    rtts = []
    for seq in range(a["count"] + 1):
        payload = bytes(56)
        header = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
        packet = struct.pack("!BBHHH", 8, 0, _icmp_checksum(header + payload), ident, seq) + payload
        deadline = mono_ns() + 1_000_000_000
        sent = time.time_ns()
        sock.sendto(packet, (a["dst_ip"], 0))
        while True:
            left = deadline - mono_ns()
            if left <= 0:
                break
            ready, _, _ = select.select([sock], [], [], left / 1e9)
            if not ready:
                break
            data, ancillary, _, _ = sock.recvmsg(2048, 64)
            received = time.time_ns()
            for level, kind, value in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    seconds, nanos = struct.unpack("=qq", value[:16])
                    received = seconds * 1_000_000_000 + nanos
            ihl = (data[0] & 0x0F) * 4
            kind, _, _, rid, rseq = struct.unpack_from("!BBHHH", data, ihl)
            if kind == 0 and rid == ident and rseq == seq:
                if seq > 0:
                    rtts.append(received - sent)
                break
        time.sleep(a["interval_ns"] / 1e9)
    write_json(a["result"], {"rtts_ns": rtts})


# rtnetlink constants (include/uapi/linux/rtnetlink.h, netlink.h, pkt_sched.h, gen_stats.h).
_NLMSG = struct.Struct("=IHHII")
_TCMSG = struct.Struct("=BBHiIII")
_RTATTR = struct.Struct("=HH")
RTM_NEWQDISC, RTM_GETQDISC = 36, 38
NLMSG_ERROR = 2
NLM_F_REQUEST = 1
# Without NLM_F_ECHO some kernels send the answer of a single-qdisc GET only to the TC
# multicast group, not back to the asking socket.
NLM_F_ECHO = 8
TCA_STATS2 = 7
TCA_STATS_BASIC, TCA_STATS_QUEUE = 1, 3
TC_H_ROOT = 0xFFFFFFFF
# tc writes handles in hexadecimal: "1:" is 0x1 << 16, "10:" is 0x10 << 16.
HTB_HANDLE, HTB_CLASS, PFIFO_HANDLE = 0x00010000, 0x00010001, 0x00100000
# Which qdisc of a port to read: its htb root (what the port sent) or the pfifo (its queue).
QDISC_ROOT = (TC_H_ROOT, HTB_HANDLE, "1:")
QDISC_FIFO = (HTB_CLASS, PFIFO_HANDLE, "10:")


class NetlinkQdiscReader:
    """Reads a qdisc's statistics with one RTM_GETQDISC request over rtnetlink."""

    method = "netlink (RTM_GETQDISC on an AF_NETLINK socket, standard library)"

    def __init__(self):
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
        self.sock.bind((0, 0))
        self.sock.settimeout(1.0)
        self.seq = 0

    def read(self, device: str, ifindex: int, which: tuple) -> dict:
        """Return bytes, packets, backlog (bytes), qlen and drops of one qdisc."""
        parent, handle, _ = which
        self.seq += 1
        body = _TCMSG.pack(socket.AF_UNSPEC, 0, 0, ifindex, handle, parent, 0)
        self.sock.send(_NLMSG.pack(_NLMSG.size + len(body), RTM_GETQDISC,
                                   NLM_F_REQUEST | NLM_F_ECHO, self.seq, 0) + body)
        while True:
            data = self.sock.recv(65536)
            offset = 0
            while offset + _NLMSG.size <= len(data):
                length, kind, _, seq, _ = _NLMSG.unpack_from(data, offset)
                if length < _NLMSG.size:
                    break
                if seq == self.seq:
                    if kind == NLMSG_ERROR:
                        code = struct.unpack_from("=i", data, offset + _NLMSG.size)[0]
                        raise OSError(-code, f"RTM_GETQDISC on {device}: {os.strerror(-code)}")
                    if kind == RTM_NEWQDISC:
                        return self._stats(data, offset + _NLMSG.size + _TCMSG.size,
                                           offset + length)
                offset += (length + 3) & ~3

    @staticmethod
    def _stats(data: bytes, start: int, end: int) -> dict:
        """Read TCA_STATS2's basic and queue statistics from a qdisc message."""
        stats = {}
        for kind, payload_start, payload_end in _attributes(data, start, end):
            if kind != TCA_STATS2:
                continue
            for inner, p_start, _ in _attributes(data, payload_start, payload_end):
                if inner == TCA_STATS_BASIC:
                    stats["bytes"], stats["packets"] = struct.unpack_from("=QI", data, p_start)
                elif inner == TCA_STATS_QUEUE:
                    qlen, backlog, drops, _, _ = struct.unpack_from("=5I", data, p_start)
                    stats.update(qlen=qlen, backlog=backlog, drops=drops)
        if "backlog" not in stats:
            raise OSError("qdisc message without queue statistics")
        return stats


def _attributes(data: bytes, start: int, end: int):
    """Iterate over netlink attributes: (type, payload start, payload end)."""
    offset = start
    while offset + _RTATTR.size <= end:
        length, kind = _RTATTR.unpack_from(data, offset)
        if length < _RTATTR.size:
            return
        yield kind & 0x3FFF, offset + _RTATTR.size, offset + length
        offset += (length + 3) & ~3


class TcQdiscReader:
    """Reads a qdisc's statistics by running ``tc -s -j qdisc show`` (much slower)."""

    method = "tc -s -j qdisc show"

    def read(self, device: str, ifindex: int, which: tuple) -> dict:
        """Return bytes, packets, backlog (bytes), qlen and drops of one qdisc."""
        data = json.loads(run_command(["tc", "-s", "-j", "qdisc", "show", "dev", device]))
        for qdisc in data:
            if qdisc.get("handle") == which[2]:
                return {key: qdisc.get(key, 0)
                        for key in ("bytes", "packets", "backlog", "qlen", "drops")}
        raise OSError(f"no qdisc {which[2]} on {device}")


def worker_sample(a: dict) -> None:
    """Watch the ports of one namespace: read every port's counters (htb root: wire bytes,
    packets, drops) at the start of the measurement window and at the end of the run, and
    sample the queue (pfifo backlog and drops) of the chosen ports every interval."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(True))
    # Real-time priority keeps the samples on time when every worker wakes at once (the
    # end of the run); a sampler sleeps between samples, so it takes little CPU.
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(20))
        priority = "SCHED_FIFO 20"
    except OSError as error:
        priority = f"normal (SCHED_FIFO refused: {error})"
    counted = [(label, dev, socket.if_nametoindex(dev)) for label, dev in a["counted"]]
    sampled = [(label, dev, socket.if_nametoindex(dev)) for label, dev in a["sampled"]]
    fallback = None
    try:
        reader = NetlinkQdiscReader()
        for _, dev, ifindex in counted:
            reader.read(dev, ifindex, QDISC_ROOT)
            reader.read(dev, ifindex, QDISC_FIFO)
    except OSError as error:
        reader, fallback = TcQdiscReader(), f"netlink failed ({error})"
    t0, every = a["t0"], a["every_ns"]
    end = t0 + a["end_ns"]

    def read_counters() -> dict:
        taken = mono_ns()
        values = {label: reader.read(dev, ifindex, QDISC_ROOT)
                  for label, dev, ifindex in counted}
        return {"read_ns": taken - t0, "ports": values}

    # Without a warm-up the first reading is taken just before time zero, when no flow has
    # started yet.
    window_at = t0 + a["warmup_ns"] if a["warmup_ns"] else t0 - 2_000_000
    window = None
    rows = []
    k = 1
    while not stop:
        target = t0 + k * every if sampled else end + 1
        if window is None and window_at <= min(target, end):
            sleep_until(window_at)
            window = read_counters()
            continue
        if target > end:
            break
        sleep_until(target)
        if stop:
            break
        taken = mono_ns()
        for label, dev, ifindex in sampled:
            q = reader.read(dev, ifindex, QDISC_FIFO)
            rows.append(f"{taken - t0},{label},{q['backlog']},{q['qlen']},{q['drops']}\n")
        # A sample taken late by more than an interval skips the ticks it missed instead of
        # catching up in a burst.
        k = max(k + 1, (mono_ns() - t0) // every + 1)
    if not stop:
        sleep_until(end)
    final = read_counters()
    # Back to the lowest normal priority, and out of the way for a moment, before writing
    # and exiting: the receivers and senders that wake at the end of the run come first.
    try:
        os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
        os.nice(19)
    except OSError:
        pass
    time.sleep(0.2)
    if window is None:
        window = final
    with open(a["out"], "w") as handle:
        handle.writelines(rows)
    write_json(a["result"], {"method": reader.method, "fallback_reason": fallback,
                             "priority": priority, "window": window, "end": final})


def worker_spacing(a: dict) -> None:
    """Record when full-sized TCP frames reach a host (the kernel's receive timestamp,
    SO_TIMESTAMPNS, taken as the veth hands the frame over, so the departure time from
    the port before it) for a while from a given time: the spacing of a backlogged port's
    departures shows its shaper's timing noise (see `shaper_noise`)."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    sock.bind((a["device"], 0))
    begin, end = a["t0"] + a["from_ns"], a["t0"] + a["from_ns"] + a["for_ns"]
    time.sleep(max(0.0, (begin - mono_ns()) / 1e9))
    sock.setblocking(False)
    while True:  # what arrived before the window
        try:
            sock.recv(64)
        except BlockingIOError:
            break
    frames = []
    while mono_ns() < end:
        ready, _, _ = select.select([sock], [], [], 0.05)
        if not ready:
            continue
        while True:
            try:
                data, ancillary, _, address = sock.recvmsg(64, 64)
            except BlockingIOError:
                break
            # Incoming IPv4 TCP frames of at least 1,000 B (data, not ACKs).
            if address[2] != 0 or len(data) < 34 or data[23] != 6:
                continue
            length = struct.unpack_from("!H", data, 16)[0]
            if length < 1000:
                continue
            for level, kind, value in ancillary:
                if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                    seconds, nanos = struct.unpack("=qq", value[:16])
                    frames.append((seconds * 1_000_000_000 + nanos, length))
    write_json(a["result"], {"frames": frames})


WORKERS = {"recv": worker_receive, "send": worker_send, "ping": worker_ping,
           "sample": worker_sample, "spacing": worker_spacing}


# ---------------------------------------------------------------------------------------
# One run: build, measure, collect.
# ---------------------------------------------------------------------------------------


def nearest_rank(sorted_values: list[float], percent: float) -> float | None:
    """The nearest-rank percentile of sorted values (as dcsim computes its statistics)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(percent / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def queue_statistics(values: list[float]) -> dict:
    """Mean, percentiles (1, 50, 99) and maximum of queue samples."""
    ordered = sorted(values)
    return {
        "samples": len(ordered),
        "mean": statistics.fmean(ordered) if ordered else None,
        "p1": nearest_rank(ordered, 1),
        "p50": nearest_rank(ordered, 50),
        "p99": nearest_rank(ordered, 99),
        "max": ordered[-1] if ordered else None,
    }


def fct_statistics(values_us: list[float]) -> dict:
    """dcsim's FCT summary: count, mean, p50, p90, p99, p999, max (nulls when empty)."""
    ordered = sorted(values_us)
    stats = {"count": len(ordered), "mean": statistics.fmean(ordered) if ordered else None}
    for name, percent in (("p50", 50), ("p90", 90), ("p99", 99), ("p999", 99.9)):
        stats[name] = nearest_rank(ordered, percent)
    stats["max"] = ordered[-1] if ordered else None
    return stats


def worker_errors(lab: Lab) -> str:
    """What the workers wrote to their error output, for an error message."""
    text = "".join(p.read_text() for p in sorted(lab.scratch.glob("*.err"))).strip()
    return f":\n{text}" if text else ""


def wait_ready(process: subprocess.Popen, deadline_ns: int, what: str, lab: Lab) -> None:
    """Wait for a receiver to print that it listens."""
    while mono_ns() < deadline_ns:
        ready, _, _ = select.select([process.stdout], [], [], 0.1)
        if ready:
            if process.stdout.readline().strip() == "ready":
                return
            break
        if process.poll() is not None:
            break
    raise RuntimeError(f"{what} did not start listening" + worker_errors(lab))


def read_result(path: Path, what: str, lab: Lab) -> dict:
    """Read a worker's result file, or fail naming the worker and its error output."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        raise RuntimeError(f"{what} left no result" + worker_errors(lab)) from None


def run_twin(plan: Plan, offloads: bool, facts: dict, probe: dict, log) -> tuple[dict, dict]:
    """Build the network, run the flows, clean up, and return the output files (name to
    text) and the summary."""
    lab = Lab(plan, offloads)
    wall_start = time.time()
    try:
        log(f"building {len(lab.plan.hosts) + len(lab.plan.switches)} namespaces "
            f"({plan.kind}, {len(plan.hosts)} hosts)")
        lab.build()
        src, dst = plan.ping_pair
        ping_path = lab.scratch / "ping.json"
        ping = lab.spawn(f"h{src}", "ping", {"dst_ip": host_ip(dst), "count": 20,
                                             "interval_ns": 10_000_000,
                                             "result": str(ping_path)})
        ping.wait(timeout=30)
        rtts = sorted(read_result(ping_path, "the ping worker", lab)["rtts_ns"])
        if not rtts:
            raise RuntimeError(f"no ping reply from h{dst} to h{src}: the network is not up")
        base_rtt = {
            "pair": f"h{src}->h{dst}", "samples": len(rtts), "min_us": rtts[0] / 1e3,
            "median_us": statistics.median(rtts) / 1e3, "mean_us": statistics.fmean(rtts) / 1e3,
            "max_us": rtts[-1] / 1e3,
            "method": "ICMP echo, 56 B of data, 20 probes 10 ms apart after one warm-up, "
                      "before the flows start; reply timed by the kernel (SO_TIMESTAMPNS)",
        }
        log(f"base RTT h{src}->h{dst}: median {base_rtt['median_us']:.1f} us, "
            f"min {base_rtt['min_us']:.1f} us")

        end_ns = plan.end_ns
        # Time zero leaves room to start every worker (a Python process each) first.
        receivers, senders, samplers = [], [], []
        # As in dcsim, a flow that starts at or after the end of the run never runs: it
        # gets its row in flows.csv, with nothing delivered, and no processes.
        running = [f for f in plan.flows
                   if plan.duration_ns is None or f.start_ns < plan.duration_ns]
        idle = [f for f in plan.flows if f not in running]
        if idle:
            log("warning: " + ", ".join(f"flows[{f.flow_id}]" for f in idle)
                + f" start at or after the end of the run ({plan.duration_ns / 1e9:g} s): "
                "they never run")
        spawn_budget = 200_000_000 + 40_000_000 * (2 * len(running) + 2)
        t0 = mono_ns() + spawn_budget + 300_000_000
        for flow in running:
            path = lab.scratch / f"recv-{flow.flow_id}.json"
            receivers.append((flow, path, lab.spawn(f"h{flow.dst}", "recv", {
                "port": PORT_BASE + flow.flow_id, "size": flow.size, "t0": t0,
                "end_ns": end_ns, "warmup_ns": plan.warmup_ns, "result": str(path),
                "every_ns": plan.sample_ns if flow.flow_id in plan.series_flows else None},
                capture=True)))
        for flow, _, process in receivers:
            wait_ready(process, mono_ns() + 10_000_000_000,
                       f"the receiver of flow {flow.flow_id}", lab)
        for flow in running:
            path = lab.scratch / f"send-{flow.flow_id}.json"
            stop = min(flow.stop_ns, end_ns) if flow.stop_ns is not None else end_ns
            senders.append((flow, path, lab.spawn(f"h{flow.src}", "send", {
                "dst_ip": host_ip(flow.dst), "port": PORT_BASE + flow.flow_id,
                "size": flow.size, "cc": flow.cc, "t0": t0, "start_ns": flow.start_ns,
                "stop_ns": stop, "end_ns": end_ns, "result": str(path),
                "write": plan.app_write,
                "every_ns": plan.sample_ns if plan.series_state
                and flow.flow_id in plan.series_flows else None})))
        # One watcher per namespace that holds ports: it reads their counters at the start
        # of the window and at the end, and samples the queues of the chosen ports.
        by_node: dict[str, dict] = {}
        for port in plan.ports:
            entry = by_node.setdefault(port.namespace_node, {"counted": [], "sampled": []})
            entry["counted"].append([port.label, port.device])
            if port.label in plan.sampled_ports:
                entry["sampled"].append([port.label, port.device])
        for node, entry in by_node.items():
            out = lab.scratch / f"samples-{node}.csv"
            meta = lab.scratch / f"sampler-{node}.json"
            samplers.append((out, meta, lab.spawn(node, "sample", dict(
                entry, t0=t0, every_ns=plan.sample_ns, warmup_ns=plan.warmup_ns,
                end_ns=end_ns, out=str(out), result=str(meta)))))
        # The bottleneck's departures, timed at the far end, for a while after the window
        # opens (the flows have filled its queue by then, as a rule).
        far = next(p for p in plan.ports if p.node == bottleneck_port(plan).peer
                   and p.peer == bottleneck_port(plan).node)
        spacing_path = lab.scratch / "spacing.json"
        spacing_from = plan.warmup_ns + SPACING_AFTER_NS
        spacing = None
        if spacing_from + SPACING_FOR_NS <= (plan.duration_ns or 0):
            spacing = lab.spawn(far.namespace_node, "spacing", {
                "device": far.device, "t0": t0, "from_ns": spacing_from,
                "for_ns": SPACING_FOR_NS, "result": str(spacing_path)})
        late = mono_ns() - t0
        if late > -5_000_000:
            raise RuntimeError(f"starting the workers took until {late / 1e6:.0f} ms before "
                               "time zero, too late to start in step")
        log(f"running {len(running)} flows for "
            f"{(plan.duration_ns or end_ns) / 1e9:g} s"
            + ("" if plan.duration_ns else " at most (until every flow completes)"))

        if plan.duration_ns is not None:
            run_end_ns = plan.duration_ns
        else:
            # A drained run ends when every receiver has read its flow; the watchers then
            # take their last reading.
            while mono_ns() < t0 + end_ns and any(p.poll() is None for _, _, p in receivers):
                time.sleep(0.01)
            run_end_ns = min(end_ns, mono_ns() - t0)
            for _, _, process in samplers:
                if process.poll() is None:
                    process.send_signal(signal.SIGTERM)
        for group in (receivers, senders, samplers):
            for item in group:
                item[-1].wait(timeout=max(1.0, (t0 + end_ns - mono_ns()) / 1e9 + 10))

        recv = {f.flow_id: read_result(p, f"the receiver of flow {f.flow_id}", lab)
                for f, p, _ in receivers}
        send = {f.flow_id: read_result(p, f"the sender of flow {f.flow_id}", lab)
                for f, p, _ in senders}
        for flow in idle:
            recv[flow.flow_id] = {"delivered": 0, "end_ns": None}
            send[flow.flow_id] = {"start_ns": flow.start_ns, "cc": flow.cc}
        for flow_id, result in send.items():
            if "error" in result:
                raise RuntimeError(f"flow {flow_id}: {result['error']}")
        samples, sampler_meta = [], []
        for out, meta, _ in samplers:
            sampler_meta.append(read_result(meta, "a queue sampler", lab))
            for line in out.read_text().splitlines():
                t, label, backlog, qlen, drops = line.split(",")
                samples.append((int(t), label, int(backlog), int(qlen), int(drops)))
        samples.sort()
        before, after = {}, {}
        for meta in sampler_meta:
            for reading, target in ((meta["window"], before), (meta["end"], after)):
                for label, values in reading["ports"].items():
                    target[label] = dict(values, read_ns=reading["read_ns"])
        files, summary = assemble_outputs(plan, facts, probe, lab.setup, base_rtt, recv, send,
                                         samples, sampler_meta, before, after, run_end_ns,
                                         offloads, wall_start)
        if spacing is not None:
            # A recorder that failed costs the estimate, not the run.
            try:
                spacing.wait(timeout=10)
                frames = read_result(spacing_path, "the spacing recorder", lab)["frames"]
                summary["shaper_noise"] = shaper_noise(frames, bottleneck_port(plan).rate_bps,
                                                       plan.bottleneck, plan.mtu)
            except (RuntimeError, subprocess.TimeoutExpired) as error:
                summary["shaper_noise"] = {"port": plan.bottleneck, "not_measured": str(error)}
            files["summary.json"] = json.dumps(summary, indent=2) + "\n"
    finally:
        # Further signals would interrupt the cleanup itself, so they are ignored until it
        # is done.
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, signal.SIG_IGN)
        signal.setitimer(signal.ITIMER_REAL, 0)
        left = lab.cleanup()
        install_signal_handlers()
        if left:
            raise RuntimeError(f"namespaces left behind after cleanup: {', '.join(left)}")
    return files, summary


# When and for how long the bottleneck's departures are timed (see `shaper_noise`).
SPACING_AFTER_NS = 2_000_000_000
SPACING_FOR_NS = 2_000_000_000


def bottleneck_port(plan: Plan) -> PortPlan:
    return next(p for p in plan.ports if p.label == plan.bottleneck)


def shaper_noise(frames: list, rate_bps: int, label: str, mtu: int) -> dict:
    """How irregularly a backlogged port's shaper releases its packets, from when they
    reach the far end (`worker_spacing`).

    htb releases a packet whole when its bucket holds the tokens, charges them for the
    packet's length plus the 38 bytes of Ethernet framing, and releases the next when the
    bucket has refilled: a backlogged queue's departures are spaced by the earlier
    packet's charge (its wire time at the shaped rate), a super-packet of offloads as one
    frame (measured: gaps less that charge average 0.0 to 2.5 µs behind 2 and 3 CUBIC
    flows with offloads on, where charging each segment's headers or framing leaves 70 to
    174 µs). The timer that releases a packet fires a little late, and the bucket catches
    up with the next, so the lateness does not accumulate: the gap between two departures
    is the charge plus the difference of two latenesses. The statistics are of those
    differences (gap less charge) over the gaps at most two full frames' wire times longer
    than the charge (the queue did not empty between). If each lateness is independent
    and uniform in [0, J], the differences have a standard deviation of J / sqrt(6) and
    consecutive ones a correlation of -0.5; `uniform_equivalent_us` is that J, what
    dcsim's `ports.jitter` models, and `lag1_correlation` says how well the kernel fits
    the model (0 would be a lateness that accumulates).

    `lateness_us` is the distribution itself, as points (probability, µs) of its inverse
    cumulative distribution, for dcsim's `ports.jitter` table: within each backlogged
    stretch a frame's time less the charges of the frames before it is its slot plus its
    lateness, and the lateness is that less the least of it over the 65 frames around it
    (the slot's own time cancels, and the earliest of 65 frames stands for on time, so the
    figures read low by the least lateness among 65: 0.3 µs on U[0, 20 µs] in the
    self-test). Only frames with 32 backlogged frames on either side count."""
    overhead = 38  # Ethernet header, FCS, preamble and gap: frame bytes from IP bytes
    def charge_ns(length: int) -> float:
        return (length + overhead) * 8e9 / rate_bps
    slack = 2 * charge_ns(mtu)
    diffs = []
    for (t_prev, l_prev), (t, _length) in zip(frames, frames[1:]):
        charge = charge_ns(l_prev)
        if t - t_prev <= charge + slack:
            diffs.append((t - t_prev) - charge)
    result = {
        "port": label, "frames": len(frames), "gaps_backlogged": len(diffs),
        "method": "kernel receive timestamps (SO_TIMESTAMPNS) of TCP data frames at "
                  f"the far end, {SPACING_FOR_NS / 1e9:g} s from "
                  f"{SPACING_AFTER_NS / 1e9:g} s into the measurement window",
    }
    if len(diffs) < 100:
        result["not_measured"] = f"{len(diffs)} gaps in a backlogged queue (100 needed)"
    else:
        mean = statistics.fmean(diffs)
        sigma = statistics.pstdev(diffs)
        lag1 = sum((a - mean) * (b - mean) for a, b in zip(diffs, diffs[1:])) / \
            sum((a - mean) ** 2 for a in diffs) if sigma > 0 else None
        ordered = sorted(diffs)
        result.update({
            "gap_less_wire_time_us": {
                f"p{q}": nearest_rank(ordered, q) / 1e3 for q in (1, 10, 25, 50, 75, 90, 99)
            } | {"mean": mean / 1e3, "std": sigma / 1e3},
            "lag1_correlation": lag1,
            "uniform_equivalent_us": sigma * math.sqrt(6) / 1e3,
        })
        late = sorted(latenesses(frames, charge_ns, slack))
        if len(late) >= 1000:
            result["lateness_us"] = [
                [p, round(late[min(len(late) - 1, int(p * len(late)))] / 1e3, 3)]
                for p in LATENESS_POINTS
            ]
    return result


# Where `shaper_noise` reads the lateness's distribution (dcsim interpolates between them).
LATENESS_POINTS = (0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 1)


def latenesses(frames: list, charge_ns, slack: float, half: int = 32) -> list:
    """Each backlogged frame's lateness, ns (see `shaper_noise`)."""
    stretches, current = [], frames[:1]
    for (t_prev, l_prev), frame in zip(frames, frames[1:]):
        if frame[0] - t_prev <= charge_ns(l_prev) + slack:
            current.append(frame)
        else:
            stretches.append(current)
            current = [frame]
    stretches.append(current)
    out = []
    for stretch in stretches:
        slots, charged = [], 0.0
        for t, length in stretch:
            slots.append(t - charged)
            charged += charge_ns(length)
        for k in range(half, len(slots) - half):
            out.append(slots[k] - min(slots[k - half:k + half + 1]))
    return out


def assemble_outputs(plan: Plan, facts: dict, probe: dict, setup: dict, base_rtt: dict,
                     recv: dict, send: dict, samples: list, sampler_meta: list,
                     before: dict, after: dict, run_end_ns: int, offloads: bool,
                     wall_start: float) -> tuple[dict, dict]:
    """Build flows.csv, ports.csv, timeseries.csv, kernel_samples.csv, kernel_tcp_samples.csv
    (when the window is sampled) and summary.json."""
    window_start = plan.warmup_ns
    window_ns = max(1, run_end_ns - window_start)
    end_of_arrivals = plan.duration_ns if plan.duration_ns is not None else \
        max(f.start_ns for f in plan.flows)

    flow_rows, flow_details, fcts, goodputs_long = [], [], [], []
    for flow in plan.flows:
        r, s = recv[flow.flow_id], send[flow.flow_id]
        info = s.get("tcp_info", {})
        start = s["start_ns"]
        end = r["end_ns"]
        lifetime_start = max(start, window_start)
        lifetime_end = min(end if end is not None else run_end_ns, run_end_ns)
        in_window = r["delivered"] - r.get("at_warmup", 0)
        span = max(1, lifetime_end - lifetime_start)
        goodput = in_window * 8 / span if lifetime_end > lifetime_start else 0.0
        measured = start >= plan.warmup_ns and (
            plan.cooldown_ns == 0 or start < end_of_arrivals - plan.cooldown_ns)
        if flow.size is not None and end is not None and measured:
            fcts.append((end - start) / 1e3)
        # Long-lived flows scheduled to run over the whole window count in Jain's index
        # (their real start is a fraction of a millisecond later).
        if flow.size is None and flow.start_ns <= window_start:
            goodputs_long.append(goodput)
        flow_rows.append({
            "flow_id": flow.flow_id, "src": flow.src, "dst": flow.dst, "transport": s["cc"],
            "size_bytes": flow.size, "start_ns": start, "end_ns": end,
            "fct_ns": end - start if end is not None else None, "ideal_fct_ns": None,
            "slowdown": None, "delivered_bytes": r["delivered"], "window_goodput_gbps": goodput,
            "retransmits": info.get("total_retrans"), "measured": measured,
            "timeouts": info.get("total_rto"),
        })
        mss = info.get("snd_mss") or 0
        flow_details.append({
            "flow_id": flow.flow_id, "scheduled_start_ns": flow.start_ns,
            "start_ns": start, "connected_ns": s.get("connected_ns"), "end_ns": end,
            "sender_saw_close_ns": s.get("closed_ns"), "delivered_bytes": r["delivered"],
            "goodput_mbps": goodput * 1e3, "cc": s["cc"],
            "retransmits": info.get("total_retrans"), "timeouts": info.get("total_rto"),
            "rto_recoveries": info.get("total_rto_recoveries"),
            "bytes_retrans": info.get("bytes_retrans"),
            "cwnd_pkts": info.get("snd_cwnd"), "cwnd_bytes": (info.get("snd_cwnd") or 0) * mss,
            "ssthresh_pkts": info.get("snd_ssthresh"), "mss_bytes": mss,
            "srtt_us": info.get("rtt"), "min_rtt_us": info.get("min_rtt"),
            "reordering": info.get("reordering"), "dsack_dups": info.get("dsack_dups"),
            "data_segs_out": info.get("data_segs_out"), "tcp_info": info,
        })

    samples_by_port: dict[str, list] = {}
    for t, label, backlog, qlen, drops in samples:
        samples_by_port.setdefault(label, []).append((t, backlog, qlen, drops))
    queue = {}
    for label, rows in samples_by_port.items():
        inside = [row for row in rows if row[0] >= window_start]
        queue[label] = {
            "bytes": queue_statistics([row[1] for row in inside]),
            "packets": queue_statistics([row[2] for row in inside]),
        }

    port_rows = []
    totals_dropped = 0
    read_lag_ns = 0
    for port in plan.ports:
        a, b = before[port.label], after[port.label]
        tx_bytes = b["bytes"] - a["bytes"]
        # The counters cover the window from its start to the moment they were read, a
        # fraction of a millisecond after the end; utilization divides by that span.
        counted_ns = max(1, b["read_ns"] - max(window_start, a["read_ns"]))
        read_lag_ns = max(read_lag_ns, b["read_ns"] - run_end_ns)
        drops = b["drops"] - a["drops"]
        totals_dropped += drops
        stats = queue.get(port.label, {}).get("bytes")
        port_rows.append({
            "port": port.number, "node": port.node, "peer": port.peer, "tier": port.tier,
            "peer_tier": port.peer_tier, "rate_gbps": port.rate_bps / 1e9,
            "tx_pkts": b["packets"] - a["packets"], "tx_bytes": tx_bytes,
            "tx_data_bytes": None,
            "utilization": tx_bytes * 8 / (port.rate_bps * counted_ns / 1e9),
            "max_queue_bytes": stats["max"] if stats else None,
            "max_data_queue_bytes": None, "max_credit_queue_bytes": None,
            "avg_queue_bytes": stats["mean"] if stats else None, "drops": drops,
            "data_drops": None, "control_drops": None, "credit_drops": None,
            # A pfifo neither drops early nor marks, so these are zero by construction.
            "aqm_drops": 0, "ecn_marks": 0,
        })

    series_rows = [{"time_ns": t, "kind": "queue_bytes", "id": label, "value": float(backlog)}
                   for t, label, backlog, _, _ in samples]
    state_rows = []
    for flow in plan.flows:
        read_by = recv[flow.flow_id].get("read_by", [])
        # Goodput over each interval: the bytes the application read, over the time between
        # two readings (a tick is taken when the receiver wakes, a little late at times).
        for (t_a, got_a), (t_b, got_b) in zip(read_by, read_by[1:]):
            series_rows.append({"time_ns": t_b, "kind": "throughput_gbps", "id": flow.flow_id,
                                "value": (got_b - got_a) * 8 / max(1, t_b - t_a)})
        for row in send[flow.flow_id].get("states", []):
            state = dict(zip(("time_ns",) + STATE_FIELDS, row))
            series_rows.append({"time_ns": state["time_ns"], "kind": "cwnd_bytes",
                                "id": flow.flow_id,
                                "value": float((state["snd_cwnd"] or 0)
                                               * (state["snd_mss"] or 0))})
            state_rows.append(dict(zip(("time_ns", "flow_id") + STATE_COLUMNS,
                                       [row[0], flow.flow_id] + row[1:])))
    series_rows.sort(key=lambda r: r["time_ns"])
    state_rows.sort(key=lambda r: r["time_ns"])
    intervals = {}
    for label, rows in samples_by_port.items():
        gaps = sorted(b[0] - a[0] for a, b in zip(rows, rows[1:]))
        intervals[label] = {
            "samples": len(rows),
            "mean_interval_ns": statistics.fmean(gaps) if gaps else None,
            "p99_interval_ns": nearest_rank(gaps, 99),
            "max_interval_ns": gaps[-1] if gaps else None,
        }

    bottleneck_row = next(r for r in port_rows if f"{r['node']}->{r['peer']}" == plan.bottleneck)
    minutes = window_ns / 60e9
    unemulated = []
    if any(plan.link_delays_ns):
        if probe.get("sch_netem") == "present":
            unemulated.append(
                "link delays: not emulated (this kernel has sch_netem, but the twin builds no "
                "delay stage); the base RTT is measured instead")
        else:
            unemulated.append(
                "link delays: not emulated, " + describe_missing("sch_netem", facts, probe)
                + "; the base RTT is measured instead")
    unemulated += plan.unemulated
    if offloads:
        unemulated.append("offloads left on (--offloads): TSO/GSO/GRO batches count as one "
                          "packet in the queues")
    timeouts = sum(r["timeouts"] or 0 for r in flow_rows)
    retransmits = sum(r["retransmits"] or 0 for r in flow_rows)
    long_count = len(goodputs_long)
    jain = (sum(goodputs_long) ** 2 / (long_count * sum(g * g for g in goodputs_long))
            if long_count and any(goodputs_long) else None)
    summary = {
        "schema_version": DCSIM_SCHEMA_VERSION,
        "source": "linux-kernel",
        "kernel": {"release": facts["release"], "version": facts["version"],
                   "machine": facts["machine"]},
        "scenario": plan.name,
        "duration_ns": plan.duration_ns,
        "sim_time_ns": run_end_ns,
        "window_start_ns": window_start,
        "wall_seconds": time.time() - wall_start,
        "packets_dropped": totals_dropped,
        "bottleneck": {
            "port": plan.bottleneck, "drops": bottleneck_row["drops"],
            "drops_per_minute": bottleneck_row["drops"] / minutes,
            "tx_pkts": bottleneck_row["tx_pkts"], "tx_bytes": bottleneck_row["tx_bytes"],
            "utilization": bottleneck_row["utilization"],
            "buffer_pkts": next(p.buffer_pkts for p in plan.ports if p.label == plan.bottleneck),
        },
        "by_transport": {"tcp": {"timeouts": timeouts, "retransmits": retransmits}},
        "flows_total": len(flow_rows),
        "flows_completed": sum(1 for r in flow_rows if r["end_ns"] is not None),
        "fct_us": fct_statistics(fcts),
        "max_queue_bytes": max((q["bytes"]["max"] or 0 for q in queue.values()), default=None),
        "long_lived_flows": long_count,
        "jain_fairness": jain,
        "queue": queue,
        "queue_units": "bytes are wire bytes (IP packet + 38 B of framing, 1538 B per full "
                       "frame); statistics over the samples inside the measurement window",
        "base_rtt": base_rtt,
        "flows": flow_details,
        "sampler": {
            "method": sampler_meta[0]["method"] if sampler_meta else None,
            "fallback_reason": next((m["fallback_reason"] for m in sampler_meta
                                     if m.get("fallback_reason")), None),
            "requested_interval_ns": plan.sample_ns, "ports": intervals,
            "priority": sampler_meta[0].get("priority") if sampler_meta else None,
        },
        "unemulated": unemulated,
        "emulated": plan.emulated,
        "not_measured": {
            "flows.csv": FLOW_COLUMNS_NOT_MEASURED,
            "ports.csv": PORT_COLUMNS_NOT_MEASURED
            + ["max_queue_bytes and avg_queue_bytes of ports not sampled (sampled ports: "
               "from the samples, not exact)"],
            "timeseries.csv": plan.not_measured_series,
        },
        "kernel_features": {
            "congestion_controls": facts["congestion_controls"],
            "cubic_parameters": facts["cubic_parameters"],
            "modules": facts["modules"], "config": facts["config"], "qdiscs": probe,
        },
        "setup": dict(setup, buffers=plan.buffers, offloads_flag=offloads,
                      port_counters_read_after_end_ns=read_lag_ns),
        "resolved_scenario": plan.resolved_text,
    }
    files = {
        "flows.csv": to_csv(FLOW_COLUMNS, flow_rows),
        "ports.csv": to_csv(PORT_COLUMNS, port_rows),
        "timeseries.csv": to_csv(["time_ns", "kind", "id", "value"], series_rows),
        "kernel_samples.csv": to_csv(
            ["time_ns", "port", "backlog_bytes", "backlog_pkts", "drops"],
            [{"time_ns": t, "port": label, "backlog_bytes": b, "backlog_pkts": q, "drops": d}
             for t, label, b, q, d in samples]),
        "summary.json": json.dumps(summary, indent=2) + "\n",
    }
    if plan.series_state:
        files["kernel_tcp_samples.csv"] = to_csv(["time_ns", "flow_id", *STATE_COLUMNS],
                                                 state_rows)
    return files, summary


def to_csv(columns: list[str], rows: list[dict]) -> str:
    """Write rows as CSV: empty cells for None, ``true``/``false`` for booleans."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        cells = []
        for column in columns:
            value = row.get(column)
            if value is None:
                cells.append("")
            elif isinstance(value, bool):
                cells.append("true" if value else "false")
            else:
                cells.append(value)
        writer.writerow(cells)
    return out.getvalue()


def commit_folder(out_dir: Path, files: dict[str, str]) -> None:
    """Write the files into a temporary folder beside ``out_dir`` and rename it into
    place, so that ``out_dir`` holds either the old run or the new one, whole."""
    out_dir = out_dir.resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    if out_dir.exists() and not out_dir.is_dir():
        raise RuntimeError(f"{out_dir} exists and is not a folder")
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{os.getpid()}"
    old = out_dir.parent / f".{out_dir.name}.old-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        for name, text in files.items():
            with open(tmp / name, "w") as handle:
                handle.write(text)
                handle.flush()
                os.fsync(handle.fileno())
        if out_dir.exists():
            os.rename(out_dir, old)
        os.rename(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old.exists() and not out_dir.exists():
            os.rename(old, out_dir)
        raise
    shutil.rmtree(old, ignore_errors=True)


# ---------------------------------------------------------------------------------------
# Signals, the watchdog, the command line and the self-test.
# ---------------------------------------------------------------------------------------


def _on_signal(number, _frame):
    """Turn a stop signal into an exception, so that the cleanup in ``finally`` runs."""
    raise Interrupted(signal.Signals(number).name)


def _on_alarm(_number, _frame):
    """The watchdog: the run has overstayed its budget."""
    raise WatchdogExpired()


def install_signal_handlers() -> None:
    """Route Ctrl-C, SIGTERM, SIGHUP and the watchdog's alarm to exceptions."""
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, _on_signal)
    signal.signal(signal.SIGALRM, _on_alarm)


def start_watchdog(plan: Plan) -> float:
    """Arm the watchdog so that the process, cleanup included, ends within the run's
    length plus WATCHDOG_SLACK_S; return the budget in seconds."""
    budget = plan.end_ns / 1e9 + WATCHDOG_SLACK_S - CLEANUP_RESERVE_S
    signal.setitimer(signal.ITIMER_REAL, budget)
    return budget


def prepare(scenario: Path, sets: list[str], duration: float | None, dcsim: Path,
            facts: dict) -> Plan:
    """Resolve a scenario and plan it, with --duration applied through dcsim."""
    sets = list(sets)
    if duration is not None:
        if duration <= 0:
            raise Refused("--duration must be greater than zero")
        sets.append(f'sim.duration="{seconds_text(duration)}"')
    scn, text = resolve_scenario(scenario, sets, dcsim)
    return build_plan(scn, text, facts)


def check_tools(offloads: bool) -> None:
    """Fail early, with the install command, when a needed system tool is missing."""
    needed = {"ip": "iproute2", "tc": "iproute2", "sysctl": "procps"}
    if not offloads:
        needed["ethtool"] = "ethtool"
    missing = [f"{tool} (apt-get install {package})" for tool, package in needed.items()
               if shutil.which(tool) is None]
    if missing:
        raise Skipped("missing " + ", ".join(missing))


SELFTEST_SCENARIO = """\
schema_version = 1
name = "kernel-twin-selftest"
description = "three CUBIC flows into one 100 Mb/s drop-tail port of 100 packets"
[sim]
duration = "2s"
[topology]
kind = "star"
hosts = 4
host_link = { rate = "100Mbps", delay = "5us" }
[queue]
kind = "droptail"
buffer = "100pkts"
[nic]
kind = "droptail"
buffer = "1000pkts"
[transport]
kind = "tcp"
profile = "linux"
cc = "cubic"
[output.timeseries]
every = "1ms"
flows = [0]
cwnd = true
[[flows]]
src = 1
dst = 0
[[flows]]
src = 2
dst = 0
[[flows]]
src = 3
dst = 0
"""


def check_shaper_noise() -> str | None:
    """`shaper_noise` on a synthetic queue at 100 Mb/s: 20,000 full frames, one stretch
    broken by an idle gap, then 2,000 super-packets of 1 to 45 segments, each released at
    its slot (the earlier packet's charge after the one before) late by U[0, 20 µs]
    (seeded), the lateness not slowing the link. Returns what is wrong, if anything."""
    import random
    rng = random.Random(1)
    def charge_ns(length: int) -> float:
        return (length + 38) * 8e9 / 100e6
    frames, slot = [], 0.0
    lengths = [1500] * 20_000 + [52 + 1448 * rng.randint(1, 45) for _ in range(2_000)]
    for k, length in enumerate(lengths):
        if k in (10_000, 20_000):
            slot += 10**9  # idle: the queue emptied
        frames.append((round(slot + rng.uniform(0, 20_000)), length))
        slot += charge_ns(length)
    r = shaper_noise(frames, 100_000_000, "test", 1500)
    j, lag1 = r.get("uniform_equivalent_us"), r.get("lag1_correlation")
    if r["gaps_backlogged"] != 21_997 or j is None or abs(j - 20) > 1 or abs(lag1 + 0.5) > 0.03:
        return f"shaper_noise read U[0, 20 us] as J = {j}, lag-1 {lag1}, {r['gaps_backlogged']} gaps"
    late = dict((p, v) for p, v in r.get("lateness_us", []))
    if abs(late.get(0.5, 0) - 10) > 1 or abs(late.get(0.99, 0) - 19.8) > 1 or late.get(1, 99) > 20.1:
        return f"shaper_noise read U[0, 20 us] as the lateness {r.get('lateness_us')}"
    return None


def selftest(dcsim: Path) -> int:
    """Run the 2-second self-test and print one line: ok, skipped or FAILED."""
    started = time.time()
    wrong = check_shaper_noise()
    if wrong:
        print(f"kernel twin: FAILED ({wrong})")
        return EXIT_ERROR
    facts = kernel_facts()
    work = Path(tempfile.mkdtemp(prefix="kernel_twin-selftest-"))
    try:
        try:
            check_tools(offloads=False)
            clear_stale_namespaces()
            probe = probe_kernel(facts)
        except Skipped as reason:
            print(f"kernel twin: skipped ({reason})")
            return EXIT_OK
        scenario = work / "selftest.toml"
        scenario.write_text(SELFTEST_SCENARIO)
        if dcsim.exists():
            plan = prepare(scenario, [], None, dcsim, facts)
        else:
            # Without the dcsim binary the self-test's scenario, which spells out every key
            # the twin reads, is planned as written.
            plan = build_plan(tomllib.loads(SELFTEST_SCENARIO), SELFTEST_SCENARIO, facts)
        start_watchdog(plan)
        files, summary = run_twin(plan, False, facts, probe, lambda _m: None)
        out = work / "out"
        commit_folder(out, files)
        problems = []
        for name in ("flows.csv", "ports.csv", "timeseries.csv", "summary.json"):
            if not (out / name).is_file() or (out / name).stat().st_size == 0:
                problems.append(f"{name} missing")
        delivered = sum(f["delivered_bytes"] for f in summary["flows"])
        mbps = delivered * 8 / (plan.duration_ns / 1e9) / 1e6
        if mbps <= 80:
            problems.append(f"only {mbps:.1f} Mb/s delivered (want > 80)")
        left = [n for n in list_namespaces() if n.startswith(f"{NS_PREFIX}{os.getpid()}-")]
        if left:
            problems.append(f"namespaces left: {', '.join(left)}")
        interval = summary["sampler"]["ports"].get(plan.bottleneck, {}).get("mean_interval_ns")
        if not interval:
            problems.append("no queue samples")
        # Flow 0's goodput and window, every millisecond of its 2 s.
        kinds = [line.split(",")[1] for line in files["timeseries.csv"].splitlines()[1:]]
        for kind in ("throughput_gbps", "cwnd_bytes"):
            if kinds.count(kind) < 1000:
                problems.append(f"{kinds.count(kind)} {kind} samples of flow 0 (want 1,000)")
        if problems:
            print(f"kernel twin: FAILED ({'; '.join(problems)})")
            return EXIT_ERROR
        print(
            f"kernel twin: ok ({len(plan.flows)} {plan.flows[0].cc} flows, {mbps:.1f} Mb/s "
            f"delivered into {plan.bottleneck} in {plan.duration_ns / 1e9:g} s, "
            f"{summary['packets_dropped']} drops, queue sampled "
            f"every {interval / 1e6:.3f} ms over {summary['sampler']['method'].split(' ')[0]}, "
            f"base RTT {summary['base_rtt']['median_us']:.0f} us, no namespace left, "
            f"{time.time() - started:.1f} s)"
        )
        return EXIT_OK
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str]) -> int:
    """Parse the command line and run the twin, the self-test or a worker."""
    if argv[:1] == ["--worker"]:
        WORKERS[argv[1]](json.loads(argv[2]))
        return EXIT_OK
    parser = argparse.ArgumentParser(
        description="Run a dcsim star or dumbbell scenario on the Linux kernel in network "
                    "namespaces and write dcsim's output files.")
    parser.add_argument("scenario", nargs="?", type=Path, help="scenario file (TOML)")
    parser.add_argument("--out", type=Path, help="results folder (replaced whole)")
    parser.add_argument("--set", action="append", default=[], metavar="K=V",
                        help="override a scenario value, passed to `dcsim show`")
    parser.add_argument("--duration", type=float, metavar="S",
                        help="run length in seconds (overrides sim.duration)")
    parser.add_argument("--offloads", action="store_true",
                        help="leave TSO/GSO/GRO as the kernel sets them")
    parser.add_argument("--dcsim", type=Path,
                        default=Path(os.environ.get("DCSIM", default_dcsim())),
                        help="dcsim binary (default: target/ci/dcsim, or $DCSIM)")
    parser.add_argument("--selftest", action="store_true",
                        help="2-second check that the twin works on this machine")
    parser.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    args = parser.parse_args(argv)
    try:
        code = in_user_namespace(argv)
    except Skipped as reason:
        if args.selftest:
            print(f"kernel twin: skipped ({reason})")
            return EXIT_OK
        print(f"kernel twin: cannot run here: {reason}", file=sys.stderr)
        return EXIT_ERROR
    if code is not None:
        return code
    try:
        private_netns_folder()
    except (OSError, subprocess.CalledProcessError) as error:
        message = f"cannot give the user namespace its own /run/netns ({error})"
        print(f"kernel twin: skipped ({message})" if args.selftest
              else f"kernel twin: cannot run here: {message}",
              file=sys.stdout if args.selftest else sys.stderr)
        return EXIT_OK if args.selftest else EXIT_ERROR
    install_signal_handlers()
    if args.selftest:
        try:
            return selftest(args.dcsim)
        except (Interrupted, WatchdogExpired, Refused, RuntimeError, OSError) as error:
            print(f"kernel twin: FAILED ({type(error).__name__}: {error})")
            return EXIT_ERROR
    if args.scenario is None or args.out is None:
        parser.error("give a SCENARIO and --out DIR (or --selftest)")

    def log(message: str) -> None:
        if not args.quiet:
            print(f"kernel twin: {message}", file=sys.stderr)

    try:
        facts = kernel_facts()
        plan = prepare(args.scenario, args.set, args.duration, args.dcsim, facts)
        offloads = args.offloads or plan.gso_bytes is not None
        check_tools(offloads)
        start_watchdog(plan)
        removed = clear_stale_namespaces()
        if removed:
            log(f"removed namespaces of an earlier run: {', '.join(removed)}")
        probe = probe_kernel(facts)
        files, summary = run_twin(plan, offloads, facts, probe, log)
        commit_folder(args.out, files)
        b = summary["bottleneck"]
        log(f"{b['port']}: {b['drops']} drops, utilization {b['utilization']:.3f}; "
            f"{summary['by_transport']['tcp']['timeouts']} timeouts, "
            f"{summary['by_transport']['tcp']['retransmits']} retransmits; results in {args.out}")
        return EXIT_OK
    except Refused as error:
        print(f"kernel twin: refused: {error}", file=sys.stderr)
        return EXIT_REFUSED
    except Skipped as error:
        print(f"kernel twin: cannot run here: {error}", file=sys.stderr)
        return EXIT_ERROR
    except Interrupted as error:
        print(f"kernel twin: interrupted by {error}; cleaned up", file=sys.stderr)
        return EXIT_INTERRUPTED
    except WatchdogExpired:
        print("kernel twin: the watchdog stopped the run (it took more than its duration + "
              f"{WATCHDOG_SLACK_S} s); cleaned up", file=sys.stderr)
        return EXIT_ERROR
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        print(f"kernel twin: error: {error}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
