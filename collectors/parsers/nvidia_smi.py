"""``nvidia-smi --query-gpu=... --format=csv`` and ``nvidia-smi -q`` (``--query``) into GPU records.

Why both under one kind: they answer the same question (what each GPU
reports right now) and ``-q`` is the long form of ``--query``. The CSV is
what the collector runs in command mode; ``-q`` is what engineers paste.

CSV: with or without the header, with or without units (``nounits`` puts the
unit only in the header, ``utilization.gpu [%]``). Without a header the column
names are unknown; pass ``columns`` (the ``--query-gpu`` list the caller asked
for); otherwise the rows are only listed as problems, no GPU is made up.
Markers such as ``[Not Supported]``, ``[N/A]``, ``[GPU is lost]`` give None and
are listed per GPU in ``unavailable``.

Units in the typed fields: temperatures in degrees C, memory in MiB, power in
W, clocks in MHz, utilization in percent.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Sequence
from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.textscan import Problems, split_lines, to_float, to_int
from fleet.collectors.parsers.values import (
    CLOCK_MHZ,
    GPU_MEMORY_MIB,
    GPU_POWER_W,
    GPU_TEMP_C,
    PCIE_GEN,
    PCIE_WIDTH,
    PERCENT,
    U32,
    U64,
    Range,
    read_int,
)

KIND = "nvidia-smi-query"

# ``--query-gpu`` property -> typed field. Aliases are the ones nvidia-smi accepts.
_CSV_FIELDS: dict[str, str] = {
    "index": "index",
    "uuid": "uuid",
    "gpu_uuid": "uuid",
    "name": "name",
    "gpu_name": "name",
    "pci.bus_id": "pci_bus_id",
    "gpu_bus_id": "pci_bus_id",
    "pstate": "pstate",
    "temperature.gpu": "temperature_gpu_c",
    "temperature.gpu.current": "temperature_gpu_c",
    "utilization.gpu": "utilization_gpu_pct",
    "utilization.memory": "utilization_memory_pct",
    "memory.total": "memory_total_mib",
    "memory.used": "mem_used_mib",
    "memory.free": "memory_free_mib",
    "power.draw": "power_w",
    "power.limit": "power_limit_w",
    "clocks.sm": "clocks_sm_mhz",
    "clocks.current.sm": "clocks_sm_mhz",
    "clocks.max.sm": "clocks_max_sm_mhz",
    "clocks_event_reasons.active": "clocks_event_reasons",
    "clocks_throttle_reasons.active": "clocks_event_reasons",
    "ecc.errors.uncorrected.volatile.total": "ecc_uncorrected_volatile",
    "ecc.errors.uncorrected.aggregate.total": "ecc_uncorrected_aggregate",
    "pcie.replay_counter": "pcie_replays",
    "pcie.link.gen.current": "pcie_link_gen_current",
    "pcie.link.width.current": "pcie_link_width_current",
    "driver_version": "driver_version",
}

# ``-q`` section path -> typed field (first match wins; older drivers use "Power Readings").
_Q_FIELDS: dict[str, str] = {
    "Product Name": "name",
    "GPU UUID": "uuid",
    "PCI/Bus Id": "pci_bus_id",
    "Performance State": "pstate",
    "Temperature/GPU Current Temp": "temperature_gpu_c",
    "Utilization/Gpu": "utilization_gpu_pct",
    "Utilization/Memory": "utilization_memory_pct",
    "FB Memory Usage/Total": "memory_total_mib",
    "FB Memory Usage/Used": "mem_used_mib",
    "FB Memory Usage/Free": "memory_free_mib",
    "GPU Power Readings/Power Draw": "power_w",
    "Power Readings/Power Draw": "power_w",
    "GPU Power Readings/Current Power Limit": "power_limit_w",
    "Power Readings/Power Limit": "power_limit_w",
    "Clocks/SM": "clocks_sm_mhz",
    "Max Clocks/SM": "clocks_max_sm_mhz",
    "ECC Errors/Volatile/DRAM Uncorrectable": "ecc_uncorrected_volatile",
    "ECC Errors/Aggregate/DRAM Uncorrectable": "ecc_uncorrected_aggregate",
    "PCI/Replays Since Reset": "pcie_replays",
    "PCI/GPU Link Info/PCIe Generation/Current": "pcie_link_gen_current",
    "PCI/GPU Link Info/Link Width/Current": "pcie_link_width_current",
}

_TEXT_FIELDS = frozenset({"uuid", "name", "pci_bus_id", "pstate", "driver_version"})
_INT_FIELDS = frozenset(
    {
        "index",
        "ecc_uncorrected_volatile",
        "ecc_uncorrected_aggregate",
        "pcie_replays",
        "pcie_link_gen_current",
        "pcie_link_width_current",
    }
)
_MARKER = re.compile(r"^\[[^\]]*\]$")
# What each typed field can hold (``values`` gives the sources).
_RANGES: dict[str, Range] = {
    "index": U32,
    "temperature_gpu_c": GPU_TEMP_C,
    "utilization_gpu_pct": PERCENT,
    "utilization_memory_pct": PERCENT,
    "memory_total_mib": GPU_MEMORY_MIB,
    "mem_used_mib": GPU_MEMORY_MIB,
    "memory_free_mib": GPU_MEMORY_MIB,
    "power_w": GPU_POWER_W,
    "power_limit_w": GPU_POWER_W,
    "clocks_sm_mhz": CLOCK_MHZ,
    "clocks_max_sm_mhz": CLOCK_MHZ,
    "clocks_event_reasons": U64,
    "ecc_uncorrected_volatile": U64,
    "ecc_uncorrected_aggregate": U64,
    "pcie_replays": U64,
    "pcie_link_gen_current": PCIE_GEN,
    "pcie_link_width_current": PCIE_WIDTH,
}
_MEMORY_UNITS = {"KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0}


@dataclass(frozen=True, slots=True)
class GpuQuery:
    """One GPU as nvidia-smi reported it. None: not printed, or printed as a marker."""

    index: int | None  # the ``index`` field when queried, else the position in the output
    uuid: str | None
    name: str | None
    pci_bus_id: str | None
    pstate: str | None
    driver_version: str | None
    temperature_gpu_c: float | None
    utilization_gpu_pct: float | None
    utilization_memory_pct: float | None
    memory_total_mib: float | None
    mem_used_mib: float | None
    memory_free_mib: float | None
    power_w: float | None  # power.draw
    power_limit_w: float | None
    clocks_sm_mhz: float | None
    clocks_max_sm_mhz: float | None
    clocks_event_reasons: int | None  # bitmask of clocks_event_reasons.active
    clocks_event_reasons_active: tuple[str, ...]  # -q: names of the active reasons
    ecc_uncorrected_volatile: int | None
    ecc_uncorrected_aggregate: int | None
    pcie_replays: int | None
    pcie_link_gen_current: int | None
    pcie_link_width_current: int | None
    fields: tuple[tuple[str, str], ...]  # every value as printed: CSV property or -q path
    unavailable: tuple[tuple[str, str], ...]  # property -> marker ("[Not Supported]", "N/A")


@dataclass(frozen=True, slots=True)
class NvidiaSmiQuery:
    """The GPUs of one ``nvidia-smi`` query run."""

    source_format: str  # "csv", "q" or "" when nothing was recognised
    columns: tuple[str, ...]  # CSV property names in order, without units; () for -q
    driver_version: str | None
    cuda_version: str | None
    gpus: tuple[GpuQuery, ...]
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


@parser
def parse_nvidia_smi_query(text: str, columns: Sequence[str] | None = None) -> NvidiaSmiQuery:
    """Parse ``--query-gpu`` CSV (header optional when ``columns`` is given) or ``-q`` text."""
    lines = split_lines(text)
    problems = Problems()
    if any(line.strip().startswith("==============NVSMI LOG") for line in lines[:5]) or any(
        line.startswith("Attached GPUs") for line in lines[:20]
    ):
        return _parse_q(lines, problems)
    return _parse_csv(lines, problems, columns)


def _header_name(cell: str) -> tuple[str, str]:
    """``"memory.used [MiB]"`` -> (``"memory.used"``, ``"MiB"``); read with ``str.find``, not a
    pattern, so that a hostile header line costs one pass."""
    stripped = cell.strip()
    bracket = stripped.find("[")
    if stripped.endswith("]") and bracket > 0:
        name, unit = stripped[:bracket].rstrip(), stripped[bracket + 1 : -1]
        if "]" not in name and "]" not in unit:
            return name, unit
    return stripped, ""


def _looks_like_header(cells: list[str]) -> bool:
    names = [_header_name(c)[0] for c in cells]
    known = sum(1 for n in names if n in _CSV_FIELDS or n == "timestamp")
    return known >= max(1, len(names) // 2) and not any(to_float(n) is not None for n in names)


def _parse_csv(
    lines: list[str], problems: Problems, columns: Sequence[str] | None
) -> NvidiaSmiQuery:
    names: list[str] = [c.strip() for c in columns] if columns else []
    units: list[str] = [""] * len(names)
    gpus: list[GpuQuery] = []
    driver: str | None = None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        cells = _csv_cells(line)
        if cells is None:
            problems.unknown(number, line, "not CSV")
            continue
        if to_float(cells[0]) is None and _looks_like_header(cells):
            if names and [_header_name(c)[0] for c in cells] != names:
                problems.add(number, line, "header differs from the columns asked for; header used")
            names = [_header_name(c)[0] for c in cells]
            units = [_header_name(c)[1] for c in cells]
            continue
        if not names:
            problems.unknown(number, line, "no header and no columns given: column names unknown")
            continue
        if len(cells) != len(names):
            problems.unknown(number, line, f"row has {len(cells)} values, header has {len(names)}")
            continue
        gpu = _csv_gpu(number, cells, names, units, len(gpus), problems)
        driver = driver or gpu.driver_version
        gpus.append(gpu)
    source = "csv" if gpus or names else ""
    return NvidiaSmiQuery(
        source_format=source,
        columns=tuple(names),
        driver_version=driver,
        cuda_version=None,
        gpus=tuple(gpus),
        problems=problems.result(),
        unknown_lines=problems.unknown_lines,
    )


def _csv_cells(line: str) -> list[str] | None:
    """The cells of one CSV line; nvidia-smi never quotes, so the csv module is the slow path."""
    if '"' not in line:
        return [cell.strip() for cell in line.split(",")]
    try:
        return [cell.strip() for cell in next(csv.reader([line], skipinitialspace=True))]
    except (csv.Error, StopIteration):
        return None


def _csv_gpu(
    number: int,
    cells: list[str],
    names: list[str],
    units: list[str],
    position: int,
    problems: Problems,
) -> GpuQuery:
    typed: dict[str, object] = {}
    unavailable: list[tuple[str, str]] = []
    for name, unit, raw in zip(names, units, cells, strict=True):
        if _MARKER.match(raw) or raw in {"N/A", "Not Supported"}:
            unavailable.append((name, raw))
            continue
        target = _CSV_FIELDS.get(name)
        if target is None:
            continue
        value = _typed(target, raw, unit)
        if value is None:
            problems.add(number, raw, f"{name}: value not understood")
        elif _in_range(target, value, problems, number, raw, name):
            typed[target] = value
    return _gpu(typed, position, tuple(zip(names, cells, strict=True)), tuple(unavailable), ())


def _typed(target: str, raw: str, unit: str) -> object:
    """A printed value in the field's unit; None when it cannot be read."""
    if target in _TEXT_FIELDS:
        return raw or None
    if target == "clocks_event_reasons":
        return read_int(raw)
    if target in _INT_FIELDS:
        return to_int(raw.rstrip("x").strip())
    value = to_float(raw)
    if value is None:
        return None
    printed_unit = raw.strip().split()[-1] if len(raw.split()) > 1 else unit
    if target.endswith("_mib"):
        value *= _MEMORY_UNITS.get(printed_unit, 1.0)
    return value


def _in_range(target: str, value: object, problems: Problems, line: int, text: str, name: str) -> bool:
    """True when ``value`` is one its field can hold (text fields always); else a problem."""
    where = _RANGES.get(target)
    if where is None or not isinstance(value, int | float):
        return True
    return where.check(value, problems, line, text, name) is not None


def _gpu(
    typed: dict[str, object],
    position: int,
    fields: tuple[tuple[str, str], ...],
    unavailable: tuple[tuple[str, str], ...],
    reasons: tuple[str, ...],
) -> GpuQuery:
    def text(key: str) -> str | None:
        value = typed.get(key)
        return value if isinstance(value, str) else None

    def number(key: str) -> float | None:
        value = typed.get(key)
        return float(value) if isinstance(value, int | float) else None

    def integer(key: str) -> int | None:
        value = typed.get(key)
        return value if isinstance(value, int) else None

    index = integer("index")
    return GpuQuery(
        index=position if index is None else index,
        uuid=text("uuid"),
        name=text("name"),
        pci_bus_id=text("pci_bus_id"),
        pstate=text("pstate"),
        driver_version=text("driver_version"),
        temperature_gpu_c=number("temperature_gpu_c"),
        utilization_gpu_pct=number("utilization_gpu_pct"),
        utilization_memory_pct=number("utilization_memory_pct"),
        memory_total_mib=number("memory_total_mib"),
        mem_used_mib=number("mem_used_mib"),
        memory_free_mib=number("memory_free_mib"),
        power_w=number("power_w"),
        power_limit_w=number("power_limit_w"),
        clocks_sm_mhz=number("clocks_sm_mhz"),
        clocks_max_sm_mhz=number("clocks_max_sm_mhz"),
        clocks_event_reasons=integer("clocks_event_reasons"),
        clocks_event_reasons_active=reasons,
        ecc_uncorrected_volatile=integer("ecc_uncorrected_volatile"),
        ecc_uncorrected_aggregate=integer("ecc_uncorrected_aggregate"),
        pcie_replays=integer("pcie_replays"),
        pcie_link_gen_current=integer("pcie_link_gen_current"),
        pcie_link_width_current=integer("pcie_link_width_current"),
        fields=fields,
        unavailable=unavailable,
    )


_Q_GPU = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_REASONS = ("Clocks Event Reasons/", "Clocks Throttle Reasons/", "Clocks Throttle Reason/")


def _parse_q(lines: list[str], problems: Problems) -> NvidiaSmiQuery:
    """``nvidia-smi -q``: indentation (4 spaces a level) gives each key its section path."""
    gpus: list[GpuQuery] = []
    top: dict[str, str] = {}
    current: list[tuple[str, str]] | None = None
    stack: list[tuple[int, str]] = []

    def finish() -> None:
        if current is not None:
            gpus.append(_q_gpu(current, len(gpus), top.get("Driver Version"), problems))

    for number, line in enumerate(lines, start=1):
        if not line.strip() or line.strip().startswith("====="):
            continue
        gpu_match = _Q_GPU.match(line)
        if gpu_match:
            finish()
            current = [("PCI/Bus Id", gpu_match.group(1))]
            stack = []
            continue
        indent = len(line) - len(line.lstrip(" "))
        colon = line.find(":")
        name = line[indent:colon].rstrip() if colon >= 0 else ""
        section = line[indent:].rstrip() if colon < 0 and not line[indent : indent + 1].isspace() else ""
        if not name and not section:
            indent = 0
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if name:
            key = "/".join([s for _, s in stack] + [name.strip()])
            value = line[colon + 1 :].strip()
            if current is None:
                if indent == 0:
                    top[key] = value
                else:
                    problems.unknown(number, line)
            else:
                current.append((key, value))
        elif section and current is not None and indent > 0:
            stack.append((indent, section))
        else:
            problems.unknown(number, line)
    finish()
    return NvidiaSmiQuery(
        source_format="q",
        columns=(),
        driver_version=top.get("Driver Version"),
        cuda_version=top.get("CUDA Version"),
        gpus=tuple(gpus),
        problems=problems.result(),
        unknown_lines=problems.unknown_lines,
    )


def _q_gpu(
    pairs: list[tuple[str, str]], position: int, driver: str | None, problems: Problems
) -> GpuQuery:
    typed: dict[str, object] = {"driver_version": driver} if driver else {}
    unavailable: list[tuple[str, str]] = []
    reasons: list[str] = []
    seen: dict[str, str] = {}
    for key, value in pairs:
        seen.setdefault(key, value)
        if value in {"N/A", "[N/A]", "Not Supported", "[Not Supported]"}:
            unavailable.append((key, value))
            continue
        if key.startswith(_REASONS) and value == "Active":
            reasons.append(key.split("/")[-1])
        target = _Q_FIELDS.get(key)
        if target is None or target in typed:
            continue
        parsed = _typed(target, value, "")
        if parsed is None:
            problems.add(0, f"{key}: {value}", "value not understood")
        elif _in_range(target, parsed, problems, 0, f"{key}: {value}", key):
            typed[target] = parsed
    fields = tuple(pairs)
    return _gpu(typed, position, fields, tuple(unavailable), tuple(reasons))
