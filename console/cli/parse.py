"""`fleet parse`: run one of the tool-output parsers on a file and print what it read.

Why: the quickest way to see what fleet makes of a real capture (and to file
a precise bug when it misreads one) is to feed it the capture directly,
without a cluster.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from typing import Any, NoReturn

import click

from fleet.collectors.parsers.base import ParseError
from fleet.collectors.parsers.registry import KINDS, ParserUnavailable, detect, to_jsonable
from fleet.collectors.parsers.registry import parse as run_parser
from fleet.console.cli.exit_codes import ExitCode

# Larger inputs are refused rather than read into memory: no tool prints this much.
MAX_INPUT_BYTES = 256 * 1024 * 1024
LISTED_ITEMS = 5
LISTED_PROBLEMS = 10
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


class _Failure(click.ClickException):
    """A one-line error on stderr and exit status 1 (the parser could not be run; docs/exit-codes.md)."""

    def show(self, file: Any = None) -> None:
        click.echo(f"fleet parse: {self.format_message()}", err=True)


class _UsageFailure(_Failure):
    """A one-line error on stderr and exit status 2 (wrong arguments; a file that cannot be
    read, whose tool cannot be told, or that its parser refuses)."""

    exit_code = int(ExitCode.USAGE)


def _fail(message: str, exit_code: ExitCode) -> NoReturn:
    raise (_UsageFailure if exit_code == ExitCode.USAGE else _Failure)(_safe(message))


def _safe(text: str) -> str:
    """Text from a capture with control characters (escape sequences) made visible."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def _read(path: str) -> str:
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1)
        else:
            with open(path, "rb") as handle:
                data = handle.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        _fail(f"cannot read {path}: {exc.strerror or exc}", ExitCode.USAGE)
    if len(data) > MAX_INPUT_BYTES:
        _fail(f"{path} is larger than {MAX_INPUT_BYTES // 2**20} MiB", ExitCode.USAGE)
    return data.decode("utf-8", errors="replace")


def _brief(value: Any) -> str:
    """One line for a value: dataclasses as ``field=value`` pairs, long text cut."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        parts = []
        for item in dataclasses.fields(value):
            inner = getattr(value, item.name)
            if isinstance(inner, tuple) and len(inner) > 3:
                parts.append(f"{item.name}=[{len(inner)} items]")
            else:
                parts.append(f"{item.name}={_brief(inner)}")
        text = " ".join(parts)
    elif isinstance(value, tuple):
        text = "(" + ", ".join(_brief(v) for v in value) + ")"
    else:
        text = repr(value) if isinstance(value, str) else str(value)
    return _safe(text if len(text) <= 240 else text[:237] + "...")


def _summary(kind: str, detected: bool, result: Any) -> str:
    lines = [f"kind: {kind}" + (" (detected)" if detected else "")]
    problems = getattr(result, "problems", ())
    tail: list[str] = []
    for item in dataclasses.fields(result):
        if item.name == "problems":
            continue
        value = getattr(result, item.name)
        if isinstance(value, tuple) and value and not isinstance(value[0], str | int | float):
            tail.append(f"{item.name}: {len(value)}")
            tail.extend(f"  {_brief(v)}" for v in value[:LISTED_ITEMS])
            if len(value) > LISTED_ITEMS:
                tail.append(f"  ... {len(value) - LISTED_ITEMS} more (use --json for all)")
        else:
            lines.append(f"{item.name}: {_brief(value)}")
    lines.extend(tail)
    lines.append(f"problems: {len(problems)}")
    for entry in problems[:LISTED_PROBLEMS]:
        lines.append(f"  line {entry.line}: {_safe(entry.reason)}: {_safe(entry.text)!r}")
    if len(problems) > LISTED_PROBLEMS:
        lines.append(f"  ... {len(problems) - LISTED_PROBLEMS} more")
    return "\n".join(lines)


@click.command("parse")
@click.argument("args", nargs=-1, metavar="[KIND] FILE")
@click.option("--json", "as_json", is_flag=True, help='Print {"kind": ..., "result": ...} as JSON.')
@click.option("--list", "list_kinds", is_flag=True, help="List the kinds and exit.")
def parse(args: tuple[str, ...], as_json: bool, list_kinds: bool) -> None:
    """Parse FILE ('-' for stdin) as KIND, or detect the kind when KIND is left out.

    \b
    Examples:
      fleet parse --list
      fleet parse perftest ib_write_bw.txt --json
      ssh node1 nvidia-smi topo -m | fleet parse -

    Without --json a short summary is printed. Floats in --json: NaN is
    null, infinities are "inf" / "-inf".

    Exit status: 0 parsed (problems, if any, are in the output); 2 wrong
    arguments, or a file that cannot be read, whose tool cannot be told, or
    that the parser refuses as a whole (one line on stderr says why); 1 a
    parser that cannot be loaded.
    """
    if list_kinds:
        if args:
            _fail("--list takes no arguments", ExitCode.USAGE)
        if as_json:
            listing = [{"kind": s.kind, "command": s.description} for s in KINDS.values()]
            click.echo(json.dumps(listing, indent=2))
        else:
            width = max(len(kind) for kind in KINDS)
            for spec in KINDS.values():
                click.echo(f"{spec.kind:<{width}}  {spec.description}")
        return
    if len(args) == 1:
        kind, path = None, args[0]
    elif len(args) == 2:
        kind, path = args
    else:
        _fail("expected [KIND] FILE (see fleet parse --help)", ExitCode.USAGE)
    if kind is not None and kind not in KINDS:
        _fail(f"unknown kind {kind!r} (fleet parse --list shows the kinds)", ExitCode.USAGE)
    text = _read(path)
    detected = kind is None
    if kind is None:
        kind = detect(text)
        if kind is None:
            _fail(f"cannot tell what tool printed {path}; name the kind (fleet parse --list)", ExitCode.USAGE)
    try:
        result = run_parser(kind, text)
    except ParserUnavailable as exc:
        _fail(str(exc), ExitCode.FAILED)
    except ParseError as exc:
        _fail(f"{path} is not {kind} output: {exc.reason}", ExitCode.USAGE)
    if as_json:
        payload = {"kind": kind, "detected": detected, "result": to_jsonable(result)}
        sys.stdout.write(json.dumps(payload, indent=2, ensure_ascii=False) + "\n")
    else:
        click.echo(_summary(kind, detected, result))
