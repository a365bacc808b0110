"""Text filters a simulated shell runs on the right of ``|``: grep, head, tail, wc, sort, uniq, cat.

Engineers rehearsing an incident type ``ethtool -S ens1np0 | grep pause``;
these filters answer such pipelines with the coreutils/grep behaviour that
matters there (exit status 1 when grep matches nothing, ``-i -v -E -F -c -w
-e``, ``head/tail -n N`` and ``-N``, ``wc -l``, ``sort -n -r``, ``uniq -c``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

FilterResult = tuple[str, str, int]
"""(stdout, stderr, exit status)."""


@dataclass(frozen=True)
class _GrepOptions:
    patterns: tuple[str, ...]
    ignore_case: bool = False
    invert: bool = False
    extended: bool = False
    fixed: bool = False
    count: bool = False
    words: bool = False


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _join(lines: list[str]) -> str:
    text = "".join(lines)
    return text if not text or text.endswith("\n") else text + "\n"


def grep(argv: list[str], text: str) -> FilterResult:
    """``grep [-ivEFcw] [-e PATTERN]... PATTERN`` on standard input."""
    flags: set[str] = set()
    patterns: list[str] = []
    rest: list[str] = []
    words = argv[1:]
    i = 0
    while i < len(words):
        word = words[i]
        if word == "-e" and i + 1 < len(words):
            patterns.append(words[i + 1])
            i += 2
            continue
        if word.startswith("-") and len(word) > 1 and not rest:
            for flag in word[1:]:
                if flag not in "ivEFcwH":
                    return "", f"grep: invalid option -- '{flag}'\nUsage: grep [OPTION]... PATTERNS [FILE]...\n", 2
                flags.add(flag)
        else:
            rest.append(word)
        i += 1
    if not patterns:
        if not rest:
            return "", "Usage: grep [OPTION]... PATTERNS [FILE]...\n", 2
        patterns.append(rest.pop(0))
    if rest:
        return "", f"grep: {rest[0]}: No such file or directory\n", 2
    options = _GrepOptions(tuple(patterns), "i" in flags, "v" in flags, "E" in flags, "F" in flags, "c" in flags, "w" in flags)
    try:
        matcher = _matcher(options)
    except re.error as error:
        return "", f"grep: {error}\n", 2
    selected = [line for line in _lines(text) if matcher(line.rstrip("\n")) != options.invert]
    if options.count:
        return f"{len(selected)}\n", "", 0 if selected else 1
    return _join(selected), "", 0 if selected else 1


def _matcher(options: _GrepOptions) -> Callable[[str], bool]:
    compiled = []
    for pattern in options.patterns:
        if options.fixed:
            source = re.escape(pattern)
        elif options.extended:
            source = pattern
        else:  # basic regular expressions: \| \+ \? \( \) are the operators, bare ones literal
            source = _basic_to_python(pattern)
        if options.words:
            source = rf"(?<!\w)(?:{source})(?!\w)"
        compiled.append(re.compile(source, re.IGNORECASE if options.ignore_case else 0))
    return lambda line: any(p.search(line) for p in compiled)


def _basic_to_python(pattern: str) -> str:
    out = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            out.append(nxt if nxt in "|+?(){}" else "\\" + nxt)
            i += 2
            continue
        out.append("\\" + char if char in "|+?(){}" else char)
        i += 1
    return "".join(out)


def _count(argv: list[str], default: int) -> int | None:
    words = argv[1:]
    if not words:
        return default
    if words[0] == "-n" and len(words) > 1 and words[1].lstrip("+-").isdigit():
        return int(words[1].lstrip("+-"))
    if words[0].startswith("-n") and words[0][2:].isdigit():
        return int(words[0][2:])
    if words[0].startswith("-") and words[0][1:].isdigit():
        return int(words[0][1:])
    return None


def head(argv: list[str], text: str) -> FilterResult:
    if len(argv) == 3 and argv[1] == "-c" and argv[2].isdigit():
        return text.encode()[: int(argv[2])].decode(errors="ignore"), "", 0
    count = _count(argv, 10)
    if count is None:
        return "", f"head: invalid option -- '{' '.join(argv[1:])}'\n", 1
    return _join(_lines(text)[:count]), "", 0


def tail(argv: list[str], text: str) -> FilterResult:
    count = _count(argv, 10)
    if count is None:
        return "", f"tail: invalid option -- '{' '.join(argv[1:])}'\n", 1
    lines = _lines(text)
    return _join(lines[len(lines) - count :] if count else []), "", 0


def wc(argv: list[str], text: str) -> FilterResult:
    lines, words, chars = text.count("\n"), len(text.split()), len(text.encode())
    if argv[1:] == ["-l"]:
        return f"{lines}\n", "", 0
    if argv[1:] == ["-w"]:
        return f"{words}\n", "", 0
    if argv[1:] == ["-c"]:
        return f"{chars}\n", "", 0
    return f"{lines:7d} {words:7d} {chars:7d}\n", "", 0


def sort(argv: list[str], text: str) -> FilterResult:
    flags = "".join(w.lstrip("-") for w in argv[1:] if w.startswith("-"))
    lines = [line.rstrip("\n") for line in _lines(text)]

    def numeric(line: str) -> tuple[float, str]:
        match = re.match(r"\s*(-?\d+(?:\.\d+)?)", line)
        return (float(match.group(1)) if match else 0.0, line)

    ordered = sorted(lines, key=numeric) if "n" in flags else sorted(lines)
    if "r" in flags:
        ordered.reverse()
    return _join([line + "\n" for line in ordered]), "", 0


def uniq(argv: list[str], text: str) -> FilterResult:
    runs: list[tuple[str, int]] = []
    for line in _lines(text):
        if runs and runs[-1][0] == line:
            runs[-1] = (line, runs[-1][1] + 1)
        else:
            runs.append((line, 1))
    if "-c" in argv[1:]:
        return _join([f"{n:7d} {line}" for line, n in runs]), "", 0
    return _join([line for line, _ in runs]), "", 0


def cat(argv: list[str], text: str) -> FilterResult:
    return text, "", 0


FILTERS: dict[str, Callable[[list[str], str], FilterResult]] = {
    "grep": grep,
    "egrep": lambda argv, text: grep(["grep", "-E", *argv[1:]], text),
    "head": head,
    "tail": tail,
    "wc": wc,
    "sort": sort,
    "uniq": uniq,
    "cat": cat,
}
"""Filters by name; ``cat`` and ``grep`` act as filters only on the right of ``|`` without file arguments."""
