"""Every block of every real ibstat/ibstatus/ibv_devinfo/show_gids/sysfs capture, rebuilt from a view.

Each block's values are read into a NicView; rendering that view must give the
block back byte for byte (after undoing the space-for-tab substitutions some
publications made). Blocks with facts the views do not model are named below.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest
from builders_net import FIXTURES, fixture, make_nic, make_node, node_ctx

from fleet.simulator.state import GidView, NicView
from fleet.simulator.tools.ib import ibstat, ibstatus, ibv_devinfo
from fleet.simulator.tools.rdma import mlx5_hw_counter_names, show_gids

STATE = {"Active": "ACTIVE", "Down": "DOWN", "Initializing": "INIT", "Armed": "ARMED"}


def ibstat_blocks(name: str) -> list[str]:
    text = fixture("ibstat", name).replace(" " * 16, "\t\t").replace(" " * 8, "\t")
    # the capture ends without a final newline; ibstat prints one
    return ["CA '" + block.rstrip("\n") + "\n" for block in text.split("CA '")[1:]]


def nic_from_ibstat(block: str) -> NicView:
    fields = dict(re.findall(r"^\t+([^:\n]+): (.*)$", block, re.M))
    name = re.match(r"CA '(\S+)'", block)
    assert name is not None
    return make_nic(
        0,
        link_layer=fields["Link layer"],
        name=name.group(1),
        hca_type=fields["CA type"],
        fw_version=fields["Firmware version"],
        node_guid=fields["Node GUID"],
        sys_image_guid=fields["System image GUID"],
        port_guid=fields["Port GUID"],
        state=STATE[fields["State"]],
        phys_state=fields["Physical state"],
        rate_gbps=int(fields["Rate"]),
        lid=int(fields["Base lid"]),
        sm_lid=int(fields["SM lid"]),
    )


@pytest.mark.parametrize(
    "capture", ["gpud-h100-cx7-ib-some-eth-down.txt", "gpud-h100-ib-with-bf3-bond.txt"]
)
def test_every_ibstat_block(capture: str) -> None:
    blocks = ibstat_blocks(capture)
    assert len(blocks) >= 8
    for block in blocks:
        if "Hardware version: 0" not in block:
            continue  # BlueField-3 reports hardware version 1; the views model ConnectX only
        nic = nic_from_ibstat(block)
        out = ibstat(node_ctx(replace(make_node(0), nics=(nic,))), ["ibstat"]).stdout
        assert out == block


IBSTATUS = re.compile(
    r"Infiniband device '(?P<dev>\S+)' port (?P<port>\d+) status:\n"
    r" +default gid: +(?P<gid>\S+)\n +base lid: +0x(?P<lid>[0-9a-f]+)\n +sm lid: +0x(?P<sm>[0-9a-f]+)\n"
    r" +state: +\d: (?P<state>\w+)\n +phys state: +\d: (?P<phys>\w+)\n"
    r" +rate: +(?P<rate>\d+) Gb/sec \((?P<width>\d+X) (?P<speed>\w+)\)\n +link_layer: +(?P<ll>\w+)\n\n"
)


@pytest.mark.parametrize(
    "capture",
    [
        "blog-ibstatus-mixed-ib-roce-down.txt",
        "gpud-ibstatus-a100-hdr-azure.txt",
        "sglang-ibstatus-h20-bf3-roce-bond.txt",
    ],
)
def test_every_ibstatus_block(capture: str) -> None:
    text = fixture("ibstat", capture)
    if not text.endswith("\n\n"):
        text += "\n"
    blocks = list(IBSTATUS.finditer(text))
    assert sum(len(m.group(0)) for m in blocks) == len(text)
    for m in blocks:
        is_ib = m["ll"] == "InfiniBand"
        gid = m["gid"]
        nic = make_nic(
            0,
            link_layer=m["ll"],
            name=m["dev"],
            netdev="eth0",
            lid=int(m["lid"], 16),
            sm_lid=int(m["sm"], 16),
            state=m["state"],
            phys_state=m["phys"],
            rate_gbps=int(m["rate"]),
            width=m["width"],
            speed_name=m["speed"],
            port_guid="0x" + gid[20:].replace(":", "") if is_ib else "0x0",
            gids=() if is_ib or gid == "unknown" else (GidView(0, gid, "", "v1", "eth0"),),
        )
        out = ibstatus(node_ctx(replace(make_node(0), nics=(nic,))), ["ibstatus"]).stdout
        assert out.expandtabs(8) == m.group(0)


def test_every_ibv_devinfo_block_of_the_connectx7_capture() -> None:
    text = fixture("rdma", "dgx-spark-ibv_devinfo-cx7-roce-rocep-names.txt")
    blocks = [b.strip("\n") + "\n\n" for b in text.split("\n\n") if b.strip()]
    assert len(blocks) == 4
    for block in blocks:
        fields = dict(re.findall(r"^\t+(\w+):\t+(.*)$", block, re.M))
        name = re.match(r"hca_id:\t(\S+)", block)
        assert name is not None
        state = re.match(r"PORT_(\w+)", fields["state"])
        assert state is not None
        nic = make_nic(
            0,
            name=name.group(1),
            fw_version=fields["fw_ver"],
            node_guid=fields["node_guid"],
            sys_image_guid=fields["sys_image_guid"],
            board_id=fields["board_id"],
            hca_type=f"MT{fields['vendor_part_id']}",
            state=state.group(1),
            mtu=int(fields["active_mtu"].split()[0]),
        )
        out = ibv_devinfo(node_ctx(replace(make_node(0), nics=(nic,))), ["ibv_devinfo"]).stdout
        assert out == block


@pytest.mark.parametrize(
    "capture",
    [
        "cn-notes-show_gids-mlx5-bond-roce-v1-v2.txt",
        "cn-notes-show_gids-mixed-huawei-hrn3-mlx5.txt",
    ],
)
def test_every_show_gids_table(capture: str) -> None:
    real = fixture("rdma", capture)
    nics: dict[str, list[GidView]] = {}
    for line in real.splitlines()[2:-1]:
        cells = line.split("\t")
        nics.setdefault(cells[0], []).append(
            GidView(int(cells[2]), cells[3], cells[4].strip(), cells[-2], cells[-1])
        )
    views = tuple(make_nic(0, name=dev, gids=tuple(gids)) for dev, gids in nics.items())
    assert show_gids(node_ctx(replace(make_node(0), nics=views)), ["show_gids"]).stdout == real


def test_real_hw_counter_directories_list_the_mlx5_names() -> None:
    listing = fixture("sysfs", "cn-notes-show_counters-mlx5_bond_0-hw_counters-ecn.txt")
    names = set(re.findall(r"^(\w+): \d+$", listing, re.M))
    assert names == set(mlx5_hw_counter_names()) | {"lifespan"}
    ttar = (FIXTURES / "sysfs" / "procfs-ttar-mlx5_0-cx4lx.ttar.txt").read_text()
    older = set(re.findall(r"^Path: .*/hw_counters/(\w+)$", ttar, re.M))
    assert older <= set(mlx5_hw_counter_names()) | {"lifespan"}
