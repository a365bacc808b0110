"""nvidia-smi nvlink -s (real capture) and -e (layout of current drivers)."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.parsers.nvidia_smi_nvlink import parse_nvidia_smi_nvlink

FIXTURES = Path(__file__).parents[2] / "fixtures" / "nvidia-smi"


def test_hpe_h100_pcie_bridge_status() -> None:
    text = (FIXTURES / "hpe-dl380a-h100pcie-nvlink-s-bridge-inactive.txt").read_text()
    result = parse_nvidia_smi_nvlink(text)
    assert result.problems == () and result.unknown_lines == 0
    assert [(g.index, g.name) for g in result.gpus] == [
        (0, "NVIDIA H100 PCIe"),
        (1, "NVIDIA H100 PCIe"),
    ]
    assert result.gpus[1].uuid == "GPU-9b1446e2-8a89-4cf6-b68c-a98d99e958d3"
    links = result.gpus[0].links
    assert len(links) == 18
    active = [link.link for link in links if link.active]
    assert active == [0, 1, 2, 3, 6, 7, 8, 9, 12, 13, 14, 15]
    assert links[0].speed_gbytes_s == 26.562
    assert links[4].active is False and links[4].speed_gbytes_s is None
    assert links[0].errors == ()


ERRORS = """GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0f8b0b1e-0000-0000-0000-000000000000)
\t Link 0: Replay Errors: 0
\t Link 0: Recovery Errors: 0
\t Link 0: CRC Errors: 0

\t Link 1: Replay Errors: 2353
\t Link 1: Recovery Errors: 1
\t Link 1: CRC Errors: 65535
\t Link 1: Effective BER: 1.5e-15
\t Link 1: Symbol Errors: N/A
"""


def test_error_counters_per_link() -> None:
    result = parse_nvidia_smi_nvlink(ERRORS)
    assert result.problems == ()
    (gpu,) = result.gpus
    first, second = gpu.links
    assert first.active is None  # -e alone says nothing about link state
    assert first.errors == (("replay_errors", 0), ("recovery_errors", 0), ("crc_errors", 0))
    assert second.error("replay_errors") == 2353 and second.error("crc_errors") == 65535
    assert second.error("effective_ber") == 1.5e-15  # a newer driver's extra counter kept
    assert second.error("symbol_errors") is None


def test_status_and_errors_merge() -> None:
    text = ERRORS + "\t Link 0: 26.562 GB/s\n\t Link 1: <inactive>\n"
    (gpu,) = parse_nvidia_smi_nvlink(text).gpus
    assert (gpu.links[0].active, gpu.links[0].speed_gbytes_s) == (True, 26.562)
    assert gpu.links[1].active is False and gpu.links[1].error("recovery_errors") == 1


def test_no_nvlink_and_garbage() -> None:
    result = parse_nvidia_smi_nvlink("NVML: Unable to find NVLink\n\x00\x01binary\n")
    assert result.gpus == () and result.unknown_lines == 2
    bad = parse_nvidia_smi_nvlink("GPU 0: X (UUID: GPU-1)\n\t Link 0: CRC Errors: lots\n")
    assert bad.gpus[0].links[0].error("crc_errors") is None
    assert bad.problems[0].reason == "counter value not understood"
