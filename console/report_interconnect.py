"""The NVLink-beside-network table of a report and of the console's Links screen, as plain cells.

One row per node (its NVLink figures and its slowest NIC) and one across every
node (the collectives over RDMA, the NICs' median), each cell ``measured /
theoretical unit = ratio``: the ratio is what an acceptance check or a monthly
baseline tracks (``fleet.fabric.interconnect``). The HTML and Markdown reports
escape the cells as they escape every other cell.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

HEADERS = ("where", "NVLink all-reduce", "NVLink all-to-all", "NVLink errors", "RDMA all-reduce", "RDMA all-to-all",
           "RDMA NIC (perftest)")
EP_HEADERS = ("expert-parallel kernel", "RDMA GB/s", "NVLink GB/s")


def figure_cell(figure: Mapping[str, Any] | None) -> str:
    """``370 / 480 GB/s = 77 %``, ``370 GB/s`` without a theoretical value, ``-`` when not measured."""
    if not figure or figure.get("measured") is None:
        return "-"
    measured, theoretical, unit = figure["measured"], figure.get("theoretical"), figure.get("unit", "GB/s")
    where = f" ({figure['where']})" if figure.get("where") else ""
    if not theoretical:
        return f"{measured:.1f} {unit}{where}"
    return f"{measured:.1f} / {theoretical:.1f} {unit} = {100 * measured / theoretical:.0f} %{where}"


def interconnect_rows(view: Mapping[str, Any]) -> list[list[str]]:
    """The table's rows: every node, then ``across nodes``."""
    rows = []
    for node in view.get("nodes", []):
        errors = node.get("nvlink_errors")
        rows.append([node["node"], figure_cell(node.get("nvlink_allreduce")), figure_cell(node.get("nvlink_alltoall")),
                     "-" if errors is None else f"{errors:.0f}", "-", "-", figure_cell(node.get("rdma_nic"))])
    fleet = view.get("fleet", {})
    slowest = fleet.get("rdma_nic_slowest") or {}
    nic = figure_cell(fleet.get("rdma_nic_median"))
    if slowest.get("measured") is not None:
        nic = f"median {nic}; slowest {figure_cell(slowest)}"
    rows.append(["across nodes", "-", "-", "-", figure_cell(fleet.get("rdma_allreduce")),
                 figure_cell(fleet.get("rdma_alltoall")), nic])
    return rows


def ep_rows(view: Mapping[str, Any]) -> list[list[str]]:
    """The expert-parallel kernels' figures; none when the benchmark did not run."""
    kernels = view.get("fleet", {}).get("ep", {})
    return [[name, "-" if v.get("rdma_gbytes_s") is None else f"{v['rdma_gbytes_s']:.1f}",
             "-" if v.get("nvl_gbytes_s") is None else f"{v['nvl_gbytes_s']:.1f}"] for name, v in kernels.items()]


__all__ = ["EP_HEADERS", "HEADERS", "ep_rows", "figure_cell", "interconnect_rows"]
