"""Slurm jobs and their tenants, polled from the Slurm head with ``squeue --json``."""

from __future__ import annotations

import asyncio
import time

from fleet.collectors.commands import command
from fleet.collectors.inventory import InventoryHost
from fleet.collectors.node_poller import CollectSettings
from fleet.collectors.parsers.slurm import parse_squeue_json
from fleet.collectors.sshpool import SshPool
from fleet.collectors.status import StatusBook
from fleet.collectors.stoppable_sleep import sleep_until_stopped
from fleet.fabric.records import HostRecord, JobRecord
from fleet.fabric.states import HostState
from fleet.store.writer import StoreWriter

JOBS_EVERY_S = 10.0
"""Jobs start and end on a scale of minutes; squeue costs the controller an RPC each time."""


class SlurmPoller:
    def __init__(self, host: InventoryHost, pool: SshPool, writer: StoreWriter, status: StatusBook,
                 settings: CollectSettings) -> None:
        self.host = host
        self._pool = pool
        self._writer = writer
        self._status = status
        self._settings = settings
        self.jobs: tuple[JobRecord, ...] = ()

    async def poll(self) -> bool:
        result = await self._pool.run(self.host.name, command("squeue", "--json"),
                                      timeout_s=self._settings.hung_after_s)
        if not result.ok:
            self._status.set(self.host.name, result.state, result.reason)
            return False
        parsed = parse_squeue_json(result.stdout)
        if parsed.problems and not parsed.jobs:
            self._status.set(self.host.name, HostState.UNPARSABLE,
                             f"squeue --json: {parsed.problems[0].reason}")
            return False
        now = time.time()
        self.jobs = tuple(
            JobRecord(now, str(job.job_id), job.name, job.user_name, job.account, job.job_state,
                      job.nodes, job.partition, float(job.start_time_s or 0))
            for job in parsed.jobs
            if job.job_id is not None
        )
        self._writer.put_jobs(list(self.jobs), ts=now)
        self._writer.put_hosts([HostRecord(self.host.name, "head", self.host.connect_address, "linux")])
        self._status.set(self.host.name, result.state, result.reason)
        return True

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            ok = await self.poll()
            wait_s = JOBS_EVERY_S if ok else max(self._pool.next_retry_s(self.host.name), JOBS_EVERY_S)
            await sleep_until_stopped(stop, wait_s)
