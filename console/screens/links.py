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
from textual.widgets import DataTable, Static

from fleet.console.report_interconnect import EP_HEADERS, HEADERS, ep_rows, interconnect_rows
from fleet.console.screens.base import FleetScreenBase, fixed_columns
from fleet.console.screens.baselines import stored_baselines
from fleet.fabric.interconnect import InterconnectView, from_baseline, from_probes

PROBE_KINDS = ("allreduce", "alltoall", "bw", "ep")
PROBES_READ = 2000
"""Newest probes of each kind looked at: enough for a single-node run of every node of a large fleet."""
NVLINK_METRICS = ("gpu_nvlink_crc_errors", "gpu_nvlink_replay_errors", "gpu_nvlink_recovery_errors")


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
        yield DataTable(id="links-table", cursor_type="row")
        yield DataTable(id="links-ep", cursor_type="row")

    def build(self) -> None:
        fixed_columns(self.query_one("#links-table", DataTable), *((h, w) for h, w in zip(
            HEADERS, (12, 27, 27, 8, 30, 30, 44), strict=True)))
        fixed_columns(self.query_one("#links-ep", DataTable), *((h, 22) for h in EP_HEADERS))
        self.query_one("#links-table", DataTable).focus()
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
        table, ep = self.query_one("#links-table", DataTable), self.query_one("#links-ep", DataTable)
        table.clear()
        ep.clear()
        source = self.query_one("#links-source", Static)
        other = "b: the newest probes" if self.from_baseline else "b: the newest baseline"
        if shown is None:
            source.update(Text(f"no baseline stored yet: run `fleet baseline take` ({other})"))
            return
        source.update(Text(f"from the {shown.source}; each cell measured / theoretical = ratio ({other})"))
        data = shown.to_json()
        for row in interconnect_rows(data):
            table.add_row(*(Text(cell) for cell in row))
        for row in ep_rows(data):
            ep.add_row(*(Text(cell) for cell in row))
        ep.display = bool(ep.row_count)


__all__ = ["LinksScreen", "read_probe_view"]
