"""nvidia-smi topo -m: four real layouts (tabs, spaces, ANSI, glued cells, old SOC legend)."""

from __future__ import annotations

from pathlib import Path

from fleet.collectors.parsers.nvidia_smi_topo import NvidiaSmiTopo, parse_nvidia_smi_topo

FIXTURES = Path(__file__).parents[2] / "fixtures" / "nvidia-smi"


def _parse(name: str) -> NvidiaSmiTopo:
    return parse_nvidia_smi_topo((FIXTURES / name).read_text())


def _link(result: NvidiaSmiTopo, src: str, dst: str) -> str:
    return next(link.connection for link in result.links if (link.src, link.dst) == (src, dst))


def test_gb200_ansi_header_and_nic_legend() -> None:
    result = _parse("aiconfigurator-gb200-nvl72-topo-m-ansi-sgr-6nic.txt")
    assert result.problems == () and result.unknown_lines == 0
    assert result.columns == ("GPU0", "GPU1", "GPU2", "GPU3", *(f"NIC{i}" for i in range(6)))
    assert len(result.links) == 100
    assert _link(result, "GPU0", "GPU3") == "NV18"
    nv = next(link for link in result.links if (link.src, link.dst) == ("GPU1", "GPU2"))
    assert nv.nvlinks == 18
    assert _link(result, "GPU2", "NIC0") == "NODE"
    assert _link(result, "NIC5", "NIC5") == "X"
    devices = {d.label: d for d in result.devices}
    assert devices["GPU0"].cpu_affinity == "0-35" and devices["GPU0"].numa_affinity == "0"
    assert devices["GPU0"].gpu_numa_id == "N/A"
    assert devices["GPU2"].cpu_affinity is None and devices["GPU2"].numa_affinity == "1"
    assert devices["NIC3"].device == "mlx5_3" and devices["NIC3"].kind == "nic"
    assert devices["NIC3"].cpu_affinity is None
    assert ("NV#", "Connection traversing a bonded set of # NVLinks") in result.legend


def test_autodl_space_separated() -> None:
    result = _parse("autodl-2080ti-nvidia-smi-topo-m-pix-numa.txt")
    assert result.problems == ()
    assert result.columns == ("GPU0", "GPU1")
    assert _link(result, "GPU0", "GPU1") == "PIX"
    gpu1 = result.devices[1]
    assert (gpu1.cpu_affinity, gpu1.numa_affinity, gpu1.gpu_numa_id) == ("24-47,72-95", "1", "N/A")


def test_b200_glued_cells_are_split_and_reported() -> None:
    result = _parse("nccl-tests-issue333-b200-topo-m-16nic-mangled.txt")
    assert result.unknown_lines == 0
    assert len(result.columns) == 24 and len(result.devices) == 24
    assert len(result.links) == 24 * 24
    # "PXBNODE" in the GPU2 row: NIC8 is PXB, NIC9 NODE (the NIC8 row agrees: GPU2 PXB).
    assert _link(result, "GPU2", "NIC8") == "PXB" and _link(result, "GPU2", "NIC9") == "NODE"
    assert _link(result, "NIC8", "GPU2") == "PXB"
    assert _link(result, "GPU4", "NIC9") == "SYS" and _link(result, "GPU4", "NIC10") == "PXB"
    assert _link(result, "NIC8", "NIC8") == "X" and _link(result, "NIC8", "NIC9") == "NODE"
    glued = [p for p in result.problems if "glued" in p.reason]
    assert sorted(p.line for p in glued) == [4, 6, 7, 8, 9, 18, 20, 21, 22, 23, 24, 25]
    devices = {d.label: d for d in result.devices}
    assert devices["GPU5"].cpu_affinity == "56-111,168-223" and devices["GPU5"].numa_affinity == "1"
    assert devices["NIC15"].device == "mlx5_15"
    # The matrix is symmetric once repaired.
    table = {(link.src, link.dst): link.connection for link in result.links}
    assert all(table[(b, a)] == code for (a, b), code in table.items())


def test_tensorflow_old_soc_layout() -> None:
    result = _parse("tensorflow-gdr-nvidia-smi-topo-m-k40-mlx4-soc.txt")
    assert result.problems == ()
    assert result.columns == ("GPU0", "GPU1", "GPU2", "GPU3", "mlx4_0")
    assert _link(result, "GPU0", "GPU2") == "SOC" and _link(result, "GPU2", "mlx4_0") == "PHB"
    nic = result.devices[-1]
    assert (nic.label, nic.kind, nic.cpu_affinity) == ("mlx4_0", "nic", None)
    assert result.devices[2].cpu_affinity == "6-11"
    assert dict(result.legend)["SOC"].startswith("Connection traversing PCIe as well as the SMP")


def test_wrapped_row_is_joined() -> None:
    text = "\tGPU0\tGPU1\tCPU Affinity\nGPU0\t X \nNV4\t0-7\nGPU1\tNV4\t X \t0-7\n"
    result = parse_nvidia_smi_topo(text)
    assert [(d.label, d.cpu_affinity) for d in result.devices] == [("GPU0", "0-7"), ("GPU1", "0-7")]
    assert any("continuation" in p.reason for p in result.problems)


def test_short_row_gives_a_problem_and_no_links() -> None:
    text = "\tGPU0\tGPU1\tGPU2\nGPU0\t X \tNV4\nGPU1\tNV4\t X \tNV4\n"
    result = parse_nvidia_smi_topo(text)
    assert [d.label for d in result.devices] == ["GPU1"]
    assert {link.src for link in result.links} == {"GPU1"}
    assert any("expected 3" in p.reason for p in result.problems)


def test_another_tools_output() -> None:
    text = (FIXTURES / "hpe-dl380a-h100pcie-nvlink-s-bridge-inactive.txt").read_text()
    result = parse_nvidia_smi_topo(text)
    assert result.devices == () and result.links == ()
    assert result.unknown_lines == len(text.splitlines())


def test_newer_driver_with_an_extra_column() -> None:
    text = (
        "\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\tC2C Link\n"
        "GPU0\t X \tNV18\tPIX\t0-71\t0\t\t4\tyes\n"
        "GPU1\tNV18\t X \tSYS\t72-143\t1\t\t12\tyes\n"
        "NIC0\tPIX\tSYS\t X \n"
        "\nNIC Legend:\n\n  NIC0: mlx5_0\n"
    )
    result = parse_nvidia_smi_topo(text)
    assert result.problems == ()
    assert result.columns == ("GPU0", "GPU1", "NIC0")
    gpu1 = result.devices[1]
    assert (gpu1.cpu_affinity, gpu1.numa_affinity, gpu1.gpu_numa_id) == ("72-143", "1", "12")
    assert dict(gpu1.attributes)["C2C Link"] == "yes"
    assert result.devices[2].device == "mlx5_0" and result.devices[2].attributes == ()
