"""perftest parser shortcuts: the same results as the plain regex walk.

Why: parse_perftest skips each regex on lines a string test rules out, reads
plain decimals without the number regex, checks warnings on the lowered line
when it is ASCII, and remembers header and column lines across runs. Each
test here feeds the edge a shortcut could get wrong (Unicode blanks and case
folds, numbers the shortcut must hand back, lines too long to remember, a
remembered line seen again in another run) and checks the values the regex
walk gave before the shortcuts existed.
"""

from __future__ import annotations

from fleet.collectors.parsers.perftest import parse_perftest
from fleet.simulator.tools.perftest_format import (
    LatRow,
    PerftestEndpoint,
    PerftestParams,
    format_lat_client,
    format_server,
)

CLIENT = PerftestEndpoint(
    lid=0, qpn=0x0239, psn=0x1137B2, rkey=0x203D00, vaddr=0x7F5F29B83000, gid="::ffff:10.0.1.2"
)
SERVER = PerftestEndpoint(
    lid=0, qpn=0x023B, psn=0xCF95C6, rkey=0x203D00, vaddr=0x7FBD7D593000, gid="::ffff:10.0.1.1"
)
ROW = LatRow(2, 1000, 1.54, 2.13, 1.58, 1.58, 0.01, 1.65, 2.13)
HEADER = (
    ("Dual-port", "OFF"),
    ("Device", "mlx5_3"),
    ("Number of qps", "1"),
    ("Transport type", "IB"),
    ("Connection type", "RC"),
    ("Using SRQ", "OFF"),
    ("PCIe relax order", "ON"),
    ("ibv_wr* API", "ON"),
    ("TX depth", "1"),
    ("Mtu", "4096[B]"),
    ("Link type", "Ethernet"),
    ("GID index", "3"),
    ("Max inline data", "220[B]"),
    ("rdma_cm QPs", "OFF"),
    ("Data ex. method", "Ethernet"),
)


def _params(device: str, local: PerftestEndpoint, remote: PerftestEndpoint) -> PerftestParams:
    return PerftestParams(
        device=device,
        link_type="Ethernet",
        mtu_bytes=4096,
        gid_index=3,
        local=(local,),
        remote=(remote,),
        cpu_warnings=("Conflicting CPU frequency values detected: 999.991000 != 1084.582000.",),
    )


def test_simulated_write_lat_client_every_field() -> None:
    text = format_lat_client("ib_write_lat", _params("mlx5_3", CLIENT, SERVER), [ROW])
    result = parse_perftest(text)
    assert (result.test, result.test_type, result.role) == (
        "RDMA_Write Latency Test",
        "lat",
        "client",
    )
    assert result.header == HEADER
    assert (result.device, result.mtu_bytes, result.gid_index, result.tx_depth, result.qps) == (
        "mlx5_3",
        4096,
        3,
        1,
        1,
    )
    assert result.rdma_cm is False and result.link_type == "Ethernet"
    assert result.local is not None and result.remote is not None
    assert (result.local.qpn, result.local.psn, result.local.rkey, result.local.vaddr) == (
        "0x0239",
        "0x1137b2",
        "0x203d00",
        "0x007f5f29b83000",
    )
    assert result.local.gid == "00:00:00:00:00:00:00:00:00:00:255:255:10:00:01:02"
    assert result.remote.qpn == "0x023b" and result.remote.lid == "0000"
    assert result.columns[2:4] == (("t_min", "usec"), ("t_max", "usec"))
    assert result.columns[-1] == ("99.9% percentile", "usec") and len(result.columns) == 9
    (row,) = result.lat_rows
    assert (row.bytes, row.iterations, row.t_min_usec, row.t_max_usec) == (2, 1000, 1.54, 2.13)
    assert (row.t_typical_usec, row.t_avg_usec, row.t_stdev_usec) == (1.58, 1.58, 0.01)
    assert (row.p99_usec, row.p999_usec) == (1.65, 2.13)
    assert result.warnings == (
        "Conflicting CPU frequency values detected: 999.991000 != 1084.582000.",
    )
    assert result.problems == () and result.unknown_lines == 0


def test_simulated_server_and_a_remembered_line_in_another_run() -> None:
    first = parse_perftest(format_server("ib_write_lat", _params("mlx5_0", SERVER, CLIENT), [ROW]))
    other = parse_perftest(
        format_lat_client("ib_write_lat", _params("mlx5_3", CLIENT, SERVER), [ROW])
    )
    again = parse_perftest(format_server("ib_write_lat", _params("mlx5_0", SERVER, CLIENT), [ROW]))
    for server in (first, again):
        assert server.role == "server" and server.device == "mlx5_0" and server.tx_depth is None
        assert server.header == tuple(
            (key, "mlx5_0" if key == "Device" else value)
            for key, value in HEADER
            if key != "TX depth"
        )
        assert server.local is not None and server.local.qpn == "0x023b"
        assert server.lat_rows[0].t_typical_usec == 1.58 and server.problems == ()
    assert other.device == "mlx5_3" and other.header == HEADER and other.tx_depth == 1


def test_unicode_blanks_case_folds_and_numbers_the_shortcuts_hand_back() -> None:
    text = (
        "\u00a0* Waiting for client to connect... *\n"
        "\u2003RDMA_Write Latency Test \u00a0\n"
        " Device : mlx5_0\n"
        " GID: fe80\n"  # no address yet: a header pair, not a GID
        " fa\u0131l over : yes\n"  # dotless i: case-blind "fail"
        " Unable to bind : port\n"
        " Max inline d\u00e4t\u00e4 : 220[B]\n"
        " - - -\n"
        " local address: LID 0000 QPN 0x0239\n"
        " GID: 00:01\n"
        " #bytes #iterations t_min[usec] t_max[usec]\n"
        " 2 1000 1. .5\n"
        " 2 1000 1,000 2e3\n"
        " \u0663 1000 1.5 2.5\n"  # Arabic-Indic three: no tool prints it, not a number
        f" 2 1000 {'9' * 400} 1.0\n"  # beyond a float: not a value
        " 2 1000 \u00b2 1.0\n"  # superscript two: a digit to str.isdigit, not a number
        " 2 1000 1.5\n"
    )
    result = parse_perftest(text)
    assert (result.role, result.test, result.device) == (
        "server",
        "RDMA_Write Latency Test",
        "mlx5_0",
    )
    assert result.header == (
        ("Device", "mlx5_0"),
        ("GID", "fe80"),
        ("Max inline d\u00e4t\u00e4", "220[B]"),
    )
    assert result.warnings == ("fa\u0131l over : yes", "Unable to bind : port")
    assert result.local is not None and (result.local.qpn, result.local.gid) == ("0x0239", "00:01")
    assert [(r.bytes, r.t_min_usec, r.t_max_usec) for r in result.lat_rows] == [
        (2, 1.0, 0.5),
        (2, 1000.0, 2000.0),
    ]
    assert result.unknown_lines == 5
    assert [(p.line, p.reason) for p in result.problems] == [
        (8, "unknown line"),
        (14, "row has 4 values, header has 4"),
        (15, "row has 4 values, header has 4"),
        (16, "row has 4 values, header has 4"),
        (17, "row has 3 values, header has 4"),
    ]


def test_header_numbers_with_and_without_brackets() -> None:
    text = (
        "   Send BW Test\n"
        " Mtu : 2048[B]]  GID index : [3]\n"
        " TX depth : 12[x]y\n"
        " Number of qps : \u0663\n"  # a non-ASCII digit is no number perftest prints
    )
    result = parse_perftest(text)
    assert result.header == (
        ("Mtu", "2048[B]]"),
        ("GID index", "[3]"),
        ("TX depth", "12[x]y"),
        ("Number of qps", "\u0663"),
    )
    assert (result.mtu_bytes, result.gid_index, result.tx_depth, result.qps) == (
        2048,
        None,
        None,
        None,
    )
    assert result.problems == ()


def test_a_column_line_too_long_to_remember_is_still_read() -> None:
    extra = [f"extra{i}[u{i}]" for i in range(60)]
    columns_line = (
        " #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps] " + " ".join(extra)
    )
    assert len(columns_line) > 400
    values = " 65536 5000 97.50 97.40 0.185784 " + " ".join(f"{i}.5" for i in range(60))
    result = parse_perftest(f"   Send BW Test\n{columns_line}\n{values}\n")
    assert len(result.columns) == 65
    assert result.columns[2] == ("BW peak", "Gb/sec") and result.columns[-1] == ("extra59", "u59")
    (row,) = result.bw_rows
    assert (row.bytes, row.bw_peak, row.bw_avg_gbps, row.msg_rate_mpps) == (
        65536,
        97.5,
        97.4,
        0.185784,
    )
    assert result.problems == ()
