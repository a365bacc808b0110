"""The cheap paths a link test leans on give the same answers as the full ones.

perftest reads a NIC's fixed identity instead of a node view, probes share one
routing context per traffic solution, and a command line's stateless commands
share one snapshot: each is checked here against what it replaced.
"""

from __future__ import annotations

import itertools

import pytest
from sim_helpers import small_model

from fleet.simulator.model import FleetModel
from fleet.simulator.session import Machine, Rendezvous
from fleet.simulator.shell import Shell, run_collect
from fleet.simulator.traffic import SwitchConfig

COUNTER = "/sys/class/infiniband/mlx5_0/ports/1/counters/port_xmit_data"


@pytest.mark.parametrize("link_layer", ["roce", "ib"])
def test_nic_identity_is_what_the_node_view_reports(link_layer: str) -> None:
    model = small_model(link_layer=link_layer)
    for node in model.topology.nodes[:3]:
        for nic in model.node_view(node, 12.5).nics:
            identity = model.nic_identity(node, nic.rail)
            assert (identity.name, identity.netdev, identity.link_layer, identity.lid, identity.mtu) == (
                nic.name, nic.netdev, nic.link_layer, nic.lid, nic.mtu,
            )  # fmt: skip
            assert (identity.mac, identity.guid, identity.gids) == (nic.mac, nic.node_guid, nic.gids)


def test_probes_through_the_shared_context_match_a_fresh_solve() -> None:
    model = small_model()
    nodes = model.topology.nodes
    for t in (5.0, 60.0):
        state, _ = model.solution(t)
        fresh = model.fabric.solve(state)  # no context cached on it yet
        for (a, b), rail in itertools.product(((nodes[0], nodes[7]), (nodes[2], nodes[5])), range(8)):
            for label in (None, 77):
                cached = model.probe((a, rail), (b, rail), t, 0x321, size_bytes=4096, flow_label=label)
                assert cached == model.fabric.probe(state, fresh, (a, rail), (b, rail), 0x321, size_bytes=4096,
                                                    flow_label=label)


def test_a_switch_change_rebuilds_the_probe_context() -> None:
    model = small_model()
    a, b = model.topology.nodes[0], model.topology.nodes[7]
    paths = set()
    for k, t in enumerate((10.0, 20.0, 30.0, 40.0)):
        leaf = model.nic_cable(a, 0, model.effects(t))[0]
        model.apply_switch_config(leaf, t - 1.0, SwitchConfig(hash_seed=1000 + k), restart=False, message="seed")
        state, solution = model.solution(t)
        assert solution.probe_context is None or solution.probe_context[0] is state
        paths.add(model.probe((a, 0), (b, 0), t, 0x555).switches)
        assert solution.probe_context is not None and solution.probe_context[0] is state
    assert len(paths) > 1, "four hash seeds all chose the same spine"


class _Clock:
    """Simulated time that moves 10 s every time the model reads it."""

    def __init__(self, model: FleetModel) -> None:
        self.t = 100.0
        model.now = self.tick  # type: ignore[method-assign]

    def tick(self) -> float:
        self.t += 10.0
        return self.t


def _shell(model: FleetModel, host: str) -> Shell:
    return Shell(Machine(host, model.topology.role_of(host), model, Rendezvous()))


async def test_a_command_line_reads_one_snapshot_and_the_next_line_a_new_one() -> None:
    model = small_model()  # gpu001 runs a job: its counters move every second
    _Clock(model)
    sh = _shell(model, "gpu001")
    out, _, _ = await run_collect(sh, f"cat {COUNTER}; cat {COUNTER}")
    first, second = out.split()
    assert first == second
    later, _, _ = await run_collect(sh, f"cat {COUNTER}")
    assert int(later) > int(first)


async def test_a_stateful_command_in_a_line_ends_its_snapshot() -> None:
    model = small_model()
    _Clock(model)
    sh = _shell(model, "gpu001")
    out, err, _ = await run_collect(sh, f"cat {COUNTER}; ib_write_lat -d mlx5_0 -p 9 gpu002; cat {COUNTER}")
    before, after = out.split()
    assert "Couldn't connect" in err
    assert int(after) > int(before)
