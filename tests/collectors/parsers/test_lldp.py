"""LLDP: lldpcli text (real SN5600 capture, statistics) and both JSON flavours of lldpd."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fleet.collectors.parsers.lldp import parse_lldp

FIXTURES = Path(__file__).parents[2] / "fixtures" / "topology"

# JSON layouts from lldpd's own integration test (lldpd/lldpd tests/integration/
# test_lldpcli.py, test_json_output / test_json0_output): "-f json" collapses
# one-element lists and keys the chassis by its name; "-f json0" keeps every list.
ETH0 = {
    "via": "LLDP",
    "rid": "1",
    "age": "0 day, 00:00:39",
    "chassis": {
        "leaf01": {
            "id": {"type": "mac", "value": "9c:63:c0:3a:23:f0"},
            "descr": "Cumulus Linux version 5.9.0 running on Nvidia SN5600",
            "mgmt-ip": ["10.6.156.1", "2620:52:9:1688:9e63:c0ff:fe3a:23f0"],
            "capability": [{"type": "Bridge", "enabled": True}, {"type": "Router", "enabled": True}],
        }
    },
    "port": {"id": {"type": "ifname", "value": "swp4s1"}, "descr": "swp4s1", "ttl": "120"},
}
ETH1 = {
    "via": "LLDP",
    "rid": "2",
    "chassis": {"id": {"type": "mac", "value": "00:00:00:00:00:02"}, "capability": {"type": "Bridge", "enabled": False}},
    "port": {"id": {"type": "mac", "value": "00:00:00:00:00:02"}, "ttl": "120"},
    "lldp-med": {"device-type": "Network Connectivity Device"},
}
JSON0: dict[str, Any] = {
    "lldp": [
        {
            "interface": [
                {
                    "name": "eth0",
                    "via": "LLDP",
                    "rid": "1",
                    "chassis": [
                        {
                            "id": [{"type": "mac", "value": "00:00:00:00:00:02"}],
                            "name": [{"value": "ns-2.example.com"}],
                            "descr": [{"value": "Spectacular GNU/Linux 2016"}],
                            "mgmt-ip": [{"value": "fe80::200:ff:fe00:2"}],
                            "capability": [{"type": "Bridge", "enabled": False}, {"type": "Wlan", "enabled": False}],
                        }
                    ],
                    "port": [{"id": [{"type": "mac", "value": "00:00:00:00:00:02"}], "descr": [{"value": "eth1"}], "ttl": [{"value": "120"}]}],
                }
            ]
        }
    ]
}


def test_text_neighbour_on_a_spectrum4_breakout_port() -> None:
    r = parse_lldp((FIXTURES / "schmaustech-lldpcli-show-nei-sn5600-cumulus59-dcbx-tlvs.txt").read_text())
    assert r.problems == () and r.unknown_lines == 0 and r.layout == "text"
    (n,) = r.neighbors
    assert (n.local_interface, n.via, n.rid, n.age) == ("net1", "LLDP", 1, "0 day, 01:22:55")
    assert (n.chassis_id_type, n.chassis_id, n.chassis_name) == ("mac", "9c:63:c0:3a:23:f0", "cumulus")
    assert n.chassis_descr == "Cumulus Linux version 5.9.0 running on Nvidia SN5600"
    assert n.mgmt_ips == ("10.6.156.1", "2620:52:9:1688:9e63:c0ff:fe3a:23f0")
    assert n.capabilities == {"Bridge": True, "Router": True}
    assert (n.port_id_type, n.port_id, n.port_descr, n.ttl_s) == ("ifname", "swp4s1", "swp4s1", 300)
    assert len(n.unknown_tlvs) == 4 and n.unknown_tlvs[0] == "OUI: 00,80,C2, SubType: 11, Len: 2 08,08"
    assert n.extra == {"Chassis.MgmtIface": "1; 2"}
    assert r.by_interface() == {"net1": (n,)}


def test_text_statistics() -> None:
    r = parse_lldp((FIXTURES / "schmaustech-lldpcli-show-stat-unrecognized-tlvs.txt").read_text())
    assert r.problems == () and r.neighbors == ()
    eth0, net1 = r.statistics
    assert (eth0.interface, eth0.transmitted, eth0.received) == ("eth0", 168, 0)
    assert (net1.interface, net1.transmitted, net1.received, net1.unrecognized, net1.inserted) == ("net1", 172, 50, 4, 1)


def test_json_single_interface_collapsed_to_an_object() -> None:
    r = parse_lldp(json.dumps({"lldp": {"interface": {"eth0": ETH0}}}))
    assert r.problems == () and r.layout == "json"
    (n,) = r.neighbors
    assert (n.local_interface, n.chassis_name, n.chassis_id, n.port_id, n.port_id_type, n.ttl_s) == (
        "eth0", "leaf01", "9c:63:c0:3a:23:f0", "swp4s1", "ifname", 120,
    )  # fmt: skip
    assert n.mgmt_ips == ("10.6.156.1", "2620:52:9:1688:9e63:c0ff:fe3a:23f0") and n.rid == 1


def test_json_interface_list_nameless_chassis_single_capability() -> None:
    r = parse_lldp(json.dumps({"lldp": {"interface": [{"eth0": ETH0}, {"eth1": ETH1}]}}))
    assert r.problems == ()
    assert [n.local_interface for n in r.neighbors] == ["eth0", "eth1"]
    eth1 = r.neighbors[1]
    assert (eth1.chassis_name, eth1.chassis_id, eth1.capabilities, eth1.mgmt_ips) == ("", "00:00:00:00:00:02", {"Bridge": False}, ())
    assert json.loads(eth1.extra["lldp-med"]) == {"device-type": "Network Connectivity Device"}  # newer TLVs kept


def test_json0_keeps_every_list() -> None:
    r = parse_lldp(json.dumps(JSON0))
    assert r.problems == () and r.layout == "json0"
    (n,) = r.neighbors
    assert (n.local_interface, n.chassis_name, n.chassis_descr, n.port_descr, n.ttl_s) == (
        "eth0", "ns-2.example.com", "Spectacular GNU/Linux 2016", "eth1", 120,
    )  # fmt: skip
    assert n.mgmt_ips == ("fe80::200:ff:fe00:2",) and n.capabilities == {"Bridge": False, "Wlan": False}


def test_no_neighbours_yet() -> None:
    r = parse_lldp('{"lldp": {}}')
    assert r.neighbors == () and r.problems == ()


def test_text_wrapped_description_and_newer_sections_are_kept() -> None:
    text = (
        "Interface:    eth0, via: LLDP, RID: 1, Time: 0 day, 00:00:39\n"
        "  Chassis:\n"
        "    ChassisID:    mac 00:00:00:00:00:02\n"
        "    SysDescr:     Cisco IOS Software, C3560 Software\n"
        "                  Technical Support: http://www.cisco.com/techsupport\n"
        "  Port:\n"
        "    PortID:       ifname Gi0/1\n"
        "    TTL:          120\n"
        "  VLAN:         100, pvid: yes\n"
        "  LLDP-MED:\n"
        "    Device Type:  Network Connectivity Device\n"
    )
    (n,) = parse_lldp(text).neighbors
    assert n.chassis_descr == "Cisco IOS Software, C3560 Software Technical Support: http://www.cisco.com/techsupport"
    assert n.extra == {"VLAN": "100, pvid: yes", "LLDP-MED.Device Type": "Network Connectivity Device"}
