"""The virtual /sys tree and cat/grep/ls over it, in the kernel's value formats."""

from __future__ import annotations

import re
from dataclasses import replace

from builders_net import fixture, make_nic, make_node, node_ctx

from fleet.simulator.tools import ToolOutput
from fleet.simulator.tools.sysfs import build_tree, cat, expand, grep, ib_port_counter_names, ls

PORT = "/sys/class/infiniband/mlx5_0/ports/1"


def sh(fn: object, *argv: str, nics: int = 2) -> ToolOutput:
    return fn(node_ctx(make_node(nics)), list(argv))  # type: ignore[operator]


def test_port_files_use_the_kernel_formats() -> None:
    out = sh(
        cat, "cat", f"{PORT}/state", f"{PORT}/phys_state", f"{PORT}/rate", f"{PORT}/link_layer"
    )
    assert out.stdout == "4: ACTIVE\n5: LinkUp\n400 Gb/sec (4X NDR)\nEthernet\n"
    assert out.exit_status == 0 and out.stderr == ""


def test_down_port_and_infiniband_values() -> None:
    nic = make_nic(
        0,
        link_layer="InfiniBand",
        state="DOWN",
        phys_state="Polling",
        rate_gbps=200,
        speed_name="HDR",
    )
    tree = build_tree(replace(make_node(0), nics=(nic,)))
    assert tree.files[f"{PORT}/state"] == "1: DOWN\n"
    assert tree.files[f"{PORT}/phys_state"] == "2: Polling\n"
    assert tree.files[f"{PORT}/rate"] == "200 Gb/sec (4X HDR)\n"
    assert tree.files["/sys/class/infiniband/mlx5_0/node_guid"] == "a088:c203:00e1:e200\n"
    assert tree.files[f"{PORT}/gids/0"] == "fe80:0000:0000:0000:a088:c203:00e1:e200\n"
    assert tree.files[f"{PORT}/lid"] == "0x64\n"


def test_counter_files_hold_the_views_raw_values() -> None:
    node = make_node(1)
    tree = build_tree(node)
    names = ib_port_counter_names()
    assert {p.rsplit("/", 1)[1] for p in tree.files if "/counters/" in p} == set(names)
    assert (
        tree.files[f"{PORT}/counters/port_xmit_data"]
        == f"{node.nics[0].counters['port_xmit_data']}\n"
    )
    assert (
        tree.files[f"{PORT}/hw_counters/np_cnp_sent"]
        == f"{node.nics[0].hw_counters['np_cnp_sent']}\n"
    )
    assert tree.files[f"{PORT}/hw_counters/lifespan"] == "10\n"


def test_real_counter_names_are_all_present() -> None:
    real = fixture("sysfs", "gpud-pr943-mlx5_1-counters-saturated.txt")
    assert set(re.findall(r"^=== \./(\w+) ===$", real, re.M)) == set(ib_port_counter_names())


def test_missing_file_and_directory_errors_as_gnu_cat() -> None:
    out = sh(cat, "cat", f"{PORT}/nope", f"{PORT}/state", f"{PORT}/counters")
    assert out.stdout == "4: ACTIVE\n"
    assert (
        out.stderr
        == f"cat: {PORT}/nope: No such file or directory\ncat: {PORT}/counters: Is a directory\n"
    )
    assert out.exit_status == 1


def test_grep_h_over_globs_prints_path_and_value() -> None:
    out = sh(grep, "grep", "-H", ".", "/sys/class/infiniband/*/ports/*/state")
    assert out.stdout == (
        "/sys/class/infiniband/mlx5_0/ports/1/state:4: ACTIVE\n/sys/class/infiniband/mlx5_1/ports/1/state:4: ACTIVE\n"
    )
    assert out.exit_status == 0


def test_grep_counters_glob_covers_every_counter_sorted() -> None:
    out = sh(grep, "grep", "-H", ".", f"{PORT}/counters/*", nics=1)
    names = [line.split(":")[0].rsplit("/", 1)[1] for line in out.stdout.splitlines()]
    assert names == sorted(ib_port_counter_names())


def test_grep_recursive_brace_and_errors() -> None:
    rec = sh(grep, "grep", "-H", ".", "-r", f"{PORT}/hw_counters", nics=1)
    assert f"{PORT}/hw_counters/lifespan:10\n" in rec.stdout and rec.exit_status == 0
    brace = sh(grep, "grep", "-H", ".", f"{PORT}/{{state,rate}}", nics=1)
    # bash keeps the brace order; only pathname expansion sorts
    assert brace.stdout == f"{PORT}/state:4: ACTIVE\n{PORT}/rate:400 Gb/sec (4X NDR)\n"
    unmatched = sh(grep, "grep", "-H", ".", "/sys/class/infiniband/mlx9_*/ports/1/state")
    assert (
        unmatched.stderr
        == "grep: /sys/class/infiniband/mlx9_*/ports/1/state: No such file or directory\n"
    )
    assert unmatched.exit_status == 2
    directory = sh(grep, "grep", "-H", ".", PORT, f"{PORT}/state")
    assert directory.stderr == f"grep: {PORT}: Is a directory\n" and directory.exit_status == 2
    silent = sh(grep, "grep", "-s", "-H", ".", f"{PORT}/nope", f"{PORT}/state")
    assert silent.stderr == "" and silent.exit_status == 0
    nothing = sh(grep, "grep", "-H", "xyz", f"{PORT}/state")
    assert nothing.stdout == "" and nothing.exit_status == 1
    assert sh(grep, "grep").exit_status == 2


def test_grep_without_h_on_one_file_prints_bare_lines() -> None:
    assert sh(grep, "grep", ".", f"{PORT}/state").stdout == "4: ACTIVE\n"
    assert sh(grep, "grep", "-c", "ACTIVE", f"{PORT}/state").stdout == "1\n"


def test_netdev_tree_and_device_net_link() -> None:
    node = make_node(1)
    listing = sh(ls, "ls", "/sys/class/infiniband/mlx5_0/device/net", nics=1)
    assert listing.stdout == "ens1np0\n"
    out = sh(
        cat,
        "cat",
        "/sys/class/net/ens1np0/operstate",
        "/sys/class/net/ens1np0/speed",
        "/sys/class/net/ens1np0/address",
        nics=1,
    )
    assert out.stdout == f"up\n400000\n{node.nics[0].mac}\n"
    rx = sh(cat, "cat", "/sys/class/net/ens1np0/statistics/rx_bytes", nics=1)
    assert rx.stdout == f"{node.nics[0].ethtool['rx_bytes']}\n"
    missing = sh(ls, "ls", "/sys/class/net/eth9")
    assert missing.stderr == "ls: cannot access '/sys/class/net/eth9': No such file or directory\n"
    assert missing.exit_status == 2


def test_expand_keeps_a_word_without_magic_and_sorts_matches() -> None:
    tree = build_tree(make_node(3))
    assert expand(tree, "/sys/class/infiniband/mlx5_?") == [
        f"/sys/class/infiniband/mlx5_{i}" for i in range(3)
    ]
    assert expand(tree, "relative*") == ["relative*"]


def test_grep_regex_flavours_and_case() -> None:
    files = f"{PORT}/counters/*"
    basic = sh(grep, "grep", "-h", r"port_xmit_\(data\|wait\)", files, nics=1)
    assert basic.exit_status == 1  # the counter files hold numbers, not names
    named = sh(grep, "grep", "-H", "-E", r"^[0-9]+$", f"{PORT}/counters/port_xmit_data", nics=1)
    assert named.stdout.startswith(f"{PORT}/counters/port_xmit_data:")
    assert sh(grep, "grep", "-i", "active", f"{PORT}/state").stdout == "4: ACTIVE\n"
    assert sh(grep, "grep", "-F", "4: A", f"{PORT}/state").stdout == "4: ACTIVE\n"
    assert sh(grep, "grep", "-c", r"\(ACTIVE\|DOWN\)", f"{PORT}/state").stdout == "1\n"
