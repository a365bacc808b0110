"""The simulated ``/bin/sh -c``: a command line in, each command's output and exit status out.

A line is split like a POSIX shell splits it (``shlex``): commands joined by
``;``, ``&&`` and ``||``, pipes into the text filters of ``fleet.simulator.pipes``, with quoting, ``VAR=value`` prefixes, ``timeout N``,
``sudo``, and the redirections ``2>/dev/null``, ``>/dev/null`` and ``2>&1``.
Each command goes to a stateful handler (perftest, all-reduce, the node agent,
switch configuration changes) or to a stateless renderer of
``fleet.simulator.tools.REGISTRY``; a command the machine does not have is answered
as dash answers it: ``sh: 1: X: not found`` with exit status 127. Words are
passed on unexpanded (the sysfs renderer expands globs against its own tree).
"""

from __future__ import annotations

import asyncio
import re
import shlex
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

from fleet.simulator import agent_stream, ep_bench, perftest, probe_runner, roce_cli, switch_cli
from fleet.simulator.hostile import hostile_output
from fleet.simulator.pipes import FILTERS
from fleet.simulator.session import Handler, Machine, StreamIO
from fleet.simulator.tools import REGISTRY, ToolContext, ToolOutput, load_all

NODE_COMMANDS = frozenset(
    {
        "ibstat", "ibstatus", "ibv_devinfo", "cat", "grep", "ls", "ethtool", "rdma", "show_gids",
        "nvidia-smi", "lldpctl", "lldpcli", "squeue", "scontrol", "python3", "mlnx_qos", "cma_roce_mode",
        "cma_roce_tos", "lsmod", "ofed_info", "lspci", "ip", "modprobe", "setpci",
        *perftest.PERFTEST_COMMANDS, *perftest.NCCL_COMMANDS,
    }
)  # fmt: skip
IB_ONLY_COMMANDS = frozenset({"perfquery", "ibnetdiscover", "iblinkinfo", "ibqueryerrors"})
SWITCH_COMMANDS = {"cumulus": frozenset({"nv", "lldpctl", "lldpcli", "cl-ecmpcalc"}),
                   "sonic": frozenset({"show", "config", "ecnconfig", "sonic-cfggen"})}
HEAD_COMMANDS = frozenset({"squeue", "scontrol"})
COMMON_COMMANDS = frozenset({"hostname", "uname", "date", "echo", "true", "false"})
BUILTINS = frozenset({"exit", "cd", "command", "timeout", "sudo", "read"})
_SHELL_ONLY = BUILTINS - {"timeout", "sudo"}
"""Builtins no program stands behind: what a runner without a shell cannot start."""

_REDIRECT = re.compile(r"^(\d?)(>>?)(&\d|.*)$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass
class _Command:
    argv: list[str]
    drop_stdout: bool = False
    drop_stderr: bool = False
    stderr_to_stdout: bool = False
    stdout_to_stderr: bool = False
    bad_redirect: str = ""
    write_to: str = ""
    """``> /sys/...``: the command's output is written to that file (``roce_cli.write_sysfs``)."""


@dataclass
class _Pipeline:
    """Pipelines (``a | b``) and the operator before each (``;`` for the first)."""

    steps: list[tuple[str, list[_Command]]] = field(default_factory=list)
    error: str = ""


_PARSED: dict[str, _Pipeline] = {}
_PARSED_MAX = 512


def parsed(line: str) -> _Pipeline:
    """``parse_line``, remembered: a collector sends the same few lines to every machine, every tick.

    The pipeline returned is shared: treat it as read-only.
    """
    pipeline = _PARSED.get(line)
    if pipeline is None:
        if len(_PARSED) >= _PARSED_MAX:
            _PARSED.clear()
        pipeline = _PARSED[line] = parse_line(line)
    return pipeline


_SHLEX_SPECIAL = re.compile(r"[;|#'\"\\\t\r\n]")
"""What makes shlex split a line otherwise than at its spaces: operators, comments, quotes, escapes, other blanks."""


def parse_line(line: str) -> _Pipeline:
    """Split a command line into commands and the operators that join them."""
    pipeline = _Pipeline()
    if _SHLEX_SPECIAL.search(line) is None:
        # shlex would split it at its spaces and nowhere else: the same words for a tenth of
        # the CPU (a perftest line is new to the cache every time: its port and timeout differ)
        tokens = [word for word in line.split(" ") if word]
    else:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        try:
            tokens = list(lexer)
        except ValueError as error:
            pipeline.error = f"sh: 1: Syntax error: {error}\n"
            return pipeline
    operator = ";"
    words: list[str] = []
    piped: list[_Command] = []
    for token in [*tokens, ";"]:
        if token in (";", "&&", "||", "|", "&", ";;", "|&"):
            if token not in (";", "&&", "||", "|"):
                pipeline.error = f'sh: 1: Syntax error: "{token}" is not supported by this simulated shell\n'
                return pipeline
            if not words and (token != ";" or operator != ";" or piped):
                pipeline.error = f'sh: 1: Syntax error: "{token}" unexpected\n'
                return pipeline
            if words:
                piped.append(_command(words))
                words = []
            if token == "|":
                continue
            if piped:
                pipeline.steps.append((operator, piped))
            operator, piped = token, []
            continue
        words.append(token)
    return pipeline


def _command(words: list[str]) -> _Command:
    command = _Command(argv=[])
    pending_target: str | None = None
    for word in words:
        if pending_target is not None:
            _redirect(command, pending_target, word)
            pending_target = None
            continue
        match = _REDIRECT.match(word)
        if match and (match.group(1) or word.startswith(">")):
            if match.group(3):
                _redirect(command, match.group(1) or "1", match.group(3))
            else:
                pending_target = match.group(1) or "1"
            continue
        command.argv.append(word)
    while command.argv and _ASSIGNMENT.match(command.argv[0]):
        command.argv.pop(0)
    return command


def _redirect(command: _Command, stream: str, target: str) -> None:
    if target == "&1" and stream == "2":
        command.stderr_to_stdout = True
    elif target == "&2" and stream == "1":
        command.stdout_to_stderr = True
        command.drop_stdout = False
    elif target == f"&{stream}":  # a stream onto itself
        pass
    elif stream == "1" and target.startswith("/sys/"):
        command.write_to = target
    elif target == "/dev/null":
        if stream == "2":
            command.drop_stderr = True
        else:
            command.drop_stdout = True
    else:
        command.bad_redirect = f"sh: 1: cannot create {target}: Read-only file system\n"


@dataclass
class _Snapshot:
    """The machine as one command line sees it: one view for all its stateless commands.

    A line such as ``echo a; grep -H . <files>; echo b; lldpctl -f json; ls ...``
    is answered from one snapshot (one instant) instead of one per command; a
    stateful command (perftest, all-reduce, a switch change) takes time, so the
    snapshot is dropped after it and the next command sees the machine afresh.
    """

    context: ToolContext | None = None


_LINE: ContextVar[_Snapshot | None] = ContextVar("simulator_line_snapshot", default=None)
"""The snapshot of the command line running in this task (and the tasks it starts)."""


class Shell:
    """One machine's command interpreter."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        load_all()

    def allowed(self, name: str) -> bool:
        """Whether this machine has the command ``name`` (by role and switch OS)."""
        machine = self.machine
        if name in COMMON_COMMANDS or name in BUILTINS:
            return True
        if machine.role == "node":
            if name == "torchrun":  # only where the scenario installs the expert-parallel benchmark
                return machine.model.scenario.software.has_ep_bench(machine.host)
            return name in NODE_COMMANDS or (name in IB_ONLY_COMMANDS and not machine.model.roce)
        if machine.role == "head":
            return name in HEAD_COMMANDS
        return name in SWITCH_COMMANDS[machine.model.topology.os_of(machine.host)]

    def tool_context(self, t: float) -> ToolContext:
        model, host, role = self.machine.model, self.machine.host, self.machine.role
        return ToolContext(
            hostname=host,
            now=model.unix(t),
            parts=model.node_parts(host, t) if role == "node" else None,
            switch=model.switch_view(host, t) if role in ("leaf", "spine") else None,
            jobs=lambda: model.jobs_view(t),
            all_nodes=model.views(t),
            all_switches=lambda: tuple(model.switch_view(s, t) for s in model.topology.switches),
        )

    async def run(self, line: str, io: StreamIO) -> int:
        """Run a whole command line; the exit status is the last command's."""
        pipeline = parsed(line)
        if pipeline.error:
            io.stderr(pipeline.error)
            return 2
        token = _LINE.set(_Snapshot())
        try:
            return await self._run_steps(pipeline, io)
        finally:
            _LINE.reset(token)

    def run_now(self, line: str) -> tuple[list[tuple[int, str]], int] | None:
        """Run a line of stateless commands at once: (output chunks in order, exit status), else None.

        Each chunk is (1 for stdout or 2 for stderr, text), consecutive writes
        to one stream joined. A line with a stateful command (perftest, the
        agent, a switch change) or ``timeout`` takes time, so it returns None
        and must go through ``run``. The others never wait on anything, so
        ``run``'s coroutine completes on its first step: it runs here, without
        an event loop round trip, through the very same code.
        """
        pipeline = parsed(line)
        if not pipeline.error and not all(self._immediate(c.argv) and not c.write_to
                                          for _, cs in pipeline.steps for c in cs):
            return None
        chunks: list[tuple[int, str]] = []

        def writer(stream: int) -> Callable[[str], None]:
            def write(text: str) -> None:
                if chunks and chunks[-1][0] == stream:
                    chunks[-1] = (stream, chunks[-1][1] + text)
                elif text:
                    chunks.append((stream, text))

            return write

        coroutine = self.run(line, StreamIO(writer(1), writer(2)))
        try:
            coroutine.send(None)
        except StopIteration as done:
            return chunks, int(done.value)
        coroutine.close()
        raise RuntimeError(f"a stateless command line waited: {line!r}")

    def _immediate(self, argv: list[str]) -> bool:
        """Whether a command answers without waiting (no stateful handler, no ``timeout``, no ``$?``)."""
        while argv and argv[0] == "sudo":
            argv = _sudo_operands(argv)
        if not argv:
            return True
        if argv[0] in ("timeout", "read") or any("$?" in word for word in argv):
            return False
        return not self.allowed(argv[0]) or self._handler(argv) is None

    def output_only(self, line: str) -> bool:
        """Whether a line needs nothing of its session but the output streams and the client's close.

        True for stateless commands, perftest and all_reduce_perf (also under
        ``sudo`` and ``timeout``): they neither read stdin nor pace their output,
        so the server can run them without asyncssh's process streams and the
        two helper tasks that feed them (``fleet.simulator.server``). So is the probe
        runner: it reads stdin, but line by line from the session's own data
        callback (``Stdin.take_lines``), and does not pace its output. The node
        agent paces its output, and a switch change stays on the process path,
        where ``tests/collectors/test_ecmp_apply.py`` drops its session in the
        middle of an apply.
        """
        for _, commands in parsed(line).steps:
            for command in commands:
                argv = _program(command.argv)
                if argv and self.allowed(argv[0]):
                    handler = self._handler(argv)
                    if handler is not None and handler not in _OUTPUT_ONLY_HANDLERS \
                            and handler != self._probe_runner:
                        return False
        return True

    async def _run_steps(self, pipeline: _Pipeline, io: StreamIO) -> int:
        status = 0
        for operator, commands in pipeline.steps:
            if (operator == "&&" and status != 0) or (operator == "||" and status == 0):
                continue
            if any("$?" in word for command in commands for word in command.argv):
                last = str(status)
                commands = [
                    replace(command, argv=[word.replace("$?", last) for word in command.argv]) for command in commands
                ]
            status = await self._run_piped(commands, io)
            if status == -1:  # exit
                break
        return max(status, 0) if status != -1 else self._exit_status

    _exit_status = 0

    async def _run_piped(self, commands: list[_Command], io: StreamIO) -> int:
        """``a | f | g``: ``a`` runs, its output goes through the text filters ``f``, ``g``."""
        if len(commands) == 1:
            return await self._run_command(commands[0], io)
        captured: list[str] = []
        status = await self._run_command(commands[0], StreamIO(captured.append, io.stderr, io.closed, io.stdin_eof))
        text = "".join(captured)
        for command in commands[1:]:
            name = command.argv[0] if command.argv else ""
            text_filter = FILTERS.get(name)
            if text_filter is None:
                io.stderr(f"sh: 1: {name}: not found\n" if name else "sh: 1: Syntax error: \"|\" unexpected\n")
                return 127 if name else 2
            text, err, status = text_filter(command.argv, text)
            if err:
                io.stderr(err)
        if text:
            io.stdout(text)
        return status

    async def _run_command(self, command: _Command, io: StreamIO) -> int:
        if command.bad_redirect:
            io.stderr(command.bad_redirect)
            return 2
        if command.write_to:
            if self.machine.role != "node":
                io.stderr(f"sh: 1: cannot create {command.write_to}: Permission denied\n")
                return 2
            written: list[str] = []
            status = await self.run_argv(command.argv, StreamIO(written.append, io.stderr, io.closed, io.stdin_eof))
            if status != 0:
                return status
            return roce_cli.write_sysfs(self.machine, command.write_to, "".join(written), io)
        stderr = (lambda _text: None) if command.drop_stderr else io.stderr
        out = (lambda _text: None) if command.drop_stdout else stderr if command.stdout_to_stderr else io.stdout
        err = out if command.stderr_to_stdout else stderr
        return await self.run_argv(command.argv, StreamIO(out, err, io.closed, io.stdin_eof, io.drain, io.stdin))

    async def run_argv(self, argv: list[str], io: StreamIO) -> int:
        """Run one command given as words."""
        if not argv:
            return 0
        name = argv[0]
        if not self.allowed(name):
            io.stderr(f"sh: 1: {name}: not found\n")
            return 127
        if name == "exit":
            self._exit_status = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 0
            return -1
        if name == "cd":
            return 0
        if name == "read":  # a line of stdin, dropped: what gates a pre-staged probe (``read -r _ && ...``)
            return 0 if await io.stdin.readline(io.stdin_eof) is not None else 1
        if name == "sudo":
            return await self.run_argv(_sudo_operands(argv), io)
        if name == "timeout":
            return await self._timeout(argv, io)
        if name == "command":
            return self._command_v(argv, io)
        handler = self._handler(argv)
        form = self.machine.model.hostile_output(self.machine.host, argv, self.machine.model.now())
        if form is not None:
            return await self._hostile(form, handler, argv, io)
        if handler is not None:
            try:
                return await handler(self.machine, argv, io)
            finally:
                snapshot = _LINE.get()
                if snapshot is not None:
                    snapshot.context = None
        tool = REGISTRY.get(name)
        if tool is None:
            io.stderr(f"sh: 1: {name}: not found\n")
            return 127
        output = self.run_tool(argv)
        if output.stdout:
            io.stdout(output.stdout)
        if output.stderr:
            io.stderr(output.stderr)
        return output.exit_status

    async def _hostile(self, form: str, handler: Handler | None, argv: list[str], io: StreamIO) -> int:
        """A command under a ``hostile_output`` fault: a tool prints the form instead of its output;
        a stateful command (the node agent) runs, each of its writes replaced by the form."""
        text = hostile_output(form)
        if handler is None:
            io.stdout(text)
            return 0
        return await handler(self.machine, argv, StreamIO(lambda _line: io.stdout(text), io.stderr, io.closed,
                                                          io.stdin_eof, io.drain, io.stdin))

    def run_tool(self, argv: list[str]) -> ToolOutput:
        """A stateless renderer, on this command line's snapshot of the machine (a fresh one outside a line)."""
        snapshot = _LINE.get()
        if snapshot is None:
            return REGISTRY[argv[0]](self.tool_context(self.machine.model.now()), argv)
        if snapshot.context is None:
            snapshot.context = self.tool_context(self.machine.model.now())
        return REGISTRY[argv[0]](snapshot.context, argv)

    def _handler(self, argv: list[str]) -> Handler | None:
        name = argv[0]
        if name in perftest.PERFTEST_COMMANDS:
            return perftest.run_perftest
        if name in perftest.NCCL_COMMANDS:
            return perftest.run_nccl
        if name == "torchrun":
            return ep_bench.run_torchrun
        if name == "python3":
            return self._probe_runner if "--probe-runner" in argv else agent_stream.run_python
        if name == "nv" and switch_cli.is_nv_change(argv):
            return switch_cli.run_nv
        if name == "config":
            return switch_cli.run_sonic_config
        if name == "cl-ecmpcalc":
            return switch_cli.run_ecmpcalc
        if name == "ecnconfig" and argv[-1:] in (["on"], ["off"]):
            return switch_cli.run_ecnconfig
        if name == "sonic-cfggen" and "--write-to-db" in argv:
            return switch_cli.run_sonic_cfggen_write
        if name == "mlnx_qos" and roce_cli.is_mlnx_qos_change(argv):
            return roce_cli.run_mlnx_qos
        if name == "cma_roce_mode" and "-m" in argv:
            return roce_cli.run_cma_roce_mode
        if name == "cma_roce_tos" and "-t" in argv:
            return roce_cli.run_cma_roce_tos
        return _NODE_CHANGES.get(name)

    async def run_words(self, argv: list[str], io: StreamIO) -> int:
        """One command given as words, as a line of its own: a program the probe runner starts without a shell."""
        token = _LINE.set(_Snapshot())
        try:
            return max(await self.run_argv(argv, io), 0)
        finally:
            _LINE.reset(token)

    def is_program(self, name: str) -> bool:
        """Whether ``name`` is a program on this machine, not only a word of its shell."""
        return self.allowed(name) and name not in _SHELL_ONLY

    async def _probe_runner(self, machine: Machine, argv: list[str], io: StreamIO) -> int:
        return await probe_runner.serve(machine, self.run_words, self.is_program, io)

    async def _timeout(self, argv: list[str], io: StreamIO) -> int:
        rest = _timeout_operands(argv)
        if not rest:
            io.stderr("timeout: missing operand\n")
            return 125
        try:
            seconds = _duration_s(rest[0])
        except ValueError:
            io.stderr(f"timeout: invalid time interval '{rest[0]}'\n")
            return 125
        try:
            async with asyncio.timeout(seconds):  # in this task: wait_for would start another
                return await self.run_argv(rest[1:], io)
        except TimeoutError:
            return 124

    def _command_v(self, argv: list[str], io: StreamIO) -> int:
        if len(argv) < 3 or argv[1] not in ("-v", "-V"):
            io.stderr("sh: 1: command: only 'command -v NAME' is supported here\n")
            return 2
        status = 0
        for name in argv[2:]:
            if self.allowed(name) and (name in REGISTRY or name in BUILTINS or self._handler([name, ""]) is not None):
                io.stdout(f"{name}\n" if name in BUILTINS else f"/usr/bin/{name}\n")
            else:
                status = 127
        return status


_NODE_CHANGES: dict[str, Handler] = {"ip": roce_cli.run_ip, "modprobe": roce_cli.run_modprobe,
                                     "setpci": roce_cli.run_setpci}
"""Node tools that only ever change (or read a register, as setpci does) through the model's state."""

_OUTPUT_ONLY_HANDLERS: frozenset[Handler] = frozenset({perftest.run_perftest, perftest.run_nccl,
                                                     ep_bench.run_torchrun})
"""Stateful commands that only write their output and watch for the client's close (``Shell.output_only``)."""


def _sudo_operands(argv: list[str]) -> list[str]:
    """``sudo [-OPTION]... COMMAND...`` -> [COMMAND...]."""
    rest = argv[1:]
    while rest and rest[0].startswith("-"):
        rest = rest[1:]
    return rest


def _timeout_operands(argv: list[str]) -> list[str]:
    """``timeout [OPTION]... DURATION COMMAND...`` -> [DURATION, COMMAND...]."""
    rest = argv[1:]
    while rest and rest[0].startswith("-"):
        rest = rest[2:] if rest[0] in ("-s", "-k", "--signal", "--kill-after") else rest[1:]
    return rest


def _program(argv: list[str]) -> list[str]:
    """The command that runs once the ``sudo [-OPTION]...`` and ``timeout [OPTION]... DURATION`` in front are taken off."""
    while argv and argv[0] in ("sudo", "timeout"):
        argv = _sudo_operands(argv) if argv[0] == "sudo" else _timeout_operands(argv)[1:]
    return argv


def _duration_s(text: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd]?)", text)
    if not match:
        raise ValueError(text)
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


async def run_collect(shell: Shell, line: str) -> tuple[str, str, int]:
    """Run a command line to completion and return (stdout, stderr, exit status): for tests and exec."""
    out: list[str] = []
    err: list[str] = []
    status = await shell.run(line, StreamIO(out.append, err.append))
    return "".join(out), "".join(err), status
