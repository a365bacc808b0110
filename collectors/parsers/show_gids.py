"""Parser for ``show_gids`` (mlnx-tools / MLNX_OFED): the GID table of every RDMA port.

A tab-separated table ``DEV PORT INDEX GID IPv4 VER DEV`` whose IPv4 cell is
empty for link-local GIDs, and an ``n_gids_found=N`` footer. RoCE needs the
right GID index (``-x`` in perftest): the v2 entry carrying the IPv4 address.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.values import PORT, U8, U32, read_int

_IPV4_RE = re.compile(r"^\d{1,3}(?:\.\d{1,3}){3}$")
_GID_RE = re.compile(r"^[0-9a-fA-F]{4}(?::[0-9a-fA-F]{4}){7}$")


@dataclass(frozen=True, slots=True)
class GidEntry:
    device: str  # "mlx5_bond_0"
    port: int
    index: int  # the GID index to pass to perftest -x / NCCL_IB_GID_INDEX
    gid: str
    ipv4: str  # "" for link-local GIDs
    roce_version: str  # "v1" | "v2" | "" (InfiniBand)
    netdev: str  # "bond0"; "" when none


@dataclass(frozen=True, slots=True)
class ShowGidsResult:
    gids: tuple[GidEntry, ...]
    n_gids_found: int | None  # the footer's count, when printed
    problems: tuple[ParseProblem, ...]
    unknown_lines: int

    def roce_v2_index(self, device: str, port: int = 1) -> int | None:
        """Lowest GID index of ``device``/``port`` that is RoCE v2 with an IPv4 address."""
        found = [
            g.index
            for g in self.gids
            if g.device == device and g.port == port and g.roce_version == "v2" and g.ipv4
        ]
        return min(found) if found else None


@parser
def parse_show_gids(text: str) -> ShowGidsResult:
    """Parse ``show_gids`` output; never raises."""
    log = ProblemLog()
    gids: list[GidEntry] = []
    footer: int | None = None
    for line_no, line in enumerate(text.splitlines(), 1):
        cells = line.split()
        if not cells:
            continue
        if cells[0] in ("DEV", "---"):
            continue
        if len(cells) == 1 and cells[0].startswith("n_gids_found="):
            footer = U32.check(read_int(cells[0].partition("=")[2]), log, line_no, line, "n_gids_found")
            if footer is None:
                log.add(line_no, line, "n_gids_found is not a count")
            continue
        # The GID index is 8 bits wide (IBTA Vol 1 8.3: SGID index of an address vector).
        port = read_int(cells[1]) if len(cells) > 1 else None
        index = read_int(cells[2]) if len(cells) > 2 else None
        if port is None or index is None or not PORT.holds(port) or not U8.holds(index):
            log.unknown(line_no, line, "port or GID index missing, or outside its 8 bits")
            continue
        if len(cells) < 4 or not _GID_RE.match(cells[3]):
            log.unknown(line_no, line)
            continue
        ipv4 = version = netdev = ""
        for cell in cells[4:]:
            if _IPV4_RE.match(cell) and not ipv4:
                ipv4 = cell
            elif cell in ("v1", "v2") and not version:
                version = cell
            elif not netdev:
                netdev = cell
            else:
                log.add(line_no, line, f"extra cell {cell!r} ignored")
        gids.append(GidEntry(cells[0], port, index, cells[3], ipv4, version, netdev))
    if footer is not None and footer != len(gids):
        log.add(0, "", f"n_gids_found={footer} but {len(gids)} GIDs read")
    return ShowGidsResult(tuple(gids), footer, log.freeze(), log.unknown_lines)
