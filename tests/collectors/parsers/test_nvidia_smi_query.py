"""nvidia-smi --query-gpu CSV and -q: real captures, every layout variant, hostile input."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.parsers.nvidia_smi import parse_nvidia_smi_query

FIXTURES = Path(__file__).parents[2] / "fixtures" / "nvidia-smi"


def test_virtualclient_csv_nounits_4xT4() -> None:
    result = parse_nvidia_smi_query(
        (FIXTURES / "virtualclient-query-gpu-csv-4xT4-nounits.txt").read_text()
    )
    assert result.source_format == "csv"
    assert result.problems == () and result.unknown_lines == 0
    assert result.columns[:3] == ("timestamp", "name", "pci.bus_id")
    assert result.driver_version == "510.108.03"
    assert [g.index for g in result.gpus] == [0, 1, 2, 3]
    first, last = result.gpus[0], result.gpus[-1]
    assert first.name == "Tesla T4"
    assert first.pci_bus_id == "00000001:00:00.0"
    assert first.pstate == "P8"
    assert first.temperature_gpu_c == 48.0
    assert first.memory_total_mib == 16384.0
    assert first.mem_used_mib == 257.0
    assert first.memory_free_mib == 15670.0
    assert first.utilization_gpu_pct == 0.0
    assert first.pcie_link_gen_current == 1
    assert dict(first.fields)["pcie.link.gen.max"] == "3"
    assert dict(first.fields)["timestamp"] == "2023/01/11 00:06:01.255"
    assert last.pci_bus_id == "00000004:00:00.0" and last.mem_used_mib == 14.0
    assert first.power_w is None  # not queried


def test_gpud_q_h100_fragment() -> None:
    result = parse_nvidia_smi_query(
        (FIXTURES / "gpud-nvidia-smi-q-h100-535.161.08-gpu0-fragment.txt").read_text()
    )
    assert result.source_format == "q"
    assert result.problems == () and result.unknown_lines == 0
    assert (result.driver_version, result.cuda_version) == ("535.161.08", "12.2")
    (gpu,) = result.gpus
    assert gpu.name == "NVIDIA H100 80GB HBM3"
    assert gpu.uuid == "GPU-ee7954ec-da95-fd7a-ddfd-c6b32cc2f8aa"
    assert gpu.pci_bus_id == "00000000:19:00.0"
    assert gpu.driver_version == "535.161.08"
    assert gpu.power_w == 67.74 and gpu.power_limit_w == 700.0
    assert gpu.temperature_gpu_c == 29.0
    assert (gpu.memory_total_mib, gpu.mem_used_mib, gpu.memory_free_mib) == (81559.0, 0.0, 81007.0)
    assert (gpu.clocks_sm_mhz, gpu.clocks_max_sm_mhz) == (86.0, 1980.0)
    assert gpu.pcie_replays == 67
    assert (gpu.pcie_link_gen_current, gpu.pcie_link_width_current) == (5, 16)
    assert gpu.ecc_uncorrected_volatile == 0
    assert gpu.clocks_event_reasons_active == ("HW Slowdown", "HW Power Brake Slowdown")
    fields = dict(gpu.fields)
    assert fields["Temperature/GPU Shutdown T.Limit Temp"] == "-8 C"
    assert fields["Remapped Rows/Bank Remap Availability Histogram/Max"] == "2560 bank(s)"
    assert fields["Fabric/State"] == "Completed"
    assert ("Fan Speed", "N/A") in gpu.unavailable


def test_csv_with_units_and_markers() -> None:
    text = (
        "index, name, memory.used [MiB], power.draw [W], clocks.sm [MHz], fan.speed [%], "
        "clocks_event_reasons.active\n"
        "0, NVIDIA H100 80GB HBM3, 1024 MiB, 699.12 W, 1980 MHz, [N/A], 0x0000000000000004\n"
        "1, NVIDIA H100 80GB HBM3, [Not Supported], [Unknown Error], 1755 MHz, [N/A], 0x0\n"
    )
    result = parse_nvidia_smi_query(text)
    assert result.problems == ()
    first, second = result.gpus
    assert (first.mem_used_mib, first.power_w, first.clocks_sm_mhz) == (1024.0, 699.12, 1980.0)
    assert first.clocks_event_reasons == 4
    assert ("fan.speed", "[N/A]") in first.unavailable
    assert second.mem_used_mib is None and second.power_w is None
    assert dict(second.unavailable) == {
        "memory.used": "[Not Supported]",
        "power.draw": "[Unknown Error]",
        "fan.speed": "[N/A]",
    }


def test_noheader_needs_the_columns_the_caller_asked_for() -> None:
    text = "0, GPU-abc, 55, 97, 70000, 650.50\n1, GPU-def, 56, 0, 1, 80.00\n"
    columns = ["index", "uuid", "temperature.gpu", "utilization.gpu", "memory.used", "power.draw"]
    result = parse_nvidia_smi_query(text, columns=columns)
    assert result.problems == ()
    assert [g.uuid for g in result.gpus] == ["GPU-abc", "GPU-def"]
    assert result.gpus[0].utilization_gpu_pct == 97.0 and result.gpus[0].power_w == 650.5
    blind = parse_nvidia_smi_query(text)
    assert blind.gpus == ()  # nothing invented without names
    assert blind.unknown_lines == 2
    assert all("column names unknown" in p.reason for p in blind.problems)


def test_newer_driver_with_extra_fields_keeps_them() -> None:
    text = (
        "index, name, memory.used [MiB], power.draw.instant [W]\n0, NVIDIA B200, 10 MiB, 120.00 W\n"
    )
    result = parse_nvidia_smi_query(text)
    assert result.problems == ()
    assert dict(result.gpus[0].fields)["power.draw.instant"] == "120.00 W"
    assert result.gpus[0].mem_used_mib == 10.0


def test_truncated_row_is_a_problem_not_data() -> None:
    text = "index, name, memory.used [MiB]\n0, A, 1 MiB\n1, B"
    result = parse_nvidia_smi_query(text)
    assert len(result.gpus) == 1
    assert result.unknown_lines == 1
    assert result.problems[0].line == 3


def test_driver_failure_message_is_not_a_gpu() -> None:
    text = (
        "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
        "Make sure that the latest NVIDIA driver is installed and running.\n"
    )
    result = parse_nvidia_smi_query(text)
    assert result.gpus == ()
    assert result.problems


def test_another_tools_output_gives_no_gpus() -> None:
    other = (Path(__file__).parents[2] / "fixtures" / "nccl").glob("*.txt")
    for path in other:
        result = parse_nvidia_smi_query(path.read_text())
        assert result.gpus == ()
        assert result.unknown_lines > 0
