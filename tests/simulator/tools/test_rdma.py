"""rdma res/statistic/link and show_gids against the real captures."""

from __future__ import annotations

import json
import re
from dataclasses import replace

from builders_net import fixture, make_nic, make_node, node_ctx

from fleet.simulator.state import GidView, NicView, NodeView, QpView
from fleet.simulator.tools import ToolOutput
from fleet.simulator.tools.rdma import ibdev2netdev, mlx5_hw_counter_names, rdma, show_gids


def run(*argv: str, node: NodeView | None = None) -> ToolOutput:
    return rdma(node_ctx(node or make_node(2)), ["rdma", *argv])


def kernel_only(names: list[str]) -> NodeView:
    nics = tuple(
        make_nic(i, name=n, qps=(QpView(1, 0, "GSI", "RTS", 0, "[ib_core]"),))
        for i, n in enumerate(names)
    )
    return replace(make_node(0), nics=nics)


def test_kernel_qps_reproduce_the_upstream_capture() -> None:
    real = fixture("rdma", "iproute2-rdma-res-show-qp-kernel-qps-mlx5-hns.txt")
    names = re.findall(r"^link (\S+)/1 ", real, re.M)
    out = run("res", "show", "qp", node=kernel_only(names))
    # iproute2 prints every field as "name value ", the capture lost the final blank
    assert all(line.endswith(" ") for line in out.stdout.splitlines())
    assert "".join(line.rstrip() + "\n" for line in out.stdout.splitlines()) == real


def test_user_qps_print_the_connected_fields_in_res_qp_order() -> None:
    out = [
        line.rstrip() for line in run("res", "show", "qp", "link", "mlx5_1/1").stdout.splitlines()
    ]
    assert out == [
        "link mlx5_1/1 lqpn 1 type GSI state RTS sq-psn 0 comm [ib_core]",
        "link mlx5_1/1 lqpn 301 rqpn 401 type RC state RTS rq-psn 5678 sq-psn 1234 path-mig-state MIGRATED"
        " pdn 4 pid 4242 comm python3",
    ]


def test_json_compact_and_pretty_forms() -> None:
    for argv in (("-j", "res", "show", "qp"), ("res", "show", "qp", "-j")):
        out = run(*argv).stdout
        assert out.startswith(
            '[{"ifindex":0,"ifname":"mlx5_0","port":1,"lqpn":1,"type":"GSI"'
        ) and out.endswith("}]\n")
        records = json.loads(out)
        assert [r["comm"] for r in records] == ["ib_core", "python3", "ib_core", "python3"]
        assert "pid" not in records[0] and records[1]["pid"] == 4242
    pretty = run("-j", "-p", "res", "show", "qp").stdout
    real = fixture("rdma", "hns-rdma-res-show-qp-jp-dd-after-fix.txt").splitlines()
    lines = pretty.splitlines()
    assert lines[0] == real[0] == "[ {"
    assert lines[1] == '        "ifindex": 0,' and re.match(r'^ {8}"ifindex": \d+,$', real[1])
    assert lines[-1] == real[-1] == "    } ]"
    assert "    },{" in lines
    assert json.loads(pretty) == json.loads(run("-j", "res", "show", "qp").stdout)


def test_resource_summary_per_device() -> None:
    out = run("res", "show").stdout.splitlines()
    assert out == [
        "0: mlx5_0: pd 4 cq 6 qp 2 cm_id 0 mr 2 ctx 1 srq 2 ",
        "1: mlx5_1: pd 4 cq 6 qp 2 cm_id 0 mr 2 ctx 1 srq 2 ",
    ]
    assert run("res", "show", "mlx5_1").stdout.splitlines() == out[1:]
    records = json.loads(run("-j", "res").stdout)
    assert records[1] == {
        "ifindex": 1,
        "ifname": "mlx5_1",
        "pd": 4,
        "cq": 6,
        "qp": 2,
        "cm_id": 0,
        "mr": 2,
        "ctx": 1,
        "srq": 2,
    }


def test_statistic_reproduces_the_real_line() -> None:
    real = fixture("rdma", "cn-notes-rdma-statistic-show-4x-mlx5-errors.txt").splitlines()[0] + "\n"
    words = real.split()[2:]
    counters = {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}
    assert tuple(counters) == mlx5_hw_counter_names()
    shuffled = dict(sorted(counters.items()))  # sysfs lists them alphabetically
    node = replace(make_node(0), nics=(make_nic(0, hw_counters=shuffled),))
    assert run("statistic", "show", node=node).stdout == real.rstrip("\n") + " \n"
    assert json.loads(run("-j", "stat", node=node).stdout)[0]["out_of_buffer"] == 135


def test_link_show() -> None:
    out = run("link", "show").stdout.splitlines()
    assert out[0] == "link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev ens1np0 "
    ib = make_node(1, link_layer="InfiniBand")
    assert run("link", node=ib).stdout == (
        "link mlx5_0/1 subnet_prefix fe80:0000:0000:0000 lid 100 sm_lid 1 lmc 0 state ACTIVE"
        " physical_state LINK_UP netdev ibp24s0 \n"
    )


def test_errors() -> None:
    assert run("res", "show", "qp", "link", "mlx5_9/1").exit_status == 1
    assert run("bogus").stderr == 'Object "bogus" is unknown, try "rdma help".\n'
    assert run("-z", "res").exit_status == 1


def bond_nic(gids: tuple[GidView, ...]) -> NicView:
    return make_nic(0, name="mlx5_bond_0", netdev="bond0", gids=gids)


def test_show_gids_reproduces_the_real_table() -> None:
    real = fixture("rdma", "cn-notes-show_gids-mlx5-bond-roce-v1-v2.txt")
    gids = []
    for line in real.splitlines()[2:-1]:
        cells = line.split("\t")
        ipv4 = cells[4].strip()
        gids.append(GidView(int(cells[2]), cells[3], ipv4, cells[-2], cells[-1]))
    node = replace(make_node(0), nics=(bond_nic(tuple(gids)),))
    out = show_gids(node_ctx(node), ["show_gids"])
    assert out.stdout == real
    only = show_gids(node_ctx(make_node(2)), ["show_gids", "mlx5_1"]).stdout
    assert only.splitlines()[-1] == "n_gids_found=4"
    assert show_gids(node_ctx(make_node(2)), ["show_gids", "mlx5_7"]).stdout.endswith(
        "n_gids_found=0\n"
    )


def test_ibdev2netdev_maps_devices_to_netdevs() -> None:
    node = replace(
        make_node(0), nics=(make_nic(0), make_nic(1, state="DOWN", phys_state="Disabled"))
    )
    out = ibdev2netdev(node_ctx(node), ["ibdev2netdev"])
    assert out.stdout == "mlx5_0 port 1 ==> ens1np0 (Up)\nmlx5_1 port 1 ==> ens2np0 (Down)\n"
