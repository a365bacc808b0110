"""The Jobs screen: running Slurm jobs and tenants, their nodes' health, throughput, GPU use,
and per-job probe latency p50/p99 over the last hour. Choosing a job highlights its nodes."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import DataTable

from fleet.console.formatting import fit_number, number
from fleet.console.messages import JobChosen
from fleet.console.screens.base import FleetScreenBase
from fleet.console.screens.probe_keys import ProbeKeys
from fleet.console.view_model import ConsoleView
from fleet.console.widgets.fit_table import Col, FitTable
from fleet.console.widgets.plot import PlotData, PlotSeries, PlotWidget
from fleet.console.widgets.probe_panel import ProbePanel

JOB_COLUMNS = (
    Col("job", "job", 8), Col("name", "name", 20, 3), Col("user", "user", 10, 4), Col("tenant", "tenant", 10),
    Col("state", "state", 9, 5), Col("nodes", "nodes", 5), Col("nodelist", "nodelist", 16, 2, flex=True),
    Col("rx", "rx Gb/s", 9, 6), Col("tx", "tx Gb/s", 9, 1), Col("gpu", "GPU %", 5, 2), Col("degraded", "degraded", 8),
)
TENANT_COLUMNS = (
    Col("tenant", "tenant", 10), Col("jobs", "jobs", 4, 2), Col("nodes", "nodes", 5, 2), Col("tx", "tx Gb/s", 9, 1),
    Col("gpu", "GPU %", 5, 3), Col("degraded", "degraded", 8),
)
LATENCY_WINDOW_S = 3600.0
LATENCY_BUCKET_S = 60.0


class JobsScreen(ProbeKeys, FleetScreenBase):
    TITLE_TEXT = "Jobs"
    SCREEN_KEY = "app.jobs"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f", "show_on_fleet", "Show on Fleet", id="jobs.show_on_fleet"),
        Binding("c", "clear_highlight", "Clear highlight", id="jobs.clear_highlight"),
        Binding("a", "allreduce", "All-reduce", id="jobs.allreduce"),
        Binding("x", "alltoall", "All-to-all", id="jobs.alltoall"),
    ]

    def compose_body(self) -> ComposeResult:
        yield ProbePanel(id="probe-panel")
        yield FitTable(JOB_COLUMNS, id="jobs-table")
        with Horizontal(id="jobs-bottom"):
            yield FitTable(TENANT_COLUMNS, id="tenants-table")
            yield PlotWidget(PlotData("job latency", "usec",
                                      empty="choose a job (enter) to plot its probes' latency"), id="job-latency")

    def build(self) -> None:
        self.query_one("#jobs-table", DataTable).focus()

    def show_view(self, view: ConsoleView) -> None:
        v = self.app.theme_variables
        highlighted = self.fleet_app.highlighted_nodes
        self.query_one("#jobs-table", FitTable).fill(
            [(Text(j.job_id, style="bold" if highlighted and set(j.nodes) == highlighted else ""),
              Text(j.name), Text(j.user), Text(j.account), Text(j.state), Text(str(len(j.nodes))),
              Text(j.nodelist), Text(fit_number(j.rx_gbps, 9)), Text(fit_number(j.tx_gbps, 9)),
              Text(number(j.gpu_util_pct, 0)),
              Text(str(j.degraded_nodes) if j.degraded_nodes else "", style=v.get("health-degraded", "")))
             for j in view.jobs],
            [j.job_id for j in view.jobs])
        self.query_one("#tenants-table", FitTable).fill(
            [(Text(t.account), Text(str(t.jobs)), Text(str(t.nodes)), Text(fit_number(t.tx_gbps, 9)),
              Text(number(t.gpu_util_pct, 0)),
              Text(str(t.degraded_nodes) if t.degraded_nodes else "", style=v.get("health-degraded", "")))
             for t in view.tenants])

    def _current_job(self) -> str | None:
        table = self.query_one("#jobs-table", DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return str(key) if key is not None else None

    def probe_nodes(self) -> tuple[str, ...]:
        """The nodes of the job under the cursor (``a`` runs the all-reduce over them, ``x`` the all-to-all)."""
        view, job_id = self.fleet_app.view, self._current_job()
        job = next((j for j in view.jobs if j.job_id == job_id), None) if view is not None else None
        return tuple(job.nodes) if job is not None else ()

    @on(DataTable.RowSelected, "#jobs-table")
    def _chosen(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is None:
            return
        job_id = str(event.row_key.value)
        self.post_message(JobChosen(job_id))
        view = self.fleet_app.view
        moment = view.snapshot.moment_ts if view is not None else self.fleet_app.feed.now()
        self.load_latency(job_id, moment)

    async def action_show_on_fleet(self) -> None:
        job_id = self._current_job()
        if job_id is not None:
            self.post_message(JobChosen(job_id))
            await self.app.run_action("goto('fleet')")

    def action_clear_highlight(self) -> None:
        self.fleet_app.highlighted_nodes = frozenset()

    @work(group="job-latency", exclusive=True, exit_on_error=False)
    async def load_latency(self, job_id: str, moment: float) -> None:
        def read(reader: Any) -> list[tuple[float, float, float]]:
            return list(reader.job_latency(job_id, moment - LATENCY_WINDOW_S, moment, LATENCY_BUCKET_S))

        buckets = await self.fleet_app.feed.read(read)
        x = tuple((ts - moment) / 60.0 for ts, _p50, _p99 in buckets)
        self.query_one("#job-latency", PlotWidget).show(PlotData(
            f"job {job_id} latency", "usec",
            (PlotSeries("p50", x, tuple(p50 for _ts, p50, _p99 in buckets)),
             PlotSeries("p99", x, tuple(p99 for _ts, _p50, p99 in buckets))) if buckets else (),
            empty=f"no latency probe inside job {job_id} in the hour (the job latency sampler runs them)",
        ))
