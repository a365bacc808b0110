"""The collector against a real Linux host behind the system's real OpenSSH server.

The host is the one running the tests: its /sys and /proc, its python3, Debian's sshd (``make system-packages``
installs it; without it these tests skip and say why). What the collector reports must be what is
there, read here from the same files, so the tests hold on any host.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from helpers.real_sshd import RealSshd

from fleet.collectors.commands import command
from fleet.collectors.engine import Collector
from fleet.collectors.inventory import load_inventory
from fleet.collectors.node_poller import CollectSettings
from fleet.collectors.sshpool import SshPool
from fleet.fabric.node_hardware import NO_NVIDIA_DRIVER, NO_RDMA, node_hardware
from fleet.fabric.states import HostState
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

SETTINGS = CollectSettings(interval_s=1.0, hung_after_s=20.0, slow_after_s=10.0)
"""Room for a loaded CI machine: what is judged here is what the host has, not its speed."""


def this_host_states() -> tuple[str, ...]:
    """What this host is, read from its own files: the node states fleet should report."""
    states = []
    if not os.path.isdir("/sys/class/infiniband") or not os.listdir("/sys/class/infiniband"):
        states.append(NO_RDMA)
    if not os.path.isdir("/sys/module/nvidia"):
        states.append(NO_NVIDIA_DRIVER)
    return tuple(states)


def mem_total_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no MemTotal in /proc/meminfo")


async def test_a_command_runs_on_this_host(real_sshd: RealSshd, tmp_path: Path) -> None:
    inventory = load_inventory(real_sshd.inventory(tmp_path))
    pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts)
    try:
        result = await pool.run("this-host", command("uname", "-r"), timeout_s=30)
    finally:
        await pool.close()
    assert result.state in (HostState.OK, HostState.SLOW), f"{result.reason}\n{real_sshd.log()[-2000:]}"
    assert result.stdout.strip() == os.uname().release


async def test_the_real_agent_reports_what_this_host_has(real_sshd: RealSshd, tmp_path: Path) -> None:
    inventory = load_inventory(real_sshd.inventory(tmp_path))
    writer = StoreWriter(tmp_path / "fleet.db").start()
    try:
        summary = await asyncio.wait_for(Collector(inventory, writer, settings=SETTINGS).run_once(), timeout=120)
    finally:
        writer.flush(timeout=30)
        writer.close()
    status = summary.states["this-host"]
    assert status.state in (HostState.OK, HostState.SLOW), f"{status.reason}\n{real_sshd.log()[-2000:]}"
    assert tuple(summary.node_states.get("this-host", ())) == this_host_states()
    reader = StoreReader(tmp_path / "fleet.db")
    try:
        record = next(h for h in reader.hosts() if h.name == "this-host")
        events = reader.events()
    finally:
        reader.close()
    hardware = node_hardware(record.info)
    assert hardware.states == this_host_states()
    assert hardware.cpus == os.cpu_count()
    assert hardware.memory_bytes == mem_total_bytes()
    interfaces = sorted(name for name in os.listdir("/sys/class/net") if name != "lo")
    assert hardware.netdevs is not None
    assert [part.split()[0] for part in hardware.netdevs.split(", ") if part] == interfaces
    assert record.info["kernel"] == os.uname().release
    assert not [e for e in events if e.kind == "host_state"], "a host that is what it is has no state to report"
