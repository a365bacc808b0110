"""The bottom line of every screen: the keys that fit, most useful first, `?` and `q` always.

Textual's ``Footer`` lays every shown binding out in a row and cuts the row at the
terminal's edge, so on a 120-column terminal the screen keys pushed `?` and `q`
off the line. This bar orders the keys by :func:`priority`, keeps adding them while
they fit the width it has, and always ends with `?` (every key, with its binding id)
and `q`; a terminal of 30 rows or more gives it a second line when one does not hold every key. The screen keys (`1` `2` `3` `4` `p`) read like tabs: the one of the
screen shown is drawn reversed. A click on a key presses it.
"""

from __future__ import annotations

from typing import NamedTuple

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.reactive import reactive
from textual.widget import Widget

PINNED = ("app.help", "app.quit")
"""Always drawn, at the right end: the way to every other key, and the way out."""
SCREEN_KEYS = ("app.fleet", "app.events", "app.jobs", "app.topology", "app.probes")
"""The top-level screens, in the order a newcomer walks them; drawn like tabs."""
LATER = ("app.replay_jump", "app.replay_back", "app.replay_forward", "app.replay_live",
         "app.baselines", "app.walkthrough", "app.audit", "app.palette", "app.screenshot")
"""App keys after the screen's own: replay, the tool screens, palette and screenshot."""
FIRST_OWN = 2
TWO_LINES_FROM = 30
"""Terminal rows from which the bar may take a second line for the keys that do not fit one."""
"""How many of the screen's own keys come before the screen keys (the rest come after them)."""


class Shown(NamedTuple):
    """One key as drawn: its line, where it starts and ends on it, and the key it presses."""

    line: int
    start: int
    end: int
    key: str


def priority(binding_id: str | None, own_index: int | None) -> tuple[int, int]:
    """Sort key of one binding: lower is drawn first.

    ``own_index``: the binding's position among the screen's own keys (None for app keys).
    A "back" key comes first on a pushed screen; then the screen's first few keys, the
    screen keys, the rest of the screen's keys, then replay and the tool screens.
    """
    if binding_id is not None and binding_id.endswith(".back"):
        return (0, 0)
    if own_index is not None:
        return (1, own_index) if own_index < FIRST_OWN else (3, own_index)
    if binding_id in SCREEN_KEYS:
        return (2, SCREEN_KEYS.index(binding_id))
    if binding_id in LATER:
        return (4, LATER.index(binding_id))
    return (5, 0)


class KeyBar(Widget):
    """Draws the current screen's active bindings that fit; reads nothing else."""

    DEFAULT_CSS = """
    KeyBar { dock: bottom; height: 1; text-wrap: nowrap; text-overflow: ellipsis; background: $footer-background; color: $footer-foreground; }
    """

    current_mode: reactive[str] = reactive("")
    """The binding id of the screen key drawn as the current tab (``app.fleet`` ...), or ""."""

    def __init__(self, *, current: str = "", **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.set_reactive(KeyBar.current_mode, current)
        self.shown: list[Shown] = []
        """The keys on the line after the last draw, with their columns (clicks, tests)."""

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, lambda _screen: self._bindings_changed())
        self.call_after_refresh(lambda: self.fit_height(self.app.size.height))

    def _bindings_changed(self) -> None:
        self.fit_height(self.app.size.height)
        self.refresh()

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def _candidates(self) -> tuple[list[Binding], list[Binding]]:
        """(ordered keys, pinned keys) among the screen's active, shown, enabled bindings."""
        own_ids: dict[int, int] = {}
        ordered: list[tuple[tuple[int, int], int, Binding]] = []
        pinned: dict[str, Binding] = {}
        seen: set[str] = set()
        for position, active in enumerate(self.screen.active_bindings.values()):
            binding = active.binding
            if not binding.show or not active.enabled or binding.action in seen:
                continue
            seen.add(binding.action)
            if binding.id in PINNED:
                pinned[binding.id] = binding
                continue
            own = None
            if active.node is not self.app:
                own = own_ids.setdefault(position, len(own_ids))
            ordered.append((priority(binding.id, own), position, binding))
        ordered.sort(key=lambda item: (item[0], item[1]))
        return [b for _p, _i, b in ordered], [pinned[i] for i in PINNED if i in pinned]

    def _piece(self, binding: Binding) -> Text:
        """``k Label `` (the key bold in the theme's key colour); the current screen's reversed."""
        key_colour = self.app.theme_variables.get("footer-key-foreground", "")
        current = binding.id == self.current_mode and binding.id in SCREEN_KEYS
        piece = Text()
        piece.append(self.app.get_key_display(binding), style="bold reverse" if current else f"bold {key_colour}".strip())
        piece.append(f" {binding.description}", style="reverse" if current else "")
        piece.append(" ")
        return piece

    def fit_height(self, terminal_rows: int) -> None:
        """Two lines on a terminal of ``TWO_LINES_FROM`` rows or more when one does not hold every
        key (a 120x35 terminal then shows every screen's keys, Baselines and Audit included)."""
        width = self.size.width or self.app.size.width
        ordered, pinned = self._candidates()
        needed = sum(self._piece(b).cell_len for b in (*ordered, *pinned))
        lines = 2 if terminal_rows >= TWO_LINES_FROM and needed > width else 1
        if self.styles.height is None or self.styles.height.value != lines:
            self.styles.height = lines

    def render(self) -> Text:
        width = self.size.width
        lines = max(1, self.size.height)
        ordered, pinned = self._candidates()
        tail = [self._piece(b) for b in pinned]
        rows: list[list[tuple[Binding, Text]]] = [[] for _ in range(lines)]
        rooms = [width - 1] * lines  # each line starts with a blank
        rooms[0] -= sum(p.cell_len for p in tail)
        for binding in ordered:
            piece = self._piece(binding)
            for row in range(lines):
                if piece.cell_len <= rooms[row]:
                    rows[row].append((binding, piece))
                    rooms[row] -= piece.cell_len
                    break
        text = Text(no_wrap=True, overflow="crop")
        self.shown = []
        for row in range(lines):
            if row:
                text.append("\n")
            start_of_row = text.cell_len
            text.append(" ")
            entries = rows[row] + (list(zip(pinned, tail, strict=True)) if row == 0 else [])
            for index, (binding, piece) in enumerate(entries):
                if row == 0 and index == len(rows[0]):
                    text.append(" " * max(0, rooms[0]))  # `?` and `q` sit at the right end
                start = text.cell_len - start_of_row
                text.append_text(piece)
                self.shown.append(Shown(row, start, text.cell_len - start_of_row, binding.key.split(",")[0]))
        return text

    def on_click(self, event: events.Click) -> None:
        for shown in self.shown:
            if shown.line == event.y and shown.start <= event.x < shown.end:
                self.app.simulate_key(shown.key)
                event.stop()
                return
