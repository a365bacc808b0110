"""Per-job latency sampler: a few RDMA latency probes inside every running job, every interval.

Why: operators watch RDMA p99 latency per job and tenant (docs/domain.md,
"What operators report"); counters say a link is busy, only a probe says what a job's
messages wait. The Jobs screen draws ``StoreReader.job_latency`` (p50/p99 per
bucket), which reads these probes: ``ProbeRecord`` kind "lat" with ``job`` set.

Light by design: ``pairs_per_job`` short probes (``iterations`` round trips,
milliseconds of traffic) per job per interval, at most ``max_parallel`` at
once. Pairs rotate so that over rounds every node of a job meets several peers
on every rail; the pairs of one job's round never put one NIC in two probes
(jobs are taken to own their nodes, as exclusive Slurm allocations do). Who runs
it decides whether it runs: the console keeps it off in read-only mode unless
asked (docs/design.md, "Actions": read-only sends no traffic); this module only samples.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fleet.collectors.probes.perftest_probe import GidCache, PerftestSpec, run_perftest
from fleet.collectors.probes.ports import PortAllocator
from fleet.collectors.sshpool import SshPool
from fleet.collectors.stoppable_sleep import sleep_until_stopped
from fleet.fabric.naming import RAILS_PER_NODE, nic_name
from fleet.fabric.records import JobRecord, ProbeRecord


@dataclass(frozen=True, slots=True)
class JobSamplerSettings:
    interval_s: float = 60.0
    """One sample a minute: the Jobs screen buckets latency per minute (``job_latency`` bucket_s 60)."""
    pairs_per_job: int = 2
    """Two probes per job per minute: a trend per job at a cost no training job notices."""
    iterations: int = 200
    """Round trips per probe: enough for a p99 (two samples above it), a few milliseconds on RoCE."""
    test: str = "ib_write_lat"
    probe_timeout_s: float = 15.0
    max_parallel: int = 16
    rails: int = RAILS_PER_NODE


def job_pairs(job: JobRecord, round_index: int, count: int, rails: int = RAILS_PER_NODE) -> list[tuple[str, str, int]]:
    """The (client, server, rail) probes of ``job`` in round ``round_index``.

    Client i of the job's sorted nodes probes node i + step, where the step grows by one each time
    every node has been a client, so peers change over rounds; consecutive probes of a round use
    consecutive rails, so no NIC is in two probes of one round.
    """
    nodes = sorted(set(job.nodes))
    n = len(nodes)
    if n < 2 or count < 1:
        return []
    pairs: list[tuple[str, str, int]] = []
    for k in range(min(count, rails)):
        slot = round_index * count + k
        client = slot % n
        step = 1 + (slot // n) % (n - 1)
        pairs.append((nodes[client], nodes[(client + step) % n], slot % rails))
    return pairs


class JobLatencySampler:
    """Samples the running jobs' latency; ``jobs`` says which jobs run now, ``on_record`` stores a probe."""

    def __init__(self, pool: SshPool, jobs: Callable[[], Sequence[JobRecord]],
                 on_record: Callable[[ProbeRecord], None], settings: JobSamplerSettings | None = None,
                 *, ports: PortAllocator | None = None) -> None:
        self._pool = pool
        self._jobs = jobs
        self._on_record = on_record
        self.settings = settings or JobSamplerSettings()
        self._ports = ports or PortAllocator()
        self._gids = GidCache()
        self._slots = asyncio.Semaphore(self.settings.max_parallel)
        self._round = 0

    async def sample(self) -> list[ProbeRecord]:
        """One round over every running job; failed probes are records too (``ok`` False)."""
        settings = self.settings
        run_id = f"jobsample-{int(time.time())}-{self._round}"
        specs = [
            PerftestSpec(src, dst, test=settings.test, src_nic=nic_name(rail), iterations=settings.iterations,
                         timeout_s=settings.probe_timeout_s, job=job.job_id, run_id=run_id)
            for job in self._jobs()
            for src, dst, rail in job_pairs(job, self._round, settings.pairs_per_job, settings.rails)
        ]
        self._round += 1
        records = await asyncio.gather(*(self._probe(spec) for spec in specs))
        return list(records)

    async def _probe(self, spec: PerftestSpec) -> ProbeRecord:
        async with self._slots:
            record = await run_perftest(self._pool, spec, ports=self._ports, gids=self._gids)
        self._on_record(record)
        return record

    async def run(self, stop: asyncio.Event) -> None:
        """Sample every ``interval_s`` until ``stop`` is set; a slow round shortens the next pause."""
        while not stop.is_set():
            started = time.monotonic()
            await self.sample()
            await sleep_until_stopped(stop, self.settings.interval_s - (time.monotonic() - started))
