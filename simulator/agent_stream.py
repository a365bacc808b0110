"""The node agent protocol on a simulated node: ``python3 -u -c <agent> --interval N ...``.

The real agent (``collectors/agent.py``) reads sysfs, ethtool, rdma and NVML
and prints one JSON line of schema ``fleet-agent/1`` (docs/agent-schema.md)
per interval until stdin closes. The simulated node answers the same command
line with lines of the same schema, built from its NodeView at each tick;
``optics_text`` is the ``ethtool -m`` renderer's text, every K-th line.
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


def _options(words: list[str]) -> AgentOptions:
    """Parse ``--interval N``, ``--optics-every K``, ``--ethtool-keep A,B`` (also ``--name=value``)."""
    values: dict[str, str] = {}
    index = 0
    while index < len(words):
        word = words[index]
        name, equals, value = word.partition("=")
        if name in ("--interval", "--optics-every", "--ethtool-keep"):
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
    )
    if options.interval_s <= 0 or options.optics_every <= 0:
        raise ValueError("interval and optics-every must be positive")
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
                          optics=(seq - 1) % options.optics_every == 0, ethtool_keep=options.ethtool_keep)
        io.stdout(json.dumps(line, separators=(",", ":")) + "\n")  # compact, as the real agent prints
        await io.drain()  # a client that reads slowly slows the stream, as a pipe would
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(io.stdin_eof.wait(), options.interval_s)
    return 0


def agent_line(view: NodeView, ts: float, seq: int, interval_s: float, *, optics: bool,
               ethtool_keep: frozenset[str] | None = None) -> dict[str, Any]:
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
            entry["optics_text"] = render_module(nic.optics)
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
