"""One line under the header: the filter in effect, how many nodes are ok/degraded/down,
throughput, findings, and how far behind the store is.

On a narrow terminal the parts are shortened (``●26 ▲4 ■2``) before any is left out, and
the store's lag (when it is falling behind) and the filter are the last to go.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.text import Text
from textual.widget import Widget

from fleet.console.formatting import HEALTH_GLYPH, fit_number, health_style
from fleet.console.view_model import FleetSummary
from fleet.fabric.health import Health


class Part(NamedTuple):
    """One piece of the line, in its long and short forms; lower ``keep`` is dropped last."""

    full: Text
    short: Text
    keep: int


class SummaryBar(Widget):
    DEFAULT_CSS = """
    SummaryBar { height: 1; text-wrap: nowrap; text-overflow: ellipsis; background: $surface; }
    """

    def __init__(self, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._parts: list[Part] = []

    def show(self, summary: FleetSummary, total_nodes: int, writer_problem: str = "",
             note: Text | None = None) -> None:
        """``note``: what the screen adds while it holds (the filter in effect)."""
        v = self.app.theme_variables
        parts: list[Part] = []
        if note:
            parts.append(Part(note, note, 0))
        full, short = Text(), Text()
        for health, n in (
            (Health.OK, summary.ok), (Health.DEGRADED, summary.degraded),
            (Health.DOWN, summary.down), (Health.UNKNOWN, summary.unknown),
        ):
            full.append(f"{HEALTH_GLYPH[health]} {n} {health.value}  ", style=health_style(health, v))
            short.append(f"{HEALTH_GLYPH[health]}{n} ", style=health_style(health, v))
        if summary.connecting:
            done = total_nodes - summary.connecting
            full.append(f"connecting {done}/{total_nodes}", style=v.get("warning", ""))
            short.append(f"conn {done}/{total_nodes}", style=v.get("warning", ""))
        full.rstrip()
        short.rstrip()
        parts.append(Part(full, short, 1))
        parts.append(Part(Text(f"fabric rx {summary.rx_gbps:,.0f} tx {summary.tx_gbps:,.0f} Gb/s"),
                          Text(f"rx {fit_number(summary.rx_gbps, 5, 0)} tx {fit_number(summary.tx_gbps, 5, 0)} Gb/s"),
                          4))
        parts.append(Part(Text(f"findings (1 h) {summary.open_findings}"),
                          Text(f"findings {summary.open_findings}"), 3))
        if summary.lag_s is not None:
            style = v.get("error", "") if summary.falling_behind else ""
            behind = " STORE FALLING BEHIND" if summary.falling_behind else ""
            parts.append(Part(Text(f"lag {summary.lag_s:,.1f} s{behind}", style=style),
                              Text(f"lag {summary.lag_s:,.1f} s{' BEHIND' if behind else ''}", style=style),
                              0 if summary.falling_behind else 2))
        if writer_problem:
            problem = Text(f"store: {writer_problem}", style=v.get("error", ""))
            parts.append(Part(problem, problem, 0))
        self._parts = parts
        self.refresh()

    @property
    def text(self) -> str:
        """The line as drawn at the bar's width (tests read it)."""
        return self.render().plain

    def render(self) -> Text:
        width = self.size.width or 200
        forms = [p.full for p in self._parts]
        line = _join(forms)
        # Shorten the parts that may go first, then leave them out, until the line fits.
        for part in sorted(range(len(self._parts)), key=lambda i: -self._parts[i].keep):
            if line.cell_len <= width:
                break
            forms[part] = self._parts[part].short
            line = _join(forms)
        for part in sorted(range(len(self._parts)), key=lambda i: -self._parts[i].keep):
            if line.cell_len <= width or self._parts[part].keep == 0:
                break
            forms[part] = Text()
            line = _join(forms)
        line.no_wrap, line.overflow = True, "ellipsis"
        return line


def _join(forms: list[Text]) -> Text:
    line = Text(" ")
    for form in (f for f in forms if f):
        if len(line) > 1:
            line.append(" │ ")
        line.append_text(form)
    return line
