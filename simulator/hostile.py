"""What a machine under a ``hostile_output`` fault prints instead of a command's output.

Each form is output a collector meets on a real fleet in a bad hour (a tool
crashing half-way through its JSON, a firmware answering with another
table, a serial console's noise on stdout, a runaway loop) pushed to where
it breaks naive readers:

- ``deep_json``: a JSON object nested 100,000 levels deep (Python's ``json``
  raises ``RecursionError`` at about 1,000);
- ``wrong_table``: a one-column table where a tool prints several (a row
  reader that takes the second column raises ``IndexError``);
- ``binary``: 64 KiB of every byte value, invalid UTF-8 and escape
  sequences included, in lines of 255 bytes;
- ``long_line``: one line of 2 MiB (twice the collector's line cap);
- ``huge``: 16 MiB of short lines (twice the collector's output cap).

The text is what the SSH server sends: invalid UTF-8 bytes are carried as
``surrogateescape`` characters, which the server encodes back to those bytes.
"""

from __future__ import annotations

DEEP_JSON_LEVELS = 100_000
LONG_LINE_BYTES = 2 << 20
HUGE_BYTES = 16 << 20
BINARY_BYTES = 64 << 10

_LINE = "0123456789abcdef" * 4 + "garbage\n"
"""A short line of the ``huge`` form (72 bytes)."""


def hostile_output(form: str) -> str:
    """The text a ``hostile_output`` fault of ``form`` (``HOSTILE_FORMS``) prints for one command."""
    if form == "deep_json":
        return '{"lldp":' * DEEP_JSON_LEVELS + "{}" + "}" * DEEP_JSON_LEVELS + "\n"
    if form == "wrong_table":
        return "operational\n-----------\nup\n"
    if form == "binary":
        return (bytes(range(256)) * (BINARY_BYTES // 256)).decode("utf-8", "surrogateescape")
    if form == "long_line":
        return "x" * LONG_LINE_BYTES + "\n"
    if form == "huge":
        return _LINE * (HUGE_BYTES // len(_LINE))
    raise ValueError(f"no hostile output form {form!r}")
