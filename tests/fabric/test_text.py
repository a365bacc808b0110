"""clean_text: what a terminal would obey is gone, the words stay."""

from __future__ import annotations

import pytest

from fleet.fabric.text import clean_text

ESC, BEL, ST = "\x1b", "\x07", "\x1b\\"


@pytest.mark.parametrize(("hostile", "kept"), [
    (f"alice{ESC}[2J{ESC}[31mred{ESC}[0m", "alicered"),  # clear screen, colours
    (f"acme{ESC}]8;;https://evil.example/{ST}click{ESC}]8;;{ST}", "acmeclick"),  # OSC 8 hyperlink
    (f"job{ESC}]0;owned{BEL}", "job"),  # OSC 0 window title, BEL-terminated
    (f"gpu{ESC}P1$r{ST}", "gpu"),  # DCS (a request the terminal answers)
    (f"x{ESC}_apc payload{ST}y", "xy"),  # APC
    ("c1\x9b2Jcsi\x9d0;t\x9cend", "c1csiend"),  # the same commands as C1 characters
    (f"{ESC}7saved{ESC}8{ESC}c", "saved"),  # two-byte escapes (save/restore cursor, reset)
    (f"{ESC}(0line{ESC}(B", "line"),  # character set designation (intermediate + final)
    (f"half{ESC}]8;;https://evil.example/", "half"),  # unterminated OSC: its payload goes too
    (f"bare{ESC}", "bare"),
    ("nul\x00bel\x07del\x7fbs\x08", "nulbeldelbs"),
    ("admin\u202egnp.exe", "admingnp.exe"),  # right-to-left override (Trojan Source)
    ("\u2066isolate\u2069\u200emark", "isolatemark"),
])
def test_escape_sequences_and_controls_are_removed_whole(hostile: str, kept: str) -> None:
    assert clean_text(hostile) == kept
    assert clean_text(hostile, one_line=True) == kept
    assert clean_text(kept) == kept


@pytest.mark.parametrize("text", ["NVIDIA H100 80GB HBM3", "[bold]x[/bold] <script>alert(1)</script> | `a`",
                                  "Grüße 東京 ✓ 😀", ""])
def test_plain_text_and_markup_are_left_as_they_are(text: str) -> None:
    """Markup and HTML are text here: the console renders it as text, reports escape it."""
    assert clean_text(text) is text


def test_line_breaks_stay_in_text_and_become_spaces_in_a_field() -> None:
    text = "line one\r\n\tindented\nlast\u2028sep"
    assert clean_text(text) == "line one\n\tindented\nlast\u2028sep"
    assert clean_text(text, one_line=True) == "line one indented last sep"


@pytest.mark.parametrize("hostile", [
    f"{ESC}]" * 200_000,  # string commands that never end
    f"{ESC}[" + "0;" * 300_000,  # parameters without a final byte
    "\x9b" * 300_000,
])
def test_hostile_runs_are_cleaned_completely(hostile: str) -> None:
    """Pathological inputs come out clean (the patterns have no nested quantifiers: linear time,
    measured in benchmarks, not here)."""
    cleaned = clean_text(hostile)
    assert cleaned.isprintable()
