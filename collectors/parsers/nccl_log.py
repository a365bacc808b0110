"""NCCL's own log lines (``NCCL_DEBUG=INFO``), read out of whatever output they are interleaved with.

Why: nccl-tests prints one figure per message size for the whole collective;
which NICs NCCL used on each host, over which transport, with how many queue
pairs per connection and how many nodes it saw, is only in NCCL's log. The
all-to-all probe reads it to name the NICs behind a result, and to notice a
run that fell back to sockets or to fewer NICs than the node has. The lines
come interleaved with the test's table (each rank prints its own, in any
order), so this parser reads only the lines that are NCCL's and counts the
rest as ``other_lines`` (never problems: a log is always mixed with them).

A line is ``host:pid:tid [cudaDev] NCCL INFO|WARN|TRACE|ERROR message``; recent
NCCL releases may put a ``[YYYY-MM-DD HH:MM:SS]`` stamp before it
(``NCCL_DEBUG_TIMESTAMP_FORMAT``). The messages read (NCCL 2.x wording, e.g.
NCCL 2.26 in ``tests/fixtures/nccl``):

- ``NCCL version 2.26.5+cuda12.2``
- ``NET/IB : Using [0]mlx5_bond_6:1/RoCE [1]mlx5_bond_7:1/RoCE [RO]; OOB bond0:30.159.184.22<0>``
  (``NET/Socket : Using [0]eth0:10.0.0.1<0>`` when NCCL fell back to TCP)
- ``Using network IB`` / ``Using network NCCL RDMA Plugin v6``
- ``comm 0x2725f60 rank 1 nRanks 4 nNodes 2 localRanks 2 localRank 1 MNNVL 0``
- ``NCCL_IB_QPS_PER_CONNECTION set by environment to 4.``
- ``Channel 01/1 : 1[0] -> 2[1] [send] via NET/IB/0/GDRDMA`` and ``... via P2P/CUMEM``
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.textscan import Problems, split_lines, strip_ansi, to_int

KIND = "nccl-log"

MAX_USING_CHARS = 4096
"""Of a ``NET/IB : Using`` line, the part read: 64 NICs take ~1,500 characters; the rest of a longer
line is not NCCL's (and reading it all would make one hostile line cost seconds)."""

_LINE = re.compile(
    r"^(?:\[[0-9: -]{8,32}\] )?([^\s:]{1,255}):([0-9]{1,10}):([0-9]{1,10}) \[([0-9]{1,6})\] NCCL "
    r"(INFO|WARN|TRACE|ERROR) ?(.*)$",
    re.ASCII,
)
_VERSION = re.compile(r"^NCCL version (\S{1,64})")
_NET_USING = re.compile(r"^NET/(IB|Socket) ?: Using (.*)$")
_NET_DEVICE = re.compile(r"^\[([0-9]{1,4})\]([^:\s\[\]]{1,64})(?::([0-9]{1,3}))?(?:/([A-Za-z]{1,16}))?")
_NETWORK = re.compile(r"^Using network (.{1,128})$")
_COMM = re.compile(
    r"^comm 0x[0-9a-f]{1,16} rank ([0-9]{1,10}) nRanks ([0-9]{1,10}) nNodes ([0-9]{1,10}) "
    r"localRanks ([0-9]{1,10})"
)
_ENV = re.compile(r"^(NCCL_[A-Z0-9_]{1,64}) set by environment to (.{0,200}?)\.?$")
_CHANNEL = re.compile(r"^Channel [0-9]{1,3}/[0-9]{1,3} : .{1,80} via (NET|P2P|SHM|NVLS|CollNet)(?:/|$)")
_INIT_DONE = re.compile(r"^ncclCommInitRank comm .{1,200} - Init COMPLETE$")


@dataclass(frozen=True, slots=True)
class NcclNetDevice:
    """One ``[i]name:port/linklayer`` entry of a ``NET/IB : Using`` line."""

    index: int
    name: str
    port: int | None
    link_layer: str
    """``RoCE`` or ``IB``; "" for a socket device."""


@dataclass(frozen=True, slots=True)
class NcclNet:
    """What NCCL on one host said it uses for the network (the first rank's line per host)."""

    host: str
    transport: str
    """``IB`` (RDMA: InfiniBand or RoCE) or ``Socket`` (TCP: no RDMA at all)."""
    devices: tuple[NcclNetDevice, ...]
    relaxed_ordering: bool
    """``[RO]``: PCIe relaxed ordering in use on the NICs' memory registrations."""


@dataclass(frozen=True, slots=True)
class NcclComm:
    """One rank's ``comm ... rank R nRanks N nNodes M localRanks L`` line."""

    host: str
    rank: int
    n_ranks: int
    n_nodes: int
    local_ranks: int


@dataclass(frozen=True, slots=True)
class NcclLog:
    version: str | None
    info_lines: int
    warnings: tuple[str, ...]
    """WARN and ERROR lines, whole."""
    nets: tuple[NcclNet, ...]
    networks: tuple[tuple[str, str], ...]
    """(host, ``Using network`` name), once per host."""
    comms: tuple[NcclComm, ...]
    env: tuple[tuple[str, str], ...]
    """``NCCL_*`` variables NCCL reported as set by the environment, each once, in order seen."""
    channels: tuple[tuple[str, int], ...]
    """Channel connections per transport (``NET``, ``P2P``, ``SHM`` ...), most first."""
    inits_complete: int
    other_lines: int
    """Lines that are not NCCL's (the test's own output)."""
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


MAX_PORT = 255
"""An IB port number is 8 bits (IBA Vol 1 14.2.5.6, ``fleet.collectors.parsers.values``)."""


def _devices(text: str) -> tuple[list[NcclNetDevice], bool]:
    """``[0]mlx5_0:1/RoCE [1]mlx5_1:1/RoCE [RO]; OOB ...`` -> the devices and whether ``[RO]`` is there;
    a port number past 8 bits is left out (None)."""
    head = text[:MAX_USING_CHARS].split(";", 1)[0]
    devices: list[NcclNetDevice] = []
    relaxed = False
    for word in head.split():
        if word == "[RO]":
            relaxed = True
        elif match := _NET_DEVICE.match(word):
            index = to_int(match.group(1))
            port = to_int(match.group(3)) if match.group(3) else None
            port = port if port is not None and port <= MAX_PORT else None
            if index is not None:
                devices.append(NcclNetDevice(index, match.group(2), port, match.group(4) or ""))
    return devices, relaxed


@parser
def parse_nccl_log(text: str) -> NcclLog:
    """NCCL's log lines in ``text`` (the contract of ``base``: never a ParseError, every value in range)."""
    problems = Problems()
    version: str | None = None
    info = other = inits = 0
    warnings: list[str] = []
    nets: dict[str, NcclNet] = {}
    networks: dict[str, str] = {}
    comms: list[NcclComm] = []
    env: dict[str, str] = {}
    channels: Counter[str] = Counter()
    for number, raw in enumerate(split_lines(text), start=1):
        line = strip_ansi(raw).strip()
        match = _LINE.match(line)
        if match is None:
            other += bool(line)
            continue
        host, level, message = match.group(1), match.group(5), match.group(6).strip()
        if level in ("WARN", "ERROR"):
            warnings.append(line[:500])
            continue
        info += 1
        if found := _VERSION.match(message):
            version = version or found.group(1)
        elif found := _NET_USING.match(message):
            devices, relaxed = _devices(found.group(2))
            if not devices and found.group(1) == "IB":
                problems.add(number, raw, "NET/IB line names no device")
            nets.setdefault(host, NcclNet(host, found.group(1), tuple(devices), relaxed))
        elif found := _NETWORK.match(message):
            networks.setdefault(host, found.group(1).strip())
        elif found := _COMM.match(message):
            rank, ranks, nodes, local = (to_int(found.group(g)) for g in (1, 2, 3, 4))
            if rank is None or ranks is None or nodes is None or local is None or rank >= ranks:
                problems.add(number, raw, "comm line with a rank outside its communicator; left out")
            else:
                comms.append(NcclComm(host, rank, ranks, nodes, local))
        elif found := _ENV.match(message):
            env.setdefault(found.group(1), found.group(2).strip())
        elif found := _CHANNEL.match(message):
            channels[found.group(1)] += 1
        elif _INIT_DONE.match(message):
            inits += 1
    return NcclLog(
        version=version, info_lines=info, warnings=tuple(warnings), nets=tuple(nets.values()),
        networks=tuple(networks.items()), comms=tuple(comms), env=tuple(env.items()),
        channels=tuple(channels.most_common()), inits_complete=inits, other_lines=other,
        problems=problems.result(), unknown_lines=problems.unknown_lines,
    )  # fmt: skip


__all__ = ["KIND", "NcclComm", "NcclLog", "NcclNet", "NcclNetDevice", "parse_nccl_log"]
