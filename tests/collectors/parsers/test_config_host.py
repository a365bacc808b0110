"""The host-side configuration parsers on every real capture of their kind (tests/fixtures/SOURCES.md):
mlnx_qos, lspci -vvv / -tv, ofed_info, flint, mst status, lsmod, RoCE sysfs and RDMA-CM tools,
kernel logs, dcgmi diag."""

from __future__ import annotations

import pytest
from helpers.config_fixtures import FIXTURES, captures, read

from fleet.collectors.parsers.dcgmi_diag import parse_dcgmi_diag
from fleet.collectors.parsers.kernel_log import parse_kernel_log
from fleet.collectors.parsers.lsmod import parse_lsmod
from fleet.collectors.parsers.lspci import normalize_bdf, parse_lspci_tree, parse_lspci_verbose
from fleet.collectors.parsers.mft import parse_flint_query, parse_mst_status
from fleet.collectors.parsers.mlnx_qos import parse_mlnx_qos
from fleet.collectors.parsers.ofed_info import parse_ofed_info
from fleet.collectors.parsers.roce_sysfs import (
    parse_cma_roce_mode,
    parse_cma_roce_tos,
    parse_roce_sysfs,
    parse_traffic_class,
)


def fixture(name: str) -> str:
    return read(FIXTURES / name)


@pytest.mark.parametrize("kind", ["mlnx-qos", "lspci-verbose", "lspci-tree", "ofed-info", "flint-query",
                                  "mst-status", "lsmod", "kernel-log", "dcgmi-diag", "traffic-class",
                                  "cma-roce-tos"])
def test_every_capture_of_each_kind_reads_without_an_unknown_line(kind: str) -> None:
    from fleet.collectors.parsers.registry import parse

    paths = captures(kind)
    assert paths, f"no capture of {kind} in tests/fixtures"
    for path in paths:
        result = parse(kind, read(path))
        assert result.unknown_lines == 0, (path.name, result.problems[:3])


# ------------------------------------------------------------------ mlnx_qos


def test_healthy_layer3_roce_nic_trusts_dscp_with_pfc_on_priority_3_only() -> None:
    qos = parse_mlnx_qos(fixture("qos/att-netarbiter-mlnx_qos-eth4-trust-dscp-pfc3-tsa-vendor.txt"))
    assert (qos.dcbx_mode, qos.trust, qos.pfc_enabled) == ("OS controlled", "dscp", (3,))
    assert qos.dscp_to_priority[26] == 3 and qos.dscp_to_priority[48] == 6 and len(qos.dscp_to_priority) == 64
    assert qos.receive_buffer_bytes == () and qos.pfc_buffer == ()  # the old format prints neither
    assert [(tc.tc, tc.tsa, tc.priorities) for tc in qos.tcs][:2] == [(0, "vendor", (1,)), (1, "vendor", (0,))]
    assert qos.tc_of(3) is not None and qos.tc_of(3).tc == 3


def test_pcp_trust_prints_no_dscp_map_and_pfc_off_everywhere() -> None:
    qos = parse_mlnx_qos(fixture("qos/cn-notes-centos12-mlnx_qos-ens6-trust-pcp-pfc-none.txt"))
    assert qos.trust == "pcp" and qos.dscp_to_priority == {} and qos.pfc_enabled == ()
    assert qos.receive_buffer_bytes == (524160, 0, 0, 0, 0, 0, 0, 0)  # the trailing comma adds nothing


def test_a_priority_printed_on_two_lines_owns_both_lines_dscp_values() -> None:
    qos = parse_mlnx_qos(fixture("qos/cn-notes-ens14f0-mlnx_qos-dscp-pfc3-dscp30-remapped-prio6-split-line.txt"))
    assert qos.dscp_to_priority[30] == 6 and qos.dscp_to_priority[48] == 6 and qos.dscp_to_priority[26] == 3
    assert sorted(d for d, p in qos.dscp_to_priority.items() if p == 6) == [30, 48, 49, 50, 51, 52, 53, 54, 55]
    assert qos.pfc_buffer == (0, 2, 5, 7, 1, 2, 3, 6)


def test_firmware_dcbx_with_ets_shares_and_several_priorities_per_class() -> None:
    qos = parse_mlnx_qos(fixture("qos/cx5-sn2700-blog-mlnx_qos-mce0-dcbx-firmware-pfc3-ets50-tc0-multi-prio.txt"))
    assert qos.dcbx_mode == "Firmware controlled"
    assert qos.receive_buffer_bytes == (130944, 130944, 0, 0, 0, 0, 0, 0)  # max_buffer_size=... is not a size
    tc3 = qos.tc_of(3)
    assert tc3 is not None and (tc3.tsa, tc3.bw_pct) == ("ets", 50)
    assert qos.tc_of(0) is not None and qos.tc_of(0).priorities == (0, 1, 2, 4, 5, 7)


# ------------------------------------------------------------------ lspci


def test_hgx_switch_ports_show_acs_off_and_two_downgraded_links() -> None:
    pci = parse_lspci_verbose(fixture("pcie/gpud-hgx-h100-lspci-vvv-pex890xx-switch-gpu-cx7-cx6dx.txt"))
    gpu, nic = pci.device("19:00.0"), pci.device("0000:1a:00.0")
    assert gpu is not None and "NVIDIA" in gpu.name and gpu.port_type == "Endpoint"
    assert gpu.link_cap == gpu.link_status and gpu.link_status is not None and gpu.link_status.speed_gts == 32.0
    assert nic is not None and nic.link_status is not None and nic.link_status.width == 16
    downgraded = [d.bdf for d in pci.devices if d.link_status and d.link_status.downgraded]
    assert downgraded == ["0000:17:00.0", "0000:17:03.0"]
    switch_ports = [d for d in pci.devices if d.port_type.startswith("Downstream Port")]
    assert len(switch_ports) == 5 and all(d.acs_enabled == () for d in switch_ports)
    assert all(d.acs_cap and "ReqRedir" in d.acs_cap for d in switch_ports)


def test_newer_pciutils_print_no_ok_suffix() -> None:
    pci = parse_lspci_verbose(fixture("pcie/stelline-asus-esc8000a-lspci-vvv-cx7-21-00-0-new-pciutils.txt"))
    (nic,) = pci.devices
    assert nic.link_status is not None and (nic.link_status.speed_gts, nic.link_status.width) == (32.0, 16)
    assert nic.link_status.downgraded is False and nic.acs_enabled == ()


def test_acs_redirect_on_a_root_port_and_elided_lines_are_counted_apart() -> None:
    pci = parse_lspci_verbose(fixture("pcie/rccl-issue547-lspci-vvv-amd-root-port-acs-redirect-enabled-elided.txt"))
    (port,) = pci.devices
    assert port.acs_enabled == ("SrcValid", "ReqRedir", "CmpltRedir", "UpstreamFwd")
    assert pci.elided_lines == 3 and pci.unknown_lines == 0


def test_a_grep_of_acsctl_lines_has_no_device_but_every_line_counts() -> None:
    pci = parse_lspci_verbose(fixture("pcie/stelline-asus-esc8000a-lspci-vvv-grep-acsctl-all-off.txt"))
    assert pci.devices == () and len(pci.orphan_acs_enabled) == 46 and set(pci.orphan_acs_enabled) == {()}


def test_tree_gives_full_addresses_and_the_bridges_between_nic_and_gpu() -> None:
    tree = parse_lspci_tree(fixture("pcie/rccl-issue547-lspci-tv-fragment-cx6-mi100-pmc-sierra-switch.txt"))
    names = {d.bdf: d.name for d in tree.devices}
    assert "ConnectX-6" in names["0000:45:00.0"] and "738c" in names["0000:4a:00.0"]
    assert tree.ancestors("45:00.0") == ("0000:44:00.0", "0000:43:00.0", "0000:40:01.1")
    between = tree.bridges_between("0000:45:00.0", "0000:4a:00.0")
    # up from the NIC to the switch port both hang from, then down to the GPU
    assert between == ("0000:44:00.0", "0000:43:00.0", "0000:49:00.0", "0000:48:00.0", "0000:47:00.0",
                       "0000:46:00.0", "0000:44:01.0")


def test_multi_domain_tree_puts_each_device_on_its_root_port() -> None:
    tree = parse_lspci_tree(fixture("pcie/stelline-asus-esc8000a-lspci-tv-cx7-rtx6000ada-genoa.txt"))
    assert tree.ancestors("0000:21:00.0") == ("0000:20:03.1",)
    assert tree.ancestors("0000:e1:00.0") == ("0000:e0:01.1",)
    assert tree.bridges_between("0000:21:00.0", "0000:41:00.0") == ("0000:20:03.1", "0000:40:01.1")
    assert len({d.bdf for d in tree.devices}) == len(tree.devices)


def test_bdf_forms_are_one() -> None:
    assert normalize_bdf("19:00.0") == normalize_bdf("00000000:19:00.0") == "0000:19:00.0"


# ------------------------------------------------------------------ ofed, firmware, modules


def test_ofed_info_short_and_long_forms_name_the_release() -> None:
    short = parse_ofed_info(fixture("ofed/daocloud-docs-ofed_info-s-mlnx_ofed-23.07.txt"))
    assert (short.version, short.distribution, short.release) == (
        "MLNX_OFED_LINUX-23.07-0.5.1.2", "MLNX_OFED_LINUX", "23.07-0.5.1.2")
    full = parse_ofed_info(fixture("ofed/openshift-gb200-mofed-pod-ofed_info-doca-ofed-internal-26.01.txt"))
    assert (full.distribution, full.release) == ("OFED-internal", "26.01-1.0.0")
    rdma_core = next(c for c in full.components if c.name == "rdma-core")
    assert "rdma-core-2601.0.7-1.src.rpm" in rdma_core.sources[0]
    assert "mlnx-tools" in full.installed_packages and "kernel-mft" in full.installed_packages


def test_flint_before_and_after_a_firmware_update() -> None:
    before = parse_flint_query(fixture("ofed/schmaustech-mft-flint-query-cx7-mcx715105as-fw-28.42.1000.txt"))
    after = parse_flint_query(fixture("ofed/schmaustech-mft-flint-query-cx7-after-update-fw-28.43.1014.txt"))
    assert (before.fw_version, after.fw_version) == ("28.42.1000", "28.43.1014")
    assert before.psid == after.psid == "MT_0000001244"
    assert after.fields["Rom Info"].endswith("type=PXE version=3.7.500 cpu=AMD64")


def test_mst_status_maps_devices_to_pci_addresses() -> None:
    mst = parse_mst_status(fixture("ofed/schmaustech-mft-mst-status-2x-cx7-pciconf.txt"))
    assert [(d.path, d.bdf) for d in mst.devices] == [
        ("/dev/mst/mt4129_pciconf0", "0000:0d:00.0"), ("/dev/mst/mt4129_pciconf1", "0000:37:00.0")]
    assert mst.modules == ("MST PCI module is not loaded", "MST PCI configuration module loaded")


def test_peermem_is_loaded_when_listed_or_only_named_as_a_user() -> None:
    listed = parse_lsmod(fixture("lsmod/vectorflow-gx-lsmod-grep-nvidia-mlx5-peermem-driver580.txt"))
    assert listed.loaded("nvidia_peermem") and listed.modules[2].size_bytes == 104153088  # the 9-digit size
    user = parse_lsmod(fixture("lsmod/3fs-notes-lsmod-grep-rdma-ib_core-used-by-nvidia_peermem.txt"))
    assert user.loaded("nvidia_peermem") and not any(m.name == "nvidia_peermem" for m in user.modules)
    absent = parse_lsmod(fixture("lsmod/openshift-gb200-mofed-pod-lsmod-grep-mlx5-doca3.3-no-peermem.txt"))
    assert not absent.loaded("nvidia_peermem") and not absent.loaded("nv_peer_mem")


# ------------------------------------------------------------------ RoCE sysfs and RDMA-CM


def test_traffic_class_set_unset_and_the_tos_tool() -> None:
    assert parse_traffic_class(fixture("roce-sysfs/cn-notes-centos12-mlx5_2-tc1-traffic_class-set-106.txt")).tclass == 106
    unset = parse_traffic_class(fixture("roce-sysfs/cn-notes-centos12-mlx5_2-tc1-traffic_class-unset-empty.txt"))
    assert unset.tclass is None and unset.problems == ()
    assert parse_cma_roce_tos(fixture("roce-sysfs/att-netarbiter-cma_roce_tos-d-mlx5_2-t-106.txt")).tos == 106


def test_sysfs_values_by_path() -> None:
    sysfs = parse_roce_sysfs(
        "/sys/class/net/enp12s0np0/ecn/roce_np/enable/3:1\n"
        "/sys/class/net/enp12s0np0/ecn/roce_rp/enable/3:0\n"
        "/sys/class/net/enp12s0np0/mtu:9000\n"
        "/sys/class/infiniband/mlx5_0/tc/1/traffic_class:Global tclass=106\n")
    assert sysfs.ecn_enabled("enp12s0np0", "roce_np", 3) is True
    assert sysfs.ecn_enabled("enp12s0np0", "roce_rp", 3) is False
    assert sysfs.ecn_enabled("enp12s0np0", "roce_np", 4) is None
    assert (sysfs.mtu("enp12s0np0"), sysfs.traffic_class("mlx5_0")) == (9000, 106)


def test_roce_mode_words() -> None:
    assert parse_cma_roce_mode("RoCE v2\n").mode == "RoCE v2"
    assert parse_cma_roce_mode("IB/RoCE v1\n").mode == "IB/RoCE v1"
    bad = parse_cma_roce_mode("RoCE v3\n")
    assert bad.mode == "" and bad.unknown_lines == 1


# ------------------------------------------------------------------ kernel log


def test_a_nic_in_a_narrow_slot_says_what_limits_it() -> None:
    log = parse_kernel_log(fixture("kernel-log/cx5-sn2700-blog-dmesg-mlx5_core-pcie-bandwidth-limited-gen3-x8.txt"))
    (link,) = log.pcie_bandwidth
    assert (link.device, link.speed_gts, link.width, link.limited_at) == ("0001:43:00.0", 8.0, 8, "0001:42:01.0")
    assert (link.capable_speed_gts, link.capable_width, link.capable_gbps) == (8.0, 16, 126.016)
    assert log.firmware == (("0001:43:00.0", "16.35.4030"),)


def test_a_healthy_boot_in_decode_iso_format() -> None:
    log = parse_kernel_log(fixture("kernel-log/gpud-h100-boot-dmesg-decode-iso-grep-mlx5_core-link-down.txt"))
    assert all(b.limited_at == "" for b in log.pcie_bandwidth) and log.pcie_bandwidth[0].width == 16
    assert ("0000:1a:00.0", "28.39.1002") in log.firmware and log.lines[3].level == "warn"


@pytest.mark.parametrize(("name", "xids", "aer", "fallen"), [
    ("gpud-dmesg-T-xid119-gsp-rpc-timeout.txt", {119}, 0, ()),
    ("gpud-dmesg-decode-iso-xid13-warp-exception-xid43.txt", {13, 43}, 0, ()),
    ("gpu-burn-issue1-dmesg-aer-replay-timer-surprise-down-xid79.txt", {79}, 4, ("0000:02:00",)),
    ("nvidia-docker-issue1553-dmesg-xid79-crash-dump-d3-aer-corrected.txt", {79}, 2, ("0000:09:00",)),
    ("nvsentinel-issue155-dmesg-fallen-off-bus-multiline-no-xid-570.txt", set(), 0, ("0000:b3:00.0",)),
    ("open-gpu-kernel-modules-issue1150-kernel-xid45-caused-by-xid149-xid145.txt", {45}, 0, ()),
    ("pop-os-issue3363-journal-kernel-aer-correctable-dll-timeout-badtlp.txt", set(), 6, ()),
])  # fmt: skip
def test_xids_aer_and_fallen_gpus_in_every_timestamp_style(name: str, xids: set[int], aer: int,
                                                            fallen: tuple[str, ...]) -> None:
    log = parse_kernel_log(fixture(f"kernel-log/{name}"))
    assert {x.xid for x in log.xids} == xids
    assert len(log.aer) == aer and log.fallen_off_bus == fallen and log.unknown_lines == 0


def test_a_continuation_joins_its_message() -> None:
    log = parse_kernel_log(fixture("kernel-log/nvsentinel-issue155-dmesg-fallen-off-bus-multiline-no-xid-570.txt"))
    assert log.lines[0].message.endswith("fallen off the bus and is not responding to commands.")


# ------------------------------------------------------------------ dcgmi diag


def test_dcgm_3_pcie_failure_with_its_wrapped_warning() -> None:
    diag = parse_dcgmi_diag(fixture("dcgm/cn-blog-dcgmi3.3.0-diag-r2-8x2204-pcie-fail-cuda-driver-mismatch.txt"))
    assert (diag.version, diag.driver, len(diag.device_ids)) == ("3.3.0", "530.30.02", 8)
    (failed,) = diag.failed
    assert (failed.category, failed.name) == ("Integration", "PCIe")
    assert "unsupported display driver / cuda driver combination" in failed.warnings[0]
    assert next(t for t in diag.tests if t.name == "GPU Memory").result == "Skip"


def test_dcgm_4_per_gpu_rows() -> None:
    diag = parse_dcgmi_diag(fixture("dcgm/dcgm-issue253-dcgm4.2.3-diag-r2-4xl40s-pcie-fail-child-process.txt"))
    pcie = next(t for t in diag.tests if t.name == "pcie")
    assert pcie.result == "Fail" and len(pcie.warnings) == 4 and pcie.gpu_results[0] == ("GPU0", "Pass")
    assert [t.name for t in diag.tests] == ["software", "memory", "pcie"]


def test_dcgm_json_form() -> None:
    diag = parse_dcgmi_diag(fixture("dcgm/virtualclient-dcgmi-diag-r3-json-1gpu-t4-eud-skip.txt"))
    assert diag.failed == () and next(t for t in diag.tests if t.name == "EUD Test").result == "Skip"
    assert "GPU to Host bandwidth" in next(t for t in diag.tests if t.name == "PCIe").info[0]
