"""The standard suite behind ``fleet baseline take`` and ``fleet accept``: measure every part once.

Steps, each reported through ``on_progress``:

1. ``snapshot``: one collector round (:meth:`fleet.collectors.engine.Collector.run_once`)
   into the history: counters, optics, and each node's kernel, firmware and
   GPU driver (read back from the store for the baseline's software table);
2. ``counters``: the RDMA ports' packet and error counters, read again at the
   end (step 6), so link loss is the errors and drops *during the suite* over
   the packets moved during it;
3. ``linktest``: local NIC checks (state, rate, optics, LLDP vs the cabling
   plan) and RDMA latency over node pairs on every rail;
4. ``bandwidth``: one perftest bandwidth probe per NIC, node i against node
   i + n/2 on the same rail (so the flows cross the spines), a NIC never in
   two probes at once;
5. ``allreduce``: ``all_reduce_perf`` on every node (NVLink), then across every
   reachable node;
6. ``alltoall``: ``alltoall_perf`` on every node (NVLink), then across every
   reachable node with the part that holds it back named
   (:mod:`fleet.collectors.probes.alltoall`);
7. ``ep``: the UCCL-EP / DeepEP benchmark across every reachable node, where
   the nodes have it (a note in the baseline where they do not);
8. ``counters`` again;
9. ``configuration``: ``fleet check`` of the nodes and their switches (RoCE, PCIe,
   driver and switch QoS settings against the profile), stored as a
   ``config_check`` event too; then the :class:`fleet.fabric.baseline.Baseline` is built.

Every probe is also a ``ProbeRecord`` sharing the run id, handed to
``on_record`` for the store. Failures of a node or a probe are results in the
baseline (missing numbers, ``unreachable``, ``notes``), never exceptions.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import re
import statistics
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from fleet.collectors.commands import Command, Glob, command
from fleet.collectors.config_read import ReadSettings, read_fleet
from fleet.collectors.engine import Collector
from fleet.collectors.inventory import Inventory
from fleet.collectors.node_poller import CollectSettings
from fleet.collectors.parsers.sysfs import parse_sysfs
from fleet.collectors.probe_sessions import ProbeSessions
from fleet.collectors.probes.allreduce import AllreduceSpec, run_allreduce
from fleet.collectors.probes.alltoall import AlltoallSpec, run_alltoall
from fleet.collectors.probes.ep_bench import (
    DEFAULT_SCRIPT,
    KERNELS,
    EpBenchSpec,
    EpOutcome,
    run_ep_bench,
)
from fleet.collectors.probes.linktest import LinktestReport, LinktestSpec, run_linktest
from fleet.collectors.probes.perftest_probe import GidCache, PerftestSpec, run_perftest
from fleet.collectors.probes.ports import PortAllocator
from fleet.collectors.sshpool import SshPool
from fleet.fabric.acceptance import parse_rails
from fleet.fabric.baseline import Baseline, CableCheck, FleetShape, part_id
from fleet.fabric.config_checks import checks_json, report_event, run_checks
from fleet.fabric.naming import RAILS_PER_NODE, nic_name
from fleet.fabric.records import ProbeRecord
from fleet.fabric.roce_config import configuration_summary
from fleet.fabric.roce_profile import DEFAULT_PROFILE, RoceProfile
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

PACKET_COUNTERS = ("port_xmit_packets", "port_rcv_packets")
LOSS_COUNTERS = (
    "symbol_error", "port_rcv_errors", "port_rcv_remote_physical_errors", "port_xmit_discards",
    "local_link_integrity_errors", "excessive_buffer_overrun_errors",
)  # fmt: skip
"""IBA PortCounters of errors and drops: part of a NIC's ``errors`` (any increase is a regression)."""
LOSS_HW_COUNTERS = ("packet_seq_err", "local_ack_timeout_err", "implied_nak_seq_err")
"""mlx5 hw_counters that count one lost packet each: RoCE retransmits go-back-N, so every packet this NIC
sent that was lost comes back as one NAK sequence error (or, with nothing behind it, one ACK timeout).
They are a NIC's ``lost``: each lost packet counted once, at its sender, wherever on the path it was lost.
``out_of_sequence`` is not among them: the receiver counts every packet of the window that arrived behind
a gap, many per loss; nor ``out_of_buffer``: a receive queue running dry draws an RNR NAK, not a loss."""
NETDEV_LOSS_STATISTICS = ("rx_crc_errors",)
"""The RoCE netdev's ``statistics/`` files that count frames lost on the wire: ``rx_crc_errors`` (the
PHY's ``rx_crc_errors_phy``, frames dropped for a bad FCS), part of a NIC's ``errors``. Drops for lack of
buffer (``rx_discards_phy``) exist only in ``ethtool -S``; the diagnosis judges them from the collector's
counters (``nic_rx_discards``)."""
_NETDEV_STAT = re.compile(r"^/sys/class/infiniband/([^/]+)/device/net/[^/]+/statistics/([a-z_]+):(\d+)$")

_PORTS = "/sys/class/infiniband/*/ports/*"

BW_PARALLEL_MAX = 64
"""Bandwidth probes in flight at once, whatever ``max_parallel`` says: each saturates two NICs and
crosses the spines, so hundreds at once measure the spines' capacity, not each NIC's."""

NO_LIGHT_DBM = -40.0
"""What a NIC receiving no light is stored as: CMIS's smallest non-zero reading (0.0001 mW), below any
receiver's sensitivity, so thresholds and diffs treat it as the worst optic (JSON has no -inf)."""


@dataclass(frozen=True, slots=True)
class SuiteSettings:
    """How the suite measures; the ``[suite]`` table of a criteria file sets the same names."""

    nodes: tuple[str, ...] | None = None
    """None: every node of the inventory."""
    rails: tuple[int, ...] = tuple(range(RAILS_PER_NODE))
    linktest_mode: str = "mesh"
    sample_rounds: int = 4
    lat_iterations: int | None = None
    """perftest ``-n`` of the link test; None: perftest's 1000."""
    bw_test: str = "ib_write_bw"
    bw_iterations: int | None = None
    allreduce_max_bytes: str = "1G"
    gpus_per_node: int = 8
    fleet_allreduce: bool = True
    alltoall_max_bytes: str = "1G"
    node_alltoall: bool = True
    """``alltoall_perf`` on each node (NVLink)."""
    fleet_alltoall: bool = True
    """``alltoall_perf`` across every reachable node, with the per-rail runs that name what holds it back."""
    ep_bench: bool = True
    """The expert-parallel benchmark across every reachable node, where the nodes have it."""
    ep_script: str = DEFAULT_SCRIPT
    max_parallel: int = 256
    probe_timeout_s: float = 60.0
    snapshot_timeout_s: float = 30.0
    """A node that does not answer the snapshot within this long is ``hung`` for it."""
    check_config: bool = True
    """Read the configuration and run ``fleet check`` (step 7)."""
    profile: RoceProfile = DEFAULT_PROFILE
    """The RoCE profile ``fleet check`` judges against."""

    @classmethod
    def from_table(cls, table: Mapping[str, Any], *, nodes: tuple[str, ...] | None = None) -> SuiteSettings:
        """From a criteria file's ``[suite]`` table (already type-checked by ``fleet.fabric.acceptance``)."""
        values: dict[str, Any] = {k: v for k, v in table.items() if k != "rails"}
        if "rails" in table:
            values["rails"] = parse_rails(str(table["rails"]))
        if "probe_timeout_s" in values:
            values["probe_timeout_s"] = float(values["probe_timeout_s"])
        return cls(nodes=nodes, **values)


@dataclass(frozen=True, slots=True)
class SuiteProgress:
    """``step`` (snapshot, counters, linktest, bandwidth, allreduce, done), its done/total, a line of words."""

    step: str
    done: int
    total: int
    detail: str = ""


ProgressCallback = Callable[[SuiteProgress], None]


@dataclass(frozen=True, slots=True)
class SuiteRun:
    baseline: Baseline
    linktest: LinktestReport | None
    run_id: str
    records: tuple[ProbeRecord, ...] = field(repr=False, default=())


def tool_version() -> str:
    try:
        return f"fleet {importlib.metadata.version('fleet')}"
    except importlib.metadata.PackageNotFoundError:
        return "fleet (not installed)"


async def run_suite(
    inventory: Inventory,
    settings: SuiteSettings,
    *,
    writer: StoreWriter,
    db_path: Path,
    label: str = "",
    on_progress: ProgressCallback | None = None,
    pool: SshPool | None = None,
    clock: Callable[[], float] = time.time,
) -> SuiteRun:
    """Run the whole suite (see the module doc); ``writer``/``db_path`` are the history it writes to."""
    progress = on_progress or (lambda _p: None)
    run_id = f"suite-{uuid.uuid4().hex[:12]}"
    ts = clock()
    label = label or time.strftime("%Y-%m-%d %H:%M", time.localtime(ts))
    known = {h.name for h in inventory.nodes}
    nodes = tuple(n for n in (settings.nodes or tuple(h.name for h in inventory.nodes)) if n in known)
    records: list[ProbeRecord] = []

    def keep(record: ProbeRecord) -> None:
        records.append(record)
        writer.put_probe(record)

    progress(SuiteProgress("snapshot", 0, 1, "one collector round: counters, optics, software versions"))
    software, snapshot_power, nvlink_errors = await _snapshot(inventory, settings, writer, db_path, nodes, ts)
    progress(SuiteProgress("snapshot", 1, 1, f"{len(software)} of {len(nodes)} nodes answered"))
    own_pool = pool is None
    pool = pool or SshPool(inventory.hosts, known_hosts=inventory.known_hosts)
    try:
        progress(SuiteProgress("counters", 0, 1, "packet and error counters before"))
        before = await _counters(pool, nodes, settings.snapshot_timeout_s)
        report = await _linktest(pool, inventory, settings, nodes, run_id, keep, progress)
        reachable = tuple(n for n in nodes if n not in report.unreachable and n in before)
        bandwidth = await _bandwidth(pool, settings, reachable, run_id, keep, progress)
        allreduce = await _allreduce(pool, settings, reachable, run_id, keep, progress)
        alltoall = await _alltoall(pool, inventory, settings, reachable, run_id, keep, progress)
        ep = await _ep(pool, settings, reachable, run_id, keep, progress)
        progress(SuiteProgress("counters", 0, 1, "packet and error counters after"))
        after = await _counters(pool, reachable, settings.snapshot_timeout_s)
        configuration, config_checks = await _configuration(pool, inventory, settings, nodes, writer, progress)
    finally:
        if own_pool:
            await pool.close()
    report_ts = clock()
    writer.put_probe(report.summary_record(report_ts))
    baseline = _build(
        label=label, ts=ts, inventory=inventory, settings=settings, nodes=nodes, software=software,
        snapshot_power=snapshot_power, nvlink_errors=nvlink_errors, report=report, bandwidth=bandwidth, allreduce=allreduce,
        alltoall=alltoall, ep=ep, before=before, after=after,
    )  # fmt: skip
    baseline = replace(baseline, configuration=configuration, config_checks=config_checks)
    progress(SuiteProgress("done", 1, 1, f"{len(baseline.parts)} parts measured"))
    return SuiteRun(baseline, report, run_id, tuple(records))


NVLINK_ERROR_METRICS = ("gpu_nvlink_crc_errors", "gpu_nvlink_replay_errors", "gpu_nvlink_recovery_errors")
"""NVML's NVLink error counters per GPU, summed over its links (docs/agent-schema.md)."""
async def _configuration(pool: SshPool, inventory: Inventory, settings: SuiteSettings, nodes: Sequence[str],
                         writer: StoreWriter, progress: ProgressCallback,
                         ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """``fleet check`` of ``nodes`` and the switches their cables reach (every switch without a plan)."""
    if not settings.check_config:
        return {}, {}
    cabled = {row.switch for row in inventory.cabling if row.node in nodes}
    switches = [h.name for h in inventory.switches if h.name in cabled or not inventory.cabling]
    progress(SuiteProgress("configuration", 0, 1, f"fleet check of {len(nodes)} nodes and {len(switches)} switches"))
    config = await read_fleet(pool, inventory, nodes, switches, ReadSettings(settings.snapshot_timeout_s * 2))
    report = run_checks(config, settings.profile, ts=time.time())
    summary = configuration_summary(config)
    writer.put_event(report_event(report, summary))
    failing = sum(1 for s in report.summaries() if s.failed)
    progress(SuiteProgress("configuration", 1, 1, f"{failing} checks fail" if failing else "every check passes"))
    return summary, checks_json(report)


async def _snapshot(
    inventory: Inventory, settings: SuiteSettings, writer: StoreWriter, db_path: Path, nodes: Sequence[str],
    since: float,
) -> tuple[dict[str, dict[str, str]], dict[tuple[str, str], float], dict[str, float]]:
    """One collector round into the history; each node's software, each NIC's weakest lane (dBm) and each
    node's NVLink error count (CRC, replay and recovery errors of all its GPUs, since the driver loaded)."""
    collect = CollectSettings(hung_after_s=settings.snapshot_timeout_s, slow_after_s=settings.snapshot_timeout_s)
    await Collector(inventory, writer, settings=collect).run_once()
    writer.flush(timeout=60)
    wanted = set(nodes)
    with StoreReader(db_path) as reader:
        software = {h.name: dict(h.info) for h in reader.hosts() if h.name in wanted and h.info}
        power: dict[tuple[str, str], float] = {}
        for point in reader.latest(hosts=list(nodes), metrics=["optics_rx_power_dbm"]):
            if point.ts >= since - 1.0:
                key = (point.host, point.device)
                power[key] = min(power.get(key, point.value), point.value)
        nvlink: dict[str, float] = {}
        for point in reader.latest(hosts=list(nodes), metrics=list(NVLINK_ERROR_METRICS)):
            if point.ts >= since - 1.0:
                nvlink[point.host] = nvlink.get(point.host, 0.0) + point.value
    return software, power, nvlink


def counters_command() -> Command:
    files = [Glob(f"{_PORTS}/counters/{name}") for name in (*PACKET_COUNTERS, *LOSS_COUNTERS)]
    files += [Glob(f"{_PORTS}/hw_counters/{name}") for name in LOSS_HW_COUNTERS]
    files += [Glob(f"/sys/class/infiniband/*/device/net/*/statistics/{name}") for name in NETDEV_LOSS_STATISTICS]
    return command("grep", "-H", ".", *files)


class NicCounts(NamedTuple):
    """A NIC's counters summed: packets moved, error and drop events (``errors``), packets lost (``lost``)."""

    packets: int
    errors: int
    lost: int


async def _counters(pool: SshPool, nodes: Sequence[str], timeout_s: float) -> dict[str, dict[str, NicCounts]]:
    """node -> NIC -> its counts, summed over the counters above; nodes that fail are left out."""

    async def one(node: str) -> tuple[str, dict[str, NicCounts] | None]:
        result = await pool.run(node, counters_command(), timeout_s)
        if result.exit_status is None or not result.stdout:
            return node, None
        nics: dict[str, NicCounts] = {}
        for port in parse_sysfs(result.stdout).ports:
            packets = sum(port.counters.get(name, 0) for name in PACKET_COUNTERS)
            errors = sum(port.counters.get(name, 0) for name in LOSS_COUNTERS)
            lost = sum(port.hw_counters.get(name, 0) for name in LOSS_HW_COUNTERS)
            nics[port.device] = NicCounts(packets, errors + lost, lost)
        for line in result.stdout.splitlines():
            match = _NETDEV_STAT.match(line.strip())
            if match is not None and match[1] in nics:
                counts = nics[match[1]]
                nics[match[1]] = counts._replace(errors=counts.errors + int(match[3]))
        return node, nics

    found = await asyncio.gather(*(one(n) for n in nodes))
    return {node: nics for node, nics in found if nics is not None}


async def _linktest(
    pool: SshPool, inventory: Inventory, settings: SuiteSettings, nodes: tuple[str, ...], run_id: str,
    keep: Callable[[ProbeRecord], None], progress: ProgressCallback,
) -> LinktestReport:
    spec = LinktestSpec(nodes, rails=settings.rails, mode=settings.linktest_mode,
                        sample_rounds=settings.sample_rounds, iterations=settings.lat_iterations,
                        max_parallel=settings.max_parallel, probe_timeout_s=settings.probe_timeout_s)

    def told(done: int, total: int, eta_s: float | None) -> None:
        eta = f", about {eta_s:.0f} s left" if eta_s is not None else ""
        progress(SuiteProgress("linktest", done, total, f"latency probes{eta}"))

    progress(SuiteProgress("linktest", 0, 0, "local NIC checks"))
    return await run_linktest(pool, spec, cabling=inventory.cabling, switches=inventory.switches, on_progress=told,
                              on_record=keep, run_id=run_id)


def bandwidth_pairs(nodes: Sequence[str]) -> list[tuple[str, str]]:
    """Node i against node i + n/2 (the far half of the fleet); an odd one out against the first node."""
    half = len(nodes) // 2
    pairs = [(nodes[i], nodes[i + half]) for i in range(half)]
    if len(nodes) % 2 and len(nodes) > 1:
        pairs.append((nodes[-1], nodes[0]))
    return pairs


def missed_rendezvous(record: ProbeRecord) -> bool:
    """A client that found no server: on a loaded node the server can start after the client gave up.

    Worth one more try; every other failure (no GID, a down port, a timeout) is the answer.
    """
    return not record.ok and record.result.get("stage") == "client" and "Couldn't connect" in str(
        record.result.get("error", ""))


async def _bandwidth(
    pool: SshPool, settings: SuiteSettings, nodes: tuple[str, ...], run_id: str,
    keep: Callable[[ProbeRecord], None], progress: ProgressCallback,
) -> list[ProbeRecord]:
    tests = [(a, b, rail) for a, b in bandwidth_pairs(nodes) for rail in settings.rails]
    ports, gids = PortAllocator(), GidCache()
    locks: dict[tuple[str, int], asyncio.Lock] = defaultdict(asyncio.Lock)
    slots = asyncio.Semaphore(max(1, min(settings.max_parallel, BW_PARALLEL_MAX)))
    done: list[ProbeRecord] = []
    progress(SuiteProgress("bandwidth", 0, len(tests), f"{settings.bw_test} per NIC"))

    sessions = ProbeSessions(pool)  # the perftest sides through each node's probe runner, as in the link test

    async def one(src: str, dst: str, rail: int) -> None:
        first, second = sorted([(src, rail), (dst, rail)])
        async with locks[first], locks[second], slots:
            spec = PerftestSpec(src, dst, test=settings.bw_test, src_nic=nic_name(rail),
                                iterations=settings.bw_iterations, timeout_s=settings.probe_timeout_s, run_id=run_id)
            record = await run_perftest(sessions, spec, ports=ports, gids=gids)
            if missed_rendezvous(record):
                keep(record)  # stored as it happened; the retry is its own record
                record = await run_perftest(sessions, spec, ports=ports, gids=gids)
        keep(record)
        done.append(record)
        progress(SuiteProgress("bandwidth", len(done), len(tests), f"{src} {nic_name(rail)} -> {dst}"))

    try:
        await asyncio.gather(*(one(*t) for t in tests))
    finally:
        await sessions.close()
    return done


async def _allreduce(
    pool: SshPool, settings: SuiteSettings, nodes: tuple[str, ...], run_id: str,
    keep: Callable[[ProbeRecord], None], progress: ProgressCallback,
) -> dict[str, ProbeRecord]:
    """node -> its single-node record, and ``"fleet"`` -> the one across every node."""
    fleet = settings.fleet_allreduce and len(nodes) > 1
    total = len(nodes) + (1 if fleet else 0)
    slots = asyncio.Semaphore(max(1, min(settings.max_parallel, 64)))
    found: dict[str, ProbeRecord] = {}
    progress(SuiteProgress("allreduce", 0, total, "all_reduce_perf on every node"))

    async def one(key: str, members: tuple[str, ...]) -> None:
        async with slots:
            spec = AllreduceSpec(members, gpus_per_node=settings.gpus_per_node, max_bytes=settings.allreduce_max_bytes,
                                 timeout_s=max(settings.probe_timeout_s, 60.0), run_id=run_id)
            record = await run_allreduce(pool, spec)
        keep(record)
        found[key] = record
        progress(SuiteProgress("allreduce", len(found), total, key))

    await asyncio.gather(*(one(n, (n,)) for n in nodes))
    if fleet:
        await one("fleet", nodes)
    return found


async def _alltoall(
    pool: SshPool, inventory: Inventory, settings: SuiteSettings, nodes: tuple[str, ...], run_id: str,
    keep: Callable[[ProbeRecord], None], progress: ProgressCallback,
) -> dict[str, ProbeRecord]:
    """node -> its single-node all-to-all, and ``"fleet"`` -> the one across every node (rails and bottleneck)."""
    alone = nodes if settings.node_alltoall else ()
    fleet = settings.fleet_alltoall and len(nodes) > 1
    total = len(alone) + (1 if fleet else 0)
    found: dict[str, ProbeRecord] = {}
    if not total:
        return found
    slots = asyncio.Semaphore(max(1, min(settings.max_parallel, 64)))
    progress(SuiteProgress("alltoall", 0, total, "alltoall_perf on every node"))
    timeout_s = max(settings.probe_timeout_s, 60.0)

    async def one(key: str, members: tuple[str, ...]) -> None:
        spec = AlltoallSpec(members, gpus_per_node=settings.gpus_per_node, max_bytes=settings.alltoall_max_bytes,
                            timeout_s=timeout_s, run_id=run_id)

        def told(what: str, _done: int, _total: int) -> None:
            progress(SuiteProgress("alltoall", len(found), total, f"{key}: {what}"))

        async with slots:
            record = await run_alltoall(pool, spec, cabling=inventory.cabling, switches=inventory.switches,
                                        on_progress=told if key == "fleet" else None)
        keep(record)
        found[key] = record
        progress(SuiteProgress("alltoall", len(found), total, key))

    await asyncio.gather(*(one(n, (n,)) for n in alone))
    if fleet:
        await one("fleet", nodes)
    return found


async def _ep(
    pool: SshPool, settings: SuiteSettings, nodes: tuple[str, ...], run_id: str,
    keep: Callable[[ProbeRecord], None], progress: ProgressCallback,
) -> EpOutcome | None:
    """The expert-parallel benchmark across every node (None: not asked for, or fewer than two nodes)."""
    if not settings.ep_bench or len(nodes) < 2:
        return None
    progress(SuiteProgress("ep", 0, 1, "expert-parallel benchmark (UCCL-EP / DeepEP) where installed"))
    outcome = await run_ep_bench(pool, EpBenchSpec(nodes, gpus_per_node=settings.gpus_per_node,
                                                   script=settings.ep_script, run_id=run_id))
    progress(SuiteProgress("ep", 1, 1, outcome.missing or "done"))
    if outcome.record is not None:
        keep(outcome.record)
    return outcome


def _build(
    *, label: str, ts: float, inventory: Inventory, settings: SuiteSettings, nodes: tuple[str, ...],
    software: dict[str, dict[str, str]], snapshot_power: dict[tuple[str, str], float],
    nvlink_errors: Mapping[str, float], report: LinktestReport, bandwidth: Sequence[ProbeRecord],
    allreduce: Mapping[str, ProbeRecord], alltoall: Mapping[str, ProbeRecord], ep: EpOutcome | None,
    before: Mapping[str, Mapping[str, NicCounts]], after: Mapping[str, Mapping[str, NicCounts]],
) -> Baseline:
    parts: dict[str, dict[str, float]] = defaultdict(dict)
    notes: list[str] = []
    lat_by_nic: dict[tuple[str, int], list[float]] = defaultdict(list)
    for o in report.outcomes:
        if o.p99_usec is None:
            continue
        pair = parts[part_id("pair", o.rail, o.src, o.dst)]
        pair["p99_usec"] = max(pair.get("p99_usec", 0.0), o.p99_usec)
        if o.p999_usec is not None:
            pair["p999_usec"] = max(pair.get("p999_usec", 0.0), o.p999_usec)
        lat_by_nic[(o.src, o.rail)].append(o.p99_usec)
        lat_by_nic[(o.dst, o.rail)].append(o.p99_usec)
    for (node, rail), values in lat_by_nic.items():
        parts[part_id("nic", node, nic_name(rail))]["lat_p99_usec"] = statistics.median(values)
    for record in bandwidth:
        if not record.ok:
            notes.append(f"bandwidth {record.src} {record.src_nic} -> {record.dst}: {record.result.get('error', '')}")
            continue
        gbps = float(record.result["bw_avg_gbps"])
        for node in (record.src, record.dst):
            nic = parts[part_id("nic", node, record.src_nic)]
            nic["bw_avg_gbps"] = min(nic.get("bw_avg_gbps", gbps), gbps)
    for key, record in allreduce.items():
        part = part_id("fleet", "allreduce") if key == "fleet" else part_id("node", key)
        if not record.ok:
            notes.append(f"all-reduce {key}: {record.result.get('error', '')}")
        for name, metric in (("peak_busbw_gbytes_s", "allreduce_busbw_gbytes_s"), ("efficiency", "allreduce_efficiency"),
                             ("reference_busbw_gbytes_s", "allreduce_reference_gbytes_s")):
            value = record.result.get(name)
            if record.ok and value is not None:
                parts[part][metric] = float(value)
    for key, record in alltoall.items():
        part = part_id("fleet", "alltoall") if key == "fleet" else part_id("node", key)
        if not record.ok:
            notes.append(f"all-to-all {key}: {record.result.get('error', '')}")
            continue
        for name, metric in (("peak_busbw_gbytes_s", "alltoall_busbw_gbytes_s"), ("efficiency", "alltoall_efficiency"),
                             ("theoretical_busbw_gbytes_s", "alltoall_theoretical_gbytes_s")):
            value = record.result.get(name)
            if value is not None:
                parts[part][metric] = float(value)
        for rail in record.result.get("rails", []):
            if rail.get("busbw_gbytes_s") is not None:
                parts[part][f"alltoall_rail{rail['rail']}_busbw_gbytes_s"] = float(rail["busbw_gbytes_s"])
        bottleneck = record.result.get("bottleneck") or {}
        if bottleneck.get("kind") in ("leaf", "nic", "rail"):
            notes.append(f"all-to-all {key} held back by {bottleneck['kind']} {bottleneck['part']}: "
                         f"{bottleneck.get('words', '')}")
    if ep is not None and ep.record is None:
        notes.append(f"expert-parallel benchmark skipped: {ep.missing}")
    elif ep is not None and ep.record is not None and not ep.record.ok:
        notes.append(f"expert-parallel benchmark: {ep.record.result.get('error', '')}")
    elif ep is not None and ep.record is not None:
        for _op, _dtype, name in KERNELS:
            for link in ("rdma", "nvl"):
                value = ep.record.result.get(f"{name}_{link}_gbytes_s")
                if value is not None:
                    parts[part_id("fleet", "ep")][f"ep_{name}_{link}_gbytes_s"] = float(value)
    for node, count in nvlink_errors.items():
        parts[part_id("node", node)]["nvlink_errors"] = float(count)
    cabling: dict[str, CableCheck] = {}
    nics: set[str] = set()
    for check in report.nic_checks:
        nics.add(f"{check.node}:{check.nic}")
        nic = parts[part_id("nic", check.node, check.nic)]
        if check.rate_gbps is not None:
            nic["rate_gbps"] = check.rate_gbps
        if check.rx_power_dbm is not None:
            nic["rx_power_dbm"] = max(check.rx_power_dbm, NO_LIGHT_DBM)
        planned = f"{check.planned_switch} {check.planned_port}".strip()
        cabling[f"{check.node}:{check.nic}"] = CableCheck(f"{check.lldp_switch} {check.lldp_port}".strip(), planned)
    for (node, device), dbm in snapshot_power.items():
        parts[part_id("nic", node, device)].setdefault("rx_power_dbm", max(dbm, NO_LIGHT_DBM))
        nics.add(f"{node}:{device}")
    for node, devices in after.items():
        for device, now in devices.items():
            old = before.get(node, {}).get(device)
            if old is not None and all(b >= a for a, b in zip(old, now, strict=True)):  # no reset in between
                nic = parts[part_id("nic", node, device)]
                nic["packets"] = float(now.packets - old.packets)
                nic["errors"] = float(now.errors - old.errors)
                nic["lost"] = float(now.lost - old.lost)
                nics.add(f"{node}:{device}")
    rails = set(settings.rails)
    wanted_nics = sorted(n for n in nics if int(n.rsplit("_", 1)[1]) in rails) if nics else []
    shape = FleetShape(nodes, tuple(wanted_nics), tuple(h.name for h in inventory.switches), settings.rails)
    return Baseline(
        label=label, ts=ts, tool_version=tool_version(), shape=shape, software=software,
        parts={p: m for p, m in parts.items() if m}, cabling=cabling, unreachable=dict(report.unreachable),
        matrices=tuple(report.matrix(rail) for rail in settings.rails), notes=tuple(notes),
    )  # fmt: skip


__all__ = [
    "BW_PARALLEL_MAX", "LOSS_COUNTERS", "LOSS_HW_COUNTERS", "NETDEV_LOSS_STATISTICS", "NO_LIGHT_DBM",
    "PACKET_COUNTERS", "NicCounts", "ProgressCallback",
    "SuiteProgress", "SuiteRun",
    "SuiteSettings", "bandwidth_pairs", "counters_command", "missed_rendezvous", "run_suite", "tool_version",
]  # fmt: skip
