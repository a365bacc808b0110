"""``ofed_info -s`` and ``ofed_info``: which NVIDIA RDMA driver stack (MLNX_OFED / DOCA-OFED) a node runs.

Why: a fleet whose nodes run different driver stacks behaves differently
under the same NCCL job; after an update on part of the fleet the odd nodes
must be named. ``-s`` prints one line (``MLNX_OFED_LINUX-23.07-0.5.1.2:``);
the full form starts with that header (``OFED-internal-26.01-1.0.0:`` on
DOCA-OFED) and lists each component with its source, then ``Installed
Packages:`` (tests/fixtures/ofed).
"""

from __future__ import annotations

from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.textscan import split_lines


@dataclass(frozen=True, slots=True)
class OfedComponent:
    name: str
    sources: tuple[str, ...]
    """The source lines printed under it (an rpm, a git URL and its ``commit``)."""


@dataclass(frozen=True, slots=True)
class OfedInfo:
    version: str
    """The header without its colon: ``MLNX_OFED_LINUX-23.07-0.5.1.2``, ``OFED-internal-26.01-1.0.0``."""
    distribution: str
    """The header before the release: ``MLNX_OFED_LINUX``, ``OFED-internal``."""
    release: str
    """``23.07-0.5.1.2``."""
    components: tuple[OfedComponent, ...] = ()
    installed_packages: tuple[str, ...] = ()
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0


def _split_version(version: str) -> tuple[str, str]:
    """``MLNX_OFED_LINUX-23.07-0.5.1.2`` -> (``MLNX_OFED_LINUX``, ``23.07-0.5.1.2``): the release starts at
    the first dash followed by a digit."""
    for index, char in enumerate(version):
        if char == "-" and version[index + 1 : index + 2].isdigit():
            return version[:index], version[index + 1 :]
    return version, ""


@parser
def parse_ofed_info(text: str) -> OfedInfo:
    log = ProblemLog()
    version = ""
    components: list[OfedComponent] = []
    installed: list[str] = []
    name = ""
    sources: list[str] = []
    in_installed = False
    for number, line in enumerate(split_lines(text), start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if not version:
            if stripped.endswith(":") and " " not in stripped and any(c.isdigit() for c in stripped):
                version = stripped[:-1]
            else:
                log.unknown(number, line, "expected the version header (e.g. MLNX_OFED_LINUX-23.07-0.5.1.2:)")
            continue
        if in_installed:
            if set(stripped) != {"-"}:
                installed.append(stripped)
            continue
        if stripped == "Installed Packages:":
            in_installed = True
            continue
        if stripped.endswith(":") and " " not in stripped and "/" not in stripped:
            if name:
                components.append(OfedComponent(name, tuple(sources)))
            name, sources = stripped[:-1], []
        elif name:
            sources.append(stripped)
        else:
            log.unknown(number, line, "source line before any component name")
    if name:
        components.append(OfedComponent(name, tuple(sources)))
    if not version:
        log.add(0, "", "no version header")
    distribution, release = _split_version(version)
    return OfedInfo(version, distribution, release, tuple(components), tuple(installed), log.freeze(),
                    log.unknown_lines)
