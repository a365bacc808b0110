"""Parser for lldpd's ``lldpcli``/``lldpctl``: neighbours (JSON and text) and statistics.

JSON (``lldpcli -f json show neighbors``): lldpd collapses every one-element
list into the element itself, so ``interface`` (and ``capability``,
``mgmt-ip`` ...) may be an object or a list, and the chassis object is keyed
by the system name when there is one. ``-f json0`` keeps every list, with
scalars as ``[{"value": ...}]``. Both are read into the same records.
Text (``lldpcli show neighbors``): ``Interface:`` blocks with ``Chassis:`` /
``Port:`` sections; ``lldpcli show statistics`` blocks become
:class:`LldpInterfaceStats`. The TTL is in seconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from fleet.collectors.parsers.base import ParseError, ParseProblem, parser
from fleet.collectors.parsers.jsontext import load_json
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.values import LLDP_TTL_S, U32, U64, Range, int_in

_STAT_KEYS = {
    "Transmitted": "transmitted",
    "Received": "received",
    "Discarded": "discarded",
    "Unrecognized": "unrecognized",
    "Ageout": "ageout",
    "Inserted": "inserted",
    "Deleted": "deleted",
}


@dataclass(frozen=True, slots=True)
class LldpNeighbor:
    local_interface: str  # our interface: "net1", "eth0"
    via: str  # "LLDP" (lldpd also speaks CDP, EDP, ...)
    rid: int | None  # lldpd's remote index
    age: str  # "0 day, 01:22:55" as printed
    chassis_id_type: str  # "mac", "ip", "local", ...
    chassis_id: str  # "9c:63:c0:3a:23:f0"
    chassis_name: str  # SysName: the switch, "" when not advertised
    chassis_descr: str
    mgmt_ips: tuple[str, ...]
    capabilities: dict[str, bool]  # "Bridge": True (enabled)
    port_id_type: str  # "ifname", "mac", "local"
    port_id: str  # "swp4s1"
    port_descr: str
    ttl_s: int | None  # seconds
    unknown_tlvs: tuple[str, ...] = ()  # as printed (text) or JSON-encoded
    extra: dict[str, str] = field(default_factory=dict)  # VLAN, LLDP-MED, dot3 ...


@dataclass(frozen=True, slots=True)
class LldpInterfaceStats:
    interface: str
    transmitted: int | None
    received: int | None
    discarded: int | None
    unrecognized: int | None  # TLVs lldpd did not decode (e.g. DCBX)
    ageout: int | None
    inserted: int | None
    deleted: int | None


@dataclass(frozen=True, slots=True)
class LldpResult:
    neighbors: tuple[LldpNeighbor, ...]
    statistics: tuple[LldpInterfaceStats, ...]
    layout: str  # "json", "json0", "text" or "" (nothing recognised)
    problems: tuple[ParseProblem, ...]
    unknown_lines: int

    def by_interface(self) -> dict[str, tuple[LldpNeighbor, ...]]:
        """Neighbours per local interface (an interface may have several)."""
        out: dict[str, list[LldpNeighbor]] = {}
        for n in self.neighbors:
            out.setdefault(n.local_interface, []).append(n)
        return {k: tuple(v) for k, v in out.items()}


# ---------------------------------------------------------------- JSON


def _many(x: Any) -> list[Any]:
    """lldpd collapses one-element lists: accept both shapes."""
    if x is None:
        return []
    return x if isinstance(x, list) else [x]


def _text(x: Any) -> str:
    """A scalar from either JSON flavour: "v", {"value": "v"}, [{"value": "v"}]."""
    if isinstance(x, list):
        x = x[0] if x else ""
    if isinstance(x, dict):
        x = x.get("value", "")
    return "" if x is None else str(x)


def _typed(x: Any) -> tuple[str, str]:
    """An id: {"type": "mac", "value": "..."} (possibly inside a one-element list)."""
    if isinstance(x, list):
        x = x[0] if x else {}
    if isinstance(x, dict):
        return str(x.get("type", "")), str(x.get("value", ""))
    return "", "" if x is None else str(x)


_KNOWN_IFACE_KEYS = frozenset({"name", "via", "rid", "age", "chassis", "port", "ttl", "unknown-tlvs"})


def _chassis(raw: Any) -> tuple[str, dict[str, Any]]:
    """(system name, chassis fields) from the collapsed or the json0 shape."""
    obj = raw[0] if isinstance(raw, list) and raw else raw
    if not isinstance(obj, dict):
        return "", {}
    if "id" in obj or "name" in obj:
        return _text(obj.get("name")), obj
    if len(obj) == 1:
        name, inner = next(iter(obj.items()))
        return str(name), inner if isinstance(inner, dict) else {}
    return "", obj


def _number(text: str, where: Range, log: ProblemLog, line_no: int, name: str) -> int | None:
    """An integer field (RID, TTL, a statistic) in its range; None (and a problem) otherwise."""
    return int_in(text, where, log, line_no, name) if text.strip() else None


def _interface_line(rest: str) -> tuple[str, str, str, str] | None:
    """``"eth0, via: LLDP, RID: 1, Time: 0 day, 01:22:55"`` (after ``Interface:``) ->
    (name, via, rid, time); each part after the name is optional, in this order."""
    parts = rest.split(",")
    name = parts[0].strip()
    if not name:
        return None
    via = rid = time = ""
    for index, part in enumerate(parts[1:], start=1):
        key, sep, value = part.strip().partition(":")
        if not sep:
            return None
        if key == "Time":
            time = ",".join([value, *parts[index + 1 :]]).strip()
            break
        if key == "via" and not via and not rid and value.strip():
            via = value.strip()
        elif key == "RID" and not rid and value.strip():
            rid = value.strip()
        else:
            return None
    return name, via, rid, time


def _neighbor_from_json(ifname: str, d: dict[str, Any], log: ProblemLog) -> LldpNeighbor:
    name, ch = _chassis(d.get("chassis"))
    port_raw = d.get("port")
    port = port_raw[0] if isinstance(port_raw, list) and port_raw else port_raw
    port = port if isinstance(port, dict) else {}
    ttl_raw = port.get("ttl", d.get("ttl"))
    if isinstance(ttl_raw, dict | list):
        first = ttl_raw[0] if isinstance(ttl_raw, list) and ttl_raw else ttl_raw
        ttl_raw = first.get("ttl", first.get("value")) if isinstance(first, dict) else first
    caps: dict[str, bool] = {}
    for cap in _many(ch.get("capability")):
        if isinstance(cap, dict) and "type" in cap:
            caps[str(cap["type"])] = bool(cap.get("enabled"))
    id_type, id_value = _typed(ch.get("id"))
    port_type, port_value = _typed(port.get("id"))
    return LldpNeighbor(
        local_interface=ifname,
        via=_text(d.get("via")),
        rid=_number(_text(d.get("rid")), U32, log, 0, f"{ifname}: RID"),
        age=_text(d.get("age")),
        chassis_id_type=id_type,
        chassis_id=id_value,
        chassis_name=name,
        chassis_descr=_text(ch.get("descr")),
        mgmt_ips=tuple(_text(ip) for ip in _many(ch.get("mgmt-ip"))),
        capabilities=caps,
        port_id_type=port_type,
        port_id=port_value,
        port_descr=_text(port.get("descr")),
        ttl_s=_number(str(ttl_raw), LLDP_TTL_S, log, 0, f"{ifname}: TTL") if ttl_raw is not None else None,
        unknown_tlvs=tuple(json.dumps(t) for t in _many(d.get("unknown-tlvs"))),
        extra={k: json.dumps(v) for k, v in d.items() if k not in _KNOWN_IFACE_KEYS},
    )


def _parse_json(doc: Any, log: ProblemLog) -> tuple[list[LldpNeighbor], str]:
    if not isinstance(doc, dict) or "lldp" not in doc:
        log.unknown(0, "", "JSON without an 'lldp' object")
        return [], ""
    top = doc["lldp"]
    layout = "json0" if isinstance(top, list) else "json"
    neighbors: list[LldpNeighbor] = []
    for block in _many(top):
        if not isinstance(block, dict):
            log.unknown(0, str(block), "'lldp' entry is not an object")
            continue
        for entry in _many(block.get("interface")):
            if not isinstance(entry, dict):
                log.unknown(0, str(entry), "'interface' entry is not an object")
            elif "name" in entry and isinstance(entry.get("chassis", []), list):
                neighbors.append(_neighbor_from_json(_text(entry["name"]), entry, log))  # json0
            else:
                for ifname, body in entry.items():
                    if isinstance(body, dict):
                        neighbors.append(_neighbor_from_json(str(ifname), body, log))
                    else:
                        log.unknown(0, str(ifname), "interface body is not an object")
    return neighbors, layout


# ---------------------------------------------------------------- text


class _TextNeighbor:
    __slots__ = ("age", "caps", "chassis", "extra", "ifname", "mgmt", "port", "rid", "tlvs", "ttl", "via")

    def __init__(self, ifname: str, via: str, rid: int | None, age: str) -> None:
        self.ifname, self.via, self.rid, self.age = ifname, via, rid, age
        self.chassis: dict[str, str] = {}
        self.port: dict[str, str] = {}
        self.mgmt: list[str] = []
        self.caps: dict[str, bool] = {}
        self.tlvs: list[str] = []
        self.extra: dict[str, str] = {}
        self.ttl: int | None = None

    def freeze(self) -> LldpNeighbor:
        id_type, _, id_value = self.chassis.get("ChassisID", "").partition(" ")
        port_type, _, port_value = self.port.get("PortID", "").partition(" ")
        return LldpNeighbor(
            local_interface=self.ifname,
            via=self.via,
            rid=self.rid,
            age=self.age,
            chassis_id_type=id_type,
            chassis_id=id_value.strip(),
            chassis_name=self.chassis.get("SysName", ""),
            chassis_descr=self.chassis.get("SysDescr", ""),
            mgmt_ips=tuple(self.mgmt),
            capabilities=self.caps,
            port_id_type=port_type,
            port_id=port_value.strip(),
            port_descr=self.port.get("PortDescr", ""),
            ttl_s=self.ttl,
            unknown_tlvs=tuple(self.tlvs),
            extra=self.extra,
        )


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _parse_text(text: str, log: ProblemLog) -> tuple[list[LldpNeighbor], list[LldpInterfaceStats]]:
    neighbors: list[LldpNeighbor] = []
    stats: list[LldpInterfaceStats] = []
    mode = "neighbors"
    current: _TextNeighbor | None = None
    stat: dict[str, int | None] | None = None
    stat_if = ""
    section = ""
    last: tuple[dict[str, str], str] | None = None

    def close() -> None:
        nonlocal current, stat
        if current is not None:
            neighbors.append(current.freeze())
        if stat is not None:
            stats.append(LldpInterfaceStats(stat_if, **{v: stat.get(v) for v in _STAT_KEYS.values()}))
        current, stat = None, None

    for line_no, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("---"):
            continue
        if stripped in ("LLDP neighbors:", "LLDP interfaces:", "LLDP statistics:"):
            close()
            mode = "statistics" if stripped == "LLDP statistics:" else "neighbors"
            continue
        indent = _indent(line)
        if indent == 0 and stripped.startswith("Interface:"):
            close()
            fields = _interface_line(stripped[len("Interface:") :])
            if fields is None:
                log.unknown(line_no, line)
                continue
            name, via, rid, time = fields
            if mode == "statistics":
                stat, stat_if = {}, name
            else:
                current = _TextNeighbor(name, via, _number(rid, U32, log, line_no, "RID"), time)
            section, last = "", None
            continue
        key, sep, value = stripped.partition(":")
        value = value.strip()
        if stat is not None:
            attr = _STAT_KEYS.get(key)
            if sep and attr is not None:
                stat[attr] = _number(value, U64, log, line_no, f"{stat_if}: {key}")
                continue
            log.unknown(line_no, line)
            continue
        if current is None:
            log.unknown(line_no, line, "line outside any 'Interface:' block")
            continue
        if last is not None and indent >= 14:
            # Wrapped continuation of a long value (SysDescr and the like).
            last[0][last[1]] = f"{last[0][last[1]]} {stripped}"
            continue
        if not sep or not key:
            log.unknown(line_no, line)
            continue
        if indent <= 2 and not value:
            section, last = key, None
            continue
        if key == "TTL":
            current.ttl = _number(value, LLDP_TTL_S, log, line_no, "TTL")
        elif section == "Chassis" and key == "MgmtIP":
            current.mgmt.append(value)
        elif section == "Chassis" and key == "Capability":
            cap, _, state = value.partition(",")
            current.caps[cap.strip()] = state.strip() == "on"
        elif section == "Chassis" and key in ("ChassisID", "SysName", "SysDescr"):
            current.chassis[key] = value
            last = (current.chassis, key)
            continue
        elif section == "Port" and key in ("PortID", "PortDescr"):
            current.port[key] = value
            last = (current.port, key)
            continue
        elif section == "Unknown TLVs" and key == "TLV":
            current.tlvs.append(value)
        else:
            name = f"{section}.{key}" if section and indent > 2 else key
            prev = current.extra.get(name)
            current.extra[name] = value if prev is None else f"{prev}; {value}"
            last = (current.extra, name)
            continue
        last = None
    close()
    return neighbors, stats


@parser
def parse_lldp(text: str) -> LldpResult:
    """Parse lldpcli/lldpctl neighbours (json, json0 or text) or statistics.

    Raises ParseError for JSON nested deeper than any lldpd output (``jsontext``).
    """
    log = ProblemLog()
    if text.lstrip()[:1] == "{":
        try:
            doc = load_json(text, "lldpctl -f json")
        except ParseError:
            raise
        except ValueError as err:
            log.unknown(getattr(err, "lineno", 0), "", f"invalid JSON: {err}")
            return LldpResult((), (), "", log.freeze(), log.unknown_lines)
        neighbors, layout = _parse_json(doc, log)
        return LldpResult(tuple(neighbors), (), layout, log.freeze(), log.unknown_lines)
    neighbors_t, stats = _parse_text(text, log)
    layout = "text" if neighbors_t or stats else ""
    return LldpResult(tuple(neighbors_t), tuple(stats), layout, log.freeze(), log.unknown_lines)
