"""ibstat, ibstatus, ibv_devinfo, perfquery and the fabric tools against the real captures."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from builders_net import fixture, make_nic, make_node, make_switch, node_ctx

from fleet.simulator.state import NicView, NodeView
from fleet.simulator.tools import ToolContext, ToolOutput
from fleet.simulator.tools.ib import (
    iblinkinfo,
    ibnetdiscover,
    ibqueryerrors,
    ibstat,
    ibstatus,
    ibv_devinfo,
    perfquery,
)


def one_nic_node(nic: NicView) -> NodeView:
    return replace(make_node(0), nics=(nic,))


def gpud_mlx5_0() -> NicView:
    """mlx5_0 of tests/fixtures/ibstat/gpud-h100-cx7-ib-some-eth-down.txt."""
    return make_nic(
        0,
        link_layer="InfiniBand",
        name="mlx5_0",
        hca_type="MT4129",
        fw_version="28.39.1002",
        node_guid="0x946dae0300cde72c",
        sys_image_guid="0x946dae0300cde72c",
        port_guid="0x946dae0300cde72c",
        lid=75,
        sm_lid=334,
    )


def run(fn: object, ctx: ToolContext, *argv: str) -> ToolOutput:
    return fn(ctx, list(argv))  # type: ignore[operator]


# --- ibstat -------------------------------------------------------------------


def test_ibstat_reproduces_the_real_ca_block_byte_for_byte() -> None:
    real = fixture("ibstat", "gpud-h100-cx7-ib-some-eth-down.txt").splitlines(keepends=True)[:17]
    out = run(ibstat, node_ctx(one_nic_node(gpud_mlx5_0())), "ibstat")
    assert out.exit_status == 0
    assert out.stdout == "".join(real)


def test_ibstat_lists_every_ca_in_name_order_like_umad() -> None:
    node = replace(make_node(0), nics=tuple(make_nic(r, name=f"mlx5_{r}") for r in (0, 1, 10, 2)))
    out = run(ibstat, node_ctx(node), "ibstat", "-l")
    assert out.stdout == "mlx5_0\nmlx5_1\nmlx5_10\nmlx5_2\n"
    full = run(ibstat, node_ctx(node), "ibstat").stdout
    assert re.findall(r"^CA '(\S+)'$", full, re.M) == ["mlx5_0", "mlx5_1", "mlx5_10", "mlx5_2"]


def test_ibstat_one_port_is_printed_flush_left_under_a_ca_line() -> None:
    out = run(ibstat, node_ctx(one_nic_node(gpud_mlx5_0())), "ibstat", "mlx5_0", "1")
    lines = out.stdout.splitlines()
    assert lines[0] == "CA: 'mlx5_0'"
    assert lines[1] == "Port 1:"
    assert lines[2:4] == ["State: Active", "Physical state: LinkUp"]
    assert all(not line.startswith("\t") for line in lines)


def test_ibstat_unknown_device_and_port_fail_like_ibstat() -> None:
    ctx = node_ctx(make_node(2))
    missing = run(ibstat, ctx, "ibstat", "mlx5_9")
    assert missing.exit_status == 255
    assert missing.stdout == "ibstat: iberror: failed: 'mlx5_9' IB device can't be found\n"
    bad_port = run(ibstat, ctx, "ibstat", "mlx5_0", "2")
    assert bad_port.exit_status == 255
    assert "has no port number 2 - max (1)" in bad_port.stderr


def test_ibstat_matches_device_names_by_prefix_as_strncmp_does() -> None:
    node = replace(make_node(0), nics=(make_nic(1, name="mlx5_1"), make_nic(2, name="mlx5_10")))
    out = run(ibstat, node_ctx(node), "ibstat", "mlx5_10", "-s")
    assert out.stdout.splitlines()[0] == "CA 'mlx5_1'"


def test_ibstat_short_form_has_no_port_block() -> None:
    out = run(ibstat, node_ctx(make_node(1)), "ibstat", "-s").stdout
    assert "Port 1:" not in out and out.count("\n") == 7


# --- ibstatus -------------------------------------------------------------------


def test_ibstatus_block_expands_to_the_real_capture() -> None:
    real = fixture("ibstat", "blog-ibstatus-mixed-ib-roce-down.txt").split("\n\n")[1] + "\n\n"
    nic = make_nic(
        1,
        link_layer="InfiniBand",
        name="mlx5_1",
        port_guid="0x946dae0300fce51c",
        lid=9,
        sm_lid=6,
        rate_gbps=200,
        speed_name="HDR",
    )
    out = run(ibstatus, node_ctx(one_nic_node(nic)), "ibstatus")
    assert "\t" in out.stdout
    assert out.stdout.expandtabs(8) == real


def test_ibstatus_ethernet_rate_uses_the_kernels_ib_speed_names() -> None:
    nic = make_nic(0, rate_gbps=200, width="2X")
    out = run(ibstatus, node_ctx(one_nic_node(nic)), "ibstatus").stdout
    assert "\trate:\t\t 200 Gb/sec (2X NDR)\n" in out
    down = make_nic(0, state="DOWN", phys_state="Disabled", rate_gbps=100, width="4X")
    out = run(ibstatus, node_ctx(one_nic_node(down)), "ibstatus").stdout.expandtabs(8)
    assert "state:           1: DOWN" in out and "phys state:      3: Disabled" in out
    assert "rate:            100 Gb/sec (4X EDR)" in out


def test_ibstatus_arguments_and_unknown_device() -> None:
    ctx = node_ctx(make_node(2))
    one = run(ibstatus, ctx, "ibstatus", "mlx5_1:1").stdout
    assert (
        one.startswith("Infiniband device 'mlx5_1' port 1 status:\n") and one.count("status:") == 1
    )
    out = run(ibstatus, ctx, "ibstatus", "mlx5_0", "mlx5_7")
    assert out.exit_status == 255
    assert out.stdout.startswith("Infiniband device 'mlx5_0' port 1 status:\n")
    assert out.stdout.endswith(
        "Fatal error:  device 'mlx5_7': sys files not found (/sys/class/infiniband/mlx5_7/ports)\n"
    )
    no_port = run(ibstatus, ctx, "ibstatus", "mlx5_0:2").stdout
    assert "\tstate:\t\t unknown\n" in no_port and "\tlink_layer:\t IB\n" in no_port


# --- ibv_devinfo ----------------------------------------------------------------


def dgx_rocep1s0f1() -> NicView:
    return make_nic(
        1,
        name="rocep1s0f1",
        fw_version="28.45.4028",
        node_guid="0x4cbb4703002d1a17",
        sys_image_guid="0x4cbb4703002d1a16",
        board_id="NVD0000000087",
    )


def test_ibv_devinfo_reproduces_the_real_block_byte_for_byte() -> None:
    real = (
        fixture("rdma", "dgx-spark-ibv_devinfo-cx7-roce-rocep-names.txt").split("\n\n")[1] + "\n\n"
    )
    out = run(ibv_devinfo, node_ctx(one_nic_node(dgx_rocep1s0f1())), "ibv_devinfo")
    assert out.stdout == real


def test_ibv_devinfo_options() -> None:
    ctx = node_ctx(make_node(3))
    assert (
        run(ibv_devinfo, ctx, "ibv_devinfo", "-l").stdout
        == "3 HCAs found:\n\tmlx5_0\n\tmlx5_1\n\tmlx5_2\n\n"
    )
    one = run(ibv_devinfo, ctx, "ibv_devinfo", "-d", "mlx5_1").stdout
    assert re.findall(r"^hca_id:\t(\S+)$", one, re.M) == ["mlx5_1"]
    assert run(ibv_devinfo, ctx, "ibv_devinfo", "-dmlx5_2", "-i", "1").stdout.startswith(
        "hca_id:\tmlx5_2\n"
    )
    missing = run(ibv_devinfo, ctx, "ibv_devinfo", "-d", "mlx5_9")
    assert (missing.stdout, missing.stderr, missing.exit_status) == (
        "",
        "IB device 'mlx5_9' wasn't found\n",
        255,
    )
    bad_port = run(ibv_devinfo, ctx, "ibv_devinfo", "-d", "mlx5_0", "-i", "2")
    assert bad_port.exit_status == 4 and bad_port.stderr == "Invalid port requested for device\n"
    assert run(ibv_devinfo, ctx, "ibv_devinfo", "-x").exit_status == 255


def test_ibv_devinfo_verbose_adds_device_and_port_attributes_and_gids() -> None:
    out = run(ibv_devinfo, node_ctx(make_node(1)), "ibv_devinfo", "-v").stdout
    lines = out.splitlines()
    assert lines.index("\tphys_port_cnt:\t\t\t1") < lines.index(
        "\tmax_mr_size:\t\t\t0xffffffffffffffff"
    )
    assert "\t\t\tactive_width:\t\t4X (2)" in lines
    assert "\t\t\tactive_speed:\t\t100.0 Gbps (128)" in lines
    assert "\t\t\tGID[  2]:\t\t0000:0000:0000:0000:0000:ffff:0a00:0001, RoCE v1" in lines
    assert "\t\t\tGID[  3]:\t\t::ffff:10.0.0.1, RoCE v2" in lines


# --- perfquery -x -----------------------------------------------------------------


def test_perfquery_x_reproduces_the_real_block_byte_for_byte() -> None:
    real = (
        fixture("perfquery", "infiniband-diags-issue16-perfquery-x-rhel75.txt").rstrip("\n") + "\n"
    )
    nic = make_nic(0, link_layer="InfiniBand", lid=10, counters={})
    out = run(perfquery, node_ctx(one_nic_node(nic)), "perfquery", "-x", "10", "1")
    assert out.stdout == real


def test_perfquery_x_labels_and_values_follow_the_sysfs_counters() -> None:
    real = fixture("perfquery", "infiniband_exporter-perfquery-x-switch-2ports.txt").splitlines()[
        :26
    ]
    node = make_node(1, link_layer="InfiniBand")
    out = run(perfquery, node_ctx(node), "perfquery", "-x").stdout.splitlines()
    assert [line.split(".")[0] for line in out[1:]] == [line.split(".")[0] for line in real[1:]]
    assert f"PortXmitData:....................{node.nics[0].counters['port_xmit_data']}" in out
    assert (
        out[0] == "# Port extended counters: Lid 100 port 1 (CapMask: 0x5300 CapMask2: 0x0000002)"
    )


def test_perfquery_on_roce_and_unknown_lid_fails_as_mads_do() -> None:
    roce = run(perfquery, node_ctx(make_node(1)), "perfquery", "-x")
    assert roce.exit_status == 255
    assert roce.stdout == "perfquery: iberror: failed: can't resolve self port\n"
    assert "_do_madrpc failed" in roce.stderr
    ib = run(perfquery, node_ctx(make_node(1, link_layer="InfiniBand")), "perfquery", "-x", "999")
    assert ib.exit_status == 255 and "dport (Lid 999)" in ib.stderr


# --- the fabric tools ----------------------------------------------------------


def ib_fabric() -> tuple[ToolContext, NodeView]:
    """Two IB nodes, rail 0 of each on leaf01 swp1/swp2; leaf01 swp3 is dark."""
    nodes = []
    for i, name in enumerate(("gpu001", "gpu002")):
        nic = make_nic(0, link_layer="InfiniBand", lid=10 + i, port_guid=f"0xa088c20300e1e3{i:02x}")
        assert nic.lldp is not None
        nic = replace(nic, lldp=replace(nic.lldp, switch="leaf01", switch_port=f"swp{i + 1}"))
        nodes.append(replace(make_node(0, name=name), nics=(nic,)))
    leaf = make_switch("leaf01", peers=(("gpu001", "ibp24s0"), ("gpu002", "ibp24s0")))
    dark = replace(leaf.ports[0], name="swp3", oper_up=False, lldp=None)
    leaf = replace(leaf, ports=(*leaf.ports, dark))
    return node_ctx(nodes[0], nodes=tuple(nodes), switches=(leaf,)), nodes[0]


PORTS_LINKED = re.compile(
    r"^(CA|SW) [ \d]{4}\d [ \d]\d 0x[0-9a-f]{16} \dx (SDR|DDR|QDR|FDR|EDR|HDR|NDR) - (CA|SW) [ \d]{4}\d [ \d]\d"
    r" 0x[0-9a-f]{16} \( '[^']*' - '[^']*' \)$"
)
PORTS_DARK = re.compile(r"^(CA|SW) [ \d]{4}\d [ \d]\d 0x[0-9a-f]{16} \dx (\?\?\?|SDR) {36}'[^']*'$")


def test_ibnetdiscover_ports_report_has_the_real_column_layout() -> None:
    real = [
        line
        for line in fixture("topology", "infiniband_exporter-ibnetdiscover-p-edr.txt").splitlines()
        if line
    ]
    assert all(PORTS_LINKED.match(line) or PORTS_DARK.match(line) for line in real)
    ctx, _ = ib_fabric()
    out = run(ibnetdiscover, ctx, "ibnetdiscover", "-p").stdout.splitlines()
    assert len(out) == 5
    assert sum(bool(PORTS_LINKED.match(line)) for line in out) == 4
    assert sum(bool(PORTS_DARK.match(line)) for line in out) == 1
    switch_ports = [int(line.split()[2]) for line in out if line.startswith("SW")]
    assert switch_ports == [3, 2, 1]  # dump_ports_report walks ports downwards
    assert "( 'gpu001 mlx5_0' - 'MF0;leaf01:MQM9700/U1' )" in out[0]


def test_ibnetdiscover_topology_file_names_every_node() -> None:
    ctx, _ = ib_fabric()
    out = run(ibnetdiscover, ctx, "ibnetdiscover").stdout
    assert re.match(
        r"#\n# Topology file: generated on \w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}\n#\n", out
    )
    assert re.search(r"^switchguid=0x([0-9a-f]+)\(\1\)$", out, re.M)
    assert out.endswith("4xNDR\n")
    assert re.search(
        r'^Switch\t3 "S-[0-9a-f]{16}"\t\t# "MF0;leaf01:MQM9700/U1" enhanced port 0 lid 12 lmc 0$',
        out,
        re.M,
    )
    assert len(re.findall(r'^Ca\t1 "H-[0-9a-f]{16}"\t\t# "gpu00[12] mlx5_0"$', out, re.M)) == 2
    assert re.search(
        r'^\[1\]\t"H-a088c20300e1e300"\[1\]\(a088c20300e1e300\) \t\t# "gpu001 mlx5_0" lid 10 4xNDR$',
        out,
        re.M,
    )


LINK_CA = re.compile(
    r"^ {6}0x[0-9a-f]{16} [ \d]{5}\d [ \d]{3}\d\[  \] ==\( .+\)==> +(\d+ +\d+)?\[  \] \"[^\"]*\" \( \)$"
)
LINK_SW = re.compile(r"^[ \d]{11}\d [ \d]{3}\d\[  \] ==\(.{38}\)==>.{13}\[  \] \"[^\"]*\" \( \)$")
LINK_SW_UP = re.compile(
    r"^ +\d+ [ \d]{3}\d\[  \] ==\( 4X [ \d.]{13} Gbps Active/  LinkUp\)==> {4}[ \d]{3}\d [ \d]{3}\d\[  \] "
)


def test_iblinkinfo_lines_have_the_real_columns() -> None:
    real = fixture("topology", "hpl-notes-iblinkinfo-grep-up-edr-sb7700.txt").splitlines()
    assert all(LINK_CA.match(line) or LINK_SW_UP.match(line) for line in real)
    ctx, _ = ib_fabric()
    out = run(iblinkinfo, ctx, "iblinkinfo").stdout.splitlines()
    assert out[0] == "CA: gpu001 mlx5_0:"
    assert LINK_CA.match(out[1]) and "106.25 Gbps Active/  LinkUp" in out[1]
    assert out[4].startswith("Switch: 0x") and out[4].endswith(" MF0;leaf01:MQM9700/U1:")
    assert LINK_SW_UP.match(out[5]) and LINK_SW.match(out[5])
    real_down = fixture(
        "topology", "cn-notes-iblinkinfo-qdr-is4-switch-32-ports-down.txt"
    ).splitlines()[13]
    tail = '[  ] ==(                Down/ Polling)==>             [  ] "" ( )'
    assert real_down.endswith(tail) and out[7].endswith(tail)
    assert out[7] == f"{12:12d} {3:4d}" + tail


def test_ibqueryerrors_reports_ports_over_threshold_and_the_summary() -> None:
    ctx, _ = ib_fabric()
    out = run(ibqueryerrors, ctx, "ibqueryerrors").stdout.splitlines()
    # the builder numbers every counter, so every error counter is non-zero
    assert out[0] == 'Errors for "gpu001 mlx5_0"'
    assert re.match(
        r"^   GUID 0x[0-9a-f]+ port 1: (\[\w+ == \d+\] )+\[PortXmitWait == \d+\]$", out[1]
    )
    assert out[-4:] == [
        "## Summary: 3 nodes checked, 2 bad nodes found",
        "##          5 ports checked, 2 ports have errors beyond threshold",
        "## Thresholds:",
        "## Suppressed:",
    ]
    real = fixture("perfquery", "linux-rdma-ibqueryerrors-sx6036-saturated.txt").splitlines()
    assert re.match(r"^## Summary: \d+ nodes checked, \d+ bad nodes found$", real[-4])


@pytest.mark.parametrize("tool", [ibnetdiscover, iblinkinfo, ibqueryerrors])
def test_fabric_tools_refuse_on_a_roce_node(tool: object) -> None:
    out = run(tool, node_ctx(make_node(2)), "ibtool")
    assert out.exit_status == 255 and "iberror" in out.stderr and out.stdout == ""


def test_ibstatus_roce_port_without_gids_has_unknown_default_gid() -> None:
    nic = make_nic(0, gids=())
    out = run(ibstatus, node_ctx(one_nic_node(nic)), "ibstatus").stdout
    assert "\tdefault gid:\t unknown\n" in out


def test_perfquery_without_x_prints_the_32_bit_port_counters() -> None:
    nic = make_nic(0, link_layer="InfiniBand", lid=10)
    nic = replace(nic, counters={**nic.counters, "port_xmit_data": 2**40})
    out = run(perfquery, node_ctx(one_nic_node(nic)), "perfquery").stdout.splitlines()
    assert out[0] == "# Port counters: Lid 10 port 1 (CapMask: 0x5300)"
    assert [line.split(":")[0] for line in out[1:]] == [
        "PortSelect", "CounterSelect", "SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter",
        "PortRcvErrors", "PortRcvRemotePhysicalErrors", "PortRcvSwitchRelayErrors", "PortXmitDiscards",
        "PortXmitConstraintErrors", "PortRcvConstraintErrors", "CounterSelect2", "LocalLinkIntegrityErrors",
        "ExcessiveBufferOverrunErrors", "QP1Dropped", "VL15Dropped", "PortXmitData", "PortRcvData",
        "PortXmitPkts", "PortRcvPkts", "PortXmitWait",
    ]  # fmt: skip
    assert "PortXmitData:....................4294967295" in out


def test_iblinkinfo_marks_a_link_trained_below_its_capability() -> None:
    ctx, node = ib_fabric()
    slow = replace(node.nics[0], rate_gbps=200, speed_name="HDR")
    nodes = (replace(node, nics=(slow,)), *ctx.all_nodes()[1:])
    slow_ctx = node_ctx(nodes[0], nodes=nodes, switches=ctx.all_switches())
    out = run(iblinkinfo, slow_ctx, "iblinkinfo").stdout.splitlines()
    assert "( 4X        53.125 Gbps Active/  LinkUp)" in out[1]
    assert out[1].endswith('"MF0;leaf01:MQM9700/U1" ( Could be 106.25 Gbps)')
    assert out[5].endswith('"gpu001 mlx5_0" ( Could be 106.25 Gbps)')
    assert out[6].endswith('"gpu002 mlx5_0" ( )')
