"""The Probes screen: the last link test's pair matrix per rail and its suspects, and the probe history.

Reads the store (the newest link test summary at or before the moment shown,
and the probes before it, newest first), so replay shows the link test of that
time through the same code. ``l`` runs a new link test; ``r`` shows the next
rail; ``enter`` on a suspect or a probe opens its node.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import DataTable, Static

from fleet.console.messages import NodeChosen
from fleet.console.probe_control import ProbeState
from fleet.console.screens.base import FleetScreenBase
from fleet.console.screens.probe_keys import ProbeKeys
from fleet.console.timespec import format_moment
from fleet.console.view_model import ConsoleView
from fleet.console.widgets.fit_table import Col, FitTable
from fleet.console.widgets.pair_matrix import PairMatrix
from fleet.console.widgets.probe_panel import ProbePanel
from fleet.fabric.records import ProbeRecord

SUSPECT_COLUMNS = (Col("kind", "suspect", 7), Col("part", "part", 16), Col("counts", "bad/total", 9, 2),
                   Col("reason", "evidence", 20, flex=True))
HISTORY_COLUMNS = (Col("time", "time", 20, 3), Col("kind", "kind", 8), Col("from", "from", 16), Col("to", "to", 16),
                   Col("ok", "ok", 3), Col("result", "result", 24, flex=True))
HISTORY_ROWS = 200
"""Probes listed; the store keeps them all (``fleet db`` / the CLI's ``--json`` for more)."""
REREAD_S = 5.0
"""Probes arrive at most every few seconds (a link test writes them as it goes): reading more often shows nothing new."""


def probe_summary(record: ProbeRecord) -> str:
    """One probe's numbers in a line, units included."""
    r = record.result
    if record.kind == "linktest":  # not ok: something was found; the numbers say what
        suspects, unreachable = len(r.get("suspects", [])), len(r.get("unreachable", {}))
        return (f"{r.get('probes')} probes in {r.get('seconds')} s, {len(r.get('bad_pairs', []))} bad pairs, "
                f"{suspects} suspect{'' if suspects == 1 else 's'}, {unreachable} unreachable")
    if record.kind == "acceptance":
        checks = r.get("checks", [])
        failed = sum(1 for c in checks if not c.get("passed"))
        return f"{r.get('title', 'acceptance')}: {len(checks) - failed} of {len(checks)} checks pass"
    if not record.ok:
        return str(r.get("error", "failed"))
    if record.kind == "lat":
        return f"typical {r.get('t_typical_usec')} usec, p99 {r.get('p99_usec')} usec"
    if record.kind == "bw":
        return f"avg {r.get('bw_avg_gbps')} Gb/s, peak {r.get('bw_peak_gbps')} Gb/s"
    if record.kind == "allreduce":
        return f"peak bus bandwidth {r.get('peak_busbw_gbytes_s')} GB/s"
    return ""


class ProbesScreen(ProbeKeys, FleetScreenBase):
    TITLE_TEXT = "Probes"
    SCREEN_KEY = "app.probes"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("l", "linktest", "Link test", id="probes.linktest"),
        Binding("r", "next_rail(1)", "Next rail", id="probes.next_rail"),
        Binding("R", "next_rail(-1)", "Previous rail", id="probes.previous_rail"),
        Binding("tab", "focus_next", "Matrix/suspects/history", show=False, id="probes.focus_next"),
    ]
    DEFAULT_CSS = """
    #probes-top { height: 2fr; min-height: 8; }
    #pair-matrix { width: 3fr; }
    #suspects { width: 2fr; height: 1fr; }
    #probe-history { height: 1fr; min-height: 4; }
    #linktest-title { height: 1; padding: 0 1; background: $surface; }
    """

    def __init__(self) -> None:
        super().__init__()
        self.linktest: ProbeRecord | None = None
        """The link test summary shown (kind "linktest"); None before any ran."""
        self.rail_index = 0
        self._history: tuple[ProbeRecord, ...] = ()
        self._read_at: float | None = None
        self._read_moment: float | None = None
        self._loading = False

    def compose_body(self) -> ComposeResult:
        yield Static(id="linktest-title")
        with Horizontal(id="probes-top"):
            yield PairMatrix(id="pair-matrix")
            yield FitTable(SUSPECT_COLUMNS, id="suspects")
        yield FitTable(HISTORY_COLUMNS, id="probe-history")
        yield ProbePanel(id="probe-panel")

    def build(self) -> None:
        self.query_one("#probe-history", DataTable).focus()
        self.fleet_app.probes.changed.subscribe(self, self._probe_state)
        self.query_one(PairMatrix).show(None)

    def probe_nodes(self) -> tuple[str, ...]:
        return ()

    def _probe_state(self, state: ProbeState) -> None:
        if state.linktest is not None or state.result is not None:
            self._read_at = None  # a probe finished: read the store again now
            view = self.fleet_app.view
            if view is not None and self.is_current:
                self.show_view(view)

    def show_view(self, view: ConsoleView) -> None:
        moment = view.snapshot.moment_ts
        due = (self._read_at is None or time.monotonic() - self._read_at >= REREAD_S
               or (moment != self._read_moment and not view.snapshot.live))
        if due and not self._loading:
            self._loading = True
            self.load_probes(None if view.snapshot.live else moment)

    @work(group="probes-read", exclusive=True, exit_on_error=False)
    async def load_probes(self, until: float | None) -> None:
        def read(reader: Any) -> tuple[list[ProbeRecord], list[ProbeRecord]]:
            return (reader.probes(kind="linktest", until=until, limit=1),
                    reader.probes(until=until, limit=HISTORY_ROWS))

        try:
            linktests, history = await self.fleet_app.feed.read(read)
        finally:
            self._loading = False
        self._read_at = time.monotonic()
        self._read_moment = until
        self.linktest = linktests[0] if linktests else None
        self._draw_linktest()
        self._draw_history(tuple(history))

    def _matrices(self) -> list[dict[str, Any]]:
        return list(self.linktest.result.get("matrices", [])) if self.linktest is not None else []

    def _draw_linktest(self) -> None:
        matrices = self._matrices()
        title = self.query_one("#linktest-title", Static)
        if self.linktest is None or not matrices:
            title.update("")
            self.query_one(PairMatrix).show(None)
            self._fill_suspects([])
            return
        self.rail_index %= len(matrices)
        r = self.linktest.result
        title.update(Text(
            f"link test {format_moment(self.linktest.ts)}: "
            f"{r.get('probes')} probes, {len(r.get('nodes', []))} nodes, rail {self.rail_index + 1} of "
            f"{len(matrices)} (r/R: next/previous rail), {r.get('seconds')} s; "
            f"{len(r.get('suspects', []))} suspect(s); "
            f"unreachable: {', '.join(sorted(r.get('unreachable', {}))) or 'none'}", no_wrap=True, overflow="ellipsis"))
        matrix = self.query_one(PairMatrix)
        first = matrix.matrix is None
        matrix.show(matrices[self.rail_index])
        if first:
            self.call_after_refresh(matrix.focus)  # after the screen's own focus on first showing
        self._fill_suspects(list(r.get("suspects", [])))  # the probes' and the local checks': the count above

    def _fill_suspects(self, suspects: list[dict[str, Any]]) -> None:
        self.query_one("#suspects", FitTable).fill(
            [(Text(str(s.get("kind", ""))), Text(str(s.get("part", ""))),
              Text(f"{s.get('bad')}/{s.get('total')}" if s.get("total") else ""),
              Text(f"{'local checks: ' if s.get('source') == 'local checks' else ''}{s.get('reason', '')}"))
             for s in suspects],
            [f"{index}:{s.get('node', '')}" for index, s in enumerate(suspects)])

    def _draw_history(self, history: tuple[ProbeRecord, ...]) -> None:
        if history == self._history:
            return
        self._history = history
        v = self.app.theme_variables
        self.query_one("#probe-history", FitTable).fill(
            [(Text(format_moment(p.ts)), Text(p.kind),
              Text(f"{p.src} {p.src_nic}".strip()), Text(f"{p.dst} {p.dst_nic}".strip()),
              Text("ok" if p.ok else "no", style=v.get("health-ok" if p.ok else "health-down", "")),
              Text(probe_summary(p))) for p in history],
            [f"{index}:{p.src}" for index, p in enumerate(history)])

    def action_next_rail(self, step: int = 1) -> None:
        if self._matrices():
            self.rail_index += step
            self._draw_linktest()

    @on(PairMatrix.NodeOpened)
    def _matrix_node(self, event: PairMatrix.NodeOpened) -> None:
        self.post_message(NodeChosen(event.node))

    @on(DataTable.RowSelected)
    def _chosen(self, event: DataTable.RowSelected) -> None:
        node = str(event.row_key.value or "").partition(":")[2]
        if node:
            self.post_message(NodeChosen(node))
