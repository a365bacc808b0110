"""``nvidia-smi topo -m``: how each GPU and NIC reaches every other, and their CPU/NUMA affinity.

Why: the GPU-to-NIC path (PIX/PXB good, NODE/SYS bad) decides whether
GPUDirect RDMA is fast, and NV# says how many NVLinks join two GPUs.

Accepted layouts: tab-separated (current drivers) or space-aligned (as
pasted into docs), ANSI SGR codes around the header, the old ``SOC`` code,
an empty spare cell before "GPU NUMA ID", NIC rows without affinity cells,
and the mangled tables seen in bug reports where a missing tab glues two
cells together (``PXBNODE``): such cells are split again and a problem says
so. A row that wrapped onto the next line is joined back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.textscan import Problems, split_lines, strip_ansi

KIND = "nvidia-smi-topo"

# NV# is the number of bonded NVLinks (18 at most so far); three digits bound it.
_CODE = re.compile(r"X|SYS|SOC|NODE|PHB|PXB|PIX|NV[0-9]{1,3}")
_CODES = re.compile(rf"(?:{_CODE.pattern})+")
_LEGEND_CODE = re.compile(r"NV#|[A-Z]+")
_NIC_LEGEND = re.compile(r"^\s+(NIC[0-9]{1,4})\s*:\s*(\S+)\s*$", re.ASCII)


def _legend(line: str) -> tuple[str, str] | None:
    """``"  NV#  = Connection traversing a bonded set of # NVLinks"`` -> (code, meaning)."""
    code, sep, meaning = line.partition("=")
    code, meaning = code.strip(), meaning.strip()
    if not line[:1].isspace() or not sep or not meaning or not _LEGEND_CODE.fullmatch(code):
        return None
    return code, meaning


@dataclass(frozen=True, slots=True)
class TopoDevice:
    """A row of the matrix. ``device`` is the RDMA device name for NICs (from the NIC legend)."""

    label: str  # "GPU0", "NIC3", or a device name in old layouts ("mlx4_0")
    kind: str  # "gpu" or "nic"
    device: str  # "mlx5_3" for NIC3; the label itself for GPUs
    cpu_affinity: str | None  # CPU list as printed ("0-55,112-167"), None when empty
    numa_affinity: str | None
    gpu_numa_id: str | None
    attributes: tuple[tuple[str, str], ...]  # every column after the matrix, as printed


@dataclass(frozen=True, slots=True)
class TopoLink:
    """One cell of the matrix: how ``src`` reaches ``dst``."""

    src: str
    dst: str
    connection: str  # X, NV18, PIX, PXB, PHB, NODE, SYS, SOC as printed
    nvlinks: int | None  # the # of NV#, None for PCIe paths


@dataclass(frozen=True, slots=True)
class NvidiaSmiTopo:
    columns: tuple[str, ...]  # device column labels in order
    devices: tuple[TopoDevice, ...]
    links: tuple[TopoLink, ...]
    legend: tuple[tuple[str, str], ...]  # code -> meaning as printed
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


def _cells(line: str) -> list[str]:
    if "\t" in line:
        return [c.strip() for c in line.split("\t")]
    return [c for c in re.split(r"\s{2,}", line.strip())]


def _split_codes(cell: str) -> list[str] | None:
    """``"PXBNODE"`` -> ``["PXB", "NODE"]``; ``"X NODE"`` -> ``["X", "NODE"]``; None if not codes."""
    parts: list[str] = []
    for word in cell.split():
        if not _CODES.fullmatch(word):
            return None
        parts.extend(_CODE.findall(word))
    return parts or None


@parser
def parse_nvidia_smi_topo(text: str) -> NvidiaSmiTopo:
    """Parse ``nvidia-smi topo -m`` output; never raises."""
    problems = Problems()
    lines = split_lines(strip_ansi(text))
    columns: list[str] = []
    affinity: list[str] = []
    rows: list[tuple[int, str, list[str]]] = []
    legend: list[tuple[str, str]] = []
    nic_names: dict[str, str] = {}
    section = "matrix"
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped == "Legend:":
            section = "legend"
            continue
        if stripped == "NIC Legend:":
            section = "nic-legend"
            continue
        if section == "legend" and (entry := _legend(line)):
            legend.append(entry)
            continue
        if section in {"legend", "nic-legend"} and (match := _NIC_LEGEND.match(line)):
            nic_names[match.group(1)] = match.group(2)
            continue
        if section != "matrix":
            problems.unknown(number, line)
            continue
        cells = _cells(line)
        if not columns and "GPU0" in cells:
            header = [c for c in cells if c]
            # Device labels have no spaces; "CPU Affinity" and any newer column do.
            split = next((i for i, c in enumerate(header) if " " in c), len(header))
            columns, affinity = header[:split], header[split:]
            continue
        if columns and cells and cells[0] in columns:
            rows.append((number, cells[0], cells[1:]))
            continue
        if rows and columns and _split_codes(cells[0] if cells else "") is not None:
            # A wrapped row: the rest of the previous row's cells.
            prev_number, label, prev = rows[-1]
            rows[-1] = (prev_number, label, prev + cells)
            problems.add(number, line, f"continuation of the {label} row joined")
            continue
        problems.unknown(number, line)
    if not columns and lines:
        problems.add(0, "", "no topo -m header row (GPU0 ...) found")
    devices: list[TopoDevice] = []
    links: list[TopoLink] = []
    for number, label, raw in rows:
        matrix, rest = _row_cells(raw, len(columns))
        if matrix is None:
            problems.add(number, "\t".join(raw), "more matrix cells than columns")
            continue
        if len(matrix) < len(columns):
            problems.add(
                number, label, f"row has {len(matrix)} matrix cells, expected {len(columns)}"
            )
            continue
        if any(len(_split_codes(c) or ()) > 1 for c in raw[: len(columns)]):
            problems.add(number, "\t".join(raw), "cells glued together by a missing tab, split")
        for dst, code in zip(columns, matrix, strict=False):
            nvlinks = int(code[2:]) if code.startswith("NV") else None
            links.append(TopoLink(label, dst, code, nvlinks))
        values = _affinity_values(rest, len(affinity))
        by_name = dict(zip(affinity, values, strict=False))
        kind = "gpu" if re.fullmatch(r"GPU[0-9]+", label) else "nic"
        devices.append(
            TopoDevice(
                label=label,
                kind=kind,
                device=nic_names.get(label, label),
                cpu_affinity=by_name.get("CPU Affinity") or None,
                numa_affinity=by_name.get("NUMA Affinity") or None,
                gpu_numa_id=by_name.get("GPU NUMA ID") or None,
                attributes=tuple(zip(affinity, values, strict=False)),
            )
        )
    return NvidiaSmiTopo(
        columns=tuple(columns),
        devices=tuple(devices),
        links=tuple(links),
        legend=tuple(legend),
        problems=problems.result(),
        unknown_lines=problems.unknown_lines,
    )


def _row_cells(raw: list[str], width: int) -> tuple[list[str] | None, list[str]]:
    """Split a row's cells into ``width`` topology codes and the affinity cells after them."""
    matrix: list[str] = []
    index = 0
    while index < len(raw) and len(matrix) < width:
        codes = _split_codes(raw[index])
        if codes is None:
            if raw[index] == "":
                index += 1
                continue
            break
        matrix.extend(codes)
        index += 1
    if len(matrix) > width:
        return None, []
    return matrix, raw[index:]


def _affinity_values(rest: list[str], count: int) -> list[str]:
    """Affinity cells, dropping the spare empty cell recent drivers print before GPU NUMA ID."""
    values = list(rest)
    position = len(values) - 1
    while len(values) > count and position >= 1:
        if values[position] == "":
            del values[position]
        position -= 1
    return values[:count]
