"""A real Slurm on localhost for tests: MUNGE, slurmctld and slurmd from Debian's packages.

``make system-packages`` installs ``slurm-wlm`` and ``munge``; without them (or without root, which slurmd
needs to run jobs as their users) the tests that use this skip and say why. Everything lives in a
temporary directory: the MUNGE key and socket, a minimal ``slurm.conf`` (one node, ``node001``, on
127.0.0.1, one partition ``debug``, no accounting database, ``ProctrackType=proctrack/linuxproc``
and ``TaskPlugin=task/none``, which need no cgroup set-up), state, spool and logs, the ports spare
ones. Clients find it through ``SLURM_CONF``. Each daemon runs in the foreground in a process
group of its own; ``stop()`` cancels every job (waiting, bounded, for the queue to empty), then
ends the daemons (SIGTERM, then SIGKILL after a bounded wait), so nothing is left running.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

DAEMONS = ("/usr/sbin/munged", "/usr/sbin/slurmctld", "/usr/sbin/slurmd")
CLIENTS = ("sbatch", "squeue", "scontrol", "scancel")
READY_WAIT_S = 60.0
"""Bounded wait for each daemon to answer (the controller, then the node registering idle)."""
STOP_WAIT_S = 15.0
NODE = "node001"
PARTITION = "debug"


def slurm_missing() -> str:
    """Why no real Slurm can run here ("" when one can)."""
    missing = [path for path in DAEMONS if not Path(path).exists()]
    missing += [tool for tool in CLIENTS if shutil.which(tool) is None]
    if missing:
        return (f"Slurm or MUNGE is not installed ({', '.join(missing)} missing; `make system-packages` installs "
                "Debian's slurm-wlm and munge as root)")
    if os.geteuid() != 0:
        return "slurmd runs jobs as their users and needs root; these tests run as another user"
    return ""


def slurm_or_skip() -> None:
    reason = slurm_missing()
    if reason:
        pytest.skip(reason)


def _spare_ports(count: int) -> list[int]:
    probes = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [int(probe.getsockname()[1]) for probe in probes]
    finally:
        for probe in probes:
            probe.close()


@dataclass
class RealSlurm:
    """A running MUNGE + slurmctld + slurmd, and how to run its clients."""

    folder: Path
    conf: Path
    node: str = NODE
    partition: str = PARTITION
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, check: bool = True, timeout_s: float = 30.0) -> subprocess.CompletedProcess[str]:
        """A Slurm client (``squeue``, ``sbatch``, ``scontrol`` ...) against this Slurm."""
        done = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=timeout_s, check=False)
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()}\n{self.logs()}")
        return done

    def submit(self, *options: str, command: str = "sleep 600") -> str:
        """``sbatch --parsable OPTIONS --wrap COMMAND``: the job id. The job runs and writes its
        output in this Slurm's folder, never where the tests were started."""
        return self.run("sbatch", "--parsable", f"--chdir={self.folder}", f"--output={self.folder}/slurm-%j.out",
                        *options, f"--wrap={command}").stdout.strip().split(";")[0]

    def wait_until(self, what: str, argv: tuple[str, ...], predicate: object, timeout_s: float = READY_WAIT_S) -> str:
        """Run ``argv`` until ``predicate(stdout)`` holds (bounded); its last output."""
        assert callable(predicate)
        deadline = time.monotonic() + timeout_s
        out = ""
        while time.monotonic() < deadline:
            done = self.run(*argv, check=False)
            out = done.stdout
            if done.returncode == 0 and predicate(out):
                return out
            time.sleep(0.2)  # polling a daemon's state: it offers nothing to wait on
        raise RuntimeError(f"{what}: not within {timeout_s:g} s; last output {out!r}\n{self.logs()}")

    def node_state(self) -> str:
        """``scontrol show node``'s ``State=`` of the one node (``IDLE``, ``MIXED+DRAIN`` ...)."""
        out = self.run("scontrol", "show", "node", self.node).stdout
        for word in out.split():
            if word.startswith("State="):
                return word.split("=", 1)[1]
        return ""

    def logs(self) -> str:
        parts = []
        for name in ("munged.log", "slurmctld.log", "slurmd.log"):
            path = self.folder / "log" / name
            if path.exists():
                parts.append(f"--- {name}\n" + path.read_text(errors="replace")[-1500:])
        return "\n".join(parts)

    def stop(self) -> None:
        """Cancel every job (bounded wait for the queue to empty), then end each daemon."""
        with contextlib.suppress(Exception):
            self.run("scancel", f"--partition={self.partition}", check=False)
            deadline = time.monotonic() + STOP_WAIT_S
            while time.monotonic() < deadline and self.run("squeue", "-h", check=False).stdout.strip():
                time.sleep(0.2)
        for process in reversed(self.processes):
            _end(process)
        self.processes.clear()


def _end(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the daemon's process group, then SIGKILL after a bounded wait."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_WAIT_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_WAIT_S)


def _conf(folder: Path, host: str, ctld_port: int, slurmd_port: int) -> str:
    return "\n".join([
        "ClusterName=fleettest",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={slurmd_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={folder / 'munge' / 'munge.socket'}",
        f"StateSaveLocation={folder / 'state'}",
        f"SlurmdSpoolDir={folder / 'spool'}",
        f"SlurmctldPidFile={folder / 'slurmctld.pid'}",
        f"SlurmdPidFile={folder / 'slurmd.pid'}",
        f"SlurmctldLogFile={folder / 'log' / 'slurmctld.log'}",
        f"SlurmdLogFile={folder / 'log' / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "SchedulerType=sched/backfill",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "ReturnToService=2",
        "KillWait=2",
        "JobCompType=jobcomp/none",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none",
        f"NodeName={NODE} NodeHostname={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count() or 1} State=UNKNOWN",
        f"PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4",
        "",
    ])


def _start(argv: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)


@contextlib.contextmanager
def running_slurm(folder: Path) -> Iterator[RealSlurm]:
    """MUNGE, slurmctld and slurmd in ``folder``, ready (the node idle); all stopped on exit.

    One at a time on this machine (a lock file shared by pytest-xdist's workers): two Slurms on one
    host collide on the ports and the node name they register, and slurmd then fails to bind."""
    with open(Path(tempfile.gettempdir()) / "fleet-tests-real-slurm.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with _running_slurm(folder) as slurm:
            yield slurm


@contextlib.contextmanager
def _running_slurm(folder: Path) -> Iterator[RealSlurm]:
    for part in ("munge", "state", "spool", "log"):
        (folder / part).mkdir(parents=True, exist_ok=True)
    (folder / "munge").chmod(0o755)  # clients of every user reach the socket
    key = folder / "munge" / "munge.key"
    key.write_bytes(os.urandom(128))
    key.chmod(0o600)
    host = socket.gethostname().split(".")[0]
    ctld_port, slurmd_port = _spare_ports(2)
    conf = folder / "slurm.conf"
    conf.write_text(_conf(folder, host, ctld_port, slurmd_port), encoding="utf-8")
    slurm = RealSlurm(folder, conf)
    env = slurm.env
    try:
        munge = folder / "munge"
        slurm.processes.append(_start(
            ["/usr/sbin/munged", "--foreground", "--force", f"--key-file={key}",
             f"--socket={munge / 'munge.socket'}", f"--pid-file={munge / 'munged.pid'}",
             f"--seed-file={munge / 'munged.seed'}"], folder / "log" / "munged.log", env))
        deadline = time.monotonic() + READY_WAIT_S
        while not (munge / "munge.socket").exists():
            if time.monotonic() > deadline or slurm.processes[0].poll() is not None:
                raise RuntimeError(f"munged did not start\n{slurm.logs()}")
            time.sleep(0.1)  # a daemon's socket appearing: nothing to wait on but the file
        slurm.processes.append(_start(["/usr/sbin/slurmctld", "-D", "-f", str(conf)],
                                      folder / "log" / "slurmctld.out", env))
        slurm.processes.append(_start(["/usr/sbin/slurmd", "-D", "-N", NODE, "-f", str(conf)],
                                      folder / "log" / "slurmd.out", env))
        slurm.wait_until("the node registering", ("sinfo", "-h", "-N", "-o", "%T"),
                         lambda out: out.strip() == "idle")
        yield slurm
    finally:
        slurm.stop()
