"""The health colour legend: glyph, colour and meaning, so nobody has to guess.

At full width each health says what it means; on a narrow terminal only its name.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from fleet.console.formatting import HEALTH_GLYPH, health_style
from fleet.fabric.health import Health

MEANING = {
    Health.OK: ("ok", "ok"),
    Health.DEGRADED: ("degraded (answers, something is off)", "degraded"),
    Health.DOWN: ("down (cannot collect, or every port down)", "down"),
    Health.UNKNOWN: ("no data / connecting", "no data"),
}


class HealthLegend(Widget):
    DEFAULT_CSS = """
    HealthLegend { height: 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def on_mount(self) -> None:
        self.watch(self.app, "theme", self._recolour, init=False)

    def _recolour(self) -> None:
        self.refresh()

    def render(self) -> Text:
        v = self.app.theme_variables
        for form in (0, 1):
            line = Text(" ")
            for health, words in MEANING.items():
                line.append(f"{HEALTH_GLYPH[health]} {words[form]}   ", style=health_style(health, v))
            if line.cell_len <= self.size.width:
                break
        return line
