"""The hardware's theoretical figures an all-reduce is compared with, per GPU and NIC model.

Why a table: "380 GB/s bus bandwidth" means nothing until it is set against
what the machine could do. The figures are the vendors' published numbers;
a site with other parts passes its own table (``HardwareTable``), e.g. from
the config file.

Bus bandwidth (nccl-tests' ``busbw``, GB/s = 1e9 bytes/s) is what each rank
sends per second, so the bounds are:

- inside one node: the GPU's NVLink bandwidth in one direction (all-reduce
  over NVLink cannot send faster than each GPU's links);
- across nodes: a ring per NIC passes through every rank, each ring is held to
  one NIC's line rate, so the node's NICs together bound it:
  ``NICs per node x line rate (Gb/s) / 8``, and never above the NVLink figure.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class GpuModel:
    """``match``: a substring of the name nvidia-smi / nccl-tests print (case-insensitive)."""

    match: str
    nvlink_gbytes_s: float
    """NVLink bandwidth per GPU in ONE direction, GB/s (the datasheets quote both directions)."""
    source: str


@dataclass(frozen=True, slots=True)
class NicModel:
    """``ca_type``: the PCI device id ibstat prints as ``CA type`` (``MT4129``)."""

    ca_type: str
    name: str
    line_rate_gbps: float
    """Per port, Gbit/s (1e9 bit/s)."""
    source: str


GPU_MODELS: tuple[GpuModel, ...] = (
    GpuModel("GB200", 900.0, "NVIDIA GB200 NVL72 datasheet: NVLink 5, 1.8 TB/s per GPU (both directions)"),
    GpuModel("B200", 900.0, "NVIDIA DGX B200 datasheet: NVLink 5, 1.8 TB/s per GPU (both directions)"),
    GpuModel("H200", 450.0, "NVIDIA H200 datasheet: NVLink 900 GB/s per GPU (both directions)"),
    GpuModel("H100", 450.0, "NVIDIA H100 Tensor Core GPU datasheet: SXM NVLink 900 GB/s (both directions)"),
    GpuModel("H800", 200.0, "NVIDIA H800 SXM: NVLink 400 GB/s (both directions), export variant of H100"),
    GpuModel("A100", 300.0, "NVIDIA A100 datasheet: SXM NVLink 600 GB/s (both directions)"),
    GpuModel("A800", 200.0, "NVIDIA A800 SXM: NVLink 400 GB/s (both directions), export variant of A100"),
    GpuModel("V100", 150.0, "NVIDIA V100 datasheet: SXM2 NVLink 300 GB/s (both directions)"),
)  # fmt: skip
"""Checked in order: ``GB200`` before ``B200``, ``H200`` before ``H100`` (substring match)."""

NIC_MODELS: tuple[NicModel, ...] = (
    NicModel("MT4131", "ConnectX-8", 800.0, "NVIDIA ConnectX-8 SuperNIC product brief: up to 800 Gb/s"),
    NicModel("MT41692", "BlueField-3", 400.0, "NVIDIA BlueField-3 DPU datasheet: up to 400 Gb/s"),
    NicModel("MT4129", "ConnectX-7", 400.0, "NVIDIA ConnectX-7 datasheet: up to 400 Gb/s (NDR / 400GbE)"),
    NicModel("MT4125", "ConnectX-6 Dx", 200.0, "NVIDIA ConnectX-6 Dx datasheet: up to 200 GbE"),
    NicModel("MT4123", "ConnectX-6", 200.0, "NVIDIA ConnectX-6 VPI datasheet: HDR 200 Gb/s"),
    NicModel("MT4119", "ConnectX-5", 100.0, "NVIDIA ConnectX-5 VPI datasheet: EDR 100 Gb/s"),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Theoretical:
    """The bound on bus bandwidth, GB/s, and how it was derived (for the report)."""

    busbw_gbytes_s: float
    basis: str


@dataclass(frozen=True, slots=True)
class HardwareTable:
    gpus: tuple[GpuModel, ...] = GPU_MODELS
    nics: tuple[NicModel, ...] = NIC_MODELS
    overrides: Mapping[str, float] = field(default_factory=dict)
    """Per model key (a GPU ``match`` or NIC ``ca_type``): a site's own figure, same unit."""

    def gpu(self, name: str) -> GpuModel | None:
        """The GPU model whose ``match`` is in ``name`` (None when unknown)."""
        lowered = name.lower()
        for model in self.gpus:
            if model.match.lower() in lowered:
                value = self.overrides.get(model.match, model.nvlink_gbytes_s)
                return GpuModel(model.match, value, model.source if value == model.nvlink_gbytes_s else "site override")
        return None

    def nic(self, ca_type: str) -> NicModel | None:
        for model in self.nics:
            if model.ca_type.lower() == ca_type.strip().lower():
                value = self.overrides.get(model.ca_type, model.line_rate_gbps)
                source = model.source if value == model.line_rate_gbps else "site override"
                return NicModel(model.ca_type, model.name, value, source)
        return None

    def allreduce_bound(self, gpu_name: str, nodes: int, nic_ca_types: tuple[str, ...] = ()) -> Theoretical | None:
        """Theoretical all-reduce bus bandwidth for ``nodes`` nodes of ``gpu_name`` GPUs.

        ``nic_ca_types``: one entry per RDMA NIC of a node (needed when ``nodes`` > 1).
        None when a model is unknown: no made-up figure.
        """
        gpu = self.gpu(gpu_name)
        if gpu is None:
            return None
        if nodes <= 1:
            return Theoretical(gpu.nvlink_gbytes_s, f"{gpu.match} NVLink {gpu.nvlink_gbytes_s:g} GB/s per direction "
                                                    f"({gpu.source})")
        nics = [self.nic(t) for t in nic_ca_types]
        if not nics or any(n is None for n in nics):
            return None
        network = sum(n.line_rate_gbps for n in nics if n is not None) / 8.0
        names = sorted({f"{n.name} {n.line_rate_gbps:g} Gb/s" for n in nics if n is not None})
        basis = f"{len(nics)} x {', '.join(names)} per node = {network:g} GB/s"
        if gpu.nvlink_gbytes_s < network:
            return Theoretical(gpu.nvlink_gbytes_s, f"{basis}, capped by {gpu.match} NVLink {gpu.nvlink_gbytes_s:g} GB/s")
        return Theoretical(network, basis)


__all__ = ["GPU_MODELS", "NIC_MODELS", "GpuModel", "HardwareTable", "NicModel", "Theoretical"]
