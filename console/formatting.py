"""Numbers and machine text turned into display text.

Everything that came from a machine goes through ``Text`` (never markup), so a
node name like ``[bold]x`` is shown as typed, not interpreted.
"""

from __future__ import annotations

from collections.abc import Mapping

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
