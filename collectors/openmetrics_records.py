"""The store's records as OpenMetrics families: host states, the inventory, cabling, Slurm jobs.

Everything the console needs besides sample values, so that it can draw every
screen from a Prometheus that scraped the shards (``fleet.store.prometheus``
reads these back): which hosts exist and in which role, each port and who its
cable reaches, each host's collection state with its reason and since when,
the running jobs and their nodes, and each job's RDMA latency from the
per-job probes.

Jobs are families of their own rather than labels on every series: Prometheus
gives every scraped series a ``job`` label of its own (the scrape job), a job
starting or ending would otherwise make every series of its nodes a new one,
and only the shard that collects the Slurm head knows the jobs. Dashboards
join on ``node`` (``... * on(node) group_left(slurm_job, tenant)
fleet_slurm_job_node_info``; deploy/grafana/fleet.json).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from fleet.collectors.openmetrics_text import header, label_name, sample_line
from fleet.fabric.records import HostRecord, JobRecord, PortRecord
from fleet.store.reader import StoreReader

JOB_LATENCY_WINDOW_S = 120.0
"""Per-job latency is summarised over the probes of the last two minutes: two rounds of the job
sampler (one a minute, ``JobSamplerSettings.interval_s``), so a scrape always finds a full round."""

INFO_PREFIX = "info_"
"""Host facts (kernel, firmware per device, GPU model and driver) become labels with this prefix,
so that no fact can take the name of a label that says something else (``node``, ``role``)."""


@dataclass(frozen=True, slots=True)
class RecordFamily:
    """One family served from records, not samples: its name in each format, type and labels."""

    family: str
    kind: str  # "gauge" | "info"
    labels: tuple[str, ...]
    help: str

    @property
    def sample_name(self) -> str:
        return self.family + "_info" if self.kind == "info" else self.family


HOST_UP = RecordFamily("fleet_host_up", "gauge", ("node", "state"),
                       "1 when the host's last collection succeeded (ok or slow); state: its collection state")
HOST_STATE_TIME = RecordFamily(
    "fleet_host_state_time_seconds", "gauge", ("node", "state", "reason"),
    "unix time the host entered its collection state; reason: why, in words (empty when ok)")
HOST = RecordFamily(
    "fleet_host", "info", ("node", "role", "address", "os", "group", f"{INFO_PREFIX}*"),
    "a host of the inventory: role node, leaf, spine or head; group: the node's leaf group (-1 unknown); "
    f"{INFO_PREFIX}<fact>: what the host reports (kernel, firmware per device, GPU model and driver)")
PORT = RecordFamily(
    "fleet_port", "info", ("node", "device", "port", "netdev", "link_layer", "peer_node", "peer_port"),
    "an RDMA NIC port (device, port) or a switch port (device; port empty), and the far end of its cable "
    "as LLDP or the fabric discovery reported it")
JOB_START = RecordFamily(
    "fleet_slurm_job_start_time_seconds", "gauge", ("slurm_job", "name", "user", "tenant", "state", "partition"),
    "unix time a running Slurm job started; tenant: its account")
JOB_NODE = RecordFamily("fleet_slurm_job_node", "info", ("node", "slurm_job", "tenant"),
                        "a node a running Slurm job runs on (one series per node and job)")
JOB_LATENCY_P50 = RecordFamily(
    "fleet_slurm_job_rdma_latency_p50_usec", "gauge", ("slurm_job", "tenant"),
    f"median of the typical one-way RDMA latency of the job's probes over the last {JOB_LATENCY_WINDOW_S:.0f} s, "
    "microseconds")
JOB_LATENCY_P99 = RecordFamily(
    "fleet_slurm_job_rdma_latency_p99_usec", "gauge", ("slurm_job", "tenant"),
    f"99th percentile of the p99 one-way RDMA latency of the job's probes over the last "
    f"{JOB_LATENCY_WINDOW_S:.0f} s, microseconds")

RECORD_FAMILIES: tuple[RecordFamily, ...] = (
    HOST_UP, HOST_STATE_TIME, HOST, PORT, JOB_START, JOB_NODE, JOB_LATENCY_P50, JOB_LATENCY_P99)
"""Served in this order, before the sample families."""


def host_labels(host: HostRecord) -> dict[str, str]:
    labels = {INFO_PREFIX + label_name(key): value for key, value in host.info.items()}
    return labels | {"node": host.name, "role": host.role, "address": host.address, "os": host.os,
                     "group": str(host.group)}


def port_labels(port: PortRecord) -> dict[str, str]:
    return {"node": port.host, "device": port.device, "port": port.port, "netdev": port.netdev,
            "link_layer": port.link_layer, "peer_node": port.peer_host, "peer_port": port.peer_port}


def job_labels(job: JobRecord) -> dict[str, str]:
    return {"slurm_job": job.job_id, "name": job.name, "user": job.user, "tenant": job.account,
            "state": job.state, "partition": job.partition}


def render_records(reader: StoreReader, now: float, openmetrics: bool) -> list[str]:
    """The record families' text, in ``RECORD_FAMILIES`` order; ``now``: unix seconds."""
    out: list[str] = []

    def family(entry: RecordFamily, samples: list[tuple[dict[str, str], float]]) -> None:
        out.append(header(entry.family, entry.kind, entry.help, openmetrics))
        out.extend(sample_line(entry.sample_name, labels, value, openmetrics) for labels, value in samples)

    statuses = sorted(reader.host_statuses().items())
    family(HOST_UP, [({"node": host, "state": s.state.value}, 0.0 if s.state.is_failure else 1.0)
                     for host, s in statuses])
    family(HOST_STATE_TIME, [({"node": host, "state": s.state.value, "reason": s.reason}, s.since)
                             for host, s in statuses])
    family(HOST, [(host_labels(host), 1.0) for host in reader.hosts()])
    family(PORT, [(port_labels(port), 1.0) for port in reader.ports()])
    jobs = reader.jobs()
    family(JOB_START, [(job_labels(job), job.start_ts) for job in jobs])
    family(JOB_NODE, [({"node": node, "slurm_job": job.job_id, "tenant": job.account}, 1.0)
                      for job in jobs for node in sorted(set(job.nodes))])
    latency = [(job, _job_latency(reader, job, now)) for job in jobs]
    measured = [({"slurm_job": job.job_id, "tenant": job.account}, found) for job, found in latency
                if found is not None]
    family(JOB_LATENCY_P50, [(labels, found.p50_usec) for labels, found in measured])
    family(JOB_LATENCY_P99, [(labels, found.p99_usec) for labels, found in measured])
    return out


class JobLatency(NamedTuple):
    p50_usec: float
    p99_usec: float


def _job_latency(reader: StoreReader, job: JobRecord, now: float) -> JobLatency | None:
    """The job's latency over the window (``StoreReader.job_latency``'s statistics), None without probes."""
    # one bucket twice the window wide holds every probe of the window (buckets start at ``start``)
    buckets = reader.job_latency(job.job_id, now - JOB_LATENCY_WINDOW_S, now, bucket_s=2 * JOB_LATENCY_WINDOW_S)
    if not buckets:
        return None
    _start, p50, p99 = buckets[-1]
    return JobLatency(p50, p99)
