"""Plain shell utilities of a simulated machine: hostname, uname, date, echo, true, false."""

from __future__ import annotations

import re
import time

from fleet.simulator.tools import ToolContext, ToolOutput, register


@register("hostname")
def hostname(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``hostname [-s|-f|-I|-i]`` (net-tools/hostname)."""
    opts = argv[1:]
    short = ctx.hostname.split(".")[0]
    if not opts:
        return ToolOutput(ctx.hostname + "\n")
    opt = opts[0]
    if opt in ("-s", "--short"):
        return ToolOutput(short + "\n")
    if opt in ("-f", "--fqdn", "--long"):
        fqdn = ctx.node.hostname_fqdn if ctx.node is not None else ctx.hostname
        return ToolOutput(fqdn + "\n")
    if opt in ("-I", "--all-ip-addresses", "-i", "--ip-address"):
        address = ctx.node.mgmt_ip if ctx.node else (ctx.switch.mgmt_ip if ctx.switch else "")
        return ToolOutput(
            f"{address} \n" if opt in ("-I", "--all-ip-addresses") else f"{address}\n"
        )
    if opt.startswith("-"):
        return ToolOutput(
            "",
            f"hostname: invalid option -- '{opt.lstrip('-')[:1]}'\n"
            "Usage: hostname [-b] {hostname|-F file}         set host name (from file)\n",
            1,
        )
    return ToolOutput("", "hostname: you must be root to change the host name\n", 1)


def _kernel_version(release: str) -> str:
    """The ``#...`` build string that goes with a release ("5.15.0-105-generic" -> "#115-Ubuntu SMP ...").

    Ubuntu numbers builds by the ABI plus its upload count; enterprise kernels print "#1 SMP".
    """
    match = re.match(r"\d+\.\d+\.\d+-(\d+)-(generic|lowlatency|nvidia|aws|azure|gcp)", release)
    if match:
        return f"#{int(match.group(1)) + 10}-Ubuntu SMP Mon Apr 15 09:52:04 UTC 2024"
    return "#1 SMP PREEMPT_DYNAMIC Tue Mar 11 10:09:21 UTC 2025"


_UNAME_FIELDS = {
    "s": "kernel-name",
    "n": "nodename",
    "r": "kernel-release",
    "v": "kernel-version",
    "m": "machine",
    "p": "processor",
    "i": "hardware-platform",
    "o": "operating-system",
}


@register("uname")
def uname(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``uname [-asnrvmpio]`` (coreutils: fields in fixed order whatever the flag order)."""
    if ctx.node is not None:
        release = ctx.node.kernel
    elif ctx.switch is not None:
        release = "6.1.0-cl-1-amd64" if ctx.switch.os == "cumulus" else "6.1.0-22-2-amd64"
    else:
        release = "5.15.0-105-generic"
    values = {
        "s": "Linux",
        "n": ctx.hostname.split(".")[0],
        "r": release,
        "v": _kernel_version(release),
        "m": "x86_64",
        "p": "x86_64",
        "i": "x86_64",
        "o": "GNU/Linux",
    }
    wanted: set[str] = set()
    for arg in argv[1:]:
        if arg == "--all":
            wanted |= set(values)
        elif arg.startswith("--") and arg[2:] in _UNAME_FIELDS.values():
            wanted.add(next(k for k, v in _UNAME_FIELDS.items() if v == arg[2:]))
        elif arg.startswith("-") and len(arg) > 1 and all(c in "asnrvmpio" for c in arg[1:]):
            for letter in arg[1:]:
                wanted |= set(values) if letter == "a" else {letter}
        else:
            bad = arg.lstrip("-")[:1] if arg.startswith("-") else arg
            return ToolOutput(
                "",
                f"uname: {'invalid option -- ' + repr(bad) if arg.startswith('-') else 'extra operand ' + repr(bad)}\n"
                "Try 'uname --help' for more information.\n",
                1,
            )
    if not wanted:
        wanted = {"s"}
    return ToolOutput(" ".join(values[k] for k in "snrvmpio" if k in wanted) + "\n")


@register("echo")
def echo(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``echo [-n] ARGS...``: the words joined by blanks."""
    words = argv[1:]
    newline = "\n"
    if words[:1] == ["-n"]:
        words, newline = words[1:], ""
    return ToolOutput(" ".join(words) + newline)


@register("true")
def true(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``true``: nothing, exit 0."""
    return ToolOutput("")


@register("false")
def false(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``false``: nothing, exit 1."""
    return ToolOutput("", "", 1)


_DATE_FIELD = re.compile(r"%(.)", re.DOTALL)


@register("date")
def date(ctx: ToolContext, argv: list[str]) -> ToolOutput:
    """``date [-u] [+FORMAT]`` (coreutils) at the machine's simulated time, which is UTC.

    ``%s`` and ``%N`` (seconds since the epoch, nanoseconds) come from one reading, as
    coreutils takes one ``clock_gettime``; the rest is ``strftime`` in the C locale.
    Setting the clock is refused, as for a user who is not root; any other operand is an invalid date.
    """
    fmt = "%a %b %e %H:%M:%S UTC %Y"
    for arg in argv[1:]:
        if arg.startswith("+"):
            fmt = arg[1:]
        elif arg in ("-u", "--utc", "--universal"):
            continue
        elif arg.startswith("-"):
            wording = f"unrecognized option '{arg}'" if arg.startswith("--") else f"invalid option -- '{arg[1:2]}'"
            return ToolOutput("", f"date: {wording}\nTry 'date --help' for more information.\n", 1)
        elif re.fullmatch(r"\d{8}(\d{2}){0,2}(\.\d{2})?", arg):  # MMDDhhmm[[CC]YY][.ss]: setting the clock
            return ToolOutput("", "date: cannot set date: Operation not permitted\n", 1)
        else:
            return ToolOutput("", f"date: invalid date \u2018{arg}\u2019\n", 1)
    seconds, _, nanos = f"{ctx.now:.9f}".partition(".")
    clock = time.gmtime(int(seconds))

    def field(match: re.Match[str]) -> str:
        code = match.group(1)
        if code == "s":
            return seconds
        if code == "N":
            return nanos
        if code == "%":
            return "%"
        return time.strftime("%" + code, clock)

    return ToolOutput(_DATE_FIELD.sub(field, fmt) + "\n")
