"""The expert-parallel benchmark across simulated nodes: run where installed, said clearly where not."""

from __future__ import annotations

from pathlib import Path

import pytest
from simfleet import fabric_text, start_fleet

from fleet.collectors.probes.ep_bench import EpBenchSpec, launch_command, run_ep_bench

pytestmark = pytest.mark.timeout(60)


def test_the_launch_command() -> None:
    spec = EpBenchSpec(("gpu001", "gpu002"), script="/srv/DeepEP/tests/test_internode.py")
    assert launch_command(spec, 1).text == (
        "torchrun --nnodes=2 --nproc_per_node=8 --node_rank=1 --master_addr=gpu001 --master_port=29511 "
        "/srv/DeepEP/tests/test_internode.py --num-tokens=4096 --hidden=7168 --num-topk=8 --num-experts=256")
    with pytest.raises(ValueError, match="two nodes"):
        EpBenchSpec(("gpu001", "gpu001"))


async def test_installed_nodes_run_it_and_their_figures_are_kept(tmp_path: Path) -> None:
    fleet = await start_fleet(tmp_path, fabric_text(nodes=4) + '[software]\nep_bench = "deepep"\n')
    try:
        outcome = await run_ep_bench(fleet.pool, EpBenchSpec(("gpu001", "gpu003")))
        assert outcome.missing == "" and outcome.record is not None
        record = outcome.record
        assert record.ok and record.kind == "ep" and record.src == "gpu001" and record.dst == "gpu003"
        result = record.result
        assert result["layout"] == "deepep" and result["tests_passed"] == 4
        assert result["dispatch_fp8"]["dtype"] == "FP8" and result["combine"]["op"] == "combine"
        assert 40 < result["dispatch_fp8_rdma_gbytes_s"] < 50
        assert result["dispatch_bf16_nvl_gbytes_s"] > 3 * result["dispatch_bf16_rdma_gbytes_s"]
        assert "# gpu003: torchrun --nnodes=2" in record.raw
    finally:
        await fleet.pool.close()
        await fleet.server.close()


async def test_a_node_without_the_benchmark_is_said_and_nothing_runs(tmp_path: Path) -> None:
    text = fabric_text(nodes=4) + '[software]\nep_bench = "uccl-ep"\nep_nodes = "gpu[001-002]"\n'
    fleet = await start_fleet(tmp_path, text)
    try:
        outcome = await run_ep_bench(fleet.pool, EpBenchSpec(("gpu001", "gpu002", "gpu003", "gpu004")))
        assert outcome.record is None
        assert outcome.missing == "the expert-parallel benchmark is not installed: no torchrun on gpu[003-004]"
        wrong = await run_ep_bench(fleet.pool, EpBenchSpec(("gpu001", "gpu002"), script="/nowhere/x.py"))
        assert wrong.record is None and "/nowhere/x.py does not run on gpu[001-002]" in wrong.missing
    finally:
        await fleet.pool.close()
        await fleet.server.close()
