"""alltoall_perf across the simulated fleet: rated against the hardware and fabric, and the part that holds it
back named (the colliding leaf on `ecmp`, a NIC trained slow)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from simfleet import Fleet, fabric_text, start_fleet

from fleet.collectors.inventory import load_inventory
from fleet.collectors.probes.alltoall import (
    AlltoallSpec,
    alltoall_command,
    rail_command,
    run_alltoall,
)
from fleet.collectors.sshpool import PoolSettings, SshPool
from fleet.simulator.main import write_state
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import load_scenario
from fleet.simulator.server import FleetServer

pytestmark = pytest.mark.timeout(120)

SMALL = dict(max_bytes="64M", rail_max_bytes="16M", iters=2, leaf_window_s=2.0, leaf_interval_s=0.5)


def test_commands() -> None:
    one = alltoall_command(AlltoallSpec(("gpu001",), max_bytes="256M"))
    assert one.text == "alltoall_perf -b 1M -e 256M -f 2 -n 20 -g 8"
    two = alltoall_command(AlltoallSpec(("gpu001", "gpu002")))
    assert two.text == ("mpirun -np 16 -H gpu001:8,gpu002:8 -x NCCL_DEBUG=VERSION alltoall_perf -b 1M -e 1G -f 2 "
                        "-n 20 -g 1")
    rail = rail_command("sendrecv_perf", AlltoallSpec(("a",)), ("a", "b"), 3)
    assert rail.text == ("mpirun -np 2 -H a:1,b:1 -x NCCL_IB_HCA=mlx5_3 -x CUDA_VISIBLE_DEVICES=3 sendrecv_perf "
                         "-b 1M -e 256M -f 2 -n 20 -g 1")
    with pytest.raises(ValueError):
        AlltoallSpec(())


async def test_one_node_runs_over_nvlink(fleet: Fleet) -> None:
    record = await run_alltoall(fleet.pool, AlltoallSpec(("gpu002",), max_bytes="1G", iters=2))
    assert record.ok, record.result
    result = record.result
    assert record.kind == "alltoall" and result["ranks"] == 8 and result["theoretical_busbw_gbytes_s"] == 450.0
    assert 0.75 < result["efficiency"] < 0.83  # NCCL's protocol overhead on NVLink (~370 of 450 GB/s)
    assert "rails" not in result and "# gpu002: alltoall_perf -b 1M" in record.raw


@pytest.fixture
async def ecmp(tmp_path: Path) -> AsyncIterator[Fleet]:
    server = FleetServer(FleetModel(load_scenario("ecmp")))
    await server.start()
    inventory = load_inventory(write_state(server, tmp_path / "sim"))
    pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts,
                   settings=PoolSettings(ssh_config=(), connect_timeout_s=5.0))
    try:
        yield Fleet(server, inventory, pool)
    finally:
        await pool.close()
        await server.close()


async def test_on_ecmp_the_colliding_leaf_holds_all_to_all_back_and_is_named(ecmp: Fleet) -> None:
    inventory = ecmp.inventory
    colliding = ("gpu001", "gpu002", "gpu003", "gpu004", "gpu009", "gpu010", "gpu011", "gpu012")
    healthy = ("gpu017", "gpu018", "gpu019", "gpu020", "gpu025", "gpu026", "gpu027", "gpu028")
    told: list[tuple[str, int, int]] = []
    records = {}
    for name, nodes in (("colliding", colliding), ("healthy", healthy)):
        records[name] = await run_alltoall(ecmp.pool, AlltoallSpec(nodes, **SMALL),  # type: ignore[arg-type]
                                           cabling=inventory.cabling, switches=inventory.switches,
                                           on_progress=lambda *a: told.append(a))
        assert records[name].ok, records[name].result
    bad, good = records["colliding"].result, records["healthy"].result
    assert bad["peak_busbw_gbytes_s"] < 0.6 * good["peak_busbw_gbytes_s"]
    assert bad["efficiency"] < good["efficiency"]
    assert bad["theoretical_busbw_gbytes_s"] == good["theoretical_busbw_gbytes_s"]
    assert bad["bottleneck"]["kind"] == "leaf" and bad["bottleneck"]["part"] == "leaf01"
    assert bad["bottleneck"]["rail"] == 0 and "ECMP collision" in bad["bottleneck"]["words"]
    assert good["bottleneck"]["kind"] != "leaf"
    rails = {r["rail"]: r["busbw_gbytes_s"] for r in bad["rails"]}
    assert rails[0] < 0.6 * min(v for r, v in rails.items() if r)
    assert told[0][1] == 0 and any("rail 0" in what for what, _, _ in told) and told[-1][0] == "done"
    assert "# leaf01: uplinks" in records["colliding"].raw


async def test_a_nic_trained_slow_is_named(tmp_path: Path) -> None:
    faults = '[[faults]]\nkind = "degraded_rate"\ntarget = "gpu003:mlx5_2"\ngbps = 100\nat = 0\n'
    fleet = await start_fleet(tmp_path, fabric_text(nodes=6, faults=faults))
    try:
        nodes = ("gpu001", "gpu002", "gpu003", "gpu004", "gpu005", "gpu006")
        record = await run_alltoall(fleet.pool, AlltoallSpec(nodes, **SMALL),  # type: ignore[arg-type]
                                    cabling=fleet.inventory.cabling, switches=fleet.inventory.switches)
        assert record.ok, record.result
        bottleneck = record.result["bottleneck"]
        assert bottleneck == {"kind": "nic", "part": "gpu003 mlx5_2", "rail": 2, "words": bottleneck["words"]}
        assert {p["round"] for p in record.result["pairs"]} == {1, 2}
    finally:
        await fleet.pool.close()
        await fleet.server.close()


async def test_a_dead_gpu_fails_with_the_reason(tmp_path: Path) -> None:
    faults = '[[faults]]\nkind = "gpu_xid"\ntarget = "gpu002"\nxid = 79\nat = 0\n'
    fleet = await start_fleet(tmp_path, fabric_text(faults=faults))
    try:
        record = await run_alltoall(fleet.pool, AlltoallSpec(("gpu001", "gpu002"), **SMALL))  # type: ignore[arg-type]
        assert not record.ok and "NCCL failure" in record.result["error"]
    finally:
        await fleet.pool.close()
        await fleet.server.close()
