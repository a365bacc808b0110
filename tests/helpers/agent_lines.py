"""Agent lines of a simulated node, as the agent sends them and as the collector reads them.

``simulated_lines`` builds full lines (``helpers.agent_reference.agent_line``) of one node under
traffic; ``sent`` turns them into what the agent prints with ``--changed-only`` (the agent's own
``changed_line`` and ``slot_paths``); ``full_samples`` is each full line read whole
(``host_sample``), the samples a stream must give; ``read_whole`` reads one line of a stream and
puts its moved numbers in place, as the collector's rate queue does before using a sample.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from fleet.collectors import agent
from fleet.collectors.agent_reader import AgentStream, decode_agent_line, host_sample, put_moved
from fleet.collectors.optics import OpticsReader
from fleet.fabric.samples import HostSample
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import parse_scenario
from helpers.agent_reference import agent_line

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

READ_OPTICS = OpticsReader()


def simulated_lines(count: int, scenario: str = SCENARIO, *, seed: int = 1, optics_every: int = 4,
                    ethtool_keep: frozenset[str] | None = frozenset({"rx_prio3_pause", "rx_bits_phy",
                                                                     "rx_corrected_bits_phy"}),
                    readings_only: bool = False) -> list[dict[str, Any]]:
    """Full lines of gpu001 under traffic, one a second, optics on every ``optics_every``-th."""
    model = FleetModel(parse_scenario(scenario), seed=seed, start_unix=1764430000.0)
    return [agent_line(model.node_view("gpu001", float(seq)), model.unix(float(seq)), seq, 1.0,
                       optics=(seq - 1) % optics_every == 0, ethtool_keep=ethtool_keep, readings_only=readings_only)
            for seq in range(1, count + 1)]


def reshaped(lines: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    """The lines with what real nodes do now and then: a GPU field turns null, a port state is
    unreadable, a GPU is lost, rdma goes missing, a counter is cleared, the driver is not loaded."""
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


def full_samples(lines: list[dict[str, Any]], host: str = "n1") -> list[HostSample]:
    return [host_sample(decode_agent_line(json.dumps(line)), host, READ_OPTICS) for line in lines]


def sent(lines: list[dict[str, Any]], full_every: int, host: str | None = None) -> list[str]:
    """What the agent prints with ``--changed-only --full-every F``: a full line first, every F-th
    and whenever a changed-only line cannot say what changed."""
    out = []
    slots: dict[tuple[Any, ...], int] = {}
    for index, line in enumerate(lines):
        if host is not None:
            line = {**line, "host": host}
        delta = agent.changed_line(lines[index - 1], line, slots) if index and index % full_every else None
        if delta is None:
            slots = agent.slot_paths(line)
        out.append(json.dumps(delta if delta is not None else line, separators=(",", ":")))
    return out


def read_whole(stream: AgentStream, text: str) -> HostSample:
    """One line of ``stream`` with its moved numbers in place and its optics readings: the sample
    the store gets, less the rates."""
    read = stream.read(text)
    if read.moved is not None:
        put_moved([read.moved])
    return HostSample(read.sample.host, read.sample.ts, {**read.sample.values, **read.optics})
