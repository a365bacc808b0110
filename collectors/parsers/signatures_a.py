"""Cheap guesses of which tool printed a text, for ``fleet parse FILE`` without a kind.

Each score looks only at the first ``HEAD_CHARS`` characters and returns a
confidence from 0 (surely not) to 1 (surely this tool). Scores near 0.95 come
from a line only that tool prints (``hca_id:``, ``Infiniband device '``);
lower ones from looser patterns. The kinds are those of the InfiniBand /
RDMA / netdev / topology parsers in this package.
"""

from __future__ import annotations

import re
from collections.abc import Callable

HEAD_CHARS = 4096

_IBSTAT_CA = re.compile(r"^CA '[^']+'\s*$", re.M)
_IBSTAT_FIELD = re.compile(r"^[ \t]+(CA type|Firmware version|Port [0-9]{1,3}):", re.M)
_IBSTATUS = re.compile(r"^Infiniband device '[^']+' port \d+ status:", re.M)
_HCA_ID = re.compile(r"^hca_id:\s*\S+", re.M)
_SYSFS_PATH = re.compile(r"^\S{0,200}?/ports/[0-9]{1,3}/(hw_)?counters/\w{1,64}:", re.M)
_SYSFS_BANNER = re.compile(r"^=== \S{0,200}?(port_|symbol_error|link_downed|VL15_dropped)\S{0,200} ===$", re.M)
_SHOW_COUNTERS = re.compile(r"^Port \d+ (hw )?counters:\s*$", re.M)
_ETHTOOL_LINE = re.compile(r"^[ \t]*[\w.\-\[\]]{1,120}: -?[0-9]{1,20}[ \t]*$", re.M)
_ETHTOOL_NAMES = re.compile(r"^[ \t]*(?:rx|tx)_\w{0,60}?(?:packets|bytes|phy|pause|discards|prio[0-9])\w{0,60}: [0-9]", re.M)
_MODULE_ID = re.compile(r"^[ \t]*Identifier[ \t]+: 0x[0-9a-fA-F]{2}", re.M)
_MODULE_FIELD = re.compile(r"^[ \t]*(Vendor name|Vendor PN|Module temperature|Laser wavelength)[ \t]+: ", re.M)
_RDMA_LINK = re.compile(r"^link \S+/\d+ ", re.M)
_RDMA_QP_TEXT = re.compile(r"^link \S+/\d+ .*\blqpn \d+", re.M)
_RDMA_STAT_NAMES = re.compile(r"\b(out_of_buffer|rx_write_requests|np_cnp_sent|rp_cnp_handled|out_of_sequence)\b")
_SHOW_GIDS = re.compile(r"^DEV[ \t]+PORT[ \t]+INDEX[ \t]+GID|^n_gids_found=[0-9]", re.M)
_GID_ROW = re.compile(r"^\S+[ \t]+[0-9]{1,3}[ \t]+[0-9]{1,5}[ \t]+[0-9a-f]{4}(:[0-9a-f]{4}){7}\s", re.M)
_PERFQUERY_HEADER = re.compile(r"^# .*counters: Lid \d+ port (\d+|ALL)", re.M)
_PERFQUERY_FIELD = re.compile(r"^(PortSelect|PortXmitData|SymbolErrorCounter|PortXmitWait):\.+", re.M)
_IBQE_ERRORS = re.compile(r'^Errors for .*"', re.M)
_IBQE_PORT = re.compile(r"^[ \t]*GUID 0x[0-9a-fA-F]{1,16} port ([0-9]{1,3}|ALL): \[", re.M)
_IBQE_SUMMARY = re.compile(r"^## Summary: \d+ nodes checked", re.M)
_IBND_TOPO = re.compile(r"^(# Topology file:|switchguid=0x|caguid=0x|(Switch|Ca)\s+\d+ \"[SH]-[0-9a-f]+\")", re.M)
_IBND_PORTS = re.compile(r"^(CA|SW|RT)[ \t]+[0-9]{1,5}[ \t]+[0-9]{1,3}[ \t]+0x[0-9a-fA-F]{1,16}[ \t]+[0-9]{1,2}x\s", re.M)
_IBLINK = re.compile(r"(?<![0-9])[0-9]{1,5}\[[^\]\n]{0,40}\][ \t]*==\([^\n]{0,120}?\)==>")
_LLDP_TEXT = re.compile(r"^LLDP (neighbors|statistics|interfaces):\s*$", re.M)
_LLDP_BLOCK = re.compile(r"^[ \t]+(ChassisID|SysName|PortID):\s", re.M)


def _head(text: str) -> str:
    return text[:HEAD_CHARS]


def score_ibstat(text: str) -> float:
    head = _head(text)
    if _IBSTAT_CA.search(head):
        return 0.95 if _IBSTAT_FIELD.search(head) else 0.6
    return 0.0


def score_ibstatus(text: str) -> float:
    return 0.95 if _IBSTATUS.search(_head(text)) else 0.0


def score_ibv_devinfo(text: str) -> float:
    return 0.95 if _HCA_ID.search(_head(text)) else 0.0


def score_sysfs(text: str) -> float:
    head = _head(text)
    if _SYSFS_PATH.search(head) or "Path: class/infiniband/" in head:
        return 0.95
    if _SHOW_COUNTERS.search(head) or _SYSFS_BANNER.search(head):
        return 0.85
    if "/sys/class/infiniband/" in head:
        return 0.7
    return 0.0


def score_ethtool_stats(text: str) -> float:
    head = _head(text)
    if "NIC statistics:" in head:
        return 0.95
    if _SHOW_COUNTERS.search(head):
        return 0.1  # show_counters "name: value" lines are sysfs hw_counters
    lines = [line for line in head.splitlines()[:60] if line.strip()]
    if len(lines) < 2:
        return 0.0
    matching = len(_ETHTOOL_LINE.findall("\n".join(lines)))
    if matching < 0.9 * len(lines):
        return 0.0
    return 0.8 if _ETHTOOL_NAMES.search(head) else 0.4


def score_ethtool_module(text: str) -> float:
    head = _head(text)
    if _MODULE_ID.search(head):
        return 0.95
    return 0.7 if len(_MODULE_FIELD.findall(head)) >= 2 else 0.0


def _json_head(head: str) -> bool:
    return head.lstrip()[:1] in ("[", "{")


def score_rdma_qp(text: str) -> float:
    head = _head(text)
    if _json_head(head):
        return 0.9 if '"lqpn"' in head else 0.0
    return 0.95 if _RDMA_QP_TEXT.search(head) else 0.0


def score_rdma_statistic(text: str) -> float:
    head = _head(text)
    if _json_head(head):
        return 0.9 if _RDMA_STAT_NAMES.search(head) and '"lqpn"' not in head else 0.0
    if not _RDMA_LINK.search(head) or _RDMA_QP_TEXT.search(head):
        return 0.0
    return 0.95 if _RDMA_STAT_NAMES.search(head) else 0.6


def score_show_gids(text: str) -> float:
    head = _head(text)
    if _SHOW_GIDS.search(head):
        return 0.95
    return 0.6 if _GID_ROW.search(head) else 0.0


def score_perfquery(text: str) -> float:
    head = _head(text)
    if _PERFQUERY_HEADER.search(head):
        return 0.95
    return 0.7 if _PERFQUERY_FIELD.search(head) else 0.0


def score_ibqueryerrors(text: str) -> float:
    head = _head(text)
    if _IBQE_PORT.search(head) and (_IBQE_ERRORS.search(head) or _IBQE_SUMMARY.search(head)):
        return 0.95
    if _IBQE_PORT.search(head) or _IBQE_SUMMARY.search(head):
        return 0.7
    return 0.0


def score_ibnetdiscover(text: str) -> float:
    head = _head(text)
    if _IBND_TOPO.search(head):
        return 0.95
    return 0.9 if _IBND_PORTS.search(head) else 0.0


def score_iblinkinfo(text: str) -> float:
    return 0.95 if _IBLINK.search(_head(text)) else 0.0


def score_lldp(text: str) -> float:
    head = _head(text)
    if _json_head(head):
        return 0.95 if '"lldp"' in head else 0.0
    if _LLDP_TEXT.search(head):
        return 0.95
    block = _LLDP_BLOCK.search(head) is not None and "Interface:" in head
    return 0.8 if head.startswith("Interface:") or block else 0.0


SIGNATURES_A: dict[str, Callable[[str], float]] = {
    "ibstat": score_ibstat,
    "ibstatus": score_ibstatus,
    "ibv_devinfo": score_ibv_devinfo,
    "sysfs": score_sysfs,
    "ethtool-stats": score_ethtool_stats,
    "ethtool-module": score_ethtool_module,
    "rdma-qp": score_rdma_qp,
    "rdma-statistic": score_rdma_statistic,
    "show-gids": score_show_gids,
    "perfquery": score_perfquery,
    "ibqueryerrors": score_ibqueryerrors,
    "ibnetdiscover": score_ibnetdiscover,
    "iblinkinfo": score_iblinkinfo,
    "lldp": score_lldp,
}
"""Kind -> confidence 0..1 that a text is that tool's output."""
