"""``nvidia-smi -q`` (``--query``): the per-GPU report, laid out as the real tool prints it.

Layout followed: tests/fixtures/nvidia-smi/gpud-nvidia-smi-q-h100-535.161.08-gpu0-fragment.txt
(8 x H100 80GB HBM3, driver 535.161.08; see tests/fixtures/SOURCES.md): a blank line, the
``==============NVSMI LOG==============`` banner, timestamp, driver and CUDA versions, ``Attached
GPUs``, then one block per GPU headed by its PCI bus id. Keys are indented by four spaces per
level and padded so that every `` : `` sits in column 43; section headers carry no colon. The
values come from the model's GPU (name, UUID, bus id, utilization, memory, temperature, power,
clocks, clocks-event reasons, ECC, PCIe replays); what the model does not move (VBIOS, board and
part numbers, limits) is the capture's H100 value. A GPU that has fallen off the bus (XID 79)
has no device handle: the tool prints its complaint in place of the block, as drivers do.
"""

from __future__ import annotations

import time

from fleet.simulator.state import GpuView, NodeView

KEY_WIDTH = 42
"""Indent plus key, padded to this width: the ``:`` of every line sits in this column (0-based)."""

_REASONS = (
    (0x1, "Idle"), (0x2, "Applications Clocks Setting"), (0x4, "SW Power Cap"), (0x8, "HW Slowdown"),
    (0x10, "Sync Boost"), (0x20, "SW Thermal Slowdown"), (0x100, "Display Clock Setting"),
)
"""NVML clocks-event reason bits in the order ``-q`` lists them (HW Slowdown's two causes under it)."""
HW_THERMAL = 0x40
HW_POWER_BRAKE = 0x80
OFF_THE_BUS_XID = 79
ECC_RESET_XIDS = (48, 95)
"""XIDs after which the simulated driver marks the GPU as needing a reset (an uncorrectable ECC error
pending a row remap)."""


def _line(depth: int, key: str, value: object | None = None) -> str:
    text = "    " * depth + key
    return text if value is None else f"{text.ljust(KEY_WIDTH)}: {value}"


def _active(reasons: int, bit: int) -> str:
    return "Active" if reasons & bit else "Not Active"


def _gpu_block(gpu: GpuView, node: NodeView) -> list[str]:
    bus = gpu.pci_bus_id
    reasons = gpu.throttle_reasons
    reset = gpu.xid_last in ECC_RESET_XIDS
    lines = [
        f"GPU {bus}",
        _line(1, "Product Name", gpu.name),
        _line(1, "Product Brand", "NVIDIA"),
        _line(1, "Product Architecture", "Hopper"),
        _line(1, "Display Mode", "Enabled"),
        _line(1, "Display Active", "Disabled"),
        _line(1, "Persistence Mode", "Enabled"),
        _line(1, "Addressing Mode", "None"),
        _line(1, "MIG Mode"), _line(2, "Current", "Disabled"), _line(2, "Pending", "Disabled"),
        _line(1, "Accounting Mode", "Disabled"),
        _line(1, "Accounting Mode Buffer Size", 4000),
        _line(1, "Driver Model"), _line(2, "Current", "N/A"), _line(2, "Pending", "N/A"),
        _line(1, "Serial Number", str(int(gpu.uuid.removeprefix("GPU-").replace("-", "")[:12], 16) % 10**13).zfill(13)),
        _line(1, "GPU UUID", gpu.uuid),
        _line(1, "Minor Number", gpu.index),
        _line(1, "VBIOS Version", "96.00.74.00.0D"),
        _line(1, "MultiGPU Board", "No"),
        _line(1, "Board ID", f"0x{int(bus.split(':')[1], 16):x}00"),
        _line(1, "Board Part Number", "692-2G520-0200-000"),
        _line(1, "GPU Part Number", "2330-885-A1"),
        _line(1, "FRU Part Number", "N/A"),
        _line(1, "Module ID", gpu.index + 1),
        _line(1, "GSP Firmware Version", node.driver_version),
        _line(1, "GPU Reset Status"),
        _line(2, "Reset Required", "Yes" if reset else "No"),
        _line(2, "Drain and Reset Recommended", "No"),
        _line(1, "PCI"),
        _line(2, "Bus", f"0x{bus.split(':')[1].lower()}"),
        _line(2, "Device", "0x00"),
        _line(2, "Domain", "0x0000"),
        _line(2, "Device Id", "0x233010DE"),
        _line(2, "Bus Id", bus),
        _line(2, "Sub System Id", "0x16C110DE"),
        _line(2, "GPU Link Info"),
        _line(3, "PCIe Generation"),
        *(_line(4, key, 5) for key in ("Max", "Current", "Device Current", "Device Max", "Host Max")),
        _line(3, "Link Width"), _line(4, "Max", "16x"), _line(4, "Current", "16x"),
        _line(2, "Bridge Chip"), _line(3, "Type", "N/A"), _line(3, "Firmware", "N/A"),
        _line(2, "Replays Since Reset", gpu.pcie_replay),
        _line(2, "Replay Number Rollovers", 0),
        _line(1, "Fan Speed", "N/A"),
        _line(1, "Performance State", "P0" if gpu.util_pct else "P8"),
        _line(1, "Clocks Event Reasons"),
    ]
    for bit, name in _REASONS:
        lines.append(_line(2, name, _active(reasons, bit)))
        if bit == 0x8:
            lines += [_line(3, "HW Thermal Slowdown", _active(reasons, HW_THERMAL)),
                      _line(3, "HW Power Brake Slowdown", _active(reasons, HW_POWER_BRAKE))]
    free = gpu.mem_total_mib - 551 - gpu.mem_used_mib
    lines += [
        _line(1, "FB Memory Usage"), _line(2, "Total", f"{gpu.mem_total_mib} MiB"), _line(2, "Reserved", "551 MiB"),
        _line(2, "Used", f"{gpu.mem_used_mib} MiB"), _line(2, "Free", f"{max(0, free)} MiB"),
        _line(1, "Compute Mode", "Default"),
        _line(1, "Utilization"), _line(2, "Gpu", f"{gpu.util_pct} %"), _line(2, "Memory", f"{gpu.util_pct // 3} %"),
        _line(1, "ECC Mode"), _line(2, "Current", "Enabled"), _line(2, "Pending", "Enabled"),
        _line(1, "ECC Errors"),
        _line(2, "Volatile"),
        _line(3, "SRAM Correctable", 0), _line(3, "SRAM Uncorrectable Parity", 0),
        _line(3, "SRAM Uncorrectable SEC-DED", 0), _line(3, "DRAM Correctable", 0),
        _line(3, "DRAM Uncorrectable", gpu.ecc_volatile_uncorrected),
        _line(2, "Aggregate"),
        _line(3, "SRAM Correctable", 0), _line(3, "SRAM Uncorrectable Parity", 0),
        _line(3, "SRAM Uncorrectable SEC-DED", 0), _line(3, "DRAM Correctable", 0),
        _line(3, "DRAM Uncorrectable", gpu.ecc_aggregate_uncorrected),
        _line(3, "SRAM Threshold Exceeded", "No"),
        _line(1, "Retired Pages"), _line(2, "Single Bit ECC", "N/A"), _line(2, "Double Bit ECC", "N/A"),
        _line(2, "Pending Page Blacklist", "N/A"),
        _line(1, "Remapped Rows"), _line(2, "Correctable Error", 0),
        _line(2, "Uncorrectable Error", gpu.ecc_aggregate_uncorrected),
        _line(2, "Pending", "Yes" if reset else "No"), _line(2, "Remapping Failure Occurred", "No"),
        _line(1, "Temperature"),
        _line(2, "GPU Current Temp", f"{gpu.temp_c} C"),
        _line(2, "GPU T.Limit Temp", f"{87 - gpu.temp_c} C"),
        _line(2, "GPU Shutdown T.Limit Temp", "-8 C"),
        _line(2, "GPU Slowdown T.Limit Temp", "-2 C"),
        _line(2, "GPU Max Operating T.Limit Temp", "0 C"),
        _line(2, "GPU Target Temperature", "N/A"),
        _line(1, "GPU Power Readings"),
        _line(2, "Power Draw", f"{gpu.power_w:.2f} W"),
        *(_line(2, key, f"{gpu.power_limit_w:.2f} W") for key in (
            "Current Power Limit", "Requested Power Limit", "Default Power Limit")),
        _line(2, "Min Power Limit", "200.00 W"),
        _line(2, "Max Power Limit", f"{gpu.power_limit_w:.2f} W"),
        _line(1, "Clocks"),
        _line(2, "Graphics", f"{gpu.sm_clock_mhz} MHz"), _line(2, "SM", f"{gpu.sm_clock_mhz} MHz"),
        _line(2, "Memory", "2619 MHz"), _line(2, "Video", "765 MHz"),
        _line(1, "Max Clocks"),
        _line(2, "Graphics", f"{gpu.max_sm_clock_mhz} MHz"), _line(2, "SM", f"{gpu.max_sm_clock_mhz} MHz"),
        _line(2, "Memory", "2619 MHz"), _line(2, "Video", "1545 MHz"),
        _line(1, "Fabric"), _line(2, "State", "Completed"), _line(2, "Status", "Success"),
    ]
    pids = sorted({qp.pid for nic in node.nics for qp in nic.qps if qp.comm == "python3"})
    if not gpu.util_pct or not pids:
        return [*lines, _line(1, "Processes", "None")]
    return [*lines, _line(1, "Processes"), _line(2, "GPU instance ID", "N/A"), _line(2, "Compute instance ID", "N/A"),
            _line(2, "Process ID", pids[gpu.index % len(pids)]), _line(3, "Type", "C"), _line(3, "Name", "python3"),
            _line(3, "Used GPU Memory", f"{gpu.mem_used_mib} MiB")]


def query(node: NodeView, now: float, ids: list[int] | None = None) -> str:
    """``nvidia-smi -q`` (``-i`` limits it to some GPUs)."""
    stamp = time.strftime("%a %b %d %H:%M:%S %Y", time.gmtime(now))
    out = ["", "==============NVSMI LOG==============", "",
           _line(0, "Timestamp", stamp), _line(0, "Driver Version", node.driver_version),
           _line(0, "CUDA Version", node.cuda_version), "",
           _line(0, "Attached GPUs", len(node.gpus))]
    for gpu in node.gpus:
        if ids is not None and gpu.index not in ids:
            continue
        if gpu.xid_last == OFF_THE_BUS_XID:
            out.append(f"Unable to determine the device handle for GPU{gpu.pci_bus_id}: GPU is lost.  "
                       "Reboot the system to recover this GPU")
            continue
        out += _gpu_block(gpu, node)
    return "".join(line + "\n" for line in out) + "\n"
