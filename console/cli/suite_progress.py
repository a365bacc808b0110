"""The progress view of ``fleet baseline take`` and ``fleet accept`` on stderr.

On a terminal one line per step, redrawn in place (``[####....] 12/32 bandwidth ...``);
elsewhere (CI logs, a pipe) one line when a step starts and one when it ends,
so a log stays short. stdout stays for the one JSON document.
"""

from __future__ import annotations

from typing import TextIO

from fleet.collectors.baseline_run import SuiteProgress
from fleet.fabric.acceptance import CheckResult


class ProgressView:
    def __init__(self, stream: TextIO, *, live: bool) -> None:
        self.stream = stream
        self.live = live
        self._step = ""
        self._open = False

    def __call__(self, progress: SuiteProgress) -> None:
        if self.live:
            self._redraw(progress)
        elif progress.step != self._step or (progress.total and progress.done == progress.total):
            self.stream.write(f"{progress.step}: {progress.done}/{progress.total} {progress.detail}\n")
        self._step = progress.step
        self.stream.flush()

    def _redraw(self, progress: SuiteProgress) -> None:
        if progress.step != self._step and self._open:
            self.stream.write("\n")
        width = 24
        filled = int(width * progress.done / progress.total) if progress.total else 0
        self.stream.write(f"\r{progress.step:<10} [{'#' * filled}{'.' * (width - filled)}] "
                          f"{progress.done}/{progress.total} {progress.detail[:60]:<60}")
        self._open = True

    def check(self, result: CheckResult) -> None:
        """One acceptance check turned pass or fail."""
        self.close()
        verdict = "PASS" if result.passed else "FAIL"
        self.stream.write(f"{verdict}  {result.check.id}  ({result.check.threshold_words()}): {result.summary}\n")
        self.stream.flush()

    def close(self) -> None:
        if self._open:
            self.stream.write("\n")
            self._open = False


__all__ = ["ProgressView"]
