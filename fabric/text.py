"""Text a machine said, made inert: the one cleaning rule for everything collected.

Why: a host name, a Slurm user, a GPU name or an error line is data, but a
terminal obeys the control characters inside it. ``ESC[2J`` clears the
engineer's screen, ``ESC]0;...BEL`` retitles the window, ``ESC]8;;URL ESC\\``
turns text into a link, C1 controls (U+0080..U+009F) are the same commands
in one character, and the Unicode bidirectional overrides make a line read
differently from what it holds (CVE-2021-42574, "Trojan Source"). The
collector cleans every such string where it enters (``clean_text``), so the
store, the console and every report hold only text.

The rule (docs/hostile-input.md):
- escape sequences are removed whole: CSI (``ESC [`` or U+009B, parameters,
  final byte), the string commands OSC, DCS, SOS, PM and APC (``ESC ]``,
  ``ESC P``, ``ESC X``, ``ESC ^``, ``ESC _`` or their C1 forms, up to BEL or
  ST, or to the next ESC or the end when unterminated: a terminal swallows
  that payload too), and every other ``ESC`` sequence (intermediates and a
  final byte, ECMA-48 section 5.3);
- every other C0 control, DEL and C1 control is removed, except that tab and
  the line breaks are kept in multi-line text and become one space in a
  one-line field (``one_line=True``: names, reasons, table cells);
- the bidirectional embedding, override and isolate controls (U+202A..U+202E,
  U+2066..U+2069) and the marks U+200E, U+200F, U+061C are removed.

The patterns match in time linear in the text: no nested quantifiers, and a
string command that never ends is cut at the next ESC, BEL or ST.
Pure: no I/O.
"""

from __future__ import annotations

import re

_SEQUENCES = re.compile(
    "\x1b\\[[0-?]*[ -/]*[@-~]"  # CSI: parameters, intermediates, final byte
    "|\x9b[0-?]*[ -/]*[@-~]"  # the same, as its C1 character
    "|(?:\x1b[\\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\\\|\x9c)?"  # OSC DCS SOS PM APC
    "|\x1b[ -/]*[0-~]?"  # any other escape sequence, or a bare ESC
)
_CONTROLS = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_BREAKS = re.compile("[\t\n\r\x0b\x0c\u2028\u2029]+")


def clean_text(text: str, *, one_line: bool = False) -> str:
    """``text`` without escape sequences or control characters (the module's rule).

    ``one_line``: tabs and line breaks (``\\r``, ``\\n``, U+2028, U+2029) become one
    space each run, for a field shown on one line; otherwise tab and ``\\n`` are
    kept and a ``\\r`` is dropped (a ``\\r\\n`` ending stays one line break).
    """
    if text.isprintable():  # the common case, one C scan: every character cleaned is not printable
        return text
    text = _SEQUENCES.sub("", text)
    text = _BREAKS.sub(" ", text) if one_line else text.replace("\r", "")
    return _CONTROLS.sub("", text)


__all__ = ["clean_text"]
