"""One line under the header: how many nodes are ok/degraded/down, throughput, findings, lag."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from fleet.console.formatting import HEALTH_GLYPH, health_style
from fleet.console.view_model import FleetSummary
from fleet.fabric.health import Health


class SummaryBar(Static):
    DEFAULT_CSS = """
    SummaryBar { height: 1; background: $surface; }
    """

    def show(self, summary: FleetSummary, total_nodes: int, writer_problem: str = "") -> None:
        v = self.app.theme_variables
        line = Text(" ")
        for health, n in (
            (Health.OK, summary.ok), (Health.DEGRADED, summary.degraded),
            (Health.DOWN, summary.down), (Health.UNKNOWN, summary.unknown),
        ):
            line.append(f"{HEALTH_GLYPH[health]} {n} {health.value}  ", style=health_style(health, v))
        if summary.connecting:
            done = total_nodes - summary.connecting
            line.append(f"connecting {done:,}/{total_nodes:,}  ", style=v.get("warning", ""))
        line.append(f"│ fabric rx {summary.rx_gbps:,.0f} tx {summary.tx_gbps:,.0f} Gb/s  ")
        line.append(f"│ findings (1 h) {summary.open_findings}  ")
        if summary.lag_s is not None:
            style = v.get("error", "") if summary.falling_behind else ""
            behind = " STORE FALLING BEHIND" if summary.falling_behind else ""
            line.append(f"│ lag {summary.lag_s:,.1f} s{behind}", style=style)
        if writer_problem:
            line.append(f"  │ store: {writer_problem}", style=v.get("error", ""))
        self.update(line)
