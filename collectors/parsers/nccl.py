"""nccl-tests output (``all_reduce_perf`` and its siblings: all_gather, reduce_scatter, ...).

Why: the all-reduce probe compares bus bandwidth with what the hardware
should reach; the acceptance report needs every row, both the out-of-place
and in-place halves, and the validation result.

Units: sizes in bytes, times in microseconds, algbw/busbw in GB/s (1e9
bytes/s, as nccl-tests prints them). ``#wrong`` is None where the tool
printed ``N/A`` (validation off); older builds print a max error as a float
there, which is kept as the float.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.textscan import Problems, is_na, split_lines, to_float, to_int
from fleet.collectors.parsers.values import NON_NEGATIVE, PID, U32, U64, Range

_AMOUNT = Range(0, 2**63 - 1, "a non-negative 64-bit amount")  # sizes and counts: size_t
_ROOT = Range(-1, 2**31 - 1, "a rank, or -1 for none")  # nccl-tests prints root -1 when unused

KIND = "nccl"

_PARAMS = re.compile(r"^#\s*nThread\b")
_RANK = re.compile(
    r"^#\s+Rank\s+([0-9]{1,10})\s+Group\s+([0-9]{1,10})\s+Pid\s+([0-9]{1,10})\s+on\s+(\S+)\s+"
    r"device\s+([0-9]{1,10})\s+\[([^\]]*)\]\s*(.*)$",
    re.ASCII,
)
_OOB = re.compile(r"^#\s*Out of bounds values\s*:\s*([0-9]{1,20})\s*(\S*)", re.ASCII)
_AVG = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)")
_VERSION = re.compile(r"^#?\s*NCCL version\s+(\S+)")
# Table furniture that carries no information of its own.
_LAYOUT = re.compile(r"^(?:Using devices|out-of-place\s+in-place|\(B\)\s+\(elements\).*)$")
_NCCL_LOG = re.compile(r"^\S+:\d+:\d+ \[\d+\] NCCL (INFO|WARN|TRACE|ERROR)\b")
_HALF = frozenset({"time", "algbw", "busbw", "#wrong", "error"})  # once per half of a row
_ERROR = re.compile(r"(?i)fail|error|warn|abort|timeout|mismatch|invalid")


@dataclass(frozen=True, slots=True)
class NcclRank:
    rank: int
    group: int
    pid: int
    host: str
    device: int
    pci_bus_id: str  # as printed inside [...], e.g. "0000:04:00" or "0x4"
    device_name: str


@dataclass(frozen=True, slots=True)
class NcclRow:
    size_bytes: int
    count_elements: int
    dtype: str
    redop: str | None  # None when the build prints no redop column
    root: int | None
    oop_time_usec: float | None
    oop_algbw_gbytes_s: float | None
    oop_busbw_gbytes_s: float | None
    oop_wrong: float | None
    ip_time_usec: float | None
    ip_algbw_gbytes_s: float | None
    ip_busbw_gbytes_s: float | None
    ip_wrong: float | None


@dataclass(frozen=True, slots=True)
class Nccl:
    params: tuple[tuple[str, str], ...]  # the "# nThread 1 nGpus 1 ..." line as pairs
    n_threads: int | None
    n_gpus: int | None
    min_bytes: int | None
    max_bytes: int | None
    iters: int | None
    nccl_version: str | None
    ranks: tuple[NcclRank, ...]
    rows: tuple[NcclRow, ...]
    out_of_bounds: int | None
    out_of_bounds_ok: bool | None
    avg_busbw_gbytes_s: float | None
    notes: tuple[str, ...]  # other "#" remarks, e.g. "Reducing maxBytes to ..."
    errors: tuple[str, ...]  # failure lines printed by the test, and NCCL WARN/ERROR log lines
    nccl_log_lines: int  # NCCL_DEBUG=INFO lines ("host:pid:tid [dev] NCCL INFO ..."), counted
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


def _params(line: str) -> list[tuple[str, str]]:
    """``# nThread 1 nGpus 1 ... step: 2(factor) warmup iters: 5`` -> name/value pairs."""
    pairs: list[tuple[str, str]] = []
    words: list[str] = []
    for token in line.lstrip("#").split():
        if token[0].isdigit() or token[0] in "+-":
            pairs.append((" ".join(words), token))
            words = []
        else:
            words.append(token.rstrip(":"))
    return pairs


def _value(text: str) -> float | None:
    return None if is_na(text) else to_float(text)


@parser
def parse_nccl(text: str) -> Nccl:
    """Parse one nccl-tests run; never raises."""
    problems = Problems()
    params: list[tuple[str, str]] = []
    ranks: list[NcclRank] = []
    rows: list[NcclRow] = []
    notes: list[str] = []
    errors: list[str] = []
    columns: list[str] = []
    version: str | None = None
    oob: int | None = None
    oob_ok: bool | None = None
    avg: float | None = None
    log_lines = 0
    for number, line in enumerate(split_lines(text), start=1):
        stripped = line.strip()
        if not stripped or stripped == "#":
            continue
        if log := _NCCL_LOG.match(stripped):
            log_lines += 1
            if log.group(1) in {"WARN", "ERROR"}:
                errors.append(stripped)
        elif _PARAMS.match(stripped):
            params = _params(stripped)
        elif match := _RANK.match(stripped):
            rank, group, pid, device = (int(match.group(g)) for g in (1, 2, 3, 5))
            if not (U32.holds(rank) and U32.holds(group) and PID.holds(pid) and U32.holds(device)):
                problems.add(number, line, "rank line with a number outside its range; left out")
                continue
            ranks.append(
                NcclRank(
                    rank=rank,
                    group=group,
                    pid=pid,
                    host=match.group(4),
                    device=device,
                    pci_bus_id=match.group(6),
                    device_name=match.group(7).strip(),
                )
            )
        elif match := _OOB.match(stripped):
            oob = U64.check(int(match.group(1)), problems, number, line, "out of bounds values")
            oob_ok = match.group(2) == "OK"
        elif match := _AVG.match(stripped):
            avg = NON_NEGATIVE.check(to_float(match.group(1)), problems, number, line, "avg bus bandwidth")
        elif match := _VERSION.match(stripped):
            version = match.group(1)
        elif stripped.startswith("#") and "size" in stripped and "time" in stripped:
            columns = stripped.lstrip("#").split()
        elif stripped.startswith("#"):
            body = stripped.lstrip("#").strip()
            if not _LAYOUT.match(body):
                notes.append(body)
        elif columns and stripped[0].isdigit():
            row = _row(stripped.split(), columns)
            if row is None:
                problems.unknown(number, line, "result row does not match the column header")
            elif not _row_in_range(row):
                problems.add(number, line, "result row with a negative or impossible value; left out")
            else:
                rows.append(row)
        elif _ERROR.search(stripped):
            errors.append(stripped)
        else:
            problems.unknown(number, line)
    if not params and not rows and not columns:
        problems.add(0, "", "no nccl-tests parameter line or result table found")
    named = dict(params)

    def param(name: str, where: Range) -> int | None:
        return where.check(to_int(named.get(name, "")), problems, 0, named.get(name, ""), name)

    return Nccl(
        params=tuple(params),
        n_threads=param("nThread", U32),
        n_gpus=param("nGpus", U32),
        min_bytes=param("minBytes", _AMOUNT),
        max_bytes=param("maxBytes", _AMOUNT),
        iters=param("iters", U32),
        nccl_version=version,
        ranks=tuple(ranks),
        rows=tuple(rows),
        out_of_bounds=oob,
        out_of_bounds_ok=oob_ok,
        avg_busbw_gbytes_s=avg,
        notes=tuple(notes),
        errors=tuple(errors),
        nccl_log_lines=log_lines,
        problems=problems.result(),
        unknown_lines=problems.unknown_lines,
    )


def _row_in_range(row: NcclRow) -> bool:
    """Sizes and counts are non-negative amounts; times, bandwidths and #wrong non-negative."""
    amounts = (row.size_bytes, row.count_elements)
    measured = (
        row.oop_time_usec, row.oop_algbw_gbytes_s, row.oop_busbw_gbytes_s, row.oop_wrong,
        row.ip_time_usec, row.ip_algbw_gbytes_s, row.ip_busbw_gbytes_s, row.ip_wrong,
    )  # fmt: skip
    return (
        all(_AMOUNT.holds(v) for v in amounts)
        and (row.root is None or _ROOT.holds(row.root))
        and all(NON_NEGATIVE.holds(v) for v in measured if v is not None)
    )


def _row(cells: list[str], columns: list[str]) -> NcclRow | None:
    """One result row, its cells named by the header (``time`` appears once per half)."""
    if len(cells) != len(columns):
        return None
    lead = {name: cell for name, cell in zip(columns, cells, strict=True) if name not in _HALF}
    halves: list[dict[str, str]] = [{}, {}]
    half = 0
    for name, cell in zip(columns, cells, strict=True):
        if name in _HALF:
            if name in halves[half]:
                half = 1
            halves[half][name] = cell
    size, count = to_int(lead.get("size", "")), to_int(lead.get("count", ""))
    if size is None or count is None:
        return None
    oop, ip = halves

    def wrong(half_cells: dict[str, str]) -> float | None:
        return _value(half_cells.get("#wrong", half_cells.get("error", "N/A")))

    return NcclRow(
        size_bytes=size,
        count_elements=count,
        dtype=lead.get("type", ""),
        redop=lead.get("redop"),
        root=to_int(lead.get("root", "")),
        oop_time_usec=_value(oop.get("time", "N/A")),
        oop_algbw_gbytes_s=_value(oop.get("algbw", "N/A")),
        oop_busbw_gbytes_s=_value(oop.get("busbw", "N/A")),
        oop_wrong=wrong(oop),
        ip_time_usec=_value(ip.get("time", "N/A")),
        ip_algbw_gbytes_s=_value(ip.get("algbw", "N/A")),
        ip_busbw_gbytes_s=_value(ip.get("busbw", "N/A")),
        ip_wrong=wrong(ip),
    )
