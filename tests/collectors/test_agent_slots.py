"""Changed-only lines by slot (docs/agent-schema.md): the agent sends a moved number of the last full
line as (slot, value) pairs; ``AgentStream`` puts them in place, refuses a bad pair by name, and
gives the sample of the full line they stand for."""

from __future__ import annotations

import base64
import copy
import json
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from agent_harness import agent_env, build_sysfs
from test_agent import _old_pythons
from test_agent_changed_only import full_samples, sent, simulated_lines

from fleet.collectors import agent
from fleet.collectors.agent_reader import AgentLineError, AgentStream, agent_source
from fleet.collectors.optics import optics_values
from fleet.fabric.rates import RateTracker


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


def test_a_line_by_slot_is_under_half_the_line_by_key_and_reads_the_same() -> None:
    lines = simulated_lines(3)
    slots = agent.slot_paths(lines[0])
    by_slot = agent.changed_line(lines[0], lines[1], slots)
    by_key = agent.changed_line(lines[0], lines[1])
    assert by_slot is not None and by_key is not None
    assert set(by_slot) - set(by_key) == {"slots", "values"} and "ports" not in by_slot
    assert len(json.dumps(by_slot)) * 2 < len(json.dumps(by_key))
    assert by_slot["slots"] == sorted(by_slot["slots"])
    samples = []
    for delta in (by_slot, by_key):
        stream = AgentStream("n1")
        stream.read(json.dumps(lines[0]))
        samples.append(stream.read(json.dumps(delta)))
    assert samples[0].sample == samples[1].sample == full_samples(lines[:2])[1]
    assert set(samples[0].changed or ()) == set(samples[1].changed or ())


def _slot_line(**change: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    lines = simulated_lines(2)
    delta = agent.changed_line(lines[0], lines[1], agent.slot_paths(lines[0]))
    assert delta is not None and delta["slots"]
    delta.update(change)
    return lines, delta


@pytest.mark.parametrize(("change", "reason"), [
    ({"slots": {"0": 1}}, "slots, values: expected two lists of the same length"),
    ({"values": [1]}, "slots, values: expected two lists of the same length"),
    ({"slots": [0.0], "values": [1]}, "slots: expected integers, got 0.0"),
    ({"slots": [True], "values": [1]}, "slots: expected integers, got True"),
    ({"slots": [3], "values": ["12"]}, "values: slot 3: expected a number, got '12'"),
    ({"slots": [3], "values": [None]}, "values: slot 3: expected a number, got None"),
    ({"slots": [3], "values": [False]}, "values: slot 3: expected a number, got False"),
    ({"slots": [-1], "values": [1]}, r"slots: slot -1 is not in the last full line \(\d+ slots\)"),
    ({"slots": [0, 10**6], "values": [1, 2]}, "slots: slot 1000000 is not in the last full line"),
    ({"slots": [2**70], "values": [1]}, r"slots: expected integers, got 1.18\d*e\+21"),
    ({"slots": [3], "values": [10**400]}, "a number too large for a float"),
    ({"slots": [0], "values": [1.7e308]}, "values: expected finite numbers under 1e300, got 1.7e"),
])
def test_a_bad_slot_or_value_is_refused_by_name(change: dict[str, Any], reason: str) -> None:
    lines, delta = _slot_line(**change)
    stream = AgentStream("n1")
    stream.read(json.dumps(lines[0]))
    with pytest.raises(AgentLineError, match=reason):
        stream.read(json.dumps(delta))
    with pytest.raises(AgentLineError, match="without the full line"):  # nothing half-applied to build on
        stream.read(json.dumps({**delta, "seq": delta["seq"] + 1, "slots": [], "values": []}))


def test_a_value_that_is_not_finite_is_refused() -> None:
    """orjson refuses NaN; the json fallback reads it, and the slot check refuses it."""
    lines, delta = _slot_line(slots=[3], values=[1.0])
    stream = AgentStream("n1")
    stream.read(json.dumps(lines[0]))
    with pytest.raises(AgentLineError, match="values: expected finite numbers under 1e300, got nan"):
        stream.read(json.dumps(delta).replace("[1.0]", "[NaN]"))


def test_empty_slots_change_nothing() -> None:
    lines, delta = _slot_line(slots=[], values=[])
    stream = AgentStream("n1")
    first = stream.read(json.dumps(lines[0])).sample
    read = stream.read(json.dumps(delta))
    assert read.changed == () and dict(read.sample.values) == dict(first.values)


def test_a_field_that_went_null_comes_back_by_slot() -> None:
    """power_w is a number in the full line (it has a slot), null on the next (sent by key: the key
    leaves the values), a number again (by slot, for a key the layout no longer has)."""
    lines = simulated_lines(4)
    lines[1]["gpus"][0]["power_w"] = None
    lines[3]["gpus"][0]["power_w"] = None
    texts = sent(lines, full_every=100)
    assert '"power_w":null' in texts[1] and '"power_w":null' in texts[3]
    stream, tracker, whole = AgentStream("n1", optics_values), RateTracker(), RateTracker()
    for text, expected in zip(texts, full_samples(lines), strict=True):
        read = stream.read(text)
        assert read.sample == expected
        got = tracker.update(read.sample) if read.changed_at is None else \
            tracker.update_changed(read.sample, places=read.changed_at)
        assert got == whole.update(expected)
    assert ("gpu_power_w", "gpu0", "") in full_samples(lines)[2].values


def test_a_slot_and_a_null_for_one_field_in_one_line_keep_the_line_order() -> None:
    """A keyed null and a slot for the same value (no agent sends both): the slot, applied after the
    keyed part, wins, as the later of two keys of one object would."""
    lines = simulated_lines(2)
    slots = agent.slot_paths(lines[0])
    delta = agent.changed_line(lines[0], lines[1], slots)
    assert delta is not None
    delta["gpus"] = [{"index": 0, "power_w": None}]
    delta["slots"].append(slots[("gpus", 0, "power_w")])
    delta["values"].append(123.5)
    stream = AgentStream("n1")
    stream.read(json.dumps(lines[0]))
    read = stream.read(json.dumps(delta))
    assert read.sample.values[("gpu_power_w", "gpu0", "")] == 123.5


def test_slots_of_what_fleet_does_not_keep_are_read_and_skipped() -> None:
    """A simulated RoCE NIC has hw_counters fleet does not keep (rx_write_requests): they have slots,
    move every second, and leave no value."""
    lines = simulated_lines(3)
    slots = agent.slot_paths(lines[0])
    kept_not = slots[("ports", 0, "hw_counters", "rx_write_requests")]
    delta = agent.changed_line(lines[0], lines[1], slots)
    assert delta is not None and kept_not in delta["slots"]
    stream = AgentStream("n1")
    stream.read(json.dumps(lines[0]))
    read = stream.read(json.dumps(delta))
    assert read.sample == full_samples(lines[:2])[1]
    assert not any(key[0] == "rx_write_requests" for key in read.sample.values)


def test_streams_of_one_shape_share_a_slot_table() -> None:
    from fleet.collectors import agent_reader
    lines = simulated_lines(1)
    one, two = AgentStream("n1"), AgentStream("n2")
    one.read(json.dumps(lines[0]))
    two.read(json.dumps({**lines[0], "host": "n2"}))
    assert one._slots is two._slots and len(one._slots.keys) == len(agent.slot_paths(lines[0]))
    assert len(agent_reader._SLOTS) <= agent_reader._MAX_TABLES


@pytest.mark.parametrize("packed", [False, True], ids=["lists", "packed"])
@pytest.mark.parametrize("python", ["this", "3.6"])
def test_the_agent_sends_a_moved_counter_by_slot(tmp_path: Path, python: str, packed: bool) -> None:
    """The agent itself, on a sysfs tree whose counter moves while it runs: the moved counter comes
    by slot (in the two lists, or ``packed`` with ``--packed``), and the stream reads it as the
    counter x 4 (port_xmit_data counts 4-byte words). Also under Python 3.6 (RHEL 8's), where one
    is installed: the diff by slot runs on the node."""
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
         "--optics-every", "0", "--changed-only", *(["--packed"] if packed else [])],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=agent_env(tmp_path, "h100"),
    ) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        lines = [proc.stdout.readline()]
        full = json.loads(lines[0])
        moved_to = int(counter.read_text()) + 1000
        counter.write_text(f"{moved_to}\n")
        deadline = time.monotonic() + 10
        while '"slots"' not in lines[-1] and '"packed"' not in lines[-1] and time.monotonic() < deadline:
            lines.append(proc.stdout.readline())
        proc.stdin.close()
        assert proc.wait(timeout=10) == 0
    slot = agent.slot_paths(full)[("ports", 1, "counters", "port_xmit_data")]
    last = json.loads(lines[-1])
    assert full["ports"][1]["device"] == "mlx5_1" and last["changed_only"] is True
    if packed:
        assert "slots" not in last and base64.b64decode(last["packed"]) == struct.pack("<Id", slot, moved_to)
    else:
        assert dict(zip(last["slots"], last["values"], strict=True)) == {slot: moved_to}
    stream = AgentStream("n1", optics_values)
    samples = [stream.read(text) for text in lines]
    assert samples[-1].sample.values[("tx_bytes", "mlx5_1", "1")] == moved_to * 4
    assert samples[-1].changed == (("tx_bytes", "mlx5_1", "1"),)


def test_the_slots_path_reads_a_full_line_changed_in_place() -> None:
    """Nothing of a stream's last sample is written to by the next line (the array is copied)."""
    lines = simulated_lines(3)
    texts = sent(lines, full_every=100)
    stream = AgentStream("n1")
    first = stream.read(texts[0]).sample
    kept = copy.deepcopy(dict(first.values))
    stream.read(texts[1])
    stream.read(texts[2])
    assert dict(first.values) == kept
