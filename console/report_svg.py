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
    """One rail's p99 matrix (rows: clients, columns: servers) coloured from green (fast) to red (slow).

    Cells of a bad pair are outlined; untested or failed cells are grey.
    The colour scale runs from the rail's reference p99 to ``limit_usec`` (or 3x the reference).
    """
    nodes = [str(n) for n in matrix.get("nodes", [])]
    cells: list[list[float | None]] = matrix.get("p99_usec", [])
    n = len(nodes)
    cell = cell or max(4, min(18, 480 // max(n, 1)))
    show_labels = cell >= 8  # names fit beside rows and above columns; else hover a cell for its pair
    label_w = 64 if show_labels else 8
    size = label_w + n * cell + 10
    width = max(size, 440)  # wide enough for the title
    title = f"Pingmesh {matrix.get('nic', '')} (rail {matrix.get('rail', '')}): p99 latency, usec"
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{size + 24}" role="img" '
             f'aria-label="{escape(title)}" viewBox="0 0 {width} {size + 24}">',
             f'<text x="4" y="14" font-size="13" font-weight="bold" fill="{INK}">{escape(title)}</text>']
    values = [v for row in cells for v in row if v is not None]
    refs = matrix.get("reference_p99_usec")
    known = [float(v) for v in (refs.values() if isinstance(refs, dict) else [refs]) if isinstance(v, int | float)]
    reference = min(known) if known else (min(values) if values else 1.0)
    top_value = limit_usec if limit_usec is not None else 3 * reference
    bad = {(str(a), str(b)) for a, b in matrix.get("bad_pairs", [])}
    top = 24 + label_w
    for i, row_node in enumerate(nodes):
        if show_labels:
            parts.append(f'<text x="{label_w - 3}" y="{top + i * cell + cell - 2}" font-size="{min(cell, 11)}" '
                         f'text-anchor="end" fill="{INK}">{escape(row_node)}</text>')
            x = label_w + i * cell + cell - 2
            parts.append(f'<text x="{x}" y="{top - 3}" font-size="{min(cell, 11)}" fill="{INK}" '
                         f'transform="rotate(-90 {x} {top - 3})">{escape(row_node)}</text>')
        for j, col_node in enumerate(nodes):
            value = cells[i][j] if i < len(cells) and j < len(cells[i]) else None
            colour = MISSING if value is None else _scale(value, reference, top_value)
            outline = (row_node, col_node) in bad or (col_node, row_node) in bad
            stroke = f' stroke="{INK}" stroke-width="2"' if outline else ""
            tip = f"{row_node} -> {col_node}: " + ("-" if value is None else f"{value:g} usec")
            parts.append(f'<rect x="{label_w + j * cell}" y="{top + i * cell}" width="{cell - 1}" '
                         f'height="{cell - 1}" fill="{colour}"{stroke}><title>{escape(tip)}</title></rect>')
    parts.append("</svg>")
    return "".join(parts)


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
