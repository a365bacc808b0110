"""SONiC ``show`` commands a SONiC switch answers (sonic-utilities layouts).

Every table is python-tabulate ``simple`` with ``stralign="right"`` (and
tabulate's two blanks of header padding), as sonic-utilities prints them. Layouts followed:

- ``show interfaces counters`` (portstat):
  ``switch/sonicbook-arista7050qx-show-interfaces-counters-iperf.txt`` and
  ``switch/lolyu-sonic-portstat-i-lossless-txdrp.txt``: thousands separators
  in packet counts, rates as ``B/s`` up to 10,000 B/s, ``KB/s`` up to
  10,000,000 B/s, ``MB/s`` above (decimal kilo/mega, 2 decimals), utilization
  ``NN.NN%`` of the port speed, state ``U``/``D``/``X``. The model's
  ``rx_bps``/``tx_bps`` are bits per second; portstat's ``*_BPS`` columns
  print bytes per second, so they are divided by 8 here.
- ``show queue counters`` (queuestat):
  ``switch/sonic-utilities-issue2393-show-queue-counter-huge-drops-excerpt.txt``
  and ``switch/lolyu-sonic-show-queue-counters-uc3-drops.txt``: plain numbers,
  ``UC0..UC7`` then ``MC8..MC15`` per port, one table per port followed by a
  blank line (single-ASIC build: no ``For namespace`` line).
- ``show pfc counters`` (pfcstat): a ``Port Rx`` table and a ``Port Tx`` table
  of ``PFC0..PFC7`` with thousands separators, separated by a blank line.
- ``show lldp table`` (lldpshow): capability legend, left-aligned table, a
  50-dash rule and ``Total entries displayed:  N``.
- ``show interfaces status`` (intfutil): Interface, Lanes, Speed, MTU, FEC,
  Alias, Vlan, Oper, Admin, Type, Asym PFC.
"""

from __future__ import annotations

from collections.abc import Sequence

from fleet.simulator.state import SwitchPortView, SwitchView
from fleet.simulator.tools import ToolContext, ToolOutput, register, sonic_qos
from fleet.simulator.tools.tables import natural_key, simple_table

PORTSTAT_HEADER: tuple[str, ...] = (
    "IFACE",
    "STATE",
    "RX_OK",
    "RX_BPS",
    "RX_UTIL",
    "RX_ERR",
    "RX_DRP",
    "RX_OVR",
    "TX_OK",
    "TX_BPS",
    "TX_UTIL",
    "TX_ERR",
    "TX_DRP",
    "TX_OVR",
)
QUEUE_HEADER: tuple[str, ...] = (
    "Port",
    "TxQ",
    "Counter/pkts",
    "Counter/bytes",
    "Drop/pkts",
    "Drop/bytes",
)
ROCE_QUEUE = 3  # lossless RoCE traffic class
LANES_PER_PORT = 8
TRANSCEIVER = "QSFP-DD Double Density 8X Pluggable Transceiver"
UNKNOWN_COMMAND = 'Error: No such command "{0}".\n'
USAGE = 'Usage: show [OPTIONS] COMMAND [ARGS]...\nTry "show -h" for help.\n\n'


def _lines(lines: Sequence[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _ports(switch: SwitchView) -> list[SwitchPortView]:
    return sorted(switch.ports, key=lambda p: natural_key(p.name))


def format_rate(bytes_per_s: float) -> str:
    """portstat's ``format_brate``: B/s, KB/s above 10 KB/s, MB/s above 10 MB/s."""
    if bytes_per_s > 1000 * 1000 * 10:
        return f"{bytes_per_s / 1000 / 1000:.2f} MB/s"
    if bytes_per_s > 1000 * 10:
        return f"{bytes_per_s / 1000:.2f} KB/s"
    return f"{bytes_per_s:.2f} B/s"


def format_util(bytes_per_s: float, speed_gbps: int) -> str:
    """portstat's ``format_util``: percent of the port speed."""
    return f"{bytes_per_s * 8 / (speed_gbps * 1e9) * 100:.2f}%"


def _state(port: SwitchPortView) -> str:
    if not port.admin_up:
        return "X"
    return "U" if port.oper_up else "D"


def interfaces_counters(switch: SwitchView, names: list[str] | None = None) -> str:
    """``show interfaces counters [-i PORT,PORT]`` (``-i`` as portstat takes it)."""
    rows = [
        [
            p.name,
            _state(p),
            f"{p.rx_packets:,}",
            format_rate(p.rx_bps / 8),
            format_util(p.rx_bps / 8, p.speed_gbps),
            f"{p.rx_errors:,}",
            f"{p.rx_drops:,}",
            "0",
            f"{p.tx_packets:,}",
            format_rate(p.tx_bps / 8),
            format_util(p.tx_bps / 8, p.speed_gbps),
            f"{p.tx_errors:,}",
            f"{p.tx_drops:,}",
            "0",
        ]
        for p in _ports(switch)
        if names is None or p.name in names
    ]
    return _lines(simple_table(PORTSTAT_HEADER, rows, right=True, min_padding=2))


def _queue_rows(port: SwitchPortView) -> list[list[str]]:
    """Per queue: RoCE data in the lossless queue, the rest (control traffic) in queue 0."""
    avg = port.tx_bytes // port.tx_packets if port.tx_packets else 0
    control_pkts = port.tx_packets // 100
    rows: list[list[str]] = []
    for q in range(8):
        if q == ROCE_QUEUE:
            pkts = port.tx_packets - control_pkts
        elif q == 0:
            pkts = control_pkts
        else:
            pkts = 0
        drops = port.queue_drops[q] if q < len(port.queue_drops) else 0
        rows.append([port.name, f"UC{q}", str(pkts), str(pkts * avg), str(drops), str(drops * avg)])
    rows += [[port.name, f"MC{q}", "0", "0", "0", "0"] for q in range(8, 16)]
    return rows


def queue_counters(switch: SwitchView, names: list[str]) -> str:
    """``show queue counters [PORT]``."""
    lines: list[str] = []
    for port in _ports(switch):
        if names and port.name not in names:
            continue
        lines += simple_table(QUEUE_HEADER, _queue_rows(port), right=True, min_padding=2)
        lines.append("")
    return _lines(lines)


def pfc_counters(switch: SwitchView) -> str:
    """``show pfc counters``."""
    lines: list[str] = []
    for label, attr in (("Port Rx", "rx_pfc_pause"), ("Port Tx", "tx_pfc_pause")):
        rows = []
        for port in _ports(switch):
            frames: tuple[int, ...] = getattr(port, attr)
            rows.append([port.name, *(f"{frames[p]:,}" for p in range(8))])
        lines += simple_table(
            [label, *(f"PFC{p}" for p in range(8))], rows, right=True, min_padding=2
        )
        lines.append("")
    return _lines(lines)


def lldp_table(switch: SwitchView) -> str:
    """``show lldp table``."""
    rows = [
        [p.name, p.lldp.switch, p.lldp.switch_port, "", p.lldp.port_descr]
        for p in _ports(switch)
        if p.lldp is not None
    ]
    headers = ["LocalPort", "RemoteDevice", "RemotePortID", "Capability", "RemotePortDescr"]
    lines = ["Capability codes: (R) Router, (B) Bridge, (O) Other"]
    lines += simple_table(headers, rows, right=False, min_padding=2)
    lines += ["-" * 50, f"Total entries displayed:  {len(rows)}"]
    return _lines(lines)


def _lanes(port: SwitchPortView) -> str:
    first = int(port.name.removeprefix("Ethernet") or 0)
    return ",".join(str(first + i) for i in range(LANES_PER_PORT))


def interfaces_status(switch: SwitchView) -> str:
    """``show interfaces status``."""
    rows = [
        [
            p.name,
            _lanes(p),
            f"{p.speed_gbps}G",
            str(p.mtu),
            "rs",
            p.alias,
            "routed",
            "up" if p.oper_up else "down",
            "up" if p.admin_up else "down",
            TRANSCEIVER,
            "N/A",
        ]
        for p in _ports(switch)
    ]
    headers = [
        "Interface",
        "Lanes",
        "Speed",
        "MTU",
        "FEC",
        "Alias",
        "Vlan",
        "Oper",
        "Admin",
        "Type",
        "Asym PFC",
    ]
    return _lines(simple_table(headers, rows, right=True, min_padding=2))


@register("show")
def show(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """SONiC ``show interfaces counters|status``, ``show pfc|queue counters``, ``show lldp table``."""
    switch = ctx.switch
    if switch is None or switch.os != "sonic":
        return ToolOutput("", "sh: 1: show: not found\n", 127)
    args = argv[1:]
    if args == ["interfaces", "counters"]:
        return ToolOutput(interfaces_counters(switch))
    if args[:3] == ["interfaces", "counters", "-i"] and len(args) == 4:
        names = args[3].split(",")
        unknown = [n for n in names if all(p.name != n for p in switch.ports)]
        if unknown:
            return ToolOutput("", f"Error: Invalid port {unknown[0]}\n", 1)
        return ToolOutput(interfaces_counters(switch, names))
    if args == ["interfaces", "status"]:
        return ToolOutput(interfaces_status(switch))
    if args == ["pfc", "counters"]:
        return ToolOutput(pfc_counters(switch))
    if args[:2] in (["queue", "counters"], ["queue", "counter"]):
        names = args[2:]
        unknown = [n for n in names if all(p.name != n for p in switch.ports)]
        if unknown:
            return ToolOutput("", f"Error: Invalid port {unknown[0]}\n", 1)
        return ToolOutput(queue_counters(switch, names))
    if args == ["lldp", "table"]:
        return ToolOutput(lldp_table(switch))
    qos = switch.qos
    if qos is not None and args == ["pfc", "priority"]:
        return ToolOutput(sonic_qos.show_pfc_priority(switch, qos))
    if qos is not None and args == ["pfcwd", "config"]:
        return ToolOutput(sonic_qos.show_pfcwd_config(switch, qos))
    if qos is not None and args == ["pfcwd", "stats"]:
        return ToolOutput(sonic_qos.show_pfcwd_stats(switch, qos))
    if qos is not None and args == ["ecn"]:
        return ToolOutput(sonic_qos.show_ecn(qos))
    if qos is not None and args == ["buffer", "configuration"]:
        return ToolOutput(sonic_qos.show_buffer_configuration(qos))
    if not args:
        return ToolOutput("", USAGE, 2)
    return ToolOutput("", USAGE.rstrip("\n") + "\n\n" + UNKNOWN_COMMAND.format(args[-1]), 2)
