"""`N`: NVLink beside the network, per node and across nodes, each figure against its theoretical value.

Per node its NVLink figures (single-node all-reduce and all-to-all, the NVLink
error count of its GPUs) beside its slowest NIC's perftest bandwidth; across
nodes the all-reduce, the all-to-all and the NICs over RDMA
(``fleet.fabric.interconnect``, the same cells as the reports draw). The
numbers are the newest stored probes (``a``, ``x``, ``b`` on the other
screens, ``fleet allreduce|alltoall|bw|ep-bench``) with the NVLink counters and
trained rates of the newest samples; ``b`` switches to the newest baseline
(what the acceptance and the monthly baseline measured). Node names are
``Text``.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Static

from fleet.console.report_interconnect import EP_HEADERS, HEADERS, ep_rows, interconnect_rows
from fleet.console.screens.base import FleetScreenBase
from fleet.console.screens.baselines import stored_baselines
from fleet.console.widgets.fit_table import Col, FitTable
from fleet.fabric.interconnect import InterconnectView, from_baseline, from_probes

PROBE_KINDS = ("allreduce", "alltoall", "bw", "ep")
PROBES_READ = 2000
"""Newest probes of each kind looked at: enough for a single-node run of every node of a large fleet."""
NVLINK_METRICS = ("gpu_nvlink_crc_errors", "gpu_nvlink_replay_errors", "gpu_nvlink_recovery_errors")

LINK_COLUMNS = tuple(
    Col(key, label, width, priority, flex=key == "rdma_nic")
    for (key, width, priority), label in zip(
        (("where", 12, 0), ("nvlink_allreduce", 25, 0), ("nvlink_alltoall", 25, 5), ("nvlink_errors", 13, 3),
         ("rdma_allreduce", 34, 2), ("rdma_alltoall", 34, 4), ("rdma_nic", 25, 1)),
        HEADERS, strict=True))
"""The node's NVLink beside its NICs stays at 80 columns (the NIC's perftest figure takes the width
left); at 120 the NVLink errors and the all-reduce over RDMA across nodes join them; the all-to-alls
join last, the RDMA one before NVLink's. A figure ``measured / theoretical = ratio`` is 25 cells,
34 with the nodes it ran across."""
EP_COLUMNS = tuple(Col(key, label, width) for key, label, width in zip(
    ("kernel", "rdma", "nvlink"), EP_HEADERS, (22, 11, 11), strict=True))
"""The expert-parallel kernels: three short columns, drawn at every width."""


def read_probe_view(reader: Any, nodes: list[str]) -> InterconnectView:
    """The view of the newest probes, NVLink counters and trained rates the store holds."""
    records = [r for kind in PROBE_KINDS for r in reader.probes(kind=kind, limit=PROBES_READ)]
    records.sort(key=lambda r: r.ts, reverse=True)
    errors: dict[str, float] = {}
    rates: dict[tuple[str, str], float] = {}
    for point in reader.latest(hosts=nodes or None, metrics=[*NVLINK_METRICS, "rate_gbps"]):
        if point.metric == "rate_gbps":
            rates[(point.host, point.device)] = point.value
        else:
            errors[point.host] = errors.get(point.host, 0.0) + point.value
    return from_probes(nodes, records, errors, rates)


class LinksScreen(FleetScreenBase):
    TITLE_TEXT = "NVLink vs network"
    DEFAULT_CSS = """
    #links-source { height: 1; padding: 0 1; background: $surface; }
    #links-table { height: 1fr; }
    #links-ep { height: auto; max-height: 6; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("b", "toggle_source", "Baseline/probes", id="links.source"),
        Binding("r", "reload", "Reload", id="links.reload"),
        Binding("escape", "back", "Back", id="links.back"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.from_baseline = False
        """Show the newest baseline's view instead of the newest probes'."""
        self.shown: InterconnectView | None = None
        self.loaded = asyncio.Event()

    def compose_body(self) -> ComposeResult:
        yield Static(id="links-source")
        yield FitTable(LINK_COLUMNS, id="links-table")
        yield FitTable(EP_COLUMNS, id="links-ep")

    def build(self) -> None:
        self.query_one("#links-table", FitTable).focus()
        self.load()

    def action_toggle_source(self) -> None:
        self.from_baseline = not self.from_baseline
        self.load()

    def action_reload(self) -> None:
        self.load()

    def action_back(self) -> None:
        self.app.pop_screen()

    @work(group="links", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        self.loaded.clear()
        app = self.fleet_app
        view = app.view
        nodes = sorted(r.name for r in view.rows) if view is not None else []
        shown: InterconnectView | None
        if self.from_baseline:
            found = await asyncio.to_thread(stored_baselines, app.config.db_path)
            shown = from_baseline(found[-1]) if found else None
        else:
            shown = await app.feed.read(lambda reader: read_probe_view(reader, nodes))
        self.shown = shown
        self._fill(shown)
        self.loaded.set()

    def _fill(self, shown: InterconnectView | None) -> None:
        table, ep = self.query_one("#links-table", FitTable), self.query_one("#links-ep", FitTable)
        source = self.query_one("#links-source", Static)
        other = "b: the newest probes" if self.from_baseline else "b: the newest baseline"
        if shown is None:
            source.update(Text(f"no baseline stored yet: run `fleet baseline take` ({other})"))
            table.fill([])
            ep.fill([])
            ep.display = False
            return
        source.update(Text(f"from the {shown.source}; each cell measured / theoretical = ratio ({other})"))
        data = shown.to_json()
        table.fill([[Text(cell) for cell in row] for row in interconnect_rows(data)])
        kernels = ep_rows(data)
        ep.fill([[Text(cell) for cell in row] for row in kernels])
        ep.display = bool(kernels)


__all__ = ["LinksScreen", "read_probe_view"]
