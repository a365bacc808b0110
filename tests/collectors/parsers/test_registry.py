"""The parser registry: all 28 kinds, detection of every fixture, JSON form, and hostile input
for every GPU / benchmark / Slurm / switch parser (empty, garbage, truncated, 10 MB, foreign)."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from helpers.config_fixtures import CONFIG_KINDS
from helpers.parser_fixtures import FIXTURES, expected_kind, fixture_files, read, samples

from fleet.collectors.parsers import registry
from fleet.collectors.parsers.base import ParseProblem
from fleet.collectors.parsers.registry import (
    KINDS,
    ParserSpec,
    ParserUnavailable,
    detect,
    parse,
    to_jsonable,
)

CORE_KINDS = {
    "ibstat",
    "ibstatus",
    "ibv_devinfo",
    "sysfs",
    "ethtool-stats",
    "ethtool-module",
    "rdma-qp",
    "rdma-statistic",
    "show-gids",
    "perfquery",
    "ibqueryerrors",
    "nvidia-smi-query",
    "nvidia-smi-topo",
    "nvidia-smi-nvlink",
    "lldp",
    "ibnetdiscover",
    "iblinkinfo",
    "perftest",
    "nccl",
    "nccl-log",
    "ep-bench",
    "squeue-json",
    "squeue",
    "scontrol-job",
    "nvue-counters",
    "sonic-counters",
    "sonic-pfc",
    "sonic-queue",
}

# The fields that carry parsed data, per kind of this module's parsers.
DATA_FIELDS: dict[str, tuple[str, ...]] = {
    "nvidia-smi-query": ("gpus",),
    "nvidia-smi-topo": ("devices", "links"),
    "nvidia-smi-nvlink": ("gpus",),
    "perftest": ("lat_rows", "bw_rows", "header"),
    "nccl": ("rows", "ranks"),
    "ep-bench": ("best",),
    "squeue-json": ("jobs",),
    "squeue": ("jobs",),
    "scontrol-job": ("jobs",),
    "nvue-counters": ("counters",),
    "sonic-counters": ("ports",),
    "sonic-pfc": ("rows",),
    "sonic-queue": ("rows",),
}

def _data_count(kind: str, result: Any) -> int:
    return sum(len(getattr(result, name)) for name in DATA_FIELDS[kind])


def _assert_well_formed(result: Any) -> None:
    fields = {f.name for f in dataclasses.fields(result)}
    assert {"problems", "unknown_lines"} <= fields
    problems, unknown = result.problems, result.unknown_lines
    assert isinstance(problems, tuple)
    assert all(isinstance(p, ParseProblem) for p in problems)
    assert isinstance(unknown, int) and unknown >= 0
    json.dumps(to_jsonable(result))  # always serialisable


def test_kinds_are_the_core_ones_and_the_configuration_ones() -> None:
    assert set(KINDS) == CORE_KINDS | CONFIG_KINDS
    assert all(spec.kind == kind for kind, spec in KINDS.items())
    assert set(DATA_FIELDS) <= set(KINDS)


@pytest.mark.parametrize("kind", sorted(DATA_FIELDS))
def test_every_kind_of_this_module_loads(kind: str) -> None:
    function = KINDS[kind].load()
    assert callable(function)
    assert function.__name__ == KINDS[kind].target.split(":")[1]


def test_a_missing_parser_module_breaks_only_its_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    broken = ParserSpec("perftest", "fleet.collectors.parsers.no_such_module:parse_x", "nothing")
    monkeypatch.setitem(KINDS, "perftest", broken)
    with pytest.raises(ParserUnavailable, match="no_such_module"):
        parse("perftest", "x")
    assert parse("nccl", "").rows == ()
    with pytest.raises(KeyError):
        parse("no-such-kind", "")


def test_every_kind_loads_or_says_why() -> None:
    for spec in KINDS.values():
        try:
            spec.load()
        except ParserUnavailable as exc:
            assert spec.kind in str(exc)


@pytest.mark.parametrize("path", fixture_files(), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_detect_every_fixture(path: Path) -> None:
    expected = expected_kind(str(path.relative_to(FIXTURES)))
    assert expected is not None, "a new fixture: add its kind to _EXPECTED"
    if not expected or expected == "cma-roce-tos" or not path.read_bytes():
        pytest.skip("no parser reads this capture yet, or it is empty or a bare number no signature can tell")
    if expected not in DATA_FIELDS:
        try:
            __import__("fleet.collectors.parsers.signatures_a")
        except ImportError:
            pytest.skip("host-side signatures (collectors.parsers.signatures_a) not present")
    assert detect(read(path)) == expected


def test_detect_refuses_what_it_does_not_know() -> None:
    assert detect("") is None
    assert detect("hello world\nnothing to see\n") is None
    assert detect(bytes(range(256)).decode("latin-1") * 10) is None


def test_a_broken_signature_does_not_stop_detection(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(_text: str) -> float:
        raise RuntimeError("bug")

    monkeypatch.setitem(registry.SIGNATURES_B, "sonic-pfc", boom)
    text = read(FIXTURES / "nccl" / "autodl-2x2080ti-pcie-all_reduce_perf-no-p2p.txt")
    assert detect(text) == "nccl"


def test_to_jsonable() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class Inner:
        lanes_dbm: tuple[float, ...]

    @dataclasses.dataclass(frozen=True, slots=True)
    class Outer:
        inner: Inner
        pairs: tuple[tuple[str, int], ...]
        missing: float

    value = Outer(Inner((0.5, -math.inf, math.inf)), (("a", 1),), math.nan)
    assert to_jsonable(value) == {
        "inner": {"lanes_dbm": [0.5, "-inf", "inf"]},
        "pairs": [["a", 1]],
        "missing": None,
    }


# ---------------------------------------------------------------- hostile input

HOSTILE_KINDS = sorted(DATA_FIELDS)


@pytest.mark.parametrize("kind", HOSTILE_KINDS)
def test_empty_and_blank(kind: str) -> None:
    for text in ("", "\n", "   \n\t\n", "\r\n\r\n"):
        result = parse(kind, text)
        _assert_well_formed(result)
        assert _data_count(kind, result) == 0


@pytest.mark.parametrize("kind", HOSTILE_KINDS)
def test_binary_garbage(kind: str) -> None:
    rng = random.Random(kind)
    for _ in range(20):
        blob = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4000)))
        result = parse(kind, blob.decode("utf-8", errors="replace"))
        _assert_well_formed(result)
        assert _data_count(kind, result) == 0
    nul = parse(kind, "\x00" * 1000 + "\n\x1b[31m\x07")
    _assert_well_formed(nul)
    assert _data_count(kind, nul) == 0


@pytest.mark.parametrize("kind", HOSTILE_KINDS)
def test_truncated_anywhere(kind: str) -> None:
    """Every cut of every sample parses without raising and never yields more than the whole."""
    texts = [read(p) for p in samples(kind)] or [_SYNTHETIC[kind]]
    for text in texts:
        whole = _data_count(kind, parse(kind, text))
        step = max(1, len(text) // 300)
        for end in range(0, len(text), step):
            result = parse(kind, text[:end])
            _assert_well_formed(result)
            assert _data_count(kind, result) <= whole


@pytest.mark.parametrize("kind", HOSTILE_KINDS)
def test_random_damage_never_raises(kind: str) -> None:
    rng = random.Random(f"damage-{kind}")
    texts = [read(p) for p in samples(kind)] or [_SYNTHETIC[kind]]
    for text in texts:
        for _ in range(60):
            chars = list(text)
            for _ in range(rng.randrange(1, 20)):
                position = rng.randrange(len(chars) + 1)
                action = rng.randrange(3)
                if action == 0 and chars:
                    del chars[min(position, len(chars) - 1)]
                elif action == 1:
                    chars.insert(position, rng.choice('\t \n:,|[]{}"=-#0123456789xX\x00\x1b'))
                elif chars:
                    chars[min(position, len(chars) - 1)] = rng.choice("\n\t ")
            _assert_well_formed(parse(kind, "".join(chars)))


_SAME_LAYOUT = {("nvue-counters", "cumulus-docs-514-nv-show-interface-swp16-qos-roce-status.txt"),
                ("nvue-counters", "cumulus-docs-514-nv-show-qos-roce-lossless-single-ipool.txt")}
"""Another NVUE view in the very layout of ``nv show interface PORT counters`` (key, operational, applied)."""


@pytest.mark.parametrize("kind", HOSTILE_KINDS)
def test_another_tools_output_gives_no_data(kind: str) -> None:
    for path in fixture_files():
        if expected_kind(str(path.relative_to(FIXTURES))) == kind or not path.read_bytes():
            continue  # an empty capture is no tool's output in particular
        if (kind, path.name) in _SAME_LAYOUT:
            continue
        result = parse(kind, read(path))
        _assert_well_formed(result)
        assert _data_count(kind, result) == 0, path.name
        assert result.problems, path.name


# Kinds without a real capture (see SOURCES.md "Not found"): the tool's layout.
_SYNTHETIC: dict[str, str] = {
    "sonic-pfc": (
        "  Port Rx  PFC0  PFC1  PFC2  PFC3  PFC4  PFC5  PFC6  PFC7\n"
        "---------  ----  ----  ----  ----  ----  ----  ----  ----\n"
        "Ethernet0     0     0     0    12     0     0     0     0\n"
        "\n"
        "  Port Tx  PFC0  PFC1  PFC2  PFC3  PFC4  PFC5  PFC6  PFC7\n"
        "---------  ----  ----  ----  ----  ----  ----  ----  ----\n"
        "Ethernet0     0     0     0     3     0     0     0     0\n"
    ),
}


def _ten_megabytes(kind: str) -> str:
    if kind == "squeue-json":
        sample = json.loads(read(samples(kind)[0]))
        job = sample["jobs"][0]
        count = 10_000_000 // len(json.dumps(job)) + 1
        return json.dumps({**sample, "jobs": [job] * count})
    text = read(samples(kind)[0]) if samples(kind) else _SYNTHETIC[kind]
    return (text + "\n") * (10_000_000 // (len(text) + 1) + 1)


@pytest.mark.slow
@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", HOSTILE_KINDS)
def test_ten_megabytes(kind: str) -> None:
    text = _ten_megabytes(kind)
    assert len(text) >= 10_000_000
    result = parse(kind, text)
    _assert_ok_at_scale(kind, result)
    assert detect(text) == kind


def _assert_ok_at_scale(kind: str, result: Any) -> None:
    assert isinstance(result.problems, tuple)
    assert len(result.problems) <= 201  # listed problems are capped, the count is not
    assert _data_count(kind, result) > 0
