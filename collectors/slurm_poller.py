"""Slurm jobs and their tenants, polled from the Slurm head with ``squeue --json``."""

from __future__ import annotations

import asyncio
import time

from fleet.collectors.commands import command
from fleet.collectors.inventory import InventoryHost
from fleet.collectors.isolation import Unparsable, read_output
from fleet.collectors.node_poller import CollectSettings
from fleet.collectors.parsers.slurm import parse_squeue_json
from fleet.collectors.setup_gate import SetupGate, poll_in_place
from fleet.collectors.sshpool import SshPool
from fleet.collectors.status import StatusBook
from fleet.collectors.stoppable_sleep import sleep_until_stopped
from fleet.fabric.records import HostRecord, JobRecord
from fleet.fabric.states import HostState
from fleet.fabric.text import clean_text
from fleet.store.writer import StoreWriter

JOBS_EVERY_S = 10.0
"""Jobs start and end on a scale of minutes; squeue costs the controller an RPC each time."""
SQUEUE_CAP_BYTES = 64 << 20
"""``squeue --json`` prints about 5 KiB per job (Slurm 21.08, tests/fixtures/slurm): 64 MiB holds
some 12,000 queued jobs, where the pool's default cap (8 MiB) would hold 1,600."""


class SlurmPoller:
    def __init__(self, host: InventoryHost, pool: SshPool, writer: StoreWriter, status: StatusBook,
                 settings: CollectSettings, gate: SetupGate | None = None) -> None:
        self.host = host
        self._gate = gate
        self._pool = pool
        self._writer = writer
        self._status = status
        self._settings = settings
        self.jobs: tuple[JobRecord, ...] = ()

    async def poll(self) -> bool:
        return await poll_in_place(self._gate, self._pool, self._status, self.host.name, self._poll)

    async def _poll(self) -> bool:
        result = await self._pool.run(self.host.name, command("squeue", "--json"),
                                      timeout_s=self._settings.hung_after_s, max_output_bytes=SQUEUE_CAP_BYTES)
        if not result.ok:
            self._status.set(self.host.name, result.state, result.reason)
            return False
        try:
            parsed = read_output("squeue --json", parse_squeue_json, result.stdout)
        except Unparsable as error:
            self._status.set(self.host.name, HostState.UNPARSABLE, error.reason)
            return False
        if parsed.problems and not parsed.jobs:
            self._status.set(self.host.name, HostState.UNPARSABLE,
                             f"squeue --json: {parsed.problems[0].reason}")
            return False
        now = time.time()
        self.jobs = tuple(
            JobRecord(now, str(job.job_id), _field(job.name), _field(job.user_name), _field(job.account),
                      _field(job.job_state), tuple(_field(node) for node in job.nodes), _field(job.partition),
                      float(job.start_time_s or 0))
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


def _field(text: str) -> str:
    """A job's name, user, tenant or node as Slurm printed it, made inert (``clean_text``)."""
    return clean_text(text, one_line=True)
