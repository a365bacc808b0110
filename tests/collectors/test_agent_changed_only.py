"""Changed-only agent lines (``--changed-only``): what the agent sends, and that ``AgentStream``
gives exactly the samples of the full lines they stand for, with every moved key in ``changed``."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from agent_harness import run_agent
from helpers.agent_reference import agent_line

from fleet.collectors import agent
from fleet.collectors.agent_reader import (
    AgentLineError,
    AgentStream,
    decode_agent_line,
    host_sample,
)
from fleet.collectors.optics import optics_values
from fleet.fabric.rates import RateTracker
from fleet.fabric.samples import HostSample, PackedValues
from fleet.simulator import agent_stream
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import parse_scenario

SCENARIO = """
[fabric]
nodes = 4
nodes_per_leaf = 2
spines = 2
link_layer = "roce"
link_gbps = 400
seed = 3

[[jobs]]
id = 9000
tenant = "t0"
nodes = "gpu[001-004]"
load = 0.6
"""


def simulated_lines(count: int) -> list[dict[str, Any]]:
    """Full lines of one simulated node under traffic, optics every 4th, as its agent builds them."""
    model = FleetModel(parse_scenario(SCENARIO), seed=1, start_unix=1764430000.0)
    return [agent_line(model.node_view("gpu001", float(seq)), model.unix(float(seq)), seq, 1.0,
                                    optics=(seq - 1) % 4 == 0, ethtool_keep=frozenset({"rx_prio3_pause", "rx_bits_phy",
                                                                                       "rx_corrected_bits_phy"}))
            for seq in range(1, count + 1)]


def reshaped(lines: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    """The lines with what real nodes do now and then: a GPU field turns null, a port state is
    unreadable, a GPU is lost, rdma goes missing, a counter is cleared."""
    out = copy.deepcopy(lines)
    for line in out[3:]:
        roll = rng.random()
        if roll < 0.1:
            line["gpus"][0]["power_w"] = None
        elif roll < 0.2:
            line["ports"][1]["state_code"] = None
        elif roll < 0.25:
            line["gpus"][2] = {"index": 2, "error": "NVML_ERROR_GPU_IS_LOST"}
        elif roll < 0.3:
            del line["qp_count"]
        elif roll < 0.4:
            line["ports"][0]["counters"]["port_xmit_data"] = 5
        elif roll < 0.45:
            line["gpu_error"] = "NVML_ERROR_DRIVER_NOT_LOADED"
    return out


def full_samples(lines: list[dict[str, Any]]) -> list[HostSample]:
    return [host_sample(decode_agent_line(json.dumps(line)), "n1", optics_values) for line in lines]


def sent(lines: list[dict[str, Any]], full_every: int, *, by_slot: bool = True) -> list[str]:
    """What the agent prints with ``--changed-only --full-every F``; ``by_slot=False``: every change
    under its keys, as an agent that does not number slots may send them."""
    out = []
    slots: dict[tuple[Any, ...], int] = {}
    for index, line in enumerate(lines):
        delta = agent.changed_line(lines[index - 1], line, slots if by_slot else None) \
            if index and index % full_every else None
        if delta is None:
            slots = agent.slot_paths(line)
        out.append(json.dumps(delta if delta is not None else line, separators=(",", ":")))
    return out


@pytest.mark.parametrize("by_slot", [True, False], ids=["by-slot", "by-key"])
@pytest.mark.parametrize("seed", range(6))
def test_stream_gives_the_samples_of_the_full_lines(seed: int, by_slot: bool) -> None:
    lines = reshaped(simulated_lines(24), random.Random(seed))
    stream = AgentStream("n1", optics_values)
    texts = sent(lines, full_every=10, by_slot=by_slot)
    assert by_slot == any('"slots":' in text for text in texts)
    assert sum('"changed_only":true' in text for text in texts) >= 10
    previous: HostSample | None = None
    for text, expected in zip(texts, full_samples(lines), strict=True):
        read = stream.read(text)
        assert read.sample == expected
        if read.changed is not None:
            assert previous is not None and previous.values.keys() - expected.values.keys() <= {
                key for key in previous.values if key[0].startswith("optics_")}
            moved = {key for key, value in expected.values.items()
                     if not key[0].startswith("optics_") and previous.values[key] != value}
            assert moved <= set(read.changed)
        else:
            assert read.netdev_owner is not None or '"changed_only"' in text
        previous = expected


def test_changed_only_lines_are_small() -> None:
    lines = simulated_lines(3)
    full, delta = json.dumps(lines[1]), json.dumps(agent.changed_line(lines[0], lines[1]))
    assert len(delta) * 3 < len(full)


def test_a_new_shape_is_sent_whole() -> None:
    first, second = simulated_lines(2)
    for change in ("port", "gpu", "counter", "qp"):
        line = copy.deepcopy(second)
        if change == "port":
            line["ports"].pop()
        elif change == "gpu":
            line["gpus"][0] = {"index": 0, "error": "NVML_ERROR_GPU_IS_LOST"}
        elif change == "counter":
            del line["ports"][0]["hw_counters"]["np_cnp_sent"]
        else:
            del line["qp_count"]
        assert agent.changed_line(first, line) is None, change


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


@pytest.mark.parametrize(("path", "value", "reason"), [
    (("ports", 0, "counters", "port_xmit_data"), "12", r"ports\[0\].counters.port_xmit_data: expected an integer"),
    (("ports", 0, "counters", "port_rcv_data"), 2**64, r"ports\[0\].counters.port_rcv_data: expected an integer"),
    (("ports", 0, "hw_counters", "np_cnp_sent"), -(2**63) - 1, r"ports\[0\].hw_counters.np_cnp_sent: expected an integer"),
    (("ports", 0, "device"), "mlx5_9", r"ports\[0\]: port 'mlx5_9' 1 is not in the last full line"),
    (("gpus", 0, "power_w"), float("nan"), r"gpus\[0\].power_w: expected a number or null"),
    (("qp_count",), [], "qp_count: expected an object"),
    (("qp_count", "mlx5_0"), 1.5, r"qp_count.mlx5_0: expected an integer, got 1.5"),
    (("ports", 0, "hw_counters"), [], r"ports\[0\].hw_counters: expected an object"),
    (("ports", 0, "counters", "port_rcv_data"), True, r"ports\[0\].counters.port_rcv_data: expected an integer"),
    (("ports", 0, "port"), "1", r"ports\[0\]: port 'mlx5_0' '1' is not in the last full line"),
    (("ports", 0, "state_code"), "4", r"ports\[0\].state_code: expected a number or null"),
    (("netdevs", "*", "ethtool", "rx_bits_phy"), 2.0, r"netdevs\.\w+\.ethtool\.rx_bits_phy: expected an integer"),
    (("netdevs", "*", "ethtool"), 3, r"netdevs\.\w+\.ethtool: expected an object"),
    (("gpus", 0, "index"), True, r"gpus\[0\].index: expected int, got bool"),
    (("gpus", 0, "temp_c"), "hot", r"gpus\[0\].temp_c: expected a number or null, got 'hot'"),
    (("gpus", 0, "power_w"), float("inf"), r"gpus\[0\].power_w: expected a number or null"),
])
def test_bad_changed_only_line_names_the_field(path: tuple[Any, ...], value: Any, reason: str) -> None:
    lines = simulated_lines(3)
    delta = agent.changed_line(lines[0], lines[1])
    assert delta is not None
    delta.setdefault("qp_count", {})
    delta.setdefault("gpus", [{"index": 0}])
    netdev = next(iter(lines[1]["netdevs"]))  # "*" in a path
    delta.setdefault("netdevs", {}).setdefault(netdev, {}).setdefault("ethtool", {})
    target: Any = delta
    for step in path[:-1]:
        target = target[netdev if step == "*" else step]
    target[path[-1]] = value
    stream = AgentStream("n1")
    stream.read(json.dumps(lines[0]))
    with pytest.raises(AgentLineError, match=reason):
        stream.read(json.dumps(delta))
    stream.read(json.dumps(lines[2]))  # the next full line starts again


def test_agent_sends_changed_only_lines_against_a_sysfs_tree(tmp_path: Path) -> None:
    lines = run_agent(tmp_path, "--interval", "0.01", "--optics-every", "2", "--changed-only",
                      "--full-every", "3", lines=5)
    assert [line.get("changed_only", False) for line in lines] == [False, True, True, False, True]
    assert [line["seq"] for line in lines] == [0, 1, 2, 3, 4]
    quiet = lines[1]  # the tree does not move: only the line's own keys, and the GPUs' readings
    assert set(quiet) <= {*agent.PER_LINE_KEYS, "changed_only", "gpus"}
    assert lines[2]["netdevs"]["bond0"]["optics_text"] == lines[0]["netdevs"]["bond0"]["optics_text"]
    stream = AgentStream("n1", optics_values)
    samples = [stream.read(json.dumps(line)).sample for line in lines]
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
    short = agent_line(model.node_view("gpu001", 1.0), model.unix(1.0), 1, 1.0, optics=True,
                                    readings_only=True)
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


def test_a_counter_fleet_does_not_keep_may_hold_anything_on_a_changed_only_line() -> None:
    """Only the counters fleet keeps are checked (and read) on a changed-only line, as before."""
    lines = simulated_lines(2)
    delta = agent.changed_line(lines[0], lines[1])
    assert delta is not None
    delta["ports"][0].setdefault("counters", {})["not_a_counter_fleet_keeps"] = "x"
    stream = AgentStream("n1")
    stream.read(json.dumps(lines[0]))
    assert stream.read(json.dumps(delta)).sample == full_samples(lines)[1]


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
    reads it (changed-only lines, ``update_changed``) and whole (``host_sample``, ``update``):
    the same samples, the same rates and the same flags, line for line."""
    model = FleetModel(parse_scenario(FAULTY), seed=1, start_unix=1764430000.0)
    lines = [agent_line(model.node_view("gpu001", float(seq)), model.unix(float(seq)), seq, 1.0,
                                     optics=seq % 3 == 0, readings_only=True)
             for seq in range(1, 41)]
    stream, changed_only, whole = AgentStream("n1", optics_values), RateTracker(), RateTracker()
    by_place = RateTracker()
    errors_seen = 0
    for text, expected in zip(sent(lines, full_every=15), full_samples(lines), strict=True):
        read = stream.read(text)
        assert read.sample == expected
        got = changed_only.update(read.sample) if read.changed is None else \
            changed_only.update_changed(read.sample, read.changed)
        placed = by_place.update(read.sample) if read.changed_at is None else \
            by_place.update_changed(read.sample, places=read.changed_at)  # as NodePoller._keep
        want = whole.update(expected)
        assert got.sample.values == want.sample.values == placed.sample.values
        assert got.flags == want.flags == placed.flags
        errors_seen += any(key[0] == "errors_per_s" and value > 0 for key, value in want.sample.values.items())
    assert errors_seen > 5, "the faults move error counters"


def test_a_counter_the_full_line_lacked_makes_the_line_compared_whole() -> None:
    lines = simulated_lines(2)
    first = copy.deepcopy(lines[0])
    counters = first["ports"][0]["counters"]
    name = next(iter(counters))
    del counters[name]
    delta = {"schema": lines[1]["schema"], "host": "n1", "ts": lines[1]["ts"], "seq": lines[1]["seq"],
             "interval_s": 1.0, "changed_only": True,
             "ports": [{"device": first["ports"][0]["device"], "port": first["ports"][0]["port"],
                        "counters": {name: lines[1]["ports"][0]["counters"][name]}}]}
    stream = AgentStream("n1")
    stream.read(json.dumps(first))
    read = stream.read(json.dumps(delta))
    assert read.changed is None
    assert len(read.sample.values) == len(stream.read(json.dumps({**delta, "seq": delta["seq"] + 1,
                                                                   "ports": []})).sample.values)


@pytest.mark.parametrize(("port", "reason"), [
    ({"hw_counters": {"np_cnp_sent": "x"}, "counters": {"port_xmit_data": "y"}},
     r"ports\[0\].hw_counters.np_cnp_sent: expected an integer"),
    ({"counters": {"port_xmit_data": "y"}, "hw_counters": {"np_cnp_sent": "x"}},
     r"ports\[0\].counters.port_xmit_data: expected an integer"),
    ({"state_code": "4", "counters": {"port_xmit_data": "y"}}, r"ports\[0\].state_code: expected a number"),
    ({"counters": {"port_xmit_data": 1.5}, "state_code": "4"}, r"ports\[0\].counters.port_xmit_data: expected"),
    ({"counters": None}, r"ports\[0\].counters: expected an object"),
])
def test_the_first_bad_field_of_a_port_is_named(port: dict[str, Any], reason: str) -> None:
    """A port whose values are not all good leaves the tight loop for the field-by-field one, which
    names the first bad field in the line's order, as it always did."""
    lines = simulated_lines(2)
    delta = agent.changed_line(lines[0], lines[1])
    assert delta is not None
    delta["ports"][0] = {"device": lines[0]["ports"][0]["device"], "port": lines[0]["ports"][0]["port"], **port}
    stream = AgentStream("n1")
    stream.read(json.dumps(lines[0]))
    with pytest.raises(AgentLineError, match=reason):
        stream.read(json.dumps(delta))


def test_a_port_with_gauges_and_counters_reads_as_its_full_line() -> None:
    """Port gauges next to counters (a link going down as traffic stops) take the field-by-field way:
    the same sample as the full line, and every moved key in ``changed``."""
    lines = simulated_lines(3)
    lines[1]["ports"][0]["state_code"], lines[1]["ports"][0]["state"] = 1, "DOWN"
    lines[1]["ports"][0]["rate_gbps"] = 200.0
    stream = AgentStream("n1", optics_values)
    texts = sent(lines, full_every=10)
    assert '"changed_only":true' in texts[1] and '"state_code":1' in texts[1]
    stream.read(texts[0])
    read = stream.read(texts[1])
    assert read.sample == full_samples(lines)[1]
    assert read.changed is not None and ("port_state", lines[0]["ports"][0]["device"], "1") in read.changed


def test_streams_share_key_tables_and_a_garbled_one_cannot_grow_them() -> None:
    """Every stream files a device's values under the same key objects (one table for the fleet);
    GPU indexes out of a garbled line are not kept beyond ``_MAX_TABLES``."""
    from fleet.collectors import agent_reader
    lines = simulated_lines(2)
    first, second = AgentStream("n1"), AgentStream("n2")
    one, two = first.read(json.dumps(lines[0])).sample, second.read(json.dumps(lines[0])).sample
    assert [a for a, b in zip(one.values, two.values, strict=True) if a is not b and a[0] != "qp_count"] == []
    seq = lines[0]["seq"]
    for index in range(agent_reader._MAX_TABLES + 50):
        seq += 1
        if index % 50 == 0:  # a full line now and then, as the agent sends: the garbled keys do not pile up
            first.read(json.dumps({**lines[0], "seq": seq}))
            seq += 1
        delta = {"schema": "fleet-agent/1", "host": "n1", "ts": lines[1]["ts"] + index, "interval_s": 1.0,
                 "seq": seq, "changed_only": True, "gpus": [{"index": 100 + index, "power_w": 1.0}]}
        assert first.read(json.dumps(delta)).changed is None  # a GPU the full line lacked
    assert len(agent_reader._GPU_KEYS) <= agent_reader._MAX_TABLES


def test_rates_added_to_the_kept_sample_change_no_later_rate() -> None:
    """``NodePoller._keep`` adds each line's rates to that line's own values (one copy a line), which
    the tracker keeps as the host's previous sample: the rates and flags of every later line are still
    those of the full lines, and each stored sample is the full line's values with its rates."""
    model = FleetModel(parse_scenario(FAULTY), seed=2, start_unix=1764430000.0)
    lines = [agent_line(model.node_view("gpu001", float(seq)), model.unix(float(seq)), seq, 1.0,
                        optics=seq % 4 == 0, readings_only=True) for seq in range(1, 31)]
    stream, changed_only, whole = AgentStream("n1", optics_values), RateTracker(), RateTracker()
    for text, expected in zip(sent(lines, full_every=12), full_samples(lines), strict=True):
        read = stream.read(text)
        got = changed_only.update(read.sample) if read.changed is None else \
            changed_only.update_changed(read.sample, read.changed)
        want = whole.update(expected)
        assert got.sample.values == want.sample.values and got.flags == want.flags
        values = read.sample.values
        assert isinstance(values, PackedValues)
        assert values.plus(got.sample.values) == {**expected.values, **want.sample.values}  # as NodePoller._keep


@pytest.mark.parametrize("changed_only", [False, True])
def test_a_number_too_large_for_a_float_is_a_bad_line_not_a_crash(changed_only: bool) -> None:
    """json reads an integer of 400 digits (orjson refuses it); the stream refuses the line and
    starts again at the next full line."""
    lines = simulated_lines(3)
    huge = copy.deepcopy(lines[1])
    huge["ports"][0]["counters"]["port_xmit_data"] = 10**400
    stream = AgentStream("n1")
    stream.read(json.dumps(lines[0]))
    text = json.dumps(agent.changed_line(lines[0], huge) if changed_only else huge)
    with pytest.raises(AgentLineError, match="too large for a float"):
        stream.read(text)
    with pytest.raises(AgentLineError, match="without the full line before it"):
        stream.read(json.dumps(agent.changed_line(lines[1], lines[2])))
    assert stream.read(json.dumps(lines[2])).sample.values


def test_optics_readings_that_clash_with_a_value_make_the_line_compared_whole() -> None:
    """Places name values in a PackedValues; a reading filed under a key the line already has
    (a broken optics parser, say) makes the sample a dict, and the line is compared whole."""
    lines = simulated_lines(2)
    port = lines[0]["ports"][0]
    stream = AgentStream("n1", lambda text: {("tx_bytes", str(port["port"])): 5.0})
    stream.read(json.dumps(lines[0]))
    delta = agent.changed_line(lines[0], lines[1])
    assert delta is not None
    delta["netdevs"] = {port["netdev"]: {"optics_text": "any"}}
    read = stream.read(json.dumps(delta))
    assert read.changed_at is None and read.changed is None
    assert read.sample.values[("tx_bytes", port["device"], str(port["port"]))] == 5.0
    tracker = RateTracker()
    tracker.update(read.sample)  # what NodePoller._keep does with a line compared whole


@pytest.mark.parametrize("seed", [None, *range(4)])
def test_a_periodic_full_line_names_what_changed_and_its_rates_are_the_full_compare(seed: int | None) -> None:
    """A full line with the keys of the line before (the agent's every-F-th) says where values moved,
    so its rates take update_changed's way; they are update's."""
    lines = simulated_lines(30) if seed is None else reshaped(simulated_lines(30), random.Random(seed))
    texts = sent(lines, full_every=4)
    stream, tracker, reference = AgentStream("n1", optics_values), RateTracker(), RateTracker()
    placed_full = 0
    samples = full_samples(lines)
    for index, (text, expected) in enumerate(zip(texts, samples, strict=True)):
        read = stream.read(text)
        # (a stream reshaped by a changed-only line has its keys in another order than a full line's:
        # that full line is compared whole)
        if index and '"changed_only"' not in text and read.changed_at is not None:
            assert _kept_keys(samples[index - 1]) == _kept_keys(expected)
            placed_full += 1
        got = tracker.update(read.sample) if read.changed_at is None else \
            tracker.update_changed(read.sample, places=read.changed_at)
        assert got == reference.update(expected)
    assert placed_full == 7 if seed is None else placed_full >= 1  # plain lines: every full line but the first


def _kept_keys(sample: HostSample) -> list[tuple[str, str, str]]:
    """The keys of a sample but optics (a reading some lines carry), in order."""
    return [key for key in sample.values if not key[0].startswith("optics_")]
