"""The fabric as a picture: a row per spine above, the leaves (or leaf groups) as columns
below, and in every crossing the uplinks between them as a block whose height and colour
are their utilisation; down, miswired, dropping and hot links carry a mark as well as a
colour. Under the leaves: their ECMP balance (max/mean) and the state of their node ports.

Draws a ``FabricPicture`` (``console/fabric_picture.py``); no I/O. A cursor walks the
crossings (arrows); the screen drills into the one under it. Names come from machines:
``Text`` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widget import Widget

from fleet.console.fabric_picture import HOT_PCT, FabricPicture, LinkCell, State
from fleet.console.topology_model import BARS
from fleet.fabric.ecmp import LeafBalance

CELL = 3
"""The fewest cells a leaf column takes: a block between two blanks, or a leaf number up to 999."""
CELL_MAX = 6
"""The most: on a wide terminal the picture spreads out to this before it leaves room unused."""
SPINE_LABEL = 16
"""Cells for a spine's name, state glyph and utilisation at the left of its row."""
BUSY_PCT = 50.0
"""Below it a link is drawn in the calm colour; from it to ``HOT_PCT``, in the busy one."""
STATE_GLYPH = {State.OK: "●", State.UNKNOWN: "○", State.WARN: "▲", State.BAD: "■"}
STATE_VARIABLE = {State.OK: "health-ok", State.UNKNOWN: "health-unknown", State.WARN: "health-degraded",
                  State.BAD: "health-down"}


def cell_style(cell: LinkCell, v: Mapping[str, str]) -> str:
    if cell.state is State.BAD:
        return v.get("health-down", "")
    if cell.util_pct is None:
        return v.get("health-unknown", "")
    if cell.util_pct >= HOT_PCT:
        return v.get("health-degraded", "")
    if cell.util_pct >= BUSY_PCT:
        return v.get("primary", "")
    return v.get("health-ok", "")


def cell_glyph(cell: LinkCell) -> str:
    if cell.mark:
        return cell.mark
    if cell.util_pct is None:
        return "·"
    return BARS[max(1, min(len(BARS) - 1, round(cell.util_pct / 100 * (len(BARS) - 1))))]


ECMP_GLYPH = {"balanced": ("○", "health-ok"), "uneven": ("◐", "health-degraded"),
              "collision": ("◑", "health-degraded"), "squeezed": ("●", "health-down")}
"""A leaf's uplink balance (``fleet.fabric.ecmp`` states) in one cell; the numbers are in the details."""


def balance_state(balance: LeafBalance) -> str:
    """``squeezed`` (flagged), a warning state (``uneven``, ``collision``), else ``balanced``."""
    if balance.flagged:
        return "squeezed"
    return balance.state if balance.warning else "balanced"


def legend(v: Mapping[str, str]) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append("▁▃▅█ ", style="bold")
    text.append("uplink utilisation: ")
    text.append(f"< {BUSY_PCT:g} %  ", style=v.get("health-ok", ""))
    text.append(f"< {HOT_PCT:g} %  ", style=v.get("primary", ""))
    text.append(f"▲ hot ≥ {HOT_PCT:g} %  ", style=v.get("health-degraded", ""))
    text.append("× down  ≠ miswired  ! drops", style=v.get("health-down", ""))
    text.append("  · no data", style=v.get("health-unknown", ""))
    text.append("\nECMP balance of a leaf's uplinks: ")
    for state, (glyph, variable) in ECMP_GLYPH.items():
        text.append(f"{glyph} {state} ", style=v.get(variable, ""))
    return text


class FabricMap(Widget, can_focus=True):
    """Spines × leaf columns with a cursor; tells the screen which crossing is chosen."""

    DEFAULT_CSS = """
    FabricMap { height: auto; padding: 0 1; text-wrap: nowrap; text-overflow: clip; }
    FabricMap:focus { background-tint: $foreground 5%; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1, 0)", "Up", show=False),
        Binding("down", "move(1, 0)", "Down", show=False),
        Binding("left", "move(0, -1)", "Left", show=False),
        Binding("right", "move(0, 1)", "Right", show=False),
        Binding("home", "move(0, -1000000)", "First column", show=False),
        Binding("end", "move(0, 1000000)", "Last column", show=False),
    ]

    class CellChosen(Message):
        """The cursor moved to (spine row, leaf column)."""

        def __init__(self, row: int, column: int) -> None:
            super().__init__()
            self.row = row
            self.column = column

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.picture: FabricPicture | None = None
        self.cursor = (0, 0)
        """(spine row, leaf column)."""
        self._first_column = 0

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.refresh())

    def columns_that_fit(self) -> int:
        """Leaf columns the width holds (the screen groups leaves when they are more)."""
        width = self.content_size.width or max(20, self.app.size.width - 2)
        return max(1, (width - SPINE_LABEL - 1) // CELL)

    def show(self, picture: FabricPicture) -> None:
        old = self.picture
        self.picture = picture
        if old is None or [c.key for c in old.columns] != [c.key for c in picture.columns]:
            self.cursor = (0, 0)
            self._first_column = 0
        self._clamp()
        self.refresh(layout=True)

    def place(self, row: int | None = None, column: int | None = None) -> None:
        """Put the cursor on a spine row and/or a leaf column."""
        r, c = self.cursor
        self.cursor = (r if row is None else row, c if column is None else column)
        self._clamp()
        self.refresh()
        self.post_message(self.CellChosen(*self.cursor))

    def _clamp(self) -> None:
        picture = self.picture
        if picture is None:
            return
        rows, cols = max(1, len(picture.spines)), max(1, len(picture.columns))
        r, c = self.cursor
        self.cursor = (min(max(0, r), rows - 1), min(max(0, c), cols - 1))
        fit = self.columns_that_fit()
        c = self.cursor[1]
        if c < self._first_column:
            self._first_column = c
        elif c >= self._first_column + fit:
            self._first_column = c - fit + 1

    def action_move(self, rows: int, cols: int) -> None:
        self.place(self.cursor[0] + rows, self.cursor[1] + cols)

    def get_content_height(self, container: Any, viewport: Any, width: int) -> int:
        spines = len(self.picture.spines) if self.picture is not None else 0
        return spines + 7

    def render(self) -> Text:
        picture = self.picture
        if picture is None or (not picture.spines and not picture.columns):
            return Text("No switches in the store: the fabric is drawn once the collector reads the leaves and spines.")
        v = self.app.theme_variables
        fit = self.columns_that_fit()
        first = self._first_column
        shown = range(first, min(len(picture.columns), first + fit))
        width = self.content_size.width or max(20, self.app.size.width - 2)
        cw = max(CELL, min(CELL_MAX, (width - SPINE_LABEL - 1) // max(1, len(shown))))
        pad = (cw - 1) // 2
        out = Text(no_wrap=True, overflow="crop")
        cursor_row, cursor_col = self.cursor
        for r, spine in enumerate(picture.spines):
            label = Text()
            label.append(Text(f"{spine.name[:SPINE_LABEL - 8]:<{SPINE_LABEL - 8}}",
                              style="bold reverse" if r == cursor_row else "bold"))
            label.append(f" {STATE_GLYPH[spine.state]}", style=v.get(STATE_VARIABLE[spine.state], ""))
            util = f"{spine.util_pct:.0f}%" if spine.util_pct is not None else "-"
            label.append(f"{util:>5} ")
            out.append_text(label)
            out.append("┃")
            for c in shown:
                cell = picture.cells.get((r, c))
                if cell is None:
                    out.append(" " * cw)
                    continue
                style = cell_style(cell, v)
                if (r, c) == self.cursor:
                    style = f"{style} reverse".strip()
                out.append(f"{' ' * pad}{cell_glyph(cell)}{' ' * (cw - pad - 1)}", style=style)
            out.append("\n")
        out.append(" " * SPINE_LABEL + "┗" + "━" * (cw * len(shown)) + "\n")
        out.append(f"{'leaf groups' if picture.grouped else 'leaves':<{SPINE_LABEL}} ", style="bold")
        for c in shown:
            column = picture.columns[c]
            style = v.get(STATE_VARIABLE[column.state], "") if column.state is not State.OK else ""
            if c == cursor_col:
                style = f"bold reverse {style}".strip()
            out.append(_centred(column.label, cw, pad), style=style)
        out.append("\n")
        out.append(f"{'ECMP balance':<{SPINE_LABEL}} ")
        for c in shown:
            balance = picture.columns[c].balance
            if balance is None or not balance.uplinks:
                out.append(_centred("·", cw, pad), style=v.get("health-unknown", ""))
                continue
            glyph, variable = ECMP_GLYPH[balance_state(balance)]
            out.append(_centred(glyph, cw, pad), style=v.get(variable, ""))
        out.append("\n")
        out.append(f"{'node ports':<{SPINE_LABEL}} ")
        for c in shown:
            column = picture.columns[c]
            if column.node_ports_down:
                out.append(_centred(f"×{min(column.node_ports_down, 9)}", cw, pad), style=v.get("health-down", ""))
            elif column.cable_problems:
                out.append(_centred(f"≠{min(column.cable_problems, 9)}", cw, pad), style=v.get("health-down", ""))
            else:
                out.append(_centred("●", cw, pad), style=v.get("health-ok", ""))
        out.append("\n")
        if len(shown) < len(picture.columns):
            out.append(f"columns {shown.start + 1}-{shown.stop} of {len(picture.columns)} "
                       "(left/right pages)  ", style="dim")
        out.append_text(legend(v))
        return out


def _centred(word: str, width: int, pad: int) -> str:
    """``word`` in ``width`` cells, its last character where a block of the column is drawn."""
    start = max(0, pad + 1 - len(word))
    return (" " * start + word).ljust(width)[:width]
