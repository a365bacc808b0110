"""Every command fleet runs on a machine, built from an allow-list with quoted arguments.

The remote side runs commands through the login shell, so any text that came
from an inventory, a node (a netdev name read from sysfs) or a switch would be
shell code if it were pasted in. ``Command`` can only be built here: the tool
must be on ``ALLOWED_TOOLS`` and every argument is quoted with ``shlex.quote``.
The one exception is a sysfs ``Glob`` (``/sys/class/infiniband/*/ports/*/counters/*``),
which the remote shell must expand: it may hold only ``[A-Za-z0-9_./*:-]``, so
there is nothing a shell could read as code.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field

ALLOWED_TOOLS: frozenset[str] = frozenset({
    # RDMA and InfiniBand
    "ibstat", "ibstatus", "ibv_devinfo", "ibv_devices", "show_gids", "perfquery",
    "ibqueryerrors", "ibnetdiscover", "iblinkinfo", "rdma",
    # files and system
    "cat", "grep", "ls", "echo", "true", "ethtool", "lldpctl", "hostname", "uname", "timeout", "date",
    # GPUs
    "nvidia-smi",
    # RoCE, PCIe and driver configuration (fleet check, fleet check fix)
    "mlnx_qos", "cma_roce_mode", "cma_roce_tos", "lsmod", "ofed_info", "lspci", "ip", "modprobe", "setpci",
    # probes
    "ib_send_lat", "ib_write_lat", "ib_read_lat", "ib_send_bw", "ib_write_bw", "ib_read_bw",
    "all_reduce_perf", "alltoall_perf", "sendrecv_perf", "mpirun",
    # expert-parallel benchmark (UCCL-EP / DeepEP test_internode.py under PyTorch's launcher), and the
    # shell builtin that says whether a tool is installed (`command -v torchrun`)
    "torchrun", "command",
    # Slurm head
    "squeue", "scontrol", "sinfo",
    # switches: Cumulus NVUE and its hash calculator, SONiC
    "nv", "cl-ecmpcalc", "show", "config", "ecnconfig", "sonic-cfggen",
})
"""Tools fleet may run. Adding one is a reviewed change to this file, never a runtime option.
``python3`` is not among them: the only Python fleet runs is its node agent (``agent_command``)
and its probe runner (``runner_command``)."""

_GLOB = re.compile(r"^[A-Za-z0-9_./:*-]+$")
_TOKEN = object()


class CommandError(ValueError):
    """A command that fleet refuses to build (tool not allowed, unusable argument)."""


@dataclass(frozen=True, slots=True)
class Glob:
    """A path pattern the remote shell expands; only ``[A-Za-z0-9_./:*-]`` allowed."""

    pattern: str

    def __post_init__(self) -> None:
        if not _GLOB.match(self.pattern) or self.pattern.startswith("-"):
            raise CommandError(f"glob {self.pattern!r} may hold only letters, digits, _ . / : * -")


Arg = str | int | float | Glob


@dataclass(frozen=True, slots=True)
class Command:
    """One or more allow-listed commands, run in sequence (``a; b; c``).

    Build with ``command()``, ``sequence()``, ``agent_command()`` or ``runner_command()``; the
    constructor refuses anything else.
    """

    parts: tuple[tuple[str, ...], ...]
    """Shell words of each command, already quoted."""
    _token: object = field(default=None, repr=False, compare=False)
    gated: bool = False
    """Run only once a line arrives on stdin (``read -r _ && ...``): see ``gated()``."""
    argv: tuple[str, ...] = ()
    """A single command's words unquoted, for a runner that starts it without a shell
    (``fleet.collectors.probe_sessions``); () for a sequence or a command with a ``Glob``."""

    def __post_init__(self) -> None:
        if self._token is not _TOKEN:
            raise CommandError("build a Command with collectors.commands.command()/sequence()")

    @property
    def text(self) -> str:
        """The command line sent to the remote shell."""
        text = "; ".join(" ".join(words) for words in self.parts)
        return f"read -r _ && {text}" if self.gated else text

    @property
    def tools(self) -> tuple[str, ...]:
        return tuple(words[0] for words in self.parts)

    def __str__(self) -> str:
        return self.text


def _word(arg: Arg) -> str:
    if isinstance(arg, Glob):
        return arg.pattern
    if isinstance(arg, bool):
        raise CommandError("a bool is not a command argument")
    text = str(arg)
    if "\x00" in text:
        raise CommandError("an argument may not contain a NUL byte")
    return shlex.quote(text)


def command(tool: str, *args: Arg) -> Command:
    """``tool args...`` with every argument quoted; ``tool`` must be in ``ALLOWED_TOOLS``."""
    if tool not in ALLOWED_TOOLS:
        raise CommandError(f"tool {tool!r} is not on the allow-list")
    words = (tool, *(_word(arg) for arg in args))
    argv = () if any(isinstance(arg, Glob) for arg in args) else (tool, *(str(arg) for arg in args))
    return Command((words,), _TOKEN, argv=argv)


_SYSFS_WRITABLE = re.compile(r"^/sys/class/(net|infiniband)/[A-Za-z0-9_.:-]+(/[A-Za-z0-9_.:-]+)+$")


def write_sysfs(path: str, value: int) -> Command:
    """``echo VALUE > PATH``: one whole number into one file under ``/sys/class/net`` or
    ``/sys/class/infiniband`` (``fleet check fix``: DCQCN's enable flags, the verbs traffic class).

    The one command with a redirection, so both sides are checked rather than quoted: the path
    holds only ``[A-Za-z0-9_.:/-]`` and no ``..`` component, the value is a non-negative integer.
    """
    if not _SYSFS_WRITABLE.match(path) or any(part in (".", "..") for part in path.split("/")):
        raise CommandError(f"{path!r} is not a file fleet writes (under /sys/class/net or /sys/class/infiniband)")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CommandError(f"{value!r} is not a whole number to write")
    return Command((("echo", str(value), ">", path),), _TOKEN)


def gated(cmd: Command) -> Command:
    """``cmd`` staged ahead: the remote shell waits for one line on stdin, then runs it; at the end
    of stdin without a line (the channel closed first) it never runs.

    Why: a link test's perftest client must start the moment its NICs are free, and opening an
    SSH session (channel, exec request, the login shell) takes round trips and the node's CPU.
    Staged while the previous probe still measures, the start is one line on an open channel.
    """
    if len(cmd.parts) != 1 or cmd.gated:
        raise CommandError("only a single, ungated command can be gated")
    return Command(cmd.parts, _TOKEN, gated=True, argv=cmd.argv)


def sequence(*commands: Command) -> Command:
    """Several commands run one after another in one SSH channel (command mode's compound tick)."""
    if not commands:
        raise CommandError("an empty sequence")
    if any(cmd.gated for cmd in commands):
        raise CommandError("a gated command runs on its own")
    return Command(tuple(part for cmd in commands for part in cmd.parts), _TOKEN)


def agent_command(
    source: str, interval_s: float, *, sysfs: str | None = None, optics_every: int | None = None,
    ethtool_keep: Iterable[str] | None = None, full_every: int | None = None, optics_readings: bool = False,
) -> Command:
    """``python3 -u -c <source> --interval N [--sysfs ROOT] [--optics-every K] [--ethtool-keep A,B]
    [--optics-readings] [--changed-only --full-every F]`` (``full_every`` given: changed-only
    lines, a full one every F; ``optics_readings``: only the reading lines of ``ethtool -m``).

    ``source`` is the agent's own file (``fleet.collectors.agent_reader.agent_source()``);
    the options are in docs/agent-schema.md.
    """
    args: list[Arg] = ["-u", "-c", source, "--interval", f"{interval_s:g}"]
    if sysfs is not None:
        args += ["--sysfs", sysfs]
    if optics_every is not None:
        args += ["--optics-every", optics_every]
    if ethtool_keep is not None:
        args += ["--ethtool-keep", ",".join(sorted(ethtool_keep))]
    if optics_readings:
        args.append("--optics-readings")
    if full_every is not None:
        args += ["--changed-only", "--full-every", full_every]
    return Command((("python3", *(_word(arg) for arg in args)),), _TOKEN)


def runner_command(source: str) -> Command:
    """``python3 -u -c <source> --probe-runner``: the probe runner (``collectors/probe_runner.py``,
    ``fleet.collectors.probe_sessions.runner_source()``), which starts the probes' commands on its node."""
    return Command((("python3", *(_word(arg) for arg in ("-u", "-c", source, "--probe-runner"))),), _TOKEN)
