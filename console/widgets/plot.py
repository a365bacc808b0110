"""One small plot widget: a few series over time, drawn by plotext straight into Text.

The first line is the title and the legend (a coloured mark and the name of each series),
outside the plotting area so it never covers data; both axes carry their unit (the x axis:
minutes before the moment shown). plotext 6 builds an ANSI string; ``Text.from_ansi`` turns
it into a renderable.
The figure is redrawn only when the data or the widget size changes: a 60x12
figure of two series costs ~4 ms at 60 points a series and ~86 ms at 3,600 on a
2-core machine, so series are also thinned before drawing (``console/node_history.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.color import Color, ColorParseError
from rich.console import Group, RenderableType
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
    x_label: str = "min"
    """The x axis: minutes relative to the moment shown (negative: before it)."""
    empty: str = "no data in the store for this hour"
    """Said instead of an empty frame when no series has a point."""


def _rgb(colour: str) -> tuple[int, int, int] | str:
    try:
        triplet = Color.parse(colour).get_truecolor()
    except ColorParseError:
        return "default"
    return (triplet.red, triplet.green, triplet.blue)


def build_plot(data: PlotData, width: int, height: int, colours: Sequence[str]) -> str:
    """The plotting area with its axes as an ANSI string of ``width`` x ``height`` cells (plotext
    6 figure API); no title and no legend inside it (``legend_text`` is drawn above it)."""
    import plotext as plt  # 0.4 s of import a first Fleet screen does not need

    figure = plt.figure
    figure.clear()
    figure.plot_size(max(width, 12), max(height, 4))
    figure.theme("simple")
    figure.label(data.y_label, "y")
    figure.label(data.x_label, "x")
    for index, series in enumerate(data.series):
        if series.x:
            colour = _rgb(colours[index % len(colours)])
            signal = figure.signal(list(series.x), list(series.y), marker=plt.marker("braille", colour))
            figure.draw(signal.lines())
    return str(figure.build().string())


def legend_text(data: PlotData, colours: Sequence[str]) -> Text:
    """The title line: what is plotted, in which unit, and each series' colour and name."""
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(f"{data.title} {data.y_label}", style="bold")
    for index, series in enumerate(data.series):
        if series.x:
            line.append("  ━ ", style=colours[index % len(colours)] or "")
            line.append(Text(series.label))
    line.append(f"  (x: {data.x_label})", style="dim")
    return line


def has_points(data: PlotData) -> bool:
    return any(series.x for series in data.series)


class PlotWidget(Widget):
    """Draws the ``PlotData`` it was last given, sized to itself."""

    DEFAULT_CSS = """
    PlotWidget { height: 12; min-height: 6; }
    """

    def __init__(self, data: PlotData, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._data = data
        self._cache: tuple[PlotData, int, int, str, Group] | None = None

    def show(self, data: PlotData) -> None:
        if data != self._data:
            self._data = data
            self.refresh()

    def render(self) -> RenderableType:
        width, height = self.content_size.width, self.content_size.height
        theme = self.app.current_theme.name
        cached = self._cache
        if cached is not None and cached[:4] == (self._data, width, height, theme):
            return cached[4]
        v = self.app.theme_variables
        colours = [v.get(name, "") for name in SERIES_VARIABLES]
        if has_points(self._data):
            body = Text.from_ansi(build_plot(self._data, width, max(height - 1, 4), colours))
        else:
            body = Text(self._data.empty, style="italic")
        drawn = Group(legend_text(self._data, colours), body)
        self._cache = (self._data, width, height, theme, drawn)
        return drawn
