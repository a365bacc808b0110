"""Reading helpers shared by the configuration parsers (mlnx_qos, lspci, lsmod, switch QoS, ...).

Why a module of its own: these tools print numbers that a hostile or broken
host can make anything (5,000 digits, ``"²"``, ``-1``), and every parser must
read them the same way: ASCII digits only, a bounded number of them, inside
the range the field can hold, else None and a problem. No regular expression
here runs over untrusted text, so every helper is linear in its input.
"""

from __future__ import annotations

MAX_DIGITS = 20
"""Digits read at most: 2**64 has 20, and ``int()`` of more is never needed."""

U64_MAX = 2**64 - 1


def ascii_int(text: str, low: int = 0, high: int = U64_MAX) -> int | None:
    """``text`` (surrounding blanks and thousands commas removed) as an int in ``[low, high]``, else None.

    Only ASCII digits count, with an optional leading ``-``: ``"²"`` and ``"٣"`` are not
    numbers here, as no tool prints them.
    """
    stripped = text.strip().replace(",", "")
    negative = stripped.startswith("-")
    digits = stripped[1:] if negative else stripped
    if not digits or len(digits) > MAX_DIGITS or not (digits.isascii() and digits.isdigit()):
        return None
    value = -int(digits) if negative else int(digits)
    return value if low <= value <= high else None


def ascii_float(text: str, low: float = 0.0, high: float = float(U64_MAX)) -> float | None:
    """A plain decimal (``"32"``, ``"2.5"``, ``"146.48"``) in ``[low, high]``, else None (no NaN, no exponent)."""
    stripped = text.strip()
    whole, _, fraction = stripped.partition(".")
    negative = whole.startswith("-")
    whole_digits = whole[1:] if negative else whole
    for part in (whole_digits, fraction):
        if part and not (part.isascii() and part.isdigit()):
            return None
    if (not whole_digits and not fraction) or len(whole_digits) > MAX_DIGITS or len(fraction) > MAX_DIGITS:
        return None
    value = float(f"{'-' if negative else ''}{whole_digits or '0'}.{fraction or '0'}")
    return value if low <= value <= high else None


def int_list(text: str, low: int = 0, high: int = U64_MAX, sep: str = ",") -> tuple[int, ...] | None:
    """``"3,4"`` -> (3, 4); empty parts (a trailing comma) are skipped; None when any part is not a number."""
    values: list[int] = []
    for part in text.split(sep):
        if not part.strip():
            continue
        value = ascii_int(part, low, high)
        if value is None:
            return None
        values.append(value)
    return tuple(values)


def indent_of(line: str) -> int:
    """Leading blanks, a tab counted as 8 (tools print either)."""
    width = 0
    for char in line:
        if char == " ":
            width += 1
        elif char == "\t":
            width += 8
        else:
            break
    return width


BYTE_UNITS = {"bytes": 1, "byte": 1, "b": 1, "kb": 1024, "mb": 1024**2, "gb": 1024**3, "tb": 1024**4}
"""NVUE prints buffer sizes and ECN thresholds with binary prefixes (``146.48 KB`` = 150,000 bytes)."""


def size_bytes(text: str) -> int | None:
    """``"146.48 KB"`` -> 149995, ``"1.43 MB"``, ``"0 Bytes"``, ``"150000"``; None for anything else."""
    number, _, unit = text.strip().partition(" ")
    factor = BYTE_UNITS.get(unit.strip().lower(), 0) if unit.strip() else 1
    value = ascii_float(number, 0.0, float(2**60))
    if value is None or not factor:
        return None
    return round(value * factor)
