"""Stateful commands: switch configuration changes, the perftest rendezvous, all_reduce_perf, the agent stream."""

from __future__ import annotations

import asyncio
import json

import pytest
from sim_helpers import small_model

from fleet.collectors.parsers.nccl import parse_nccl
from fleet.collectors.parsers.perftest import parse_perftest
from fleet.simulator.model import FleetModel
from fleet.simulator.session import Machine, Rendezvous, StreamIO
from fleet.simulator.shell import Shell, run_collect
from fleet.simulator.traffic import SWITCHD_RESTART_S

ECMP = '[[faults]]\nkind = "ecmp_collision"\ntarget = "leaf01"\nat = 0\n'


class Clock:
    """Simulated time under the test's control: the model reads ``now()`` from it."""

    def __init__(self, model: FleetModel, t: float) -> None:
        self.t = t
        model.now = lambda: self.t  # type: ignore[method-assign]


def shells(model: FleetModel) -> dict[str, Shell]:
    rendezvous = Rendezvous()
    return {h: Shell(Machine(h, model.topology.role_of(h), model, rendezvous)) for h in model.topology.hosts}


def uplinks_in_use(model: FleetModel, t: float) -> int:
    return sum(1 for p in model.switch_view("leaf01", t).ports[4:] if p.tx_bps > 0)


async def test_nvue_hash_seed_change_resolves_an_ecmp_collision() -> None:
    model = small_model(ECMP)
    clock = Clock(model, 100.0)
    leaf = shells(model)["leaf01"]
    assert uplinks_in_use(model, 100.0) == 1
    assert await run_collect(leaf, "nv set system forwarding hash-seed 12345") == ("", "", 0)
    diff, _, _ = await run_collect(leaf, "nv config diff")
    assert "hash-seed: 12345" in diff
    assert uplinks_in_use(model, 100.0) == 1  # staged, not applied
    out, _, status = await run_collect(leaf, "nv config apply -y -m 'rebalance uplinks'")
    assert status == 0 and "applied [rev_id: 1]" in out and "restart switchd" in out
    assert model.switch_view("leaf01", 101.0).hash_seed == 12345
    # switchd restarts: the leaf forwards nothing, its NICs see the link go down, its counters reset
    during = model.node_view("gpu001", 101.0).nics[0]
    assert during.state == "DOWN"
    assert model.switch_view("leaf01", 101.0).ports[0].rx_bytes < model.switch_view("leaf01", 99.0).ports[0].rx_bytes
    after = 100.0 + SWITCHD_RESTART_S + 1
    assert model.node_view("gpu001", after).nics[0].state == "ACTIVE"
    assert model.node_view("gpu001", after).nics[0].counters["link_downed"] == during.counters["link_downed"]
    assert uplinks_in_use(model, after) == 2  # the collision is gone
    history, _, _ = await run_collect(leaf, "nv config history")
    assert "message: rebalance uplinks" in history
    clock.t = after
    assert "hash-seed" in (await run_collect(leaf, "nv show system forwarding"))[0]


async def test_nvue_hash_fields_apply_without_restart() -> None:
    model = small_model()
    Clock(model, 50.0)
    leaf = shells(model)["leaf01"]
    assert (await run_collect(leaf, "nv set system forwarding ecmp-hash source-port off"))[2] == 0
    out, _, _ = await run_collect(leaf, "nv config apply -y")
    assert "restart" not in out
    assert "source-port" not in model.switch_view("leaf01", 51.0).ecmp_hash_fields
    assert model.node_view("gpu001", 50.5).nics[0].state == "ACTIVE"
    assert (await run_collect(leaf, "nv set system forwarding hash-seed banana"))[2] == 1
    assert (await run_collect(leaf, "nv set router adaptive-routing state enabled"))[2] == 0
    await run_collect(leaf, "nv config apply -y")
    assert model.switch_view("leaf01", 60.0).adaptive_routing


async def test_sonic_switch_hash() -> None:
    model = small_model()
    Clock(model, 50.0)
    leaf = shells(model)["leaf09"]
    assert (await run_collect(leaf, "config switch-hash global ecmp-hash DST_IP SRC_IP RDMA_BTH_DEST_QP"))[2] == 0
    assert model.switch_view("leaf09", 51.0).ecmp_hash_fields == ("source-ip", "destination-ip", "rdma-bth-dest-qp")
    _, err, status = await run_collect(leaf, "config switch-hash global ecmp-hash NOPE")
    assert status == 2 and "invalid choice: NOPE" in err


async def test_perftest_server_waits_for_its_client_and_exits_after_it() -> None:
    model = small_model()
    Clock(model, 40.0)
    fleet = shells(model)
    server_out: list[str] = []
    server_io = StreamIO(server_out.append, server_out.append)
    server = asyncio.create_task(fleet["gpu005"].run("ib_send_lat -d mlx5_2 -x 3 -p 18600 -F", server_io))
    while "Waiting for client" not in "".join(server_out):
        await asyncio.sleep(0)
    assert not server.done()
    out, err, status = await asyncio.wait_for(
        run_collect(fleet["gpu001"], "ib_send_lat -d mlx5_2 -x 3 -p 18600 -F gpu005"), 5
    )
    assert (status, err) == (0, "")
    assert await asyncio.wait_for(server, 5) == 0
    result = parse_perftest(out)
    typical = result.lat_rows[0].t_typical_usec
    assert typical is not None and 2.0 < typical < 4.0  # RoCE across a spine
    assert "Waiting for client" in "".join(server_out)
    assert parse_perftest("".join(server_out)).lat_rows


async def test_perftest_client_without_server_fails() -> None:
    model = small_model()
    Clock(model, 40.0)
    _, err, status = await run_collect(shells(model)["gpu001"], "ib_write_bw -d mlx5_0 -p 18601 gpu002")
    assert status == 1 and "Couldn't connect to gpu002:18601" in err


async def test_perftest_bandwidth_reflects_the_load() -> None:
    model = small_model()
    Clock(model, 40.0)
    fleet = shells(model)
    results = {}
    for client, server in (("gpu001", "gpu002"), ("gpu007", "gpu008")):
        task = asyncio.create_task(run_collect(fleet[server], "ib_write_bw -d mlx5_0 -p 18602 --report_gbits -n 5"))
        while ("gpu" + server[3:], 18602) not in fleet[client].machine.rendezvous.servers:
            await asyncio.sleep(0)
        out, _, status = await run_collect(fleet[client], f"ib_write_bw -d mlx5_0 -p 18602 --report_gbits -n 5 {server}")
        assert status == 0 and (await task)[2] == 0
        results[client] = parse_perftest(out).bw_rows[0].bw_avg_gbps
    assert results["gpu007"] > 380  # idle nodes: line rate
    assert results["gpu001"] < 200  # the job's ring already uses 280 of 400 Gb/s


async def test_all_reduce_perf_single_node_and_across_nodes() -> None:
    model = small_model()
    Clock(model, 40.0)
    node = shells(model)["gpu007"]
    out, _, status = await run_collect(node, "all_reduce_perf -b 8 -e 64M -f 4 -g 8 -n 1 -w 0")
    assert status == 0
    single = parse_nccl(out)
    assert len(single.ranks) == 8 and (single.avg_busbw_gbytes_s or 0) > 0
    out, _, status = await run_collect(node, "mpirun -H gpu007:8,gpu008:8 -np 16 all_reduce_perf -b 1G -e 1G -g 1 -n 1 -w 0")
    assert status == 0
    multi = parse_nccl(out)
    assert len(multi.ranks) == 16
    assert 300 < (multi.rows[-1].oop_busbw_gbytes_s or 0) < 400


async def test_agent_stream_prints_schema_lines_until_stdin_closes() -> None:
    model = small_model()
    Clock(model, 40.0)
    lines: list[str] = []
    io = StreamIO(lines.append, lines.append)
    task = asyncio.create_task(
        shells(model)["gpu002"].run("python3 -u -c 'import agent' --interval 0.05 --optics-every 2", io)
    )
    while len(lines) < 3:
        await asyncio.sleep(0.01)
    io.stdin_eof.set()
    assert await asyncio.wait_for(task, 2) == 0
    docs = [json.loads(line) for line in lines]
    assert [d["seq"] for d in docs[:3]] == [1, 2, 3]
    first = docs[0]
    assert first["schema"] == "fleet-agent/2" and first["host"] == "gpu002"
    assert [p["device"] for p in first["ports"]] == [f"mlx5_{i}" for i in range(8)]
    assert first["ports"][0]["state_code"] == 4 and first["ports"][0]["rate"] == "400 Gb/sec (4X NDR)"
    netdev = first["ports"][0]["netdev"]
    assert "rx_prio3_pause" in first["netdevs"][netdev]["ethtool"]
    assert "optics_text" in first["netdevs"][netdev] and "optics_text" not in docs[1]["netdevs"][netdev]
    assert len(first["gpus"]) == 8 and first["qp_count"]["mlx5_0"] >= 1


@pytest.mark.parametrize("command", ["python3 -c 'print(1)'", "python3"])
async def test_python_runs_only_the_agent(command: str) -> None:
    model = small_model()
    _, err, status = await run_collect(shells(model)["gpu002"], command)
    assert status == 2 and "only the fleet agent" in err
