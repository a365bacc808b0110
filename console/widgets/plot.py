"""One small plot widget: a few series over time, drawn by plotext straight into Text.

plotext 6 builds an ANSI string; ``Text.from_ansi`` turns it into a renderable.
The figure is redrawn only when the data or the widget size changes: a 60x12
figure of two series costs ~4 ms at 60 points a series and ~86 ms at 3,600 on a
2-core machine, so series are also thinned before drawing (``console/node_history.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import plotext as plt
from rich.color import Color, ColorParseError
from rich.text import Text
from textual.widget import Widget

SERIES_VARIABLES = ("primary", "accent", "error", "success")
"""Theme variables that colour the 1st, 2nd, ... series."""


@dataclass(frozen=True, slots=True)
class PlotSeries:
    label: str
    x: tuple[float, ...]
    y: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class PlotData:
    """What to draw: ``x`` in minutes relative to the moment shown (negative: before it)."""

    title: str
    y_label: str
    series: tuple[PlotSeries, ...] = ()


def _rgb(colour: str) -> tuple[int, int, int] | str:
    try:
        triplet = Color.parse(colour).get_truecolor()
    except ColorParseError:
        return "default"
    return (triplet.red, triplet.green, triplet.blue)


def build_plot(data: PlotData, width: int, height: int, colours: Sequence[str]) -> str:
    """The plot as an ANSI string of ``width`` x ``height`` cells (plotext 6 figure API)."""
    figure = plt.figure
    figure.clear()
    figure.plot_size(max(width, 10), max(height, 4))
    figure.theme("simple")
    figure.title(data.title)
    figure.label(data.y_label, "y")
    drew = False
    for index, series in enumerate(data.series):
        if series.x:
            colour = _rgb(colours[index % len(colours)])
            signal = figure.signal(list(series.x), list(series.y), marker=plt.marker("braille", colour))
            figure.draw(signal.lines().label(series.label))
            drew = True
    if not drew:
        figure.title(f"{data.title}: no data")
    return str(figure.build().string())


class PlotWidget(Widget):
    """Draws the ``PlotData`` it was last given, sized to itself."""

    DEFAULT_CSS = """
    PlotWidget { height: 12; }
    """

    def __init__(self, data: PlotData, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._data = data
        self._cache: tuple[PlotData, int, int, str, Text] | None = None

    def show(self, data: PlotData) -> None:
        if data != self._data:
            self._data = data
            self.refresh()

    def render(self) -> Text:
        width, height = self.content_size.width, self.content_size.height
        theme = self.app.current_theme.name
        cached = self._cache
        if cached is not None and cached[:4] == (self._data, width, height, theme):
            return cached[4]
        v = self.app.theme_variables
        text = Text.from_ansi(build_plot(
            self._data, width, height, [v.get(name, "") for name in SERIES_VARIABLES]))
        self._cache = (self._data, width, height, theme, text)
        return text
