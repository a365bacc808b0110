"""Which real capture under tests/fixtures each parser kind reads, for the parser tests.

One table (a path pattern per kind) so that the registry tests, the hostile-input
tests and the fuzz suite agree on what every fixture is. Kinds without a real
capture get the tool's layout as written in ``SYNTHETIC``.
"""

from __future__ import annotations

import re
from pathlib import Path

from helpers.config_fixtures import CONFIG_EXPECTED, CONFIG_LAYOUTS

FIXTURES = Path(__file__).parents[1] / "fixtures"

# What each fixture file is, by its directory and name (first match wins; the configuration captures'
# patterns first: ``switch/*pfcwd*`` is not a ``show pfc counters`` capture).
EXPECTED: tuple[tuple[str, str], ...] = (
    *CONFIG_EXPECTED,
    (r"^ethtool/.*-ethtool-S-", "ethtool-stats"),
    (r"^ethtool/.*-ethtool-m-", "ethtool-module"),
    (r"^ibstat/.*ibstatus", "ibstatus"),
    (r"^ibstat/", "ibstat"),
    (r"^nccl/(uccl|.*deepep)", "ep-bench"),
    (r"^nccl/", "nccl"),
    (r"^nvidia-smi/.*topo-m", "nvidia-smi-topo"),
    (r"^nvidia-smi/.*nvlink", "nvidia-smi-nvlink"),
    (r"^nvidia-smi/.*(query-gpu|-q-)", "nvidia-smi-query"),
    (r"^perfquery/.*ibqueryerrors", "ibqueryerrors"),
    (r"^perfquery/", "perfquery"),
    (r"^perftest/", "perftest"),
    (r"^rdma/.*rdma-res(ource)?-show-qp", "rdma-qp"),
    (r"^rdma/.*rdma-statistic", "rdma-statistic"),
    (r"^rdma/.*show_gids", "show-gids"),
    (r"^rdma/.*ibv_devinfo", "ibv_devinfo"),
    (r"^slurm/.*squeue-json", "squeue-json"),
    (r"^slurm/.*squeue-o", "squeue"),
    (r"^slurm/.*scontrol", "scontrol-job"),
    (r"^switch/.*(net-show-counters|nv-show-interface)", "nvue-counters"),
    (r"^switch/.*(portstat|show-interfaces-counters)", "sonic-counters"),
    (r"^switch/.*queue-counter", "sonic-queue"),
    (r"^switch/.*pfc", "sonic-pfc"),
    (r"^sysfs/", "sysfs"),
    (r"^topology/.*iblinkinfo", "iblinkinfo"),
    (r"^topology/.*ibnetdiscover", "ibnetdiscover"),
    (r"^topology/.*lldp", "lldp"),
)

# The fixed-width switch tables (``switch_tables``) as switch CLIs print them; no real
# capture of ``nv show interface`` or ``show lldp table`` is in tests/fixtures.
SWITCH_TABLES = (
    "Interface  State  Speed  MTU    Type      Remote Host  Remote Port  Summary\n"
    "---------  -----  -----  -----  --------  -----------  -----------  --------------------------\n"
    "eth0       up     1G     1500   eth                                 IP Address: 127.42.0.33/24\n"
    "swp1       up     400G   9216   swp       gpu001       enp12s0np0\n"
    "swp17      down   400G   9216   swp\n",
    "Capability codes: (R) Router, (B) Bridge, (O) Other\n"
    "LocalPort    RemoteDevice    RemotePortID    Capability    RemotePortDescr\n"
    "-----------  --------------  --------------  ------------  -----------------\n"
    "Ethernet0    gpu017          enp12s0np0                    enp12s0np0\n"
    "Ethernet64   spine01         swp9            BR            swp9\n",
)


LAYOUTS: dict[str, tuple[str, ...]] = {"switch-table": SWITCH_TABLES,
                                        **{kind: (text,) for kind, text in CONFIG_LAYOUTS.items()}}
"""Seeds of the kinds with no real capture in tests/fixtures: the tool's layout."""


def expected_kind(relative: str) -> str | None:
    """The kind of the fixture at ``relative`` (to tests/fixtures), None when unknown."""
    return next((kind for pattern, kind in EXPECTED if re.search(pattern, relative)), None)


def fixture_files() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*/*") if p.is_file())


def read(path: Path) -> str:
    """A capture as the collector sees it: bytes decoded as UTF-8 with errors replaced."""
    return path.read_bytes().decode("utf-8", errors="replace")


def samples(kind: str) -> list[Path]:
    """Every real capture of ``kind``."""
    return [p for p in fixture_files() if expected_kind(str(p.relative_to(FIXTURES))) == kind]
