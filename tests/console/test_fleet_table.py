"""The Fleet table on its own: drawn as Rich draws a cell, built only in view, keys, mouse, order.

The Fleet screen's tests (test_app.py, the snapshots) cover it inside the console; these
use 400 nodes in a short window so that most rows are off screen.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from console_waits import view_where
from rich.console import Console
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import App, ComposeResult
from textual.renderables.styled import Styled

from fleet.console.app import FleetApp
from fleet.console.screens.fleet import FleetScreen
from fleet.console.screens.node import NodeScreen
from fleet.console.view_model import NodeRow
from fleet.console.widgets.fleet_table import FleetTable, cell_segments
from fleet.fabric.health import Health

SIZE = (170, 24)
NODES = 400


def node(i: int, **changes: object) -> NodeRow:
    row = NodeRow(name=f"gpu{i:04d}", health=Health.OK, state="ok", reasons=(), group=i // 32,
                  worst_nic="mlx5_0", rx_gbps=float(i), tx_gbps=1.5, pause_per_s=None, cnp_per_s=0.0,
                  error_delta=0.0, optics_margin_db=3.2, gpu_util_pct=90.0, gpu_temp_c=61.0, xids=(),
                  jobs=("4101",), tenants=("acme",))
    return dataclasses.replace(row, **changes)  # type: ignore[arg-type]


class TableApp(App[None]):
    CSS = "FleetTable { height: 1fr; }"

    def __init__(self, rows: list[NodeRow]) -> None:
        super().__init__()
        self.rows = rows
        self.selected: list[str] = []
        self.headers: list[str] = []

    def compose(self) -> ComposeResult:
        yield FleetTable()

    def on_mount(self) -> None:
        table = self.query_one(FleetTable)
        table.show_rows(self.rows, frozenset())
        table.focus()

    def on_fleet_table_row_selected(self, message: FleetTable.RowSelected) -> None:
        self.selected.append(message.node)

    def on_fleet_table_header_selected(self, message: FleetTable.HeaderSelected) -> None:
        self.headers.append(message.column_key)


def line_text(table: FleetTable, y: int) -> str:
    """What the table shows on its line ``y`` (0: the header)."""
    return table.render_line(y).text


@pytest.mark.parametrize("cell", [
    Text("12.5", justify="right"),
    Text("● ok", style="#4cc38a"),
    Text("gpu001", style="bold reverse #ff00ff"),
    Text.assemble(("3× ", "red"), ("43,79", "bold")),
    Text("a-very-long-job-list,4101,4102,4103"),
    Text("[bold]not markup"),
    Text("two\nlines", justify="right"),
    Text("tab\there"),
    Text("ｇｐｕ全角", justify="center"),
    Text(""),
])
def test_a_cell_is_drawn_as_rich_draws_it_padded(cell: Text) -> None:
    """The table's own cell drawing gives the segments ``DataTable`` got from Rich."""
    console = Console(width=200, color_system="truecolor")
    pre, post = Style(bgcolor="#202020") + Style.from_meta({"row": 1}), Style(color="#ffffff")
    for width in (3, 8, 16):
        options = console.options.update_dimensions(width + 2, 1).update(no_wrap=True)
        expected = console.render_lines(Styled(Padding(cell, (0, 1)), pre_style=pre, post_style=post), options)[0]
        assert list(Segment.apply_style(cell_segments(console, cell, width), pre, post)) == expected


async def test_only_the_rows_in_view_are_built_and_changes_off_screen_wait() -> None:
    rows = [node(i) for i in range(NODES)]
    app = TableApp(rows)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.query_one(FleetTable)
        in_view = table.scrollable_content_region.height - 1
        assert table.virtual_size.height == NODES + 1
        assert 0 < len(table._cells) <= in_view  # built lazily: only what was drawn
        assert line_text(table, 1).split()[:2] == ["gpu0000", "●"]

        changed = list(rows)
        changed[2] = node(2, rx_gbps=777.0)  # on screen
        changed[300] = node(300, rx_gbps=888.0)  # off screen
        table.show_rows(changed, frozenset())
        assert table.applied_cells == 1  # the one visible cell that changed
        await pilot.pause()
        assert "777.0" in line_text(table, 3)
        assert str(table.get_cell("gpu0300", "rx")) == "888.0"

        table.move_cursor(row=300)
        await pilot.pause()
        y = 300 - int(table.scroll_y) + 1
        assert 1 <= y <= in_view and "888.0" in line_text(table, y)

        table.show_rows(changed, frozenset({"gpu0300"}))  # highlighted by a chosen job
        assert table.applied_cells == 1
        assert "reverse" in str(table.get_cell("gpu0300", "name").style)


async def test_keys_move_the_cursor_scroll_and_select() -> None:
    app = TableApp([node(i) for i in range(NODES)])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.query_one(FleetTable)
        page = table.scrollable_content_region.height - 1
        await pilot.press("down", "down")
        assert table.current_node() == "gpu0002" and table.scroll_y == 0
        await pilot.press("pagedown")
        assert table.cursor_row == 2 + page and table.scroll_y > 0
        await pilot.press("ctrl+end")
        await pilot.pause()
        assert table.current_node() == f"gpu{NODES - 1:04d}" and table.scroll_y == table.max_scroll_y
        assert line_text(table, page).split()[0] == f"gpu{NODES - 1:04d}"
        await pilot.press("pageup")
        assert table.cursor_row == NODES - 1 - page
        await pilot.press("ctrl+home", "enter")
        await pilot.pause()
        assert table.cursor_row == 0 and table.scroll_y == 0
        assert app.selected == ["gpu0000"]


async def test_clicks_move_the_cursor_then_select_and_headers_sort() -> None:
    app = TableApp([node(i) for i in range(NODES)])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.query_one(FleetTable)
        await pilot.click(FleetTable, offset=(2, 4))
        assert table.current_node() == "gpu0003" and app.selected == []
        await pilot.click(FleetTable, offset=(2, 4))
        await pilot.pause()
        assert app.selected == ["gpu0003"]
        layout = table.columns_layout
        state = layout.index["state"]
        await pilot.click(FleetTable, offset=(layout.starts[state] + layout.widths[state] // 2, 0))
        await pilot.pause()
        assert app.headers == ["state"] and table.current_node() == "gpu0003"

        def background(y: int) -> object:
            style = list(table.render_line(y))[1].style
            assert style is not None
            return style.bgcolor

        await pilot.hover(FleetTable, offset=(2, 8))
        assert background(8) != background(9)  # the row under the mouse
        await pilot.press("down")  # keys hide the hover again
        assert background(8) == background(9)


async def test_a_new_order_keeps_the_cursor_on_its_node() -> None:
    rows = [node(i) for i in range(NODES)]
    app = TableApp(rows)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.query_one(FleetTable)
        table.move_cursor(row=5)
        table.show_rows(rows[::-1], frozenset())  # sorted the other way
        await pilot.pause()
        assert table.current_node() == "gpu0005" and table.cursor_row == NODES - 6
        assert line_text(table, table.cursor_row - int(table.scroll_y) + 1).split()[0] == "gpu0005"
        table.show_rows(rows[100:120], frozenset())  # a filter without that node: back to the top
        await pilot.pause()
        assert table.current_node() == "gpu0100" and table.scroll_y == 0
        assert [line_text(table, y).split()[0] for y in (1, 20)] == ["gpu0100", "gpu0119"]
        assert line_text(table, 21).strip() == ""


async def test_until_a_row_is_picked_the_cursor_stays_on_the_top_row() -> None:
    """In an incident the rows re-sort as states arrive: the worst node stays under the cursor
    (what Enter opens) until the user picks a row, and a first click on it only picks it."""
    rows = [node(i) for i in range(NODES)]
    app = TableApp(rows)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.query_one(FleetTable)
        table.show_rows(rows[::-1], frozenset())
        await pilot.pause()
        assert table.cursor_row == 0 and table.current_node() == f"gpu{NODES - 1:04d}"
        await pilot.press("enter")
        await pilot.pause()
        assert app.selected == [f"gpu{NODES - 1:04d}"]
        await pilot.click(FleetTable, offset=(2, 1))  # a pick, not yet an open
        await pilot.pause()
        assert app.selected == [f"gpu{NODES - 1:04d}"]
        table.show_rows(rows, frozenset())  # picked: the cursor follows its node now
        await pilot.pause()
        assert table.current_node() == f"gpu{NODES - 1:04d}" and table.cursor_row == NODES - 1


async def test_on_the_fleet_screen_headers_sort_space_marks_and_a_second_click_opens(
        make_app: Callable[..., FleetApp]) -> None:
    app = make_app()
    async with app.run_test(size=(200, 40)) as pilot:
        await view_where(app, lambda v: len(v.rows) == 8)
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        table = screen.query_one(FleetTable)
        header = (table.columns_layout.start_of("group") + 1, 0)
        await pilot.click(FleetTable, offset=header)
        await pilot.pause()
        assert screen.sort_column == "group" and screen.sort_descending
        await pilot.click(FleetTable, offset=header)
        await pilot.pause()
        assert not screen.sort_descending
        groups = [r.group for r in sorted(app.view.rows, key=lambda r: table.order.index(r.name))]
        assert groups == sorted(groups)

        for row in (0, 2):
            await pilot.click(FleetTable, offset=(2, row + 1))
            await pilot.press("space")
        await pilot.pause()
        assert screen.marked == (table.order[0], table.order[2])
        assert f"marked {table.order[0]} {table.order[2]}" in str(screen.query_one("#reasons").render())

        await pilot.click(FleetTable, offset=(2, 2))
        await pilot.click(FleetTable, offset=(2, 2))
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen) and app.screen.node_name == table.order[1]
