"""SONiC portstat, pfcstat and queuestat tables: real captures plus the layouts they miss."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.parsers.switch_sonic import (
    parse_sonic_counters,
    parse_sonic_pfc,
    parse_sonic_queue,
)

FIXTURES = Path(__file__).parents[2] / "fixtures" / "switch"


def test_portstat_lossless_tx_drops() -> None:
    result = parse_sonic_counters(
        (FIXTURES / "lolyu-sonic-portstat-i-lossless-txdrp.txt").read_text()
    )
    assert result.problems == () and result.unknown_lines == 0
    first, second = result.ports
    assert (first.interface, first.state, first.tx_ok, first.tx_drp) == (
        "Ethernet4",
        "U",
        8376,
        91786,
    )
    assert first.tx_bytes_per_s == 14320.0  # "14.32 KB/s", decimal kilo
    assert first.rx_bytes_per_s == 17.06 and first.rx_util_pct == 0.0
    assert (second.interface, second.rx_ok, second.rx_drp) == ("Ethernet120", 100301, 7)
    assert dict(second.fields)["RX_BPS"] == "85.91 B/s"


def test_arista_iperf_load() -> None:
    text = (FIXTURES / "sonicbook-arista7050qx-show-interfaces-counters-iperf.txt").read_text()
    result = parse_sonic_counters(text)
    assert result.problems == ()
    port = result.ports[0]
    assert (port.interface, port.rx_ok, port.rx_drp, port.tx_ok) == (
        "Ethernet4",
        2580140,
        3783,
        51263535,
    )
    assert port.tx_bytes_per_s is not None and round(port.tx_bytes_per_s) == 2_086_640_000
    assert port.tx_util_pct == 41.73
    # 2086.64 MB/s on a 40G port is the 41.73 % printed: the prefix is decimal.
    assert round(port.tx_bytes_per_s * 8 / 40e9 * 100, 2) == port.tx_util_pct
    assert result.ports[1].interface == "Ethernet12" and result.ports[1].rx_drp == 1


def test_counters_multi_asic_na_and_notes() -> None:
    text = (
        "For namespace asic0:\n"
        "      IFACE    STATE    RX_OK     RX_BPS    RX_UTIL    RX_ERR    RX_DRP    RX_OVR    TX_OK"
        "      TX_BPS    TX_UTIL    TX_ERR    TX_DRP    TX_OVR\n"
        "-----------  -------  -------  ---------  ---------  --------  --------  --------  -------"
        "  ----------  ---------  --------  --------  --------\n"
        "  Ethernet0        X      N/A        N/A        N/A       N/A       N/A       N/A      N/A"
        "         N/A        N/A       N/A       N/A       N/A\n"
        "\n"
        "Reminder: Please execute 'show interface counters -d all' to include internal links\n"
    )
    result = parse_sonic_counters(text)
    assert result.problems == ()
    (port,) = result.ports
    assert (port.namespace, port.state, port.rx_ok, port.tx_bytes_per_s) == (
        "asic0",
        "X",
        None,
        None,
    )
    assert result.notes == (
        "Reminder: Please execute 'show interface counters -d all' to include internal links",
    )


def test_queue_counters_namespace_line() -> None:
    result = parse_sonic_queue(
        (FIXTURES / "lolyu-sonic-show-queue-counters-uc3-drops.txt").read_text()
    )
    assert result.problems == () and result.unknown_lines == 0
    (row,) = result.rows
    assert (row.namespace, row.interface, row.queue, row.queue_type, row.queue_index) == (
        "",
        "Ethernet4",
        "UC3",
        "UC",
        3,
    )
    assert (row.tx_pkts, row.tx_bytes, row.drop_pkts, row.drop_bytes) == (
        8193,
        852072,
        91786,
        9545744,
    )


def test_queue_counters_huge_numbers() -> None:
    text = (
        FIXTURES / "sonic-utilities-issue2393-show-queue-counter-huge-drops-excerpt.txt"
    ).read_text()
    result = parse_sonic_queue(text)
    assert result.problems == ()
    assert len(result.rows) == 14
    uc1 = result.rows[1]
    assert (uc1.tx_pkts, uc1.tx_bytes, uc1.drop_pkts, uc1.drop_bytes) == (
        32025737389,
        13638863007480,
        6841131615,
        2893444514176,
    )
    assert [r.queue for r in result.rows[-3:]] == ["MC11", "MC12", "MC13"]
    assert result.rows[-1].queue_type == "MC" and result.rows[-1].queue_index == 13


# No real `show pfc counters` capture was found (see SOURCES.md "Not found"); this is the
# layout pfcstat prints (tabulate, headers 'Port Rx'/'Port Tx', PFC0..PFC7, commas).
PFC = """\
  Port Rx  PFC0  PFC1  PFC2       PFC3  PFC4  PFC5  PFC6  PFC7
---------  ----  ----  ----  ---------  ----  ----  ----  ----
Ethernet0     0     0     0  1,234,567     0     0     0     0
Ethernet4   N/A   N/A   N/A        N/A   N/A   N/A   N/A   N/A

  Port Tx  PFC0  PFC1  PFC2  PFC3  PFC4  PFC5  PFC6  PFC7
---------  ----  ----  ----  ----  ----  ----  ----  ----
Ethernet0     0     0     0    17     0     0     0     0
Ethernet4     0     0     0     0     5     0     0     0
"""


def test_pfc_counters_rx_and_tx() -> None:
    result = parse_sonic_pfc(PFC)
    assert result.problems == () and result.unknown_lines == 0
    assert [(r.interface, r.direction) for r in result.rows] == [
        ("Ethernet0", "rx"),
        ("Ethernet4", "rx"),
        ("Ethernet0", "tx"),
        ("Ethernet4", "tx"),
    ]
    assert result.rows[0].pfc_frames[3] == 1234567
    assert result.rows[0].priorities == (0, 1, 2, 3, 4, 5, 6, 7)
    assert result.rows[1].pfc_frames == (None,) * 8
    assert result.rows[3].pfc_frames[4] == 5


def test_truncated_and_other_tools() -> None:
    text = (FIXTURES / "lolyu-sonic-portstat-i-lossless-txdrp.txt").read_text()
    cut = parse_sonic_counters(text[: text.index("Ethernet120") + 30])
    assert [p.interface for p in cut.ports] == ["Ethernet4"]
    assert cut.unknown_lines == 1
    queue_as_ports = parse_sonic_counters(
        (FIXTURES / "lolyu-sonic-show-queue-counters-uc3-drops.txt").read_text()
    )
    assert queue_as_ports.ports == () and queue_as_ports.unknown_lines == 1
    ports_as_pfc = parse_sonic_pfc(text)
    assert ports_as_pfc.rows == () and ports_as_pfc.unknown_lines == 2
    ports_as_queue = parse_sonic_queue(text)
    assert ports_as_queue.rows == () and ports_as_queue.unknown_lines == 2
    bad = parse_sonic_pfc(PFC.replace("1,234,567", "lots!!!!!"))
    assert bad.rows[0].pfc_frames[3] is None
    assert "is not a counter" in bad.problems[0].reason


def test_newer_portstat_with_an_extra_column() -> None:
    headers = ["IFACE", "STATE", "RX_OK", "RX_BPS", "RX_PPS", "RX_UTIL", "RX_ERR", "RX_DRP"]
    headers += ["RX_OVR", "TX_OK", "TX_BPS", "TX_PPS", "TX_UTIL", "TX_ERR", "TX_DRP", "TX_OVR"]
    values = ["Ethernet0", "U", "1,000", "1.00 MB/s", "10.00/s", "0.01%", "0", "2"]
    values += ["0", "500", "0.50 KB/s", "5.00/s", "0.00%", "0", "0", "0"]
    widths = [max(len(h), len(v)) + 2 for h, v in zip(headers, values, strict=True)]
    text = "\n".join(
        "  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True))
        for row in (headers, ["-" * w for w in widths], values)
    )
    (port,) = parse_sonic_counters(text).ports
    assert (port.rx_ok, port.rx_bytes_per_s, port.rx_drp, port.tx_bytes_per_s) == (
        1000,
        1e6,
        2,
        500.0,
    )
    assert dict(port.fields)["RX_PPS"] == "10.00/s"


def test_newer_queuestat_with_trim_columns() -> None:
    text = (
        "     Port    TxQ    Counter/pkts    Counter/bytes    Drop/pkts    Drop/bytes    Trim/pkts\n"
        "---------  -----  --------------  ---------------  -----------  ------------  -----------\n"
        "Ethernet0   ALL0               5              500            1           100            7\n"
    )
    (row,) = parse_sonic_queue(text).rows
    assert (row.queue_type, row.queue_index, row.tx_pkts, row.drop_bytes) == ("ALL", 0, 5, 100)
    assert dict(row.fields)["Trim/pkts"] == "7"
