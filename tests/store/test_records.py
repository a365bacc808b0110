"""Inventory, events, probes, jobs, host states and baselines: written once, read back with filters."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from fleet.fabric.events import Event, Severity
from fleet.fabric.records import HostRecord, HostStatus, JobRecord, PortRecord, ProbeRecord
from fleet.fabric.states import HostState
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter


def test_hosts_and_ports_are_upserted(fresh_db: Path) -> None:
    with StoreWriter(fresh_db) as writer:
        writer.put_hosts([HostRecord("gpu001", "node", "10.0.0.1", "linux", 0, {"kernel": "6.8"}),
                          HostRecord("leaf01", "leaf", os="cumulus")])
        writer.put_hosts([HostRecord("gpu001", "node", "10.0.0.9", "linux", 0, {"kernel": "6.9"})])
        writer.put_ports([PortRecord("gpu001", "mlx5_0", "1", "ens1f0", "Ethernet", "leaf01", "swp1"),
                          PortRecord("leaf01", "swp1", "")])
    reader = StoreReader(fresh_db)
    assert reader.hosts() == [HostRecord("gpu001", "node", "10.0.0.9", "linux", 0, {"kernel": "6.9"}),
                              HostRecord("leaf01", "leaf", os="cumulus")]
    assert reader.ports("gpu001") == [PortRecord("gpu001", "mlx5_0", "1", "ens1f0", "Ethernet", "leaf01", "swp1")]
    assert len(reader.ports()) == 2


def test_events_newest_first_with_filters(fresh_db: Path) -> None:
    events = [Event(100.0 + i, "link_down" if i % 2 else "host_state",
                    Severity.CRITICAL if i % 3 == 0 else Severity.INFO, f"message {i}",
                    host=f"gpu00{i % 2}", data={"i": i}) for i in range(10)]
    with StoreWriter(fresh_db) as writer:
        for event in events:
            writer.put_event(event)
    reader = StoreReader(fresh_db)
    assert reader.events() == events[::-1]
    assert reader.events(kind="link_down", since=103, until=107) == [events[7], events[5], events[3]]
    assert reader.events(host="gpu000", severity="critical") == [events[6], events[0]]
    assert reader.events(limit=2) == [events[9], events[8]]


def test_probes_keep_their_raw_output(fresh_db: Path) -> None:
    probes = [ProbeRecord(10.0 * i, "lat" if i < 3 else "bw", f"gpu00{i}", "gpu009", "mlx5_0", "mlx5_1",
                          ok=i != 1, params={"size": 2}, result={"p99_usec": 2.5 + i},
                          raw=f"#bytes #iterations t_min[usec]\n 2 1000 {i}\n", job="42", run_id="r1")
              for i in range(5)]
    with StoreWriter(fresh_db) as writer:
        for probe in probes:
            writer.put_probe(probe)
    reader = StoreReader(fresh_db)
    assert reader.probes() == probes[::-1]
    assert reader.probes(kind="lat", host="gpu009", since=5) == [probes[2], probes[1]]
    assert reader.probes(host="gpu003") == [probes[3]]
    assert reader.probes(job="nope") == [] and len(reader.probes(run_id="r1")) == 5


def _job(job_id: str, ts: float, account: str, start: float) -> JobRecord:
    return JobRecord(ts, job_id, "train", "alice", account, "RUNNING", ("gpu001", "gpu002"), "gpu", start)


def test_jobs_over_time_and_latency_per_job_and_tenant(fresh_db: Path) -> None:
    with StoreWriter(fresh_db) as writer:
        writer.put_jobs([_job("1", 1000.0, "acme", 900.0), _job("2", 1000.0, "acme", 950.0)])
        writer.put_jobs([_job("2", 2000.0, "acme", 950.0), _job("3", 2000.0, "zeta", 1500.0)])
        for i in range(120):
            job = "1" if i < 60 else "2"
            writer.put_probe(ProbeRecord(1000.0 + i, "lat", "gpu001", "gpu002", job=job,
                                         result={"t_typical_usec": 2.0 + i % 3, "p99_usec": 5.0 + i % 7}))
        writer.put_probe(ProbeRecord(1001.0, "lat", "gpu001", "gpu002", ok=False, job="1",
                                     result={"t_typical_usec": 999.0}))
    reader = StoreReader(fresh_db)
    assert [j.job_id for j in reader.jobs()] == ["2", "3"]
    assert [j.job_id for j in reader.jobs(as_of=1200.0)] == ["1", "2"]  # 3 starts at 1500
    assert [j.job_id for j in reader.jobs(as_of=2500.0)] == ["2", "3"]
    assert reader.jobs(as_of=800.0) == []
    assert reader.jobs(as_of=1200.0)[0] == _job("1", 1200.0, "acme", 900.0)

    per_job = reader.job_latency("1", 1000.0, 1200.0, bucket_s=30)
    assert [row[0] for row in per_job] == [1000.0, 1030.0]
    assert per_job[0][1] == 3.0  # median of 2, 3, 4, ... (failed probe left out)
    assert per_job[0][2] == np.percentile([5.0 + i % 7 for i in range(30)], 99)
    tenant = reader.tenant_latency("acme", 1000.0, 1200.0, bucket_s=60)
    assert [row[0] for row in tenant] == [1000.0, 1060.0]
    assert reader.tenant_latency("nobody", 0, 1e12) == []


def test_host_statuses_as_of(fresh_db: Path) -> None:
    with StoreWriter(fresh_db) as writer:
        writer.put_host_status(HostStatus("gpu001", HostState.OK, 100.0))
        writer.put_host_status(HostStatus("gpu001", HostState.UNREACHABLE, 200.0, "connection refused"))
        writer.put_host_status(HostStatus("gpu002", HostState.AUTH_FAILED, 150.0, "key rejected"))
    reader = StoreReader(fresh_db)
    now = reader.host_statuses()
    assert now["gpu001"] == HostStatus("gpu001", HostState.UNREACHABLE, 200.0, "connection refused")
    assert reader.host_statuses(as_of=160.0) == {
        "gpu001": HostStatus("gpu001", HostState.OK, 100.0),
        "gpu002": HostStatus("gpu002", HostState.AUTH_FAILED, 150.0, "key rejected")}
    assert reader.host_statuses(as_of=50.0) == {}


def test_a_host_being_reconnected_keeps_its_last_settled_state(fresh_db: Path) -> None:
    """After a collector restart every host is ``connecting`` a while: a diagnosis must not read that as
    the hung host having recovered (nor the healthy one as unknown)."""
    with StoreWriter(fresh_db) as writer:
        writer.put_host_status(HostStatus("gpu001", HostState.HUNG, 100.0, "no first line within 11 s"))
        writer.put_host_status(HostStatus("gpu001", HostState.CONNECTING, 300.0, "waiting to set up"))
        writer.put_host_status(HostStatus("gpu002", HostState.OK, 100.0))
        writer.put_host_status(HostStatus("gpu002", HostState.CONNECTING, 300.0))
        writer.put_host_status(HostStatus("gpu003", HostState.CONNECTING, 300.0))
    reader = StoreReader(fresh_db)
    assert {h: s.state for h, s in reader.host_statuses().items()} == {
        "gpu001": HostState.CONNECTING, "gpu002": HostState.CONNECTING, "gpu003": HostState.CONNECTING}
    settled = reader.host_statuses(settled=True)
    assert settled["gpu001"] == HostStatus("gpu001", HostState.HUNG, 100.0, "no first line within 11 s")
    assert settled["gpu002"].state is HostState.OK and settled["gpu003"].state is HostState.CONNECTING
    assert reader.host_statuses(as_of=200.0, settled=True)["gpu001"].state is HostState.HUNG


def test_baselines_and_time_span(fresh_db: Path) -> None:
    reader = StoreReader(fresh_db)
    assert reader.time_span() is None
    with StoreWriter(fresh_db) as writer:
        writer.put_baseline("monthly", 10.0, {"busbw_gbytes_s": 180.5})
        writer.put_baseline("monthly", 20.0, {"busbw_gbytes_s": 170.0})
    assert reader.baselines("monthly") == [(10.0, "monthly", {"busbw_gbytes_s": 180.5}),
                                          (20.0, "monthly", {"busbw_gbytes_s": 170.0})]
