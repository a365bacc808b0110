"""``nvidia-smi nvlink -s`` (link speeds) and ``nvidia-smi nvlink -e`` (error counters) per GPU per link.

Why: a GPU with an inactive NVLink or climbing replay/CRC counters makes
every all-reduce on that node slow; the console shows both per link.

``-s`` prints ``Link N: 26.562 GB/s`` or ``Link N: <inactive>``; ``-e``
prints ``Link N: Replay Errors: 0`` (one line per counter; newer drivers add
more counters, all kept under their printed name in snake case). Both may be
in one input (``nvidia-smi nvlink -s -e``), the links merge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.textscan import Problems, is_na, split_lines, to_float, to_int
from fleet.collectors.parsers.values import NON_NEGATIVE, NVLINK_GBYTES_S, U32, U64, is_digits

KIND = "nvidia-smi-nvlink"

_LINK = re.compile(r"^\s+Link ([0-9]{1,3}): ", re.ASCII)
_UUID = "(UUID: "


def _gpu_line(line: str) -> tuple[int, str, str | None] | None:
    """``GPU 0: NVIDIA H100 PCIe (UUID: GPU-...)`` -> (0, name, uuid); None for other lines."""
    if not line.startswith("GPU "):
        return None
    number, sep, rest = line[4:].partition(": ")
    if not sep or not is_digits(number) or not U32.holds(int(number)):
        return None
    rest = rest.rstrip()
    at = rest.rfind(_UUID)
    if rest.endswith(")") and at >= 0 and ")" not in rest[at:-1]:
        return int(number), rest[:at].rstrip(), rest[at + len(_UUID) : -1]
    return int(number), rest, None


@dataclass(frozen=True, slots=True)
class NvlinkLink:
    link: int
    active: bool | None  # None when the input had no status (-s) for this link
    speed_gbytes_s: float | None  # per-link speed printed by -s, GB/s
    errors: tuple[tuple[str, int | float | None], ...]  # -e counters, e.g. ("replay_errors", 0)

    def error(self, name: str) -> int | float | None:
        """One counter by snake-case name (``"crc_errors"``), None when absent or N/A."""
        return dict(self.errors).get(name)


@dataclass(frozen=True, slots=True)
class NvlinkGpu:
    index: int
    name: str
    uuid: str | None
    links: tuple[NvlinkLink, ...]


@dataclass(frozen=True, slots=True)
class NvidiaSmiNvlink:
    gpus: tuple[NvlinkGpu, ...]
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


def _snake(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


@dataclass
class _Link:
    active: bool | None = None
    speed: float | None = None
    errors: dict[str, int | float | None] | None = None


@parser
def parse_nvidia_smi_nvlink(text: str) -> NvidiaSmiNvlink:
    """Parse ``nvlink -s`` and/or ``nvlink -e`` output; never raises."""
    problems = Problems()
    gpus: list[tuple[int, str, str | None, dict[int, _Link]]] = []
    snake: dict[str, str] = {}  # counter name as printed -> snake case, for this parse
    for number, line in enumerate(split_lines(text), start=1):
        if not line.strip():
            continue
        if gpu := _gpu_line(line):
            gpus.append((*gpu, {}))
            continue
        match = _LINK.match(line)
        if not gpus or match is None:
            problems.unknown(number, line)
            continue
        links = gpus[-1][3]
        rest = line[match.end() :].strip()
        name, sep, raw = rest.partition(":")
        name, raw = name.strip(), raw.strip()
        if rest == "<inactive>":
            links.setdefault(int(match.group(1)), _Link()).active = False
        elif rest.endswith(" GB/s") and not sep:
            speed = to_float(rest[:-5]) if rest[:-5].replace(".", "").isdigit() else None
            if speed is None:
                problems.unknown(number, line)
                continue
            link = links.setdefault(int(match.group(1)), _Link())
            link.active, link.speed = True, NVLINK_GBYTES_S.check(speed, problems, number, line, "link speed")
        elif sep and name[:1].isascii() and name[:1].isalpha() and raw:
            link = links.setdefault(int(match.group(1)), _Link())
            value: int | float | None = to_int(raw)
            if value is None and not is_na(raw):
                value = to_float(raw)
                if value is None:
                    problems.add(number, line, "counter value not understood")
            value = (U64 if isinstance(value, int) else NON_NEGATIVE).check(value, problems, number, line, name)
            if link.errors is None:
                link.errors = {}
            key = snake.get(name)
            if key is None:
                key = snake[name] = _snake(name)
            link.errors[key] = value
        else:
            problems.unknown(number, line)
    return NvidiaSmiNvlink(
        gpus=tuple(
            NvlinkGpu(
                index=index,
                name=name,
                uuid=uuid,
                links=tuple(
                    NvlinkLink(n, link.active, link.speed, tuple((link.errors or {}).items()))
                    for n, link in sorted(links.items())
                ),
            )
            for index, name, uuid, links in gpus
        ),
        problems=problems.result(),
        unknown_lines=problems.unknown_lines,
    )
