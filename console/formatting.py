"""Numbers and machine text turned into display text.

Everything that came from a machine goes through ``Text`` (never markup), so a
node name like ``[bold]x`` is shown as typed, not interpreted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from rich.text import Text

from fleet.fabric.health import Health

HEALTH_GLYPH = {Health.OK: "●", Health.DEGRADED: "▲", Health.DOWN: "■", Health.UNKNOWN: "○"}
"""A shape per health so colour is never the only signal (colour-blind users, projectors)."""


def health_style(health: Health, theme_variables: Mapping[str, str]) -> str:
    return theme_variables.get(f"health-{health.value}", "")


def health_text(health: Health, label: str, theme_variables: Mapping[str, str]) -> Text:
    return Text(f"{HEALTH_GLYPH[health]} {label}", style=health_style(health, theme_variables))


def number(value: float | None, digits: int = 1, empty: str = "-") -> str:
    if value is None:
        return empty
    if abs(value) >= 10_000:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def count(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f}"


def plain(text: str, style: str = "") -> Text:
    """Machine text as a ``Text``: shown exactly, never parsed as markup."""
    return Text(text, style=style)


_SUFFIXES = ("", "k", "M", "G", "T", "P")


def fit_number(value: float | None, width: int, digits: int = 1, empty: str = "-") -> str:
    """``value`` in at most ``width`` characters, never cut mid-digit: with its decimals and
    thousands separators when they fit, then fewer decimals, then scaled to k/M/G/T/P with
    three significant digits where they fit (``5,924,412`` in 7 cells is ``5.92M``)."""
    if value is None:
        return empty
    if value != value:  # NaN: a collector's fact, shown as such
        return "nan"
    for d in range(digits, -1, -1):
        text = f"{value:,.{d}f}"
        if len(text) <= width:
            return text
    for power, suffix in enumerate(_SUFFIXES[1:], start=1):
        scaled = value / 1000.0**power
        if abs(scaled) >= 999.5 and power < len(_SUFFIXES) - 1:
            continue
        for d in (2, 1, 0):
            text = f"{scaled:.{d}f}{suffix}"
            if len(text) <= width and (d == 0 or abs(scaled) < 10 ** (3 - d)):
                return text
    return "#" * width


BARS = " ▁▂▃▄▅▆▇█"
"""Eight heights; a blank is a moment without a value."""


def sparkline(values: Sequence[float | None], width: int, top: float) -> str:
    """The last ``width`` values as bars, full height at ``top`` (and above); right-aligned, so the
    newest value is always the rightmost cell. A zero is the lowest bar (measured), None a blank."""
    shown = list(values)[-width:]
    out = []
    for value in shown:
        if value is None:
            out.append(" ")
        elif value <= 0 or top <= 0:
            out.append(BARS[1])
        else:
            out.append(BARS[max(1, min(8, math.ceil(value / top * 8)))])
    return " " * (width - len(out)) + "".join(out)
