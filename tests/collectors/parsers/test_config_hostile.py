"""The configuration parsers on hostile input: every one returns its frozen result, lists what it could
not place, never raises, and never returns a number a field cannot hold.

The inputs are what a broken or hostile host prints: empty and blank text, garbage, each real capture
truncated and with bytes flipped, numbers with 5,000 digits, Unicode digits, negative numbers, control
characters, deeply nested JSON, one line repeated, another tool's output. Timings are not asserted here
(``python -m benchmarks`` measures); the patterns these parsers use are linear by construction
(``collectors/parsers/registry_config.py``, ``config_text.py``).
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from helpers.config_fixtures import CONFIG_KINDS, CONFIG_LAYOUTS, FIXTURES, captures, read

from fleet.collectors.parsers.registry import KINDS, detect, to_jsonable

KINDS_UNDER_TEST = sorted(CONFIG_KINDS)



def seeds(kind: str) -> list[str]:
    texts = [read(p) for p in captures(kind)]
    if kind in CONFIG_LAYOUTS:
        texts.append(CONFIG_LAYOUTS[kind])
    assert texts, kind
    return texts


def _ints(value: Any, path: str = "result") -> Iterator[tuple[str, Any]]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _ints(getattr(value, f.name), f"{path}.{f.name}")
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _ints(k, f"{path}[key]")
            yield from _ints(v, f"{path}[{k!r}]")
    elif isinstance(value, tuple | list):
        for i, v in enumerate(value):
            yield from _ints(v, f"{path}[{i}]")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield path, value


def check(kind: str, text: str) -> Any:
    result = KINDS[kind].load()(text)
    assert dataclasses.is_dataclass(result) and type(result).__dataclass_params__.frozen  # type: ignore[attr-defined]
    assert isinstance(result.problems, tuple) and isinstance(result.unknown_lines, int)
    assert result.unknown_lines >= 0 and len(result.problems) <= 201
    assert all(len(p.text) <= 200 and p.reason for p in result.problems)
    for path, number in _ints(result):
        assert number == number and abs(number) != float("inf"), path  # no NaN, no infinity
        assert -(2**63) <= number <= 2**64 - 1, path
        if path.endswith(("_pct",)):
            assert 0 <= number <= 100, path
        if path.endswith(("speed_gts", "width", "_bytes", "_ms", "tos", "tclass", "mtu", "xid", "users")):
            assert number >= 0, path
    json.dumps(to_jsonable(result))
    repr(result)
    return result


def mutations(text: str, rng: random.Random) -> Iterator[str]:
    yield text[: rng.randrange(len(text) + 1)]
    raw = bytearray(text.encode())
    for _ in range(8):
        if raw:
            raw[rng.randrange(len(raw))] = rng.randrange(256)
    yield raw.decode("utf-8", errors="replace")
    digits = "".join(ch if not ch.isdigit() else "9" * 5000 if rng.random() < 0.05 else ch for ch in text[:4000])
    yield digits
    yield text.replace("3", "³").replace("1", "١")
    yield "".join("-" + ch if ch.isdigit() and rng.random() < 0.3 else ch for ch in text)
    yield text.replace("\n", "\n\x1b[2J\x00\r", 5)
    yield "{" * 5000 + text
    lines = text.splitlines(keepends=True) or ["\n"]
    yield "".join(lines) + lines[rng.randrange(len(lines))] * 300
    other = read(sorted(FIXTURES.glob("*/*"))[rng.randrange(len(list(FIXTURES.glob("*/*"))))])
    at = rng.randrange(len(text) + 1)
    yield text[:at] + other[:3000] + text[at:]


@pytest.mark.parametrize("kind", KINDS_UNDER_TEST)
def test_empty_and_blank_input(kind: str) -> None:
    for text in ("", "\n \n\t\n"):
        check(kind, text)


@pytest.mark.parametrize("kind", KINDS_UNDER_TEST)
def test_garbage_is_listed_never_raised(kind: str) -> None:
    rng = random.Random(kind)
    garbage = "".join(chr(rng.randrange(32, 0x2FFF)) if rng.random() > 0.05 else "\n" for _ in range(20000))
    result = check(kind, garbage)
    assert result.unknown_lines > 0 or result.problems or kind in ("cma-roce-tos",)


@pytest.mark.parametrize("kind", KINDS_UNDER_TEST)
def test_mutated_captures_keep_the_contract(kind: str) -> None:
    rng = random.Random(f"mutations-{kind}")
    for text in seeds(kind):
        for _ in range(4):
            for mutated in mutations(text, rng):
                check(kind, mutated)
                detect(mutated)


SAME_SYNTAX = {
    ("nvue-show", "cumulus-docs-nv-show-interface-swp1-counters-sections-truncated.txt"),
    ("traffic-class", "att-netarbiter-cma_roce_tos-d-mlx5_2-t-106.txt"),
    ("cma-roce-tos", "cn-notes-centos12-mlx5_2-tc1-traffic_class-set-106.txt"),
}
"""Captures of another command printed in the same layout: ``nv show interface PORT counters`` is an NVUE view;
a ToS and a traffic class are both one number 0..255."""


@pytest.mark.parametrize("kind", KINDS_UNDER_TEST)
def test_another_tools_output_reads_as_nothing_or_says_so(kind: str) -> None:
    for path in sorted(FIXTURES.glob("*/*")):
        if path in captures(kind) or (kind, path.name) in SAME_SYNTAX:
            continue
        result = check(kind, read(path))
        data = [f.name for f in dataclasses.fields(result) if f.name not in ("problems", "unknown_lines")]
        empty = all(not getattr(result, name) for name in data)
        assert empty or result.problems or result.unknown_lines, (kind, path.name)
