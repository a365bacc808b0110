"""The pure parts of what the console draws: numbers fitted to a column, sparklines, the columns
that fit a width, the footer's order, the topology picture, the pair matrix's window and the
memory the Fleet table keeps between views (trends, a steady worst NIC)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from rich.text import Text

from fleet.console.config_file import save_fleet_columns
from fleet.console.fabric_picture import State, build_picture, open_switch_findings
from fleet.console.formatting import fit_number, sparkline
from fleet.console.timespec import TimeSpecError, format_moment, parse_moment
from fleet.console.topology_model import LinkRow, SwitchRow, TopologyView
from fleet.console.view_memory import POINTS, TrendBook, WorstNicKeeper
from fleet.console.view_model import NodeRow
from fleet.console.widgets.fit_table import Col, fit_columns
from fleet.console.widgets.fleet_columns import COLUMNS, Layout
from fleet.console.widgets.key_bar import priority
from fleet.console.widgets.pair_matrix import MatrixView, Window, cursor_line, render_matrix
from fleet.fabric.events import Event, Severity
from fleet.fabric.health import Health, NodeHealth

NOON = 1_800_000_000.0 - 1_800_000_000.0 % 86400 + 12 * 3600  # a UTC noon


@pytest.mark.parametrize(("value", "width", "digits", "shown"), [
    (1903.0, 8, 1, "1,903.0"), (1903.0, 5, 1, "1,903"), (1903.0, 4, 1, "1.9k"),
    (5_924_412.0, 7, 0, "5.92M"), (242_550.0, 7, 0, "242,550"), (242_550.0, 6, 0, "243k"),
    (999_999.0, 5, 0, "1.00M"), (12.5, 7, 1, "12.5"), (-7.4, 7, 1, "-7.4"), (None, 7, 1, "-"),
    (float("nan"), 7, 1, "nan"), (3.2e12, 7, 0, "3.20T"),
])
def test_numbers_fit_their_column_and_are_never_cut_mid_digit(value: float | None, width: int, digits: int,
                                                                shown: str) -> None:
    text = fit_number(value, width, digits)
    assert text == shown and len(text) <= width


def test_a_sparkline_is_right_aligned_full_at_top_and_blank_where_unknown() -> None:
    assert sparkline([0.0, 500.0, 1000.0, 2000.0, None], 8, 1000.0) == "   ▁▄██ "
    assert sparkline([1.0] * 20, 10, 8.0) == "▁" * 10  # only the newest ten
    assert sparkline([], 4, 1.0) == "    "


def test_columns_give_way_by_priority_and_the_node_and_state_always_stay() -> None:
    every = [c.key for c in COLUMNS]
    wide = Layout(every, 400)
    assert [c.key for c in wide.columns] == every and not wide.hidden
    narrow = Layout(every, 80)
    kept = [c.key for c in narrow.columns]
    assert kept[:2] == ["name", "state"] and narrow.total_width <= 80
    assert {"rx", "pause", "errors", "worst_nic"} <= set(kept)
    dropped = {c.key: c.priority for c in COLUMNS if c.key not in kept}
    assert min(dropped.values()) >= max(c.priority for c in narrow.columns)
    tiny = Layout(every, 10)
    assert [c.key for c in tiny.columns] == ["name", "state"]
    header = Layout(every, 400).header("rx", True)
    assert header[[c.key for c in COLUMNS].index("rx")].plain == "▼rx Gb/s"
    assert all(len(column.label) + 1 <= column.width for column in COLUMNS)  # room for the arrow


def test_fit_columns_drop_the_least_telling_and_give_the_rest_to_the_flexible_one() -> None:
    columns = [Col("a", "a", 10), Col("b", "b", 10, 2), Col("c", "c", 10, 1), Col("m", "m", 10, flex=True)]
    assert [(c.key, w) for c, w in fit_columns(columns, 100)] == [("a", 10), ("b", 10), ("c", 10), ("m", 62)]
    assert [(c.key, w) for c, w in fit_columns(columns, 40)] == [("a", 10), ("c", 10), ("m", 14)]
    assert [(c.key, w) for c, w in fit_columns(columns, 20)] == [("a", 10), ("m", 10)]  # never below zero


def test_the_footer_puts_back_first_then_a_few_own_keys_then_the_screen_keys() -> None:
    order = sorted([("app.quit", None), ("node.back", 0), ("app.fleet", None), ("fleet.filter", 0),
                    ("fleet.bandwidth", 5), ("app.replay_jump", None), ("app.probes", None)],
                   key=lambda item: priority(*item))
    assert [i for i, _ in order] == ["node.back", "fleet.filter", "app.fleet", "app.probes", "fleet.bandwidth",
                                     "app.replay_jump", "app.quit"]


def test_go_to_time_takes_a_time_of_day_iso_dates_and_offsets() -> None:
    now = NOON + 30 * 60  # 12:30Z
    assert format_moment(parse_moment("11:50", now)) == format_moment(NOON - 600)
    assert parse_moment("11:50:30", now) == NOON - 570
    assert parse_moment("13:00", now) == NOON + 3600 - 86400  # not yet today: yesterday's
    assert parse_moment("-15m", now) == now - 900
    day = format_moment(now)[:10]
    assert parse_moment(day, now) == NOON - 12 * 3600
    assert parse_moment(f"{day}T11:50Z", now) == NOON - 600
    for wrong in ("25:00", "11:61", "soon"):
        with pytest.raises(TimeSpecError, match="try 11:50"):
            parse_moment(wrong, now)


def test_the_chosen_columns_are_saved_in_the_config_file_keeping_what_is_there(tmp_path: Path) -> None:
    path = tmp_path / "fleet" / "config.toml"
    save_fleet_columns(path, ("name", "state", "rx"))
    assert path.read_text() == 'fleet_columns = ["name", "state", "rx"]\n'
    path.write_text('# mine\ntheme = "fleet-light"\nfleet_columns = ["name"]\n\n[keymap]\n"fleet.filter" = "f"\n')
    save_fleet_columns(path, ("name", "errors"))
    assert path.read_text() == ('# mine\ntheme = "fleet-light"\nfleet_columns = ["name", "errors"]\n\n[keymap]\n'
                                '"fleet.filter" = "f"\n')
    path.write_text('[keymap]\n"fleet.filter" = "f"\n')
    save_fleet_columns(path, ("pause",))
    assert path.read_text().startswith('fleet_columns = ["pause"]\n[keymap]')


def _row(name: str, rx: float, **changes: object) -> NodeRow:
    row = NodeRow(name=name, health=Health.OK, state="ok", reasons=(), group=0, worst_nic="mlx5_0", rx_gbps=rx,
                  tx_gbps=rx, pause_per_s=0.0, cnp_per_s=0.0, error_delta=0.0, optics_margin_db=9.0,
                  gpu_util_pct=90.0, gpu_temp_c=60.0, xids=(), jobs=(), tenants=())
    return dataclasses.replace(row, **changes)  # type: ignore[arg-type]


def test_trends_keep_the_newest_value_of_each_half_minute_over_five_minutes() -> None:
    book = TrendBook()
    start = 1_800_000_000.0 - 1_800_000_000.0 % 30
    for k in range(12):  # six minutes, two views a bucket
        book.record(start + 15 * k, [_row("gpu001", float(k))])
    rx, pauses = book.trends("gpu001", start + 165)
    assert rx == tuple(float(k) for k in range(1, 12, 2)) and pauses == (0.0,) * 6
    later = start + 30 * (POINTS + 6)
    book.record(later, [_row("gpu001", 99.0)])
    assert book.trends("gpu001", later)[0] == (99.0,)  # older buckets left the window


def test_the_worst_nic_stays_until_another_is_clearly_worse() -> None:
    keeper = WorstNicKeeper()
    healthy = NodeHealth(Health.OK, (), "mlx5_0")
    traffic = {("rx_gbps", "mlx5_0", "1"): 100.0, ("rx_gbps", "mlx5_1", "1"): 104.0}
    assert keeper.pick("gpu001", healthy, traffic) == "mlx5_0"
    busier = NodeHealth(Health.OK, (), "mlx5_1")  # 4 % busier: the same to a person
    assert keeper.pick("gpu001", busier, traffic) == "mlx5_0"
    traffic[("rx_gbps", "mlx5_1", "1")] = 150.0
    assert keeper.pick("gpu001", busier, traffic) == "mlx5_1"
    sick = NodeHealth(Health.DEGRADED, ("x",), "mlx5_3", {"mlx5_3": ("optics",)})
    assert keeper.pick("gpu001", sick, traffic) == "mlx5_3"  # a NIC with a problem wins at once
    also = NodeHealth(Health.DEGRADED, ("x", "y"), "mlx5_4", {"mlx5_3": ("optics",), "mlx5_4": ("pauses",)})
    assert keeper.pick("gpu001", also, traffic) == "mlx5_3"  # as many problems: the one shown stays


def _link(port: str, peer: str, util: float | None = 20.0, **changes: object) -> LinkRow:
    link = LinkRow(port=port, peer_host=peer, peer_port="swp1", oper_up=True, util_pct=util, rx_gbps=1.0,
                   tx_gbps=1.0, drops_delta=0.0, pfc_pause=0.0, uplink=peer.startswith("spine"), cable="")
    return dataclasses.replace(link, **changes)  # type: ignore[arg-type]


def _fabric(groups: int, spines: int) -> TopologyView:
    switches = [SwitchRow(f"spine{s + 1:02d}", "spine", -1, -1, 0, 0, None, (), 0.0, 0, ()) for s in range(spines)]
    for g in range(groups):
        for r in range(8):
            name = f"leaf{8 * g + r + 1:02d}"
            links = tuple(_link(f"swp{33 + s}", f"spine{s + 1:02d}") for s in range(spines))
            switches.append(SwitchRow(name, "leaf", g, r, spines, spines, 20.0, (), 0.0, 0, links))
    return TopologyView(tuple(switches), ())


def test_the_picture_has_a_column_per_leaf_and_groups_leaves_when_they_do_not_fit() -> None:
    small = build_picture(_fabric(2, 4), {}, (), max_columns=30)
    assert not small.grouped and len(small.columns) == 16 and len(small.spines) == 4
    assert len(small.cells) == 64 and all(c.state is State.OK for c in small.cells.values())
    big = build_picture(_fabric(32, 16), {}, (), max_columns=30)  # 1,024 nodes: 256 leaves
    assert big.grouped and [c.label for c in big.columns[:3]] == ["g0", "g1", "g2"]
    assert len(big.columns) == 32 and len(big.columns[0].leaves) == 8
    assert len(big.cells[(0, 0)].links) == 8  # the group's eight leaves' uplinks to spine01


def test_down_hot_miswired_and_dropping_uplinks_are_marked_and_findings_mark_their_switch() -> None:
    view = _fabric(1, 4)
    leaf01 = view.switches[4]
    marked = dataclasses.replace(leaf01, links=(
        _link("swp33", "spine01", oper_up=False), _link("swp34", "spine02", util=95.0),
        _link("swp35", "spine03", cable="miswired: plan says leaf02"), _link("swp36", "spine04", drops_delta=5.0)))
    view = TopologyView((*view.switches[:4], marked, *view.switches[5:]), ())
    loss = Event(10.0, "spine_loss", Severity.CRITICAL, "spine loss: spine02", host="spine02", switch="spine02",
                 data={"finding": True})
    picture = build_picture(view, {}, (loss,), max_columns=30)
    assert [picture.cells[(s, 0)].mark for s in range(4)] == ["×", "▲", "≠", "!"]
    assert picture.spines[1].state is State.BAD and picture.spines[0].state is State.OK
    cleared = Event(20.0, "spine_loss", Severity.INFO, "cleared", host="spine02", switch="spine02",
                    data={"finding": True, "cleared": True})
    assert open_switch_findings((cleared, loss)) == {}  # newest first: cleared after it was raised


def test_the_matrix_window_pages_and_the_cursor_line_names_both_nodes() -> None:
    nodes = [f"gpu{i:03d}" for i in range(1, 33)]
    cells = [[None if i == j else 2.0 + (5.0 if 3 in (i, j) else 0.0) for j in range(32)] for i in range(32)]
    view = MatrixView({"rail": 0, "nic": "mlx5_0", "nodes": nodes, "p99_usec": cells, "reference_p99_usec": 2.1,
                       "bad_pairs": [["gpu004", "gpu001"]]})
    text = render_matrix(view, {}, Window(10, 20, 8, 10), (12, 25)).plain
    lines = text.splitlines()
    assert lines[0].startswith("rail 0 (mlx5_0) p99 usec, reference 2.10") and "rows 11-18 cols 21-30 of 32" in lines[0]
    assert lines[1].split() == ["21", "26", "30"]  # the first shown, the cursor's, every fifth that has room
    assert lines[2].split()[:2] == ["11", "gpu011"] and len(lines) == 2 + 8 + 2
    assert cursor_line(view, (12, 25)).plain == "▶ 13 gpu013 → 26 gpu026: p99 2.00 usec (1.0x its path's reference)"
    assert cursor_line(view, (3, 0)).plain.endswith("7.00 usec (3.3x its path's reference), flagged")
    assert Text("×") and "× outlier or failed" in lines[-1]
