"""Several commands in one SSH channel, their outputs told apart by marker lines.

Command mode runs one compound command per node per tick (one round trip,
not one per tool); ``echo`` prints a marker before each part so that the
output can be split again. The marker names are ours, never a machine's.
"""

from __future__ import annotations

import re

from fleet.collectors.commands import Command, command, sequence

_MARKER = "@@fleet-section:{}@@"
_MARKER_LINE = re.compile(r"^@@fleet-section:([A-Za-z0-9_.:-]+)@@$", re.MULTILINE)


def sectioned(parts: list[tuple[str, Command]]) -> Command:
    """``echo MARKER; part; echo MARKER; part; ...; true`` (``true``: a missing last tool is not a failed tick)."""
    commands: list[Command] = []
    for name, part in parts:
        commands.append(command("echo", _MARKER.format(name)))
        commands.append(part)
    commands.append(command("true"))
    return sequence(*commands)


def split_sections(text: str) -> dict[str, str]:
    """Marker-separated output -> ``{name: output}``; text before the first marker is dropped."""
    sections: dict[str, str] = {}
    matches = list(_MARKER_LINE.finditer(text))
    for index, match in enumerate(matches):
        start = match.end() + 1
        end = matches[index + 1].start() if index + 1 < len(matches) else len(text)
        sections[match.group(1)] = text[start:end]
    return sections
