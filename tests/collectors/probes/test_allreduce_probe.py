"""all_reduce_perf on one node and across nodes of the simulated fleet, rated against the hardware."""

from __future__ import annotations

from pathlib import Path

import pytest
from simfleet import Fleet, fabric_text, start_fleet

from fleet.collectors.probes.allreduce import AllreduceSpec, allreduce_command, run_allreduce
from fleet.fabric.hardware import HardwareTable

pytestmark = pytest.mark.timeout(30)


def test_commands_for_one_and_several_nodes() -> None:
    one = allreduce_command(AllreduceSpec(("gpu001",), max_bytes="256M"))
    assert one.text == "all_reduce_perf -b 8 -e 256M -f 2 -n 20 -g 8"
    two = allreduce_command(AllreduceSpec(("gpu001", "gpu002", "gpu001")))
    assert two.text == "mpirun -np 16 -H gpu001:8,gpu002:8 all_reduce_perf -b 8 -e 1G -f 2 -n 20 -g 1"


async def test_one_node_is_rated_against_the_published_figure_beside_nvlink(fleet: Fleet) -> None:
    record = await run_allreduce(fleet.pool, AllreduceSpec(("gpu002",), max_bytes="256M"))
    assert record.ok, record.result
    result = record.result
    assert record.kind == "allreduce" and record.src == "gpu002" and record.dst == ""
    assert result["ranks"] == 8 and result["gpu"] == "NVIDIA H100 80GB HBM3"
    assert result["theoretical_busbw_gbytes_s"] == 450.0
    assert [r["size_bytes"] for r in result["rows"]][:3] == [8, 16, 32]
    assert result["peak_busbw_gbytes_s"] == max(r["busbw_gbytes_s"] for r in result["rows"])
    assert (result["reference_busbw_gbytes_s"], result["reference_algorithm"]) == (480.0, "NVLS")
    assert "nccl-tests/issues/212" in result["reference_basis"]
    assert result["efficiency"] == pytest.approx(result["peak_busbw_gbytes_s"] / 480.0)
    assert 0.94 <= result["efficiency"] <= 1.0  # a healthy node passes the 94 % delivery check
    assert "all_reduce_perf -b 8" in record.raw


async def test_several_nodes_are_rated_against_their_nics(fleet: Fleet) -> None:
    record = await run_allreduce(fleet.pool, AllreduceSpec(("gpu001", "gpu003", "gpu004"), max_bytes="64M"))
    assert record.ok, record.result
    result = record.result
    assert record.dst == "gpu[003-004]" and result["ranks"] == 24
    assert result["nic_types"] == ["MT4129"] * 8
    assert result["theoretical_busbw_gbytes_s"] == 400.0  # 8 x ConnectX-7 at 400 Gb/s
    assert "8 x ConnectX-7 400 Gb/s" in result["theoretical_basis"]
    assert result["reference_busbw_gbytes_s"] == 370.0 and "capped" in result["reference_basis"]
    assert 0.5 < result["efficiency"] <= 1.0
    assert "# gpu001: ibstat" in record.raw


async def test_a_site_override_changes_the_figure(fleet: Fleet) -> None:
    table = HardwareTable(overrides={"H100": 500.0})
    record = await run_allreduce(fleet.pool, AllreduceSpec(("gpu001",), max_bytes="1M"), hardware=table)
    assert record.result["theoretical_busbw_gbytes_s"] == 500.0
    assert "site override" in record.result["theoretical_basis"]


async def test_a_node_with_a_dead_gpu_fails_with_the_reason(tmp_path: Path) -> None:
    faults = '[[faults]]\nkind = "gpu_xid"\ntarget = "gpu002"\nxid = 79\nat = 0\n'
    fleet = await start_fleet(tmp_path, fabric_text(faults=faults))
    try:
        record = await run_allreduce(fleet.pool, AllreduceSpec(("gpu001", "gpu002"), max_bytes="1M"))
        assert not record.ok
        assert "NCCL failure" in record.result["error"]
    finally:
        await fleet.pool.close()
        await fleet.server.close()


async def test_an_unreachable_first_node_fails_fast(tmp_path: Path) -> None:
    faults = '[[faults]]\nkind = "node_unreachable"\ntarget = "gpu001"\nat = 0\n'
    fleet = await start_fleet(tmp_path, fabric_text(faults=faults))
    try:
        record = await run_allreduce(fleet.pool, AllreduceSpec(("gpu001", "gpu002")))
        assert not record.ok and "unreachable" in record.result["error"]
    finally:
        await fleet.pool.close()
        await fleet.server.close()
