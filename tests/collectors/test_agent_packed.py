"""Changed-only lines with their moved numbers ``packed`` (``--packed``, docs/agent-schema.md), read
one by one and held to be written together (``write_slots``), on the simulator's lines and hostile ones."""

from __future__ import annotations

import base64
import json
import random
import re
import struct
from typing import Any

import numpy as np
import pytest
from test_agent_changed_only import full_samples, reshaped, simulated_lines

from fleet.collectors import agent
from fleet.collectors.agent_reader import (
    WRITE_TOGETHER_FROM,
    AgentLineError,
    AgentStream,
    StreamSample,
    write_slots,
)
from fleet.collectors.optics import optics_values


def packed_texts(lines: list[dict[str, Any]], full_every: int, host: str = "n1") -> list[str]:
    """What the agent prints with ``--changed-only --full-every F --packed``."""
    out = []
    slots: dict[tuple[Any, ...], int] = {}
    for index, line in enumerate(lines):
        line = {**line, "host": host}
        delta = agent.changed_line(lines[index - 1], line, slots, packed=True) if index and index % full_every else None
        if delta is None:
            slots = agent.slot_paths(line)
        out.append(json.dumps(delta if delta is not None else line, separators=(",", ":")))
    return out


def _decoded(text: str) -> dict[tuple[int, ...], float]:
    data = base64.b64decode(text)
    count = len(data) // 12
    return dict(zip(struct.unpack(f"<{count}I", data[:4 * count]),
                    struct.unpack(f"<{count}d", data[4 * count:]), strict=True))


def test_packed_holds_the_lists_numbers_as_doubles() -> None:
    lines = simulated_lines(2)
    slots = agent.slot_paths(lines[0])
    by_lists = agent.changed_line(lines[0], lines[1], slots)
    by_packed = agent.changed_line(lines[0], lines[1], slots, packed=True)
    assert by_lists is not None and by_packed is not None
    assert "slots" not in by_packed and "values" not in by_packed
    assert _decoded(by_packed["packed"]) == {slot: float(value) for slot, value in
                                             zip(by_lists["slots"], by_lists["values"], strict=True)}
    assert len(json.dumps(by_packed)) < len(json.dumps(by_lists))


@pytest.mark.parametrize(("slots", "values"), [([2**32], [1]), ([3], [10**400]), ([-1], [1])])
def test_numbers_that_do_not_fit_are_not_packed(slots: list[int], values: list[int]) -> None:
    assert agent.packed_moved(slots, values) is None


def test_a_line_whose_numbers_do_not_fit_goes_as_lists() -> None:
    lines = simulated_lines(2)
    device = next(iter(lines[1]["qp_count"]))
    huge = {**lines[1], "qp_count": {**lines[1]["qp_count"], device: 10**400}}
    delta = agent.changed_line(lines[0], huge, agent.slot_paths(lines[0]), packed=True)
    assert delta is not None and "packed" not in delta and 10**400 in delta["values"]


@pytest.mark.parametrize("seed", range(6))
def test_a_packed_stream_gives_the_samples_of_the_full_lines(seed: int) -> None:
    lines = reshaped(simulated_lines(24), random.Random(seed))
    texts = packed_texts(lines, full_every=10)
    assert sum('"packed":' in text for text in texts) >= 10
    stream = AgentStream("n1", optics_values)
    for text, expected in zip(texts, full_samples(lines), strict=True):
        assert stream.read(text).sample == expected


def _held_streams(hosts: int, lines: list[dict[str, Any]]) -> tuple[list[AgentStream], list[list[str]]]:
    texts = [packed_texts(lines, full_every=100, host=f"n{at}") for at in range(hosts)]
    return [AgentStream(f"n{at}", optics_values) for at in range(hosts)], texts


def _read_held(streams: list[AgentStream], texts: list[str]) -> list[StreamSample]:
    reads = [stream.read(text, hold_slots=True) for stream, text in zip(streams, texts, strict=True)]
    write_slots([read.slots for read in reads if read.slots is not None])
    return reads


def _changed(read: StreamSample) -> list[int]:
    return sorted([*(read.changed_at or ()), *(read.slots.places if read.slots is not None else ())])


@pytest.mark.parametrize("hosts", [1, WRITE_TOGETHER_FROM - 1, WRITE_TOGETHER_FROM + 5])
def test_held_lines_written_together_are_the_lines_read_one_by_one(hosts: int) -> None:
    """Optics lines and reshaped ones are read whole; the rest are held, and written as one group
    (or one by one when too few): the samples and the places that moved are the same."""
    lines = reshaped(simulated_lines(12), random.Random(3))
    held, texts = _held_streams(hosts, lines)
    alone = [AgentStream(f"n{at}", optics_values) for at in range(hosts)]
    held_lines = together = 0
    for seq in range(len(lines)):
        reads = _read_held(held, [texts[at][seq] for at in range(hosts)])
        held_lines += sum(read.slots is not None for read in reads)
        together += sum(read.slots is not None and isinstance(read.slots.places, np.ndarray) for read in reads)
        for at, read in enumerate(reads):
            whole = alone[at].read(texts[at][seq])
            assert read.sample == whole.sample
            assert read.slots is None or not read.slots.error
            assert _changed(read) == sorted(whole.changed_at or ()) or whole.changed_at is None
    assert held_lines >= hosts * 5
    assert together == (held_lines if hosts >= WRITE_TOGETHER_FROM else 0)


def _bad(text: str, **change: Any) -> str:
    line = json.loads(text)
    line.update(change)
    return json.dumps(line)


def _packed_of(slots: list[int], values: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(slots)}I{len(values)}d", *slots, *values)).decode()


BAD_PACKED = [
    ({"packed": 7}, "packed: expected a string, got int"),
    ({"packed": "not base64!"}, "packed: not base64"),
    ({"packed": base64.b64encode(b"12345678901").decode()}, "packed: 11 bytes, not 12 per number"),
    ({"packed": _packed_of([10**6], [1.0])}, r"slots: slot 1000000 is not in the last full line \(\d+ slots\)"),
    ({"packed": _packed_of([0, 1], [1.0, float("nan")])}, "values: expected finite numbers under 1e300, got nan"),
    ({"packed": _packed_of([0], [float("-inf")])}, "values: expected finite numbers under 1e300, got -inf"),
    ({"packed": _packed_of([0], [1.7e308])}, "values: expected finite numbers under 1e300, got 1.7e"),
    ({"slots": [0], "values": [1]}, "packed, slots, values: expected packed or the two lists, not both"),
]


@pytest.mark.parametrize(("change", "reason"), BAD_PACKED)
def test_a_bad_packed_line_is_refused_by_name(change: dict[str, Any], reason: str) -> None:
    lines = simulated_lines(3)
    texts = packed_texts(lines, full_every=100)
    stream = AgentStream("n1")
    stream.read(texts[0])
    with pytest.raises(AgentLineError, match=reason):
        stream.read(_bad(texts[1], **change))
    with pytest.raises(AgentLineError, match="without the full line"):  # nothing half-applied to build on
        stream.read(texts[2])


@pytest.mark.parametrize(("change", "reason"), [case for case in BAD_PACKED
                                                if case[1].startswith(("slots:", "values:"))])
def test_a_bad_held_line_fails_alone_and_its_stream_waits_for_a_full_line(change: dict[str, Any],
                                                                           reason: str) -> None:
    """Checked when written: the group falls back to one by one, the bad line gets its reason, the
    others are written, and the bad line's stream refuses its next changed-only line."""
    hosts = WRITE_TOGETHER_FROM + 2
    lines = simulated_lines(4)
    streams, texts = _held_streams(hosts, lines)
    _read_held(streams, [text[0] for text in texts])
    second = [text[1] for text in texts]
    second[2] = _bad(second[2], **change)
    reads = _read_held(streams, second)
    assert all(read.slots is not None for read in reads)
    errors = [read.slots.error for read in reads if read.slots is not None]
    assert re.match(reason, errors[2])
    assert errors[:2] + errors[3:] == [""] * (hosts - 1)
    good = AgentStream("n0", optics_values)
    expected = [good.read(text).sample for text in texts[0][:3]]
    assert reads[0].sample == expected[1]
    with pytest.raises(AgentLineError, match="without the full line"):
        streams[2].read(texts[2][2])
    assert streams[0].read(texts[0][2]).sample == expected[2]
