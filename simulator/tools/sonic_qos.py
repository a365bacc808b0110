"""SONiC's lossless RoCE views: ``show pfc priority``, ``show pfcwd config|stats``, ``show ecn``,
``show buffer configuration``, ``ecnconfig -l|-q Q`` and ``sonic-cfggen -d --var-json TABLE``, printed
from the switch's configuration (``fleet.simulator.qos_state``).

Layouts followed: ``show pfcwd config|stats``:
``switch/sonic-buildimage-issue9193-z9332-show-pfcwd-config-polling-interval-preamble.txt`` and
``switch/sonic-buildimage-issue8483-z9332-pfcwd-show-stats-restored-operational.txt`` (tabulate,
right-aligned); ``show pfc priority``, ``show ecn`` and ``show buffer configuration``:
sonic-utilities doc/Command-Reference.md; ``ecnconfig -q 3``: sonic-utilities tests/ecn_test.py
(``ECN status:`` / ``queue 3: on``). CONFIG_DB tables are printed as ``sonic-cfggen --var-json``
prints them (``json.dumps`` with an indent of 4, sorted keys).
"""

from __future__ import annotations

import json

from fleet.simulator.qos_state import LOSSLESS_PRIORITY, SwitchQos
from fleet.simulator.state import SwitchView
from fleet.simulator.tools import ToolContext, ToolOutput, register
from fleet.simulator.tools.tables import natural_key, simple_table

DETECTION_MS = 200
RESTORATION_MS = 200
"""`config pfcwd start_default`: 200 ms detection and restoration (Command Reference, PFC Watchdog)."""


def _lines(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _ports(switch: SwitchView) -> list[str]:
    return sorted((p.name for p in switch.ports), key=natural_key)


def show_pfc_priority(switch: SwitchView, qos: SwitchQos) -> str:
    rows = [[port, str(LOSSLESS_PRIORITY) if qos.ports[port].pfc else ""] for port in _ports(switch)]
    table = simple_table(["Interface", "Lossless priorities"], rows, right=False, min_padding=2)
    return _lines(["", *[line.rstrip() for line in table], ""])


def show_pfcwd_config(switch: SwitchView, qos: SwitchQos) -> str:
    rows = [[port, "drop", str(DETECTION_MS), str(RESTORATION_MS)]
            for port in _ports(switch) if qos.ports[port].pfc_watchdog]
    return _lines(simple_table(["PORT", "ACTION", "DETECTION TIME", "RESTORATION TIME"], rows, right=True))


def show_pfcwd_stats(switch: SwitchView, qos: SwitchQos) -> str:
    rows = [[f"{port}:{LOSSLESS_PRIORITY}", "operational", "0/0", "0/0", "0/0", "0/0", "0/0"]
            for port in _ports(switch) if qos.ports[port].pfc_watchdog]
    headers = ["QUEUE", "STATUS", "STORM DETECTED/RESTORED", "TX OK/DROP", "RX OK/DROP", "TX LAST OK/DROP",
               "RX LAST OK/DROP"]
    return _lines(simple_table(headers, rows, right=True))


def _block(title: str, rows: list[tuple[str, str]]) -> list[str]:
    width = max(len(k) for k, _ in rows)
    value_width = max(len(v) for _, v in rows)
    rule = f"{'-' * width}  {'-' * value_width}"
    return [title, rule, *[f"{k.ljust(width)}  {v}" for k, v in rows], rule, ""]


def show_ecn(qos: SwitchQos) -> str:
    """``show ecn`` (``ecnconfig -l``): the lossless WRED profile."""
    rows = [("red_max_threshold", str(qos.ecn_max_bytes)), ("wred_green_enable", "true"), ("ecn", "ecn_all"),
            ("green_min_threshold", str(qos.ecn_min_bytes)), ("red_min_threshold", str(qos.ecn_min_bytes)),
            ("wred_yellow_enable", "true"), ("yellow_min_threshold", str(qos.ecn_min_bytes)),
            ("green_max_threshold", str(qos.ecn_max_bytes)), ("green_drop_probability", "5"),
            ("yellow_max_threshold", str(qos.ecn_max_bytes)), ("wred_red_enable", "true"),
            ("yellow_drop_probability", "5"), ("red_drop_probability", "5")]
    return _lines(_block("Profile: AZURE_LOSSLESS", rows))


def ecn_queues(qos: SwitchQos, queues: list[int]) -> str:
    return _lines(["ECN status:", *[f"queue {q}: {'on' if q in qos.ecn_traffic_classes else 'off'}"
                                    for q in queues]])


def show_buffer_configuration(qos: SwitchQos) -> str:
    lines = _block("Lossless traffic pattern:", [("default_dynamic_th", "0"), ("over_subscribe_ratio", "2")])
    pools = [("ingress_lossless_pool", "ingress"), ("egress_lossless_pool", "egress"),
             ("ingress_lossy_pool", "ingress"), ("egress_lossy_pool", "egress")]
    for name, kind in pools:
        if "lossless" in name and not qos.lossless_buffer:
            continue
        lines += _block(f"Pool: {name}", [("type", kind), ("mode", "dynamic")])
    profiles = [("ingress_lossless_profile", "ingress_lossless_pool", "0"),
                ("egress_lossless_profile", "egress_lossless_pool", "7"),
                ("ingress_lossy_profile", "ingress_lossy_pool", "3"),
                ("egress_lossy_profile", "egress_lossy_pool", "3")]
    for name, pool, threshold in profiles:
        if "lossless" in name and not qos.lossless_buffer:
            continue
        lines += _block(f"Profile: {name}", [("dynamic_th", threshold), ("pool", f"[BUFFER_POOL:{pool}]"),
                                             ("size", "0")])
    return _lines(lines[:-1])


def config_table(switch: SwitchView, qos: SwitchQos, table: str) -> str | None:
    """``sonic-cfggen -d --var-json TABLE`` for the QoS tables the checks read; None for another table."""
    if table == "PORT_QOS_MAP":
        data: dict[str, dict[str, str]] = {}
        for port in _ports(switch):
            entry = {"pfc_enable": str(LOSSLESS_PRIORITY) if qos.ports[port].pfc else "",
                     "tc_to_pg_map": "AZURE", "tc_to_queue_map": "AZURE"}
            if "dscp" in qos.trust:
                entry["dscp_to_tc_map"] = "AZURE"
            else:
                entry["dot1p_to_tc_map"] = "AZURE"
            data[port] = entry
        return json.dumps(data, indent=4, sort_keys=True) + "\n"
    if table == "DSCP_TO_TC_MAP":
        return json.dumps({"AZURE": {str(d): str(p) for d, p in enumerate(qos.dscp_to_priority)}}, indent=4,
                          sort_keys=True) + "\n"
    return None


@register("ecnconfig")
def ecnconfig(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``ecnconfig -l`` and ``ecnconfig -q Q[,Q]`` (``-q Q on|off`` changes state: ``fleet.simulator.switch_cli``)."""
    switch = ctx.switch
    if switch is None or switch.qos is None:
        return ToolOutput("", "sh: 1: ecnconfig: not found\n", 127)
    args = argv[1:]
    if args == ["-l"]:
        return ToolOutput(show_ecn(switch.qos))
    if len(args) == 2 and args[0] == "-q" and all(q.isdigit() and int(q) < 8 for q in args[1].split(",")):
        return ToolOutput(ecn_queues(switch.qos, [int(q) for q in args[1].split(",")]))
    return ToolOutput("", "usage: ecnconfig [-h] [-v] [-l] [-p PROFILE] [-q QUEUE] ...\n", 2)


@register("sonic-cfggen")
def sonic_cfggen(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``sonic-cfggen -d --var-json TABLE`` (``-a JSON --write-to-db`` changes state: ``switch_cli``)."""
    switch = ctx.switch
    if switch is None or switch.qos is None:
        return ToolOutput("", "sh: 1: sonic-cfggen: not found\n", 127)
    args = argv[1:]
    if len(args) == 3 and args[:2] == ["-d", "--var-json"]:
        text = config_table(switch, switch.qos, args[2])
        return ToolOutput(text if text is not None else "{}\n")
    return ToolOutput("", "usage: sonic-cfggen [-h] [-m [MINIGRAPH]] [-d] [--var-json VAR_JSON] ...\n", 2)
