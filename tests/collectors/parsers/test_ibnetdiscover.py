"""ibnetdiscover: the -p ports capture and the default topology-file layout."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.parsers.ibnetdiscover import parse_ibnetdiscover

FIXTURES = Path(__file__).parents[2] / "fixtures" / "topology"

# Default layout as ibnetdiscover.c prints it (node header, node line, one line per
# connected port); a node description holding "#" as Voltaire switches print it.
# GUIDs and names invented.
TOPOLOGY = """#
# Topology file: generated on Mon Mar  2 10:00:00 2026
#
# Initiated from node 0002c903000cc89a port 0002c903000cc89b

vendid=0x2c9
devid=0xcf08
sysimgguid=0x2c9020046c58b
switchguid=0x2c9020046c588(2c9020046c588)
Switch\t36 "S-0002c9020046c588"\t\t# "leaf01 # rack 4" enhanced port 0 lid 2 lmc 0
[1]\t"H-0002c903000cc89a"[1](2c903000cc89b) \t\t# "node-a HCA-1" lid 3 4xHDR
[2][ext 3]\t"S-0002c9020046c599"[7]\t\t# "spine01" lid 9 4xNDR

vendid=0x2c9
devid=0x101b
sysimgguid=0x2c903000cc89d
caguid=0x2c903000cc89a
Ca\t1 "H-0002c903000cc89a"\t\t# "node-a HCA-1"
[1](2c903000cc89b) \t"S-0002c9020046c588"[1]\t\t# lid 3 lmc 0 "leaf01 # rack 4" lid 2 4xHDR
"""


def test_ports_layout_with_unconnected_ports() -> None:
    r = parse_ibnetdiscover((FIXTURES / "infiniband_exporter-ibnetdiscover-p-edr.txt").read_text())
    assert r.problems == () and r.unknown_lines == 0 and r.layout == "ports"
    assert len(r.links) == 9
    first = r.links[0]
    assert (first.kind, first.lid, first.port, first.guid, first.description) == ("CA", 134, 1, "0x7cfe9003003b4bde", "o0001 HCA-1")
    assert (first.peer_kind, first.peer_lid, first.peer_port, first.peer_guid, first.peer_description) == (
        "SW", 1719, 10, "0x7cfe9003009ce5b0", "ib-i1l1s01",
    )  # fmt: skip
    assert (first.width, first.speed, first.rate_gbps, first.connected) == ("4x", "EDR", 100.0, True)
    isl = r.links[5]
    assert (isl.kind, isl.port, isl.peer_kind, isl.peer_description) == ("SW", 1, "SW", "ib-i1l2s01")
    open_port = r.links[7]
    assert (open_port.port, open_port.speed, open_port.rate_gbps, open_port.connected) == (37, "???", None, False)
    assert open_port.description == "ib-i4l1s01"
    assert (r.links[8].speed, r.links[8].description, r.links[8].connected) == ("SDR", "ib-i7l2s01", False)
    assert {(n.kind, n.description) for n in r.nodes} == {
        ("CA", "o0001 HCA-1"), ("CA", "o0002 HCA-1"), ("CA", "p0001 HCA-1"),
        ("SW", "ib-i1l1s01"), ("SW", "ib-i4l1s01"), ("SW", "ib-i1l2s01"), ("SW", "ib-i7l2s01"),
    }  # fmt: skip


def test_topology_layout() -> None:
    r = parse_ibnetdiscover(TOPOLOGY)
    assert r.problems == () and r.unknown_lines == 0 and r.layout == "topology"
    sw, ca = r.nodes
    assert (sw.kind, sw.guid, sw.description, sw.lid, sw.ports_count) == ("SW", "0x0002c9020046c588", "leaf01 # rack 4", 2, 36)
    assert (sw.vendor_id, sw.device_id, sw.sys_image_guid) == ("0x2c9", "0xcf08", "0x2c9020046c58b")
    assert (ca.kind, ca.description, ca.lid, ca.ports_count, ca.device_id) == ("CA", "node-a HCA-1", None, 1, "0x101b")
    down, up, back = r.links
    assert (down.port, down.peer_kind, down.peer_guid, down.peer_port, down.peer_port_guid) == (
        1, "CA", "0x0002c903000cc89a", 1, "0x0002c903000cc89b",
    )  # fmt: skip
    assert (down.peer_lid, down.speed, down.rate_gbps) == (3, "HDR", 200.0)
    assert (up.port, up.peer_description, up.peer_port, up.rate_gbps) == (2, "spine01", 7, 400.0)
    assert (back.kind, back.lid, back.port_guid, back.peer_description, back.peer_lid) == (
        "CA", 3, "0x0002c903000cc89b", "leaf01 # rack 4", 2,
    )  # fmt: skip


def test_newer_speed_names() -> None:
    r = parse_ibnetdiscover(TOPOLOGY.replace("4xNDR", "4xXDR"))
    assert r.links[1].speed == "XDR" and r.links[1].rate_gbps == 800.0


def test_iblinkinfo_text_is_not_ibnetdiscover() -> None:
    r = parse_ibnetdiscover((FIXTURES / "hpl-notes-iblinkinfo-grep-up-edr-sb7700.txt").read_text())
    assert r.links == () and r.nodes == () and r.unknown_lines == 6 and r.layout == ""
