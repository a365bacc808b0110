"""Expert-parallel benchmarks: UCCL-EP's and DeepEP's ``test_internode.py`` tuning output.

Why: a mixture-of-experts job spends its communication in two all-to-all
kernels, *dispatch* (tokens to their experts) and *combine* (results back).
Both benchmarks time them over RDMA between nodes and NVLink inside a node and
print the best configuration they found; the expert-parallel probe stores
those figures beside the nccl-tests all-to-all.

Two layouts of the same ``[tuning] Best ...`` line, as the tools print them:

- UCCL-EP (``ep/bench/test_internode.py``)::

    [tuning] Best dispatch (FP8): SMs 24, NVL chunk 44, RDMA chunk 12, transmit: 1289.00 us,
    notify: 67.87 us, BW: 46.79 GB/s (RDMA), 153.08 GB/s (NVL)

- DeepEP high-throughput kernels (``tests/test_internode.py``): ``notify + transmit``::

    [tuning] Best dispatch (FP8): SMs 24, NVL chunk 36, RDMA chunk 8: 81 + 751 us, 80.42 GB/s (RDMA), ...
    [tuning] Best combine: SMs 24, NVL chunk 3, RDMA chunk 24, 71.31 + 1812.00 us, 64.61 GB/s (RDMA), ...

(one line each in the output). Older and intra-node variants print
``t: 123.45 us`` or ``avg_t: ...`` for the transmit time and leave out what
they do not measure; those fields are None. A line may carry tags before
``[tuning]`` (``[DeepSeek-V3] [tuning] ...``). Every other ``[tuning]`` line
is one configuration tried (``trials``). The combine line names no data type:
both tests combine BF16 data, the dispatch is timed for FP8 and BF16.

Units: times in microseconds, bandwidths in GB/s (1e9 bytes/s) as printed:
bytes each rank sends over RDMA (received over NVLink for dispatch, sent over
NVLink for combine) divided by the transmit time.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from fleet.collectors.parsers.base import ParseProblem, parser
from fleet.collectors.parsers.textscan import Problems, split_lines, strip_ansi, to_float, to_int

KIND = "ep-bench"

MAX_GBYTES_S = 10_000.0
"""No GPU moves more per second over NVLink or RDMA (NVLink 5: 900 GB/s each way per GPU); a larger
printed figure is garbage, left out with a problem."""

MAX_USEC = 1e12
"""About eleven days: a time past it is not a kernel's."""

MAX_TAGS = 4
"""``[tag]`` words before ``[tuning]`` looked through (a model name, a rank): more is not a tuning line."""
MAX_TAG_CHARS = 80

_BEST = re.compile(r"^\[tuning\] Best (dispatch|combine)(?: \((FP8|BF16)\))?: (.*)$", re.ASCII)
_NUMBER = r"([0-9]{1,15}(?:\.[0-9]{1,15})?)"
_SMS = re.compile(r"^SMs ([0-9]{1,6})$")
_CHUNK = re.compile(r"^(NVL|RDMA) chunk ([0-9]{1,6}|default)(?:: (.*))?$")
_SUM = re.compile(rf"^{_NUMBER} \+ {_NUMBER} us$")
_LABELLED = re.compile(rf"^(transmit|notify|t|avg_t): {_NUMBER} us$")
_BANDWIDTH = re.compile(rf"^(?:BW: )?{_NUMBER} GB/s \((RDMA|NVL)\)$")
_CONFIG = re.compile(r"^\[config\] (.*)$")
_LAYOUT = re.compile(rf"^\[layout\] Kernel performance: {_NUMBER} ms$")
_ERROR = re.compile(r"(?i)traceback|error|exception|assert|failed|abort|timeout|killed")
_KNOWN_PREFIXES = ("[rank ", "[testing] ", "Testing with seed", "[tuning] ", "ref_hash=", "[teardown]")


@dataclass(frozen=True, slots=True)
class EpTuning:
    """One ``[tuning] Best ...`` line: the fastest configuration the benchmark found for one kernel."""

    op: str
    """``dispatch`` or ``combine``."""
    dtype: str | None
    """``FP8`` or ``BF16`` for a dispatch; None where the line names none (combine: BF16 data)."""
    layout: str
    """``uccl-ep`` (``transmit:``/``notify:``/``BW:`` labels) or ``deepep`` (``notify + transmit us``)."""
    sms: int | None
    nvl_chunk: int | None
    rdma_chunk: int | None
    transmit_usec: float | None
    notify_usec: float | None
    rdma_gbytes_s: float | None
    nvl_gbytes_s: float | None


@dataclass(frozen=True, slots=True)
class EpBench:
    best: tuple[EpTuning, ...]
    trials: int
    """Other ``[tuning]`` lines: configurations tried."""
    config: tuple[tuple[str, str], ...]
    """``[config] num_tokens=4096, hidden=7168, ...`` as name/value pairs."""
    layout_ms: float | None
    """``[layout] Kernel performance``: the dispatch-layout kernel's time, milliseconds."""
    tests_passed: int
    """``[testing] ... passed`` lines: correctness checks the test ran before timing."""
    errors: tuple[str, ...]
    """Lines that report a failure (a traceback, an assertion, NCCL or NVSHMEM errors)."""
    problems: tuple[ParseProblem, ...]
    unknown_lines: int


def _measure(value: float | None, ceiling: float) -> float | None:
    return value if value is not None and math.isfinite(value) and 0.0 <= value <= ceiling else None


class _Fields:
    """The comma-separated fields of one ``[tuning] Best`` line, read one at a time."""

    def __init__(self) -> None:
        self.sms: int | None = None
        self.chunks: dict[str, int | None] = {"NVL": None, "RDMA": None}
        self.times: dict[str, float | None] = {"transmit": None, "notify": None}
        self.bandwidth: dict[str, float | None] = {"RDMA": None, "NVL": None}
        self.deepep = False
        self.refused: list[str] = []

    def read(self, field: str) -> bool:
        """Take one field; False when it is none of the known forms."""
        if match := _SMS.match(field):
            self.sms = to_int(match.group(1))
        elif match := _CHUNK.match(field):
            self.chunks[match.group(1)] = to_int(match.group(2))
            return match.group(3) is None or self.read(match.group(3))
        elif match := _SUM.match(field):
            self.deepep = True
            self.times["notify"] = self._time(match.group(1), "notify")
            self.times["transmit"] = self._time(match.group(2), "transmit")
        elif match := _LABELLED.match(field):
            name = "notify" if match.group(1) == "notify" else "transmit"
            self.times[name] = self._time(match.group(2), name)
        elif match := _BANDWIDTH.match(field):
            value = _measure(to_float(match.group(1)), MAX_GBYTES_S)
            if value is None:
                self.refused.append(f"{match.group(2)} bandwidth {match.group(1)} GB/s")
            self.bandwidth[match.group(2)] = value
        else:
            return False
        return True

    def _time(self, text: str, name: str) -> float | None:
        value = _measure(to_float(text), MAX_USEC)
        if value is None:
            self.refused.append(f"{name} time {text} us")
        return value


def _after_tags(line: str) -> str | None:
    """The line from ``[tuning]`` on when only ``[tag]`` words come before it; None otherwise."""
    at = 0
    for _ in range(MAX_TAGS):
        if not line.startswith("[", at) or line.startswith("[tuning]", at):
            break
        end = line.find("] ", at, at + MAX_TAG_CHARS)
        if end < 0:
            return None
        at = end + 2
        while line.startswith(" ", at):
            at += 1
    return line[at:] if line.startswith("[tuning]", at) else None


def _config(text: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for item in text.split(","):
        name, sep, value = item.strip().partition("=")
        if sep and name:
            pairs.append((name, value))
    return pairs


@parser
def parse_ep_bench(text: str) -> EpBench:
    """Parse one run of UCCL-EP's or DeepEP's internode benchmark (the contract of ``base``: never a
    ParseError, every value in range)."""
    problems = Problems()
    best: list[EpTuning] = []
    config: list[tuple[str, str]] = []
    errors: list[str] = []
    trials = passed = 0
    layout_ms: float | None = None
    for number, raw in enumerate(split_lines(text), start=1):
        line = strip_ansi(raw).strip()
        if not line:
            continue
        tuning = _after_tags(line)
        if tuning is not None and (match := _BEST.match(tuning)):
            fields = _Fields()
            unread = [f for f in (part.strip() for part in match.group(3).split(", ")) if f and not fields.read(f)]
            for field in unread:
                problems.add(number, raw, f"field {field[:60]!r} is none the tools print; left out")
            for what in fields.refused:
                problems.add(number, raw, f"{what} is out of range; left out")
            best.append(EpTuning(
                op=match.group(1), dtype=match.group(2), layout="deepep" if fields.deepep else "uccl-ep",
                sms=fields.sms, nvl_chunk=fields.chunks["NVL"], rdma_chunk=fields.chunks["RDMA"],
                transmit_usec=fields.times["transmit"], notify_usec=fields.times["notify"],
                rdma_gbytes_s=fields.bandwidth["RDMA"], nvl_gbytes_s=fields.bandwidth["NVL"],
            ))  # fmt: skip
        elif tuning is not None:
            trials += 1
        elif match := _CONFIG.match(line):
            config.extend(_config(match.group(1)))
        elif match := _LAYOUT.match(line):
            layout_ms = _measure(to_float(match.group(1)), MAX_USEC / 1e3)
        elif _ERROR.search(line, 0, 500):  # a failure names itself near the start of its line
            errors.append(line[:500])
        elif line.startswith(_KNOWN_PREFIXES):
            passed += line.endswith("passed")
        else:
            problems.unknown(number, raw)
    if not best and not trials and not config:
        problems.add(0, "", "no [tuning] or [config] line of an expert-parallel benchmark found")
    return EpBench(tuple(best), trials, tuple(config), layout_ms, passed, tuple(errors), problems.result(),
                   problems.unknown_lines)


__all__ = ["KIND", "EpBench", "EpTuning", "parse_ep_bench"]
