"""The straightforward build of a simulated node's agent line, which the simulator's fast path must match.

``agent_line`` turns a node's whole ``NodeView`` into one ``fleet-agent/2``
document, key for key as the real agent (``collectors/agent.py``) prints it;
``fleet.collectors.agent.changed_line`` diffs two of them. ``fleet.simulator.agent_stream.AgentLines``
prints the same text from only the parts a line carries; the tests compare the two.
"""

from __future__ import annotations

from typing import Any

from fleet.simulator.agent_stream import SCHEMA, optics_readings
from fleet.simulator.state import NodeView
from fleet.simulator.tools.ethtool import render_module
from fleet.simulator.tools.ib import PHYS_STATE_NUM, PORT_STATE_NUM, sysfs_rate


def agent_line(view: NodeView, ts: float, seq: int, interval_s: float, *, optics: bool,
               ethtool_keep: frozenset[str] | None = None, readings_only: bool = False) -> dict[str, Any]:
    """One ``fleet-agent/2`` document for a node's view at ``ts``."""
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
        ethtool = (dict(nic.ethtool) if ethtool_keep is None
                   else {name: value for name, value in nic.ethtool.items() if name in ethtool_keep})
        if ethtool_keep is None or "carrier_changes" in ethtool_keep:  # the netdev's sysfs file, after ethtool -S
            ethtool["carrier_changes"] = nic.carrier_changes
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
