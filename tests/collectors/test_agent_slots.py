"""Changed-only lines by slot (docs/agent-schema.md): the agent sends the numbers that moved since the
line before as ``packed`` (slot, value) pairs, slots numbered in the last full line; ``AgentStream``
checks them and refuses a bad one by name; ``put_moved`` puts them in place, many lines at once."""

from __future__ import annotations

import base64
import copy
import json
import random
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from agent_harness import agent_env, build_sysfs
from helpers.agent_lines import full_samples, read_whole, reshaped, sent, simulated_lines
from test_agent import _old_pythons

from fleet.collectors import agent
from fleet.collectors.agent_reader import (
    AgentKeys,
    AgentLineError,
    AgentStream,
    agent_source,
    put_moved,
)
from fleet.collectors.optics import OpticsReader


def test_slots_number_every_number_of_the_counted_sections_in_the_line_order() -> None:
    line = simulated_lines(1)[0]
    line["gpus"][1]["power_w"] = None  # unsupported in this full line: no slot
    paths = list(agent.slot_paths(line))
    assert list(agent.slot_paths(line).values()) == list(range(len(paths)))
    port = line["ports"][0]
    first = [("ports", 0, "counters", name) for name in port["counters"]]
    assert paths[:len(first)] == first
    sections = {path[0] for path in paths}
    assert sections == {"ports", "netdevs", "qp_count", "gpus"}
    assert ("gpus", 1, "power_w") not in paths and ("gpus", 0, "power_w") in paths
    assert not any(path[-1] in ("index", "name", "uuid", "state_code", "rate_gbps") for path in paths)
    numbers = sum(len(p["counters"]) + len(p["hw_counters"]) for p in line["ports"]) \
        + sum(len(entry["ethtool"]) for entry in line["netdevs"].values()) + len(line["qp_count"]) \
        + sum(sum(type(v) in (int, float) for k, v in gpu.items() if k != "index") for gpu in line["gpus"])
    assert len(paths) == numbers


def _decoded(text: str) -> dict[int, float]:
    data = base64.b64decode(text)
    count = len(data) // 12
    return dict(zip(struct.unpack(f"<{count}I", data[:4 * count]),
                    struct.unpack(f"<{count}d", data[4 * count:]), strict=True))


def test_packed_holds_each_moved_number_at_its_slot_as_a_double() -> None:
    lines = simulated_lines(2)
    slots = agent.slot_paths(lines[0])
    delta = agent.changed_line(lines[0], lines[1], slots)
    assert delta is not None
    moved = {slots[path]: float(_at(lines[1], path)) for path in slots if _at(lines[1], path) != _at(lines[0], path)}
    assert moved and _decoded(delta["packed"]) == moved


def _at(line: dict[str, Any], path: tuple[Any, ...]) -> Any:
    value: Any = line
    for step in path:
        value = value[step]
    return value


def _packed_of(slots: list[int], values: list[float]) -> str:
    return base64.b64encode(struct.pack(f"<{len(slots)}I{len(values)}d", *slots, *values)).decode()


BAD_PACKED = [
    ({"packed": 7}, "packed: expected a string, got int"),
    ({"packed": "not base64!"}, "packed: not base64"),
    ({"packed": base64.b64encode(b"12345678901").decode()}, "packed: 11 bytes, not 12 per number"),
    ({"packed": _packed_of([10**6], [1.0])}, r"packed: slot 1000000 is not in the last full line \(\d+ slots\)"),
    ({"packed": _packed_of([0, 1], [1.0, float("nan")])}, "packed: expected finite numbers under 1e300, got nan"),
    ({"packed": _packed_of([0], [float("-inf")])}, "packed: expected finite numbers under 1e300, got -inf"),
    ({"packed": _packed_of([0], [1.7e308])}, "packed: expected finite numbers under 1e300, got 1.7e"),
]


@pytest.mark.parametrize(("change", "reason"), BAD_PACKED)
def test_a_bad_packed_line_is_refused_by_name(change: dict[str, Any], reason: str) -> None:
    lines = simulated_lines(3)
    texts = sent(lines, full_every=100)
    stream = AgentStream("n1")
    stream.read(texts[0])
    with pytest.raises(AgentLineError, match=reason):
        stream.read(json.dumps({**json.loads(texts[1]), **change}))
    with pytest.raises(AgentLineError, match="without the full line"):  # nothing half-applied to build on
        stream.read(texts[2])


def test_a_line_without_packed_changes_nothing() -> None:
    lines = simulated_lines(2)
    delta = {**json.loads(sent(lines, full_every=100)[1])}
    del delta["packed"]
    stream = AgentStream("n1")
    first = read_whole(stream, json.dumps(lines[0]))
    assert read_whole(stream, json.dumps(delta)).values == first.values


def test_slots_of_what_fleet_does_not_keep_are_read_and_skipped() -> None:
    """A simulated RoCE NIC has hw_counters fleet does not keep (rx_write_requests): they have slots,
    move every second, and leave no value."""
    lines = simulated_lines(3)
    slots = agent.slot_paths(lines[0])
    kept_not = slots[("ports", 0, "hw_counters", "rx_write_requests")]
    delta = agent.changed_line(lines[0], lines[1], slots)
    assert delta is not None and kept_not in _decoded(delta["packed"])
    stream = AgentStream("n1")
    stream.read(json.dumps(lines[0]))
    sample = read_whole(stream, json.dumps(delta))
    assert sample.values == full_samples(lines[:2])[1].values
    assert not any(key[0] == "rx_write_requests" for key in sample.values)


def test_streams_of_one_shape_share_a_slot_table() -> None:
    lines = simulated_lines(1)
    keys = AgentKeys()
    one, two = AgentStream("n1", keys=keys), AgentStream("n2", keys=keys)
    one.read(json.dumps(lines[0]))
    two.read(json.dumps({**lines[0], "host": "n2"}))
    assert one._slots is two._slots and one._slots is not None
    assert len(one._slots.places) == len(agent.slot_paths(lines[0]))


@pytest.mark.parametrize("hosts", [1, 3, 12])
def test_lines_put_in_place_together_are_the_lines_put_one_by_one(hosts: int) -> None:
    """The lines of many streams of one shape (reshaped now and then: their full lines go whole)
    put in place in one ``put_moved``, against each put alone."""
    lines = reshaped(simulated_lines(12), random.Random(3))
    texts = [sent(lines, full_every=100, host=f"n{at}") for at in range(hosts)]
    keys, optics = AgentKeys(), OpticsReader()
    together = [AgentStream(f"n{at}", optics, keys) for at in range(hosts)]
    alone = [AgentStream(f"n{at}", optics) for at in range(hosts)]
    moved = 0
    for seq in range(len(lines)):
        reads = [stream.read(text[seq]) for stream, text in zip(together, texts, strict=True)]
        put_moved([read.moved for read in reads if read.moved is not None])
        moved += sum(read.moved is not None for read in reads)
        for at, read in enumerate(reads):
            assert {**read.sample.values, **read.optics} == read_whole(alone[at], texts[at][seq]).values
    assert moved >= hosts * 3


@pytest.mark.parametrize("python", ["this", "3.6"])
def test_the_agent_sends_a_moved_counter_by_slot(tmp_path: Path, python: str) -> None:
    """The agent itself, on a sysfs tree whose counter moves while it runs: the moved counter comes
    ``packed`` by its slot, and the stream reads it as the counter x 4 (port_xmit_data counts 4-byte
    words). Also under Python 3.6 (RHEL 8's), where one is installed: the diff runs on the node."""
    interpreter = sys.executable
    if python == "3.6":
        old = _old_pythons()
        if not old:
            pytest.skip("no Python 3.6 interpreter on this machine")
        interpreter = old[0]
    sysfs = build_sysfs(tmp_path / "sys")
    counter = sysfs / "class" / "infiniband" / "mlx5_1" / "ports" / "1" / "counters" / "port_xmit_data"
    with subprocess.Popen(
        [interpreter, "-u", "-c", agent_source(), "--sysfs", str(sysfs), "--interval", "0.2",
         "--optics-every", "0", "--changed-only"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=agent_env(tmp_path, "h100"),
    ) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        lines = [proc.stdout.readline()]
        full = json.loads(lines[0])
        moved_to = int(counter.read_text()) + 1000
        counter.write_text(f"{moved_to}\n")
        deadline = time.monotonic() + 10
        while '"packed"' not in lines[-1] and time.monotonic() < deadline:
            lines.append(proc.stdout.readline())
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
    slot = agent.slot_paths(full)[("ports", 1, "counters", "port_xmit_data")]
    last = json.loads(lines[-1])
    assert full["ports"][1]["device"] == "mlx5_1" and last["changed_only"] is True
    assert base64.b64decode(last["packed"]) == struct.pack("<Id", slot, moved_to)
    stream = AgentStream("n1")
    samples = [read_whole(stream, text) for text in lines]
    assert samples[-1].values[("tx_bytes", "mlx5_1", "1")] == moved_to * 4


def test_the_next_line_writes_nothing_of_the_last_sample() -> None:
    """Each line's values are an array of its own: a stream's last sample stays as it was read."""
    lines = simulated_lines(3)
    texts = sent(lines, full_every=100)
    stream = AgentStream("n1")
    first = read_whole(stream, texts[0])
    kept = copy.deepcopy(dict(first.values))
    read_whole(stream, texts[1])
    read_whole(stream, texts[2])
    assert dict(first.values) == kept
