"""One leaf's ECMP uplinks as horizontal bars: utilization per spine, max/mean and whether it is flagged.

Drawn the same way before and after a change so the two can be read side by
side. Every name (spine, port, job) comes from a machine: ``Text`` only.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.text import Text
from textual.widgets import Static

from fleet.fabric.ecmp import COLLISION, IDLE, NO_DATA, SQUEEZED, UNEVEN, LeafBalance

BAR_CELLS = 24


def bar(util_pct: float, cells: int = BAR_CELLS) -> str:
    """``util_pct`` (0-100) as filled and empty cells."""
    filled = max(0, min(cells, round(util_pct / 100.0 * cells)))
    return "█" * filled + "░" * (cells - filled)


def balance_text(balance: LeafBalance | None, title: str, theme_variables: Mapping[str, str]) -> Text:
    """Title line, one bar per uplink (hottest marked), the verdict in words."""
    text = Text(f"{title}\n", style="bold")
    if balance is None or not balance.uplinks:
        text.append("no uplink throughput in the store for this window\n")
        return text
    hot = theme_variables.get("health-degraded", "")
    flows = balance.flows if len(balance.flows) == len(balance.uplinks) else ()
    for index, uplink in enumerate(balance.uplinks):
        is_hot = uplink.port == balance.hot_port and (balance.imbalanced_now or balance.warning)
        text.append(f"{uplink.spine:>10} {uplink.port:<8} ")
        text.append(bar(uplink.util_pct), style=hot if is_hot else "")
        text.append(f" {uplink.util_pct:5.1f} %  {uplink.tx_gbps:6.1f} Gb/s")
        text.append(f"  ~{flows[index]} flows\n" if flows else "\n")
    mark, level = {
        SQUEEZED: ("FLAGGED: squeezed", "health-down"), COLLISION: ("COLLISION", "health-degraded"),
        UNEVEN: ("UNEVEN", "health-degraded"), IDLE: ("idle", "health-unknown"), NO_DATA: ("no data", "health-unknown"),
    }.get(balance.state, ("imbalanced, not yet sustained" if balance.imbalanced_now else "balanced", "health-ok"))
    style = theme_variables.get(level, "")
    text.append(f"max/mean {balance.imbalance:.2f}  spread {balance.spread_gbps:.1f} Gb/s  ")
    text.append(mark, style=f"bold {style}".strip())
    if balance.collision_rate is not None:
        text.append(f"  {balance.collision_words()}")
    if balance.reason:
        text.append(f"  ({balance.reason})")
    if balance.jobs:
        text.append(f"\njobs across this leaf: {', '.join(balance.jobs)}")
    return text


class UplinkBars(Static):
    """Draws what it is given; reads nothing."""

    def show(self, balance: LeafBalance | None, title: str) -> None:
        self.update(balance_text(balance, title, self.app.theme_variables))
