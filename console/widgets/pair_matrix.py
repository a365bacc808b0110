"""The link test's pair matrix of one rail: clients down, servers across, each cell coloured by p99.

Draws what it is given (``LinktestReport.matrix(rail)``, also stored in the
link test's summary probe): no I/O. A pair the test flagged (failed, or p99 /
p99.9 far above the rail's reference) is marked ``×`` as well as coloured, so
colour is never the only signal. Node names come from machines: drawn as
``Text``, never markup.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual.widgets import Static

from fleet.fabric.localize import cell_reference

SLOW_FACTOR = 1.5
"""A cell above 1.5x its reference p99 (its rail's, for its path class: same leaf or through a spine) is
drawn as slow (below the outlier rule of
``fleet.fabric.localize``, so a pair drifting towards a problem shows before it is flagged)."""
NUMBERS_UP_TO_NODES = 16
"""Up to this many nodes a cell shows its p99 in usec; larger matrices draw one block per pair."""


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


def render_matrix(matrix: Mapping[str, Any], v: Mapping[str, str]) -> Text:
    """The matrix as text: a row per client node, a column per server (numbered), and a legend."""
    nodes: list[str] = [str(n) for n in matrix.get("nodes", [])]
    cells: list[list[float | None]] = matrix.get("p99_usec", [])
    reference = matrix.get("reference_p99_usec")
    flagged = {(str(a), str(b)) for a, b in matrix.get("bad_pairs", [])}
    styles = _styles(v)
    numbers = len(nodes) <= NUMBERS_UP_TO_NODES
    width = 6 if numbers else 2
    label = max((len(n) for n in nodes), default=4) + 4
    out = Text()
    out.append(f"rail {matrix.get('rail')} ({matrix.get('nic', '')}), p99 usec; {_reference_words(reference)}\n")
    out.append(" " * label)
    for j in range(len(nodes)):
        out.append(f"{j + 1:>{width}}" if numbers else f"{(j + 1) % 100:>2}"[-2:])
    out.append("\n")
    for i, src in enumerate(nodes):
        out.append(f"{i + 1:>2} ")
        out.append(Text(src.ljust(label - 3)[: label - 3]))
        for j, dst in enumerate(nodes):
            value = cells[i][j] if i < len(cells) and j < len(cells[i]) else None
            kind = "none" if i == j else cell_class(value, cell_reference(matrix, i, j),
                                                    (src, dst) in flagged or (dst, src) in flagged)
            if numbers:
                mark = "×" if kind == "bad" else ""
                shown = "·" if i == j else mark + (f"{value:.1f}" if value is not None else ("" if mark else "-"))
                out.append(f"{shown:>{width}}", style=styles[kind])
            else:
                out.append({"ok": " ■", "slow": " ▲", "bad": " ×", "none": " ·"}[kind], style=styles[kind])
        out.append("\n")
    out.append("■ ok   ", style=styles["ok"])
    out.append(f"▲ slow (> {SLOW_FACTOR:g}x the reference of its path)   ", style=styles["slow"])
    out.append("× outlier or failed   ", style=styles["bad"])
    out.append("· not measured", style=styles["none"])
    return out


def _reference_words(reference: object) -> str:
    """``reference 1.62 usec within a leaf, 2.71 through a spine`` (one per rail for older link tests)."""
    if isinstance(reference, int | float):
        return f"reference {reference:.2f} usec"
    if isinstance(reference, Mapping) and reference:
        names = {"leaf": "within a leaf", "spine": "through a spine", "unknown": "leaves unknown"}
        return "reference " + ", ".join(f"{float(value):.2f} usec {names.get(str(cls), str(cls))}"
                                        for cls, value in reference.items())
    return "no reference"


class PairMatrix(Static):
    """One rail's matrix; ``show(None)`` says that no link test has run yet."""

    DEFAULT_CSS = """
    PairMatrix { width: auto; height: auto; padding: 0 1; }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.matrix: Mapping[str, Any] | None = None
        """The matrix drawn now (tests read it)."""

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._draw())

    def show(self, matrix: Mapping[str, Any] | None) -> None:
        self.matrix = matrix
        self._draw()

    def _draw(self) -> None:
        if self.matrix is None:
            self.update(Text("No link test in the store yet: press l to run one."))
            return
        self.update(render_matrix(self.matrix, self.app.theme_variables))
