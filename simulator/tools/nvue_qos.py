"""Cumulus NVUE RoCE views: ``nv show qos roce``, ``nv show interface PORT qos roce status``,
``nv show interface PORT qos pfc-watchdog``, printed from the switch's configuration
(``fleet.simulator.qos_state``).

Layouts followed: ``switch/cumulus-docs-514-nv-show-qos-roce-lossless-single-ipool.txt`` and
``switch/cumulus-docs-514-nv-show-interface-swp16-qos-roce-status.txt`` (Cumulus Linux 5.14 docs:
the key tree under ``operational  applied``, ``====``-underlined sub-tables indented by four blanks,
thresholds in binary KB/MB with two decimals), and the ``nv show interface swp1 qos pfc-watchdog``
example of the NVUE reference (trailing blank on every line). A misconfigured switch prints what
it runs: ECN off on traffic class 3 leaves ``enabled-tc 0``; a port without PFC an empty
``pfc-priority``.
"""

from __future__ import annotations

from fleet.simulator.qos_state import LOSSLESS_PRIORITY, SwitchQos
from fleet.simulator.tools.tables import simple_table


def _kb(nbytes: int) -> str:
    """NVUE's size words: binary prefixes, two decimals (150,000 B -> ``146.48 KB``)."""
    for unit, factor in (("MB", 1024**2), ("KB", 1024)):
        if nbytes >= factor:
            return f"{nbytes / factor:.2f} {unit}"
    return f"{nbytes} Bytes"


def _tree(rows: list[tuple[str, str, str]], description: bool) -> list[str]:
    """The settings table: keys with their indentation, then operational and applied (and description)."""
    headers = ["", "operational", "applied"] + (["description"] if description else [])
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers[:3])]
    if description:
        widths.append(51)
    head = "  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip()
    rule = "  ".join("-" * w for w in widths)
    lines = [head, rule]
    for key, operational, applied in rows:
        lines.append("  ".join([key.ljust(widths[0]), operational.ljust(widths[1]), applied]).rstrip())
    return lines


def _section(title: str, headers: list[str], rows: list[list[str]]) -> list[str]:
    return [title, "=" * (len(title) + 3), *simple_table(headers, rows, right=False, indent="    ")]


def _dscp_rows(qos: SwitchQos) -> list[list[str]]:
    rows = []
    for prio in range(8):
        codes = [d for d in range(64) if qos.dscp_to_priority[d] == prio]
        rows.append([str(prio), str(prio), ",".join(map(str, codes)), str(prio)])
    return rows


def show_qos_roce(qos: SwitchQos) -> str:
    """``nv show qos roce``: the switch-wide RoCE settings, maps and pools."""
    tcs = ",".join(map(str, qos.ecn_traffic_classes))
    rows = [
        ("enable", "", "on"),
        ("mode", "lossless", "lossless"),
        ("pfc", "", ""),
        ("  pfc-priority", str(LOSSLESS_PRIORITY), ""),
        ("  rx-enabled", "enabled", ""),
        ("  tx-enabled", "enabled", ""),
        ("  cable-length", "100", ""),
        ("congestion-control", "", ""),
        ("  congestion-mode", "ECN", ""),
        ("  enabled-tc", tcs, ""),
        ("  min-threshold", _kb(qos.ecn_min_bytes), ""),
        ("  max-threshold", _kb(qos.ecn_max_bytes), ""),
        ("  probability", "100", ""),
        ("trust", "", ""),
        ("  trust-mode", qos.trust, ""),
        ("lldp-app-tlv", "", ""),
        ("  priority", str(LOSSLESS_PRIORITY), ""),
        ("  protocol-id", "4791", ""),
        ("  selector", "UDP", ""),
    ]
    lines = _tree(rows, description=False)
    lines += _section("RoCE PCP/DSCP->SP mapping configurations", ["", "pcp", "dscp", "switch-prio"],
                      _dscp_rows(qos))
    ets = [[str(p), str(p), str(p if p in (LOSSLESS_PRIORITY, 6) else 0),
            "strict-priority" if p == 6 else "DWRR-50%"] for p in range(8)]
    lines += _section("RoCE SP->TC mapping and ETS configurations",
                      ["", "switch-prio", "traffic-class", "scheduler-weight"], ets)
    pools = [["0", "lossy-default-ingress", "Dynamic", "50%", "0,1,2,4,5,6,7", "-"],
             ["1", "roce-reserved-ingress", "Dynamic", "50%", "3", "-"],
             ["2", "lossy-default-egress", "Dynamic", "50%", "-", "0,6"],
             ["3", "roce-reserved-egress", "Dynamic", "inf", "-", "3"]]
    if not qos.lossless_buffer:
        pools = [p for p in pools if "roce" not in p[1]]
    lines += _section("RoCE pool config", ["", "name", "mode", "size", "switch-priorities", "traffic-class"], pools)
    lines += ["Exception List", "=================", "No Data"]
    return "".join(line + "\n" for line in lines)


def show_port_roce_status(qos: SwitchQos, port: str) -> str:
    """``nv show interface PORT qos roce status``."""
    settings = qos.ports[port]
    tcs = ",".join(map(str, qos.ecn_traffic_classes))
    rows = [
        ("congestion-control", "", ""),
        ("  congestion-mode", "ecn, absolute", ""),
        ("  enabled-tc", tcs, ""),
        ("  max-threshold", _kb(qos.ecn_max_bytes), ""),
        ("  min-threshold", _kb(qos.ecn_min_bytes), ""),
        ("  probability", "100", ""),
        ("pfc", "", ""),
        ("  pfc-priority", str(LOSSLESS_PRIORITY) if settings.pfc else "", ""),
        ("  rx-enabled", "yes" if settings.pfc else "no", ""),
        ("  tx-enabled", "yes" if settings.pfc else "no", ""),
        ("trust", "", ""),
        ("  trust-mode", qos.trust, ""),
        ("mode", "lossless", ""),
    ]
    lines = _tree(rows, description=True)
    cnp = [d for d in range(64) if qos.dscp_to_priority[d] == 6][:1] or [48]
    roce = [d for d in (26,) if qos.dscp_to_priority[d] == LOSSLESS_PRIORITY]
    mapping = [["cnp", "6", str(cnp[0]), "6"]] + ([["roce", "3", str(roce[0]), "3"]] if roce else [])
    lines += [" ", " ", *_section("RoCE PCP/DSCP->SP mapping configurations", ["", "pcp", "dscp", "switch-prio"],
                                  mapping)]
    lines += [" ", " ", *_section("RoCE SP->TC mapping and ETS configurations",
                                  ["", "switch-prio", "traffic-class", "scheduler-weight"],
                                  [["cnp", "6", "6", "strict priority"], ["roce", "3", "3", "dwrr-50%"]])]
    return "".join(line + "\n" for line in lines)


def show_pfc_watchdog(qos: SwitchQos, port: str) -> str:
    """``nv show interface PORT qos pfc-watchdog``: its state and each traffic class's."""
    state = "enabled" if qos.ports[port].pfc_watchdog else "disabled"
    lines = ["                 operational  applied ", "---------------  -----------  ------- ",
             f"{'state':<15}  {state:<11}  {state:<7} ", "", "PFC WD Status ", "=========================== ",
             "    traffic-class  status    deadlock-count ", "    -------------  --------  -------------- ", ""]
    if qos.ports[port].pfc_watchdog:
        lines += [f"    {tc:<13}  {'OK':<8}  0 " for tc in range(8)]
    return "".join(line + "\n" for line in lines)
