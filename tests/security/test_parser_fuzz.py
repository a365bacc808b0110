"""Fuzzing every parser kind with mutations of every real capture of that kind.

The contract (``collectors/parsers/base.py``, ``docs/parsers.md``): for any text a
parser returns its result or raises its one ``ParseError``; nothing else escapes,
and no value in a result lies outside what its field can hold. The mutations are
what a broken or hostile host prints: truncation, byte flips decoded with
``errors="replace"`` as the collector decodes, splices of another tool's output,
huge and non-ASCII numbers, NaN and infinities, control characters, deep nesting,
repeated and pathological lines.

Profiles: ``ci`` (the default) runs 200 derandomized inputs per kind, the same
every run, so that ``make test`` stays short; ``FLEET_FUZZ_PROFILE=long`` (``make
fuzz``) runs 10,000 per kind with a fresh seed (a failure prints the blob that
reproduces it).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import random
import re
from collections.abc import Callable
from typing import Any

import pytest
from helpers.parser_fixtures import LAYOUTS, fixture_files, read, samples
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleet.collectors.parsers.base import REASON_CHARS, ParseError, ParserBug
from fleet.collectors.parsers.registry import KINDS, detect, to_jsonable
from fleet.collectors.parsers.switch_tables import parse_switch_table

_COMMON: dict[str, Any] = {
    "deadline": None,  # a loaded machine must not fail a test: timing is the benchmark's job
    "database": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    "print_blob": True,
}
settings.register_profile("ci", max_examples=200, derandomize=True, **_COMMON)
settings.register_profile("long", max_examples=10_000, **_COMMON)
PROFILE = settings.get_profile(os.environ.get("FLEET_FUZZ_PROFILE", "ci"))

PARSERS: dict[str, Callable[[str], Any]] = {kind: spec.load() for kind, spec in KINDS.items()}
PARSERS["switch-table"] = parse_switch_table

ALL_TEXTS = tuple(read(p) for p in fixture_files())

# Kinds with no real capture in tests/fixtures: the tool's layout, as the parser tests write it
# (helpers.parser_fixtures.LAYOUTS); NCCL's log lines come inside the nccl-tests captures.
SEEDS: dict[str, tuple[str, ...]] = {
    kind: tuple(read(p) for p in samples(kind)) or LAYOUTS[kind] for kind in PARSERS if kind != "nccl-log"
} | {"nccl-log": tuple(read(p) for p in samples("nccl"))}


# ---------------------------------------------------------------- mutations

_DIGITS = re.compile(r"[0-9]+")
HUGE_NUMBERS = (
    "9" * 5000,
    "4" * 4000,
    "1" * 25,
    "18446744073709551616",
    "18446744073709551615",
    "4294967296",
    "-1",
    "-9223372036854775809",
    "0x" + "f" * 4000,
    "0xffffffffffffffffff",
    "1e309",
    "-1e309",
    "1e-400",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "1" * 300 + ".5",
    "1,2,3,4,5,6,7,8,9" * 50,
)
UNICODE_NUMBERS = ("²", "³²", "٣٤", "１２", "߁", "𝟗", "৩", "١٢٣٤٥", "Ⅻ", "½", "⑧")
CONTROL = (
    "\x00",
    "\x1b[2J",
    "\x1b[31m",
    "\x1b]8;;http://evil.example/\x07link\x1b]8;;\x07",
    "\x1b]0;title\x07",
    "\r",
    "\r\n",
    "\x0b",
    "\x0c",
    "\x1c",
    "\x85",
    "\u2028",
    "\x7f",
    "\ufeff",
    "\ufffd",
    "\t",
)
PATHOLOGICAL = (
    ":" + " " * 2000 + ":",
    " " * 5000,
    "a" * 20000,
    "-" * 5000,
    "=" * 5000,
    "[" * 5000,
    "(" * 2000 + ")" * 2000,
    "#" + " " * 3000 + "x",
    "0x" + "0" * 3000,
    "Link 0:" + " " * 2000 + ":",
    "1[" + " " * 2000 + "==(" + " " * 2000,
    "\t" * 3000,
    ", " * 3000,
    "Interface:" + ", via:" * 500,
    '"' + "\\" * 3000,
)


def _position(rng: random.Random, text: str) -> int:
    return rng.randint(0, len(text))


def truncate(rng: random.Random, text: str) -> str:
    return text[: _position(rng, text)]


def flip_bytes(rng: random.Random, text: str) -> str:
    raw = bytearray(text.encode("utf-8"))
    if not raw:
        return text
    for _ in range(rng.randint(1, 16)):
        raw[rng.randrange(len(raw))] = rng.randrange(256)
    return raw.decode("utf-8", errors="replace")


def splice(rng: random.Random, text: str) -> str:
    other = rng.choice(ALL_TEXTS)
    start = rng.randint(0, len(other))
    piece = other[start : start + rng.randint(0, 4000)]
    at = _position(rng, text)
    return text[:at] + piece + text[at:]


def _replace_number(rng: random.Random, text: str, choices: tuple[str, ...]) -> str:
    runs = list(_DIGITS.finditer(text))
    if not runs:
        at = _position(rng, text)
        return text[:at] + rng.choice(choices) + text[at:]
    picked = {rng.randrange(len(runs)) for _ in range(rng.randint(1, 5))}
    for index in sorted(picked, reverse=True):  # from the end, so earlier positions hold
        run = runs[index]
        text = text[: run.start()] + rng.choice(choices) + text[run.end() :]
    return text


def huge_number(rng: random.Random, text: str) -> str:
    return _replace_number(rng, text, HUGE_NUMBERS)


def unicode_number(rng: random.Random, text: str) -> str:
    return _replace_number(rng, text, UNICODE_NUMBERS)


def negate_numbers(rng: random.Random, text: str) -> str:
    """Every number negative: counters, rates, temperatures that cannot be."""
    return _DIGITS.sub(lambda m: "-" + m.group(0), text)


def control(rng: random.Random, text: str) -> str:
    for _ in range(rng.randint(1, 8)):
        at = _position(rng, text)
        text = text[:at] + rng.choice(CONTROL) + text[at:]
    return text


_CLOSERS = {"[": "]", '{"a":': "}", '{"lldp":': "}", '{"jobs":[': "]}", "(": ")", "{": "}"}


def deep_nesting(rng: random.Random, text: str) -> str:
    # Past the parsers' bound (64), past orjson's (1024) and past Python's recursion limit;
    # 100,000 levels, as a hostile lldpctl printed them, is a regression test of its own.
    depth = rng.choice((65, 200, 1100, 5000))
    opener = rng.choice(tuple(_CLOSERS))
    if rng.random() < 0.5:
        return opener * depth + "1" + _CLOSERS[opener] * depth
    at = _position(rng, text)
    return text[:at] + opener * depth + text[at:]


def repeat_line(rng: random.Random, text: str) -> str:
    lines = text.splitlines(keepends=True)
    if not lines:
        return text
    index = rng.randrange(len(lines))
    lines[index] = lines[index] * rng.randint(2, 200)
    return "".join(lines)


def pathological(rng: random.Random, text: str) -> str:
    at = _position(rng, text)
    return text[:at] + rng.choice(PATHOLOGICAL) + "\n" + text[at:]


def random_text(rng: random.Random, text: str) -> str:
    """Up to 200 characters from anywhere in Unicode (no surrogates: decoding never makes them)."""
    at = _position(rng, text)
    chars = (rng.choice((rng.randrange(128), rng.randrange(0x30000))) for _ in range(rng.randint(0, 200)))
    noise = "".join(chr(c) for c in chars if not 0xD800 <= c < 0xE000)
    return text[:at] + noise + text[at:]


def shuffle_lines(rng: random.Random, text: str) -> str:
    lines = text.splitlines(keepends=True)
    if len(lines) < 400:
        rng.shuffle(lines)
    return "".join(lines)


MUTATIONS = (
    truncate,
    flip_bytes,
    splice,
    huge_number,
    unicode_number,
    negate_numbers,
    control,
    deep_nesting,
    repeat_line,
    pathological,
    random_text,
    shuffle_lines,
)


def hostile(kind: str, rng: random.Random) -> tuple[str, tuple[str, ...]]:
    """A real capture of ``kind`` with one to three mutations; the text and the mutations' names.

    One ``random.Random`` per example, seeded by Hypothesis: a mutation is a few plain calls
    instead of dozens of Hypothesis draws, which is what lets the long profile run 10,000
    inputs per kind. A failure prints the seed, and the text and mutations in its message.
    """
    text = rng.choice(SEEDS[kind])
    applied = tuple(rng.choice(MUTATIONS) for _ in range(rng.randint(1, 3)))
    for mutation in applied:
        text = mutation(rng, text)
    return text, tuple(m.__name__ for m in applied)


# ---------------------------------------------------------------- the contract

INT_LOW, INT_HIGH = -(2**63), 2**64 - 1

# What a field can hold, by its name: an oracle written apart from the parsers' own
# table (collectors/parsers/values.py), from the units in the field names.
NAMED_RANGES: tuple[tuple[re.Pattern[str], float, float], ...] = tuple(
    (re.compile(pattern), low, high)
    for pattern, low, high in (
        (r"^(counters|hw_counters|pfc_frames|errors)$", 0, 2**64 - 1),
        (r"^(rx|tx)_(ok|err|drp|ovr)$|^(tx|drop)_(pkts|bytes)$", 0, 2**64 - 1),
        (r"^temp_c$|_threshold_c$|^temp_.*_c$", -128, 128),
        (r"^temperature_gpu_c$", 0, 150),
        (r"_pct$", 0, 100),
        (r"_gbps$", 0, 2400),
        (r"_mw$", 0, 6.5535),
        (r"^tx_bias_ma$|_ma$", 0, 524.28),
        (r"^voltage_v$|_v$", 0, 6.5535),
        (r"(^|_)lid$", 0, 0xFFFF),
        (r"^(port|peer_port)$", 0, 255),
        (r"^(lqpn|rqpn|rq_psn|sq_psn)$", 0, 2**24 - 1),
        (r"_(usec|gbytes_s|mib|w|mhz|bytes_per_s|s|min)$|^(bytes|iterations|size_bytes)$", 0, math.inf),
        (r"^(count_elements|n_threads|n_gpus|min_bytes|max_bytes|iters|nccl_log_lines)$", 0, math.inf),
        (r"^(unknown_lines|out_of_bounds|nvlinks|rank|group|device|pid|value)$", 0, math.inf),
        (r"_wrong$", 0, math.inf),
    )
)


@functools.cache
def _range_of(name: str) -> tuple[float, float] | None:
    for pattern, low, high in NAMED_RANGES:
        if pattern.search(name):
            return low, high
    return None


def _check_value(path: str, name: str, value: Any, problems: list[str]) -> None:
    if isinstance(value, bool) or value is None or isinstance(value, str | bytes):
        return
    if isinstance(value, int | float):
        if isinstance(value, float) and math.isnan(value):
            problems.append(f"{path}: NaN")
            return
        if isinstance(value, float) and math.isinf(value):
            if not (name.endswith("_dbm") and value < 0):
                problems.append(f"{path}: {value}")
            return
        if isinstance(value, int) and not INT_LOW <= value <= INT_HIGH:
            problems.append(f"{path}: integer beyond 64 bits")
            return
        bounds = _range_of(name)
        if bounds is not None and not bounds[0] <= value <= bounds[1]:
            problems.append(f"{path}: {value} outside {bounds}")
        return
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for item in dataclasses.fields(value):
            _check_value(f"{path}.{item.name}", item.name, getattr(value, item.name), problems)
    elif isinstance(value, dict):
        for key, inner in value.items():
            _check_value(f"{path}[{key!r}]", name if not isinstance(key, str) or name in ("counters", "hw_counters", "errors") else key, inner, problems)
    elif isinstance(value, tuple | list | frozenset | set):
        for index, inner in enumerate(value):
            _check_value(f"{path}[{index}]", name, inner, problems)


def out_of_range(result: Any) -> list[str]:
    """Every value of ``result`` outside what its field can hold (empty when none)."""
    problems: list[str] = []
    _check_value("result", "", result, problems)
    return problems


def assert_contract(kind: str, text: str) -> Any:
    """Parse ``text`` as ``kind``: a well-formed, in-range result, or the one ParseError."""
    try:
        result = PARSERS[kind](text)
    except ParserBug as bug:
        raise AssertionError(f"{kind}: the parser failed on its own: {bug.reason}") from bug.__cause__
    except ParseError as refusal:
        assert refusal.reason and "\n" not in refusal.reason and len(refusal.reason) <= REASON_CHARS
        return None
    assert isinstance(result.problems, tuple) and isinstance(result.unknown_lines, int)
    assert result.unknown_lines >= 0 and len(result.problems) <= 201
    assert all(p.reason and len(p.text) <= 200 for p in result.problems)
    assert out_of_range(result) == [], kind
    json.dumps(to_jsonable(result))  # fleet parse --json must be able to print it
    repr(result)  # ... and the summary (a 5,000-digit int would fail here)
    return result


FUZZED = sorted(PARSERS)


@pytest.mark.parametrize("kind", FUZZED)
def test_every_real_capture_keeps_the_contract(kind: str) -> None:
    for text in SEEDS[kind]:
        assert assert_contract(kind, text) is not None


@pytest.mark.parametrize("kind", FUZZED)
@PROFILE
@given(rng=st.randoms(use_true_random=True))
def test_hostile_mutations_of_real_captures(kind: str, rng: random.Random) -> None:
    text, mutations = hostile(kind, rng)
    try:
        assert_contract(kind, text)
        detect(text)  # fleet parse FILE without a kind runs every signature on it
    except AssertionError as failure:
        raise AssertionError(f"{failure} after {mutations} on {text[:300]!r}") from failure
