"""The link test on the `incident` scenario (32 nodes, 16 leaves half Cumulus half SONiC, 4 spines): it names
the spine that silently drops packets, marks only the pairs whose probes crossed it, and judges a pair
through a spine against the other pairs through a spine, not against the ones under one leaf.

The model starts 95 s in the past, so spine02's loss (from 90 s) is on from the first probe. The pause
storm (from 120 s) starts during the run, on rail 6: no fault of the scenario touches the healthy rails
judged here after 90 s, so the loss along their paths is the same whenever it is asked. Ground truth
comes from the simulator's own model: the loss along each probe's path both ways. gpu030 answers every
command 3 s late: its perftest servers start listening about when their clients first try, and its
pairs must still be measured.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from fleet.collectors.inventory import load_inventory
from fleet.collectors.probes.linktest import LinktestSpec, run_linktest
from fleet.collectors.sshpool import PoolSettings, SshPool
from fleet.fabric.naming import RAILS_PER_NODE
from fleet.simulator.main import write_state
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import load_scenario
from fleet.simulator.server import FleetServer

HEALTHY_RAILS = (0, 3, 4, 7)
"""No NIC or cable fault of the scenario on these rails: only spine02's loss can make a pair bad."""


@pytest.mark.slow
@pytest.mark.timeout(180)
async def test_the_link_test_names_the_lossy_spine_and_no_healthy_pair(tmp_path: Path) -> None:
    model = FleetModel(load_scenario("incident"), start_unix=time.time() - 95.0)
    server = FleetServer(model)
    await server.start()
    inventory = load_inventory(write_state(server, tmp_path / "sim"))
    pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts,
                   settings=PoolSettings(ssh_config=(), connect_timeout_s=5.0))
    try:
        nodes = tuple(h.name for h in inventory.nodes)
        report = await run_linktest(pool, LinktestSpec(nodes, rails=tuple(range(RAILS_PER_NODE)), mode="sample"),
                                    cabling=inventory.cabling, switches=inventory.switches)
        t = model.now()

        def lossy(src: str, dst: str, rail: int, label: int | None) -> bool:
            there = model.probe((src, rail), (dst, rail), t, 0x100, flow_label=label)
            return there.loss > 0

        spines = [s for s in report.suspects if s.kind == "spine"]
        assert [s.part for s in spines] == ["spine02"], report.suspects
        assert spines[0].bad == spines[0].total > 0 and spines[0].source == "probes"
        assert not any(s.kind == "nic" and s.node in ("gpu001", "gpu017") for s in report.suspects)
        for o in report.outcomes:
            assert o.flow_label is not None  # every RoCE probe carries one: its spines can be asked
        healthy = [o for o in report.outcomes if o.rail in HEALTHY_RAILS]
        bad = {(o.src, o.dst, o.rail, o.flow_label) for o in report.bad}
        for o in healthy:
            crossed = lossy(o.src, o.dst, o.rail, o.flow_label)
            assert ((o.src, o.dst, o.rail, o.flow_label) in bad) == crossed, (o, crossed)
            if o.path == "leaf":
                assert not crossed  # under one leaf no spine is crossed: never an outlier here
        assert any(o.path == "spine" and (o.src, o.dst, o.rail, o.flow_label) not in bad for o in healthy)
        assert any(o.path == "spine" and "spine02" in o.spines for o in report.bad)
        # gpu031 refuses connections, gpu032 hangs: each named once, neither in a pair
        assert set(report.unreachable) == {"gpu031", "gpu032"}
        assert not any({"gpu031", "gpu032"} & {o.src, o.dst} for o in report.outcomes)
        matrix = report.matrix(0)
        assert set(matrix["reference_p99_usec"]) == {"leaf", "spine"}
        assert matrix["reference_p99_usec"]["spine"] > matrix["reference_p99_usec"]["leaf"]
        assert any("sonic" in note for note in report.path_notes)  # the SONiC leaves could not be asked
    finally:
        await pool.close()
        await server.close()
