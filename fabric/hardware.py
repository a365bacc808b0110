"""What an all-reduce is compared with: published nccl-tests figures per GPU and algorithm, and the bounds.

Why a table: "380 GB/s bus bandwidth" means nothing until it is set against
what the machine does. Two figures, both printed beside a result:

- the **reference** (``allreduce_reference``): what a healthy machine of that
  GPU model reaches with that NCCL algorithm, as NVIDIA's NCCL maintainers
  published it for nccl-tests. An efficiency is measured against it. The line
  rate is not reachable: NVLink carries ~20 % protocol overhead, so an 8 x H100
  node's ring all-reduce peaks at ~370 GB/s bus bandwidth while NVLink SHARP
  (NVLS, NCCL's default on NVSwitch systems since 2.17) reaches ~480 GB/s, more
  than the 450 GB/s per direction, because the switch does the reduction
  (https://github.com/NVIDIA/nccl-tests/issues/212); an 8 x A100 node reaches
  ~230 GB/s (https://github.com/NVIDIA/nccl-tests/issues/149). Across nodes a
  ConnectX-7 at 400 Gb/s carries 48-49 GB/s of NCCL traffic
  (https://github.com/NVIDIA/nccl-tests/issues/267), so the reference is the
  node's NICs at 97 % of line rate, never above the ring's NVLink figure.
- the **theoretical bound** (``allreduce_bound``): the vendors' datasheet line
  rates, which no run reaches; kept to show the headroom.

A site with other parts passes its own table (``HardwareTable``), e.g. from
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
class PublishedAllreduce:
    """One published nccl-tests all-reduce figure: 8 GPUs of one node, one NCCL algorithm."""

    match: str
    """A substring of the GPU name (as ``GpuModel.match``)."""
    algorithm: str
    """NCCL_ALGO: ``NVLS`` (NVLink SHARP) or ``Ring``."""
    busbw_gbytes_s: float
    source: str


PUBLISHED_ALLREDUCE: tuple[PublishedAllreduce, ...] = (
    PublishedAllreduce("H200", "NVLS", 480.0, "as H100 (same NVLink 4 and NVSwitch): "
                                              "https://github.com/NVIDIA/nccl-tests/issues/212"),
    PublishedAllreduce("H200", "Ring", 370.0, "as H100 (same NVLink 4): https://github.com/NVIDIA/nccl-tests/issues/212"),
    PublishedAllreduce("H100", "NVLS", 480.0, "NCCL maintainers, https://github.com/NVIDIA/nccl-tests/issues/212"),
    PublishedAllreduce("H100", "Ring", 370.0, "NCCL maintainers, https://github.com/NVIDIA/nccl-tests/issues/212"),
    PublishedAllreduce("A100", "Ring", 230.0, "NCCL maintainers, https://github.com/NVIDIA/nccl-tests/issues/149"),
)
"""Peak bus bandwidth (GB/s) of healthy 8-GPU nodes; checked in order, ``H200`` before ``H100``."""

NIC_NCCL_SHARE = 0.97
"""Share of a NIC's line rate NCCL traffic reaches: 48-49 GB/s on a 400 Gb/s ConnectX-7
(https://github.com/NVIDIA/nccl-tests/issues/267)."""


@dataclass(frozen=True, slots=True)
class Reference:
    """The bus bandwidth (GB/s) a healthy machine reaches, the algorithm it assumes, and where it comes from."""

    busbw_gbytes_s: float
    algorithm: str
    basis: str


@dataclass(frozen=True, slots=True)
class Theoretical:
    """The bound on bus bandwidth, GB/s, and how it was derived (for the report)."""

    busbw_gbytes_s: float
    basis: str


@dataclass(frozen=True, slots=True)
class HardwareTable:
    gpus: tuple[GpuModel, ...] = GPU_MODELS
    nics: tuple[NicModel, ...] = NIC_MODELS
    published: tuple[PublishedAllreduce, ...] = PUBLISHED_ALLREDUCE
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


    def allreduce_reference(self, gpu_name: str, nodes: int, nic_ca_types: tuple[str, ...] = (),
                            algorithm: str | None = None) -> Reference | None:
        """The published bus bandwidth a healthy run of ``nodes`` nodes reaches (see the module doc).

        ``algorithm``: the NCCL_ALGO the run used; None: NCCL's default (NVLS inside an NVSwitch node where
        a figure is published, else Ring; Ring across nodes). None when no figure is published for the
        GPU (or a NIC of the node is unknown): no made-up reference.
        """
        lowered = gpu_name.lower()
        figures = [p for p in self.published if p.match.lower() in lowered]
        if figures:
            figures = [p for p in figures if p.match == figures[0].match]
        if not figures:
            return None
        wanted = algorithm or ("NVLS" if nodes <= 1 else "Ring")
        chosen = next((p for p in figures if p.algorithm.lower() == wanted.lower()), None)
        if chosen is None and algorithm is None:
            chosen = next((p for p in figures if p.algorithm == "Ring"), None)
        if chosen is None:
            return None
        node_figure = self.overrides.get(f"{chosen.match}/{chosen.algorithm}", chosen.busbw_gbytes_s)
        basis = f"{chosen.match} x8 {chosen.algorithm} {node_figure:g} GB/s ({chosen.source})"
        if nodes <= 1:
            return Reference(node_figure, chosen.algorithm, basis)
        nics = [self.nic(t) for t in nic_ca_types]
        if not nics or any(n is None for n in nics):
            return None
        network = sum(n.line_rate_gbps for n in nics if n is not None) / 8.0 * NIC_NCCL_SHARE
        names = sorted({f"{n.name} {n.line_rate_gbps:g} Gb/s" for n in nics if n is not None})
        net_basis = (f"{len(nics)} x {', '.join(names)} at {NIC_NCCL_SHARE:.0%} of line rate = {network:.0f} GB/s "
                     "(https://github.com/NVIDIA/nccl-tests/issues/267)")
        if node_figure < network:
            return Reference(node_figure, chosen.algorithm, f"{net_basis}, capped by {basis}")
        return Reference(round(network, 1), chosen.algorithm, net_basis)


__all__ = ["GPU_MODELS", "NIC_MODELS", "NIC_NCCL_SHARE", "PUBLISHED_ALLREDUCE", "GpuModel", "HardwareTable", "NicModel",
           "PublishedAllreduce", "Reference", "Theoretical"]
