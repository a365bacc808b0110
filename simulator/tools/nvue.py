"""The read side of Cumulus Linux NVUE (``nv show ...``, ``nv config diff|history``).

``nv set`` / ``nv config apply`` change switch state and belong to the
simulator core; this module only prints what a :class:`SwitchView` holds.

Layouts followed:

- ``nv show interface <port> counters``:
  ``switch/cumulus-docs-nv-show-interface-swp1-counters-sections-truncated.txt``
  (Cumulus 5.x docs): an ``operational  applied`` table for
  ``carrier-transitions``, then sections titled and underlined with ``=``
  (title length + 3), each a 4-space indented table, ``n/a`` cells,
  ``0 Bytes`` in the buffer statistics, cells padded to the column width.
- ``nv show interface``: NVUE reference, "Show Commands / Interface"
  (``Interface  State  Speed  MTU  Type  Remote Host  Remote Port  Summary``).
- ``nv show system forwarding``: NVUE reference, "Show Commands / System
  Forwarding" (``applied`` column, ``ecmp-hash`` / ``lag-hash`` subtrees with
  2-space indented field names, ``on``/``off``); ``hash-seed`` is printed as a
  top-level row, as ``nv set system forwarding hash-seed`` sets it.
- ``nv show interface <port> counters -o json``: the keys of the interface
  ``stats`` subtree in "Monitoring Interfaces and Transceivers with NVUE"
  (``carrier-transitions``, ``in-bytes``, ``in-drops``, ``in-errors``,
  ``in-pkts``, ``out-bytes``, ``out-drops``, ``out-errors``, ``out-pkts``),
  plus ``pfc`` (per switch-priority ``rx-pause-frames`` / ``tx-pause-frames``)
  and ``ecn-marked-packets``: those two names follow NVUE's hyphenated style
  but were not checked against a capture.
- ``nv config history``: a YAML list, newest first, of ``apply-id``, ``date``,
  ``message``, ``ref``, ``user``; ``nv config diff``: YAML ``- set:`` tree of
  the staged changes (``SwitchView.pending_config`` maps an NVUE path such as
  ``"system forwarding hash-seed"`` to its value).
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from fleet.simulator.state import SwitchPortView, SwitchView
from fleet.simulator.tools import ToolContext, ToolOutput, nvue_qos, register
from fleet.simulator.tools.tables import natural_key, simple_table

ECMP_FIELDS: tuple[str, ...] = (
    "destination-ip",
    "destination-port",
    "gtp-teid",
    "ingress-interface",
    "inner-destination-ip",
    "inner-destination-port",
    "inner-ip-protocol",
    "inner-ipv6-label",
    "inner-source-ip",
    "inner-source-port",
    "ip-protocol",
    "ipv6-label",
    "source-ip",
    "source-port",
)
LAG_HASH: tuple[tuple[str, str], ...] = (
    ("destination-ip", "on"),
    ("destination-mac", "on"),
    ("destination-port", "on"),
    ("ether-type", "on"),
    ("gtp-teid", "off"),
    ("ip-protocol", "on"),
    ("source-ip", "on"),
    ("source-mac", "on"),
    ("source-port", "on"),
    ("vlan", "on"),
)
NOT_FOUND = "Error: The requested item does not exist.\n"
USAGE = "Usage:\n  nv [options] <command> ...\n\nTry 'nv -h' for more information.\n"
# Share of a port's packets that are small (ACKs, CNPs): they land in the 64-byte bucket.
SMALL_PACKET_SHARE = 0.01
ROCE_PRIORITY_GROUP = 3  # RoCE traffic is mapped to the lossless priority group 3


def _lines(lines: Sequence[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _speed(gbps: int) -> str:
    return f"{gbps}G"


def show_interfaces(switch: SwitchView) -> str:
    """``nv show interface``: one row per port plus ``eth0`` (management) and ``lo``."""
    rows = [
        ["eth0", "up", "1G", "1500", "eth", "", "", f"IP Address: {switch.mgmt_ip}/24"],
        ["lo", "up", "", "65536", "loopback", "", "", "IP Address: 127.0.0.1/8"],
    ]
    for port in sorted(switch.ports, key=lambda p: natural_key(p.name)):
        lldp = port.lldp
        rows.append(
            [
                port.name,
                "up" if port.oper_up else "down",
                _speed(port.speed_gbps) if port.oper_up else "",
                str(port.mtu),
                "swp",
                lldp.switch if lldp else "",
                lldp.switch_port if lldp else "",
                "",
            ]
        )
    headers = [
        "Interface",
        "State",
        "Speed",
        "MTU",
        "Type",
        "Remote Host",
        "Remote Port",
        "Summary",
    ]
    return _lines(simple_table(headers, rows, right=False))


def _section(title: str, headers: list[str], rows: list[list[str]]) -> list[str]:
    return [
        "",
        title,
        "=" * (len(title) + 3),
        *simple_table(headers, rows, right=False, indent="    "),
    ]


def _size_buckets(packets: int) -> list[int]:
    """Packets per size bucket: small control packets at 64 B, RoCE data in 4096-16383."""
    small = int(packets * SMALL_PACKET_SHARE)
    return [small, 0, 0, 0, 0, 0, 0, 0, packets - small]


def _avg_packet_bytes(port: SwitchPortView) -> int:
    return port.rx_bytes // port.rx_packets if port.rx_packets else 0


def show_counters(port: SwitchPortView) -> str:
    """``nv show interface <port> counters`` as text."""
    carrier = [["carrier-transitions", str(port.carrier_transitions), ""]]
    lines = simple_table(["", "operational", "applied"], carrier, right=False)
    lines += _section(
        "Detailed Counters",
        ["Counter", "Receive", "Transmit"],
        [
            ["Broadcast Packets", "0", "0"],
            ["Multicast Packets", "0", "0"],
            ["Total Octets", str(port.rx_bytes), str(port.tx_bytes)],
            ["Total Packets", str(port.rx_packets), str(port.tx_packets)],
            ["Unicast Packets", str(port.rx_packets), str(port.tx_packets)],
        ],
    )
    lines += _section(
        "Drop Counters",
        ["Counter", "Receive", "Transmit"],
        [
            ["ACL Drops", "0", "n/a"],
            ["Buffer Drops", str(port.rx_drops), "n/a"],
            ["Non-Queue Drops", "n/a", "0"],
            ["Queue Drops", "n/a", str(port.tx_drops)],
            ["Total Drops", str(port.rx_drops), str(port.tx_drops)],
        ],
    )
    lines += _section(
        "Error Counters",
        ["Counter", "Receive", "Transmit"],
        [
            ["Alignment Errors", "0", "n/a"],
            ["FCS Errors", str(port.rx_errors), "n/a"],
            ["Jabber Errors", "0", "n/a"],
            ["Length Errors", "0", "n/a"],
            ["Oversize Errors", "0", "n/a"],
            ["Symbol Errors", "0", "n/a"],
            ["Total Errors", str(port.rx_errors), str(port.tx_errors)],
            ["Undersize Errors", "0", "n/a"],
        ],
    )
    sizes = [
        "64",
        "65-127",
        "128-255",
        "256-511",
        "512-1023",
        "1024-1518",
        "1519-2047",
        "2048-4095",
        "4096-16383",
    ]
    rx_b, tx_b = _size_buckets(port.rx_packets), _size_buckets(port.tx_packets)
    lines += _section(
        "Packet Size Statistics",
        ["Counter", "Receive", "Transmit"],
        [[s, str(r), str(t)] for s, r, t in zip(sizes, rx_b, tx_b, strict=True)],
    )
    pg_rows: list[list[str]] = []
    for pg in range(8):
        lossless = pg == ROCE_PRIORITY_GROUP
        frames = port.rx_packets if lossless else 0
        discards = port.rx_drops * _avg_packet_bytes(port) if lossless else 0
        pg_rows.append([str(pg), str(frames), f"{discards} Bytes", "0 Bytes"])
    lines += _section(
        "Ingress Buffer Statistics",
        ["priority-group", "rx-frames", "rx-buffer-discards", "rx-shared-buffer-discards"],
        pg_rows,
    )
    return _lines(lines)


def counters_json(port: SwitchPortView) -> str:
    """``nv show interface <port> counters -o json``."""
    doc = {
        "carrier-transitions": port.carrier_transitions,
        "in-bytes": port.rx_bytes,
        "in-drops": port.rx_drops,
        "in-errors": port.rx_errors,
        "in-pkts": port.rx_packets,
        "out-bytes": port.tx_bytes,
        "out-drops": port.tx_drops,
        "out-errors": port.tx_errors,
        "out-pkts": port.tx_packets,
        "ecn-marked-packets": port.ecn_marked,
        "pfc": {
            str(prio): {
                "rx-pause-frames": port.rx_pfc_pause[prio],
                "tx-pause-frames": port.tx_pfc_pause[prio],
            }
            for prio in range(len(port.rx_pfc_pause))
        },
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n"  # as json.dumps(indent=2), in C


def show_forwarding(switch: SwitchView) -> str:
    """``nv show system forwarding``."""
    rows: list[list[str]] = [["ecmp-hash", ""]]
    rows += [[f"  {f}", "on" if f in switch.ecmp_hash_fields else "off"] for f in ECMP_FIELDS]
    rows.append(["hash-seed", str(switch.hash_seed)])
    rows.append(["lag-hash", ""])
    rows += [[f"  {f}", v] for f, v in LAG_HASH]
    rows += [["programming", ""], ["  log-level", "info"], ["host-route-preference", "route"]]
    return _lines(simple_table(["", "applied"], rows, right=False))


def show_adaptive_routing(switch: SwitchView) -> str:
    """``nv show router adaptive-routing`` (the ``state enabled|disabled`` dialect that
    ``nv set router adaptive-routing state`` takes since Cumulus Linux 5.15)."""
    state = "enabled" if switch.adaptive_routing else "disabled"
    return _lines(
        simple_table(["", "operational", "applied"], [["state", state, state]], right=False)
    )


def show_lldp(port: SwitchPortView) -> str:
    """``nv show interface <port> lldp``: the neighbour table."""
    rows: list[list[str]] = []
    if port.lldp is not None:
        n = port.lldp
        rows.append([n.switch, n.switch_port, n.chassis_mac, n.mgmt_ip, n.system_descr])
    headers = ["Neighbor", "Port", "Chassis ID", "Management IP", "System Description"]
    return _lines(
        ["neighbor", "===========", *simple_table(headers, rows, right=False, indent="    ")]
    )


def config_diff(switch: SwitchView) -> str:
    """``nv config diff``: the staged changes as the YAML ``- set:`` tree NVUE prints."""
    if not switch.pending_config:
        return ""
    lines = ["- set:"]
    opened: list[str] = []
    for path, value in sorted(switch.pending_config.items()):
        keys = path.split()
        common = 0
        while common < min(len(opened), len(keys) - 1) and opened[common] == keys[common]:
            common += 1
        for depth, key in enumerate(keys[common:-1], start=common):
            lines.append(f"{'  ' * (depth + 2)}{key}:")
        opened = keys[:-1]
        lines.append(f"{'  ' * (len(keys) + 1)}{keys[-1]}: {value}")
    return _lines(lines)


def config_history(switch: SwitchView) -> str:
    """``nv config history``: newest apply first."""
    lines: list[str] = []
    for revision, date, message in sorted(switch.config_history, key=lambda h: -h[0]):
        lines += [
            f"- apply-id: rev_{revision}_apply_1",
            f"  date: {date}",
            f"  message: {message}",
            f"  ref: rev_{revision}",
            "  user: cumulus",
        ]
    return _lines(lines)


def _port(switch: SwitchView, name: str) -> SwitchPortView | None:
    return next((p for p in switch.ports if p.name == name), None)


def _show_interface(switch: SwitchView, args: list[str], as_json: bool) -> ToolOutput:
    if not args:
        return ToolOutput(show_interfaces(switch))
    port = _port(switch, args[0])
    if port is None:
        return ToolOutput("", NOT_FOUND, 1)
    rest = args[1:]
    if rest == ["counters"]:
        return ToolOutput(counters_json(port) if as_json else show_counters(port))
    if rest == ["qos", "roce", "status"] and switch.qos is not None:
        return ToolOutput(nvue_qos.show_port_roce_status(switch.qos, port.name))
    if rest == ["qos", "pfc-watchdog"] and switch.qos is not None:
        return ToolOutput(nvue_qos.show_pfc_watchdog(switch.qos, port.name))
    if rest == ["lldp"]:
        return ToolOutput(show_lldp(port))
    return ToolOutput("", NOT_FOUND, 1)


@register("nv")
def nv(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``nv show ...`` and ``nv config diff|history`` on a Cumulus switch."""
    switch = ctx.switch
    if switch is None or switch.os != "cumulus":
        return ToolOutput("", "sh: 1: nv: not found\n", 127)
    args = list(argv[1:])
    as_json = False
    for flag in ("-o", "--output"):
        if flag in args:
            i = args.index(flag)
            fmt = args[i + 1] if i + 1 < len(args) else ""
            if fmt not in ("json", "auto"):
                return ToolOutput("", f"Error: Invalid output format '{fmt}'\n", 1)
            as_json = fmt == "json"
            del args[i : i + 2]
    if args[:2] == ["show", "interface"]:
        return _show_interface(switch, args[2:], as_json)
    if args == ["show", "qos", "roce"] and switch.qos is not None:
        return ToolOutput(nvue_qos.show_qos_roce(switch.qos))
    if args == ["show", "system", "forwarding"]:
        return ToolOutput(show_forwarding(switch))
    if args == ["show", "router", "adaptive-routing"]:
        return ToolOutput(show_adaptive_routing(switch))
    if args == ["config", "diff"]:
        return ToolOutput(config_diff(switch))
    if args == ["config", "history"]:
        return ToolOutput(config_history(switch))
    if args[:1] == ["show"]:
        return ToolOutput("", NOT_FOUND, 1)
    return ToolOutput("", USAGE, 2)
