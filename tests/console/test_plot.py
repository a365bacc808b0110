"""The plot widget's data path: thinning long series and drawing with plotext."""

from __future__ import annotations

from rich.text import Text

from fleet.console.node_history import thin
from fleet.console.widgets.plot import PlotData, PlotSeries, build_plot


def test_long_series_are_thinned_by_averaging_runs() -> None:
    raw = PlotSeries("rx", tuple(float(i) for i in range(3600)), tuple(float(i % 2) for i in range(3600)))
    thinned = thin(raw, 240)
    assert len(thinned.x) == len(thinned.y) == 240
    assert thinned.x[0] == sum(range(15)) / 15
    assert set(thinned.y) == {7 / 15, 8 / 15}
    short = PlotSeries("rx", (1.0,), (2.0,))
    assert thin(short, 240) is short


def test_build_plot_draws_title_legend_and_axes_in_the_size_asked() -> None:
    data = PlotData("throughput", "Gb/s", (PlotSeries("rx", (-2.0, -1.0, 0.0), (1.0, 5.0, 3.0)),))
    lines = Text.from_ansi(build_plot(data, 50, 10, ["#ff0000"])).plain.splitlines()
    assert len(lines) == 10 and all(len(line) == 50 for line in lines)
    assert "throughput" in lines[0] and any("rx" in line for line in lines)
    empty = Text.from_ansi(build_plot(PlotData("pauses", "1/s"), 40, 6, ["#ff0000"])).plain
    assert "pauses: no data" in empty
