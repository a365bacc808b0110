"""UCCL-EP and DeepEP internode benchmarks: both real captures, the other lines a run prints, hostile input."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from fleet.collectors.parsers.ep_bench import EpBench, EpTuning, parse_ep_bench
from fleet.collectors.parsers.registry import detect

FIXTURES = Path(__file__).parents[2] / "fixtures" / "nccl"
UCCL = FIXTURES / "uccl-pr441-2node-h200-8xcx7-ep-normal-mode-tuning.txt"
DEEPEP = FIXTURES / "uccl-pr723-deepep-ht-tuning-3-lines.txt"


def _parse(path: Path) -> EpBench:
    return parse_ep_bench(path.read_bytes().decode("utf-8", errors="replace"))


def test_uccl_ep_normal_mode_on_two_h200_nodes() -> None:
    result = _parse(UCCL)
    assert result.problems == () and result.unknown_lines == 0 and result.errors == ()
    fp8, bf16, combine = result.best
    assert fp8 == EpTuning("dispatch", "FP8", "uccl-ep", 24, 44, 12, 1289.0, 67.87, 46.79, 153.08)
    assert (bf16.dtype, bf16.nvl_chunk, bf16.transmit_usec, bf16.notify_usec) == ("BF16", 40, 1730.0, 82.04)
    assert (bf16.rdma_gbytes_s, bf16.nvl_gbytes_s) == (67.62, 221.21)
    assert (combine.op, combine.dtype, combine.rdma_chunk) == ("combine", None, 24)
    assert (combine.transmit_usec, combine.rdma_gbytes_s, combine.nvl_gbytes_s) == (14083.0, 8.31, 27.17)
    assert detect(UCCL.read_text()) == "ep-bench"


def test_deepep_prints_notify_plus_transmit() -> None:
    result = _parse(DEEPEP)
    assert result.problems == () and result.unknown_lines == 0
    fp8, bf16, combine = result.best
    assert fp8 == EpTuning("dispatch", "FP8", "deepep", 24, 36, 8, 751.0, 81.0, 80.42, 262.5)
    assert (bf16.notify_usec, bf16.transmit_usec, bf16.rdma_gbytes_s) == (148.0, 1369.0, 85.51)
    assert combine == EpTuning("combine", None, "deepep", 24, 3, 24, 1812.0, 71.31, 64.61, 210.88)
    assert detect(DEEPEP.read_text()) == "ep-bench"


def test_a_whole_run_with_trials_config_checks_and_tags() -> None:
    text = (
        "[rank 0] Creating buffer: num_local_ranks=8, num_nodes=2, num_ranks=16\n"
        "[config] num_tokens=4096, hidden=7168, num_topk_groups=2, num_topk=8\n"
        "[layout] Kernel performance: 0.052 ms\n"
        "\n"
        "[testing] Running with BF16, without top-k (async=False, previous=False) ... passed\n"
        "[testing] Running with FP8, with top-k (async=True, previous=False) ... passed\n"
        "[tuning] SMs 24, NVL chunk 4, RDMA chunk 4: 60 + 990 us, 40.10 GB/s (RDMA), 130.00 GB/s (NVL) \n"
        "[DeepSeek-V3] [tuning] Best dispatch (BF16): SMs 24, NVL chunk 8, RDMA chunk 20, transmit: 1369.00 us, "
        "notify: 148.00 us, BW: 85.51 GB/s (RDMA), 279.12 GB/s (NVL)\n"
        "[tuning] Best dispatch (FP8): SMs 24, RDMA chunk 16, 12.30 GB/s (RDMA), t: 123.45 us\n"
    )
    result = parse_ep_bench(text)
    assert result.problems == () and result.unknown_lines == 0
    assert result.trials == 1 and result.tests_passed == 2 and result.layout_ms == 0.052
    assert dict(result.config)["hidden"] == "7168"
    tagged, older = result.best
    assert (tagged.op, tagged.dtype, tagged.transmit_usec, tagged.nvl_gbytes_s) == ("dispatch", "BF16", 1369.0, 279.12)
    assert (older.nvl_chunk, older.rdma_chunk, older.transmit_usec, older.notify_usec) == (None, 16, 123.45, None)


def test_a_failing_run_keeps_its_error_lines() -> None:
    text = "[config] num_tokens=4096\nTraceback (most recent call last):\nRuntimeError: NVSHMEM init failed\n"
    result = parse_ep_bench(text)
    assert result.best == () and len(result.errors) == 2


def test_fields_out_of_range_or_unknown_are_left_out_with_a_problem() -> None:
    text = ("[tuning] Best combine: SMs 24, NVL chunk 3, RDMA chunk 24, 71.31 + 1812.00 us, "
            "99999999.00 GB/s (RDMA), 210.88 GB/s (NVL), warp 7\n")
    result = parse_ep_bench(text)
    (combine,) = result.best
    assert combine.rdma_gbytes_s is None and combine.nvl_gbytes_s == 210.88
    reasons = [p.reason for p in result.problems]
    assert any("out of range" in r for r in reasons) and any("'warp 7'" in r for r in reasons)


@pytest.mark.parametrize("text", ["", "\n\n", "\x00" * 500, "[tuning] Best", "[tuning] Best dispatch (FP8): ",
                                  "[a] " * 100_000, "[tuning] Best combine: " + "SMs 1, " * 50_000])
def test_hostile_input_never_raises(text: str) -> None:
    result = parse_ep_bench(text)
    assert isinstance(result.problems, tuple) and result.unknown_lines >= 0


def test_random_damage_never_raises_and_keeps_values_in_range() -> None:
    rng = random.Random("ep-bench")
    for source in (UCCL, DEEPEP):
        text = source.read_text()
        for _ in range(200):
            chars = list(text)
            for _ in range(rng.randrange(1, 12)):
                at = rng.randrange(len(chars))
                chars[at] = rng.choice("0123456789.-+:,() \n\x1b[]eE")
            for tuning in parse_ep_bench("".join(chars)).best:
                for value in (tuning.transmit_usec, tuning.notify_usec, tuning.rdma_gbytes_s, tuning.nvl_gbytes_s):
                    assert value is None or 0.0 <= value <= 1e12


def test_other_tools_output_is_not_an_ep_benchmark() -> None:
    text = (FIXTURES / "a3mega-2node-16xH100-all_reduce_perf-8B-8G.txt").read_text()
    result = parse_ep_bench(text)
    assert result.best == () and result.problems
