"""perftest (``ib_send_lat``, ``ib_write_lat``, ``ib_read_lat``, ``ib_atomic_lat``,
``ib_send_bw``, ``ib_write_bw``, ``ib_read_bw``) client and server output.

Why: the latency/bandwidth probe stores every row with its raw output, and an
engineer compares them across months, so nothing printed may be lost or
reinterpreted.

What is kept: the test title, every ``key : value`` of the header block (two
per line), the local/remote QP addresses, every row of the result table under
the column names and units as printed, warnings (CPU frequency, ...).

Units: latency columns are microseconds (``t_typical_usec``). Bandwidth rows
keep the value in the unit the header prints (``bw_unit``: ``MB/sec`` =
2**20 bytes/s, or ``Gb/sec`` = 1e9 bit/s) and also give it in Gbit/s
(``bw_avg_gbps``). The unit label is checked against MsgRate x size: a server
started without ``--report_gbits`` prints the MB/sec label over the Gb/sec
values of a client that used it; then ``bw_unit_inferred`` says ``Gb/sec``,
the Gbit/s fields follow the inferred unit, and a problem names the mismatch.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.textscan import Problems, split_lines, to_float, to_int
from fleet.collectors.parsers.values import LINK_RATE_GBPS, U32, Range

# Every cell of a result row (sizes, iterations, microseconds, bandwidths, message rates) is
# a non-negative amount; sizes and iteration counts are 64-bit in perftest.
_ROW_VALUES = Range(0, 2**63 - 1, "a non-negative amount")

KIND = "perftest"

_T = TypeVar("_T")

_MB_PER_S_TO_GBPS = 2**20 * 8 / 1e9
_TITLE = re.compile(r"^\s+(\S.*?(?:BW|Latency|Bandwidth) Test)\s*$")
_VALUE = re.compile(r"\s*(\S+)")
_ADDRESS = re.compile(r"^\s*(local|remote) address:\s*(.*)$")
_GID = re.compile(r"^\s*GID:\s*(\S+)\s*$")
_WORD = re.compile(r"\S+")
_UNIT_WORD = re.compile(r"([\w.%]+)\[([^\[\]]*)\]")  # "t_min[usec]"
_PREFIX_WORD = re.compile(r"[\w.%]+")  # "99%" of "99% percentile[usec]"
_PLAIN_COLUMN = re.compile(r"#\w+|[A-Za-z]\w*")  # "#bytes", "MsgRate"
_WARNING_WORDS = r"warn|conflicting|not max|error|fail|couldn't|unable|mismatch"
_WARNING = re.compile("(?i)" + _WARNING_WORDS)
# Case-blind matching costs ~5 us on a 45-character line; on an ASCII line the
# lowered line gives the same answer (no ASCII letter folds onto another) for a
# tenth of that.
_WARNING_LOWERED = re.compile(_WARNING_WORDS)
# Lines up to this long are remembered by _per_line_cache (perftest's longest,
# the latency column line, is 147); a longer line is not perftest's and must
# not stay in memory after its parse.
_CACHED_LINE_CHARS = 400

# Column name as printed (without the unit) -> row field.
_LAT_COLUMNS = {
    "t_min": "t_min_usec",
    "t_max": "t_max_usec",
    "t_typical": "t_typical_usec",
    "t_avg": "t_avg_usec",
    "t_stdev": "t_stdev_usec",
    "99% percentile": "p99_usec",
    "99.9% percentile": "p999_usec",
}


@dataclass(frozen=True, slots=True)
class PerftestAddress:
    """One side's QP as printed (``LID 0x03 QPN 0x33529 PSN 0x92faff ...``)."""

    lid: str | None
    qpn: str | None
    psn: str | None
    rkey: str | None
    vaddr: str | None
    gid: str | None  # RoCE only


@dataclass(frozen=True, slots=True)
class PerftestLatRow:
    bytes: int
    iterations: int
    t_min_usec: float | None
    t_max_usec: float | None
    t_typical_usec: float | None
    t_avg_usec: float | None
    t_stdev_usec: float | None
    p99_usec: float | None
    p999_usec: float | None


@dataclass(frozen=True, slots=True)
class PerftestBwRow:
    bytes: int
    iterations: int
    bw_peak: float  # in bw_unit as printed
    bw_avg: float  # in bw_unit as printed
    msg_rate_mpps: float | None
    bw_peak_gbps: float  # Gbit/s, from the inferred unit
    bw_avg_gbps: float


@dataclass(frozen=True, slots=True)
class Perftest:
    test: str  # title as printed, e.g. "RDMA_Write BW Test"
    test_type: str  # "lat", "bw" or "" when no title was found
    role: str  # "server" when the wait-for-client banner is there, else "client"
    header: tuple[tuple[str, str], ...]  # every "key : value" of the header block
    device: str | None
    link_type: str | None  # "IB" or "Ethernet"
    transport: str | None
    connection_type: str | None  # RC, UC, UD, ...
    mtu_bytes: int | None
    gid_index: int | None
    qps: int | None
    tx_depth: int | None
    rdma_cm: bool | None
    local: PerftestAddress | None
    remote: PerftestAddress | None
    columns: tuple[tuple[str, str], ...]  # (name, unit) of the result table, as printed
    bw_unit: str | None  # printed: "MB/sec" or "Gb/sec"
    bw_unit_inferred: str | None  # what MsgRate x size says the values are
    lat_rows: tuple[PerftestLatRow, ...]
    bw_rows: tuple[PerftestBwRow, ...]
    warnings: tuple[str, ...]
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


def _address(fields: str, gid: str | None) -> PerftestAddress:
    tokens = fields.split()
    values = {tokens[i].upper(): tokens[i + 1] for i in range(0, len(tokens) - 1, 2)}
    return PerftestAddress(
        lid=values.get("LID"),
        qpn=values.get("QPN"),
        psn=values.get("PSN"),
        rkey=values.get("RKEY"),
        vaddr=values.get("VADDR"),
        gid=gid,
    )


def _per_line_cache(read: Callable[[str], _T]) -> Callable[[str], _T]:
    """Remember what ``read`` made of a line, for lines every run prints alike.

    Why: a link test parses thousands of outputs whose header block and column
    line are the same few strings on every node (the device line differs per
    NIC); running the regexes over them on every parse was most of its cost.
    ``read`` must be pure and return something immutable.
    """
    cached = lru_cache(maxsize=256)(read)

    def lookup(line: str) -> _T:
        return cached(line) if len(line) <= _CACHED_LINE_CHARS else read(line)

    return lookup


@_per_line_cache
def _columns(line: str) -> tuple[tuple[str, str], ...]:
    """(name, unit) of each column of the ``#bytes ...`` line.

    Words are taken one by one: ``name[unit]``, or a plain word (``#bytes``, ``MsgRate``).
    A plain word one space before a ``name[unit]`` word is the first half of its name
    (``99% percentile[usec]``, ``BW peak[MB/sec]``). One pass, whatever the line holds.
    """
    result: list[tuple[str, str]] = []
    pending: tuple[str, int] | None = None  # a plain word and where it ends

    def flush() -> None:
        if pending is not None and _PLAIN_COLUMN.fullmatch(pending[0]):
            result.append((pending[0], ""))

    for word in _WORD.finditer(line):
        unit = _UNIT_WORD.fullmatch(word.group())
        if unit is None:
            flush()
            pending = (word.group(), word.end())
            continue
        name = unit.group(1)
        if (
            pending is not None
            and pending[1] == word.start() - 1
            and not pending[0].startswith("#")
            and _PREFIX_WORD.fullmatch(pending[0])
        ):
            name = f"{pending[0]} {name}"
        else:
            flush()
        pending = None
        result.append((name, unit.group(2)))
    flush()
    return tuple(result)


def _pairs(line: str) -> tuple[tuple[str, str], ...]:
    """``" Dual-port       : OFF          Device         : mlx5_0"`` -> the ``key : value`` pairs
    (a value is one word; the key is what lies between the previous value and the colon)."""
    pairs = []
    position = 0
    while (colon := line.find(":", position)) >= 0:
        key = line[position:colon].strip()
        value = _VALUE.match(line, colon + 1)
        if key and value is not None:
            pairs.append((key, value.group(1)))
            position = value.end()
        else:
            position = colon + 1
    return tuple(pairs)


def _is_warning(line: str) -> bool:
    """``_WARNING.search(line)``, through the lowered line when that gives the same answer."""
    if line.isascii():
        return _WARNING_LOWERED.search(line.lower()) is not None
    return _WARNING.search(line) is not None


@_per_line_cache
def _header_line(line: str) -> tuple[bool, tuple[tuple[str, str], ...]]:
    """Whether a header-block line is a warning, else its ``key : value`` pairs."""
    if _is_warning(line):
        return True, ()
    return False, _pairs(line)


@parser
def parse_perftest(text: str) -> Perftest:
    """Parse one perftest run's output; never raises."""
    problems = Problems()
    header: list[tuple[str, str]] = []
    warnings: list[str] = []
    columns: tuple[tuple[str, str], ...] = ()
    raw_rows: list[tuple[int, str, list[str]]] = []
    addresses: dict[str, tuple[str, str | None]] = {}
    last_side: str | None = None
    title = ""
    role = "client"
    # Each regex below runs only on lines a plain string test says it can match
    # (``\s`` and ``str.strip`` agree on what is blank): the answers are the
    # same, and most lines are settled without running any.
    for number, line in enumerate(split_lines(text), start=1):
        stripped = line.strip()
        if not stripped.strip("-"):
            continue
        first = stripped[0]
        if first == "*":
            if "Waiting for client" in line:
                role = "server"
            continue
        if not title and stripped.endswith("Test") and (match := _TITLE.match(line)):
            title = match.group(1)
            continue
        if first in "lr" and (match := _ADDRESS.match(line)):
            last_side = match.group(1)
            addresses[last_side] = (match.group(2), None)
            continue
        if first == "G" and last_side and (match := _GID.match(line)):
            addresses[last_side] = (addresses[last_side][0], match.group(1))
            continue
        if stripped.startswith("#bytes"):
            columns = _columns(line)
            continue
        if columns and first.isdigit():
            raw_rows.append((number, line, stripped.split()))
            continue
        warning, pairs = _header_line(line) if title and not columns else (_is_warning(line), ())
        if warning:
            warnings.append(stripped)
            continue
        if pairs:
            header.extend(pairs)
            continue
        problems.unknown(number, line)
    if not title and not columns:
        problems.add(0, "", "no perftest title or result table found")
    values = dict(header)
    test_type = "lat" if "Latency" in title else "bw" if title else ""
    if not test_type and columns:
        test_type = "lat" if any(name == "t_min" for name, _ in columns) else "bw"
    lat_rows, bw_rows, bw_unit, inferred = _rows(test_type, columns, raw_rows, problems)

    def header_int(key: str) -> int | None:
        raw = values.get(key)
        if raw is None:
            return None
        bracket = raw.find("[")
        number = to_int(raw[:bracket] if raw.endswith("]") and bracket >= 0 else raw)
        return U32.check(number, problems, 0, raw, key)

    local, remote = addresses.get("local"), addresses.get("remote")
    rdma_cm = values.get("rdma_cm QPs")
    return Perftest(
        test=title,
        test_type=test_type,
        role=role,
        header=tuple(header),
        device=values.get("Device"),
        link_type=values.get("Link type"),
        transport=values.get("Transport type"),
        connection_type=values.get("Connection type"),
        mtu_bytes=header_int("Mtu"),
        gid_index=header_int("GID index"),
        qps=header_int("Number of qps"),
        tx_depth=header_int("TX depth"),
        rdma_cm=None if rdma_cm is None else rdma_cm == "ON",
        local=_address(*local) if local else None,
        remote=_address(*remote) if remote else None,
        columns=tuple(columns),
        bw_unit=bw_unit,
        bw_unit_inferred=inferred,
        lat_rows=lat_rows,
        bw_rows=bw_rows,
        warnings=tuple(warnings),
        problems=problems.result(),
        unknown_lines=problems.unknown_lines,
    )


def _rows(
    test_type: str,
    columns: tuple[tuple[str, str], ...],
    raw_rows: list[tuple[int, str, list[str]]],
    problems: Problems,
) -> tuple[tuple[PerftestLatRow, ...], tuple[PerftestBwRow, ...], str | None, str | None]:
    names = [name for name, _ in columns]
    parsed: list[tuple[int, str, dict[str, float]]] = []
    for number, line, cells in raw_rows:
        numbers = [to_float(c) for c in cells]
        if len(cells) != len(names) or None in numbers:
            problems.unknown(number, line, f"row has {len(cells)} values, header has {len(names)}")
            continue
        if any(not _ROW_VALUES.holds(v) for v in numbers if v is not None):
            problems.add(number, line, "row with a negative or impossibly large value; left out")
            continue
        parsed.append(
            (number, line, {n: v for n, v in zip(names, numbers, strict=True) if v is not None})
        )
    if test_type == "lat":
        lat = tuple(
            PerftestLatRow(
                bytes=int(row.get("#bytes", 0)),
                iterations=int(row.get("#iterations", 0)),
                **{field: row.get(name) for name, field in _LAT_COLUMNS.items()},
            )
            for _, _, row in parsed
        )
        return lat, (), None, None
    units = dict(columns)
    bw_unit = units.get("BW average") or units.get("BW peak")
    inferred = _infer_unit(bw_unit, [row for _, _, row in parsed])
    if inferred and inferred != bw_unit:
        problems.add(0, "", f"bandwidth printed as {bw_unit} but MsgRate x size says {inferred}")
    factor = _MB_PER_S_TO_GBPS if inferred == "MB/sec" else 1.0
    bw: list[PerftestBwRow] = []
    for number, line, row in parsed:
        if "BW average" not in row or "BW peak" not in row:
            problems.add(number, line, "bandwidth row without BW peak/average columns")
            continue
        if not (LINK_RATE_GBPS.holds(row["BW peak"] * factor) and LINK_RATE_GBPS.holds(row["BW average"] * factor)):
            problems.add(number, line, "bandwidth beyond any link's rate (2400 Gb/s); row left out")
            continue
        bw.append(
            PerftestBwRow(
                bytes=int(row.get("#bytes", 0)),
                iterations=int(row.get("#iterations", 0)),
                bw_peak=row["BW peak"],
                bw_avg=row["BW average"],
                msg_rate_mpps=row.get("MsgRate"),
                bw_peak_gbps=row["BW peak"] * factor,
                bw_avg_gbps=row["BW average"] * factor,
            )
        )
    return (), tuple(bw), bw_unit, inferred


def _infer_unit(printed: str | None, rows: list[dict[str, float]]) -> str | None:
    """The unit the values are really in, judged from MsgRate x message size."""
    if printed not in {"MB/sec", "Gb/sec"}:
        return printed
    votes = {"MB/sec": 0, "Gb/sec": 0}
    for row in rows:
        rate, size, avg = row.get("MsgRate"), row.get("#bytes"), row.get("BW average")
        if not rate or not size or not avg or avg < 0.05:
            continue
        bytes_per_s = rate * 1e6 * size
        as_mb = bytes_per_s / 2**20
        as_gb = bytes_per_s * 8 / 1e9
        votes["MB/sec" if abs(as_mb - avg) <= abs(as_gb - avg) else "Gb/sec"] += 1
    if not any(votes.values()):
        return printed
    return max(votes, key=lambda unit: (votes[unit], unit == printed))
