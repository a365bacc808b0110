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
not ``path:value`` of one of these files is counted in ``unknown_lines`` and listed. Numbers are
read as the parsers' contract reads them (``values``: ASCII digits, within their field's range);
the lines are split, never matched by a pattern with overlapping quantifiers.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.values import Range, bits, int_in, is_digits

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

KIB = 1024
MAX_CPUS = 1 << 20
"""A CPU list naming more CPUs than this is not believed (a hostile ``0-99999999999``)."""
MEMINFO_KIB = bits(54, "a /proc/meminfo size in KiB")
"""``MemTotal`` in KiB such that the bytes fit 64 bits."""
SPEED_MBPS = Range(0, 2_400_000, "an interface speed in Mb/s")
"""Up to 2.4 Tb/s, the fastest link (``values.LINK_RATE_GBPS``)."""
MTU = bits(32, "an MTU in bytes")
_NET_FILES = ("operstate", "speed", "mtu")


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
        first_text, dash, last_text = part.strip().partition("-")
        if not is_digits(first_text) or (dash and not is_digits(last_text)):
            return None
        first = int(first_text)
        last = int(last_text) if dash else first
        if last < first or last - first + 1 > MAX_CPUS:
            return None
        total += last - first + 1
        if total > MAX_CPUS:
            return None
    return total or None


def _sysfs_name(path: str, prefix: str, leaf: str | tuple[str, ...]) -> tuple[str, str] | None:
    """(the device directory's name, the file) when ``path`` is ``prefix<name>/<leaf>``, else None."""
    if not path.startswith(prefix):
        return None
    name, slash, file = path[len(prefix):].partition("/")
    leaves = (leaf,) if isinstance(leaf, str) else leaf
    return (name, file) if name and slash and file in leaves else None


@parser
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
            name, colon, amount = value.partition(":")
            words = amount.split()
            if not colon or not words or len(words) > 2 or words[1:] not in ([], ["kB"]):
                log.unknown(number, line, "not a /proc/meminfo line")
            elif name in ("MemTotal", "MemAvailable"):
                kib = int_in(words[0], MEMINFO_KIB, log, number, name)
                if kib is not None:
                    meminfo[name] = kib * KIB
        elif path == "/sys/module/nvidia/version":
            nvidia = value[:64]
        elif (ib := _sysfs_name(path, "/sys/class/infiniband/", "node_type")) is not None:
            rdma.add(ib[0])
        elif (netdev := _sysfs_name(path, "/sys/class/net/", _NET_FILES)) is not None:
            net.setdefault(netdev[0], {})[netdev[1]] = value
        else:
            log.unknown(number, line, "a file this parser does not read")
    netdevs = []
    for name in sorted(net):
        files = net[name]
        speed_text, mtu_text = files.get("speed", ""), files.get("mtu", "")
        speed = None if speed_text in ("", "-1") else int_in(speed_text, SPEED_MBPS, log, 0, f"{name} speed")
        mtu = int_in(mtu_text, MTU, log, 0, f"{name} mtu") if mtu_text else None
        netdevs.append(Netdev(name, files.get("operstate", "")[:32], speed, mtu))
    return HostHardware(cpus, meminfo.get("MemTotal"), meminfo.get("MemAvailable"), tuple(sorted(rdma)),
                        nvidia, tuple(netdevs), log.freeze(), log.unknown_lines)
