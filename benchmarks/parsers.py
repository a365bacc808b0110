"""``python -m benchmarks parsers [--megabytes N] [--kinds a,b] [--json]``: every parser on 10 MB.

Why: a host can print anything, and the collector parses it on its event loop; a parser
whose time grows faster than its input (a backtracking pattern, a quadratic loop) lets
one host stall the fleet. Each parser kind (every one of ``fleet parse --list`` and the
switch CLIs' fixed-width tables) reads inputs of about 10 MB shaped as:

- ``repeated``: its largest real capture under tests/fixtures, repeated;
- ``one_line``: that capture with its line breaks made spaces, one giant line;
- ``blank_run``: one line of ``:``, 10 MB of spaces and ``:`` (the nvidia-smi header case);
- ``digit_run``: one line of 10 MB of digits;
- ``nesting``: ``{"a": [`` repeated (deep JSON, and brackets for the text parsers);
- ``binary``: random bytes decoded with ``errors="replace"``, as the collector decodes.

A refusal (``ParseError``) counts as handled; its time counts as well. Results:
``<kind>_s``, the worst CPU seconds over the shapes (target: at most 2 s each),
``<kind>_wall_s`` the wall-clock seconds of that input, and ``<kind>_worst`` its
shape. The target is held to CPU time because on a shared machine wall time also
counts everyone else's work; both are noisy there.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.report import Measured, at_most
from fleet.collectors.parsers.base import ParseError
from fleet.collectors.parsers.registry import KINDS, detect
from fleet.collectors.parsers.switch_tables import parse_switch_table

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
TARGET_S = 2.0

# The switch tables have no capture under tests/fixtures: the layout `nv show interface` prints.
SWITCH_TABLE = (
    "Interface  State  Speed  MTU    Type      Remote Host  Remote Port  Summary\n"
    "---------  -----  -----  -----  --------  -----------  -----------  --------------------------\n"
    "eth0       up     1G     1500   eth                                 IP Address: 127.42.0.33/24\n"
    "swp1       up     400G   9216   swp       gpu001       enp12s0np0\n"
    "swp17      down   400G   9216   swp\n"
)


# NCCL's log lines (kind nccl-log) have no capture of their own: they come interleaved in this one, which
# detection calls nccl-tests output.
NCCL_LOG = FIXTURES / "nccl" / "nccl-tests-issue321-2node-h20-vm-alltoall_perf-roce-bond-rdma-plugin.txt"
# Kinds no signature tells from a capture (a bare number, a generic table), or without a capture: their layout.
LAYOUTS = {
    "roce-sysfs": "/sys/class/net/enp12s0np0/ecn/roce_np/enable/3:1\n/sys/class/net/enp12s0np0/mtu:9000\n",
    "cma-roce-mode": "RoCE v2\n",
    "cma-roce-tos": "106\n",
    "sonic-pfc-priority": "\nInterface    Lossless priorities\n-----------  ---------------------\nEthernet0    3\n",
    "sonic-interfaces-status": ("  Interface    Lanes    Speed    MTU    Alias    Oper    Admin\n"
                                "-----------  -------  -------  -----  -------  ------  -------\n"
                                "  Ethernet0  1,2,3,4     400G   9100    etp1       up       up\n"),
    "sonic-blocks": "Profile: AZURE_LOSSLESS\n-----  -------\necn    ecn_all\n-----  -------\n",
    "sonic-ecn-queues": "ECN status:\nqueue 3: on\n",
    "sonic-config-table": '{"Ethernet0": {"dscp_to_tc_map": "AZURE", "pfc_enable": "3"}}\n',
}


def _captures() -> dict[str, str]:
    """The largest real capture of each kind, the kind told by detection (as ``fleet parse`` does)."""
    best: dict[str, str] = {}
    for path in sorted(FIXTURES.glob("*/*")):
        if not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        kind = detect(text)
        if kind is not None and len(text) > len(best.get(kind, "")):
            best[kind] = text
    return best


def _to_size(piece: str, size: int) -> str:
    return piece * (size // max(1, len(piece)) + 1)


def shapes(sample: str, size: int) -> dict[str, str]:
    """The inputs of about ``size`` characters each (see the module docstring)."""
    one = sample if sample.endswith("\n") else sample + "\n"
    rng = random.Random(20261203)
    return {
        "repeated": _to_size(one, size),
        "one_line": _to_size(one.replace("\n", " "), size),
        "blank_run": ":" + " " * size + ":\n",
        "digit_run": "9" * size + "\n",
        "nesting": _to_size('{"a": [', size),
        "binary": rng.randbytes(size).decode("utf-8", errors="replace"),
    }


def _time(parse: Callable[[str], Any], text: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one parse."""
    cpu, wall = time.process_time(), time.perf_counter()
    with contextlib.suppress(ParseError):  # refused as a whole: the one way a parser may fail
        parse(text)
    return time.process_time() - cpu, time.perf_counter() - wall


def run(argv: list[str]) -> Measured:
    parser = argparse.ArgumentParser(prog="python -m benchmarks parsers")
    parser.add_argument("--megabytes", type=float, default=10.0, help="size of each input (default 10)")
    parser.add_argument("--kinds", default="", help="comma-separated kinds (default: all)")
    args = parser.parse_args(argv)
    size = int(args.megabytes * 1_000_000)
    parsers: dict[str, Callable[[str], Any]] = {kind: spec.load() for kind, spec in KINDS.items()}
    parsers["switch-table"] = parse_switch_table
    captures = {**LAYOUTS, **_captures(), "switch-table": SWITCH_TABLE,
                "nccl-log": NCCL_LOG.read_bytes().decode("utf-8", errors="replace")}
    wanted = [k for k in args.kinds.split(",") if k] or sorted(parsers)
    results: dict[str, Any] = {"megabytes": args.megabytes}
    targets = {}
    for kind in wanted:
        if kind not in parsers:
            raise SystemExit(f"no parser kind {kind!r}; there are: {', '.join(sorted(parsers))}")
        timings = {name: _time(parsers[kind], text) for name, text in shapes(captures[kind], size).items()}
        worst = max(timings, key=lambda name: timings[name][0])
        results[f"{kind}_s"] = round(timings[worst][0], 3)
        results[f"{kind}_wall_s"] = round(timings[worst][1], 3)
        results[f"{kind}_worst"] = worst
        targets[f"{kind}_s"] = at_most(TARGET_S)
    return Measured(results, targets)
