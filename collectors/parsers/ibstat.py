"""Parsers for ``ibstat`` and ``ibstatus`` (infiniband-diags).

``ibstat`` prints one ``CA 'name'`` block per HCA with indented ``Key: value``
lines and one ``Port N:`` sub-block per port; ``ibstatus`` prints one
``Infiniband device 'name' port N status:`` block per port with the kernel's
sysfs strings (``4: ACTIVE``, ``200 Gb/sec (4X HDR)``). Rates are in Gb/s as the
tools print them. Fields a newer version adds are kept in ``extra``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.ibfields import parse_rate, parse_state
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.values import (
    CAPABILITY_MASK,
    LID,
    LINK_RATE_GBPS,
    LMC,
    PORT,
    U8,
    Range,
    float_in,
    int_in,
    read_int,
)


@dataclass(frozen=True, slots=True)
class IbstatPort:
    port: int
    state: str  # "Active", "Down", "Initializing", ... as printed
    physical_state: str  # "LinkUp", "Disabled", "Polling", ...
    rate_gbps: float | None  # "Rate: 400" -> 400.0 (Gb/s)
    base_lid: int | None
    lmc: int | None
    sm_lid: int | None
    capability_mask: int | None
    port_guid: str  # "0x946dae0300cde72c"
    link_layer: str  # "InfiniBand" | "Ethernet"
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class IbstatDevice:
    name: str  # "mlx5_0"
    ca_type: str  # "MT4129"
    number_of_ports: int | None
    firmware_version: str
    hardware_version: str
    node_guid: str
    system_image_guid: str
    ports: tuple[IbstatPort, ...]
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class IbstatResult:
    devices: tuple[IbstatDevice, ...]
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


_DEVICE_KEYS = {
    "CA type": "ca_type",
    "Number of ports": "number_of_ports",
    "Firmware version": "firmware_version",
    "Hardware version": "hardware_version",
    "Node GUID": "node_guid",
    "System image GUID": "system_image_guid",
}
_PORT_KEYS = {
    "State": "state",
    "Physical state": "physical_state",
    "Rate": "rate_gbps",
    "Base lid": "base_lid",
    "LMC": "lmc",
    "SM lid": "sm_lid",
    "Capability mask": "capability_mask",
    "Port GUID": "port_guid",
    "Link layer": "link_layer",
}
_PORT_INT_FIELDS: dict[str, Range] = {
    "base_lid": LID,
    "lmc": LMC,
    "sm_lid": LID,
    "capability_mask": CAPABILITY_MASK,
}


def _indent(line: str) -> int:
    """Indentation width with tabs counted as 8 columns."""
    return len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())


def _build_port(number: int, raw: dict[str, str], log: ProblemLog, line_no: int) -> IbstatPort:
    values: dict[str, str] = {}
    extra: dict[str, str] = {}
    for key, value in raw.items():
        attr = _PORT_KEYS.get(key)
        if attr is None:
            extra[key] = value
        else:
            values[attr] = value
    ints: dict[str, int | None] = {}
    for attr, where in _PORT_INT_FIELDS.items():
        text = values.get(attr)
        ints[attr] = None if text is None else int_in(text, where, log, line_no, f"port {number}: {attr}")
    rate_text = values.get("rate_gbps")
    rate = None if rate_text is None else float_in(rate_text, LINK_RATE_GBPS, log, line_no, f"port {number}: rate")
    return IbstatPort(
        port=number,
        state=values.get("state", ""),
        physical_state=values.get("physical_state", ""),
        rate_gbps=rate,
        base_lid=ints["base_lid"],
        lmc=ints["lmc"],
        sm_lid=ints["sm_lid"],
        capability_mask=ints["capability_mask"],
        port_guid=values.get("port_guid", ""),
        link_layer=values.get("link_layer", ""),
        extra=extra,
    )


class _Device:
    __slots__ = ("fields", "name", "port_indent", "ports")

    def __init__(self, name: str) -> None:
        self.name = name
        self.fields: dict[str, str] = {}
        self.ports: list[tuple[int, dict[str, str], int]] = []  # number, fields, line
        self.port_indent = -1


def _finish_device(dev: _Device, log: ProblemLog) -> IbstatDevice:
    extra = {k: v for k, v in dev.fields.items() if k not in _DEVICE_KEYS}
    known = {_DEVICE_KEYS[k]: v for k, v in dev.fields.items() if k in _DEVICE_KEYS}
    nports_text = known.get("number_of_ports")
    nports = None if nports_text is None else int_in(nports_text, U8, log, 0, f"CA '{dev.name}': number of ports")
    ports = tuple(_build_port(n, raw, log, line_no) for n, raw, line_no in dev.ports)
    if nports is not None and ports and nports != len(ports):
        log.add(0, dev.name, f"CA '{dev.name}' says {nports} ports but lists {len(ports)}")
    return IbstatDevice(
        name=dev.name,
        ca_type=known.get("ca_type", ""),
        number_of_ports=nports,
        firmware_version=known.get("firmware_version", ""),
        hardware_version=known.get("hardware_version", ""),
        node_guid=known.get("node_guid", ""),
        system_image_guid=known.get("system_image_guid", ""),
        ports=ports,
        extra=extra,
    )


@parser
def parse_ibstat(text: str) -> IbstatResult:
    """Parse ``ibstat`` (all CAs or one); never raises."""
    log = ProblemLog()
    devices: list[IbstatDevice] = []
    dev: _Device | None = None
    for line_no, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("CA '") and stripped.endswith("'") and len(stripped) > 5:
            if dev is not None:
                devices.append(_finish_device(dev, log))
            dev = _Device(stripped[4:-1])
            continue
        if dev is None:
            log.unknown(line_no, line, "line before the first CA '...' header")
            continue
        if stripped.startswith("Port ") and stripped.endswith(":"):
            number = PORT.check(read_int(stripped[5:-1]), log, line_no, line, "port number")
            if number is not None:
                dev.ports.append((number, {}, line_no))
                dev.port_indent = _indent(line)
                continue
        key, sep, value = stripped.partition(":")
        if not sep or not key or key != key.strip():
            log.unknown(line_no, line)
            continue
        value = value.strip()
        if dev.ports and _indent(line) > dev.port_indent:
            port_fields = dev.ports[-1][1]
            if key in port_fields:
                log.add(line_no, line, f"repeated field {key!r}; last value kept")
            port_fields[key] = value
        else:
            if key in dev.fields:
                log.add(line_no, line, f"repeated field {key!r}; last value kept")
            dev.fields[key] = value
    if dev is not None:
        devices.append(_finish_device(dev, log))
    return IbstatResult(tuple(devices), log.freeze(), log.unknown_lines)


@dataclass(frozen=True, slots=True)
class IbstatusPort:
    device: str
    port: int
    default_gid: str  # "fe80:0000:...", or "unknown" as printed
    base_lid: int | None  # printed in hex ("0x33bf")
    sm_lid: int | None
    state: str  # "ACTIVE"
    state_code: int | None  # 4
    phys_state: str  # "LinkUp"
    phys_state_code: int | None  # 5
    rate_gbps: float | None  # "200 Gb/sec (4X HDR)" -> 200.0
    width: str  # "4X"
    speed: str  # "HDR"
    link_layer: str
    extra: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class IbstatusResult:
    ports: tuple[IbstatusPort, ...]
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


_IBSTATUS_HEADER = "Infiniband device '"
_IBSTATUS_KEYS = frozenset(
    {"default gid", "base lid", "sm lid", "state", "phys state", "rate", "link_layer"}
)


def _finish_status(device: str, port: int, raw: dict[str, str], line_no: int, log: ProblemLog) -> IbstatusPort:
    def lid(key: str) -> int | None:
        text = raw.get(key)
        return None if text is None else int_in(text, LID, log, line_no, f"{device}/{port}: {key}")

    state_code, state = parse_state(raw.get("state", ""))
    phys_code, phys = parse_state(raw.get("phys state", ""))
    rate_text = raw.get("rate", "")
    rate = parse_rate(rate_text)
    if rate_text and rate.rate_gbps is None:
        log.add(line_no, rate_text, f"{device}/{port}: rate not understood, or no link has it")
    return IbstatusPort(
        device=device,
        port=port,
        default_gid=raw.get("default gid", ""),
        base_lid=lid("base lid"),
        sm_lid=lid("sm lid"),
        state=state,
        state_code=state_code,
        phys_state=phys,
        phys_state_code=phys_code,
        rate_gbps=rate.rate_gbps,
        width=rate.width,
        speed=rate.speed,
        link_layer=raw.get("link_layer", ""),
        extra={k: v for k, v in raw.items() if k not in _IBSTATUS_KEYS},
    )


@parser
def parse_ibstatus(text: str) -> IbstatusResult:
    """Parse ``ibstatus`` (one block per device port); never raises."""
    log = ProblemLog()
    ports: list[IbstatusPort] = []
    current: tuple[str, int, dict[str, str], int] | None = None
    for line_no, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith(_IBSTATUS_HEADER) and stripped.endswith(" status:"):
            name, _, rest = stripped[len(_IBSTATUS_HEADER) :].partition("'")
            number = PORT.check(
                read_int(rest.strip().removeprefix("port").removesuffix("status:")), log, line_no, line, "port number"
            )
            if name and number is not None:
                if current is not None:
                    ports.append(_finish_status(*current[:3], current[3], log))
                current = (name, number, {}, line_no)
                continue
        if current is None:
            log.unknown(line_no, line, "line before the first \"Infiniband device\" header")
            continue
        key, sep, value = stripped.partition(":")
        if not sep or not key:
            log.unknown(line_no, line)
            continue
        current[2][key.strip()] = value.strip()
    if current is not None:
        ports.append(_finish_status(*current[:3], current[3], log))
    return IbstatusResult(tuple(ports), log.freeze(), log.unknown_lines)
