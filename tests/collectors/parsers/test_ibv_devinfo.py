"""ibv_devinfo: the real captures (rocep names, old mlx4 dual-port layout) and -v."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.parsers.ibv_devinfo import parse_ibv_devinfo

FIXTURES = Path(__file__).parents[2] / "fixtures" / "rdma"

# ibv_devinfo -v in the layout of rdma-core libibverbs/examples/devinfo.c (print_hca_cap,
# print_port_attr): flag lists one per line, nested "tso_caps:"/"rss_caps:" sections,
# per-port width/speed/phys_state and the GID table. No published -v capture was found,
# so this text is written from that source, values invented.
VERBOSE = """hca_id:\tmlx5_0
\ttransport:\t\t\tInfiniBand (0)
\tfw_ver:\t\t\t\t20.31.1014
\tnode_guid:\t\t\tb859:9f03:00d4:e4e2
\tsys_image_guid:\t\t\tb859:9f03:00d4:e4e2
\tvendor_id:\t\t\t0x02c9
\tvendor_part_id:\t\t\t4123
\thw_ver:\t\t\t\t0x0
\tboard_id:\t\t\tMT_0000000222
\tphys_port_cnt:\t\t\t1
\tmax_mr_size:\t\t\t0xffffffffffffffff
\tmax_qp:\t\t\t\t131072
\tmax_qp_wr:\t\t\t32768
\tdevice_cap_flags:\t\t0xed721c36
\t\t\t\t\tBAD_PKEY_CNTR
\t\t\t\t\tBAD_QKEY_CNTR
\t\t\t\t\tAUTO_PATH_MIG
\tgeneral_odp_caps:
\t\t\t\t\tODP_SUPPORT
\t\t\t\t\tODP_SUPPORT_IMPLICIT
\tcompletion timestamp_mask:\t\t\t0x7fffffffffffffff
\thca_core_clock:\t\t\t156250kHZ
\ttso_caps:
\t\tmax_tso:\t\t\t262144
\t\tsupported_qp:
\t\t\t\t\tSUPPORT_RAW_PACKET
\trss_caps:
\t\tmax_rwq_indirection_tables:\t\t\t65536
\tmax_wq_type_rq:\t\t\t8388608
\t\tport:\t1
\t\t\tstate:\t\t\tPORT_ACTIVE (4)
\t\t\tmax_mtu:\t\t4096 (5)
\t\t\tactive_mtu:\t\t4096 (5)
\t\t\tsm_lid:\t\t\t1
\t\t\tport_lid:\t\t14
\t\t\tport_lmc:\t\t0x00
\t\t\tlink_layer:\t\tInfiniBand
\t\t\tmax_msg_sz:\t\t0x40000000
\t\t\tport_cap_flags:\t\t0xa259e848
\t\t\tmax_vl_num:\t\t4 (3)
\t\t\tgid_tbl_len:\t\t8
\t\t\tactive_width:\t\t4X (2)
\t\t\tactive_speed:\t\t50.0 Gbps (64)
\t\t\tphys_state:\t\tLINK_UP (5)
\t\t\tGID[  0]:\t\tfe80:0000:0000:0000:b859:9f03:00d4:e4e2
\t\t\tGID[  1]:\t\tfe80::ba59:9fff:fed4:e4e2, RoCE v2
"""


def test_dgx_spark_cx7_rocep_names_two_down() -> None:
    r = parse_ibv_devinfo((FIXTURES / "dgx-spark-ibv_devinfo-cx7-roce-rocep-names.txt").read_text())
    assert r.problems == () and r.unknown_lines == 0
    assert [d.hca_id for d in r.devices] == ["rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0", "roceP2p1s0f1"]
    first = r.devices[0]
    assert (first.fw_ver, first.vendor_id, first.vendor_part_id, first.board_id) == (
        "28.45.4028", 0x02C9, 4129, "NVD0000000087",
    )  # fmt: skip
    assert first.node_guid == "4cbb:4703:002d:1a16" and first.phys_port_cnt == 1
    states = [(d.ports[0].state, d.ports[0].state_code, d.ports[0].active_mtu_bytes) for d in r.devices]
    assert states == [("PORT_DOWN", 1, 1024), ("PORT_ACTIVE", 4, 4096), ("PORT_DOWN", 1, 1024), ("PORT_ACTIVE", 4, 4096)]
    assert {d.ports[0].link_layer for d in r.devices} == {"Ethernet"}
    assert r.devices[1].ports[0].max_mtu_bytes == 4096 and r.devices[1].ports[0].port_lmc == 0


def test_old_libibverbs_dual_port_with_device_ports_line() -> None:
    r = parse_ibv_devinfo((FIXTURES / "tensorflow-gdr-ibv_devinfo-mlx4-roce-dualport.txt").read_text())
    assert r.problems == () and r.unknown_lines == 0
    (dev,) = r.devices
    assert (dev.hca_id, dev.vendor_part_id, dev.fw_ver, dev.phys_port_cnt) == ("mlx4_0", 4099, "2.40.7000", 2)
    assert [(p.port, p.state, p.active_mtu_bytes, p.link_layer) for p in dev.ports] == [
        (1, "PORT_ACTIVE", 1024, "Ethernet"),
        (2, "PORT_ACTIVE", 1024, "Ethernet"),
    ]
    assert dev.attributes == {}


def test_verbose_limits_flag_lists_sections_and_gids() -> None:
    r = parse_ibv_devinfo(VERBOSE)
    assert r.problems == () and r.unknown_lines == 0
    (dev,) = r.devices
    a = dev.attributes
    assert a["max_qp"] == "131072" and a["max_qp_wr"] == "32768"
    assert a["device_cap_flags"] == "0xed721c36 BAD_PKEY_CNTR BAD_QKEY_CNTR AUTO_PATH_MIG"
    assert a["general_odp_caps"] == "ODP_SUPPORT ODP_SUPPORT_IMPLICIT"
    assert a["completion timestamp_mask"] == "0x7fffffffffffffff"
    assert a["tso_caps.max_tso"] == "262144" and a["tso_caps.supported_qp"] == "SUPPORT_RAW_PACKET"
    assert a["rss_caps.max_rwq_indirection_tables"] == "65536" and a["max_wq_type_rq"] == "8388608"
    (port,) = dev.ports
    assert (port.state, port.port_lid, port.sm_lid, port.link_layer) == ("PORT_ACTIVE", 14, 1, "InfiniBand")
    assert (port.active_width, port.active_speed_gbps, port.rate_gbps, port.phys_state) == ("4X", 50.0, 200.0, "LINK_UP")
    assert port.gids == ("fe80:0000:0000:0000:b859:9f03:00d4:e4e2", "fe80::ba59:9fff:fed4:e4e2, RoCE v2")
    assert port.attributes["port_cap_flags"] == "0xa259e848" and port.attributes["max_vl_num"] == "4 (3)"


def test_newer_version_extra_fields_are_kept() -> None:
    text = VERBOSE.replace("\tmax_qp:", "\tmax_dm_size:\t\t\t262144\n\tmax_qp:", 1).replace(
        "\t\t\tphys_state:", "\t\t\tfec_mode:\t\tRS (2)\n\t\t\tphys_state:", 1
    )
    r = parse_ibv_devinfo(text)
    assert r.problems == ()
    assert r.devices[0].attributes["max_dm_size"] == "262144"
    assert r.devices[0].ports[0].attributes["fec_mode"] == "RS (2)"


def test_no_devices_message_is_a_problem() -> None:
    r = parse_ibv_devinfo("No IB devices found\n")
    assert r.devices == () and r.unknown_lines == 1
    assert r.problems[0].text == "No IB devices found"
