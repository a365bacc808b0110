"""The configuration parsers' kinds and signatures, for ``fleet parse KIND FILE`` and kind detection.

Why a table of its own: ``fleet check`` reads more than twenty tool outputs
(mlnx_qos, lspci, ofed_info, lsmod, the switches' QoS views ...); listing them
here keeps ``registry.py`` one ``update`` away from them. Targets are
``"module:function"`` strings, imported only when used, like every kind.

Every pattern is anchored to a line and made of runs that cannot overlap
(``[ \\t]`` never crosses a line), so a signature is linear in its input.
"""

from __future__ import annotations

import re
from collections.abc import Callable

CONFIG_PARSERS: tuple[tuple[str, str, str], ...] = (
    ("mlnx-qos", "mlnx_qos:parse_mlnx_qos", "mlnx_qos -i NETDEV"),
    ("lspci-verbose", "lspci:parse_lspci_verbose", "lspci -vvv [-s BDF]"),
    ("lspci-tree", "lspci:parse_lspci_tree", "lspci -tv"),
    ("ofed-info", "ofed_info:parse_ofed_info", "ofed_info [-s]"),
    ("flint-query", "mft:parse_flint_query", "flint -d DEV query / mstflint -d BDF q"),
    ("mst-status", "mft:parse_mst_status", "mst status"),
    ("roce-sysfs", "roce_sysfs:parse_roce_sysfs",
     "grep -H . /sys/class/net/*/ecn/roce_{np,rp}/enable/* /sys/class/net/*/mtu"),
    ("traffic-class", "roce_sysfs:parse_traffic_class", "cat /sys/class/infiniband/DEV/tc/1/traffic_class"),
    ("cma-roce-tos", "roce_sysfs:parse_cma_roce_tos", "cma_roce_tos -d DEV [-t TOS]"),
    ("cma-roce-mode", "roce_sysfs:parse_cma_roce_mode", "cma_roce_mode -d DEV [-p PORT]"),
    ("kernel-log", "kernel_log:parse_kernel_log", "dmesg [-T | --decode --time-format iso] / journalctl -k"),
    ("lsmod", "lsmod:parse_lsmod", "lsmod"),
    ("dcgmi-diag", "dcgmi_diag:parse_dcgmi_diag", "dcgmi diag -r N [-j]"),
    ("nvue-show", "nvue_qos:parse_nvue_show",
     "nv show qos roce / nv show interface PORT qos roce status / ... qos pfc-watchdog"),
    ("onyx-roce", "onyx_roce:parse_onyx_show_roce", "show roce (Onyx)"),
    ("sonic-pfcwd-config", "sonic_qos:parse_sonic_pfcwd_config", "show pfcwd config"),
    ("sonic-pfcwd-stats", "sonic_qos:parse_sonic_pfcwd_stats", "show pfcwd stats"),
    ("sonic-pfc-priority", "sonic_qos:parse_sonic_pfc_priority", "show pfc priority"),
    ("sonic-interfaces-status", "sonic_qos:parse_sonic_interfaces_status", "show interfaces status"),
    ("sonic-blocks", "sonic_qos:parse_sonic_blocks", "show ecn / show buffer configuration"),
    ("sonic-ecn-queues", "sonic_qos:parse_sonic_ecn_queues", "ecnconfig -q QUEUE"),
    ("sonic-config-table", "sonic_qos:parse_sonic_config_table", "sonic-cfggen -d --var-json TABLE"),
)
"""(kind, "module:function" in fleet.collectors.parsers, the command whose output it reads)."""


def _has(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern, re.MULTILINE)
    return lambda text: compiled.search(text) is not None


_MLNX_QOS = _has(r"^Priority trust state: |^PFC configuration:[ \t]*$")
_LSPCI_HEADER = _has(r"^(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7] [A-Za-z][^:\n]{0,80}: ")
_LSPCI_FIELD = _has(r"^[ \t]+(?:LnkCap|LnkSta|ACSCtl|Capabilities):")
_LSPCI_TREE = _has(r"^[ |+\\-]{0,4}\[[0-9a-f]{4}:[0-9a-f]{2}\]-[+\\-]")
_OFED = _has(r"^(?:MLNX_OFED_LINUX|OFED-internal|OFED)-[0-9][0-9A-Za-z.\-]{0,60}:[ \t]*$")
_FLINT = _has(r"^FW Version:[ \t]+\S")
_PSID = _has(r"^PSID:[ \t]+\S")
_MST = _has(r"^MST modules:[ \t]*$")
_ROCE_SYSFS = _has(r"^/sys/class/(?:net/[^/\n:]{1,64}/(?:ecn/roce_[nr]p/enable/[0-7]|mtu)|"
                   r"infiniband/[^/\n:]{1,64}/tc/1/traffic_class):")
_TCLASS = _has(r"^Global tclass=[0-9]{1,3}[ \t]*$")
_ROCE_MODE = _has(r"\A[ \t]*(?:RoCE v2|IB/RoCE v1)[ \t]*\n?\Z")
_KERNEL_PREFIX = _has(r"^(?:\[[ 0-9.+]{4,20}\] |\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9][0-9] [0-9:]{8} [0-9]{4}\] |"
                      r"[a-z]{2,8} +:[a-z]{2,8} *: [0-9]{4}-|[A-Z][a-z]{2} [ 0-9][0-9] [0-9:]{8} \S{1,64} kernel: |"
                      r"kernel: )")
_KERNEL_WORDS = _has(r"mlx5_core|NVRM: |pcieport |AER: |nvidia ")
_LSMOD_HEADER = _has(r"^Module +Size +Used by")
_LSMOD_ROW = re.compile(r"^[a-z0-9_]{2,64} {2,}[0-9]{1,12} {1,}[0-9]{1,6}(?: [a-z0-9_,\-]{0,400})?[ \t]*$",
                        re.MULTILINE)
_DCGMI = _has(r"^\| Diagnostic +\| Result +\||\"DCGM GPU Diagnostic\"")
_NVUE_HEADER = _has(r"^ {4,}operational {2,}applied")
_ONYX = _has(r"^RoCE mode +: ")
_PFCWD_CONFIG = _has(r"^ *PORT +ACTION +DETECTION TIME +RESTORATION TIME")
_PFCWD_STATS = _has(r"^ *QUEUE +STATUS +STORM DETECTED/RESTORED")
_PFC_PRIORITY = _has(r"^Interface +Lossless priorities")
_INTERFACES_STATUS = _has(r"^ *Interface +Lanes +Speed +MTU")
_BLOCKS = _has(r"^(?:Profile|Pool): \S|^Lossless traffic pattern:")
_ECN_QUEUES = _has(r"^ECN status(?: for namespace \S{1,32})?:[ \t]*$")
_CFGGEN = _has(r'"(?:dscp_to_tc_map|pfc_enable|tc_to_queue_map|pfc_to_queue_map)"')


def _lsmod(text: str) -> float:
    if _LSMOD_HEADER(text):
        return 0.95
    for rows, _ in enumerate(_LSMOD_ROW.finditer(text), start=1):
        if rows >= 3:
            return 0.85
    return 0.0


CONFIG_SIGNATURES: dict[str, Callable[[str], float]] = {
    "mlnx-qos": lambda t: 0.95 if _MLNX_QOS(t) else 0.0,
    "lspci-verbose": lambda t: 0.95 if _LSPCI_HEADER(t) and _LSPCI_FIELD(t) else 0.75 if _LSPCI_FIELD(t) else 0.0,
    "lspci-tree": lambda t: 0.95 if _LSPCI_TREE(t) else 0.0,
    "ofed-info": lambda t: 0.95 if _OFED(t) else 0.0,
    "flint-query": lambda t: 0.95 if _FLINT(t) and _PSID(t) else 0.7 if _FLINT(t) else 0.0,
    "mst-status": lambda t: 0.95 if _MST(t) else 0.0,
    "roce-sysfs": lambda t: 0.92 if _ROCE_SYSFS(t) else 0.0,
    "traffic-class": lambda t: 0.9 if _TCLASS(t) else 0.0,
    "cma-roce-mode": lambda t: 0.9 if _ROCE_MODE(t) else 0.0,
    "kernel-log": lambda t: 0.85 if _KERNEL_PREFIX(t) and _KERNEL_WORDS(t) else 0.0,
    "lsmod": _lsmod,
    "dcgmi-diag": lambda t: 0.95 if _DCGMI(t) else 0.0,
    "nvue-show": lambda t: 0.9 if _NVUE_HEADER(t) else 0.0,
    "onyx-roce": lambda t: 0.95 if _ONYX(t) else 0.0,
    "sonic-pfcwd-config": lambda t: 0.95 if _PFCWD_CONFIG(t) else 0.0,
    "sonic-pfcwd-stats": lambda t: 0.95 if _PFCWD_STATS(t) else 0.0,
    "sonic-pfc-priority": lambda t: 0.95 if _PFC_PRIORITY(t) else 0.0,
    "sonic-interfaces-status": lambda t: 0.95 if _INTERFACES_STATUS(t) else 0.0,
    "sonic-blocks": lambda t: 0.85 if _BLOCKS(t) else 0.0,
    "sonic-ecn-queues": lambda t: 0.9 if _ECN_QUEUES(t) else 0.0,
    "sonic-config-table": lambda t: 0.8 if t.lstrip()[:1] == "{" and _CFGGEN(t) else 0.0,
}
"""Kind -> confidence 0..1 that a text is that tool's output (``cma-roce-tos``, a bare number, has none)."""
