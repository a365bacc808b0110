"""``lsmod`` (also ``lsmod | grep ...`` slices): which kernel modules are loaded and who uses them.

Why: GPUDirect RDMA needs ``nvidia_peermem`` (R470 drivers and later) or the
older ``nv_peer_mem`` loaded (NVIDIA GPU Operator, "GPUDirect RDMA"). A module
can show only as a user of another (``ib_core ... nvidia_peermem,...`` in a
``grep rdma`` slice): it is loaded then too (tests/fixtures/lsmod).
"""

from __future__ import annotations

from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.config_text import ascii_int
from fleet.collectors.parsers.problem_log import ProblemLog
from fleet.collectors.parsers.textscan import split_lines


@dataclass(frozen=True, slots=True)
class KernelModule:
    name: str
    size_bytes: int
    users: int
    used_by: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Lsmod:
    modules: tuple[KernelModule, ...]
    problems: tuple[ParseProblem, ...] = ()
    unknown_lines: int = 0

    def loaded(self, name: str) -> bool:
        """Listed itself, or named as a user of a listed module (a ``grep`` slice that missed its own line)."""
        return any(m.name == name or name in m.used_by for m in self.modules)


@parser
def parse_lsmod(text: str) -> Lsmod:
    log = ProblemLog()
    modules: list[KernelModule] = []
    for number, line in enumerate(split_lines(text), start=1):
        words = line.split()
        if not words or words[:3] == ["Module", "Size", "Used"]:
            continue
        size = ascii_int(words[1], 0, 2**40) if len(words) > 1 else None
        users = ascii_int(words[2], 0, 2**31) if len(words) > 2 else None
        if len(words) not in (3, 4) or size is None or users is None:
            log.unknown(number, line, "expected: module size users [used-by,...]")
            continue
        used_by = tuple(u for u in words[3].split(",") if u and u != "-") if len(words) == 4 else ()
        modules.append(KernelModule(words[0], size, users, used_by))
    return Lsmod(tuple(modules), log.freeze(), log.unknown_lines)
