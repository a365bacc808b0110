"""lldpctl/lldpcli in lldpd's JSON layout and the real text layout."""

from __future__ import annotations

import json
import re
from dataclasses import replace

from builders_net import fixture, make_nic, make_node, make_switch, node_ctx, switch_ctx

from fleet.simulator.tools import ToolOutput
from fleet.simulator.tools.lldp import lldpctl


def run(*argv: str, nics: int = 2) -> ToolOutput:
    return lldpctl(node_ctx(make_node(nics)), list(argv))


def test_json_of_one_interface_is_keyed_by_name_as_lldpd_writes_it() -> None:
    doc = json.loads(run("lldpctl", "-f", "json", nics=1).stdout)
    iface = doc["lldp"]["interface"]["ens1np0"]
    assert list(iface) == ["via", "rid", "age", "chassis", "port"]
    assert iface["via"] == "LLDP" and iface["rid"] == "1"
    assert re.fullmatch(r"\d+ days?, \d\d:\d\d:\d\d", iface["age"])
    chassis = iface["chassis"]["leaf01"]
    assert chassis["id"] == {"type": "mac", "value": "9c:63:c0:3a:23:00"}
    assert chassis["descr"].startswith("Cumulus Linux") and chassis["mgmt-ip"] == "192.168.0.10"
    assert chassis["capability"] == [
        {"type": "Bridge", "enabled": True},
        {"type": "Router", "enabled": True},
    ]
    assert iface["port"] == {
        "id": {"type": "ifname", "value": "swp1"},
        "descr": "swp1",
        "ttl": "120",
    }


def test_json_with_several_interfaces_is_a_list() -> None:
    out = run("lldpcli", "-f", "json", "show", "neighbors").stdout
    assert out.startswith('{\n  "lldp": {\n    "interface": [\n')
    interfaces = json.loads(out)["lldp"]["interface"]
    assert [next(iter(i)) for i in interfaces] == ["ens1np0", "ens2np0"]
    assert interfaces[1]["ens2np0"]["rid"] == "2"


def test_no_neighbours_and_down_or_infiniband_links() -> None:
    down = replace(make_node(0), nics=(make_nic(0, phys_state="Disabled", state="DOWN"),))
    assert json.loads(lldpctl(node_ctx(down), ["lldpctl", "-f", "json"]).stdout) == {"lldp": {}}
    ib = make_node(2, link_layer="InfiniBand")
    assert json.loads(lldpctl(node_ctx(ib), ["lldpctl", "-f", "json"]).stdout) == {"lldp": {}}


def test_text_layout_matches_the_real_capture_line_for_line() -> None:
    real = fixture(
        "topology", "schmaustech-lldpcli-show-nei-sn5600-cumulus59-dcbx-tlvs.txt"
    ).splitlines()
    real = [
        line for line in real if not line.lstrip().startswith(("MgmtIface", "Unknown TLVs", "TLV:"))
    ]
    real = [
        line
        for i, line in enumerate(real)
        if not (line.lstrip().startswith("MgmtIP") and "MgmtIP" in real[i - 1])
    ]
    ours = run("lldpcli", "show", "neighbors", nics=1).stdout.splitlines()
    assert len(ours) == len(real)
    for mine, theirs in zip(ours, real, strict=True):
        label = re.match(r"^(\s*\S+:\s*|-+$|LLDP neighbors:$)", theirs)
        assert label is not None
        assert mine.startswith(label.group(1))
    assert ours[4] == "  Chassis:     " and ours[11] == "  Port:        "


def test_switch_side_sees_hosts_by_mac_port_id() -> None:
    node = make_node(1)
    leaf = make_switch("leaf01", peers=(("gpu001", "ens1np0"), ("spine01", "swp33")))
    doc = json.loads(lldpctl(switch_ctx(leaf, nodes=(node,)), ["lldpctl", "-f", "json"]).stdout)
    first, second = doc["lldp"]["interface"]
    host = first["swp1"]
    assert host["port"]["id"] == {"type": "mac", "value": node.nics[0].mac}
    assert host["port"]["descr"] == "ens1np0"
    assert {"type": "Station", "enabled": True} in host["chassis"]["gpu001"]["capability"]
    assert second["swp2"]["port"]["id"] == {"type": "ifname", "value": "swp33"}


def test_ports_filter_keyvalue_and_errors() -> None:
    only = json.loads(run("lldpcli", "-f", "json", "show", "neighbors", "ports", "ens2np0").stdout)
    assert list(only["lldp"]["interface"]) == ["ens2np0"]
    kv = run("lldpctl", "-f", "keyvalue", "ens1np0").stdout
    assert "lldp.ens1np0.chassis.name=leaf01\n" in kv and "lldp.ens1np0.port.ifname=swp1\n" in kv
    assert run("lldpctl", "-f", "yaml").exit_status == 1
    assert run("lldpcli", "show", "stuff").exit_status == 1


def test_statistics_text_matches_the_real_capture_labels() -> None:
    real = fixture("topology", "schmaustech-lldpcli-show-stat-unrecognized-tlvs.txt").splitlines()
    node = replace(
        make_node(0), nics=(make_nic(0), make_nic(1, phys_state="Disabled", state="DOWN"))
    )
    out = lldpctl(node_ctx(node), ["lldpcli", "show", "statistics"]).stdout.splitlines()
    assert len(out) == len(real)
    for mine, theirs in zip(out, real, strict=True):
        assert re.sub(r"\d+$|ens\dnp0$|eth0$|net1$", "", mine) == re.sub(
            r"\d+$|ens\dnp0$|eth0$|net1$", "", theirs
        )
    frames = 1 + 1_764_435_600 % 86400 // 30
    assert f"  Transmitted:  {frames}" in out and "  Received:     0" in out
    doc = json.loads(
        lldpctl(node_ctx(node), ["lldpcli", "-f", "json", "show", "statistics"]).stdout
    )
    first = doc["lldp"]["interface"][0]["ens1np0"]
    assert first["rx"] == {"rx": str(frames)} and first["insert_cnt"] == {"insert_cnt": "1"}
