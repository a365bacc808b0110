"""NVLink beside the network: each bandwidth against its theoretical value, per node and across nodes.

Why one view: inside a node GPUs talk over NVLink (hundreds of GB/s each),
between nodes over RDMA NICs (tens of GB/s each); a slow job can be either, and
the figures the operators' acceptance and monthly baselines track are the
ratios, measured over theoretical. The view sets them side by side:

- per node, NVLink: the single-node all-reduce (against its published
  reference, ``fleet.fabric.hardware``) and all-to-all (against NVLink's line
  rate, ``fleet.fabric.alltoall``), and the NVLink error counters (CRC,
  replay and recovery errors of its GPUs); RDMA: the node's slowest NIC's
  perftest bandwidth against the rate the fleet's NICs train at (the fastest
  trained rate seen: a NIC that came up at 100G on a 400G fabric is a quarter);
- across nodes, RDMA: the all-reduce and the all-to-all over every node,
  against the NICs' (and for all-to-all the fabric's bisection) figure, and
  the NICs' perftest bandwidth (median and slowest) against their rate; the
  expert-parallel kernels' RDMA and NVLink figures where they ran.

Built from a baseline (the reports) or from the newest stored probes (the
console). Bandwidth in GB/s (1e9 bytes/s) for collectives, Gb/s for NICs, as
their tools print them; a ratio is unitless. Pure: no I/O.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fleet.fabric.baseline import Baseline, split_part
from fleet.fabric.records import ProbeRecord


@dataclass(frozen=True, slots=True)
class Figure:
    """A measured bandwidth and the theoretical value it is judged against, in one unit."""

    measured: float | None
    theoretical: float | None
    unit: str = "GB/s"
    where: str = ""
    """Which part the figure is (the slowest NIC's name, the nodes of a collective)."""

    @property
    def ratio(self) -> float | None:
        if self.measured is None or not self.theoretical:
            return None
        return self.measured / self.theoretical

    def to_json(self) -> dict[str, Any]:
        return {"measured": self.measured, "theoretical": self.theoretical, "ratio": self.ratio, "unit": self.unit,
                "where": self.where}


NONE = Figure(None, None)


@dataclass(frozen=True, slots=True)
class NodeLinks:
    node: str
    nvlink_allreduce: Figure
    nvlink_alltoall: Figure
    nvlink_errors: float | None
    rdma_nic: Figure
    """The node's slowest NIC: perftest bandwidth against its trained rate, Gb/s."""

    def to_json(self) -> dict[str, Any]:
        return {"node": self.node, "nvlink_allreduce": self.nvlink_allreduce.to_json(),
                "nvlink_alltoall": self.nvlink_alltoall.to_json(), "nvlink_errors": self.nvlink_errors,
                "rdma_nic": self.rdma_nic.to_json()}


@dataclass(frozen=True, slots=True)
class FleetLinks:
    rdma_allreduce: Figure
    rdma_alltoall: Figure
    rdma_nic_median: Figure
    rdma_nic_slowest: Figure
    ep: Mapping[str, tuple[float | None, float | None]]
    """Expert-parallel kernel -> (RDMA GB/s, NVLink GB/s); empty when the benchmark did not run."""

    def to_json(self) -> dict[str, Any]:
        return {"rdma_allreduce": self.rdma_allreduce.to_json(), "rdma_alltoall": self.rdma_alltoall.to_json(),
                "rdma_nic_median": self.rdma_nic_median.to_json(),
                "rdma_nic_slowest": self.rdma_nic_slowest.to_json(),
                "ep": {name: {"rdma_gbytes_s": rdma, "nvl_gbytes_s": nvl} for name, (rdma, nvl) in self.ep.items()}}


@dataclass(frozen=True, slots=True)
class InterconnectView:
    nodes: tuple[NodeLinks, ...]
    fleet: FleetLinks
    source: str
    """Where the numbers come from: ``baseline <label>`` or ``newest probes``."""

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "nodes": [n.to_json() for n in self.nodes], "fleet": self.fleet.to_json()}


def _theoretical(measured: float | None, efficiency: float | None, stated: float | None) -> float | None:
    """The figure an efficiency was taken against: stated, else measured / efficiency."""
    if stated is not None:
        return stated
    if measured is not None and efficiency:
        return measured / efficiency
    return None


def _collective(metrics: Mapping[str, float], kind: str, stated_key: str) -> Figure:
    measured = metrics.get(f"{kind}_busbw_gbytes_s")
    return Figure(measured, _theoretical(measured, metrics.get(f"{kind}_efficiency"), metrics.get(stated_key)))


def _nic_figures(nics: Mapping[str, tuple[float | None, float | None]], design_gbps: float | None) -> list[Figure]:
    """``node mlx5_N`` -> (perftest Gb/s, trained rate Gb/s) as figures against ``design_gbps``: the rate the
    fleet's NICs train at (the fastest seen), so a NIC that trained slow shows as slow, not as full."""
    return [Figure(bw, design_gbps, "Gb/s", name) for name, (bw, _rate) in sorted(nics.items())
            if bw is not None and design_gbps]


def _design(nics: Mapping[str, Mapping[str, tuple[float | None, float | None]]]) -> float | None:
    rates = [rate for per_node in nics.values() for _bw, rate in per_node.values() if rate]
    return max(rates) if rates else None


def _slowest(figures: Sequence[Figure]) -> Figure:
    return min(figures, key=lambda f: f.ratio or 0.0) if figures else Figure(None, None, "Gb/s")


def _median(figures: Sequence[Figure]) -> Figure:
    if not figures:
        return Figure(None, None, "Gb/s")
    return Figure(statistics.median(f.measured or 0.0 for f in figures),
                  statistics.median(f.theoretical or 0.0 for f in figures), "Gb/s", f"{len(figures)} NICs")


def from_baseline(baseline: Baseline) -> InterconnectView:
    """The view of what one run of the standard suite measured (``fleet.fabric.baseline`` parts)."""
    nics: dict[str, dict[str, tuple[float | None, float | None]]] = {}
    for part, metrics in baseline.parts.items():
        kind, names = split_part(part)
        if kind == "nic" and len(names) == 2:
            nics.setdefault(names[0], {})[f"{names[0]} {names[1]}"] = (metrics.get("bw_avg_gbps"),
                                                                       metrics.get("rate_gbps"))
    design = _design(nics)
    rows = []
    for node in baseline.shape.nodes:
        metrics = baseline.parts.get(f"node/{node}", {})
        rows.append(NodeLinks(node, _collective(metrics, "allreduce", "allreduce_reference_gbytes_s"),
                              _collective(metrics, "alltoall", "alltoall_theoretical_gbytes_s"),
                              metrics.get("nvlink_errors"), _slowest(_nic_figures(nics.get(node, {}), design))))
    every = _nic_figures({name: value for per_node in nics.values() for name, value in per_node.items()}, design)
    reached = len([n for n in baseline.shape.nodes if n not in baseline.unreachable])
    ep = baseline.parts.get("fleet/ep", {})
    kernels = {name: (ep.get(f"ep_{name}_rdma_gbytes_s"), ep.get(f"ep_{name}_nvl_gbytes_s"))
               for name in ("dispatch_fp8", "dispatch_bf16", "combine") if f"ep_{name}_rdma_gbytes_s" in ep}
    fleet = FleetLinks(
        _with_where(_collective(baseline.parts.get("fleet/allreduce", {}), "allreduce", "allreduce_reference_gbytes_s"),
                    f"{reached} nodes"),
        _with_where(_collective(baseline.parts.get("fleet/alltoall", {}), "alltoall", "alltoall_theoretical_gbytes_s"),
                    f"{reached} nodes"),
        _median(every), _slowest(every), kernels)
    return InterconnectView(tuple(rows), fleet, f"baseline {baseline.label}")


def _with_where(figure: Figure, where: str) -> Figure:
    return Figure(figure.measured, figure.theoretical, figure.unit, where if figure.measured is not None else "")


def _number(record: ProbeRecord, key: str) -> float | None:
    value = record.result.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _probe_figure(record: ProbeRecord | None, theoretical_key: str) -> Figure:
    if record is None:
        return NONE
    nodes = record.params.get("nodes") or [record.src]
    return Figure(_number(record, "peak_busbw_gbytes_s"), _number(record, theoretical_key),
                  where=f"{len(nodes)} nodes" if len(nodes) > 1 else "")


def from_probes(nodes: Sequence[str], records: Sequence[ProbeRecord], nvlink_errors: Mapping[str, float],
                nic_rates_gbps: Mapping[tuple[str, str], float]) -> InterconnectView:
    """The view of the newest successful probes of each kind (``records`` newest first, as the store lists
    them): per node its single-node all-reduce and all-to-all and its NICs' bandwidth probes, across nodes
    the newest all-reduce and all-to-all over more than one node. ``nic_rates_gbps``: (node, NIC) -> trained
    rate (the fastest is the NICs' design rate); ``nvlink_errors``: node -> its GPUs' NVLink error count."""
    single: dict[tuple[str, str], ProbeRecord] = {}
    across: dict[str, ProbeRecord] = {}
    nic_bw: dict[tuple[str, str], float] = {}
    ep: ProbeRecord | None = None
    for record in records:
        if not record.ok:
            continue
        members = record.params.get("nodes") or [record.src]
        if record.kind in ("allreduce", "alltoall"):
            if len(members) == 1:
                single.setdefault((record.kind, members[0]), record)
            else:
                across.setdefault(record.kind, record)
        elif record.kind == "bw" and _number(record, "bw_avg_gbps") is not None:
            for node, nic in ((record.src, record.src_nic), (record.dst, record.dst_nic or record.src_nic)):
                nic_bw.setdefault((node, nic), _number(record, "bw_avg_gbps") or 0.0)
        elif record.kind == "ep" and ep is None:
            ep = record
    nics: dict[str, dict[str, tuple[float | None, float | None]]] = {}
    for (node, nic), gbps in nic_bw.items():
        nics.setdefault(node, {})[f"{node} {nic}"] = (gbps, nic_rates_gbps.get((node, nic)))
    design = _design(nics) or (max(nic_rates_gbps.values()) if nic_rates_gbps else None)
    rows = tuple(NodeLinks(node, _probe_figure(single.get(("allreduce", node)), "reference_busbw_gbytes_s"),
                           _probe_figure(single.get(("alltoall", node)), "theoretical_busbw_gbytes_s"),
                           nvlink_errors.get(node), _slowest(_nic_figures(nics.get(node, {}), design)))
                 for node in nodes)
    every = _nic_figures({name: value for per_node in nics.values() for name, value in per_node.items()}, design)
    kernels = {}
    if ep is not None:
        kernels = {name: (_number(ep, f"{name}_rdma_gbytes_s"), _number(ep, f"{name}_nvl_gbytes_s"))
                   for name in ("dispatch_fp8", "dispatch_bf16", "combine")}
    fleet = FleetLinks(_probe_figure(across.get("allreduce"), "reference_busbw_gbytes_s"),
                       _probe_figure(across.get("alltoall"), "theoretical_busbw_gbytes_s"),
                       _median(every), _slowest(every), kernels)
    return InterconnectView(rows, fleet, "newest probes")


__all__ = ["Figure", "FleetLinks", "InterconnectView", "NodeLinks", "from_baseline", "from_probes"]
