"""lldpd's ``lldpctl`` / ``lldpcli show neighbors`` on a simulated node or switch.

No real ``lldpctl -f json`` capture was found (tests/fixtures/SOURCES.md, "Not
found"), so the JSON layout is taken from lldpd itself: the expected documents
in lldpd's tests/integration/test_lldpcli.py (``test_json_output``): per
interface ``via``, ``rid``, ``age``, a ``chassis`` object keyed by the system
name holding ``id`` {type, value}, ``descr``, ``mgmt-ip`` and a ``capability``
list of {type, enabled}, and a ``port`` object with ``id``, ``descr`` and
``ttl``; values are strings except ``enabled``. lldpd's JSON writer turns a
repeated key into a list, so ``interface`` is an object with one interface and
a list of one-key objects with several. The text layout follows the real
capture tests/fixtures/topology/schmaustech-lldpcli-show-nei-sn5600-*.txt
(``%-13s`` labels, the 79-dash separators, trailing blanks after "Chassis:").

Only Ethernet ports speak LLDP; an InfiniBand NIC has no neighbour here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import orjson

from fleet.simulator.state import LldpNeighbor, NicView, NodeView, SwitchView
from fleet.simulator.tools import LazyNode, ToolContext, ToolOutput, register

SEPARATOR = "-" * 79
# lldpd's default tx-interval 30 s times tx-hold 4.
TTL_S = 120


@dataclass(frozen=True, slots=True)
class _Entry:
    """One neighbour as lldpd reports it on one local interface."""

    interface: str
    rid: int
    age_s: int
    name: str
    chassis_mac: str
    descr: str
    mgmt_ip: str
    capabilities: tuple[tuple[str, bool], ...]
    port_id_type: str  # "ifname" | "mac"
    port_id: str
    port_descr: str


Capabilities = tuple[tuple[str, bool], ...]
_SWITCH_CAPS: Capabilities = (("Bridge", True), ("Router", True))
_HOST_CAPS: Capabilities = (
    ("Bridge", False),
    ("Router", False),
    ("Wlan", False),
    ("Station", True),
)


def _age_text(seconds: int) -> str:
    """lldpd's "%d day%s, %02d:%02d:%02d" (plural only past one day)."""
    days, rest = divmod(max(seconds, 0), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{days} day{'s' if days > 1 else ''}, {hours:02d}:{minutes:02d}:{secs:02d}"


def _neighbour_age_s(ctx: ToolContext) -> int:
    """Seconds since the neighbour was learned.

    The views carry no learn time; lldpd learns a neighbour when the link comes
    up, which the simulated fleet does at the start of its (UTC) day.
    """
    return int(ctx.now) % 86400


# Switch ports as the switch OSes name them (NVUE "swp1", breakouts "swp4s1"; SONiC "Ethernet0").
_SWITCH_PORT = re.compile(r"swp\d+(s\d+)?|Ethernet\d+")


def _host_port(neighbor: LldpNeighbor) -> tuple[str, str, str] | None:
    """(port id type, port id, descr) when the neighbour is a host running lldpd, else None.

    A neighbour whose port is not a switch port is a Linux host: lldpd there
    announces the interface MAC as port ID (the neighbour's MAC) and its name as
    description.
    """
    if _SWITCH_PORT.fullmatch(neighbor.switch_port):
        return None
    return "mac", neighbor.chassis_mac, neighbor.port_descr or neighbor.switch_port


def _entries_for(ctx: ToolContext, links: list[tuple[str, LldpNeighbor]]) -> list[_Entry]:
    rids: dict[str, int] = {}
    entries: list[_Entry] = []
    age = _neighbour_age_s(ctx)
    for interface, neighbor in links:
        rid = rids.setdefault(neighbor.switch, len(rids) + 1)
        host = _host_port(neighbor)
        caps: Capabilities
        if host is not None:
            id_type, port_id, descr = host
            caps = _HOST_CAPS
        else:
            id_type, port_id = "ifname", neighbor.switch_port
            descr = neighbor.port_descr or neighbor.switch_port
            caps = _SWITCH_CAPS
        entries.append(
            _Entry(
                interface=interface,
                rid=rid,
                age_s=age,
                name=neighbor.switch,
                chassis_mac=neighbor.chassis_mac,
                descr=neighbor.system_descr,
                mgmt_ip=neighbor.mgmt_ip,
                capabilities=caps,
                port_id_type=id_type,
                port_id=port_id,
                port_descr=descr,
            )
        )
    return entries


def _hears_lldp(nic: NicView) -> bool:
    """lldpd on a node runs on its Ethernet interfaces, and hears a neighbour only while the link is up."""
    return nic.link_layer == "Ethernet" and nic.phys_state == "LinkUp"


def _node_links(node: NodeView) -> list[tuple[str, LldpNeighbor]]:
    return [(nic.netdev, nic.lldp) for nic in node.nics if nic.lldp is not None and _hears_lldp(nic)]


def _part_links(parts: LazyNode) -> list[tuple[str, LldpNeighbor]]:
    """``_node_links`` from the node's parts: no counters, optics or QPs are computed for LLDP."""
    links = []
    for rail in parts.rails:
        head = parts.nic_head(rail)
        if _hears_lldp(head):
            neighbor = parts.lldp(rail)
            if neighbor is not None:
                links.append((head.netdev, neighbor))
    return links


def _switch_links(switch: SwitchView) -> list[tuple[str, LldpNeighbor]]:
    return [
        (port.name, port.lldp) for port in switch.ports if port.lldp is not None and port.oper_up
    ]


def neighbour_entries(ctx: ToolContext) -> list[_Entry]:
    """Every LLDP neighbour of the machine the command runs on, in interface order."""
    if ctx.parts is not None:
        return _entries_for(ctx, _part_links(ctx.parts))
    if ctx.node is not None:
        return _entries_for(ctx, _node_links(ctx.node))
    if ctx.switch is not None:
        return _entries_for(ctx, _switch_links(ctx.switch))
    return []


def _interface_json(entry: _Entry) -> dict[str, object]:
    chassis: dict[str, object] = {"id": {"type": "mac", "value": entry.chassis_mac}}
    if entry.descr:
        chassis["descr"] = entry.descr
    if entry.mgmt_ip:
        chassis["mgmt-ip"] = entry.mgmt_ip
    chassis["capability"] = [{"type": kind, "enabled": on} for kind, on in entry.capabilities]
    return {
        "via": "LLDP",
        "rid": str(entry.rid),
        "age": _age_text(entry.age_s),
        "chassis": {entry.name: chassis},
        "port": {
            "id": {"type": entry.port_id_type, "value": entry.port_id},
            "descr": entry.port_descr,
            "ttl": str(TTL_S),
        },
    }


def _indented(document: dict[str, object]) -> str:
    """lldpd's JSON layout: two-space indent, ``": "`` after keys (what ``json.dumps(indent=2)`` prints,
    at C speed: every node's checks ask for it)."""
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n"


def render_json(entries: list[_Entry]) -> str:
    """``lldpctl -f json``: two-space indent; ``interface`` is a list once there are several."""
    if not entries:
        return _indented({"lldp": {}})
    interfaces: object
    if len(entries) == 1:
        interfaces = {entries[0].interface: _interface_json(entries[0])}
    else:
        interfaces = [{e.interface: _interface_json(e)} for e in entries]
    return _indented({"lldp": {"interface": interfaces}})


def _label(indent: int, label: str, value: str = "") -> str:
    """lldpd's text writer: ``%-13s`` label, then " value" when there is one."""
    text = " " * indent + f"{label + ':':<13}"
    if indent == 0:
        text += " "
        return text + value
    return text + (f" {value}" if value else "")


def render_text(entries: list[_Entry]) -> str:
    """``lldpcli show neighbors`` (plain)."""
    lines = [SEPARATOR, "LLDP neighbors:", SEPARATOR]
    for e in entries:
        lines.append(
            _label(
                0,
                "Interface",
                f"{e.interface}, via: LLDP, RID: {e.rid}, Time: {_age_text(e.age_s)}",
            )
        )
        lines.append(_label(2, "Chassis"))
        lines.append(_label(4, "ChassisID", f"mac {e.chassis_mac}"))
        lines.append(_label(4, "SysName", e.name))
        if e.descr:
            lines.append(_label(4, "SysDescr", e.descr))
        if e.mgmt_ip:
            lines.append(_label(4, "MgmtIP", e.mgmt_ip))
        lines += [
            _label(4, "Capability", f"{kind}, {'on' if on else 'off'}")
            for kind, on in e.capabilities
        ]
        lines.append(_label(2, "Port"))
        lines.append(_label(4, "PortID", f"{e.port_id_type} {e.port_id}"))
        lines.append(_label(4, "PortDescr", e.port_descr))
        lines.append(_label(4, "TTL", str(TTL_S)))
        lines.append(SEPARATOR)
    return "".join(line + "\n" for line in lines)


def render_keyvalue(entries: list[_Entry]) -> str:
    """``-f keyvalue``: ``lldp.<if>.<path>=value`` lines, as lldpd's kv writer flattens the tree."""
    lines: list[str] = []
    for e in entries:
        base = f"lldp.{e.interface}"
        lines += [
            f"{base}.via=LLDP",
            f"{base}.rid={e.rid}",
            f"{base}.age={_age_text(e.age_s)}",
            f"{base}.chassis.mac={e.chassis_mac}",
            f"{base}.chassis.name={e.name}",
        ]
        if e.descr:
            lines.append(f"{base}.chassis.descr={e.descr}")
        if e.mgmt_ip:
            lines.append(f"{base}.chassis.mgmt-ip={e.mgmt_ip}")
        lines += [
            f"{base}.chassis.{kind}.enabled={'on' if on else 'off'}" for kind, on in e.capabilities
        ]
        lines += [
            f"{base}.port.{e.port_id_type}={e.port_id}",
            f"{base}.port.descr={e.port_descr}",
            f"{base}.port.ttl={TTL_S}",
        ]
    return "".join(line + "\n" for line in lines)


@dataclass(frozen=True, slots=True)
class _Stats:
    """lldpd's per-interface counters (``lldpcli show statistics``)."""

    interface: str
    transmitted: int
    received: int
    inserted: int

    def fields(self) -> tuple[tuple[str, str, int], ...]:
        """(text label, JSON key, value) in lldpd's order; discards, unknown TLVs and ageouts stay 0."""
        return (
            ("Transmitted", "tx", self.transmitted),
            ("Received", "rx", self.received),
            ("Discarded", "rx_discarded_cnt", 0),
            ("Unrecognized", "rx_unrecognized_cnt", 0),
            ("Ageout", "ageout_cnt", 0),
            ("Inserted", "insert_cnt", self.inserted),
            ("Deleted", "delete_cnt", 0),
        )


def interface_stats(ctx: ToolContext) -> list[_Stats]:
    """Counters of every LLDP interface: one frame per tx-interval (30 s) each way since the link came up."""
    frames = 1 + _neighbour_age_s(ctx) // 30
    if ctx.node is not None:
        interfaces = [
            (n.netdev, n.lldp is not None and n.phys_state == "LinkUp")
            for n in ctx.node.nics
            if n.link_layer == "Ethernet"
        ]
    elif ctx.switch is not None:
        interfaces = [(p.name, p.lldp is not None and p.oper_up) for p in ctx.switch.ports]
    else:
        interfaces = []
    return [_Stats(name, frames, frames if up else 0, 1 if up else 0) for name, up in interfaces]


def render_stats_text(stats: list[_Stats]) -> str:
    """``lldpcli show statistics`` as tests/fixtures/topology/schmaustech-lldpcli-show-stat-*.txt."""
    lines = [SEPARATOR, "LLDP statistics:", SEPARATOR]
    for s in stats:
        lines.append(_label(0, "Interface", s.interface))
        lines += [_label(2, label, str(value)) for label, _, value in s.fields()]
        lines.append(SEPARATOR)
    return "".join(line + "\n" for line in lines)


def render_stats_json(stats: list[_Stats]) -> str:
    """``-f json show statistics``: each counter an object keyed by its own name (lldpd's writer)."""
    if not stats:
        return _indented({"lldp": {}})
    objects = [
        {s.interface: {key: {key: str(value)} for _, key, value in s.fields()}} for s in stats
    ]
    interfaces: object = objects[0] if len(objects) == 1 else objects
    return _indented({"lldp": {"interface": interfaces}})


_RENDERERS = {"plain": render_text, "json": render_json, "keyvalue": render_keyvalue}


@register("lldpctl", "lldpcli")
def lldpctl(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``lldpctl [-f FMT] [IFACE...]``, ``lldpcli [-f FMT] show neighbors [details] [ports IF]``
    and ``lldpcli [-f FMT] show statistics``."""
    if ctx.parts is None and ctx.node is None and ctx.switch is None:  # parts: no whole view built to ask
        return ToolOutput("", f"sh: 1: {argv[0]}: not found\n", 127)
    fmt = "plain"
    words: list[str] = []
    args = argv[1:]
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-f" and i + 1 < len(args):
            fmt = args[i + 1]
            i += 2
            continue
        if arg.startswith("-f") and len(arg) > 2:
            fmt = arg[2:]
        elif arg.startswith("-"):
            return ToolOutput("", f"{argv[0]}: invalid option -- '{arg[1:2]}'\n", 1)
        else:
            words.append(arg)
        i += 1
    if fmt not in _RENDERERS:
        return ToolOutput("", f'{argv[0]}: unknown output format "{fmt}"\n', 1)
    ports: set[str] = set()
    if words[:2] in (["show", "statistics"], ["show", "stats"], ["show", "stat"]):
        if fmt == "keyvalue":
            return ToolOutput("", f'{argv[0]}: unknown output format "{fmt}"\n', 1)
        stats = interface_stats(ctx)
        return ToolOutput(render_stats_json(stats) if fmt == "json" else render_stats_text(stats))
    if argv[0] == "lldpcli" or words[:1] == ["show"]:
        if words[:2] not in (["show", "neighbors"], ["show", "neighbours"]):
            return ToolOutput(
                "", f"{argv[0]}: unknown command from argument 1: `{' '.join(words)}`\n", 1
            )
        rest = [w for w in words[2:] if w not in ("details", "summary", "hidden")]
        if rest[:1] == ["ports"] and len(rest) > 1:
            ports = set(rest[1].split(","))
    else:
        ports = set(words)
    entries = neighbour_entries(ctx)
    if ports:
        entries = [e for e in entries if e.interface in ports]
    return ToolOutput(_RENDERERS[fmt](entries))
