"""The network renderers on the real model's views: every output parses cleanly with the collectors' parsers."""

from __future__ import annotations

import pytest

from fleet.collectors.parsers.ethtool_module import parse_ethtool_module
from fleet.collectors.parsers.ethtool_stats import parse_ethtool_stats
from fleet.collectors.parsers.iblinkinfo import parse_iblinkinfo
from fleet.collectors.parsers.ibnetdiscover import parse_ibnetdiscover
from fleet.collectors.parsers.ibstat import parse_ibstat, parse_ibstatus
from fleet.collectors.parsers.lldp import parse_lldp
from fleet.collectors.parsers.perfquery import parse_ibqueryerrors, parse_perfquery
from fleet.collectors.parsers.rdma_qp import parse_rdma_qp
from fleet.collectors.parsers.rdma_statistic import parse_rdma_statistic
from fleet.collectors.parsers.show_gids import parse_show_gids
from fleet.collectors.parsers.sysfs import parse_sysfs
from fleet.simulator.model import FleetModel
from fleet.simulator.scenario import parse_scenario
from fleet.simulator.tools import ToolContext, load_all
from fleet.simulator.tools.ethtool import mlx5_ethtool_counter_names
from fleet.simulator.tools.sysfs import ib_port_counter_names

SCENARIO = """
[fabric]
nodes = 2
nodes_per_leaf = 2
spines = 1
link_layer = "{link_layer}"
link_gbps = 400
seed = 3

[[jobs]]
id = 7
tenant = "acme"
nodes = "gpu[001-002]"
load = 0.5
"""
T = 90.0
SYSFS = (
    "/sys/class/infiniband/*/ports/*/counters/*",
    "/sys/class/infiniband/*/ports/*/hw_counters/*",
    "/sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer}",
)


def context(link_layer: str) -> ToolContext:
    scenario = parse_scenario(SCENARIO.format(link_layer=link_layer))
    model = FleetModel(scenario, start_unix=1_764_435_600.0)
    return ToolContext(
        hostname="gpu001",
        now=model.unix(T),
        node=model.node_view("gpu001", T),
        jobs=lambda: model.jobs_view(T),
        all_nodes=model.views(T),
        all_switches=lambda: tuple(model.switch_view(s, T) for s in model.topology.switches),
    )


def outputs(
    ctx: ToolContext, commands: list[tuple[list[str], object]]
) -> list[tuple[str, object, str]]:
    registry = load_all()
    results = []
    for argv, parser in commands:
        out = registry[argv[0]](ctx, argv)
        assert out.exit_status == 0, (argv, out.stderr)
        results.append((" ".join(argv), parser, out.stdout))
    return results


@pytest.mark.parametrize("link_layer", ["roce", "ib"])
def test_every_node_tool_parses_cleanly(link_layer: str) -> None:
    ctx = context(link_layer)
    assert ctx.node is not None
    netdev = ctx.node.nics[0].netdev
    commands: list[tuple[list[str], object]] = [
        (["ibstat"], parse_ibstat),
        (["ibstatus"], parse_ibstatus),
        (["grep", "-H", ".", *SYSFS], parse_sysfs),
        (["rdma", "res", "show", "qp"], parse_rdma_qp),
        (["rdma", "-j", "res", "show", "qp"], parse_rdma_qp),
        (["rdma", "statistic", "show"], parse_rdma_statistic),
        (["show_gids"], parse_show_gids),
        (["ethtool", "-S", netdev], parse_ethtool_stats),
        (["ethtool", "-m", netdev], parse_ethtool_module),
    ]
    if link_layer == "roce":
        commands += [
            (["lldpctl", "-f", "json"], parse_lldp),
            (["lldpcli", "show", "neighbors"], parse_lldp),
        ]
    else:
        commands += [
            (["perfquery", "-x"], parse_perfquery),
            (["ibnetdiscover", "-p"], parse_ibnetdiscover),
            (["ibnetdiscover"], parse_ibnetdiscover),
            (["iblinkinfo"], parse_iblinkinfo),
            (["ibqueryerrors"], parse_ibqueryerrors),
        ]
    for name, parser, text in outputs(ctx, commands):
        result = parser(text)  # type: ignore[operator]
        assert text and not result.problems, (name, result.problems[:3])


def test_the_model_fills_the_counter_lists_the_renderers_publish() -> None:
    ctx = context("roce")
    assert ctx.node is not None
    nic = ctx.node.nics[0]
    assert tuple(nic.ethtool) == mlx5_ethtool_counter_names()
    assert set(nic.counters) == set(ib_port_counter_names())
