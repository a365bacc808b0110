"""The system's OpenSSH server, started by hand on 127.0.0.1 for one test, then stopped.

What runs is Debian's ``openssh-server`` (``make system-packages`` installs it): ``sshd -D -e -f CONFIG`` on a
spare port, with a host key and an ``authorized_keys`` of its own in a temporary directory, password
and keyboard-interactive logins off, PAM off. It logs in the user running the tests (root in CI), so
that commands run on this very Linux host: its /sys, its /proc, its python3. Nothing is left running:
the context manager ends the daemon (SIGTERM, then SIGKILL after a bounded wait) whatever happens.

Tests that need it call :func:`sshd_or_skip`, which says why when it cannot start one (not
installed, or no way to run it as this user).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import selectors
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncssh
import pytest

SSHD = "/usr/sbin/sshd"
READY_WAIT_S = 20.0
"""Bounded wait for sshd's "Server listening" line (it prints it before accepting)."""
PRIVSEP_DIR = Path("/run/sshd")
"""OpenSSH run as root needs its privilege-separation directory (the service unit creates it)."""


@dataclass(frozen=True, slots=True)
class RealSshd:
    """A running sshd: where it listens, who may log in, and with which key."""

    address: str
    port: int
    user: str
    host_key: asyncssh.SSHKey
    client_key_path: Path
    log_path: Path

    def known_hosts_line(self, name: str | None = None) -> str:
        """``[address]:port KEY`` (and ``[name]:port`` when given), as OpenSSH writes it."""
        public = self.host_key.export_public_key().decode().strip()
        patterns = f"[{self.address}]:{self.port}" + (f",[{name}]:{self.port}" if name else "")
        return f"{patterns} {public}\n"

    def write_known_hosts(self, path: Path, *names: str) -> Path:
        path.write_text("".join(self.known_hosts_line(name) for name in (None, *names)), encoding="utf-8")
        return path

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def inventory(self, folder: Path, name: str = "this-host", *, mode: str = "agent", head: bool = False) -> Path:
        """An inventory (and its known_hosts) naming this host ``name``, reached through this sshd;
        with ``head``, it is the ``[slurm]`` head instead of a node."""
        known = self.write_known_hosts(folder / "known_hosts", name)
        path = folder / "inventory.toml"
        where = f'address = "{self.address}"\nport = {self.port}\n'
        entry = f'[slurm]\nhost = "{name}"\n{where}' if head else f'[[nodes]]\nnames = "{name}"\n{where}'
        path.write_text(
            f'[defaults]\nuser = "{self.user}"\nidentity_file = "{self.client_key_path}"\n'
            f'known_hosts = "{known}"\nmode = "{mode}"\ninterval = 1\n\n{entry}',
            encoding="utf-8")
        return path


def _spare_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _config(folder: Path, port: int, user: str, extra: tuple[str, ...]) -> str:
    return "\n".join([
        *extra,
        f"Port {port}",
        "ListenAddress 127.0.0.1",
        f"HostKey {folder / 'ssh_host_ed25519_key'}",
        f"AuthorizedKeysFile {folder / 'authorized_keys'}",
        f"PidFile {folder / 'sshd.pid'}",
        f"AllowUsers {user}",
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "AllowTcpForwarding yes",
        "X11Forwarding no",
        "PrintMotd no",
        "LogLevel VERBOSE",
        "",
    ])


def _wait_listening(process: subprocess.Popen[bytes], log_path: Path, timeout_s: float) -> str:
    """"" once sshd says it listens; else why it did not (its exit, or the wait's end)."""
    assert process.stderr is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stderr, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout_s
    try:
        with log_path.open("ab") as log:
            while (remaining := deadline - time.monotonic()) > 0:
                if not selector.select(remaining):
                    continue
                line = process.stderr.readline()
                if not line:
                    process.wait(timeout=5)
                    return f"sshd exited with status {process.returncode}: {log_path.read_text(errors='replace')[-400:]}"
                log.write(line)
                log.flush()
                if b"Server listening on" in line:
                    return ""
        return f"sshd did not say it was listening within {timeout_s:g} s"
    finally:
        selector.close()


def _drain(process: subprocess.Popen[bytes], log_path: Path) -> None:
    """Keep sshd's log flowing into the file (a full pipe would stall it) until it exits."""
    assert process.stderr is not None
    with log_path.open("ab") as log:
        for line in process.stderr:
            log.write(line)
            log.flush()


@contextlib.contextmanager
def running_sshd(folder: Path, extra: tuple[str, ...] = ()) -> Iterator[RealSshd]:
    """Start the system's sshd for the current user on 127.0.0.1; stop it on exit. ``extra``: more
    ``sshd_config`` lines, first (sshd keeps the first value of a keyword), e.g. ``SetEnv``.

    Raises ``RuntimeError`` with sshd's own words when it does not start; :func:`sshd_or_skip`
    turns a missing sshd into a skip first.
    """
    folder.mkdir(parents=True, exist_ok=True)
    user = getpass.getuser()
    host_key = asyncssh.generate_private_key("ssh-ed25519")
    host_key.write_private_key(str(folder / "ssh_host_ed25519_key"))
    (folder / "ssh_host_ed25519_key").chmod(0o600)
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    client_key_path = folder / "id_ed25519"
    client_key.write_private_key(str(client_key_path))
    client_key_path.chmod(0o600)
    (folder / "authorized_keys").write_bytes(client_key.export_public_key())
    if os.geteuid() == 0 and not PRIVSEP_DIR.is_dir():
        PRIVSEP_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
    log_path = folder / "sshd.log"
    problem = ""
    for _attempt in range(3):  # a spare port can be taken between the probe and sshd's bind
        port = _spare_port()
        config = folder / "sshd_config"
        config.write_text(_config(folder, port, user, extra), encoding="utf-8")
        process = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        problem = _wait_listening(process, log_path, READY_WAIT_S)
        if not problem:
            break
        _stop(process)
        if "Address already in use" not in problem:
            raise RuntimeError(problem)
    else:
        raise RuntimeError(problem)
    drain = threading.Thread(target=_drain, args=(process, log_path), daemon=True)
    drain.start()
    try:
        yield RealSshd("127.0.0.1", port, user, host_key, client_key_path, log_path)
    finally:
        _stop(process)
        drain.join(timeout=5)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (sshd also ends the sessions it forked), then SIGKILL after a bounded wait."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def sshd_missing() -> str:
    """Why no real sshd can run here ("" when one can)."""
    if shutil.which("sshd") is None and not Path(SSHD).exists():
        return "openssh-server is not installed (`make system-packages` installs it from Debian's packages as root)"
    if shutil.which("python3") is None:
        return "no python3 on PATH for the agent on this host"
    return ""


def sshd_or_skip() -> None:
    """Skip the calling test, saying why, when the system's sshd is not available."""
    reason = sshd_missing()
    if reason:
        pytest.skip(reason)
