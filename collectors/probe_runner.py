"""fleet's probe runner: one long-lived process per node that starts the probes' commands.

Why it exists: a link test starts two perftest sides per pair, 16,256 on 128
nodes, and each through its own SSH session costs a channel's open, exec
request, exit status, EOF and close on both ends, plus sshd's fork, PAM and
the login shell on the node. Started once per node (``python3 -u -c <this
file> --probe-runner``, stdlib only, Python >= 3.6), the runner turns each
start into one line in and the output into a few lines out on a session that
is already open.

Protocol, one JSON object per line (docs/probe-runner.md):

- it first prints ``{"runner":1,"pid":PID}``;
- ``{"id":N,"argv":[...]}`` starts ``argv`` (no shell: nothing is ever parsed
  as shell code) in a process group of its own, stdin from /dev/null;
- ``{"id":N,"stop":1}`` sends SIGTERM to that group, SIGKILL 2 s later;
- it answers ``{"id":N,"out":TEXT}`` and ``{"id":N,"err":TEXT}`` as output
  comes, then ``{"id":N,"exit":STATUS}`` or ``{"id":N,"signal":NAME}``;
  a program that cannot be started gets an ``err`` and exit status 127;
- a request it cannot read gets ``{"id":null,"error":TEXT}``;
- at the end of its stdin (the session closed, the SSH connection gone) it
  stops every process it started and exits: nothing outlives the console's
  session, and the commands carry their own ``timeout`` as well.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from typing import IO, Any

KILL_AFTER_S = 2.0
"""Seconds between SIGTERM and SIGKILL for a stopped process group."""

_out_lock = threading.Lock()


def say(message: dict[str, Any]) -> None:
    """Write one message line; the lock keeps lines of different processes whole."""
    data = (json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8")
    with _out_lock:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


class Job:
    """One started process: its output pumped to ``say``, its exit reported once both pipes ended."""

    def __init__(self, ident: int, argv: list[str], runner: Runner) -> None:
        self.ident = ident
        self.runner = runner
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, start_new_session=True, close_fds=True)
        self.pumps = [threading.Thread(target=self.pump, args=(self.process.stdout, "out"), daemon=True),
                      threading.Thread(target=self.pump, args=(self.process.stderr, "err"), daemon=True)]
        for pump in self.pumps:
            pump.start()
        self.reporter = threading.Thread(target=self.report, daemon=True)
        self.reporter.start()

    def pump(self, pipe: IO[bytes], key: str) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        fd = pipe.fileno()
        while True:
            data = os.read(fd, 65536)
            text = decoder.decode(data, final=not data)
            if text:
                say({"id": self.ident, key: text})
            if not data:
                break
        pipe.close()

    def report(self) -> None:
        status = self.process.wait()
        for pump in self.pumps:
            pump.join()
        if status < 0:
            say({"id": self.ident, "signal": signal.Signals(-status).name[3:]})
        else:
            say({"id": self.ident, "exit": status})
        self.runner.ended(self.ident)

    def stop(self) -> None:
        """SIGTERM to the process group, SIGKILL after KILL_AFTER_S if it is still there."""
        self._signal(signal.SIGTERM)
        timer = threading.Timer(KILL_AFTER_S, self._signal, args=(signal.SIGKILL,))
        timer.daemon = True
        timer.start()

    def _signal(self, number: int) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self.process.pid, number)


class Runner:
    """The jobs this runner started and that have not ended, by their request's id."""

    def __init__(self) -> None:
        self.jobs: dict[int, Job] = {}
        self.lock = threading.Lock()
        """Held while ``jobs`` is read or changed: each job's reporter thread removes its own."""

    def handle(self, line: bytes) -> None:
        """One request line."""
        try:
            request = json.loads(line.decode("utf-8"))
            ident = request["id"]
            if not isinstance(ident, int) or isinstance(ident, bool):
                raise ValueError("id must be an integer")
        except (ValueError, KeyError, TypeError) as exc:
            say({"id": None, "error": f"bad request: {exc}"})
            return
        if request.get("stop"):
            with self.lock:
                job = self.jobs.get(ident)
            if job is not None:
                job.stop()
            return
        argv = request.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(word, str) for word in argv):
            say({"id": ident, "error": "bad request: argv must be a non-empty list of strings"})
            return
        with self.lock:
            if ident in self.jobs:
                say({"id": ident, "error": f"bad request: id {ident} is running"})
                return
            try:
                self.jobs[ident] = Job(ident, argv, self)
            except OSError as exc:
                reason = os.strerror(exc.errno) if exc.errno else str(exc)
                say({"id": ident, "err": f"runner: cannot run {argv[0]}: {reason}\n"})
                say({"id": ident, "exit": 127})

    def ended(self, ident: int) -> None:
        with self.lock:
            self.jobs.pop(ident, None)

    def stop_all(self) -> None:
        """Stop every job, and wait until each one's end is said."""
        with self.lock:
            running = list(self.jobs.values())
        for job in running:
            job.stop()
        for job in running:
            job.reporter.join(KILL_AFTER_S + 1)


def main() -> int:
    say({"runner": 1, "pid": os.getpid()})
    runner = Runner()
    for line in sys.stdin.buffer:
        if line.strip():
            runner.handle(line)
    runner.stop_all()  # the end of each is said before the runner goes
    return 0


if __name__ == "__main__":
    sys.exit(main())
