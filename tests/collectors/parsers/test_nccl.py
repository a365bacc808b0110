"""nccl-tests: three real all_reduce_perf runs, N/A values, errors, truncation, other builds."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.parsers.nccl import Nccl, parse_nccl

FIXTURES = Path(__file__).parents[2] / "fixtures" / "nccl"


def _parse(name: str) -> Nccl:
    return parse_nccl((FIXTURES / name).read_text())


def test_a3mega_16_ranks_8_bytes_to_8_gib() -> None:
    result = _parse("a3mega-2node-16xH100-all_reduce_perf-8B-8G.txt")
    assert result.problems == () and result.unknown_lines == 0
    assert (result.n_threads, result.n_gpus, result.min_bytes, result.max_bytes) == (
        1,
        1,
        8,
        8589934592,
    )
    assert result.iters == 20 and dict(result.params)["warmup iters"] == "5"
    assert len(result.ranks) == 16
    rank = result.ranks[9]
    assert (rank.rank, rank.pid, rank.host, rank.device, rank.pci_bus_id) == (
        9,
        6734,
        "ztan-mig-gq73",
        1,
        "0000:05:00",
    )
    assert rank.device_name == "NVIDIA H100 80GB HBM3"
    assert len(result.rows) == 31
    last = result.rows[-1]
    assert (last.size_bytes, last.count_elements, last.dtype, last.redop, last.root) == (
        8589934592,
        2147483648,
        "float",
        "sum",
        -1,
    )
    assert (
        last.oop_time_usec,
        last.oop_algbw_gbytes_s,
        last.oop_busbw_gbytes_s,
        last.oop_wrong,
    ) == (47535.0, 180.71, 338.82, 0)
    assert (last.ip_time_usec, last.ip_algbw_gbytes_s, last.ip_busbw_gbytes_s, last.ip_wrong) == (
        47743.0,
        179.92,
        337.35,
        0,
    )
    assert result.rows[0].oop_time_usec == 135.8 and result.rows[0].ip_time_usec == 123.5
    assert (result.out_of_bounds, result.out_of_bounds_ok) == (0, True)
    assert result.avg_busbw_gbytes_s == 70.742
    assert result.nccl_version is None and result.errors == ()


def test_autodl_single_process_two_gpus() -> None:
    result = _parse("autodl-2x2080ti-pcie-all_reduce_perf-no-p2p.txt")
    assert result.problems == ()
    assert result.n_gpus == 2 and {r.pid for r in result.ranks} == {31706}
    assert len(result.rows) == 28
    assert max(r.oop_busbw_gbytes_s or 0 for r in result.rows) == 4.00
    assert result.avg_busbw_gbytes_s == 2.05774


def test_schmaustech_reduced_max_bytes_and_version() -> None:
    result = _parse("schmaustech-2node-4xL40S-all_reduce_perf-nccl2.27-reduced-maxbytes.txt")
    assert result.problems == ()
    assert result.nccl_version == "2.27.3+cuda12.9"
    assert result.notes == ("Reducing maxBytes to 15534478677 due to memory limitation",)
    assert [r.host for r in result.ranks] == ["nvidiatools-29-workload"] * 2 + [
        "nvidiatools-30-workload"
    ] * 2
    assert result.rows[-1].ip_busbw_gbytes_s == 9.62
    assert result.avg_busbw_gbytes_s == 4.74277


def test_validation_off_prints_na() -> None:
    text = (FIXTURES / "autodl-2x2080ti-pcie-all_reduce_perf-no-p2p.txt").read_text()
    text = text.replace(
        "      0    12.00    0.00    0.00      0", "    N/A    12.00    0.00    0.00    N/A"
    )
    row = parse_nccl(text).rows[0]
    assert (row.oop_wrong, row.ip_wrong, row.ip_time_usec) == (None, None, 12.0)


def test_wrong_results_and_failure_lines() -> None:
    text = (FIXTURES / "autodl-2x2080ti-pcie-all_reduce_perf-no-p2p.txt").read_text()
    text = text.replace(
        "# Out of bounds values : 0 OK",
        "node1: Test NCCL failure common.cu:1279 'unhandled system error'\n# Out of bounds values : 3 FAILED",
    ).replace("      0    12.00    0.00    0.00      0", "      0    12.00    0.00    0.00      7")
    result = parse_nccl(text)
    assert result.rows[0].ip_wrong == 7
    assert (result.out_of_bounds, result.out_of_bounds_ok) == (3, False)
    assert result.errors == ("node1: Test NCCL failure common.cu:1279 'unhandled system error'",)


def test_truncated_mid_row() -> None:
    text = (FIXTURES / "a3mega-2node-16xH100-all_reduce_perf-8B-8G.txt").read_text()
    cut = text[: text.index("  4294967296") + 40]
    result = parse_nccl(cut)
    assert len(result.rows) == 29
    assert result.unknown_lines == 1 and result.avg_busbw_gbytes_s is None


def test_alltoall_without_redop_column() -> None:
    text = (
        "#                                        out-of-place                       in-place\n"
        "#       size         count      type     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
        "     1048576        262144     float    100.0   10.49    9.83      0    101.0   10.38    9.73      0\n"
    )
    (row,) = parse_nccl(text).rows
    assert (row.redop, row.root, row.oop_busbw_gbytes_s, row.ip_time_usec) == (
        None,
        None,
        9.83,
        101.0,
    )


def test_another_tools_output() -> None:
    other = (
        Path(__file__).parents[2]
        / "fixtures"
        / "perftest"
        / "graph500-docker-ib_send_bw-a-mlx4-ib-MBps.txt"
    )
    result = parse_nccl(other.read_text())
    assert result.rows == () and result.ranks == ()
    assert result.unknown_lines > 20


def test_nccl_debug_log_lines_are_counted_and_warnings_kept() -> None:
    text = (FIXTURES / "autodl-2x2080ti-pcie-all_reduce_perf-no-p2p.txt").read_text()
    log = (
        "server2:23920:24013 [7] NCCL INFO comm 0x7f5780001ca0 rank 15 nranks 32 - Init COMPLETE\n"
        "server2:23920:24013 [7] NCCL WARN NET/IB : Got async event : port error\n"
    )
    result = parse_nccl(log * 50 + text)
    assert result.problems == () and result.unknown_lines == 0
    assert result.nccl_log_lines == 100
    assert len(result.errors) == 50 and "port error" in result.errors[0]
    assert len(result.rows) == 28


def test_newer_build_with_an_extra_column_per_half() -> None:
    text = (
        "#       size         count      type   redop    root     time   algbw   busbw #wrong  lat_p99"
        "     time   algbw   busbw #wrong  lat_p99\n"
        "     1048576        262144     float     sum      -1    100.0   10.49   19.66      0    130.0"
        "    101.0   10.38   19.46      0    131.0\n"
    )
    (row,) = parse_nccl(text).rows
    assert (row.oop_busbw_gbytes_s, row.oop_wrong, row.ip_time_usec, row.ip_busbw_gbytes_s) == (
        19.66,
        0,
        101.0,
        19.46,
    )
