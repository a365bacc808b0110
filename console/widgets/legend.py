"""The health colour legend: glyph, colour and meaning, so nobody has to guess."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from fleet.console.formatting import HEALTH_GLYPH, health_style
from fleet.fabric.health import Health

MEANING = {
    Health.OK: "ok",
    Health.DEGRADED: "degraded (answers, something is off)",
    Health.DOWN: "down (cannot collect, or every port down)",
    Health.UNKNOWN: "no data / connecting",
}


class HealthLegend(Static):
    DEFAULT_CSS = """
    HealthLegend { height: 1; }
    """

    def on_mount(self) -> None:
        self.watch(self.app, "theme", lambda _theme: self.draw(), init=True)

    def draw(self) -> None:
        v = self.app.theme_variables
        line = Text(" ")
        for health, meaning in MEANING.items():
            line.append(f"{HEALTH_GLYPH[health]} {meaning}   ", style=health_style(health, v))
        self.update(line)
