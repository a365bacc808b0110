"""CPU and memory of a process or thread, read from Linux's /proc and the thread CPU clocks."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a running process (``/proc/PID/stat``, in clock ticks)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int | str = "self") -> float:
    """Resident memory of a process, MiB (``VmRSS`` of ``/proc/PID/status``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def thread_cpu_s(name: str) -> float:
    """CPU seconds of this process's thread called ``name`` (0.0 when there is none), on the
    thread's own CPU clock: nanoseconds like ``time.process_time()``, not /proc's 10 ms ticks."""
    thread = next((t for t in threading.enumerate() if t.name == name and t.ident is not None), None)
    if thread is None or thread.ident is None:
        return 0.0
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    except OSError:  # the thread ended meanwhile
        return 0.0
