"""The per-job latency sampler: rotating pairs inside each job, probes stored per job, p50/p99 readable."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest
from simfleet import Fleet

from fleet.collectors.probes.job_latency import JobLatencySampler, JobSamplerSettings, job_pairs
from fleet.fabric.records import JobRecord, ProbeRecord
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

pytestmark = pytest.mark.timeout(30)

JOB = JobRecord(0.0, "501", "train", "alice", "acme", "RUNNING", ("gpu003", "gpu001", "gpu002", "gpu004"))


def test_pairs_rotate_over_peers_and_rails_and_never_share_a_nic_in_a_round() -> None:
    rounds = [job_pairs(JOB, r, 2) for r in range(12)]
    for pairs in rounds:
        assert len(pairs) == 2 and all(src != dst for src, dst, _ in pairs)
        nics = [(node, rail) for src, dst, rail in pairs for node in (src, dst)]
        assert len(nics) == len(set(nics))
    seen = {(src, dst) for pairs in rounds for src, dst, _ in pairs}
    assert len(seen) == 12  # every ordered pair of the 4 nodes within 12 rounds
    assert Counter(rail for pairs in rounds for _, _, rail in pairs) == {r: 3 for r in range(8)}
    assert job_pairs(JobRecord(0.0, "9", "x", "u", "a", "RUNNING", ("gpu001",)), 0, 2) == []


async def test_samples_every_running_job_and_the_jobs_screen_reads_p50_p99(fleet: Fleet, tmp_path: Path) -> None:
    train = JobRecord(0.0, "501", "train", "alice", "acme", "RUNNING", ("gpu001", "gpu002"))
    running = [train, JobRecord(0.0, "502", "eval", "bob", "globex", "RUNNING", ("gpu004", "gpu003"))]
    db = tmp_path / "fleet.db"
    started = time.time()
    with StoreWriter(db) as writer:
        sampler = JobLatencySampler(fleet.pool, lambda: running, writer.put_probe,
                                    JobSamplerSettings(pairs_per_job=2, iterations=100, probe_timeout_s=10))
        first = await sampler.sample()
        running = [train]  # job 502 ended
        second = await sampler.sample()
        assert writer.flush()
    assert Counter(r.job for r in first) == {"501": 2, "502": 2}
    assert all(r.ok and r.kind == "lat" and r.result["p99_usec"] > 0 for r in first + second), first + second
    assert {r.job for r in second} == {"501"} and len(second) == 2
    nics = {(r.src, r.dst, r.src_nic) for r in first if r.job == "501"}
    assert nics.isdisjoint({(r.src, r.dst, r.src_nic) for r in second})  # other rails next round
    assert fleet.perftest_servers() == []
    with StoreReader(db) as reader:
        buckets = reader.job_latency("501", started - 1, time.time() + 1, bucket_s=3600)
        assert len(reader.probes(job="502")) == 2
    [(_, p50_usec, p99_usec)] = buckets
    assert 0 < p50_usec <= p99_usec


async def test_run_samples_until_stopped(fleet: Fleet) -> None:
    records: list[ProbeRecord] = []
    two = asyncio.Event()
    stop = asyncio.Event()

    def keep(record: ProbeRecord) -> None:
        records.append(record)
        if len(records) >= 2:
            two.set()

    sampler = JobLatencySampler(fleet.pool, lambda: [JOB], keep,
                                JobSamplerSettings(interval_s=0.2, pairs_per_job=1, iterations=50))
    task = asyncio.ensure_future(sampler.run(stop))
    await asyncio.wait_for(two.wait(), timeout=20)
    stop.set()
    await asyncio.wait_for(task, timeout=20)
    assert len({(r.src, r.dst, r.src_nic) for r in records}) >= 2  # a new pair each round
