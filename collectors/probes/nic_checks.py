"""The link test's local checks of every RDMA NIC of a node: state, trained rate, errors, optics, LLDP.

Why before the RDMA probes: a NIC that is down, trained at half rate, taking
symbol errors, short of light or cabled to the wrong switch port explains bad
pairs before a single probe runs, and it tells a bad cable from a bad NIC
(both carry exactly the same probes). Each node costs two SSH commands before
the probes (sysfs + LLDP + netdev names, then ``ethtool -m`` per netdev) and
one after (the error counters again, for the deltas over the test).

Units: rates in Gb/s, optical power in dBm, margins in dB.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from fleet.collectors.commands import Command, Glob, command, sequence
from fleet.collectors.inventory import CablingRow
from fleet.collectors.parsers.ethtool_module import parse_ethtool_module
from fleet.collectors.parsers.lldp import parse_lldp
from fleet.collectors.parsers.show_gids import parse_show_gids
from fleet.collectors.parsers.sysfs import parse_sysfs
from fleet.collectors.probe_sessions import Launcher
from fleet.collectors.sshpool import SshPool
from fleet.fabric.text import clean_text

ERROR_COUNTERS = (
    "symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
    "local_link_integrity_errors", "excessive_buffer_overrun_errors", "port_xmit_discards",
)  # fmt: skip
"""IBA PortCounters that move when a link, not the traffic, is at fault (sysfs ``counters/``)."""

CABLE_COUNTERS = ("symbol_error", "link_error_recovery", "link_downed", "local_link_integrity_errors")
"""The ones that point at the cable or optics rather than at the NIC or congestion."""

MIN_RX_MARGIN_DB = 2.0
"""Receive power this close to the module's low-power warning (or alarm) is flagged: optics
age and dirty connectors lose ~0.5-1 dB before failing, so 2 dB leaves time to act."""

_SECTION = "=== fleet-linktest "
_PORTS = "/sys/class/infiniband/*/ports/*"
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


@dataclass(frozen=True, slots=True)
class NicCheck:
    """What the local checks found on one NIC; ``problems`` in words (empty: healthy)."""

    node: str
    nic: str
    netdev: str = ""
    state: str = ""
    rate_gbps: float | None = None
    expected_rate_gbps: float | None = None
    errors_before: Mapping[str, int] = field(default_factory=dict)
    error_deltas: Mapping[str, int] = field(default_factory=dict)
    rx_power_dbm: float | None = None
    """The weakest lane's receive power."""
    rx_margin_db: float | None = None
    """Above the module's low-power warning threshold (alarm when no warning is given)."""
    lldp_switch: str = ""
    lldp_port: str = ""
    planned_switch: str = ""
    planned_port: str = ""
    problems: tuple[str, ...] = ()
    cable_suspect: bool = False
    """A problem that points at the cable/optics (errors, light, miswire, low rate)."""


def before_command() -> Command:
    """States, rates, error counters, LLDP neighbours, GIDs and RDMA device -> netdev, in one channel.

    The GIDs give each RoCE NIC the GID index its probes need (``gid_indices``), so the
    link test's first round does not look them up on every node, one SSH session each.
    """
    files = [Glob(f"{_PORTS}/{name}") for name in ("state", "phys_state", "rate", "link_layer")]
    counters = [Glob(f"{_PORTS}/counters/{name}") for name in ERROR_COUNTERS]
    return sequence(
        command("echo", f"{_SECTION}sysfs"), command("grep", "-H", ".", *files, *counters),
        command("echo", f"{_SECTION}lldp"), command("lldpctl", "-f", "json"),
        command("echo", f"{_SECTION}gids"), command("show_gids"),
        command("echo", f"{_SECTION}net"), command("ls", Glob("/sys/class/infiniband/*/device/net")),
    )  # fmt: skip


def optics_command(netdevs: Iterable[str]) -> Command | None:
    """``ethtool -m`` of every netdev, each under its own section marker."""
    parts = []
    for netdev in netdevs:
        parts += [command("echo", f"{_SECTION}module {netdev}"), command("ethtool", "-m", netdev)]
    return sequence(*parts) if parts else None


def after_command(checks: NodeChecks | None = None) -> Command:
    """The error counters again: the very files the checks before read, when they named them.

    Named files need no shell to expand a pattern, so a probe runner starts the
    ``grep`` on the session it already has (``fleet.collectors.probe_sessions``), where a
    new SSH session per node cost both ends more than the read.
    """
    files = _counter_files(checks) if checks is not None else []
    if files:
        return command("grep", "-H", ".", *files)
    return command("grep", "-H", ".", *(Glob(f"{_PORTS}/counters/{name}") for name in ERROR_COUNTERS))


def _counter_files(checks: NodeChecks) -> list[str]:
    """The error counter files of ``checks.ports``; [] when a device's name is not a plain word
    (it is never made part of a path then: the pattern is read instead)."""
    files: list[str] = []
    for device, port in sorted(checks.ports.items()):
        counters = port.get("counters")
        if not _PLAIN_NAME.fullmatch(device) or not isinstance(counters, dict):
            return []
        files += [f"/sys/class/infiniband/{device}/ports/{port.get('port', 1)}/counters/{name}" for name in counters]
    return files


def sections(text: str) -> dict[str, str]:
    """Split a compound command's output at the section markers."""
    found: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith(_SECTION):
            current = found.setdefault(line[len(_SECTION) :].strip(), [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines) + "\n" for name, lines in found.items()}


def netdevs_of(ls_text: str) -> dict[str, str]:
    """RDMA device -> netdev from ``ls /sys/class/infiniband/*/device/net``."""
    mapping: dict[str, str] = {}
    device = ""
    for line in ls_text.splitlines():
        if line.endswith("/device/net:"):
            device = line.split("/")[4]
        elif line.strip() and device and device not in mapping:
            mapping[device] = line.strip()
    return mapping


@dataclass
class NodeChecks:
    """One node's local checks as they are gathered: before, optics, after."""

    node: str
    reason: str = ""
    """Why the node could not be checked (unreachable ...); empty when it could."""
    ports: dict[str, dict[str, object]] = field(default_factory=dict)
    netdevs: dict[str, str] = field(default_factory=dict)
    lldp: dict[str, tuple[str, str]] = field(default_factory=dict)
    optics: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    after: dict[str, dict[str, int]] = field(default_factory=dict)
    gid_indices: dict[tuple[str, int], int | None] = field(default_factory=dict)
    """(device, port) -> the GID index a probe passes with ``-x``: None on InfiniBand (none
    needed), the RoCE v2 entry with an IPv4 address on RoCE; absent when there is none."""
    addresses: dict[str, str] = field(default_factory=dict)
    """RoCE device -> the IPv4 address of that GID entry: what a leaf's ECMP hash sees of the NIC."""


async def check_before(pool: SshPool, node: str, timeout_s: float) -> NodeChecks:
    """States, rates, error counters and LLDP of ``node``'s NICs: what must be read before the probes.

    The optics are read by :func:`read_optics`, which the link test runs while
    the probes measure: only the judgement at the end uses them.
    """
    checks = NodeChecks(node)
    result = await pool.run(node, before_command(), timeout_s)
    if result.exit_status is None:
        checks.reason = f"{result.state.value}: {result.reason}"
        return checks
    parts = sections(result.stdout)
    gids = parse_show_gids(parts.get("gids", ""))
    for port in parse_sysfs(parts.get("sysfs", "")).ports:
        checks.ports[port.device] = {
            "state": port.state, "rate_gbps": port.rate_gbps, "port": port.port or 1,
            "counters": {k: v for k, v in port.counters.items() if k in ERROR_COUNTERS},
        }  # fmt: skip
        key = (port.device, port.port or 1)
        if port.link_layer == "InfiniBand":
            checks.gid_indices[key] = None
        elif (index := gids.roce_v2_index(*key)) is not None:
            checks.gid_indices[key] = index
            checks.addresses[port.device] = next(g.ipv4 for g in gids.gids
                                                 if (g.device, g.port, g.index) == (*key, index))
    checks.netdevs = netdevs_of(parts.get("net", ""))
    for neighbor in parse_lldp(parts.get("lldp", "")).neighbors:  # the names as the switch says them: made inert
        checks.lldp[neighbor.local_interface] = (clean_text(neighbor.chassis_name, one_line=True),
                                                 clean_text(neighbor.port_id, one_line=True))
    return checks


async def read_optics(pool: SshPool, checks: NodeChecks, timeout_s: float) -> None:
    """Every module's received power and bias (``ethtool -m``) of a node that :func:`check_before` reached.

    A module's EEPROM is read through the NIC's firmware, off the RDMA data
    path, so this may run while the node's NICs measure latency.
    """
    if checks.reason:
        return
    optics = optics_command(checks.netdevs[d] for d in sorted(checks.ports) if d in checks.netdevs)
    if optics is None:
        return
    module_result = await pool.run(checks.node, optics, timeout_s)
    for name, text in sections(module_result.stdout).items():
        if name.startswith("module "):
            checks.optics[name.split(" ", 1)[1]] = _rx_margin(text)


async def check_after(launcher: Launcher, checks: NodeChecks, timeout_s: float) -> None:
    """The error counters again, for the deltas over the test (through the node's probe runner when
    ``launcher`` is the link test's ``ProbeSessions``)."""
    if checks.reason:
        return
    result = await launcher.run(checks.node, after_command(checks), timeout_s)
    for port in parse_sysfs(result.stdout).ports:
        checks.after[port.device] = {k: v for k, v in port.counters.items() if k in ERROR_COUNTERS}


def _rx_margin(text: str) -> tuple[float | None, float | None]:
    """(weakest lane's rx power dBm, margin above the low warning/alarm dB); -inf: no light.

    Lanes whose own laser is off (bias 0 mA) are not in use (an 8-lane OSFP
    running 4 lanes) and are left out.
    """
    module = parse_ethtool_module(_margin_lines(text))
    lit = [lane for lane in module.lanes if lane.tx_bias_ma is None or lane.tx_bias_ma > 0]
    powers = [lane.rx_power_dbm for lane in lit if lane.rx_power_dbm is not None]
    if not powers:
        return None, None
    weakest = min(powers)
    floor = module.thresholds.get("rx_power_low_warning_dbm", module.thresholds.get("rx_power_low_alarm_dbm"))
    return weakest, (weakest - floor) if floor is not None else None


def _margin_lines(text: str) -> str:
    """The lines of an ``ethtool -m`` dump that ``_rx_margin`` needs: bias and rx power readings, rx power thresholds.

    The parser reads each line on its own, so the lanes' bias and rx power and the rx
    power thresholds come out of these alone as out of the whole dump. A CMIS module
    prints 180 lines, a ninth of them these (the rest: identification, temperatures,
    voltages, tx power, per-lane alarm and warning flags), and a link test reads 8
    modules a node while its probes run. A line without "ower" or "ias cur" is passed
    over with one substring test each (ethtool capitalizes at most their first letter).
    """
    kept = []
    for line in text.splitlines():
        if "ower" not in line and "ias cur" not in line:
            continue
        key = line.partition(" :")[0].lower()
        if "bias current" in key or ("power" in key and ("rx" in key or "rcvr" in key or "receiver" in key)):
            if "threshold" in key:
                if "bias" not in key:
                    kept.append(line)
            elif "alarm" not in key and "warning" not in key:
                kept.append(line)
    return "\n".join(kept)


def judge(
    checks: NodeChecks,
    plan: Mapping[tuple[str, str], CablingRow],
    expected_rate_gbps: float | None,
    *,
    min_margin_db: float = MIN_RX_MARGIN_DB,
) -> list[NicCheck]:
    """Each NIC's findings: state, rate vs expected, error deltas, optics margin, LLDP vs plan."""
    found = []
    for device in sorted(checks.ports):
        port = checks.ports[device]
        problems: list[str] = []
        cable = False
        state = str(port["state"])
        rate = port["rate_gbps"]
        assert rate is None or isinstance(rate, float)
        if state != "ACTIVE":
            problems.append(f"port state {state or 'unknown'}")
        if expected_rate_gbps and rate is not None and state == "ACTIVE" and rate < expected_rate_gbps:
            problems.append(f"trained at {rate:g} Gb/s, expected {expected_rate_gbps:g} Gb/s")
            cable = True
        before = port["counters"]
        assert isinstance(before, dict)
        after = checks.after.get(device, {})
        deltas = {k: after[k] - before[k] for k in after if k in before and after[k] > before[k]}
        for name, delta in sorted(deltas.items()):
            problems.append(f"{name} +{delta} during the test")
            cable = cable or name in CABLE_COUNTERS
        netdev = checks.netdevs.get(device, "")
        power, margin = checks.optics.get(netdev, (None, None))
        if power is not None and math.isinf(power):
            problems.append("no light received")
            cable = True
        elif margin is not None and margin < min_margin_db:
            problems.append(f"rx power {power:.2f} dBm, only {margin:.2f} dB above the module's low threshold")
            cable = True
        switch, switch_port = checks.lldp.get(netdev, ("", ""))
        row = plan.get((checks.node, device))
        if row is not None and switch and (switch, switch_port) != (row.switch, row.port):
            problems.append(f"LLDP sees {switch} {switch_port}, the cabling plan says {row.switch} {row.port}")
            cable = True
        found.append(NicCheck(
            node=checks.node, nic=device, netdev=netdev, state=state, rate_gbps=rate,
            expected_rate_gbps=expected_rate_gbps, errors_before=before, error_deltas=deltas,
            rx_power_dbm=power, rx_margin_db=margin, lldp_switch=switch, lldp_port=switch_port,
            planned_switch=row.switch if row else "", planned_port=row.port if row else "",
            problems=tuple(problems), cable_suspect=cable,
        ))  # fmt: skip
    return found


def expected_rate(all_checks: Iterable[NodeChecks]) -> float | None:
    """The rate most NICs of the fleet trained at, Gb/s: what the others should reach."""
    rates = [p["rate_gbps"] for c in all_checks for p in c.ports.values() if isinstance(p["rate_gbps"], float)]
    return max(set(rates), key=lambda r: (rates.count(r), r)) if rates else None


__all__ = [
    "CABLE_COUNTERS", "ERROR_COUNTERS", "MIN_RX_MARGIN_DB", "NicCheck", "NodeChecks", "check_after",
    "check_before", "expected_rate", "judge", "netdevs_of", "read_optics", "sections",
]  # fmt: skip
