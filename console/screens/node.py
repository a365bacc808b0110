"""The Node screen: one node's ports, its events, optics, GPUs and last hour.

Every value that crossed a health threshold is coloured, the thresholds are in the legend
line, and the highlighted port's row says which of them it crossed. Tables drop their less
telling columns on a narrow terminal (``widgets/fit_table.py``); the plots shrink, never vanish.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Static

from fleet.console.findings_text import finding_detail, open_on
from fleet.console.formatting import count, fit_number, health_text, number
from fleet.console.node_history import NodeHistory, load_history, load_values
from fleet.console.node_marks import (
    FINE,
    Level,
    Mark,
    gpu_marks,
    lane_mark,
    median_ber,
    median_nic_rx,
    port_marks,
    threshold_words,
)
from fleet.console.screens.base import FleetScreenBase
from fleet.console.screens.events import SEVERITY_VARIABLE
from fleet.console.screens.probe_keys import ProbeKeys
from fleet.console.timespec import format_moment
from fleet.console.view_model import ConsoleView
from fleet.console.widgets.fit_table import Col, FitTable
from fleet.console.widgets.plot import PlotData, PlotWidget
from fleet.console.widgets.probe_panel import ProbePanel
from fleet.fabric.health import HealthThresholds, NodeSummary, optics_margin_db, summarize_node
from fleet.fabric.samples import SeriesKey

HISTORY_REREAD_S = 10.0
"""The plots span an hour; re-reading them more often than every 10 s shows nothing new."""

PORT_STATES = {1.0: "DOWN", 2.0: "INIT", 3.0: "ARMED", 4.0: "ACTIVE"}
THRESHOLDS = HealthThresholds()
TableRows = tuple[tuple[Text, ...], ...]

PORT_COLUMNS = (
    Col("nic", "NIC", 7), Col("port", "port", 4, 9), Col("state", "state", 6), Col("rate", "rate", 4, 6),
    Col("rx", "rx Gb/s", 7), Col("tx", "tx Gb/s", 7, 3), Col("pfc", "PFC rx/tx /s", 12),
    Col("cnp", "CNP sent/hdl /s", 15, 6), Col("ecn", "ECN/s", 7, 5), Col("errors", "err Δ5m", 7),
    Col("ber", "pre-FEC BER", 11, 2), Col("qps", "QPs", 5, 7), Col("cable", "cable to", 16, 4, flex=True),
)
OPTICS_COLUMNS = (
    Col("nic", "NIC", 7), Col("lanes", "Rx dBm per lane", 23, 2), Col("worst", "weakest", 7),
    Col("margin", "margin dB", 9), Col("tx", "Tx dBm", 6, 4), Col("bias", "bias mA", 7, 5),
)
GPU_COLUMNS = (
    Col("gpu", "GPU", 5), Col("util", "util %", 6), Col("temp", "°C", 3), Col("power", "W", 4, 3),
    Col("mem", "mem GiB", 7, 4), Col("xid", "XID", 4), Col("errors", "ECC/NVL Δ5m", 11, 2),
    Col("crc", "NVLink CRC", 10, 5),
)
EVENT_COLUMNS = (
    Col("time", "time", 20, 2), Col("severity", "severity", 8), Col("kind", "kind", 18),
    Col("where", "where", 10, 3), Col("message", "message", 30, flex=True),
)


def _cells(*values: str | Text) -> tuple[Text, ...]:
    return tuple(v if isinstance(v, Text) else Text(v) for v in values)


def _marked(text: str, mark: Mark, v: Mapping[str, str]) -> Text:
    """A cell coloured by the threshold it crossed (none: plain)."""
    return Text(text, style=v.get(mark.level.value, "") if mark.level is not Level.FINE else "")


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
        self._history_at: float | None = None
        self._loading = False
        self._peers: dict[tuple[str, str], str] = {}
        self._port_marks: dict[str, list[str]] = {}
        """Per NIC, the thresholds its cells crossed (shown for the highlighted row)."""
        self.drawn = asyncio.Event()
        """Set once the node's values and its last hour are on screen (tests, benchmarks)."""

    def probe_nodes(self) -> tuple[str, ...]:
        return (self.node_name,)

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="node-body"):
            yield Static(id="node-title")
            yield FitTable(PORT_COLUMNS, id="ports")
            yield Static(id="node-focus")
            yield FitTable(EVENT_COLUMNS, id="node-events")
            with Horizontal(id="node-middle"):
                yield FitTable(OPTICS_COLUMNS, id="optics")
                yield FitTable(GPU_COLUMNS, id="gpus")
            with Horizontal(id="plots"):
                yield PlotWidget(PlotData("throughput", "Gb/s"), id="plot-throughput")
                yield PlotWidget(PlotData("PFC pauses", "frames/s"), id="plot-pauses")
                yield PlotWidget(PlotData("probe latency", "usec"), id="plot-latency")
        yield Static(self._legend(), id="node-legend")
        yield ProbePanel(id="probe-panel")

    def build(self) -> None:
        self.query_one("#ports", FitTable).focus()

    def _legend(self) -> Text:
        v = self.app.theme_variables
        text = Text(" thresholds: ", no_wrap=True, overflow="ellipsis")
        for level, words in threshold_words(THRESHOLDS):
            text.append({Level.BAD: "■ ", Level.WARN: "▲ "}.get(level, "◆ "), style=v.get(level.value, ""))
            text.append(f"{words}  ")
        return text

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
        self.query_one("#node-legend", Static).update(self._legend())
        self._peers = {(p.device, p.port): f"{p.peer_host} {p.peer_port}".strip()
                       for p in view.snapshot.ports if p.host == name}
        events = [e for e in view.snapshot.events if e.host == name][:50]
        events_table = self.query_one("#node-events", FitTable)
        events_table.fill(tuple(_cells(
            format_moment(e.ts), Text(e.severity.value, style=v.get(SEVERITY_VARIABLE[e.severity], "")),
            Text(e.kind), Text("/".join(p for p in (e.device, e.port) if p)), Text(e.message)) for e in events))
        events_table.display = bool(events)
        moment = view.snapshot.moment_ts
        history_due = self._history_at is None or abs(moment - self._history_at) >= HISTORY_REREAD_S
        if not self._loading:
            self._loading = True
            self.load_node(moment, view.snapshot.live, deltas, history_due)

    def _show_values(self, values: Mapping[SeriesKey, float], deltas: Mapping[SeriesKey, float]) -> None:
        summary = summarize_node(values, deltas)
        self.query_one("#ports", FitTable).fill(self._port_rows(summary, self._peers))
        self.query_one("#optics", FitTable).fill(self._optics_rows(summary, values))
        self.query_one("#gpus", FitTable).fill(self._gpu_rows(summary, values))
        self._show_focus()

    def _port_rows(self, summary: NodeSummary, peers: dict[tuple[str, str], str]) -> TableRows:
        v = self.app.theme_variables
        rates = [n.rate_gbps for n in summary.nics if n.rate_gbps is not None]
        best = max(rates) if rates else 0.0
        rows = []
        self._port_marks = {}
        ber = median_ber(summary.nics)
        for n in summary.nics:
            marks = port_marks(n, best, THRESHOLDS, ber)
            self._port_marks[n.device] = [m.why for m in marks.values()]

            def cell(key: str, text: str, marks: dict[str, Mark] = marks) -> Text:
                return _marked(text, marks.get(key, FINE), v)

            state = PORT_STATES.get(n.port_state or 0.0, number(n.port_state, 0))
            rows.append(_cells(
                n.device, n.port, cell("state", state), cell("rate", number(n.rate_gbps, 0)),
                number(n.rx_gbps), number(n.tx_gbps),
                cell("pfc", f"{number(n.rx_pause_per_s, 0)}/{number(n.tx_pause_per_s, 0)}"),
                f"{number(n.cnp_sent_per_s, 0)}/{number(n.cnp_handled_per_s, 0)}",
                cell("ecn", number(n.ecn_marked_per_s, 0)),
                cell("errors", fit_number(n.error_delta, 7, 0) if n.error_delta else ""),
                cell("ber", f"{n.pre_fec_ber:.1e}" if n.pre_fec_ber is not None else "-"),
                count(n.qp_count), Text(peers.get((n.device, n.port), "")),
            ))
        return tuple(rows)

    def _optics_rows(self, summary: NodeSummary, values: Mapping[SeriesKey, float]) -> TableRows:
        """One row per NIC: every lane's Rx power, the weakest lane's margin to the alarm."""
        lanes: dict[str, dict[int, dict[str, float]]] = {}
        for (metric, device, port), value in values.items():
            if metric.startswith("optics_") and port.startswith("L") and port[1:].isdigit():
                lanes.setdefault(device, {}).setdefault(int(port[1:]), {})[metric] = value
        median = median_nic_rx(summary.nics)
        v = self.app.theme_variables
        rows = []
        for device in sorted(lanes, key=_nic_order):
            by_lane = lanes[device]
            # the module's own thresholds (its EEPROM) when the collector read them
            alarm = values.get(("optics_rx_power_low_alarm_dbm", device, ""))
            warning = values.get(("optics_rx_power_low_warning_dbm", device, ""))
            rx = [by_lane[lane].get("optics_rx_power_dbm") for lane in sorted(by_lane)]
            cell = Text()
            for lane_rx in rx:
                mark = lane_mark(lane_rx, median, THRESHOLDS, alarm, warning)
                cell.append_text(_marked(f"{number(lane_rx, 1):>5} ", mark, v))
            known = [r for r in rx if r is not None]
            worst = min(known) if known else None
            worst_mark = lane_mark(worst, median, THRESHOLDS, alarm, warning)
            tx = [f.get("optics_tx_power_dbm") for f in by_lane.values()]
            bias = [f.get("optics_tx_bias_ma") for f in by_lane.values()]
            rows.append(_cells(
                device, cell, _marked(number(worst, 1), worst_mark, v),
                _marked(number(optics_margin_db(worst, THRESHOLDS, alarm), 1), worst_mark, v),
                number(min((t for t in tx if t is not None), default=None), 1),
                number(max((b for b in bias if b is not None), default=None), 1)))
        return tuple(rows)

    def _gpu_rows(self, summary: NodeSummary, values: Mapping[SeriesKey, float]) -> TableRows:
        v = self.app.theme_variables
        rows = []
        for g in summary.gpus:
            marks = gpu_marks(g, THRESHOLDS)
            used = values.get(("gpu_mem_used_bytes", g.device, ""))
            total = values.get(("gpu_mem_total_bytes", g.device, ""))
            mem = f"{used / 2**30:.0f}/{total / 2**30:.0f}" if used is not None and total else "-"
            crc = values.get(("gpu_nvlink_crc_errors", g.device, ""))
            rows.append(_cells(
                g.device, number(g.util_pct, 0), _marked(number(g.temp_c, 0), marks.get("temp", FINE), v),
                number(values.get(("gpu_power_w", g.device, "")), 0), mem,
                _marked(str(g.xid_last) if g.xid_last else "", marks.get("xid", FINE), v),
                _marked(fit_number(g.error_delta, 11, 0) if g.error_delta else "", marks.get("errors", FINE), v),
                count(crc)))
        return tuple(rows)

    def _show_focus(self) -> None:
        """The thresholds the highlighted NIC's cells crossed, under the ports."""
        table = self.query_one("#ports", FitTable)
        focus = self.query_one("#node-focus", Static)
        if not table.row_count:
            focus.update("")
            return
        nic = str(table.get_row_at(table.cursor_row)[0])
        crossed = self._port_marks.get(nic, [])
        v = self.app.theme_variables
        line = Text(f" {nic}: ", style="bold", no_wrap=True, overflow="ellipsis")
        if crossed:
            line.append("; ".join(crossed), style=v.get("health-degraded", ""))
        else:
            line.append("every value within its threshold")
        focus.update(line)

    @on(DataTable.RowHighlighted, "#ports")
    def _port_moved(self) -> None:
        self._show_focus()

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



def _nic_order(device: str) -> tuple[str, int]:
    head, _, tail = device.rpartition("_")
    return (head, int(tail)) if tail.isdigit() else (device, 0)
