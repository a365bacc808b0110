"""Start `fleet sim` as a child process and wait for its ready line: shared by `fleet demo` and benchmarks/."""

from __future__ import annotations

import contextlib
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

READY_PREFIX = "fleet-sim ready: "


class SimulatorFailed(Exception):
    """The simulator exited or did not become ready in time; the message says why, in one line."""


@dataclass
class SimProcess:
    process: subprocess.Popen[str]
    ready_line: str
    log_path: Path

    @property
    def inventory(self) -> Path:
        return Path(self.ready_line.split(" inventory at ", 1)[1])

    def stop(self, timeout_s: float = 10.0) -> int:
        """SIGTERM, then SIGKILL if it has not exited within ``timeout_s``; returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def scaled_line(sim: SimProcess) -> str:
    """The simulator's one line on what ``--nodes`` left out of its scenario ("" when nothing)."""
    try:
        lines = sim.log_path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    return next((line for line in lines if line.startswith("fleet sim: ") and " fitted to " in line), "")


def start_sim(scenario: str, state_dir: Path, *, nodes: int | None = None, timeout_s: float = 120.0) -> SimProcess:
    """Run ``fleet sim`` in ``state_dir`` (its stderr goes to ``state_dir/sim.log``) until it is ready."""
    state_dir.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / "sim.log"
    command = [sys.executable, "-c", "from fleet.console.cli import main; main()", "sim",
               "--scenario", scenario, "--state-dir", str(state_dir)]  # fmt: skip
    if nodes is not None:
        command += ["--nodes", str(nodes)]
    started = time.monotonic()
    with log_path.open("w", encoding="utf-8") as log:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True)
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    try:
        deadline = started + timeout_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SimulatorFailed(f"the simulator was not ready within {timeout_s:.0f} s")
            if selector.select(remaining):
                line = process.stdout.readline()
                if line.startswith(READY_PREFIX):
                    return SimProcess(process, line.rstrip("\n"), log_path)
                if not line:
                    process.wait()
                    reason = log_path.read_text(encoding="utf-8").strip().splitlines()
                    raise SimulatorFailed(reason[-1] if reason else f"the simulator exited ({process.returncode})")
    except BaseException:
        with contextlib.suppress(Exception):
            if process.poll() is None:
                process.kill()
                process.wait()
        raise
    finally:
        selector.close()
