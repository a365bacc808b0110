"""perftest clients and servers: all six real captures, plus truncated and newer outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.collectors.parsers.perftest import Perftest, parse_perftest

FIXTURES = Path(__file__).parents[2] / "fixtures" / "perftest"


def _parse(name: str) -> Perftest:
    return parse_perftest((FIXTURES / name).read_text())


def test_ib_send_bw_mlx4_ib_mb_per_s() -> None:
    result = _parse("graph500-docker-ib_send_bw-a-mlx4-ib-MBps.txt")
    assert result.problems == () and result.unknown_lines == 0
    assert (result.test, result.test_type, result.role) == ("Send BW Test", "bw", "client")
    assert (result.device, result.link_type, result.mtu_bytes, result.qps) == (
        "mlx4_0",
        "IB",
        2048,
        1,
    )
    assert result.tx_depth == 128 and result.rdma_cm is False and result.gid_index is None
    assert dict(result.header)["CQ Moderation"] == "100"
    assert result.local is not None and result.local.lid == "0x03" and result.local.qpn == "0x33529"
    assert result.remote is not None and result.remote.lid == "0x0a"
    assert (result.bw_unit, result.bw_unit_inferred) == ("MB/sec", "MB/sec")
    assert len(result.bw_rows) == 23 and result.lat_rows == ()
    first, last = result.bw_rows[0], result.bw_rows[-1]
    assert (first.bytes, first.iterations, first.bw_peak, first.bw_avg) == (2, 20000, 10.17, 9.90)
    assert first.msg_rate_mpps == 5.189724
    # The last row has an extra-wide gap before MsgRate: still read.
    assert (last.bytes, last.bw_avg, last.msg_rate_mpps) == (8388608, 3661.76, 0.000458)
    assert last.bw_avg_gbps == pytest.approx(3661.76 * 2**20 * 8 / 1e9)


def test_ib_send_lat_sweep() -> None:
    result = _parse("graph500-docker-ib_send_lat-a-mlx4-ib-sweep.txt")
    assert result.problems == () and result.test_type == "lat"
    assert result.columns[2] == ("t_min", "usec") and result.columns[-1] == (
        "99.9% percentile",
        "usec",
    )
    assert len(result.lat_rows) == 23
    row = result.lat_rows[-1]
    assert (row.bytes, row.t_min_usec, row.t_max_usec, row.t_typical_usec) == (
        8388608,
        2239.42,
        4189.77,
        2247.02,
    )
    assert (row.t_avg_usec, row.t_stdev_usec, row.p99_usec, row.p999_usec) == (
        2252.46,
        65.03,
        2287.38,
        3761.26,
    )
    assert result.lat_rows[0].t_typical_usec == 1.07


def test_ib_write_bw_roce_gbits_sweep() -> None:
    result = _parse("k8s-pod-ib_write_bw-a-client-roce-200g-sweep.txt")
    assert result.problems == ()
    assert (result.test, result.link_type, result.gid_index, result.mtu_bytes) == (
        "RDMA_Write BW Test",
        "Ethernet",
        3,
        4096,
    )
    assert dict(result.header)["ibv_wr* API"] == "ON"
    assert result.local is not None and result.local.rkey == "0x203d00"
    assert result.local.gid == "00:00:00:00:00:00:00:00:00:00:255:255:172:31:01:02"
    assert (result.bw_unit, result.bw_unit_inferred) == ("Gb/sec", "Gb/sec")
    assert result.bw_rows[0].bw_peak == 0.090062  # printed with 6 decimals
    assert max(row.bw_avg_gbps for row in result.bw_rows) == 196.07


def test_server_side_unit_label_mismatch_is_flagged() -> None:
    result = _parse("k8s-pod-ib_write_bw-server-side-unit-mismatch.txt")
    assert result.role == "server" and result.tx_depth is None
    assert (result.bw_unit, result.bw_unit_inferred) == ("MB/sec", "Gb/sec")
    (row,) = result.bw_rows
    assert row.bw_avg == 196.07 and row.bw_avg_gbps == 196.07  # not 196.07 MB/s = 1.6 Gb/s
    assert [p.reason for p in result.problems] == [
        "bandwidth printed as MB/sec but MsgRate x size says Gb/sec"
    ]
    assert result.unknown_lines == 0


def test_atomic_lat_tabs_in_row_and_warnings() -> None:
    result = _parse("k8s-sriov-ib_atomic_lat-client-tabs-in-row.txt")
    assert result.problems == ()
    assert result.test == "Atomic FETCH_AND_ADD Latency Test" and result.rdma_cm is True
    assert dict(result.header)["Outstand reads"] == "16"
    (row,) = result.lat_rows
    assert (row.bytes, row.iterations, row.t_typical_usec, row.p99_usec, row.p999_usec) == (
        8,
        1000,
        2.65,
        2.77,
        5.01,
    )
    assert len(result.warnings) == 2 and result.warnings[0].startswith("Conflicting CPU frequency")


def test_write_lat_rdma_cm() -> None:
    result = _parse("k8s-sriov-ib_write_lat-client-rdmacm-cpufreq.txt")
    assert result.problems == ()
    assert dict(result.header)["Data ex. method"] == "rdma_cm"
    assert result.remote is not None and result.remote.qpn == "0x08ab"
    (row,) = result.lat_rows
    assert (row.t_min_usec, row.t_typical_usec, row.p999_usec) == (1.54, 1.58, 2.13)
    assert len(result.warnings) == 2


def test_truncated_mid_row() -> None:
    text = (FIXTURES / "graph500-docker-ib_send_lat-a-mlx4-ib-sweep.txt").read_text()
    cut = text[: text.index("8388608 20000") + 30]
    result = parse_perftest(cut)
    assert len(result.lat_rows) == 22  # the half row is not invented
    assert result.unknown_lines == 1 and "values" in result.problems[0].reason


def test_older_perftest_without_percentiles() -> None:
    text = (
        "                    RDMA_Read Latency Test\n"
        " Device         : mlx5_0\n"
        " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n"
        " 2       1000          1.90           4.06         1.95\n"
    )
    result = parse_perftest(text)
    assert result.problems == ()
    (row,) = result.lat_rows
    assert (row.t_typical_usec, row.t_avg_usec, row.p99_usec) == (1.95, None, None)


def test_newer_perftest_with_an_extra_column_and_header_field() -> None:
    text = (
        "                    Send BW Test\n"
        " Device         : mlx5_0        New knob       : ON\n"
        " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]   CPU util[%]\n"
        " 65536      5000           97.50              97.40                0.185784        12.5\n"
    )
    result = parse_perftest(text)
    assert result.problems == ()
    assert dict(result.header)["New knob"] == "ON"
    assert result.columns[-1] == ("CPU util", "%")
    assert result.bw_rows[0].bw_avg_gbps == 97.40


def test_failed_connection_is_a_warning_not_a_row() -> None:
    text = (
        "Couldn't connect to 10.0.0.2:18515\nUnable to open file descriptor for socket connection\n"
    )
    result = parse_perftest(text)
    assert result.bw_rows == () and result.lat_rows == ()
    assert len(result.warnings) == 2
    assert result.problems[0].reason == "no perftest title or result table found"
