"""SVG charts for the reports, drawn by the project itself: distributions and the pingmesh matrix.

Why our own: the report is one file a customer keeps for years and opens
offline; no chart library, no script, no network fetch. Every text that came
from a machine (node names) is XML-escaped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from fleet.fabric.localize import cell_reference

GOOD = "#2e7d32"
BAD = "#c62828"
MISSING = "#bdbdbd"
INK = "#212121"
BAR = "#1565c0"


def _num(value: float) -> str:
    return f"{value:.3g}"


def histogram(
    values: Sequence[float], *, title: str, unit: str, threshold: float | None = None, bins: int = 20,
    width: int = 520, height: int = 200,
) -> str:
    """Counts of ``values`` in ``bins`` equal ranges, with the threshold as a red line when given."""
    head = f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" ' \
           f'aria-label="{escape(title)}" viewBox="0 0 {width} {height}">'
    parts = [head, f'<text x="8" y="16" font-size="13" font-weight="bold" fill="{INK}">{escape(title)}</text>']
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        parts.append(f'<text x="8" y="60" font-size="12" fill="{INK}">no measurements</text></svg>')
        return "".join(parts)
    low, high = min(finite), max(finite)
    if threshold is not None and math.isfinite(threshold):
        low, high = min(low, threshold), max(high, threshold)
    if high == low:  # one value: a narrow range around it
        pad = max(abs(low) * 0.05, 1e-3)
        low, high = low - pad, high + pad
    span = high - low
    counts = [0] * bins
    for v in finite:
        counts[min(bins - 1, int((v - low) / span * bins))] += 1
    left, right, top, bottom = 40, width - 10, 28, height - 36
    plot_w, plot_h = right - left, bottom - top
    peak = max(counts)
    bar_w = plot_w / bins
    for i, count in enumerate(counts):
        if count:
            h = plot_h * count / peak
            parts.append(f'<rect x="{left + i * bar_w + 1:.1f}" y="{bottom - h:.1f}" width="{bar_w - 2:.1f}" '
                         f'height="{h:.1f}" fill="{BAR}"><title>{count}</title></rect>')
    parts.append(f'<line x1="{left}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="{INK}"/>')
    parts.append(f'<text x="{left}" y="{bottom + 14}" font-size="11" fill="{INK}">{_num(low)}</text>')
    parts.append(f'<text x="{right}" y="{bottom + 14}" font-size="11" text-anchor="end" fill="{INK}">'
                 f'{_num(high)}</text>')
    parts.append(f'<text x="{(left + right) / 2}" y="{bottom + 28}" font-size="11" text-anchor="middle" '
                 f'fill="{INK}">{escape(unit)} ({len(finite)} values)</text>')
    parts.append(f'<text x="4" y="{top + 10}" font-size="11" fill="{INK}">{peak}</text>')
    if threshold is not None and math.isfinite(threshold):
        x = left + (threshold - low) / span * plot_w
        parts.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{bottom}" stroke="{BAD}" stroke-width="2" '
                     f'stroke-dasharray="4 3"/>')
        near_right = x > left + plot_w * 0.7
        anchor, label_x = ("end", x - 3) if near_right else ("start", x + 3)
        parts.append(f'<text x="{label_x:.1f}" y="{top + 10}" font-size="11" text-anchor="{anchor}" fill="{BAD}">'
                     f"limit {_num(threshold)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def pingmesh(matrix: Mapping[str, Any], *, limit_usec: float | None = None, cell: int = 0) -> str:
    """One rail's p99 matrix as a heat map with its axes, labels and legend.

    Rows are clients (the node that sends), columns servers (the node that answers), both labelled
    when the cells are large enough to carry a name and numbered otherwise. A cell's colour runs
    from green at the reference p99 of its pair's path class (under one leaf, or through a spine:
    one switch hop apart on a healthy fabric, so a healthy pair is green either way) to red at
    ``limit_usec`` (the acceptance threshold) or 3x that reference; the legend under the map shows
    the scale, the references of both classes, and the marks: a black outline for a pair the link
    test flagged, grey for a pair not measured.
    """
    nodes = [str(n) for n in matrix.get("nodes", [])]
    cells: list[list[float | None]] = matrix.get("p99_usec", [])
    n = len(nodes)
    cell = cell or max(4, min(18, 480 // max(n, 1)))
    show_names = cell >= 8  # names fit beside rows and above columns; else numbers every few cells
    label_w = 70 if show_names else 34
    axis = 16  # room for the axis titles
    grid = n * cell
    left, top = axis + label_w, 24 + axis + label_w
    width = max(left + grid + 12, 460)
    legend_top = top + grid + 16
    height = legend_top + (86 if not show_names else 70)
    title = f"Pingmesh {matrix.get('nic', '')} (rail {matrix.get('rail', '')}): p99 latency, usec"
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="{escape(title)}" viewBox="0 0 {width} {height}">',
             f'<text x="4" y="14" font-size="13" font-weight="bold" fill="{INK}">{escape(title)}</text>',
             f'<text x="{left + grid / 2:.0f}" y="{24 + 11}" font-size="11" text-anchor="middle" fill="{INK}">'
             f"server (answers) &#8594;</text>",
             f'<text x="11" y="{top + grid / 2:.0f}" font-size="11" text-anchor="middle" fill="{INK}" '
             f'transform="rotate(-90 11 {top + grid / 2:.0f})">&#8592; client (sends)</text>']
    values = [v for row in cells for v in row if v is not None]
    refs = _references(matrix)
    fallback = min(values) if values else 1.0
    bad = {(str(a), str(b)) for a, b in matrix.get("bad_pairs", [])}
    every = 1 if show_names else max(1, math.ceil(14 / cell))
    size = min(cell, 11) if show_names else 9
    for i, row_node in enumerate(nodes):
        if show_names or i % every == 0:
            label = row_node if show_names else str(i + 1)
            parts.append(f'<text x="{left - 3}" y="{top + i * cell + min(cell, 11) - 1}" font-size="{size}" '
                         f'text-anchor="end" fill="{INK}">{escape(label)}</text>')
            x = left + i * cell + min(cell, 11) - 2
            parts.append(f'<text x="{x}" y="{top - 3}" font-size="{size}" fill="{INK}" '
                         f'transform="rotate(-90 {x} {top - 3})">{escape(label)}</text>')
        for j, col_node in enumerate(nodes):
            value = cells[i][j] if i < len(cells) and j < len(cells[i]) else None
            reference = cell_reference(matrix, i, j) or fallback
            colour = MISSING if value is None else _scale(value, reference, limit_usec or 3 * reference)
            outline = (row_node, col_node) in bad or (col_node, row_node) in bad
            stroke = f' stroke="{INK}" stroke-width="2"' if outline else ""
            tip = f"{row_node} -> {col_node}: " + ("not measured" if value is None else f"{value:g} usec")
            parts.append(f'<rect x="{left + j * cell}" y="{top + i * cell}" width="{cell - 1}" '
                         f'height="{cell - 1}" fill="{colour}"{stroke}><title>{escape(tip)}</title></rect>')
    parts += _legend(legend_top, limit_usec, refs, numbered=not show_names, nodes=n)
    parts.append("</svg>")
    return "".join(parts)


def _references(matrix: Mapping[str, Any]) -> dict[str, float]:
    """The matrix's reference p99 per path class (usec): one for the rail in a link test stored before
    the classes."""
    refs = matrix.get("reference_p99_usec")
    if isinstance(refs, Mapping):
        return {str(k): float(v) for k, v in refs.items() if isinstance(v, int | float)}
    return {"rail": float(refs)} if isinstance(refs, int | float) else {}


def _legend(y: float, limit_usec: float | None, refs: Mapping[str, float], *, numbered: bool,
            nodes: int) -> list[str]:
    """The colour scale and its ends, the references in usec, and what the marks mean."""
    steps, x0, bar_w = 24, 8, 240
    out = [f'<text x="{x0}" y="{y + 10}" font-size="11" fill="{INK}">p99:</text>']
    for k in range(steps):
        out.append(f'<rect x="{x0 + 30 + k * bar_w / steps:.1f}" y="{y}" width="{bar_w / steps + 0.5:.1f}" '
                   f'height="12" fill="{_scale(k / (steps - 1), 0.0, 1.0)}"/>')
    top = f"{_num(limit_usec)} usec (the threshold)" if limit_usec is not None else "3x its reference"
    out.append(f'<text x="{x0 + 30}" y="{y + 24}" font-size="10" fill="{INK}">its path\'s reference</text>'
               f'<text x="{x0 + 30 + bar_w}" y="{y + 24}" font-size="10" text-anchor="end" fill="{INK}">'
               f"{escape(top)}</text>")
    names = {"leaf": "within a leaf", "spine": "through a spine", "unknown": "leaves unknown", "rail": "the rail's"}
    words = ", ".join(f"{names.get(cls, cls)} {_num(value)}" for cls, value in refs.items()) or "none"
    out.append(f'<text x="{x0}" y="{y + 40}" font-size="10" fill="{INK}">reference p99 (usec): {escape(words)}</text>')
    mark_y = y + 50
    out.append(f'<rect x="{x0}" y="{mark_y}" width="10" height="10" fill="#ffffff" stroke="{INK}" stroke-width="2"/>'
               f'<text x="{x0 + 14}" y="{mark_y + 9}" font-size="10" fill="{INK}">flagged pair</text>'
               f'<rect x="{x0 + 92}" y="{mark_y}" width="10" height="10" fill="{MISSING}"/>'
               f'<text x="{x0 + 106}" y="{mark_y + 9}" font-size="10" fill="{INK}">not measured</text>')
    if numbered:
        out.append(f'<text x="{x0}" y="{mark_y + 24}" font-size="10" fill="{INK}">nodes numbered 1-{nodes} in the '
                   "order of the report's node list; hover a cell for its pair</text>")
    return out


def _scale(value: float, low: float, high: float) -> str:
    """Green at ``low``, amber half-way, red at ``high`` and above."""
    if high <= low:
        high = low + 1.0
    f = max(0.0, min(1.0, (value - low) / (high - low)))
    red = int(46 + (198 - 46) * f)
    green = int(125 + (40 - 125) * f)
    blue = int(50 + (40 - 50) * f)
    return f"#{red:02x}{green:02x}{blue:02x}"


__all__ = ["histogram", "pingmesh"]
