"""ibstat / ibstatus: every real capture, down ports, mixed link layers, newer fields."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.parsers.ibstat import parse_ibstat, parse_ibstatus

FIXTURES = Path(__file__).parents[2] / "fixtures" / "ibstat"


def _read(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_ibstat_h100_cx7_with_ethernet_ports_down() -> None:
    r = parse_ibstat(_read("gpud-h100-cx7-ib-some-eth-down.txt"))
    assert r.problems == () and r.unknown_lines == 0
    names = [d.name for d in r.devices]
    assert len(names) == 12 and names[:3] == ["mlx5_0", "mlx5_1", "mlx5_10"]
    mlx5_0 = r.devices[0]
    assert (mlx5_0.ca_type, mlx5_0.number_of_ports, mlx5_0.firmware_version) == ("MT4129", 1, "28.39.1002")
    assert mlx5_0.node_guid == "0x946dae0300cde72c"
    port = mlx5_0.ports[0]
    assert (port.port, port.state, port.physical_state, port.rate_gbps) == (1, "Active", "LinkUp", 400.0)
    assert (port.base_lid, port.lmc, port.sm_lid, port.capability_mask) == (75, 0, 334, 0xA751E848)
    assert port.link_layer == "InfiniBand"
    down = r.devices[4]  # mlx5_2: CX-6 Dx Ethernet port, disabled
    assert down.name == "mlx5_2" and down.ca_type == "MT4125"
    assert (down.ports[0].state, down.ports[0].physical_state, down.ports[0].rate_gbps) == ("Down", "Disabled", 40.0)
    assert down.ports[0].link_layer == "Ethernet"
    by_layer = {d.name: d.ports[0].link_layer for d in r.devices}
    assert sum(1 for v in by_layer.values() if v == "InfiniBand") == 8


def test_ibstat_space_indented_with_bluefield_bond() -> None:
    r = parse_ibstat(_read("gpud-h100-ib-with-bf3-bond.txt"))
    assert r.problems == () and r.unknown_lines == 0
    assert [d.name for d in r.devices] == [
        "mlx5_0", "mlx5_1", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7", "mlx5_8", "mlx5_9", "mlx5_bond_0",
    ]  # fmt: skip
    bond = r.devices[-1]
    assert (bond.ca_type, bond.firmware_version, bond.hardware_version) == ("MT41692", "32.38.3056", "1")
    assert (bond.ports[0].rate_gbps, bond.ports[0].link_layer, bond.ports[0].base_lid) == (200.0, "Ethernet", 0)
    assert r.devices[3].ports[0].base_lid == 1775


def test_ibstatus_mixed_ib_roce_and_a_down_port() -> None:
    r = parse_ibstatus(_read("blog-ibstatus-mixed-ib-roce-down.txt"))
    assert r.problems == () and r.unknown_lines == 0
    assert [(p.device, p.port) for p in r.ports] == [("mlx5_0", 1), ("mlx5_1", 1), ("mlx5_2", 1), ("mlx5_3", 1)]
    eth, ib, down = r.ports[0], r.ports[1], r.ports[2]
    assert (eth.rate_gbps, eth.width, eth.speed, eth.link_layer) == (100.0, "4X", "EDR", "Ethernet")
    assert (ib.base_lid, ib.sm_lid, ib.rate_gbps, ib.speed, ib.link_layer) == (9, 6, 200.0, "HDR", "InfiniBand")
    assert (down.state_code, down.state, down.phys_state_code, down.phys_state) == (1, "DOWN", 3, "Disabled")
    assert ib.default_gid == "fe80:0000:0000:0000:946d:ae03:00fc:e51c"


def test_ibstatus_azure_hex_lids_and_unknown_gid() -> None:
    r = parse_ibstatus(_read("gpud-ibstatus-a100-hdr-azure.txt"))
    assert r.problems == () and len(r.ports) == 9
    assert r.ports[0].base_lid == 0x33BF and r.ports[0].sm_lid == 1
    last = r.ports[-1]
    assert (last.device, last.default_gid, last.rate_gbps, last.speed, last.link_layer) == (
        "mlx5_8", "unknown", 40.0, "QDR", "Ethernet",
    )  # fmt: skip
    assert all(p.state == "ACTIVE" and p.state_code == 4 for p in r.ports)


def test_ibstatus_bluefield_bonds_two_lane_ndr() -> None:
    r = parse_ibstatus(_read("sglang-ibstatus-h20-bf3-roce-bond.txt"))
    assert r.problems == ()
    assert [p.device for p in r.ports] == ["mlx5_bond_0", "mlx5_bond_1", "mlx5_bond_2", "mlx5_bond_3"]
    assert {(p.rate_gbps, p.width, p.speed) for p in r.ports} == {(200.0, "2X", "NDR")}


def test_ibstat_newer_version_extra_fields_are_kept() -> None:
    text = _read("gpud-h100-ib-with-bf3-bond.txt").replace(
        "                Link layer: InfiniBand\n",
        "                Link layer: InfiniBand\n                Link speed ext: XDR\n",
        1,
    ).replace("        Hardware version: 0\n", "        Hardware version: 0\n        Board id: MT_0000000838\n", 1)
    r = parse_ibstat(text)
    assert r.problems == () and r.unknown_lines == 0
    assert r.devices[0].extra == {"Board id": "MT_0000000838"}
    assert r.devices[0].ports[0].extra == {"Link speed ext": "XDR"}
    assert r.devices[0].ports[0].link_layer == "InfiniBand"


def test_ibstatus_newer_version_extra_field_is_kept() -> None:
    text = _read("sglang-ibstatus-h20-bf3-roce-bond.txt").replace(
        "        link_layer:      Ethernet\n", "        link_layer:      Ethernet\n        fec:             RS\n", 1
    )
    r = parse_ibstatus(text)
    assert r.problems == () and r.ports[0].extra == {"fec": "RS"} and r.ports[1].extra == {}


def test_ibstat_bad_numbers_are_problems_not_guesses() -> None:
    r = parse_ibstat("CA 'mlx5_0'\n\tCA type: MT4129\n\tPort 1:\n\t\tRate: fast\n\t\tBase lid: x\n")
    port = r.devices[0].ports[0]
    assert port.rate_gbps is None and port.base_lid is None
    assert {p.reason for p in r.problems} == {
        "port 1: rate: 'fast' is not a finite number",
        "port 1: base_lid: 'x' is not an integer",
    }
