"""The plain column tables switch CLIs print (python-tabulate's ``simple`` format).

SONiC's show commands call ``tabulate(..., tablefmt="simple", stralign="right")``
(header cells padded by two blanks, ``RX_OK`` over a 7-dash rule) and NVUE prints the same shape left-aligned with every cell padded to its
column width (trailing blanks included). Columns are separated by two spaces,
the rule under the header is one run of dashes per column.
"""

from __future__ import annotations

from collections.abc import Sequence


def simple_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    right: bool,
    indent: str = "",
    min_padding: int = 0,
) -> list[str]:
    """Lines of a ``simple`` table; ``right`` aligns every cell to the right.

    ``min_padding`` widens every column to its header plus that many blanks:
    tabulate's ``MIN_PADDING`` (2), which SONiC's tables show and NVUE's do not.
    """
    widths = [len(h) + min_padding for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))

    def line(cells: Sequence[str]) -> str:
        padded = [c.rjust(w) if right else c.ljust(w) for c, w in zip(cells, widths, strict=True)]
        return indent + "  ".join(padded)

    out = [line(headers), indent + "  ".join("-" * w for w in widths)]
    out += [line(row) for row in rows]
    return out


def natural_key(name: str) -> tuple[str, int]:
    """Sort ``Ethernet4`` before ``Ethernet12`` and ``swp2`` before ``swp10``."""
    stem = name.rstrip("0123456789")
    digits = name[len(stem) :]
    return stem, int(digits) if digits else -1
