"""The switch QoS parsers on every real capture of their kind (NVUE ``nv show``, Onyx ``show roce``,
SONiC ``show pfcwd``) and on the layouts of the SONiC views no capture was found of, as sonic-utilities'
doc/Command-Reference.md prints them (values as printed there)."""

from __future__ import annotations

import pytest
from helpers.config_fixtures import FIXTURES, captures, read

from fleet.collectors.parsers.nvue_qos import parse_nvue_show
from fleet.collectors.parsers.onyx_roce import parse_onyx_show_roce
from fleet.collectors.parsers.registry import parse
from fleet.collectors.parsers.sonic_qos import (
    parse_sonic_blocks,
    parse_sonic_config_table,
    parse_sonic_ecn_queues,
    parse_sonic_interfaces_status,
    parse_sonic_pfc_priority,
    parse_sonic_pfcwd_config,
    parse_sonic_pfcwd_stats,
)


@pytest.mark.parametrize("kind", ["nvue-show", "onyx-roce", "sonic-pfcwd-config", "sonic-pfcwd-stats"])
def test_every_capture_of_each_kind_reads_without_an_unknown_line(kind: str) -> None:
    paths = captures(kind)
    assert paths
    for path in paths:
        result = parse(kind, read(path))
        assert result.unknown_lines == 0 and result.problems == (), path.name


def test_nv_show_qos_roce_system_view() -> None:
    roce = parse_nvue_show(read(FIXTURES / "switch/cumulus-docs-514-nv-show-qos-roce-lossless-single-ipool.txt"))
    assert roce.get("mode") == "lossless-single-ipool" and roce.get("enable") == "on"  # applied only
    assert roce.pfc_priorities == (3,) and roce.ecn_traffic_classes == (0, 3) and roce.trust == "pcp,dscp"
    assert roce.ecn_min_threshold_bytes == 149996 and roce.ecn_max_threshold_bytes == 1499464  # 146.48 KB, 1.43 MB
    assert roce.dscp_to_switch_priority()[26] == 3 and roce.dscp_to_switch_priority()[48] == 6
    assert [p["name"] for p in roce.pools()] == ["lossy-default-ingress", "lossy-default-egress",
                                                  "roce-reserved-egress"]
    assert roce.tables["Exception List"] == ()


def test_nv_show_interface_qos_roce_status_with_descriptions_and_blank_lines() -> None:
    port = parse_nvue_show(read(FIXTURES / "switch/cumulus-docs-514-nv-show-interface-swp16-qos-roce-status.txt"))
    assert port.get("congestion-control.congestion-mode") == "ecn, absolute" and port.get("mode") == "lossless"
    assert port.pfc_priorities == (3,) and port.get("pfc.rx-enabled") == "yes"
    assert port.dscp_to_switch_priority() == {48: 6, 26: 3}
    assert any(p["name"] == "roce-reserved-ingress" for p in port.pools())


def test_nv_show_pfc_watchdog_layout() -> None:
    # the layout of `nv show interface swp1 qos pfc-watchdog` in the Cumulus Linux NVUE reference
    text = ("                 operational  applied \n---------------  -----------  ------- \n"
            "state            enabled      enabled \n\nPFC WD Status \n=========================== \n"
            "    traffic-class  status    deadlock-count \n    -------------  --------  -------------- \n\n"
            "    0              OK        0 \n    3              DEADLOCK  2  \n")
    watchdog = parse_nvue_show(text)
    assert watchdog.get("state") == "enabled" and watchdog.problems == ()
    assert watchdog.tables["PFC WD Status"][1] == {"traffic-class": "3", "status": "DEADLOCK", "deadlock-count": "2"}


def test_onyx_show_roce() -> None:
    onyx = parse_onyx_show_roce(read(FIXTURES / "switch/cx5-sn2700-blog-onyx-3.10-show-roce-lossless-l3-trust-cut.txt"))
    assert (onyx.mode, onyx.trust, onyx.pfc_priorities) == ("lossless", "L3", (3,))
    assert onyx.fields["Port congestion-control.Min (KB)"] == "150"
    assert onyx.traffic_classes[0]["ETS"] == "WRR 50%" and onyx.traffic_classes[1]["Application"] == "CNP"


def test_pfcwd_config_with_a_preamble_and_right_aligned_ports() -> None:
    preamble = parse_sonic_pfcwd_config(read(
        FIXTURES / "switch/sonic-buildimage-issue9193-z9332-show-pfcwd-config-polling-interval-preamble.txt"))
    assert preamble.notes == ("Changed polling interval to 100ms",)
    assert [(p.port, p.action, p.detection_ms) for p in preamble.ports] == [("Ethernet0", "drop", 200),
                                                                         ("Ethernet2", "drop", 200)]
    voq = parse_sonic_pfcwd_config(read(FIXTURES / "switch/sonic-buildimage-issue17434-voq-show-pfcwd-config-drop-300.txt"))
    assert voq.ports[0].port == "Ethernet0" and voq.ports[0].restoration_ms == 300


def test_pfcwd_stats_across_widths_and_stopped_watchdogs() -> None:
    stormed = parse_sonic_pfcwd_stats(read(
        FIXTURES / "switch/sonic-buildimage-issue8483-z9332-pfcwd-show-stats-restormed-2-1.txt"))
    (queue,) = stormed.queues
    assert (queue.port, queue.queue, queue.status, queue.storms_detected, queue.storms_restored) == (
        "Ethernet4", 3, "stormed", 2, 1)
    assert queue.tx_drop == 46497254
    stopped = parse_sonic_pfcwd_stats(read(FIXTURES / "switch/sonic-utilities-pr682-pfcwd-show-stats-na-after-stop.txt"))
    assert {q.status for q in stopped.queues} == {"N/A"} and len(stopped.queues) == 3


# ------------------------------------------------------------------ layouts of the SonIC Command Reference


def test_show_pfc_priority() -> None:
    text = ("\nInterface    Lossless priorities\n-----------  ---------------------\nEthernet0    3,4\n"
            "Ethernet2    3,4\nEthernet8    \n\n")
    pfc = parse_sonic_pfc_priority(text)
    assert pfc.ports == {"Ethernet0": (3, 4), "Ethernet2": (3, 4), "Ethernet8": ()} and pfc.problems == ()


def test_show_interfaces_status_mtu() -> None:
    text = ("  Interface            Lanes    Speed    MTU            Alias    Oper    Admin    Type    Asym PFC\n"
            "-----------  ---------------  -------  -----  ---------------  ------  -------  ------  ----------\n"
            "  Ethernet0      49,50,51,52     100G   9100   hundredGigE1/1    down       up     N/A         off\n"
            "  Ethernet8      57,58,59,60     100G   9100   hundredGigE1/3    down     down     N/A         off\n")
    status = parse_sonic_interfaces_status(text)
    assert [(p.port, p.mtu, p.speed, p.oper) for p in status.ports] == [
        ("Ethernet0", 9100, "100G", "down"), ("Ethernet8", 9100, "100G", "down")]


def test_show_ecn_and_queue_status() -> None:
    text = ("Profile: AZURE_LOSSLESS\n-----------------------  -------\nred_max_threshold        2097152\n"
            "ecn                      ecn_all\ngreen_min_threshold      1048576\ngreen_max_threshold      2097152\n"
            "-----------------------  -------\n\nProfile: wredprofileabcd\n-----------------  ---\n"
            "red_max_threshold  100\n-----------------  ---\n")
    ecn = parse_sonic_blocks(text)
    profiles = ecn.of_kind("Profile")
    assert profiles["AZURE_LOSSLESS"]["ecn"] == "ecn_all" and profiles["wredprofileabcd"] == {"red_max_threshold": "100"}
    queues = parse_sonic_ecn_queues("ECN status:\nqueue 3: on\nqueue 4: off\n")
    assert queues.queues == {3: True, 4: False}


def test_show_buffer_configuration_pools_and_profiles() -> None:
    text = ("Lossless traffic pattern:\n--------------------  -\ndefault_dynamic_th    0\n"
            "over_subscribe_ratio  0\n--------------------  -\n\nPool: ingress_lossless_pool\n----  --------\n"
            "type  ingress\nmode  dynamic\n----  --------\n\nProfile: ingress_lossless_profile\n"
            "----------  -----------------------------------\ndynamic_th  0\n"
            "pool        [BUFFER_POOL:ingress_lossless_pool]\nsize        0\n"
            "----------  -----------------------------------\n")
    buffers = parse_sonic_blocks(text)
    assert buffers.of_kind("Pool")["ingress_lossless_pool"]["type"] == "ingress"
    assert buffers.of_kind("Profile")["ingress_lossless_profile"]["pool"] == "[BUFFER_POOL:ingress_lossless_pool]"
    assert buffers.blocks["Lossless traffic pattern"]["default_dynamic_th"] == "0" and buffers.unknown_lines == 0


def test_config_db_table() -> None:
    table = parse_sonic_config_table('{"Ethernet0": {"dscp_to_tc_map": "AZURE", "pfc_enable": "3,4"}}')
    assert table.entries == {"Ethernet0": {"dscp_to_tc_map": "AZURE", "pfc_enable": "3,4"}}
    assert parse_sonic_config_table("[" * 100 + "]" * 100).problems
    assert parse_sonic_config_table("").entries == {}
