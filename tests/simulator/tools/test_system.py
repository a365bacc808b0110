"""hostname, uname, echo, true and false, and that every tool registers."""

from __future__ import annotations

import re

from builders_net import make_node, make_switch, node_ctx, switch_ctx

from simulator.tools import REGISTRY, load_all
from simulator.tools.system import echo, false, hostname, true, uname


def test_hostname_forms() -> None:
    ctx = node_ctx(make_node(1))
    assert hostname(ctx, ["hostname"]).stdout == "gpu001\n"
    assert hostname(ctx, ["hostname", "-f"]).stdout == "gpu001.cluster.local\n"
    assert hostname(ctx, ["hostname", "-I"]).stdout == "10.255.0.1 \n"
    assert hostname(ctx, ["hostname", "-x"]).exit_status == 1
    assert hostname(switch_ctx(make_switch()), ["hostname"]).stdout == "leaf01\n"


def test_uname_orders_fields_like_coreutils() -> None:
    ctx = node_ctx(make_node(1))
    assert uname(ctx, ["uname", "-r"]).stdout == "5.15.0-105-generic\n"
    assert uname(ctx, ["uname"]).stdout == "Linux\n"
    assert uname(ctx, ["uname", "-rn"]).stdout == "gpu001 5.15.0-105-generic\n"
    everything = uname(ctx, ["uname", "-a"]).stdout
    assert re.fullmatch(
        r"Linux gpu001 5\.15\.0-105-generic #\d+-Ubuntu SMP \w{3} \w{3} +\d+ [\d:]{8} UTC \d{4} x86_64 x86_64 x86_64 GNU/Linux\n",
        everything,
    )
    bad = uname(ctx, ["uname", "-q"])
    assert bad.exit_status == 1 and bad.stderr.startswith("uname: invalid option -- 'q'")


def test_echo_true_false() -> None:
    ctx = node_ctx(make_node(1))
    assert echo(ctx, ["echo", "a", "b"]).stdout == "a b\n"
    assert echo(ctx, ["echo", "-n", "x"]).stdout == "x"
    assert echo(ctx, ["echo"]).stdout == "\n"
    assert (true(ctx, ["true"]).stdout, true(ctx, ["true"]).exit_status) == ("", 0)
    assert false(ctx, ["false"]).exit_status == 1


def test_node_tools_are_registered_by_name() -> None:
    for module in ("ib", "sysfs", "ethtool", "rdma", "lldp", "system"):
        __import__(f"simulator.tools.{module}")
    names = {
        "ibstat", "ibstatus", "ibv_devinfo", "perfquery", "ibnetdiscover", "iblinkinfo", "ibqueryerrors",
        "cat", "grep", "ls", "ethtool", "rdma", "show_gids", "lldpctl", "lldpcli", "hostname", "uname",
        "echo", "true", "false",
    }  # fmt: skip
    assert names <= set(REGISTRY)
    assert REGISTRY["lldpcli"] is REGISTRY["lldpctl"]


def test_load_all_imports_the_node_modules_it_lists() -> None:
    registry = load_all()
    assert {"ibstat", "cat", "ethtool", "rdma", "lldpctl", "uname"} <= set(registry)
