"""hostname, uname, date, echo, true and false, and that every tool registers."""

from __future__ import annotations

import re

from builders_net import make_node, make_switch, node_ctx, switch_ctx

from fleet.simulator.tools import REGISTRY, ToolContext, load_all
from fleet.simulator.tools.system import date, echo, false, hostname, true, uname


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


def test_date_prints_the_simulated_time_as_coreutils_does() -> None:
    ctx = node_ctx(make_node(1))  # 1_764_435_600: Sat 29 Nov 2025, 17:00:00 UTC
    assert date(ctx, ["date"]).stdout == "Sat Nov 29 17:00:00 UTC 2025\n"
    assert date(ctx, ["date", "-u", "+%Y-%m-%dT%H:%M:%S%%"]).stdout == "2025-11-29T17:00:00%\n"
    later = ToolContext(hostname="leaf01", now=1_764_435_600.731204, switch=make_switch())
    assert date(later, ["date", "+%s.%N"]).stdout == "1764435600.731204033\n"  # one reading, as a float holds it
    assert date(ToolContext(hostname="x", now=1_764_435_600.9999999999), ["date", "+%s.%N"]).stdout == (
        "1764435601.000000000\n")  # %s and %N agree when the nanoseconds round up
    assert date(ctx, ["date", "+%s"]).stdout == "1764435600\n"
    bad = date(ctx, ["date", "-x"])
    assert bad.exit_status == 1 and bad.stderr == "date: invalid option -- 'x'\nTry 'date --help' for more information.\n"
    assert date(ctx, ["date", "--bogus"]).stderr.startswith("date: unrecognized option '--bogus'")
    assert date(ctx, ["date", "120204552026"]).stderr == "date: cannot set date: Operation not permitted\n"
    assert date(ctx, ["date", "0101"]).stderr == "date: invalid date \u20180101\u2019\n"


def test_echo_true_false() -> None:
    ctx = node_ctx(make_node(1))
    assert echo(ctx, ["echo", "a", "b"]).stdout == "a b\n"
    assert echo(ctx, ["echo", "-n", "x"]).stdout == "x"
    assert echo(ctx, ["echo"]).stdout == "\n"
    assert (true(ctx, ["true"]).stdout, true(ctx, ["true"]).exit_status) == ("", 0)
    assert false(ctx, ["false"]).exit_status == 1


def test_node_tools_are_registered_by_name() -> None:
    for module in ("ib", "sysfs", "ethtool", "rdma", "lldp", "system"):
        __import__(f"fleet.simulator.tools.{module}")
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
