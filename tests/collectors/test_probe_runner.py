"""The probe runner itself (collectors/probe_runner.py), as a node runs it: a real process, real programs.

Run under this Python and under Python 3.6 (RHEL 8's) where one is installed:
it starts what it is asked to without a shell, reports each command's output
and exit by id, stops a command's whole process group, and at the end of its
stdin stops everything it started.
"""

from __future__ import annotations

import ast
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from test_agent import _old_pythons

from fleet.collectors.probe_sessions import runner_source

pytestmark = pytest.mark.timeout(60)


def _interpreter(python: str) -> str:
    if python == "this":
        return sys.executable
    old = _old_pythons()
    if not old:
        pytest.skip("no Python 3.6 interpreter on this machine")
    return old[0]


class Runner:
    """The runner as a child process; its messages read on a thread, waited for with a timeout."""

    def __init__(self, python: str) -> None:
        self.process = subprocess.Popen([_interpreter(python), "-u", "-c", runner_source(), "--probe-runner"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.raw: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.raw.append(line)
            self.lines.put(line)

    def send(self, line: str | bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() if isinstance(line, str) else line)
        self.process.stdin.flush()

    def start(self, ident: int, *argv: str) -> None:
        self.send(json.dumps({"id": ident, "argv": list(argv)}) + "\n")

    def message(self, timeout_s: float = 10.0) -> dict[str, Any]:
        message = json.loads(self.lines.get(timeout=timeout_s))
        assert isinstance(message, dict)
        return message

    def until_end(self, ident: int) -> tuple[str, str, dict[str, Any]]:
        """stdout and stderr of ``ident`` and its last message (exit or signal)."""
        out, err = [], []
        while True:
            message = self.message()
            if message.get("id") != ident:
                continue
            if "out" in message:
                out.append(message["out"])
            elif "err" in message:
                err.append(message["err"])
            else:
                return "".join(out), "".join(err), message

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=15)


@pytest.fixture(params=["this", "3.6"])
def runner(request: pytest.FixtureRequest) -> Any:
    running = Runner(request.param)
    yield running
    if running.process.poll() is None:
        running.process.kill()
        running.process.wait()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] if Path(f"/proc/{pid}").exists() else ""
    return state != "Z"


def _gone(pid: int, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def test_the_source_runs_on_python36() -> None:
    tree = ast.parse(runner_source(), feature_version=(3, 6))
    assert "__future__" not in runner_source()
    assert not any(isinstance(node, ast.AnnAssign) for node in ast.walk(tree))


def test_hello_then_output_and_exit_by_id(runner: Runner) -> None:
    hello = runner.message()
    assert hello["runner"] == 1 and hello["pid"] == runner.process.pid
    runner.start(1, "echo", "a b", "ü;$(rm -rf /)")  # no shell: the words are the words
    assert runner.until_end(1) == ("a b ü;$(rm -rf /)\n", "", {"id": 1, "exit": 0})
    runner.start(2, "cat", "/nonexistent/file")
    out, err, end = runner.until_end(2)
    assert out == "" and "No such file or directory" in err and end == {"id": 2, "exit": 1}
    assert runner.close() == 0


def test_a_program_that_is_not_there_exits_127(runner: Runner) -> None:
    runner.message()
    runner.start(5, "no-such-program-here", "-x")
    assert runner.until_end(5) == ("", "runner: cannot run no-such-program-here: No such file or directory\n",
                                   {"id": 5, "exit": 127})


def test_commands_run_side_by_side_and_keep_their_own_output(runner: Runner) -> None:
    runner.message()
    runner.start(1, "sh", "-c", "sleep 0.5; echo slow")
    runner.start(2, "sh", "-c", "echo fast; exit 3")
    assert runner.until_end(2) == ("fast\n", "", {"id": 2, "exit": 3})
    assert runner.until_end(1) == ("slow\n", "", {"id": 1, "exit": 0})


def test_output_that_is_not_utf8_is_replaced_not_fatal(runner: Runner) -> None:
    runner.message()
    runner.start(1, "printf", "ok \\377\\376 end")
    assert runner.until_end(1) == ("ok \ufffd\ufffd end", "", {"id": 1, "exit": 0})


def test_stop_ends_the_whole_process_group(runner: Runner) -> None:
    """A stopped command's children go too: perftest under ``timeout`` is two processes."""
    runner.message()
    runner.start(7, "sh", "-c", "sleep 30 & echo $!; wait")
    first = runner.message()
    child = int(first["out"])
    assert _alive(child)
    runner.send('{"id":7,"stop":1}\n')
    _, _, end = runner.until_end(7)
    assert end == {"id": 7, "signal": "TERM"}
    assert _gone(child)


def test_the_end_of_stdin_stops_everything_and_exits(runner: Runner) -> None:
    """The SSH session closed or the connection died: nothing the runner started outlives it."""
    runner.message()
    runner.start(1, "sh", "-c", "sleep 30 & echo $!; wait")
    child = int(runner.message()["out"])
    assert runner.close() == 0
    assert _gone(child)


def test_requests_it_cannot_read_are_answered_not_fatal(runner: Runner) -> None:
    runner.message()
    for line in (b"{\n", b"[1, 2]\n", b'{"argv": ["echo"]}\n', b'{"id": "x", "argv": ["echo"]}\n',
                 b"\xff\xfe\n", b'{"id": true, "argv": ["echo"]}\n'):
        runner.send(line)
        message = runner.message()
        assert message["id"] is None and message["error"].startswith("bad request: ")
    for argv in ([], "echo", [1, 2]):
        runner.send(json.dumps({"id": 3, "argv": argv}) + "\n")
        assert runner.message() == {"id": 3, "error": "bad request: argv must be a non-empty list of strings"}
    runner.send('{"id": 9, "stop": 1}\n')  # nothing runs under 9: nothing to say
    runner.start(4, "echo", "still here")
    assert runner.until_end(4) == ("still here\n", "", {"id": 4, "exit": 0})


def test_an_id_in_use_is_refused(runner: Runner) -> None:
    runner.message()
    runner.start(1, "sleep", "5")
    runner.start(1, "echo", "again")
    assert runner.message() == {"id": 1, "error": "bad request: id 1 is running"}
    runner.send('{"id":1,"stop":1}\n')
    assert runner.until_end(1)[2] == {"id": 1, "signal": "TERM"}
