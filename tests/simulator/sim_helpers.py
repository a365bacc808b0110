"""Small scenarios for the simulator core's tests (8-16 nodes, so every test stays fast)."""

from __future__ import annotations

from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import Scenario, parse_scenario

SMALL = """
[fabric]
nodes = 8
nodes_per_leaf = 4   # two groups: leaf01..leaf08 and leaf09..leaf16
spines = 2
link_layer = "{link_layer}"
link_gbps = 400
seed = {seed}

[[switch_os]]
names = "leaf[09-16]"
os = "sonic"

[[jobs]]
id = 101
tenant = "acme"
nodes = "gpu[001-006]"   # crosses both groups
load = 0.7

{faults}
"""

START = 1_760_000_000.0
"""A fixed start time, so that views compare equal between models."""


def small_scenario(faults: str = "", *, seed: int = 1, link_layer: str = "roce") -> Scenario:
    return parse_scenario(SMALL.format(faults=faults, seed=seed, link_layer=link_layer), source="small.toml")


def small_model(faults: str = "", *, seed: int = 1, link_layer: str = "roce") -> FleetModel:
    return FleetModel(small_scenario(faults, seed=seed, link_layer=link_layer), start_unix=START)
