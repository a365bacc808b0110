"""Text of nccl-tests ``all_reduce_perf``, ``alltoall_perf`` and ``sendrecv_perf``, from the timings the model gives.

Not a registered command: the simulator core decides which ranks run where
and how long each size takes, then calls :func:`format_all_reduce_perf` (any
of the three: they share nccl-tests' ``common.cu`` layout).

Layout of nccl-tests 2.x ``src/common.cu`` as the fixtures show it, line for
line: ``nccl/a3mega-2node-16xH100-all_reduce_perf-8B-8G.txt`` (16 ranks over
2 nodes, ``[0000:04:00]`` PCI ids, trailing space after the average, header
lines padded with trailing blanks), ``nccl/autodl-2x2080ti-pcie-all_reduce_perf-no-p2p.txt``
(``-g 2``: one Pid for both ranks, closing ``#``) and
``nccl/schmaustech-2node-4xL40S-all_reduce_perf-nccl2.27-reduced-maxbytes.txt``
(the ``# Reducing maxBytes`` notice and the ``NCCL version`` banner NCCL itself
prints at init). Row fields: ``%12li  %12li  %8s  %6s  %6i`` then per
out-of-place / in-place ``  %7s  %6.2f  %6.2f  %5d`` where the time string is
``%7.2f`` below 100 us, ``%7.1f`` below 10 ms and ``%7.0f`` above.
Bus bandwidth = algorithm bandwidth x 2(n-1)/n for all-reduce, (n-1)/n for all-to-all, 1 for
send/receive (nccl-tests doc/PERFORMANCE.md; docs/domain.md, "Probes").

``alltoall_perf`` and ``sendrecv_perf`` as
``nccl/nccl-tests-issue321-2node-h20-vm-alltoall_perf-roce-bond-rdma-plugin.txt``
shows them: ``redop`` ``none`` (all-to-all) or ``sum`` (send/receive), root
``-1``, the count column per peer (all-to-all: the elements each rank sends to
one rank), the in-place ``#wrong`` ``N/A`` (neither test checks in place), and,
with ``NCCL_DEBUG=INFO``, NCCL's own lines between the table header and the rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

HEADER_PLACE = (
    "#                                                              out-of-place"
    "                       in-place          "
)
HEADER_NAMES = (
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong"
)
HEADER_UNITS = (
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
    "            (us)  (GB/s)  (GB/s)       "
)
DTYPE_BYTES: dict[str, int] = {
    "int8": 1,
    "uint8": 1,
    "half": 2,
    "bfloat16": 2,
    "int32": 4,
    "uint32": 4,
    "float": 4,
    "int64": 8,
    "uint64": 8,
    "double": 8,
}


@dataclass(frozen=True, slots=True)
class NcclRank:
    """One ``#  Rank`` line: where a rank runs and on which GPU."""

    rank: int
    pid: int
    host: str
    device: int  # CUDA device index on that host
    pci_bus_id: str  # NVML form "00000000:18:00.0"
    gpu_name: str  # "NVIDIA H100 80GB HBM3"
    group: int = 0


@dataclass(frozen=True, slots=True)
class NcclParams:
    """The command line of the run, as the first header line repeats it."""

    n_gpus: int  # -g: GPUs per process
    min_bytes: int
    max_bytes: int
    ranks: tuple[NcclRank, ...]
    n_threads: int = 1
    step_factor: int = 2
    warmup_iters: int = 5
    iters: int = 20
    agg_iters: int = 1
    validation: int = 1
    graph: int = 0
    dtype: str = "float"
    redop: str = "sum"
    root: int = -1
    nccl_version: str | None = None  # "2.21.5+cuda12.4", printed when NCCL_DEBUG=VERSION
    reduced_max_bytes: int | None = None  # memory too small for max_bytes


@dataclass(frozen=True, slots=True)
class NcclRow:
    """One message size: out-of-place and in-place timings (us) and bandwidths (GB/s, 1e9 B/s)."""

    size_bytes: int
    count: int
    out_time_usec: float
    out_algbw_gbs: float
    out_busbw_gbs: float
    in_time_usec: float
    in_algbw_gbs: float
    in_busbw_gbs: float
    out_wrong: int = 0
    in_wrong: int | None = 0
    """None: not checked (``N/A``), as all-to-all and send/receive print in place."""


def bus_factor(n_ranks: int) -> float:
    """All-reduce bus bandwidth over algorithm bandwidth: 2(n-1)/n."""
    return 2 * (n_ranks - 1) / n_ranks if n_ranks > 1 else 1.0


def make_row(
    size_bytes: int,
    n_ranks: int,
    out_time_usec: float,
    in_time_usec: float,
    dtype: str = "float",
    *,
    factor: float | None = None,
    count: int | None = None,
    in_checked: bool = True,
) -> NcclRow:
    """Derive count, algbw and busbw from the size and the times, as nccl-tests does.

    ``factor``: busbw / algbw (default the all-reduce's); ``count``: the count column (default the
    size's elements); ``in_checked`` False prints the in-place ``#wrong`` as ``N/A``.
    """
    factor = bus_factor(n_ranks) if factor is None else factor
    out_alg = size_bytes / out_time_usec / 1e3
    in_alg = size_bytes / in_time_usec / 1e3
    return NcclRow(
        size_bytes=size_bytes,
        count=size_bytes // DTYPE_BYTES[dtype] if count is None else count,
        out_time_usec=out_time_usec,
        out_algbw_gbs=out_alg,
        out_busbw_gbs=out_alg * factor,
        in_time_usec=in_time_usec,
        in_algbw_gbs=in_alg,
        in_busbw_gbs=in_alg * factor,
        in_wrong=0 if in_checked else None,
    )


def _time(usec: float) -> str:
    if usec >= 10000.0:
        return f"{usec:7.0f}"
    if usec >= 100.0:
        return f"{usec:7.1f}"
    return f"{usec:7.2f}"


def _pci(bus_id: str) -> str:
    """NVML ``00000000:18:00.0`` -> nccl-tests ``0000:18:00``."""
    domain, bus, devfn = bus_id.split(":")
    return f"{int(domain, 16):04x}:{bus.lower()}:{devfn.split('.')[0].lower()}"


def _row(row: NcclRow, params: NcclParams) -> str:
    head = f"{row.size_bytes:12d}  {row.count:12d}  {params.dtype:>8s}  {params.redop:>6s}  {params.root:6d}"
    out = f"  {_time(row.out_time_usec)}  {row.out_algbw_gbs:6.2f}  {row.out_busbw_gbs:6.2f}  {row.out_wrong:5d}"
    in_wrong = "N/A" if row.in_wrong is None else str(row.in_wrong)
    inp = f"  {_time(row.in_time_usec)}  {row.in_algbw_gbs:6.2f}  {row.in_busbw_gbs:6.2f}  {in_wrong:>5s}"
    return head + out + inp


def average_busbw(rows: list[NcclRow]) -> float:
    """``# Avg bus bandwidth``, GB/s: the mean of every size's out-of-place and in-place busbw."""
    values = [r.out_busbw_gbs for r in rows] + [r.in_busbw_gbs for r in rows]
    return sum(values) / len(values) if values else 0.0


def _g(value: float) -> str:
    """C's ``%g``: 6 significant digits, no trailing zeros."""
    return f"{value:g}"


def format_all_reduce_perf(params: NcclParams, rows: list[NcclRow], *, log_before: Sequence[str] = (),
                           log_in_table: Sequence[str] = ()) -> str:
    """Everything ``all_reduce_perf`` (or ``alltoall_perf``, ``sendrecv_perf``) prints on stdout for one run.

    ``log_before``: NCCL's INFO lines printed while the communicators start (before the table);
    ``log_in_table``: those printed as the first size runs (between the header and the rows).
    """
    lines = [
        f"# nThread {params.n_threads} nGpus {params.n_gpus} minBytes {params.min_bytes}"
        f" maxBytes {params.max_bytes} step: {params.step_factor}(factor)"
        f" warmup iters: {params.warmup_iters} iters: {params.iters}"
        f" agg iters: {params.agg_iters} validation: {params.validation} graph: {params.graph}",
        "#",
        "# Using devices",
    ]
    for r in params.ranks:
        lines.append(
            f"#  Rank {r.rank:2d} Group {r.group:2d} Pid {r.pid:6d} on {r.host:>10s}"
            f" device {r.device:2d} [{_pci(r.pci_bus_id)}] {r.gpu_name}"
        )
    if params.reduced_max_bytes is not None:
        lines += [
            "#",
            f"# Reducing maxBytes to {params.reduced_max_bytes} due to memory limitation",
        ]
    if params.nccl_version is not None:
        lines.append(f"NCCL version {params.nccl_version}")
    lines += log_before
    lines += ["#", HEADER_PLACE, HEADER_NAMES, HEADER_UNITS]
    lines += log_in_table
    lines += [_row(r, params) for r in rows]
    wrong = sum(r.out_wrong + (r.in_wrong or 0) for r in rows)
    lines.append(f"# Out of bounds values : {wrong} {'FAILED' if wrong else 'OK'}")
    lines.append(f"# Avg bus bandwidth    : {_g(average_busbw(rows))} ")
    lines.append("#")
    return "".join(line + "\n" for line in lines)
