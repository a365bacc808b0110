"""alltoall_perf, sendrecv_perf and the expert-parallel benchmark on the simulated fleet: their text parses as
the real tools' does, and a collision or a slow NIC shows in all-to-all far more than on a healthy leaf."""

from __future__ import annotations

import asyncio

import pytest
from sim_helpers import small_model

from fleet.collectors.parsers.ep_bench import parse_ep_bench
from fleet.collectors.parsers.nccl import Nccl, parse_nccl
from fleet.collectors.parsers.nccl_log import parse_nccl_log
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import load_scenario, parse_scenario
from fleet.simulator.session import Machine, Rendezvous
from fleet.simulator.shell import Shell, run_collect

pytestmark = pytest.mark.timeout(60)

SIZES = "-b 1M -e 64M -f 4 -n 1 -w 0"


class Clock:
    def __init__(self, model: FleetModel, t: float) -> None:
        model.now = lambda: t  # type: ignore[method-assign]


def shell(model: FleetModel, host: str = "gpu001", rendezvous: Rendezvous | None = None) -> Shell:
    return Shell(Machine(host, "node", model, rendezvous or Rendezvous()))


async def run(model: FleetModel, line: str, host: str = "gpu001") -> tuple[Nccl, str, int]:
    out, err, status = await run_collect(shell(model, host), line)
    return parse_nccl(out), out + err, status


def peak(result: Nccl) -> float:
    return max(r.oop_busbw_gbytes_s or 0.0 for r in result.rows)


def hosts(nodes: list[str], slots: int) -> str:
    return ",".join(f"{n}:{slots}" for n in nodes)


async def test_one_node_all_to_all_runs_over_nvlink_and_prints_what_nccl_tests_prints() -> None:
    model = small_model()
    Clock(model, 40.0)
    result, text, status = await run(model, "alltoall_perf -b 1M -e 1G -f 4 -n 1 -w 0 -g 8", "gpu007")
    assert status == 0 and result.problems == () and len(result.ranks) == 8
    first = result.rows[0]
    assert (first.redop, first.root, first.ip_wrong, first.oop_wrong) == ("none", -1, None, 0)
    assert first.count_elements == first.size_bytes // 4 // 8  # per peer, as alltoall_perf counts
    for row in result.rows:  # busbw = algbw x (n-1)/n
        assert row.oop_busbw_gbytes_s == pytest.approx((row.oop_algbw_gbytes_s or 0) * 7 / 8, abs=0.02)
    assert 340 < peak(result) <= 370  # NVLink less NCCL's ~20 % protocol overhead
    assert "N/A" in text


async def test_info_lines_are_interleaved_and_both_parsers_read_them() -> None:
    model = small_model()
    Clock(model, 40.0)
    line = (f"mpirun -np 2 -H gpu007:1,gpu008:1 -x NCCL_DEBUG=INFO -x NCCL_IB_HCA=mlx5_3 -x CUDA_VISIBLE_DEVICES=3 "
            f"-x NCCL_IB_QPS_PER_CONNECTION=4 alltoall_perf {SIZES} -g 1")
    result, text, status = await run(model, line, "gpu007")
    assert status == 0 and result.problems == () and result.nccl_log_lines > 0
    assert text.index("#       size") < text.index("NCCL INFO Channel") < text.index("     1048576")
    log = parse_nccl_log(text)
    assert {n.host for n in log.nets} == {"gpu007", "gpu008"}
    assert [d.name for d in log.nets[0].devices] == ["mlx5_3"] and log.nets[0].devices[0].link_layer == "RoCE"
    assert dict(log.env)["NCCL_IB_QPS_PER_CONNECTION"] == "4"
    assert {(c.n_ranks, c.n_nodes) for c in log.comms} == {(2, 2)}


async def test_an_ecmp_collision_shows_in_all_to_all_far_more_than_on_a_healthy_leaf() -> None:
    """ecmp: leaf01 (rail 0 of gpu001-008) hashes every cross-leaf flow onto one spine uplink."""
    model = FleetModel(load_scenario("ecmp"))
    Clock(model, 120.0)
    colliding = ["gpu001", "gpu002", "gpu003", "gpu004", "gpu009", "gpu010", "gpu011", "gpu012"]
    healthy = ["gpu017", "gpu018", "gpu019", "gpu020", "gpu025", "gpu026", "gpu027", "gpu028"]
    a2a = {}
    for name, nodes in (("colliding", colliding), ("healthy", healthy)):
        result, _, status = await run(model, f"mpirun -np 64 -H {hosts(nodes, 8)} alltoall_perf {SIZES} -g 1",
                                      nodes[0])
        assert status == 0
        a2a[name] = peak(result)
    assert a2a["colliding"] < 0.6 * a2a["healthy"]
    rail = {}
    for r in (0, 1):
        line = (f"mpirun -np 8 -H {hosts(colliding, 1)} -x NCCL_IB_HCA=mlx5_{r} -x CUDA_VISIBLE_DEVICES={r} "
                f"alltoall_perf {SIZES} -g 1")
        result, _, status = await run(model, line)
        assert status == 0 and {x.device for x in result.ranks} == {r}
        rail[r] = peak(result)
    assert rail[0] < 0.6 * rail[1]  # the collision is on rail 0 only


async def test_a_nic_trained_slow_holds_the_all_to_all_back() -> None:
    slow = '[[faults]]\nkind = "degraded_rate"\ntarget = "gpu007:mlx5_2"\ngbps = 100\nat = 0\n'
    nodes = ["gpu007", "gpu008", "gpu001", "gpu002"]
    figures = {}
    for name, faults in (("healthy", ""), ("slow", slow)):
        model = FleetModel(parse_scenario(f"[fabric]\nnodes = 8\nnodes_per_leaf = 4\nspines = 4\n{faults}"))
        Clock(model, 40.0)
        result, _, status = await run(model, f"mpirun -np 32 -H {hosts(nodes, 8)} alltoall_perf {SIZES} -g 1", "gpu007")
        assert status == 0
        figures[name] = peak(result)
    assert figures["slow"] < 0.35 * figures["healthy"]  # a quarter of the rate on one rail gates them all


async def test_sendrecv_pairs_and_a_dead_path() -> None:
    model = small_model('[[faults]]\nkind = "link_down"\ntarget = "gpu006:mlx5_5"\nat = 0\n')
    Clock(model, 40.0)
    base = "sendrecv_perf -b 1M -e 256M -f 4 -n 1 -w 0 -g 1"
    result, _, status = await run(model, f"mpirun -np 2 -H gpu007:1,gpu008:1 -x NCCL_IB_HCA=mlx5_5 {base}", "gpu007")
    assert status == 0 and result.rows[0].redop == "sum" and result.rows[0].ip_wrong is None
    for row in result.rows:  # send/receive: busbw = algbw
        assert row.oop_busbw_gbytes_s == row.oop_algbw_gbytes_s
    assert 45 < peak(result) < 50  # two idle 400G NICs on one leaf: NCCL's 97 % of 50 GB/s
    failed, text, status = await run(model, f"mpirun -np 2 -H gpu007:1,gpu006:1 -x NCCL_IB_HCA=mlx5_5 {base}",
                                     "gpu007")
    assert status == 1 and failed.rows == () and "NCCL failure" in text


EP = "torchrun --nnodes=2 --nproc_per_node=8 --node_rank={k} --master_addr=gpu007 --master_port=29511 " \
     "/opt/uccl/ep/bench/test_internode.py --num-tokens=4096"


async def _ep(model: FleetModel, nodes: tuple[str, str]) -> list[tuple[str, str, int]]:
    rendezvous = Rendezvous()
    return list(await asyncio.gather(*(run_collect(shell(model, h, rendezvous), EP.format(k=k))
                                       for k, h in enumerate(nodes))))


@pytest.mark.parametrize("tool", ["uccl-ep", "deepep"])
async def test_the_ep_benchmark_prints_its_tool_layout_where_installed(tool: str) -> None:
    text = ('[fabric]\nnodes = 8\nnodes_per_leaf = 4\nspines = 2\nseed = 1\n'
            f'[software]\nep_bench = "{tool}"\nep_nodes = "gpu[005-008]"\n')
    model = FleetModel(parse_scenario(text))
    Clock(model, 40.0)
    (out, _, status), (_, _, other) = await _ep(model, ("gpu007", "gpu005"))
    assert status == 0 and other == 0
    result = parse_ep_bench(out)
    assert result.problems == () and result.trials == 9 and result.tests_passed == 4
    assert [(b.op, b.dtype, b.layout) for b in result.best] == [
        ("dispatch", "FP8", tool), ("dispatch", "BF16", tool), ("combine", None, tool)]
    fp8 = result.best[0]
    assert 44 < (fp8.rdma_gbytes_s or 0) < 49 and (fp8.nvl_gbytes_s or 0) > 3 * (fp8.rdma_gbytes_s or 0)
    missing = await run_collect(shell(model, "gpu001"), EP.format(k=0))
    assert missing[2] == 127 and "torchrun: not found" in missing[1]


async def test_a_launch_waits_for_all_its_nodes_and_a_wrong_script_fails() -> None:
    model = FleetModel(parse_scenario('[fabric]\nnodes = 4\nnodes_per_leaf = 2\nspines = 2\n'
                                      '[software]\nep_bench = "uccl-ep"\n'))
    Clock(model, 40.0)
    _out, err, status = await run_collect(shell(model, "gpu001"), EP.replace("test_internode.py", "x.py").format(k=0))
    assert status == 2 and "can't open file" in err
    rendezvous = Rendezvous()
    lonely = asyncio.ensure_future(run_collect(shell(model, "gpu001", rendezvous), EP.format(k=0)))
    await asyncio.sleep(0.05)
    assert not lonely.done()  # node 0 waits for node 1
    _, _, status = await run_collect(shell(model, "gpu002", rendezvous), EP.format(k=1))
    assert status == 0 and (await lonely)[2] == 0


async def test_on_an_idle_fabric_a_collision_costs_all_to_all_and_leaves_the_ring_all_reduce_alone() -> None:
    """A ring crosses the spines on a few edges, an all-to-all with every flow: one leaf hashing its flows onto
    one uplink halves the second and leaves the first as it was."""
    base = "[fabric]\nnodes = 8\nnodes_per_leaf = 4\nspines = 4\n"
    collision = '[[faults]]\nkind = "ecmp_collision"\ntarget = "leaf01"\nat = 0\n'
    everyone = hosts([f"gpu{i:03d}" for i in range(1, 9)], 8)
    ratios = {}
    for program in ("alltoall_perf", "all_reduce_perf"):
        figures = []
        for text in (base, base + collision):
            model = FleetModel(parse_scenario(text))
            Clock(model, 30.0)
            result, _, status = await run(model, f"mpirun -np 64 -H {everyone} {program} -b 1G -e 1G -n 1 -w 0 -g 1")
            assert status == 0
            figures.append(peak(result))
        ratios[program] = figures[1] / figures[0]
    assert ratios["alltoall_perf"] < 0.7 and ratios["all_reduce_perf"] > 0.95
