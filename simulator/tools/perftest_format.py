"""Text of perftest's ``ib_*_lat`` / ``ib_*_bw`` client and server, from numbers the model gives.

Not a registered command: the simulator core runs the server/client rendezvous
(``-p`` port, the server waiting for its client) and calls these functions
with the endpoints and the per-size results it computed.

Printf formats copied from linux-rdma/perftest ``src/perftest_parameters.h``
(``RESULT_LINE``, ``RESULT_FMT``, ``RESULT_FMT_G``, ``RESULT_FMT_LAT``,
``REPORT_FMT``, ``REPORT_FMT_EXT``, ``REPORT_FMT_LAT``),
``src/perftest_parameters.c`` (``ctx_print_test_info``: header block with its
``\\t\\t`` column separators; ``print_full_bw_report``: the 6-decimal
``REPORT_FMT_EXT`` row when Gb/s below 0.1) and ``src/perftest_communication.h``
(``BASIC_ADDR_FMT``, ``READ_FMT``, ``RDMA_FMT``, ``PERF_GID_FMT``: GID bytes in
decimal). Checked against the fixtures ``perftest/k8s-pod-ib_write_bw-a-client-roce-200g-sweep.txt``
(client, RoCE, Gb/s), ``perftest/k8s-pod-ib_write_bw-server-side-unit-mismatch.txt``
(server: no TX depth line, header in the server's MB/sec but the client's Gb/s
numbers in its one row, as ``write_bw.c`` prints the client's report),
``perftest/k8s-sriov-ib_atomic_lat-client-tabs-in-row.txt`` (the literal tabs of
a latency row, byte for byte), ``perftest/k8s-sriov-ib_write_lat-client-rdmacm-cpufreq.txt``
(CPU frequency warnings between header and row) and the graph500 IB captures
(``LID 0x03`` style LIDs, no GID line on IB). Published captures show the tabs
expanded; the real tool prints them, and so do we. The header block is that of
perftest 4.5 / MLNX_OFED 5.x-23.x (``PCIe relax order`` and ``ibv_wr* API`` lines).
"""

from __future__ import annotations

import functools
import ipaddress
from dataclasses import dataclass

RESULT_LINE = "-" * 87 + "\n"
RESULT_FMT = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
RESULT_FMT_G = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
RESULT_FMT_LAT = (
    " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]"
    "    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
)
REPORT_FMT = " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f"
REPORT_FMT_EXT = " %-7d    %d           %-7.6f            %-7.6f            %-7.6f"
REPORT_FMT_LAT = (
    " %-7d %d          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f"
    "\t\t%-7.2f \t\t%-7.2f"
)
WAITING_BANNER = (
    "\n************************************\n"
    "* Waiting for client to connect... *\n"
    "************************************\n"
)
MB_PER_SEC = 0x100000  # perftest's "MB" is 2^20 bytes (format_factor in print_report_bw)

# perftest's testsStr / link_layer_str, by the verb in the program name.
VERB_TITLES: dict[str, str] = {
    "send": "Send",
    "write": "RDMA_Write",
    "read": "RDMA_Read",
    "atomic": "Atomic",
}
DEFAULT_INLINE_BYTES: dict[tuple[str, str], int] = {
    ("send", "lat"): 236,  # DEF_INLINE_SEND_RC_UC
    ("write", "lat"): 220,  # DEF_INLINE_WRITE
}


@dataclass(frozen=True, slots=True)
class PerftestEndpoint:
    """One QP's connection data as ``ctx_print_pingpong_data`` prints it."""

    lid: int  # 0 on RoCE
    qpn: int
    psn: int
    rkey: int = 0
    vaddr: int = 0
    gid: str = ""  # "0000:0000:0000:0000:0000:ffff:0a00:0101" (GidView.gid); "" on IB
    out_reads: int = 16


@dataclass(frozen=True, slots=True)
class PerftestParams:
    """What one side of a run prints in its header block (its options and its port)."""

    device: str  # "mlx5_0"
    link_type: str  # "Ethernet" | "IB"
    mtu_bytes: int  # active MTU, e.g. 4096
    local: tuple[PerftestEndpoint, ...]  # one per QP
    remote: tuple[PerftestEndpoint, ...]
    ib_port: int = 1
    gid_index: int | None = None  # -x; RoCE always has one (perftest defaults it to 0)
    num_qps: int = 1
    connection: str = "RC"
    tx_depth: int | None = None  # None: perftest's default (128 for BW, 1 for latency)
    rx_depth: int = 512
    cq_moderation: int = 100
    inline_bytes: int | None = None  # None: perftest's default for the test
    report_gbits: bool = False  # --report_gbits
    rdma_cm: bool = False  # -R
    pcie_relax_order: bool | None = True  # None: a perftest build without this line
    wr_api: bool | None = True  # None: a perftest build without the ibv_wr* API line
    cpu_warnings: tuple[str, ...] = ()  # e.g. "Conflicting CPU frequency values detected: ..."


@dataclass(frozen=True, slots=True)
class LatRow:
    """One message size of a latency test, microseconds (half the round trip)."""

    size_bytes: int
    iterations: int
    t_min_usec: float
    t_max_usec: float
    t_typical_usec: float
    t_avg_usec: float
    t_stdev_usec: float
    p99_usec: float
    p999_usec: float


@dataclass(frozen=True, slots=True)
class BwRow:
    """One message size of a bandwidth test; printed in Gb/s or MB/s (2^20 B) per the run."""

    size_bytes: int
    iterations: int
    bw_peak_gbps: float
    bw_avg_gbps: float
    msg_rate_mpps: float


def _split(test: str) -> tuple[str, str]:
    """``ib_write_bw`` -> (``write``, ``bw``)."""
    parts = test.split("_")
    if len(parts) != 3 or parts[0] != "ib" or parts[1] not in VERB_TITLES:
        raise ValueError(f"not a perftest program: {test}")
    if parts[2] not in ("lat", "bw"):
        raise ValueError(f"not a perftest program: {test}")
    return parts[1], parts[2]


def _c_hex(value: int, width: int) -> str:
    """C's ``%#0Nx``: no ``0x`` prefix for zero (``LID 0000``)."""
    return "0" * width if value == 0 else f"{value:#0{width}x}"


@functools.lru_cache(maxsize=4096)
def _gid_decimal(gid: str) -> str:
    """A GID as perftest prints it. Cached: a NIC's GIDs do not change, and parsing one with
    ``ipaddress`` is ~4% of the simulator's CPU in a link test (four per pair)."""
    raw = ipaddress.IPv6Address(gid).packed
    return ":".join(f"{b:02d}" for b in raw)


def _address(side: str, ep: PerftestEndpoint, verb: str, params: PerftestParams) -> str:
    line = (
        f" {side} address: LID {_c_hex(ep.lid, 4)} QPN {_c_hex(ep.qpn, 6)} PSN {_c_hex(ep.psn, 6)}"
    )
    if verb == "read":
        line += f" OUT {_c_hex(ep.out_reads, 4)}"
    if verb in ("read", "write"):
        line += f" RKey {_c_hex(ep.rkey, 8)} VAddr {_c_hex(ep.vaddr, 16)}"
    line += "\n"
    if params.gid_index is not None and ep.gid:
        line += f" GID: {_gid_decimal(ep.gid)}\n"
    return line


def _info(verb: str, kind: str, params: PerftestParams, server: bool) -> str:
    """``ctx_print_test_info``: the block between the first two dashed lines."""
    title = VERB_TITLES[verb] + (" FETCH_AND_ADD" if verb == "atomic" else "")
    out = RESULT_LINE
    out += "                    " + title + (" BW " if kind == "bw" else " Latency ") + "Test\n"
    out += f" Dual-port       : OFF\t\tDevice         : {params.device}\n"
    out += f" Number of qps   : {params.num_qps}\t\tTransport type : IB\n"
    out += f" Connection type : {params.connection}\t\tUsing SRQ      : OFF\n"
    if params.pcie_relax_order is not None:
        out += f" PCIe relax order: {'ON' if params.pcie_relax_order else 'OFF'}\n"
    if params.wr_api is not None:
        out += f" ibv_wr* API     : {'ON' if params.wr_api else 'OFF'}\n"
    if not server:
        tx_depth = params.tx_depth if params.tx_depth is not None else (128 if kind == "bw" else 1)
        out += f" TX depth        : {tx_depth}\n"
    if verb == "send" and server:
        out += f" RX depth        : {params.rx_depth}\n"
    if kind == "bw":
        out += f" CQ Moderation   : {params.cq_moderation}\n"
    out += f" Mtu             : {params.mtu_bytes}[B]\n"
    out += f" Link type       : {params.link_type}\n"
    if params.gid_index is not None:
        out += f" GID index       : {params.gid_index}\n"
    if verb in ("read", "atomic"):
        out += f" Outstand reads  : {params.local[0].out_reads if params.local else 16}\n"
    else:
        inline = params.inline_bytes
        if inline is None:
            inline = DEFAULT_INLINE_BYTES.get((verb, kind), 0)
        out += f" Max inline data : {inline}[B]\n"
    out += f" rdma_cm QPs\t : {'ON' if params.rdma_cm else 'OFF'}\n"
    out += f" Data ex. method : {'rdma_cm' if params.rdma_cm else 'Ethernet'}"
    if params.rdma_cm and server:
        out += "\n" + RESULT_LINE
        out += " Waiting for client rdma_cm QP to connect\n"
        out += " Please run the same command with the IB/RoCE interface IP"
    out += "\n" + RESULT_LINE
    for ep in params.local:
        out += _address("local", ep, verb, params)
    for ep in params.remote:
        out += _address("remote", ep, verb, params)
    return out + RESULT_LINE


def _bw_value(gbps: float, report_gbits: bool) -> float:
    return gbps if report_gbits else gbps * 1e9 / 8 / MB_PER_SEC


def _bw_row(row: BwRow, report_gbits: bool) -> str:
    peak = _bw_value(row.bw_peak_gbps, report_gbits)
    avg = _bw_value(row.bw_avg_gbps, report_gbits)
    fmt = REPORT_FMT_EXT if report_gbits and avg < 0.1 else REPORT_FMT
    return fmt % (row.size_bytes, row.iterations, peak, avg, row.msg_rate_mpps) + "\n"


def _lat_row(row: LatRow) -> str:
    values = (
        row.size_bytes,
        row.iterations,
        row.t_min_usec,
        row.t_max_usec,
        row.t_typical_usec,
        row.t_avg_usec,
        row.t_stdev_usec,
        row.p99_usec,
        row.p999_usec,
    )
    return REPORT_FMT_LAT % values + "\n"


def _warnings(params: PerftestParams) -> str:
    return "".join(w + "\n" for w in params.cpu_warnings)


def format_lat_client(test: str, params: PerftestParams, rows: list[LatRow]) -> str:
    """Everything ``ib_send_lat`` / ``ib_write_lat`` / ``ib_read_lat`` prints as the client."""
    verb, kind = _split(test)
    if kind != "lat":
        raise ValueError(f"{test} is a bandwidth test")
    out = _info(verb, kind, params, server=False)
    out += RESULT_FMT_LAT + "\n" + _warnings(params)
    out += "".join(_lat_row(r) for r in rows)
    return out + RESULT_LINE


def format_bw_client(test: str, params: PerftestParams, rows: list[BwRow]) -> str:
    """Everything ``ib_send_bw`` / ``ib_write_bw`` / ``ib_read_bw`` prints as the client."""
    verb, kind = _split(test)
    if kind != "bw":
        raise ValueError(f"{test} is a latency test")
    out = _info(verb, kind, params, server=False)
    out += (RESULT_FMT_G if params.report_gbits else RESULT_FMT) + "\n" + _warnings(params)
    out += "".join(_bw_row(r, params.report_gbits) for r in rows)
    return out + RESULT_LINE


def format_server(
    test: str,
    params: PerftestParams,
    lat_rows: list[LatRow] | None = None,
    bw_rows: list[BwRow] | None = None,
    *,
    client_report_gbits: bool = False,
    banner: bool = True,
) -> str:
    """What the server side prints, from the waiting banner to its last dashed line.

    ``banner=False`` leaves out :data:`WAITING_BANNER`, for a caller that
    printed it when the server started listening, before any client came.

    ``ib_send_bw``'s server measures every size itself (``bw_rows`` as it saw
    them, peak 0.00: the receiver cannot time posts). ``ib_write_bw`` /
    ``ib_read_bw`` servers do no work: they print one row, the client's report
    of its last size, in the client's units under the server's own header
    (``client_report_gbits``), exactly the mismatch real perftest shows.
    Latency servers print their own measurements (``lat_rows``).
    """
    verb, kind = _split(test)
    out = (WAITING_BANNER if banner else "") + _info(verb, kind, params, server=True)
    if kind == "lat":
        out += RESULT_FMT_LAT + "\n" + _warnings(params)
        out += "".join(_lat_row(r) for r in lat_rows or [])
        return out + RESULT_LINE
    out += (RESULT_FMT_G if params.report_gbits else RESULT_FMT) + "\n"
    rows = bw_rows or []
    if verb == "send":
        out += _warnings(params) + "".join(_bw_row(r, params.report_gbits) for r in rows)
    elif rows:
        out += _bw_row(rows[-1], client_report_gbits)
    return out + RESULT_LINE
