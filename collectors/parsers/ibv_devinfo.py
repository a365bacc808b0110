"""Parser for ``ibv_devinfo`` and ``ibv_devinfo -v`` (rdma-core / libibverbs).

One ``hca_id:`` block per device, tab-indented ``key: value`` lines, one
``port: N`` sub-block per port (older versions put a ``Device ports:`` line
before them). ``-v`` adds many device limits, multi-line flag lists (a value
followed by lines holding one flag each) and, per port, width/speed/phys_state
and the GID table. Everything that is not a named field is kept in
``attributes`` (flag lists joined with spaces, nested sections as
``section.key``), so a newer rdma-core loses nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.values import (
    LANE_RATE_GBPS,
    LID,
    LMC,
    PORT,
    U8,
    U32,
    Range,
    bits,
    int_in,
    is_digits,
    read_float,
    read_int,
)

# IBTA Vol 1 PortInfo NeighborMTU / MTUCap: 256, 512, 1024, 2048 or 4096 bytes.
_MTU_BYTES = Range(256, 4096, "an IB MTU in bytes")
_INT_FIELDS: dict[str, Range] = {
    "max_mtu": _MTU_BYTES,
    "active_mtu": _MTU_BYTES,
    "sm_lid": LID,
    "port_lid": LID,
    "port_lmc": LMC,
    "vendor_id": bits(24, "a 24-bit IEEE OUI"),
    "vendor_part_id": U32,
    "phys_port_cnt": U8,
}


@dataclass(frozen=True, slots=True)
class IbvPort:
    port: int
    state: str  # "PORT_ACTIVE"
    state_code: int | None  # 4
    max_mtu_bytes: int | None  # "4096 (5)" -> 4096
    active_mtu_bytes: int | None
    sm_lid: int | None
    port_lid: int | None
    port_lmc: int | None
    link_layer: str  # "InfiniBand" | "Ethernet"
    active_width: str  # -v only: "4X"
    active_speed_gbps: float | None  # -v only: per-lane speed, "25.0 Gbps (32)" -> 25.0
    rate_gbps: float | None  # lanes x per-lane speed, when -v printed both
    phys_state: str  # -v only: "LINK_UP"
    gids: tuple[str, ...]  # -v only, GID table in index order as printed (not in attributes)
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class IbvDevice:
    hca_id: str
    transport: str  # "InfiniBand (0)"
    fw_ver: str
    node_guid: str  # "4cbb:4703:002d:1a16"
    sys_image_guid: str
    vendor_id: int | None
    vendor_part_id: int | None  # 4129 = ConnectX-7
    hw_ver: str
    board_id: str
    phys_port_cnt: int | None
    ports: tuple[IbvPort, ...]
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class IbvDevinfoResult:
    devices: tuple[IbvDevice, ...]
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


_DEVICE_FIELDS = (
    "transport",
    "fw_ver",
    "node_guid",
    "sys_image_guid",
    "vendor_id",
    "vendor_part_id",
    "hw_ver",
    "board_id",
    "phys_port_cnt",
)
_PORT_FIELDS = frozenset(
    {
        "state",
        "max_mtu",
        "active_mtu",
        "sm_lid",
        "port_lid",
        "port_lmc",
        "link_layer",
        "active_width",
        "active_speed",
        "phys_state",
    }
)


def _coded(text: str) -> tuple[str, int | None]:
    """``"PORT_ACTIVE (4)"`` -> ``("PORT_ACTIVE", 4)``; the code is a C enum value (32-bit)."""
    body = text.rstrip()
    start = body.rfind("(")
    if not body.endswith(")") or start < 0:
        return text, None
    code = read_int(body[start + 1 : -1])
    if code is None or not -(2**31) <= code < 2**31:
        return text, None
    return body[:start].rstrip(), code


class _Block:
    """Fields of a device or a port while they are read."""

    __slots__ = ("fields", "gids", "indent", "last_key", "line", "section")

    def __init__(self, indent: int, line: int) -> None:
        self.fields: dict[str, str] = {}
        self.gids: list[str] = []
        self.indent = indent
        self.line = line
        self.last_key = ""
        self.section: tuple[str, int] | None = None  # (name, indent)


def _int_field(block: _Block, key: str, what: str, log: ProblemLog) -> int | None:
    text = block.fields.get(key)
    if text is None:
        return None
    return int_in(_coded(text)[0], _INT_FIELDS[key], log, block.line, f"{what}: {key}")


def _finish_port(number: int, block: _Block, what: str, log: ProblemLog) -> IbvPort:
    f = block.fields
    state, state_code = _coded(f.get("state", ""))
    width = _coded(f.get("active_width", ""))[0]
    speed_text = _coded(f.get("active_speed", ""))[0]
    speed = read_float(speed_text.split()[0]) if speed_text.split() else None
    speed = LANE_RATE_GBPS.check(speed, log, block.line, speed_text, f"{what}: active_speed")
    lanes = width.upper().rstrip("X")
    rate = int(lanes) * speed if speed is not None and is_digits(lanes) and int(lanes) <= 32 else None
    return IbvPort(
        port=number,
        state=state,
        state_code=state_code,
        max_mtu_bytes=_int_field(block, "max_mtu", what, log),
        active_mtu_bytes=_int_field(block, "active_mtu", what, log),
        sm_lid=_int_field(block, "sm_lid", what, log),
        port_lid=_int_field(block, "port_lid", what, log),
        port_lmc=_int_field(block, "port_lmc", what, log),
        link_layer=f.get("link_layer", ""),
        active_width=width,
        active_speed_gbps=speed,
        rate_gbps=rate,
        phys_state=_coded(f.get("phys_state", ""))[0],
        gids=tuple(block.gids),
        attributes={k: v for k, v in f.items() if k not in _PORT_FIELDS and not k.startswith("GID[")},
    )


class _Device:
    __slots__ = ("block", "hca_id", "ports")

    def __init__(self, hca_id: str, line: int) -> None:
        self.hca_id = hca_id
        self.block = _Block(-1, line)
        self.ports: list[tuple[int, _Block]] = []


def _finish_device(dev: _Device, log: ProblemLog) -> IbvDevice:
    f = dev.block.fields
    ports = tuple(
        _finish_port(n, b, f"{dev.hca_id} port {n}", log) for n, b in dev.ports
    )
    count = _int_field(dev.block, "phys_port_cnt", dev.hca_id, log)
    if count is not None and ports and count != len(ports):
        log.add(dev.block.line, dev.hca_id, f"{dev.hca_id}: phys_port_cnt {count} but {len(ports)} ports listed")
    return IbvDevice(
        hca_id=dev.hca_id,
        transport=f.get("transport", ""),
        fw_ver=f.get("fw_ver", ""),
        node_guid=f.get("node_guid", ""),
        sys_image_guid=f.get("sys_image_guid", ""),
        vendor_id=_int_field(dev.block, "vendor_id", dev.hca_id, log),
        vendor_part_id=_int_field(dev.block, "vendor_part_id", dev.hca_id, log),
        hw_ver=f.get("hw_ver", ""),
        board_id=f.get("board_id", ""),
        phys_port_cnt=count,
        ports=ports,
        attributes={k: v for k, v in f.items() if k not in _DEVICE_FIELDS},
    )


def _indent(line: str) -> int:
    expanded = line.expandtabs(8)
    return len(expanded) - len(expanded.lstrip())


def _store(block: _Block, key: str, value: str, indent: int, line_no: int, line: str, log: ProblemLog) -> None:
    if key.startswith("GID["):
        block.gids.append(value)
        block.fields[key] = value
        block.last_key = key
        return
    if block.section is not None and indent <= block.section[1]:
        block.section = None
    full = f"{block.section[0]}.{key}" if block.section is not None else key
    if not value:
        # "rss_caps:" opens a nested section; flag lists also start this way
        # ("general_odp_caps:" followed by one flag per line).
        block.section = (full, indent)
    if full in block.fields:
        log.add(line_no, line, f"repeated field {full!r}; last value kept")
    block.fields[full] = value
    block.last_key = full


@parser
def parse_ibv_devinfo(text: str) -> IbvDevinfoResult:
    """Parse ``ibv_devinfo`` with or without ``-v``; never raises."""
    log = ProblemLog()
    devices: list[IbvDevice] = []
    dev: _Device | None = None
    for line_no, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        key, sep, value = stripped.partition(":")
        key = key.strip()
        value = value.strip()
        if sep and key == "hca_id" and value:
            if dev is not None:
                devices.append(_finish_device(dev, log))
            dev = _Device(value, line_no)
            continue
        if dev is None:
            log.unknown(line_no, line, "line before the first hca_id")
            continue
        indent = _indent(line)
        if sep and key == "port":
            number = PORT.check(read_int(value), log, line_no, line, "port number")
            if number is not None:
                dev.ports.append((number, _Block(indent, line_no)))
                continue
        if sep and key == "Device ports" and not value:
            continue
        block = dev.ports[-1][1] if dev.ports and indent > dev.ports[-1][1].indent else dev.block
        if dev.ports and block is dev.block:
            # A device-level line after the ports: only sane when indentation is lost.
            log.add(line_no, line, "device field after the port blocks")
        if not sep or not key:
            # One flag of a multi-line flag list, or a line we cannot place.
            if block.last_key and " " not in stripped:
                prev = block.fields[block.last_key]
                block.fields[block.last_key] = f"{prev} {stripped}" if prev else stripped
            else:
                log.unknown(line_no, line)
            continue
        _store(block, key, value, indent, line_no, line, log)
    if dev is not None:
        devices.append(_finish_device(dev, log))
    return IbvDevinfoResult(tuple(devices), log.freeze(), log.unknown_lines)
