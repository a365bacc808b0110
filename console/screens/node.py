"""The Node screen: one node's ports, optics, QPs, GPUs, last hour and events."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Static

from fleet.console.findings_text import finding_detail, open_on
from fleet.console.formatting import count, health_text, number
from fleet.console.node_history import NodeHistory, load_history, load_values
from fleet.console.screens.base import FleetScreenBase, fixed_columns
from fleet.console.screens.probe_keys import ProbeKeys
from fleet.console.timespec import format_moment
from fleet.console.view_model import ConsoleView
from fleet.console.widgets.plot import PlotData, PlotWidget
from fleet.console.widgets.probe_panel import ProbePanel
from fleet.fabric.health import HealthThresholds, NodeSummary, optics_margin_db, summarize_node
from fleet.fabric.samples import SeriesKey

HISTORY_REREAD_S = 10.0
"""The plots span an hour; re-reading them more often than every 10 s shows nothing new."""

PORT_STATES = {1.0: "DOWN", 2.0: "INIT", 3.0: "ARMED", 4.0: "ACTIVE"}
TableRows = tuple[tuple[Text, ...], ...]


def _cells(*values: str | Text) -> tuple[Text, ...]:
    return tuple(v if isinstance(v, Text) else Text(v) for v in values)


class NodeScreen(ProbeKeys, FleetScreenBase):
    TITLE_TEXT = "Node"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,backspace", "app.pop_screen", "Back", id="node.back"),
        Binding("t", "latency", "Latency", id="node.latency"),
        Binding("b", "bandwidth", "Bandwidth", id="node.bandwidth"),
        Binding("a", "allreduce", "All-reduce", id="node.allreduce"),
        Binding("x", "alltoall", "All-to-all", id="node.alltoall"),
    ]

    def __init__(self, name: str) -> None:
        super().__init__()
        self.node_name = name
        self.TITLE_TEXT = f"Node {name}"
        self._tables: dict[str, TableRows] = {}
        self._history_at: float | None = None
        self._loading = False
        self._peers: dict[tuple[str, str], str] = {}
        self.drawn = asyncio.Event()
        """Set once the node's values and its last hour are on screen (tests, benchmarks)."""

    def probe_nodes(self) -> tuple[str, ...]:
        return (self.node_name,)

    def compose_body(self) -> ComposeResult:
        yield ProbePanel(id="probe-panel")
        with VerticalScroll(id="node-body"):
            yield Static(id="node-title")
            yield DataTable(id="ports", cursor_type="row")
            with Horizontal(id="node-middle"):
                yield DataTable(id="optics", cursor_type="row")
                yield DataTable(id="gpus", cursor_type="row")
            with Horizontal(id="plots"):
                yield PlotWidget(PlotData("throughput, last hour", "Gb/s"), id="plot-throughput")
                yield PlotWidget(PlotData("PFC pauses, last hour", "frames/s"), id="plot-pauses")
                yield PlotWidget(PlotData("latency probes, last hour", "usec"), id="plot-latency")
            yield DataTable(id="node-events", cursor_type="row")

    def build(self) -> None:
        fixed_columns(self.query_one("#ports", DataTable), ("NIC", 7), ("port", 4), ("state", 6),
                      ("rate", 4), ("rx Gb/s", 7), ("tx Gb/s", 7), ("PFC rx/s", 8), ("PFC tx/s", 8),
                      ("CNP sent/s", 10), ("CNP handled/s", 13), ("ECN/s", 7), ("err Δ5m", 7),
                      ("pre-FEC BER", 11), ("QPs", 5), ("cable to", 18))
        fixed_columns(self.query_one("#optics", DataTable), ("NIC", 7), ("lane", 4), ("Rx dBm", 6),
                      ("Tx dBm", 6), ("bias mA", 7), ("margin dB", 9), ("", 11))
        fixed_columns(self.query_one("#gpus", DataTable), ("GPU", 5), ("util %", 6), ("°C", 3), ("W", 4),
                      ("mem GiB", 7), ("XID", 4), ("ECC/NVLink Δ5m", 14), ("NVLink CRC", 10))
        fixed_columns(self.query_one("#node-events", DataTable), ("time", 20), ("severity", 8),
                      ("kind", 18), ("where", 10), ("message", 80))
        self.query_one("#ports", DataTable).focus()

    def _fill(self, table_id: str, rows: TableRows) -> None:
        if self._tables.get(table_id) == rows:
            return
        self._tables[table_id] = rows
        table = self.query_one(f"#{table_id}", DataTable)
        table.clear()
        table.add_rows(rows)

    def show_view(self, view: ConsoleView) -> None:
        name = self.node_name
        health = view.healths.get(name)
        deltas = view.snapshot.error_deltas.get(name, {})
        v = self.app.theme_variables
        title = Text()
        if health is not None:
            title = health_text(health.health, name, v)
            status = view.snapshot.statuses.get(name)
            if status is not None:
                title.append(f"  collection {status.state.value} since {format_moment(status.since)}")
            title.append("\n")
            title.append(Text("\n".join(health.reasons) or "no problem found"))
            for event in open_on(view.snapshot.events, name):
                title.append("\n")
                title.append(finding_detail(event))
        else:
            title = Text(f"{name}: not in the store at this moment")
        self.query_one("#node-title", Static).update(title)
        self._peers = {(p.device, p.port): f"{p.peer_host} {p.peer_port}".strip()
                       for p in view.snapshot.ports if p.host == name}
        events = [e for e in view.snapshot.events if e.host == name][:50]
        self._fill("node-events", tuple(_cells(
            format_moment(e.ts), e.severity.value, e.kind,
            "/".join(p for p in (e.device, e.port) if p), e.message) for e in events))
        moment = view.snapshot.moment_ts
        history_due = self._history_at is None or abs(moment - self._history_at) >= HISTORY_REREAD_S
        if not self._loading:
            self._loading = True
            self.load_node(moment, view.snapshot.live, deltas, history_due)

    def _show_values(self, values: Mapping[SeriesKey, float], deltas: Mapping[SeriesKey, float]) -> None:
        summary = summarize_node(values, deltas)
        self._fill("ports", self._port_rows(summary, self._peers))
        self._fill("optics", self._optics_rows(values))
        self._fill("gpus", self._gpu_rows(summary, values, deltas))

    def _port_rows(self, summary: NodeSummary, peers: dict[tuple[str, str], str]) -> TableRows:
        rows = []
        for n in summary.nics:
            state = PORT_STATES.get(n.port_state or 0.0, number(n.port_state, 0))
            rows.append(_cells(
                n.device, n.port, state, number(n.rate_gbps, 0), number(n.rx_gbps), number(n.tx_gbps),
                number(n.rx_pause_per_s, 0), number(n.tx_pause_per_s, 0), number(n.cnp_sent_per_s, 0),
                number(n.cnp_handled_per_s, 0), number(n.ecn_marked_per_s, 0),
                count(n.error_delta) if n.error_delta else "",
                f"{n.pre_fec_ber:.1e}" if n.pre_fec_ber is not None else "-",
                count(n.qp_count), peers.get((n.device, n.port), ""),
            ))
        return tuple(rows)

    def _optics_rows(self, values: Mapping[SeriesKey, float]) -> TableRows:
        t = HealthThresholds()
        lanes: dict[tuple[str, str], dict[str, float]] = {}
        for (metric, device, port), value in values.items():
            if metric.startswith("optics_") and port.startswith("L"):
                lanes.setdefault((device, port), {})[metric] = value
        rows = []
        v = self.app.theme_variables
        for (device, lane), f in sorted(lanes.items(), key=lambda item: (item[0][0], int(item[0][1][1:] or 0))):
            # the module's own thresholds (its EEPROM) when the collector read them
            alarm = values.get(("optics_rx_power_low_alarm_dbm", device, ""))
            warning = values.get(("optics_rx_power_low_warning_dbm", device, ""))
            margin = optics_margin_db(f.get("optics_rx_power_dbm"), t, alarm)
            warn_db = warning - alarm if warning is not None and alarm is not None else t.optics_margin_warn_db
            verdict = Text("")
            if margin is not None and margin < 0:
                verdict = Text("below alarm", style=v.get("health-down", ""))
            elif margin is not None and margin < warn_db:
                verdict = Text("low", style=v.get("health-degraded", ""))
            rows.append(_cells(
                device, lane[1:], number(f.get("optics_rx_power_dbm"), 2), number(f.get("optics_tx_power_dbm"), 2),
                number(f.get("optics_tx_bias_ma"), 1), number(margin, 1), verdict))
        return tuple(rows)

    def _gpu_rows(self, summary: NodeSummary, values: Mapping[SeriesKey, float],
                  deltas: Mapping[SeriesKey, float]) -> TableRows:
        rows = []
        for g in summary.gpus:
            used = values.get(("gpu_mem_used_bytes", g.device, ""))
            total = values.get(("gpu_mem_total_bytes", g.device, ""))
            mem = f"{used / 2**30:.0f}/{total / 2**30:.0f}" if used is not None and total else "-"
            crc = values.get(("gpu_nvlink_crc_errors", g.device, ""))
            rows.append(_cells(
                g.device, number(g.util_pct, 0), number(g.temp_c, 0),
                number(values.get(("gpu_power_w", g.device, "")), 0), mem,
                str(g.xid_last) if g.xid_last else "", count(g.error_delta) if g.error_delta else "",
                count(crc)))
        return tuple(rows)

    @work(group="node-detail", exclusive=True, exit_on_error=False)
    async def load_node(self, moment: float, live: bool, deltas: Mapping[SeriesKey, float],
                        with_history: bool) -> None:
        name = self.node_name

        def read(reader: Any) -> tuple[dict[SeriesKey, float], NodeHistory | None]:
            values = load_values(reader, name, moment, live)
            ports = sorted({(d, p) for (m, d, p) in values if m == "port_state"})
            return values, load_history(reader, name, ports, moment) if with_history else None

        try:
            values, history = await self.fleet_app.feed.read(read)
        finally:
            self._loading = False
        self._show_values(values, deltas)
        if history is not None:
            self._history_at = history.moment_ts
            self.query_one("#plot-throughput", PlotWidget).show(history.throughput)
            self.query_one("#plot-pauses", PlotWidget).show(history.pauses)
            self.query_one("#plot-latency", PlotWidget).show(history.latency)
        if self._history_at is not None:
            self.drawn.set()

