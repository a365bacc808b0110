"""The plain column tables switch CLIs print (python-tabulate's ``simple`` format).

SONiC's show commands call ``tabulate(..., tablefmt="simple", stralign="right")``
and NVUE prints the same shape left-aligned with every cell padded to its
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
) -> list[str]:
    """Lines of a ``simple`` table; ``right`` aligns every cell to the right."""
    widths = [len(h) for h in headers]
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
