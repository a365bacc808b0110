"""Changed-only agent lines (``--changed-only``): what the agent sends, and that ``AgentStream``
gives exactly the samples of the full lines they stand for."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from agent_harness import run_agent
from helpers.agent_lines import SCENARIO, full_samples, read_whole, reshaped, sent, simulated_lines
from helpers.agent_reference import agent_line
from helpers.rates_reference import ReferenceTracker, same_rates

from fleet.collectors import agent
from fleet.collectors.agent_reader import (
    AgentKeys,
    AgentLineError,
    AgentStream,
    decode_agent_line,
    put_moved,
)
from fleet.collectors.optics import OpticsReader
from fleet.fabric.rates import RateTracker
from fleet.fabric.samples import HostSample
from fleet.simulator import agent_stream
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import parse_scenario

optics_values = OpticsReader()


@pytest.mark.parametrize("seed", range(6))
def test_stream_gives_the_samples_of_the_full_lines(seed: int) -> None:
    """Lines that reshape now and then (a GPU field turns null, a port state unreadable, a GPU lost,
    rdma missing, a counter cleared): whatever a changed-only line cannot carry goes whole."""
    lines = reshaped(simulated_lines(24), random.Random(seed))
    stream = AgentStream("n1", optics_values)
    texts = sent(lines, full_every=10)
    assert sum('"changed_only":true' in text for text in texts) >= 3
    for text, expected in zip(texts, full_samples(lines), strict=True):
        assert read_whole(stream, text) == expected


def test_a_changed_only_line_is_its_own_keys_the_packed_numbers_and_optics() -> None:
    lines = simulated_lines(6)
    slots = agent.slot_paths(lines[0])
    quiet = agent.changed_line(lines[0], lines[1], slots)
    with_optics = agent.changed_line(lines[3], lines[4], slots)
    assert quiet is not None and with_optics is not None
    assert set(quiet) == {*agent.PER_LINE_KEYS, "changed_only", "packed"}
    assert set(with_optics) == {*agent.PER_LINE_KEYS, "changed_only", "packed", "netdevs"}
    assert all(set(entry) == {"optics_text"} for entry in with_optics["netdevs"].values())
    assert len(json.dumps(quiet)) * 5 < len(json.dumps(lines[1]))


@pytest.mark.parametrize("change", ["port", "gpu", "counter", "qp", "state", "null", "gpu_error", "string"])
def test_anything_but_numbers_that_moved_is_sent_whole(change: str) -> None:
    first, second = simulated_lines(2)
    line = copy.deepcopy(second)
    if change == "port":
        line["ports"].pop()
    elif change == "gpu":
        line["gpus"][0] = {"index": 0, "error": "NVML_ERROR_GPU_IS_LOST"}
    elif change == "counter":
        del line["ports"][0]["hw_counters"]["np_cnp_sent"]
    elif change == "qp":
        del line["qp_count"]
    elif change == "state":
        line["ports"][0]["state_code"], line["ports"][0]["state"] = 1, "DOWN"
    elif change == "null":
        line["gpus"][0]["power_w"] = None
    elif change == "gpu_error":
        line["gpu_error"] = "NVML_ERROR_DRIVER_NOT_LOADED"
    else:
        line["ports"][0]["rate"] = "200 Gb/sec (4X HDR)"
    assert agent.changed_line(first, line, agent.slot_paths(first)) is None, change


@pytest.mark.parametrize(("slot", "value"), [(2**32, 1), (3, 10**400), (-1, 1)])
def test_numbers_that_do_not_fit_go_whole(slot: int, value: int) -> None:
    assert agent.packed_moved([(slot, value)]) is None
    lines = simulated_lines(2)
    device = next(iter(lines[1]["qp_count"]))
    huge = {**lines[1], "qp_count": {**lines[1]["qp_count"], device: 10**400}}
    assert agent.changed_line(lines[0], huge, agent.slot_paths(lines[0])) is None


def test_changed_only_without_its_full_line_is_refused() -> None:
    lines = simulated_lines(4)
    texts = sent(lines, full_every=100)
    stream = AgentStream("n1")
    with pytest.raises(AgentLineError, match="without the full line"):
        stream.read(texts[1])
    stream.read(texts[0])
    with pytest.raises(AgentLineError, match="does not follow line 1"):
        stream.read(texts[2])
    with pytest.raises(AgentLineError, match="without the full line"):  # a gap drops the state
        stream.read(texts[3])
    with pytest.raises(AgentLineError, match="needs the line before it"):
        decode_agent_line(texts[1])


@pytest.mark.parametrize(("change", "reason"), [
    ({"ports": []}, "ports: a changed-only line carries its numbers in packed only"),
    ({"gpus": [{"index": 0, "power_w": 1.0}]}, "gpus: a changed-only line carries its numbers in packed only"),
    ({"qp_count": {"mlx5_0": 1}}, "qp_count: "),
    ({"slots": [0], "values": [1]}, "slots, values: "),
    ({"netdevs": {"x": {"ethtool": {"rx_bits_phy": 1}}}}, r"netdevs\.x\.ethtool: a changed-only line"),
    ({"netdevs": []}, "netdevs: expected an object"),
    ({"netdevs": {"x": 1}}, r"netdevs\.x: expected an object"),
    ({"seq": "2"}, "seq: expected int, got str"),
    ({"ts": "now"}, "ts: expected int or float, got str"),
])
def test_a_changed_only_line_that_is_not_one_is_refused_by_name(change: dict[str, Any], reason: str) -> None:
    lines = simulated_lines(3)
    texts = sent(lines, full_every=100)
    stream = AgentStream("n1")
    stream.read(texts[0])
    with pytest.raises(AgentLineError, match=reason):
        stream.read(json.dumps({**json.loads(texts[1]), **change}))
    with pytest.raises(AgentLineError, match="without the full line"):  # nothing to build on
        stream.read(texts[2])


def test_agent_sends_changed_only_lines_against_a_sysfs_tree(tmp_path: Path) -> None:
    lines = run_agent(tmp_path, "--interval", "0.01", "--optics-every", "2", "--changed-only",
                      "--full-every", "3", lines=5)
    assert [line.get("changed_only", False) for line in lines] == [False, True, True, False, True]
    assert [line["seq"] for line in lines] == [0, 1, 2, 3, 4]
    quiet = lines[1]  # the tree does not move: only the line's own keys, and the GPUs' readings
    assert set(quiet) <= {*agent.PER_LINE_KEYS, "changed_only", "packed"}
    assert lines[2]["netdevs"]["bond0"]["optics_text"] == lines[0]["netdevs"]["bond0"]["optics_text"]
    stream = AgentStream("n1", optics_values)
    samples = [read_whole(stream, json.dumps(line)) for line in lines]
    assert samples[1].values.keys() == samples[3].values.keys()
    assert samples[2].values.keys() == samples[0].values.keys()


ETHTOOL_M = sorted((Path(__file__).parent.parent / "fixtures" / "ethtool").glob("*ethtool-m*"))


@pytest.mark.parametrize("capture", ETHTOOL_M, ids=lambda path: path.name)
def test_optics_readings_keep_every_reading_fleet_parses(capture: Path) -> None:
    text = capture.read_text()
    kept = agent.optics_readings(text)
    assert optics_values(kept) == optics_values(text)
    assert len(kept) < len(text) / 2
    assert agent_stream.optics_readings(text) == kept


def test_simulated_optics_readings_match_the_agents() -> None:
    model = FleetModel(parse_scenario(SCENARIO), seed=1, start_unix=1764430000.0)
    full = agent_line(model.node_view("gpu001", 1.0), model.unix(1.0), 1, 1.0, optics=True)
    short = agent_line(model.node_view("gpu001", 1.0), model.unix(1.0), 1, 1.0, optics=True, readings_only=True)
    for name, netdev in full["netdevs"].items():
        text = netdev["optics_text"]
        assert short["netdevs"][name]["optics_text"] == agent.optics_readings(text)
        assert optics_values(agent.optics_readings(text)) == optics_values(text)


def test_agent_sends_optics_readings_only(tmp_path: Path) -> None:
    full, short = (run_agent(tmp_path / name, "--interval", "0.01", "--optics-every", "1", *args)[0]
                   for name, args in (("full", ()), ("short", ("--optics-readings",))))
    text = full["netdevs"]["bond0"]["optics_text"]
    assert short["netdevs"]["bond0"]["optics_text"] == agent.optics_readings(text)
    assert 0 < len(short["netdevs"]["bond0"]["optics_text"]) < len(text) / 2


FAULTY = SCENARIO + """
[[faults]]
kind = "pfc_storm"
target = "gpu001:mlx5_1"
at = 2

[[faults]]
kind = "high_ber"
target = "gpu001:mlx5_2"
ber = 1e-4
at = 0

[[faults]]
kind = "link_flap"
target = "gpu001:mlx5_3"
period = 3
at = 1

[[faults]]
kind = "optics_attenuation"
target = "gpu001:mlx5_0"
db = 9.0
at = 0
"""


def test_stream_and_rates_of_a_faulty_node_are_those_of_its_full_lines() -> None:
    """A node with a PFC storm, a high BER, a flapping link and weak light, read as the collector
    reads it (changed-only lines, rates of the values but optics) and whole: the same samples, and
    the rates and flags the rules give the full lines, line for line."""
    lines = simulated_lines(40, FAULTY, optics_every=3, ethtool_keep=None, readings_only=True)
    stream, rates, reference = AgentStream("n1", optics_values), RateTracker(), ReferenceTracker()
    errors_seen = full_lines = 0
    for text, expected in zip(sent(lines, full_every=15), full_samples(lines), strict=True):
        read = stream.read(text)
        if read.moved is not None:
            put_moved([read.moved])
        else:
            full_lines += 1
        assert {**read.sample.values, **read.optics} == expected.values
        counters = {key: value for key, value in expected.values.items() if key not in read.optics}
        want = reference.update(HostSample(expected.host, expected.ts, counters))
        assert same_rates(rates.update(read.sample), want)
        errors_seen += any(key[0] == "errors_per_s" and value > 0 for key, value in want.sample.values.items())
    assert errors_seen > 5, "the faults move error counters"
    assert full_lines > 3, "the flapping link's state goes whole"


def test_a_number_too_large_for_a_float_is_a_bad_line_not_a_crash() -> None:
    """json reads an integer of 400 digits (orjson refuses it); the stream refuses the line and
    starts again at the next full line."""
    lines = simulated_lines(3)
    huge = copy.deepcopy(lines[1])
    huge["ports"][0]["counters"]["port_xmit_data"] = 10**400
    stream = AgentStream("n1")
    stream.read(json.dumps(lines[0]))
    with pytest.raises(AgentLineError, match="too large for a float"):
        stream.read(json.dumps(huge))
    with pytest.raises(AgentLineError, match="without the full line before it"):
        stream.read(sent(lines[1:], 100)[1])
    assert stream.read(json.dumps(lines[2])).sample.values


def test_streams_share_key_tables_and_a_garbled_one_cannot_grow_them() -> None:
    """Every stream of a collector files a device's values under the same key objects and layout;
    GPU indexes out of garbled full lines are not kept beyond the collector's ``most``."""
    lines = simulated_lines(2)
    keys = AgentKeys(most=16)
    first, second = AgentStream("n1", keys=keys), AgentStream("n2", keys=keys)
    one, two = first.read(json.dumps(lines[0])).sample, second.read(json.dumps(lines[0])).sample
    assert one.values.layout is two.values.layout  # type: ignore[attr-defined]
    for index in range(50):
        garbled = copy.deepcopy(lines[0])
        garbled["gpus"][0]["index"] = 100 + index
        first.read(json.dumps({**garbled, "seq": index + 10}))
    assert len(keys._gpus) <= 16
