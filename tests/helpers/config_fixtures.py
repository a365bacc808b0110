"""The configuration parsers' fixtures under tests/fixtures: which kind each real capture is.

One table for the registry test, the configuration parser tests and the hostile-input
tests. Its patterns come first wherever fixture names are matched to kinds: ``switch/*pfcwd*``
is not a ``show pfc counters`` capture, nor ``switch/*nv-show-interface*qos*`` a counters one.
"""

from __future__ import annotations

import re
from pathlib import Path

FIXTURES = Path(__file__).parents[1] / "fixtures"

CONFIG_EXPECTED: tuple[tuple[str, str], ...] = (
    (r"^qos/.*mlnx_qos", "mlnx-qos"),
    (r"^pcie/.*lspci-tv", "lspci-tree"),
    (r"^pcie/.*lspci-vvv", "lspci-verbose"),
    (r"^ofed/.*ofed_info", "ofed-info"),
    (r"^ofed/.*flint-query", "flint-query"),
    (r"^ofed/.*mst-status", "mst-status"),
    (r"^roce-sysfs/.*traffic_class", "traffic-class"),
    (r"^roce-sysfs/.*cma_roce_tos", "cma-roce-tos"),
    (r"^kernel-log/", "kernel-log"),
    (r"^lsmod/", "lsmod"),
    (r"^dcgm/", "dcgmi-diag"),
    (r"^switch/.*nv-show-(interface-swp\d+-)?qos", "nvue-show"),
    (r"^switch/.*onyx.*show-roce", "onyx-roce"),
    (r"^switch/.*pfcwd-config", "sonic-pfcwd-config"),
    (r"^switch/.*pfcwd-show-stats", "sonic-pfcwd-stats"),
    (r"^switch/.*transceiver", ""),
)
"""(pattern on the path under tests/fixtures, kind); kind "" for captures no parser reads yet."""

CONFIG_KINDS = frozenset({
    "mlnx-qos", "lspci-verbose", "lspci-tree", "ofed-info", "flint-query", "mst-status", "roce-sysfs",
    "traffic-class", "cma-roce-tos", "cma-roce-mode", "kernel-log", "lsmod", "dcgmi-diag", "nvue-show",
    "onyx-roce", "sonic-pfcwd-config", "sonic-pfcwd-stats", "sonic-pfc-priority", "sonic-interfaces-status",
    "sonic-blocks", "sonic-ecn-queues", "sonic-config-table",
})  # fmt: skip
"""The kinds ``collectors/parsers/registry_config.py`` registers."""


CONFIG_LAYOUTS: dict[str, str] = {
    "roce-sysfs": "/sys/class/net/enp12s0np0/ecn/roce_np/enable/3:1\n/sys/class/net/enp12s0np0/mtu:9000\n",
    "cma-roce-mode": "RoCE v2\n",
    "sonic-pfc-priority": "\nInterface    Lossless priorities\n-----------  ---------------------\nEthernet0    3\n",
    "sonic-interfaces-status": ("  Interface    Lanes    Speed    MTU    Alias    Oper    Admin\n"
                                "-----------  -------  -------  -----  -------  ------  -------\n"
                                "  Ethernet0  1,2,3,4     400G   9100    etp1       up       up\n"),
    "sonic-blocks": "Profile: AZURE_LOSSLESS\n-----  -------\necn    ecn_all\n-----  -------\n",
    "sonic-ecn-queues": "ECN status:\nqueue 3: on\n",
    "sonic-config-table": '{"Ethernet0": {"dscp_to_tc_map": "AZURE", "pfc_enable": "3"}}',
}
"""Each configuration kind without a real capture (and a few with), as its tool prints it: seeds for the
hostile-input and fuzz tests."""


def config_kind(relative: str) -> str | None:
    """The configuration kind of the fixture at ``relative`` (to tests/fixtures), None when not one."""
    return next((kind for pattern, kind in CONFIG_EXPECTED if re.search(pattern, relative)), None)


def captures(kind: str) -> list[Path]:
    """Every real capture of ``kind`` under tests/fixtures."""
    return [p for p in sorted(FIXTURES.glob("*/*")) if p.is_file()
            and config_kind(str(p.relative_to(FIXTURES))) == kind]


def read(path: Path) -> str:
    """A capture as the collector sees it: UTF-8 with errors replaced."""
    return path.read_bytes().decode("utf-8", errors="replace")
