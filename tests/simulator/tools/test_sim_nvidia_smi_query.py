"""``nvidia-smi -q`` from the simulator has the layout of a real H100 capture, and says what the model knows."""

from __future__ import annotations

import re

from builders_gpu import fixture, make_node, node_ctx

from fleet.simulator.state import NodeView
from fleet.simulator.tools import ToolOutput
from fleet.simulator.tools.nvidia_smi import nvidia_smi
from fleet.simulator.tools.nvidia_smi_query import KEY_WIDTH


def run(*args: str, node: NodeView) -> ToolOutput:
    return nvidia_smi(node_ctx(node), ["nvidia-smi", *args])


CAPTURE = fixture("nvidia-smi", "gpud-nvidia-smi-q-h100-535.161.08-gpu0-fragment.txt")


def keys(text: str) -> list[str]:
    """Every key and section header, indent included, in order."""
    return [line.partition(" : ")[0].rstrip() if " : " in line else line.rstrip()
            for line in text.splitlines() if line.strip()]


def test_the_report_follows_the_real_tools_layout() -> None:
    out = run("-q", node=make_node()).stdout
    assert out.startswith("\n==============NVSMI LOG==============\n\nTimestamp")
    real, ours = keys(CAPTURE), keys(out)
    assert all(key in real for key in ours if not key.startswith(("GPU 0000", "Timestamp", "Attached",
                                                                   "    Processes", "        ", "            ")))
    assert [k for k in ours if k in real][:12] == [k for k in real if k in ours][:12]  # the same order
    colons = {line.index(" : ") + 1 for line in out.splitlines() if " : " in line}
    assert colons == {KEY_WIDTH} == {line.index(" : ") + 1 for line in CAPTURE.splitlines() if " : " in line}


def test_the_report_carries_the_models_numbers() -> None:
    node = make_node()
    out = run("-q", "-i", "1", node=node).stdout
    gpu = node.gpus[1]
    assert re.search(rf"^GPU {re.escape(gpu.pci_bus_id)}$", out, re.M)
    assert f"    GPU UUID                              : {gpu.uuid}\n" in out
    assert f"        GPU Current Temp                  : {gpu.temp_c} C\n" in out
    assert f"        Replays Since Reset               : {gpu.pcie_replay}\n" in out
    assert out.count("\nGPU 0000") == 1
    assert run("-q", "-i", "9", node=node).exit_status == 6
