"""Parser for what a Linux host has: CPUs, memory, network interfaces, RDMA devices, NVIDIA driver.

The collector reads it with one command (``HARDWARE_FILES`` below)::

    grep -Hs . /sys/devices/system/cpu/online /proc/meminfo /sys/module/nvidia/version \\
        /sys/class/infiniband/*/node_type /sys/class/net/*/operstate /sys/class/net/*/speed \\
        /sys/class/net/*/mtu

one ``path:value`` line per line of each file. ``-s`` keeps quiet about files that are not there
(no ``/sys/module/nvidia``: no NVIDIA driver loaded; a glob that matches nothing: no such device)
and about those the kernel refuses to read (``speed`` of an interface that is down: EINVAL).
What each file means, from the kernel's documentation:

- ``/sys/devices/system/cpu/online``: the online CPUs as a CPU list, ``0-63`` or ``0-3,8-11``
  (https://www.kernel.org/doc/html/latest/admin-guide/cputopology.html);
- ``/proc/meminfo``: ``MemTotal`` and ``MemAvailable`` in kibibytes, printed ``kB``
  (https://www.kernel.org/doc/html/latest/filesystems/proc.html, "meminfo");
- ``/sys/module/nvidia/version``: present while the ``nvidia`` module is loaded
  (https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-module);
- ``/sys/class/infiniband/<dev>/node_type``: one line per RDMA device, ``1: CA``
  (https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-class-infiniband);
- ``/sys/class/net/<if>/{operstate,speed,mtu}``: RFC 2863 operational state, Mb/s (``-1``:
  unknown), bytes (https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-class-net).

Other ``/proc/meminfo`` fields are read past (they are the file's, not unknown); a line that is
not ``path:value`` of one of these files is counted in ``unknown_lines`` and listed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem
from fleet.collectors.parsers.problem_log import ProblemLog, to_int

HARDWARE_FILES = (
    "/sys/devices/system/cpu/online",
    "/proc/meminfo",
    "/sys/module/nvidia/version",
    "/sys/class/infiniband/*/node_type",
    "/sys/class/net/*/operstate",
    "/sys/class/net/*/speed",
    "/sys/class/net/*/mtu",
)
"""The files ``grep -Hs .`` reads for this parser, in its order."""

_NET = re.compile(r"^/sys/class/net/([^/]+)/(operstate|speed|mtu)$")
_IB = re.compile(r"^/sys/class/infiniband/([^/]+)/node_type$")
_MEMINFO = re.compile(r"^([A-Za-z0-9_()]+):\s+(\d+)(?:\s+kB)?\s*$")
_CPU_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
KIB = 1024
MAX_CPUS = 1 << 20
"""A CPU list naming more CPUs than this is not believed (a hostile ``0-99999999999``)."""


@dataclass(frozen=True, slots=True)
class Netdev:
    """One network interface as sysfs shows it."""

    name: str
    operstate: str
    """RFC 2863 state as the kernel prints it: ``up``, ``down``, ``dormant``, ``unknown`` ..."""
    speed_mbps: int | None
    """None when the kernel does not know it (``-1``) or would not say (interface down)."""
    mtu: int | None
    """Bytes."""


@dataclass(frozen=True, slots=True)
class HostHardware:
    cpus: int | None
    """Online CPUs; None when the list was not read."""
    memory_total_bytes: int | None
    memory_available_bytes: int | None
    rdma_devices: tuple[str, ...]
    """Every RDMA device (``/sys/class/infiniband/*``), sorted; () when the host has none."""
    nvidia_driver: str | None
    """The loaded ``nvidia`` module's version; None when no such module is loaded."""
    netdevs: tuple[Netdev, ...]
    """Sorted by name; the loopback interface included as the kernel lists it."""
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


def cpu_count(cpu_list: str) -> int | None:
    """Number of CPUs in a kernel CPU list (``0-3,8-11`` -> 8); None when it is not one."""
    total = 0
    for part in cpu_list.strip().split(","):
        match = _CPU_RANGE.match(part.strip())
        if match is None:
            return None
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        if last < first:
            return None
        total += last - first + 1
        if total > MAX_CPUS:
            return None
    return total or None


def parse_host_hardware(text: str) -> HostHardware:
    log = ProblemLog()
    cpus: int | None = None
    meminfo: dict[str, int] = {}
    rdma: set[str] = set()
    nvidia: str | None = None
    net: dict[str, dict[str, str]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        path, sep, value = line.partition(":")
        if not sep:
            log.unknown(number, line, "not a path:value line of grep -H")
            continue
        value = value.strip()
        if path == "/sys/devices/system/cpu/online":
            cpus = cpu_count(value)
            if cpus is None:
                log.add(number, line, "not a CPU list")
        elif path == "/proc/meminfo":
            field = _MEMINFO.match(value)
            if field is None:
                log.unknown(number, line, "not a /proc/meminfo line")
            elif field.group(1) in ("MemTotal", "MemAvailable"):
                meminfo[field.group(1)] = int(field.group(2)) * KIB
        elif path == "/sys/module/nvidia/version":
            nvidia = value
        elif (ib := _IB.match(path)) is not None:
            rdma.add(ib.group(1))
        elif (netdev := _NET.match(path)) is not None:
            net.setdefault(netdev.group(1), {})[netdev.group(2)] = value
        else:
            log.unknown(number, line, "a file this parser does not read")
    netdevs = []
    for name in sorted(net):
        files = net[name]
        speed = to_int(files.get("speed", ""))
        netdevs.append(Netdev(name, files.get("operstate", ""), speed if speed is not None and speed >= 0 else None,
                              to_int(files.get("mtu", ""))))
    return HostHardware(cpus, meminfo.get("MemTotal"), meminfo.get("MemAvailable"), tuple(sorted(rdma)),
                        nvidia, tuple(netdevs), log.freeze(), log.unknown_lines)
