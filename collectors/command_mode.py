"""Command mode: collect a node with plain tools when it cannot run the agent.

One compound command per tick (sysfs counters through ``grep -H .``, ``ethtool
-S`` and the sysfs ``carrier_changes`` per RoCE netdev, ``nvidia-smi --query-gpu``,
``rdma -j res show``, and ``ethtool -m`` every few ticks), split by markers and
parsed with the same parsers ``fleet parse`` uses. The result is an ``AgentLine``,
so that both modes become samples through one function (``agent_reader.host_sample``).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from fleet.collectors.agent import CARRIER_CHANGES, is_count
from fleet.collectors.agent_reader import SCHEMA, AgentGpu, AgentLine, AgentNetdev, AgentPort
from fleet.collectors.commands import Command, Glob, command
from fleet.collectors.isolation import read_output
from fleet.collectors.parsers.ethtool_stats import parse_ethtool_stats
from fleet.collectors.parsers.nvidia_smi import GpuQuery, parse_nvidia_smi_query
from fleet.collectors.parsers.sysfs import parse_sysfs
from fleet.collectors.sections import sectioned, split_sections

_IB = "/sys/class/infiniband"
SYSFS_GLOBS: tuple[Glob, ...] = tuple(
    Glob(f"{_IB}/*/ports/*/{leaf}")
    for leaf in ("counters/*", "hw_counters/*", "state", "phys_state", "rate", "link_layer")
)
GPU_QUERY_FIELDS: tuple[str, ...] = (
    "index", "name", "uuid", "utilization.gpu", "memory.used", "memory.total", "temperature.gpu",
    "power.draw", "clocks.sm", "clocks_event_reasons.active",
    "ecc.errors.uncorrected.volatile.total", "ecc.errors.uncorrected.aggregate.total",
    "pcie.replay_counter",
)
MIB = 1 << 20
_NET_DIR = re.compile(rf"^{re.escape(_IB)}/([^/]+)/device/net:$")


def netdev_map(ls_output: str) -> dict[str, str]:
    """``ls /sys/class/infiniband/*/device/net`` -> {RDMA device: its first netdev}."""
    mapping: dict[str, str] = {}
    device = ""
    for line in ls_output.splitlines():
        match = _NET_DIR.match(line.strip())
        if match:
            device = match.group(1)
        elif line.strip() and device and device not in mapping:
            mapping[device] = line.split()[0]
    return mapping


def carrier_path(netdev: str) -> str:
    """Where the kernel has a netdev's count of carrier losses and returns (Linux 3.15 and later,
    https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-class-net)."""
    return f"/sys/class/net/{netdev}/{CARRIER_CHANGES}"


def carrier_changes(grep_output: str, netdevs: Iterable[str]) -> tuple[dict[str, int], list[str]]:
    """``grep -H . <carrier_path(netdev)>...`` -> ({netdev: carrier changes}, problems).

    Only the asked-for paths are read (a line for any other file is not this netdev's); a value that
    is not a whole number of at most 20 ASCII digits is left out and named in the problems. A netdev
    without the file (a kernel before 3.15) has no line: nothing for it, and no problem.
    """
    prefixes = {carrier_path(netdev) + ":": netdev for netdev in netdevs}
    texts: dict[str, list[str]] = {}
    for line in grep_output.splitlines():
        path, sep, text = line.partition(f"/{CARRIER_CHANGES}:")
        netdev = prefixes.get(path + sep) if sep else None
        if netdev is not None:
            texts.setdefault(netdev, []).append(text)
    values: dict[str, int] = {}
    problems: list[str] = []
    for netdev, lines in texts.items():
        text = "\n".join(lines)  # a file of one count is one line
        if is_count(text):
            values[netdev] = int(text)
        else:
            problems.append(f"{carrier_path(netdev)}: not a whole number: {text[:40]!r}")
    return values, problems


def _gpu(query: GpuQuery, position: int) -> AgentGpu:
    def number(value: float | int | None, scale: float = 1.0) -> float | None:
        return None if value is None else float(value) * scale

    values = {
        "util_pct": number(query.utilization_gpu_pct),
        "mem_used_bytes": number(query.mem_used_mib, MIB),
        "mem_total_bytes": number(query.memory_total_mib, MIB),
        "temp_c": number(query.temperature_gpu_c),
        "power_w": number(query.power_w),
        "sm_clock_mhz": number(query.clocks_sm_mhz),
        "throttle_reasons": number(query.clocks_event_reasons),
        "ecc_volatile_uncorrected": number(query.ecc_uncorrected_volatile),
        "ecc_aggregate_uncorrected": number(query.ecc_uncorrected_aggregate),
        "pcie_replay": number(query.pcie_replays),
    }
    index = query.index if query.index is not None else position
    return AgentGpu(index=index, name=query.name, uuid=query.uuid, values=values)


def _qp_counts(text: str) -> dict[str, int] | None:
    """``rdma -j res show`` -> {device: qp count}; None when the tool gave nothing usable."""
    try:
        entries = json.loads(text)
    except ValueError:
        return None
    if not isinstance(entries, list):
        return None
    counts: dict[str, int] = {}
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("ifname"), str):
            qp = entry.get("qp")
            if isinstance(qp, int) and not isinstance(qp, bool):
                counts[entry["ifname"]] = qp
    return counts


@dataclass
class CommandModeNode:
    """One node's command-mode state: which netdevs it has, how many ticks so far."""

    host: str
    optics_every: int = 10
    netdevs: dict[str, str] | None = None
    """RDMA device -> netdev, learnt on the first tick (``ls .../device/net``)."""
    ticks: int = 0
    optics_countdown: int = 0
    """Ticks until ``ethtool -m`` runs again: optics move slowly and the EEPROM read is slow."""
    problems: list[str] = field(default_factory=list)

    def tick_command(self) -> Command:
        parts: list[tuple[str, Command]] = [("sysfs", command("grep", "-H", ".", *SYSFS_GLOBS))]
        if self.netdevs is None:
            parts.append(("net", command("ls", Glob(f"{_IB}/*/device/net"))))
        else:
            optics = self.optics_countdown <= 0
            self.optics_countdown = self.optics_every if optics else self.optics_countdown - 1
            netdevs = sorted(set(self.netdevs.values()))
            for netdev in netdevs:
                parts.append((f"ethtool:{netdev}", command("ethtool", "-S", netdev)))
                if optics:
                    parts.append((f"optics:{netdev}", command("ethtool", "-m", netdev)))
            if netdevs:
                parts.append(("carrier", command("grep", "-H", ".", *map(carrier_path, netdevs))))
        parts.append(("rdma", command("rdma", "-j", "res", "show")))
        parts.append(("gpu", command("nvidia-smi", f"--query-gpu={','.join(GPU_QUERY_FIELDS)}",
                                     "--format=csv,noheader,nounits")))
        return sectioned(parts)

    def read(self, text: str, ts: float) -> AgentLine:
        """Parse one tick's output. Parser problems are kept in ``problems`` (cleared each tick);
        a part that cannot be read at all raises ``Unparsable`` naming its command."""
        self.ticks += 1
        self.problems = []
        sections = split_sections(text)
        if "net" in sections:
            self.netdevs = netdev_map(sections["net"])
        sysfs = read_output("grep -H . /sys/class/infiniband/*/ports/*", parse_sysfs, sections.get("sysfs", ""))
        self.problems += [f"sysfs line {p.line}: {p.reason}" for p in sysfs.problems[:5]]
        netdev_of = self.netdevs or {}
        ports = tuple(
            AgentPort(
                device=port.device, port=port.port or 1, state=port.state, state_code=port.state_code,
                phys_state=port.phys_state, phys_state_code=port.phys_state_code,
                rate=port.attributes.get("rate", ""), rate_gbps=port.rate_gbps,
                link_layer=port.link_layer, netdev=netdev_of.get(port.device, ""),
                counters=port.counters, hw_counters=port.hw_counters,
            )
            for port in sysfs.ports
            if port.device
        )
        netdevs: dict[str, AgentNetdev] = {}
        carrier, problems = carrier_changes(sections.get("carrier", ""), set(netdev_of.values()))
        self.problems += problems[:5]
        for name, body in sections.items():
            if name.startswith("ethtool:"):
                netdev = name.split(":", 1)[1]
                stats = read_output(f"ethtool -S {netdev}", parse_ethtool_stats, body)
                counters = stats.counters
                if netdev in carrier:  # after the ethtool -S counters, as the agent sends it
                    counters = {**counters, CARRIER_CHANGES: carrier[netdev]}
                optics = sections.get(f"optics:{netdev}")
                netdevs[netdev] = AgentNetdev(netdev, counters, optics or None)
        query = read_output("nvidia-smi --query-gpu", functools.partial(parse_nvidia_smi_query, columns=GPU_QUERY_FIELDS),
                            sections.get("gpu", ""))
        gpus = tuple(_gpu(gpu, position) for position, gpu in enumerate(query.gpus))
        gpu_error = "" if gpus else "nvidia-smi reported no GPUs"
        return AgentLine(
            schema=SCHEMA, host=self.host, ts=ts, seq=self.ticks, interval_s=0.0,
            ports=ports, netdevs=netdevs, qp_count=read_output("rdma -j res show", _qp_counts, sections.get("rdma", "")),
            gpus=gpus, gpu_error=gpu_error, errors=tuple(self.problems),
        )
