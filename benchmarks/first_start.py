"""``python -m benchmarks first_start``: from a fresh clone to a Fleet screen with values, as a new
user gets there: ``git clone``, then ``make demo`` in a 120x35 terminal.

The terminal is tmux (``tmux new-session -x 120 -y 35``): what the benchmark reads is what the
user sees (``tmux capture-pane``), polled every 0.2 s. The user's configuration and data folders
are fresh (``XDG_CONFIG_HOME``, ``XDG_DATA_HOME``, ``XDG_STATE_HOME`` point into the run's own
folder); the package caches (uv's, pip's) are the machine's, as they are for anyone who has
installed a Python package on it before.

Figures, seconds from the start of the clone: ``clone_s``; ``installed_s`` (``make`` has
installed fleet: ``.venv/.installed`` exists); ``fleet_screen_s`` (the Fleet screen's header is
on screen); ``values_s`` (16 node rows, half the ``incident`` scenario's, show a value). Then ``q`` is pressed and ``quit_s`` is how long the console and the simulator took to
exit. Also whether the install printed anything before the console started (``install_output``:
the lines, which must be none: no warnings). Target: ``values_s`` <= 30.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._options import float_in, parser
from benchmarks.report import BenchmarkFailed, Measured, at_most

TARGET_S = 30.0
SIZE = (120, 35)
POLL_S = 0.2
ROW = re.compile(r"^\s*gpu\d+\s+[●▲■○]\s.*\d\.\d")
"""A node row of the Fleet table with a value (rx Gb/s is shown with a decimal)."""
HEADER = re.compile(r"fleet\s+│\s+Fleet\s+│")
VALUES = 16
"""Node rows with a value on screen: half the ``incident`` scenario's 32 nodes (``make demo`` runs it)."""


def _capture(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True,
                          check=False).stdout


def _measure(source: Path, work: Path, timeout_s: float) -> dict[str, Any]:
    clone = work / "fleet"
    env = dict(os.environ)
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"):
        env[name] = str(work / name.lower())
    env.pop("VIRTUAL_ENV", None)
    started = time.monotonic()
    print(f"first_start: cloning {source}, then make demo in a {SIZE[0]}x{SIZE[1]} tmux terminal",
          file=sys.stderr)
    cloned = subprocess.run(["git", "clone", "--quiet", str(source), str(clone)], env=env, capture_output=True,
                            text=True, check=False)
    if cloned.returncode:
        raise BenchmarkFailed(f"git clone {source} failed: {cloned.stderr.strip()}")
    clone_s = time.monotonic() - started
    session = f"fleet-first-start-{os.getpid()}"
    log = work / "make.log"
    # make demo in two steps so the install's output can be read back: the install (to a log),
    # then the demo (on the terminal: the console must own it, not write into a pipe).
    command = f"make .venv/.installed > {log} 2>&1; make demo"
    # A running tmux server gives new sessions its own environment: the fresh folders go with -e.
    fresh = [arg for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")
             for arg in ("-e", f"{name}={env[name]}")]
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(SIZE[0]), "-y", str(SIZE[1]),
                    *fresh, "-c", str(clone), command], check=True, env=env)
    # Detached, a session takes the server's default size (80x24) unless told to keep its own.
    subprocess.run(["tmux", "set-option", "-t", session, "window-size", "manual"], check=False)
    subprocess.run(["tmux", "resize-window", "-t", session, "-x", str(SIZE[0]), "-y", str(SIZE[1])], check=False)
    installed_s = fleet_screen_s = values_s = None
    screen = ""
    try:
        while time.monotonic() - started < timeout_s:
            now = time.monotonic() - started
            if installed_s is None and (clone / ".venv" / ".installed").exists():
                installed_s = now
            screen = _capture(session)
            if fleet_screen_s is None and HEADER.search(screen):
                fleet_screen_s = now
            if fleet_screen_s is not None and sum(1 for line in screen.splitlines() if ROW.match(line)) >= VALUES:
                values_s = now
                break
            time.sleep(POLL_S)
        quit_started = time.monotonic()
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=False)
        while time.monotonic() - quit_started < 30 and subprocess.run(
                ["tmux", "has-session", "-t", session], capture_output=True, check=False).returncode == 0:
            time.sleep(POLL_S)
        quit_s = time.monotonic() - quit_started
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True, check=False)
    output = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    install_lines = [line for line in output.splitlines()  # what make printed besides its own commands
                     if line.strip() and not line.startswith((".venv", "python3 -m pip", "  --target", "touch "))]
    return {
        "clone_s": round(clone_s, 1),
        "installed_s": round(installed_s, 1) if installed_s is not None else None,
        "fleet_screen_s": round(fleet_screen_s, 1) if fleet_screen_s is not None else None,
        "values_s": round(values_s, 1) if values_s is not None else None,
        "quit_s": round(quit_s, 1),
        "install_output": install_lines,
        "uv_on_path": shutil.which("uv") is not None,
        **({} if values_s is not None else {"last_screen": screen.splitlines()}),
    }


def run(argv: list[str]) -> Measured:
    options = parser("first_start", __doc__)
    options.add_argument("--source", type=Path, default=Path(__file__).resolve().parents[1],
                         help="the repository to clone (default: this checkout; its committed state)")
    options.add_argument("--timeout", type=float_in(10.0), default=180.0, help="seconds before giving up")
    args = options.parse_args(argv)
    missing = [tool for tool in ("tmux", "git", "make") if shutil.which(tool) is None]
    if missing:
        raise BenchmarkFailed(f"first_start needs {', '.join(missing)}: the terminal it reads, the clone, make demo")
    with tempfile.TemporaryDirectory(prefix="fleet-first-start-") as temp:
        results = _measure(args.source, Path(temp), args.timeout)
    return Measured(results, {"values_s": at_most(TARGET_S)})
