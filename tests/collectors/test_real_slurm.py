"""fleet's Slurm collector against a real Slurm 22.05 (Debian's slurm-wlm and munge, ``make system-packages``).

Jobs are submitted with ``sbatch``; the collector reads them from the real ``squeue --json`` on the
head (this host, behind the system's sshd, whose sessions find the test's ``slurm.conf``): job ids,
users, accounts as tenants, nodes and states, as the store then holds them.
"""

from __future__ import annotations

import asyncio
import getpass
from pathlib import Path

from helpers.real_slurm import RealSlurm
from helpers.real_sshd import RealSshd

from fleet.collectors.engine import Collector
from fleet.collectors.inventory import load_inventory
from fleet.collectors.node_poller import CollectSettings
from fleet.collectors.slurm_nodes import read_node
from fleet.collectors.sshpool import SshPool
from fleet.fabric.states import HostState
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter


async def test_the_collector_reads_real_jobs(slurm_head: tuple[RealSlurm, RealSshd], tmp_path: Path) -> None:
    slurm, sshd = slurm_head
    training = slurm.submit("--account=acme", "--job-name=train-llm", "-c", "1")
    evaluation = slurm.submit("--account=globex", "--job-name=eval", "-c", "1")
    held = slurm.submit("--account=acme", "--job-name=held", "--hold")
    await asyncio.to_thread(slurm.wait_until, "two jobs running", ("squeue", "-h", "-o", "%T"),
                            lambda out: out.split().count("RUNNING") == 2)
    inventory = load_inventory(sshd.inventory(tmp_path, head=True))
    writer = StoreWriter(tmp_path / "fleet.db").start()
    try:
        summary = await asyncio.wait_for(
            Collector(inventory, writer, settings=CollectSettings(hung_after_s=30.0)).run_once(), timeout=120)
    finally:
        writer.flush(timeout=30)
        writer.close()
    assert summary.states["this-host"].state is HostState.OK, summary.states["this-host"].reason
    reader = StoreReader(tmp_path / "fleet.db")
    try:
        jobs = {job.job_id: job for job in reader.jobs()}
    finally:
        reader.close()
    assert set(jobs) == {training, evaluation, held}
    user = getpass.getuser()
    assert {(j.name, j.user, j.account, j.state, j.nodes) for j in jobs.values()} == {
        ("train-llm", user, "acme", "RUNNING", (slurm.node,)),
        ("eval", user, "globex", "RUNNING", (slurm.node,)),
        ("held", user, "acme", "PENDING", ()),
    }
    assert jobs[training].partition == slurm.partition and jobs[training].start_ts > 0


async def test_a_node_as_scontrol_shows_it(slurm_head: tuple[RealSlurm, RealSshd], tmp_path: Path) -> None:
    slurm, sshd = slurm_head
    inventory = load_inventory(sshd.inventory(tmp_path, head=True))
    pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts)
    try:
        node, why = await read_node(pool, "this-host", slurm.node)
        missing, missing_why = await read_node(pool, "this-host", "node999")
    finally:
        await pool.close()
    assert node is not None, why
    assert (node.name, node.base_state, node.drained) == (slurm.node, "IDLE", False)
    assert missing is None and missing_why == "exit status 1: Node node999 not found"
