"""perftest text against the real captures: byte for byte where the capture kept its bytes."""

from __future__ import annotations

import pytest
from builders_gpu import fixture

from fleet.simulator.tools.perftest_format import (
    WAITING_BANNER,
    BwRow,
    LatRow,
    PerftestEndpoint,
    PerftestParams,
    format_bw_client,
    format_lat_client,
    format_server,
)

CLIENT = PerftestEndpoint(
    lid=0,
    qpn=0x0239,
    psn=0x1137B2,
    rkey=0x203D00,
    vaddr=0x007F5F29B83000,
    gid="::ffff:172.31.1.2",
)
SERVER = PerftestEndpoint(
    lid=0,
    qpn=0x023B,
    psn=0xCF95C6,
    rkey=0x203D00,
    vaddr=0x007FBD7D593000,
    gid="::ffff:172.31.1.1",
)


def rows_of(text: str) -> list[BwRow]:
    """The Gb/s rows of the 200G RoCE sweep capture, as the model would hand them over."""
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[0].isdigit():
            size, iters, peak, avg, rate = parts
            rows.append(BwRow(int(size), int(iters), float(peak), float(avg), float(rate)))
    return rows


def roce_params(**changes: object) -> PerftestParams:
    base: dict[str, object] = {
        "device": "mlx5_0",
        "link_type": "Ethernet",
        "mtu_bytes": 4096,
        "gid_index": 3,
        "local": (CLIENT,),
        "remote": (SERVER,),
        "report_gbits": True,
    }
    base.update(changes)
    return PerftestParams(**base)  # type: ignore[arg-type]


def test_write_bw_client_is_the_capture_byte_for_byte_once_tabs_expand() -> None:
    real = fixture("perftest", "k8s-pod-ib_write_bw-a-client-roce-200g-sweep.txt")
    ours = format_bw_client("ib_write_bw", roce_params(), rows_of(real))
    assert "\t" in ours  # perftest prints tabs; the published capture has them expanded
    assert ours.expandtabs() == real


def test_write_bw_server_prints_the_clients_last_row_under_its_own_header() -> None:
    real = fixture("perftest", "k8s-pod-ib_write_bw-server-side-unit-mismatch.txt")
    client_rows = rows_of(fixture("perftest", "k8s-pod-ib_write_bw-a-client-roce-200g-sweep.txt"))
    params = roce_params(local=(SERVER,), remote=(CLIENT,), report_gbits=False)
    ours = format_server("ib_write_bw", params, bw_rows=client_rows, client_report_gbits=True)
    # the capture has three extra blank lines after the banner (a kubectl artefact:
    # write_bw.c prints the dashed line right after it)
    assert ours.expandtabs() == real.replace("************\n\n\n\n", "************\n", 1)
    assert " TX depth" not in ours


def test_send_bw_server_has_rx_depth_and_all_sizes() -> None:
    rows = [BwRow(2, 1000, 0.0, 0.04, 2.57), BwRow(4, 1000, 0.0, 0.07, 2.31)]
    params = roce_params(report_gbits=False)
    ours = format_server("ib_send_bw", params, bw_rows=rows)
    lines = ours.splitlines()
    assert " RX depth        : 512" in lines and not any("TX depth" in ln for ln in lines)
    data = [ln for ln in lines if ln.startswith(" 2 ") or ln.startswith(" 4 ")]
    assert [ln.split() for ln in data] == [
        ["2", "1000", "0.00", "4.77", "2.570000"],
        ["4", "1000", "0.00", "8.34", "2.310000"],
    ]


def test_mb_per_sec_is_two_to_the_twenty_bytes() -> None:
    ours = format_bw_client(
        "ib_send_bw", roce_params(report_gbits=False), [BwRow(65536, 5000, 8.0, 8.0, 0.015)]
    )
    assert "BW peak[MB/sec]" in ours
    assert ours.splitlines()[-2].split()[2:4] == ["953.67", "953.67"]  # 1e9 B/s / 2**20


def lat_row(text: str) -> LatRow:
    parts = next(ln for ln in text.splitlines() if ln[:2].strip().isdigit()).split()
    return LatRow(int(parts[0]), int(parts[1]), *map(float, parts[2:]))


def test_atomic_lat_row_has_the_literal_tabs_of_the_capture() -> None:
    real = fixture("perftest", "k8s-sriov-ib_atomic_lat-client-tabs-in-row.txt")
    params = roce_params(
        mtu_bytes=1024,
        rdma_cm=True,
        report_gbits=False,
        pcie_relax_order=None,
        wr_api=None,
        local=(PerftestEndpoint(0, 0x04B7, 0xE63A67, gid="::ffff:10.0.32.4"),),
        remote=(PerftestEndpoint(0, 0x08AD, 0x39CAEA, gid="::ffff:10.0.33.3"),),
        cpu_warnings=tuple(ln for ln in real.splitlines() if ln.startswith("Conflicting")),
    )
    ours = format_lat_client("ib_atomic_lat", params, [lat_row(real)])
    real_lines, our_lines = real.splitlines(), ours.splitlines()
    assert len(our_lines) == len(real_lines)
    for r, o in zip(real_lines, our_lines, strict=True):
        if "\t" in r:
            assert o == r  # the data row: byte for byte, tabs and all
        elif r.startswith(" #bytes"):
            assert o.rstrip() == r.rstrip()
        else:
            assert o.split() == r.split()  # header cells: the capture re-spaced the \t\t


def test_write_lat_layout_and_defaults() -> None:
    real = fixture("perftest", "k8s-sriov-ib_write_lat-client-rdmacm-cpufreq.txt")
    params = roce_params(
        mtu_bytes=1024,
        rdma_cm=True,
        pcie_relax_order=None,
        wr_api=None,
        local=(PerftestEndpoint(0, 0x04B5, 0x5EDA, gid="::ffff:10.0.32.4"),),
        remote=(PerftestEndpoint(0, 0x08AB, 0x269D62, gid="::ffff:10.0.33.3"),),
        cpu_warnings=tuple(ln for ln in real.splitlines() if ln.startswith("Conflicting")),
    )
    ours = format_lat_client("ib_write_lat", params, [lat_row(real)]).splitlines()
    theirs = real.splitlines()
    assert len(ours) == len(theirs)
    for o, r in zip(ours, theirs, strict=True):
        if "address:" in r:
            # write verbs print RKey/VAddr in perftest_communication.c; this capture did not
            assert o.split()[:8] == r.split()[:8]
        else:
            assert o.split() == r.split()
    header = next(o for o in ours if o.startswith(" #bytes"))
    assert header.endswith("percentile[usec] ")  # the trailing blank of RESULT_FMT_LAT


def test_send_lat_on_infiniband_has_lids_and_no_gid() -> None:
    real = fixture("perftest", "graph500-docker-ib_send_lat-a-mlx4-ib-sweep.txt")
    rows = []
    for line in real.splitlines():
        parts = line.split()
        if len(parts) == 9 and parts[0].isdigit():
            rows.append(LatRow(int(parts[0]), int(parts[1]), *map(float, parts[2:])))
    params = PerftestParams(
        device="mlx4_0",
        link_type="IB",
        mtu_bytes=2048,
        local=(PerftestEndpoint(lid=3, qpn=0x3352E, psn=0x6FC43E),),
        remote=(PerftestEndpoint(lid=0x0A, qpn=0x2AA3A, psn=0x3F5CCB),),
        pcie_relax_order=None,
        wr_api=None,
    )
    ours = format_lat_client("ib_send_lat", params, rows).splitlines()
    assert [o.split() for o in ours] == [r.split() for r in real.splitlines()]


def test_send_bw_on_infiniband_in_mb_per_sec() -> None:
    real = fixture("perftest", "graph500-docker-ib_send_bw-a-mlx4-ib-MBps.txt")
    rows = []
    for line in real.splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[0].isdigit():
            mbps = [float(parts[2]), float(parts[3])]
            gbps = [v * 2**20 * 8 / 1e9 for v in mbps]
            rows.append(BwRow(int(parts[0]), int(parts[1]), gbps[0], gbps[1], float(parts[4])))
    params = PerftestParams(
        device="mlx4_0",
        link_type="IB",
        mtu_bytes=2048,
        local=(PerftestEndpoint(lid=3, qpn=0x33529, psn=0x92FAFF),),
        remote=(PerftestEndpoint(lid=0x0A, qpn=0x2AA35, psn=0x5B085A),),
        pcie_relax_order=None,
        wr_api=None,
    )
    ours = format_bw_client("ib_send_bw", params, rows).splitlines()
    assert [o.split() for o in ours] == [r.split() for r in real.splitlines()]


def test_read_prints_outstanding_reads_and_out_field() -> None:
    ep = PerftestEndpoint(lid=0x12, qpn=0x99, psn=0x1, rkey=0x5, vaddr=0x7F00, out_reads=16)
    params = PerftestParams(
        device="mlx5_1", link_type="IB", mtu_bytes=4096, local=(ep,), remote=(ep,)
    )
    ours = format_bw_client("ib_read_bw", params, [BwRow(65536, 1000, 390.0, 389.0, 0.74)])
    assert " Outstand reads  : 16\n" in ours and "Max inline" not in ours
    assert (
        " local address: LID 0x12 QPN 0x0099 PSN 0x0001 OUT 0x10 RKey 0x000005 VAddr 0x00000000007f00\n"
        in ours
    )


def test_rdma_cm_server_waits_for_the_rdma_cm_qp() -> None:
    ours = format_server("ib_send_lat", roce_params(rdma_cm=True), lat_rows=[])
    assert " Waiting for client rdma_cm QP to connect\n" in ours
    assert " Please run the same command with the IB/RoCE interface IP\n" in ours


@pytest.mark.parametrize("test", ["ib_send", "ib_foo_bw", "iperf_bw", "ib_send_lat_x"])
def test_unknown_programs_are_refused(test: str) -> None:
    with pytest.raises(ValueError):
        format_bw_client(test, roce_params(), [])


def test_lat_and_bw_functions_refuse_each_others_tests() -> None:
    with pytest.raises(ValueError):
        format_lat_client("ib_send_bw", roce_params(), [])
    with pytest.raises(ValueError):
        format_bw_client("ib_send_lat", roce_params(), [])


def test_server_text_without_the_banner_printed_earlier() -> None:
    with_banner = format_server("ib_send_lat", roce_params(), lat_rows=[])
    without = format_server("ib_send_lat", roce_params(), lat_rows=[], banner=False)
    assert with_banner == WAITING_BANNER + without
