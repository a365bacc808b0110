"""iblinkinfo: a full QDR fabric with 32 ports down, and a grep-filtered EDR excerpt."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.parsers.iblinkinfo import parse_iblinkinfo

FIXTURES = Path(__file__).parents[2] / "fixtures" / "topology"


def test_qdr_switch_with_32_ports_down() -> None:
    r = parse_iblinkinfo((FIXTURES / "cn-notes-iblinkinfo-qdr-is4-switch-32-ports-down.txt").read_text())
    assert r.problems == () and r.unknown_lines == 0
    assert len(r.ports) == 40 and len(r.down_ports()) == 32
    ca = r.ports[0]
    assert (ca.node_kind, ca.node_name, ca.port_guid, ca.lid, ca.port) == (
        "CA", "centos-data-200 HCA-1", "0x0002c903000d81f9", 4, 1,
    )  # fmt: skip
    assert (ca.width, ca.lane_speed_gbps, ca.signal_rate_gbps, ca.state, ca.phys_state) == ("4X", 10.0, 40.0, "Active", "LinkUp")
    assert (ca.peer_lid, ca.peer_port, ca.peer_description) == (2, 3, "Infiniscale-IV Mellanox Technologies")
    sw = r.ports[4]
    assert (sw.node_kind, sw.node_guid, sw.node_name) == ("Switch", "0x0002c9020046c588", "Infiniscale-IV Mellanox Technologies")
    assert (sw.lid, sw.port, sw.peer_lid, sw.peer_port, sw.peer_description) == (2, 1, 3, 1, "centos-data-202 HCA-1")
    down = r.ports[-1]
    assert (down.port, down.state, down.phys_state, down.width, down.lane_speed_gbps) == (36, "Down", "Polling", "", None)
    assert (down.peer_lid, down.peer_port, down.peer_description) == (None, None, "")


def test_grep_filtered_edr_excerpt_without_sections() -> None:
    r = parse_iblinkinfo((FIXTURES / "hpl-notes-iblinkinfo-grep-up-edr-sb7700.txt").read_text())
    assert r.problems == () and len(r.ports) == 6
    assert {p.node_kind for p in r.ports} == {""}
    assert {(p.lane_speed_gbps, p.signal_rate_gbps) for p in r.ports} == {(25.78125, 103.125)}
    mgt = r.ports[4]
    assert (mgt.port_guid, mgt.lid, mgt.port, mgt.peer_lid, mgt.peer_description) == ("", 2, 36, 3, "mgt mlx5_0")
    assert r.ports[0].port_guid == "0xec0d9a03003d62be" and r.ports[0].peer_port == 17


def test_speed_mismatch_comment_is_kept() -> None:
    line = '           2    7[  ] ==( 4X          10.0 Gbps Active/  LinkUp)==>      9    1[  ] "n9 HCA-1" ( Could be 14.0625 Gbps)\n'
    (p,) = parse_iblinkinfo(line).ports
    assert p.comment == "Could be 14.0625 Gbps" and p.peer_lid == 9
