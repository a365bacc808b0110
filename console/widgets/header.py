"""The top line of every screen: where you are, LIVE or the replayed time, READ-ONLY, STORE FAILING, and
where the history comes from when it is not the local store."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from fleet.console.timespec import format_moment


class FleetHeader(Static):
    """Draws the screen title and the time mode; the screen tells it what to show."""

    DEFAULT_CSS = """
    FleetHeader { height: 1; background: $panel; color: $foreground; }
    """

    def show(self, title: str, moment_ts: float | None, live: bool, read_only: bool,
             store_failing: str = "", history: str = "") -> None:
        """``store_failing``: why the history cannot be written (one line), "" while it can; ``history``: where
        the history is read from when not the local store (``remote_history.history_label``)."""
        variables = self.app.theme_variables
        line = Text()
        line.append(" fleet ", style=f"bold {variables.get('primary', '')}")
        line.append(f"│ {title} │ ")
        if live:
            line.append(" LIVE ", style=f"bold reverse {variables.get('success', '')}")
            if moment_ts is not None:
                line.append(f" {format_moment(moment_ts)}")
        else:
            line.append(" REPLAY ", style=f"bold reverse {variables.get('replay', '')}")
            line.append(f" {format_moment(moment_ts)}" if moment_ts is not None else "")
        if read_only:
            line.append("  ")
            line.append(" READ-ONLY ", style=f"bold reverse {variables.get('warning', '')}")
        if store_failing:
            line.append("  ")
            line.append(" STORE FAILING ", style=f"bold reverse {variables.get('error', '')}")
            line.append(Text(f" {store_failing}", style=variables.get("error", "")))  # text, never markup
        if history:
            line.append(Text(f"  {history}", style=variables.get("secondary", "")))
        self.update(line)
