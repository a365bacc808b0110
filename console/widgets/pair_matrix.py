"""The link test's pair matrix of one rail: clients down, servers across, each cell coloured by p99.

Draws what it is given (``LinktestReport.matrix(rail)``, also stored in the link test's
summary probe): no I/O. A cursor walks the cells (arrows; ``pageup``/``pagedown`` a page of
rows, ``home``/``end`` a page of columns); the line under the matrix names the cursor's row
and column nodes and their p99, so a 32-node rail is read without counting columns. Columns
carry their number every five, the cursor's row and column are marked, and the window pages
across the nodes that do not fit. A flagged pair (failed, or p99 / p99.9 far above the rail's
reference) is ``×`` as well as coloured, so colour is never the only signal. Node names come
from machines: drawn as ``Text``, never markup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widget import Widget

from fleet.fabric.localize import cell_reference

SLOW_FACTOR = 1.5
"""A cell above 1.5x its reference p99 (its rail's, for its path class: same leaf or through a spine) is
drawn as slow (below the outlier rule of ``fleet.fabric.localize``, so a pair drifting towards a
problem shows before it is flagged)."""
NUMBERS_UP_TO_NODES = 8
"""Up to this many nodes a cell shows its p99 in usec; larger matrices draw one block per pair."""
GLYPH = {"ok": "■", "slow": "▲", "bad": "×", "none": "·"}
HEADER_LINES = 2
"""The title line and the column ticks."""
FOOTER_LINES = 2
"""The cursor line and the legend."""


def cell_class(p99_usec: float | None, reference_usec: float | None, flagged: bool) -> str:
    """``bad`` (flagged or failed), ``slow``, ``ok``, or ``none`` (not measured, or the diagonal)."""
    if flagged:
        return "bad"
    if p99_usec is None:
        return "none"
    if reference_usec and p99_usec > SLOW_FACTOR * reference_usec:
        return "slow"
    return "ok"


def _styles(v: Mapping[str, str]) -> dict[str, str]:
    return {"ok": v.get("health-ok", ""), "slow": v.get("health-degraded", ""), "bad": v.get("health-down", ""),
            "none": v.get("health-unknown", "")}


class Window(NamedTuple):
    """The part of the matrix on screen: first row and column, and how many of each fit."""

    row: int
    col: int
    rows: int
    cols: int


class MatrixView:
    """One rail's matrix as data: nodes, p99 per pair, which pairs are flagged."""

    def __init__(self, matrix: Mapping[str, Any]) -> None:
        self.matrix = matrix
        self.nodes: list[str] = [str(n) for n in matrix.get("nodes", [])]
        self.cells: list[list[float | None]] = matrix.get("p99_usec", [])
        self.reference_words = _reference_words(matrix.get("reference_p99_usec"))
        self.rail = matrix.get("rail")
        self.nic = str(matrix.get("nic", ""))
        self.flagged = {(str(a), str(b)) for a, b in matrix.get("bad_pairs", [])}
        self.numbers = len(self.nodes) <= NUMBERS_UP_TO_NODES
        self.cell_width = 6 if self.numbers else 2
        self.label_width = min(max((len(n) for n in self.nodes), default=4), 12) + 4

    def value(self, i: int, j: int) -> float | None:
        return self.cells[i][j] if i < len(self.cells) and j < len(self.cells[i]) else None

    def reference(self, i: int, j: int) -> float | None:
        """The p99 (usec) cell (i, j) is judged against: its path class's on this rail."""
        return cell_reference(self.matrix, i, j)

    def kind(self, i: int, j: int) -> str:
        if i == j:
            return "none"
        src, dst = self.nodes[i], self.nodes[j]
        return cell_class(self.value(i, j), self.reference(i, j),
                          (src, dst) in self.flagged or (dst, src) in self.flagged)


def _reference_words(reference: object) -> str:
    """``reference 1.62 usec within a leaf, 2.71 through a spine`` (one per rail for older link tests)."""
    if isinstance(reference, int | float):
        return f"reference {reference:.2f}"
    if isinstance(reference, Mapping) and reference:
        names = {"leaf": "in a leaf", "spine": "via a spine", "unknown": "leaves unknown"}
        return "reference " + ", ".join(f"{float(value):.2f} {names.get(str(cls), str(cls))}"
                                        for cls, value in reference.items())
    return "no reference"


def render_matrix(view: MatrixView, v: Mapping[str, str], window: Window, cursor: tuple[int, int] | None) -> Text:
    """The visible part of the matrix with its ticks, the cursor line and the legend."""
    styles = _styles(v)
    n = len(view.nodes)
    rows = range(window.row, min(n, window.row + window.rows))
    cols = range(window.col, min(n, window.col + window.cols))
    cw, label = view.cell_width, view.label_width
    out = Text(no_wrap=True, overflow="crop")
    out.append(f"rail {view.rail} ({view.nic}) p99 usec, {view.reference_words}", style="bold")
    if len(rows) < n or len(cols) < n:
        out.append(f"  rows {rows.start + 1}-{rows.stop} cols {cols.start + 1}-{cols.stop} of {n}")
    out.append("\n")
    out.append(" " * label)
    cursor_row, cursor_col = cursor if cursor is not None else (-1, -1)
    out.append_text(_ticks(view, cols, cursor_col))
    out.append("\n")
    for i in rows:
        on_row = i == cursor_row
        out.append(f"{i + 1:>3} ", style="bold reverse" if on_row else "dim")
        out.append(Text(view.nodes[i][: label - 4].ljust(label - 4), style="bold" if on_row else ""))
        for j in cols:
            kind = view.kind(i, j)
            style = styles[kind]
            if (i, j) == (cursor_row, cursor_col):
                style = f"{style} reverse".strip()
            if view.numbers:
                value = view.value(i, j)
                mark = "×" if kind == "bad" else ""
                shown = "·" if i == j else mark + (f"{value:.1f}" if value is not None else ("" if mark else "-"))
                out.append(f"{shown:>{cw}}", style=style)
            else:
                out.append(" ")
                out.append(GLYPH[kind], style=style)
        out.append("\n")
    out.append_text(cursor_line(view, cursor))
    out.append("\n")
    out.append_text(legend(v))
    return out


def _ticks(view: MatrixView, cols: range, cursor_col: int) -> Text:
    """Column numbers over the cells: every one when cells show numbers, else the cursor's (reversed),
    the first shown and every fifth, each kept only where it does not touch another."""
    cw = view.cell_width
    width = cw * len(cols)
    wanted = [cursor_col] if cursor_col in cols else []
    wanted += [j for j in cols if view.numbers or (j + 1) % 5 == 0 or j == cols.start]
    taken: list[tuple[int, int, int]] = []  # (start, end, column) on the tick line
    for j in wanted:
        label = str(j + 1)
        end = (j - cols.start + 1) * cw
        start = end - len(label)
        if start < 0 or any(start <= e and s <= end for s, e, _ in taken):
            continue
        taken.append((start, end, j))
    line = Text(" " * width)
    for start, end, j in taken:
        line = line[:start] + Text(str(j + 1), style="bold reverse" if j == cursor_col else
                                   "" if view.numbers else "dim") + line[end:]
    return line


def cursor_line(view: MatrixView, cursor: tuple[int, int] | None) -> Text:
    """The nodes of the cursor's row and column and what their pair measured."""
    if cursor is None or not view.nodes:
        return Text("")
    i, j = cursor
    line = Text("▶ ", style="bold")
    line.append(Text(f"{i + 1} {view.nodes[i]}", style="bold"))
    line.append(" → ")
    line.append(Text(f"{j + 1} {view.nodes[j]}", style="bold"))
    if i == j:
        line.append(": the diagonal (a node with itself)")
        return line
    value = view.value(i, j)
    kind = view.kind(i, j)
    line.append(f": p99 {value:.2f} usec" if value is not None else ": not measured")
    reference = view.reference(i, j)
    if value is not None and reference:
        line.append(f" ({value / reference:.1f}x its path's reference)")
    line.append({"ok": "", "slow": ", slow", "bad": ", flagged", "none": ""}[kind])
    return line


def legend(v: Mapping[str, str]) -> Text:
    styles = _styles(v)
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append("■ ok  ", style=styles["ok"])
    text.append(f"▲ > {SLOW_FACTOR:g}x its path's reference  ", style=styles["slow"])
    text.append("× outlier or failed  ", style=styles["bad"])
    text.append("· not measured", style=styles["none"])
    return text


class PairMatrix(Widget, can_focus=True):
    """One rail's matrix with a cursor; ``show(None)`` says that no link test has run yet."""

    DEFAULT_CSS = """
    PairMatrix { width: 1fr; height: 1fr; padding: 0 1; text-wrap: nowrap; text-overflow: clip; }
    PairMatrix:focus { background-tint: $foreground 5%; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1, 0)", "Up", show=False),
        Binding("down", "move(1, 0)", "Down", show=False),
        Binding("left", "move(0, -1)", "Left", show=False),
        Binding("right", "move(0, 1)", "Right", show=False),
        Binding("pageup", "page(-1, 0)", "Rows page up", show=False),
        Binding("pagedown", "page(1, 0)", "Rows page down", show=False),
        Binding("home", "page(0, -1)", "Columns page left", show=False),
        Binding("end", "page(0, 1)", "Columns page right", show=False),
        Binding("enter", "open_node", "Open node", show=False),
    ]

    class NodeOpened(Message):
        """``enter`` on a cell: open the node of its row."""

        def __init__(self, node: str) -> None:
            super().__init__()
            self.node = node

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.matrix: Mapping[str, Any] | None = None
        """The matrix drawn now (tests read it)."""
        self._view: MatrixView | None = None
        self.cursor = (0, 1)
        """(row, column) of the cursor."""
        self.origin = (0, 0)
        """First row and column on screen."""

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self.refresh())

    def show(self, matrix: Mapping[str, Any] | None) -> None:
        if matrix is self.matrix:
            return
        same_nodes = self._view is not None and matrix is not None and \
            [str(n) for n in matrix.get("nodes", [])] == self._view.nodes
        self.matrix = matrix
        self._view = MatrixView(matrix) if matrix is not None else None
        if not same_nodes:
            self.cursor, self.origin = (0, 1 if self._view and len(self._view.nodes) > 1 else 0), (0, 0)
        self.refresh()

    def window(self) -> Window:
        """The rows and columns that fit the widget now, from ``origin``."""
        view = self._view
        if view is None:
            return Window(0, 0, 0, 0)
        rows = max(1, self.content_size.height - HEADER_LINES - FOOTER_LINES)
        cols = max(1, (self.content_size.width - view.label_width) // view.cell_width)
        return Window(self.origin[0], self.origin[1], rows, cols)

    def _follow(self) -> None:
        """Move the window so the cursor is on screen."""
        w = self.window()
        row, col = self.cursor
        r0 = min(max(w.row, row - w.rows + 1), row)
        c0 = min(max(w.col, col - w.cols + 1), col)
        self.origin = (max(0, r0), max(0, c0))

    def action_move(self, rows: int, cols: int) -> None:
        if self._view is None or not self._view.nodes:
            return
        last = len(self._view.nodes) - 1
        self.cursor = (min(last, max(0, self.cursor[0] + rows)), min(last, max(0, self.cursor[1] + cols)))
        self._follow()
        self.refresh()

    def action_page(self, rows: int, cols: int) -> None:
        w = self.window()
        self.action_move(rows * w.rows, cols * w.cols)

    def action_open_node(self) -> None:
        if self._view is not None and self._view.nodes:
            self.post_message(self.NodeOpened(self._view.nodes[self.cursor[0]]))

    def on_resize(self) -> None:
        self._follow()

    def render(self) -> Text:
        if self._view is None:
            return Text("No link test in the store yet: press l to run one.")
        return render_matrix(self._view, self.app.theme_variables, self.window(), self.cursor)
