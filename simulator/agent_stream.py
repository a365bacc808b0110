"""The node agent protocol on a simulated node: ``python3 -u -c <agent> --interval N ...``.

The real agent (``collectors/agent.py``) reads sysfs, ethtool, rdma and NVML
and prints one JSON line of schema ``fleet-agent/1`` (docs/agent-schema.md)
per interval until stdin closes. The simulated node answers the same command
line with lines of the same schema, built from its NodeView at each tick;
``optics_text`` is the ``ethtool -m`` renderer's text, every K-th line.
With ``--changed-only`` the lines between full ones carry only what changed,
built by the same rules as the real agent's ``changed_line`` (a test holds
the two copies to the same output; the simulator may not import collectors).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from typing import Any

from simulator.session import Machine, StreamIO
from simulator.state import NodeView
from simulator.tools.ethtool import render_module
from simulator.tools.ib import PHYS_STATE_NUM, PORT_STATE_NUM, sysfs_rate

SCHEMA = "fleet-agent/1"
PYTHON_VERSION = "Python 3.10.12"


@dataclass(frozen=True, slots=True)
class AgentOptions:
    """The agent's own arguments (docs/agent-schema.md)."""

    interval_s: float = 1.0
    optics_every: int = 10
    ethtool_keep: frozenset[str] | None = None
    """Only these ``ethtool -S`` counters (``--ethtool-keep a,b``); None: all of them."""
    optics_readings: bool = False
    """Only the reading lines of ``ethtool -m`` (``--optics-readings``), as the real agent sends them."""
    changed_only: bool = False
    full_every: int = 60
    """With ``changed_only``: a full line every this many lines (and the first)."""


def _options(words: list[str]) -> AgentOptions:
    """Parse ``--interval N``, ``--optics-every K``, ``--ethtool-keep A,B`` (also ``--name=value``)."""
    values: dict[str, str] = {}
    index = 0
    while index < len(words):
        word = words[index]
        name, equals, value = word.partition("=")
        if name in ("--changed-only", "--optics-readings"):
            values[name] = ""
        elif name in ("--interval", "--optics-every", "--ethtool-keep", "--full-every"):
            if not equals:
                index += 1
                value = words[index] if index < len(words) else ""
            values[name] = value
        index += 1
    options = AgentOptions(
        interval_s=float(values.get("--interval", 1.0)),
        optics_every=int(values.get("--optics-every", 10)),
        ethtool_keep=(frozenset(filter(None, values["--ethtool-keep"].split(",")))
                      if "--ethtool-keep" in values else None),
        optics_readings="--optics-readings" in values,
        changed_only="--changed-only" in values,
        full_every=int(values.get("--full-every", 60)),
    )
    if options.interval_s <= 0 or options.optics_every <= 0 or options.full_every <= 0:
        raise ValueError("interval, optics-every and full-every must be positive")
    return options


async def run_python(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """``python3 --version`` or the agent; any other program is not something a simulated node can run."""
    words = argv[1:]
    if words[:1] in (["--version"], ["-V"]):
        io.stdout(PYTHON_VERSION + "\n")
        return 0
    if "-c" not in words or "--interval" not in " ".join(words) or machine.role != "node":
        io.stderr("python3: the simulated node runs only the fleet agent (python3 -u -c <agent> --interval N)\n")
        return 2
    agent_args = words[words.index("-c") + 2 :]
    try:
        options = _options(agent_args)
    except ValueError as error:
        io.stderr(f"agent: error: {error}\n")
        return 2
    model = machine.model
    seq = 0
    previous: dict[str, Any] | None = None
    while not io.stdin_eof.is_set() and not io.closed.is_set():
        t = model.now()
        behaviour = model.behaviour(machine.host, t)
        if behaviour.hung:  # a node that hangs mid-stream stops printing, it does not hang up
            await io.closed.wait()
            break
        if behaviour.delay_s:
            await asyncio.sleep(behaviour.delay_s)
            t = model.now()
        seq += 1
        view = model.node_view(machine.host, t)
        line = agent_line(view, model.unix(t), seq, options.interval_s,
                          optics=(seq - 1) % options.optics_every == 0, ethtool_keep=options.ethtool_keep,
                          readings_only=options.optics_readings)
        sent: dict[str, Any] | None = None
        if options.changed_only:
            if previous is not None and (seq - 1) % options.full_every:
                sent = changed_line(previous, line)
            previous = line
        io.stdout(json.dumps(sent if sent is not None else line, separators=(",", ":")) + "\n")  # compact
        await io.drain()  # a client that reads slowly slows the stream, as a pipe would
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(io.stdin_eof.wait(), options.interval_s)
    return 0


def agent_line(view: NodeView, ts: float, seq: int, interval_s: float, *, optics: bool,
               ethtool_keep: frozenset[str] | None = None, readings_only: bool = False) -> dict[str, Any]:
    """One ``fleet-agent/1`` document for a node's view at ``ts``."""
    ports = []
    netdevs: dict[str, dict[str, Any]] = {}
    for nic in view.nics:
        ports.append(
            {
                "device": nic.name,
                "port": nic.port,
                "state": nic.state,
                "state_code": PORT_STATE_NUM.get(nic.state, 0),
                "phys_state": nic.phys_state,
                "phys_state_code": PHYS_STATE_NUM.get(nic.phys_state, 0),
                "rate": sysfs_rate(nic),
                "rate_gbps": float(nic.rate_gbps),
                "link_layer": nic.link_layer,
                "netdev": nic.netdev,
                "counters": nic.counters,
                "hw_counters": nic.hw_counters,
            }
        )
        ethtool = (nic.ethtool if ethtool_keep is None
                   else {name: value for name, value in nic.ethtool.items() if name in ethtool_keep})
        entry: dict[str, Any] = {"ethtool": ethtool}
        if optics and nic.optics is not None:
            text = render_module(nic.optics)
            entry["optics_text"] = optics_readings(text) if readings_only else text
        netdevs[nic.netdev] = entry
    gpus = [
        {
            "index": g.index,
            "name": g.name,
            "uuid": g.uuid,
            "util_pct": g.util_pct,
            "mem_used_bytes": g.mem_used_mib * 1048576,
            "mem_total_bytes": g.mem_total_mib * 1048576,
            "temp_c": g.temp_c,
            "power_w": g.power_w,
            "sm_clock_mhz": g.sm_clock_mhz,
            "throttle_reasons": g.throttle_reasons,
            "ecc_volatile_uncorrected": g.ecc_volatile_uncorrected,
            "ecc_aggregate_uncorrected": g.ecc_aggregate_uncorrected,
            "ecc_volatile_corrected": 0,
            "retired_pages": 0,
            "pcie_replay": g.pcie_replay,
            "xid_last": g.xid_last,
            "xid_count": g.xid_count,
            "nvlink_crc_errors": sum(g.nvlink_crc_errors),
            "nvlink_replay_errors": sum(g.nvlink_replay_errors),
            "nvlink_recovery_errors": sum(g.nvlink_recovery_errors),
        }
        for g in view.gpus
    ]
    return {
        "schema": SCHEMA,
        "host": view.name,
        "ts": round(ts, 3),
        "seq": seq,
        "interval_s": interval_s,
        "ports": ports,
        "netdevs": netdevs,
        "qp_count": {nic.name: len(nic.qps) for nic in view.nics},
        "gpus": gpus,
        "gpu_error": "",
        "errors": [],
    }


_OPTICS_READING_WORDS = ("bias current", "power", "temperature", "voltage")


def optics_readings(text: str) -> str:
    """The reading lines of ``ethtool -m`` output, by the real agent's rule (``--optics-readings``)."""
    kept = []
    for line in text.splitlines():
        key = line.partition(" :")[0].lower()
        if "alarm" not in key and "warning" not in key and any(word in key for word in _OPTICS_READING_WORDS):
            kept.append(line)
    return "\n".join(kept)


PER_LINE_KEYS = ("schema", "host", "ts", "seq", "interval_s", "errors")
"""Sent whole on every line, full or changed-only."""
IDENTITY_KEYS = ("device", "port", "index", "netdev", "link_layer")
"""Name a port or GPU: kept on each changed item; a new value is a new shape (a full line)."""
_SAME = object()
_SHAPE = object()


def _state_keys(obj: dict[str, Any]) -> set[str]:
    return {key for key in obj if key != "optics_text"}


def _diff_items(before: list[Any], after: list[Any]) -> Any:
    if len(before) != len(after):
        return _SHAPE
    items = []
    for old, new in zip(before, after, strict=True):
        if not isinstance(new, dict):
            if old != new or type(old) is not type(new):
                return _SHAPE
            continue
        if not isinstance(old, dict) or any(old.get(key) != new.get(key) for key in IDENTITY_KEYS):
            return _SHAPE
        change = _diff(old, new)
        if change is _SHAPE:
            return _SHAPE
        if change is not _SAME:
            items.append({key: new[key] for key in IDENTITY_KEYS if key in new} | change)
    return items or _SAME


def _diff(before: Any, after: Any) -> Any:
    """What changed from ``before`` to ``after``: _SAME, _SHAPE (keys or lengths differ), or the changes."""
    if isinstance(after, dict):
        if not isinstance(before, dict) or _state_keys(before) != _state_keys(after):
            return _SHAPE
        out = {}
        for key, value in after.items():
            if key == "optics_text":  # a reading, not state: sent whole on the lines that have it
                out[key] = value
                continue
            change = _diff(before[key], value)
            if change is _SHAPE:
                return _SHAPE
            if change is not _SAME:
                out[key] = change
        return out or _SAME
    if isinstance(after, list):
        return _diff_items(before, after) if isinstance(before, list) else _SHAPE
    if before == after and type(before) is type(after):
        return _SAME
    return after


def changed_line(previous: dict[str, Any], current: dict[str, Any]) -> dict[str, Any] | None:
    """``current`` as a changed-only line against ``previous``, or None when their shapes differ."""
    if _state_keys(previous) != _state_keys(current):
        return None
    line = {key: current[key] for key in PER_LINE_KEYS if key in current}
    line["changed_only"] = True
    for key, value in current.items():
        if key in PER_LINE_KEYS:
            continue
        change = _diff(previous[key], value)
        if change is _SHAPE:
            return None
        if change is not _SAME:
            line[key] = change
    return line
