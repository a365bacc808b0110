"""The plot widget's data path: thinning long series and drawing with plotext."""

from __future__ import annotations

from rich.text import Text

from fleet.console.node_history import thin
from fleet.console.widgets.plot import PlotData, PlotSeries, build_plot, has_points, legend_text


def test_long_series_are_thinned_by_averaging_runs() -> None:
    raw = PlotSeries("rx", tuple(float(i) for i in range(3600)), tuple(float(i % 2) for i in range(3600)))
    thinned = thin(raw, 240)
    assert len(thinned.x) == len(thinned.y) == 240
    assert thinned.x[0] == sum(range(15)) / 15
    assert set(thinned.y) == {7 / 15, 8 / 15}
    short = PlotSeries("rx", (1.0,), (2.0,))
    assert thin(short, 240) is short


def test_the_legend_is_outside_the_plotting_area_and_both_axes_carry_their_unit() -> None:
    data = PlotData("throughput", "Gb/s", (PlotSeries("rx", (-2.0, -1.0, 0.0), (1.0, 5.0, 3.0)),
                                           PlotSeries("tx", (-2.0, -1.0, 0.0), (2.0, 2.0, 2.0))))
    lines = Text.from_ansi(build_plot(data, 50, 10, ["#ff0000", "#00ff00"])).plain.splitlines()
    assert len(lines) == 10 and all(len(line) == 50 for line in lines)
    assert not any("rx" in line or "tx" in line for line in lines)  # no legend box over the data
    assert lines[-1].split() == ["Gb/s", "min"]  # the y unit and the x unit under the axes
    legend = legend_text(data, ["#ff0000", "#00ff00"]).plain
    assert legend == "throughput Gb/s  ━ rx  ━ tx  (x: min)"
    assert not has_points(PlotData("pauses", "1/s")) and has_points(data)
