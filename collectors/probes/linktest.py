"""The link test: local NIC checks, then RDMA latency over node pairs on every rail, then localization.

Why: "is this rented cluster wired and healthy?" in minutes, not the half
hour of in-house scripts. Pairs come from :func:`fleet.fabric.pairing.schedule`
(rounds of disjoint pairs, a full mesh of n nodes in n-1 rounds). Rounds are
pipelined rather than fenced: a pair of round r+1 measures as soon as both of
its NICs are done with round r, so one slow pair delays only the NICs it
shares, never the whole round; a NIC is still never in two measurements at
once. Its perftest server is started while those NICs are still in their
round-r probes (``SERVER_START_AFTER_S``): a waiting server only listens on
TCP, and its start does not lie between one round and the next. At most
``max_parallel`` probes are in flight (a waiting server counts). The
modules' optics are read while the probes measure, spread over the run (``_read_optics``).

Every probe between RoCE NICs carries a GRH flow label, varied per pair, rail
and flow, so its UDP source port, and with it the spine each leaf hashes it to,
is known; after the probes the leaves are asked which spine that is
(:mod:`fleet.collectors.probes.paths`), and a spine whose probes are all bad is
named. A node that stops answering (a probe timed out and the node does not
answer a short check after it) is dropped from the remaining rounds at once,
named once among the unreachable, and its probes left out of the judgement.

Output (:class:`LinktestReport`): the local checks, a p99 matrix per rail
(microseconds; None where a probe failed), the bad pairs (failed, or an
outlier against the reference p99 or p99.9 of its rail and path class, same
leaf or through a spine: :func:`fleet.fabric.localize.is_outlier`; a lost
packet costs a retransmission that shows in the 99.9th percentile first), and
the suspects: those of :func:`fleet.fabric.localize.localize`, then each NIC the
local checks found wrong and the probes did not already name (``source``
"local checks"). The CLI, the console and the acceptance suite all run this one
function and count the same suspects. Each probe is also a ``ProbeRecord``
(kind "lat", shared ``run_id``) for the store, and the report one of kind
"linktest".
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
import uuid
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from fleet.collectors.commands import command
from fleet.collectors.inventory import CablingRow, InventoryHost
from fleet.collectors.probe_sessions import Launcher, ProbeSessions
from fleet.collectors.probes.nic_checks import (
    NicCheck,
    NodeChecks,
    check_after,
    check_before,
    expected_rate,
    judge,
    read_optics,
)
from fleet.collectors.probes.paths import Crossed, Hop, spines_crossed
from fleet.collectors.probes.perftest_probe import GidCache, PerftestSpec, run_perftest
from fleet.collectors.probes.ports import PortAllocator
from fleet.collectors.sshpool import SshPool
from fleet.fabric.localize import (
    THROUGH_SPINE,
    Probe,
    Suspect,
    is_outlier,
    localize,
    path_class,
    references,
)
from fleet.fabric.naming import RAILS_PER_NODE, nic_name
from fleet.fabric.pairing import PairTest, schedule
from fleet.fabric.records import ProbeRecord
from fleet.fabric.roce import flow_label_sport

OPTICS_READ_EVERY_S = 0.1
"""While the probes run, one node's optics are read at a time, this far apart (see ``_read_optics``)."""
OPTICS_READS_IN_FLIGHT = 2
"""Nodes whose optics are read at once when the probes ended before all were read."""

SERVER_START_AFTER_S = 0.1
"""How long after its NICs' previous probes started measuring a probe starts its server.

The server may wait for its client while those probes end (see
``fleet.collectors.probes.perftest_probe``), so its start need not lie between one
probe and the next. It is not started at once either: the probes of a round
start together, and the servers' starts would queue with their clients' on
the fleet's CPUs (and, simulated, on the simulator's one). A perftest run lasts
at least its report's calibration, 0.219 s (``fleet.simulator.perftest.CPU_MHZ_CALIBRATION_S``),
so 0.1 s later the round's clients have started and its ends are still to come;
a previous probe that ends sooner lets the server start at once.
"""

ALIVE_CHECK_S = 5.0
"""How long a node may take to answer ``true`` after a probe of it timed out before it counts as gone."""

ProgressCallback = Callable[[int, int, float | None], None]
"""Told (done, total, eta_s) after each probe; eta None until the first probe ends."""


@dataclass(frozen=True, slots=True)
class LinktestSpec:
    nodes: tuple[str, ...]
    rails: tuple[int, ...] = tuple(range(RAILS_PER_NODE))
    mode: str = "mesh"
    sample_rounds: int = 4
    seed: int = 0
    test: str = "ib_write_lat"
    iterations: int | None = None
    """perftest ``-n``; None: its default (1000)."""
    flows: int = 1
    """Probes per pair, each with its own flow label, so one pair's flows cross several spines. Between
    RoCE NICs even one probe carries a flow label (varied per pair), so its spine can be asked."""
    max_parallel: int = 512
    probe_timeout_s: float = 30.0
    check_timeout_s: float = 20.0
    local_checks: bool = True


@dataclass(frozen=True, slots=True)
class PairOutcome:
    src: str
    dst: str
    rail: int
    flow_label: int | None
    ok: bool
    p99_usec: float | None
    p999_usec: float | None
    typical_usec: float | None
    error: str = ""
    path: str = ""
    """``leaf`` (both NICs under one leaf), ``spine`` (through a spine) or "" (leaves unknown)."""
    spines: tuple[str, ...] = ()
    """The spines the probe crossed, each way that its leaf could be asked (``paths``)."""


@dataclass(frozen=True, slots=True)
class LinktestReport:
    run_id: str
    spec: LinktestSpec
    seconds: float
    rounds: int
    unreachable: dict[str, str]
    nic_checks: tuple[NicCheck, ...]
    outcomes: tuple[PairOutcome, ...]
    references_usec: dict[tuple[int, str], float]
    """Each (rail, path class)'s reference p99 (fabric.localize.REFERENCE_QUANTILE), usec."""
    bad: tuple[PairOutcome, ...]
    suspects: tuple[Suspect, ...]
    """Localized from the probes first, then named by the local checks alone; every list shows them all."""
    records: tuple[ProbeRecord, ...] = field(repr=False, default=())
    probes_seconds: float = 0.0
    """The probe phase alone (after the local checks before, until the last probe ended), s."""
    leaf_of: dict[tuple[str, int], str] = field(default_factory=dict)
    """(node, rail) -> the leaf its NIC reaches (LLDP, else the cabling plan)."""
    path_notes: tuple[str, ...] = ()
    """Why the spine of some probes is unknown (a leaf that could not be asked), in words."""

    def matrix(self, rail: int) -> dict[str, Any]:
        """Rail ``rail``'s p99 matrix: rows are clients, columns servers, usec (None: failed/not run), with
        each node's leaf and the reference of each path class (``fleet.fabric.localize.cell_reference``)."""
        nodes = [n for n in self.spec.nodes if n not in self.unreachable]
        index = {n: i for i, n in enumerate(nodes)}
        cells: list[list[float | None]] = [[None] * len(nodes) for _ in nodes]
        for o in self.outcomes:
            if o.rail == rail and o.p99_usec is not None:
                i, j = index[o.src], index[o.dst]
                for a, b in ((i, j), (j, i)):  # one probe per pair: show it on both sides
                    cells[a][b] = max(cells[a][b] or 0.0, o.p99_usec)
        bad = sorted({(o.src, o.dst) for o in self.bad if o.rail == rail})
        refs = {cls: value for (r, cls), value in self.references_usec.items() if r == rail}
        return {"rail": rail, "nic": nic_name(rail), "nodes": nodes, "p99_usec": cells,
                "leaves": [self.leaf_of.get((n, rail), "") for n in nodes],
                "reference_p99_usec": {cls or "unknown": round(value, 3) for cls, value in sorted(refs.items())},
                "bad_pairs": [list(p) for p in bad]}

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "mode": self.spec.mode,
            "nodes": list(self.spec.nodes),
            "rails": list(self.spec.rails),
            "rounds": self.rounds,
            "probes": len(self.outcomes),
            "seconds": round(self.seconds, 3),
            "unreachable": self.unreachable,
            "nic_problems": [_check_json(c) for c in self.nic_checks if c.problems],
            "matrices": [self.matrix(rail) for rail in self.spec.rails],
            "bad_pairs": [asdict(o) for o in self.bad],
            "suspects": [asdict(s) for s in self.suspects],
            "path_notes": list(self.path_notes),
        }

    def summary_record(self, ts: float) -> ProbeRecord:
        """The whole run for the store (kind "linktest"); the pairs are their own "lat" records."""
        data = self.to_json()
        return ProbeRecord(ts=ts, kind="linktest", src=self.spec.nodes[0] if self.spec.nodes else "",
                           ok=not self.suspects and not self.bad and not self.unreachable,
                           params={"mode": self.spec.mode, "rails": list(self.spec.rails), "flows": self.spec.flows},
                           result=data, run_id=self.run_id)


def _check_json(check: NicCheck) -> dict[str, Any]:
    def finite(value: float | None) -> float | None:
        return value if value is not None and math.isfinite(value) else None

    return {"node": check.node, "nic": check.nic, "problems": list(check.problems), "cable": check.cable_suspect,
            "rate_gbps": check.rate_gbps, "rx_power_dbm": finite(check.rx_power_dbm),
            "rx_margin_db": finite(check.rx_margin_db), "lldp": f"{check.lldp_switch} {check.lldp_port}".strip(),
            "planned": f"{check.planned_switch} {check.planned_port}".strip()}


async def run_linktest(
    pool: SshPool,
    spec: LinktestSpec,
    *,
    cabling: Sequence[CablingRow] = (),
    on_progress: ProgressCallback | None = None,
    on_record: Callable[[ProbeRecord], None] | None = None,
    ports: PortAllocator | None = None,
    run_id: str = "",
    switches: Sequence[InventoryHost] = (),
) -> LinktestReport:
    """Run the whole link test; failures of single probes are results, not exceptions.

    The probes' commands go through the nodes' probe runners (``ProbeSessions``),
    each started once its node's checks before are done (while the other nodes'
    go on), and ended after the checks after, which read the counters through them.
    ``switches`` (the inventory's leaves and spines) are asked which spine each probe
    crossed; without them the spines stay unknown.
    """
    nodes = tuple(dict.fromkeys(spec.nodes))
    sessions = ProbeSessions(pool)
    if not spec.local_checks:
        sessions.prepare(nodes)
    try:
        return await _linktest(pool, sessions, spec, nodes, cabling, on_progress, on_record, ports,
                               run_id or f"linktest-{uuid.uuid4().hex[:12]}", switches)
    finally:
        await sessions.close()


async def _linktest(
    pool: SshPool,
    sessions: ProbeSessions,
    spec: LinktestSpec,
    nodes: tuple[str, ...],
    cabling: Sequence[CablingRow],
    on_progress: ProgressCallback | None,
    on_record: Callable[[ProbeRecord], None] | None,
    ports: PortAllocator | None,
    run_id: str,
    switches: Sequence[InventoryHost],
) -> LinktestReport:
    started = time.monotonic()
    checks: dict[str, NodeChecks] = {}
    if spec.local_checks:
        gathered = await asyncio.gather(*(_check_before(pool, sessions, n, spec.check_timeout_s) for n in nodes))
        checks = {c.node: c for c in gathered}
    unreachable = {n: c.reason for n, c in checks.items() if c.reason}
    reachable = [n for n in nodes if n not in unreachable]
    rounds = schedule(reachable, spec.rails, spec.mode, sample_rounds=spec.sample_rounds, seed=spec.seed)
    tests = [(t, label) for r in rounds for t in r for label in flow_labels(t, spec.flows, _roce(checks, t))]
    runner = _Runner(sessions, spec, run_id, ports or PortAllocator(), len(tests), on_progress, on_record)
    for node_checks in checks.values():
        for (device, ib_port), index in node_checks.gid_indices.items():
            runner.gids.known[(node_checks.node, device, ib_port)] = index
    probes_done = asyncio.Event()
    optics = asyncio.ensure_future(_read_optics(pool, [checks[n] for n in reachable if n in checks],
                                                spec.check_timeout_s, probes_done))
    try:
        outcomes = await runner.run(tests)
        probes_seconds = time.monotonic() - runner.started
        probes_done.set()
        await optics
    finally:
        optics.cancel()
    unreachable.update(runner.gone)
    alive = [n for n in reachable if n not in runner.gone]
    if spec.local_checks:  # through the runners, still there (named files: no shell needed)
        await asyncio.gather(*(check_after(sessions, checks[n], spec.check_timeout_s) for n in alive))
    await sessions.close()  # before the judgement: no runner is left behind on a node
    plan = {(row.node, row.nic): row for row in cabling}
    rate = expected_rate(checks.values())
    nic_checks = tuple(c for n in alive for c in judge(checks[n], plan, rate)) if checks else ()
    ends = _leaf_ports(checks, plan, alive, spec.rails)
    leaf_of = {nic: leaf for nic, (leaf, _port) in ends.items()}
    kept = [o for o in outcomes if o.src in alive and o.dst in alive]  # a node gone is named once, not as pairs
    crossed = await spines_crossed(pool, _hops(kept, ends, checks), switches, timeout_s=spec.check_timeout_s) \
        if switches else Crossed({})
    kept = [_with_path(o, ends, checks, crossed) for o in kept]
    refs = references((o.rail, o.path, o.p99_usec) for o in kept)
    tails = references((o.rail, o.path, o.p999_usec) for o in kept)
    bad = tuple(
        o for o in kept
        if not o.ok or is_outlier(o.p99_usec, refs.get((o.rail, o.path), 0.0))
        or (o.p999_usec is not None and is_outlier(o.p999_usec, tails.get((o.rail, o.path), 0.0)))
    )  # fmt: skip
    bad_keys = {(o.src, o.dst, o.rail, o.flow_label) for o in bad}
    flagged = [(c.node, int(c.nic.rsplit("_", 1)[1])) for c in nic_checks if c.cable_suspect and c.nic[-1].isdigit()]
    probes = [Probe(o.src, o.dst, o.rail, (o.src, o.dst, o.rail, o.flow_label) in bad_keys, o.spines,
                    o.path == THROUGH_SPINE and len(o.spines) < 2) for o in kept]
    suspects = localize(probes, leaf_of, cable_flagged=flagged)
    suspects += _checked_suspects(nic_checks, suspects, probes)
    notes = crossed.notes if any(o.path == THROUGH_SPINE for o in kept) else ()
    if not switches and any(o.path == THROUGH_SPINE for o in kept):
        notes = ("no switch of the inventory was given: the spine each probe crossed is unknown",)
    return LinktestReport(
        run_id=run_id, spec=spec, seconds=time.monotonic() - started, rounds=len(rounds), unreachable=unreachable,
        nic_checks=nic_checks, outcomes=tuple(kept), references_usec=refs, bad=bad, suspects=tuple(suspects),
        records=tuple(runner.records), probes_seconds=probes_seconds, leaf_of=leaf_of, path_notes=notes,
    )  # fmt: skip


def _roce(checks: Mapping[str, NodeChecks], test: PairTest) -> bool:
    """Whether both NICs of ``test`` are RoCE as the checks before saw them (a GID index to give perftest)."""
    key = (nic_name(test.rail), 1)
    return all(checks.get(node) is not None and checks[node].gid_indices.get(key) is not None
               for node in (test.src, test.dst))


def _hops(outcomes: Sequence[PairOutcome], ends: Mapping[tuple[str, int], tuple[str, str]],
          checks: Mapping[str, NodeChecks]) -> list[Hop]:
    """Both directions of every labelled probe between leaves, as the leaf that hashes each sees it."""
    hops: list[Hop] = []
    for o in outcomes:
        forward, backward = _directions(o, ends, checks)
        hops += [h for h in (forward, backward) if h is not None]
    return hops


def _directions(o: PairOutcome, ends: Mapping[tuple[str, int], tuple[str, str]],
                checks: Mapping[str, NodeChecks]) -> tuple[Hop | None, Hop | None]:
    """The probe's packets from src to dst and back, each a Hop of the leaf it enters; None where unknown."""
    a, b = ends.get((o.src, o.rail)), ends.get((o.dst, o.rail))
    if o.flow_label is None or a is None or b is None or a[0] == b[0]:
        return None, None
    device = nic_name(o.rail)
    src_ip = checks[o.src].addresses.get(device, "") if o.src in checks else ""
    dst_ip = checks[o.dst].addresses.get(device, "") if o.dst in checks else ""
    if not src_ip or not dst_ip or not a[1] or not b[1]:
        return None, None
    sport = flow_label_sport(o.flow_label)  # both sides set the label: both directions use this port
    return Hop(a[0], a[1], src_ip, dst_ip, sport), Hop(b[0], b[1], dst_ip, src_ip, sport)


def _with_path(o: PairOutcome, ends: Mapping[tuple[str, int], tuple[str, str]], checks: Mapping[str, NodeChecks],
               crossed: Crossed) -> PairOutcome:
    """The outcome with its path class and the spines it crossed, each way that is known."""
    a, b = ends.get((o.src, o.rail), ("", "")), ends.get((o.dst, o.rail), ("", ""))
    cls = path_class(a[0], b[0])
    spines = tuple(crossed.spines[h] for h in _directions(o, ends, checks) if h is not None and h in crossed.spines)
    return replace(o, path=cls, spines=spines)


def _checked_suspects(nic_checks: Sequence[NicCheck], named: Sequence[Suspect],
                      probes: Sequence[Probe]) -> list[Suspect]:
    """One suspect for each NIC the local checks found wrong that the probes did not already name."""
    covered = {(s.node, s.nic) for s in named if s.kind in ("nic", "cable")}
    counts: dict[tuple[str, str], list[bool]] = {}
    for p in probes:
        for node in (p.src, p.dst):
            counts.setdefault((node, nic_name(p.rail)), []).append(p.bad)
    found = []
    for check in nic_checks:
        if not check.problems or (check.node, check.nic) in covered:
            continue
        seen = counts.get((check.node, check.nic), [])
        found.append(Suspect("cable" if check.cable_suspect else "nic", f"{check.node}:{check.nic}", node=check.node,
                             nic=check.nic, bad=sum(seen), total=len(seen), reason="; ".join(check.problems),
                             source="local checks"))
    return found


async def _check_before(pool: SshPool, sessions: ProbeSessions, node: str, timeout_s: float) -> NodeChecks:
    """The node's checks before, then its runner started: after its own checks rather than with
    them, so that no node's checks wait for a runner, and none is started on a node found unreachable."""
    checks = await check_before(pool, node, timeout_s)
    if not checks.reason:
        sessions.prepare((node,))
    return checks


async def _read_optics(pool: SshPool, checks: Sequence[NodeChecks], timeout_s: float,
                       probes_done: asyncio.Event) -> None:
    """Read the nodes' optics while the probes run, spread thin; those left when they end, at once.

    Only the judgement at the end needs them, so the first probe does not wait for
    every module's ``ethtool -m`` (1,024 of them on 128 nodes of 8 NICs). Read a few
    nodes at a time from the start, they crowded the first rounds' probes on a
    small machine (~0.25 s of a 128-node link test, timed with and without); one
    node every ``OPTICS_READ_EVERY_S`` leaves the rounds alone.
    """
    pending = list(checks)
    while pending and not probes_done.is_set():
        await read_optics(pool, pending.pop(0), timeout_s)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(probes_done.wait(), OPTICS_READ_EVERY_S)
    gate = asyncio.Semaphore(OPTICS_READS_IN_FLIGHT)

    async def read(node_checks: NodeChecks) -> None:
        async with gate:
            await read_optics(pool, node_checks, timeout_s)

    await asyncio.gather(*(read(c) for c in pending))


def flow_labels(test: PairTest, flows: int, roce: bool) -> list[int | None]:
    """A pair's flow labels, one per probe: distinct non-zero 20-bit labels varied per pair and rail, so
    the probes spread over the spines and each one's UDP source port is known (``fleet.fabric.roce``); none
    (the QP numbers choose) for one probe whose NICs are not known to be RoCE."""
    if flows <= 1 and not roce:
        return [None]
    base = zlib.crc32(f"{test.src}|{test.dst}|{test.rail}".encode())
    return [((base + k * 0x9E37) % 0xFFFFF) + 1 for k in range(max(1, flows))]


def _leaf_ports(
    checks: dict[str, NodeChecks], plan: dict[tuple[str, str], CablingRow], nodes: Sequence[str], rails: Sequence[int]
) -> dict[tuple[str, int], tuple[str, str]]:
    """(node, rail) -> (the leaf its NIC reaches, the leaf's port): LLDP first (the real cable), else the plan."""
    found: dict[tuple[str, int], tuple[str, str]] = {}
    for node in nodes:
        node_checks = checks.get(node)
        for rail in rails:
            device = nic_name(rail)
            netdev = node_checks.netdevs.get(device, "") if node_checks else ""
            seen = node_checks.lldp.get(netdev, ("", "")) if node_checks else ("", "")
            planned = plan.get((node, device))
            if seen[0]:
                found[(node, rail)] = seen
            elif planned is not None and planned.switch:
                found[(node, rail)] = (planned.switch, planned.port)
    return found


@dataclass(eq=False)
class _Probe:
    """One scheduled probe as the next probes of its NICs see it."""

    src: str
    measuring: asyncio.Future[float]
    """Done (with the loop's time) once its client started, or once it ended without one."""
    client_ended: asyncio.Future[None]
    """Done once its client has exited (or it ended without one): the client's NIC is free."""
    ended: asyncio.Future[None]
    """Done once its server has ended too: both NICs are free (its output is read after)."""
    task: asyncio.Future[PairOutcome | None] = field(init=False)

    def free(self, node: str) -> asyncio.Future[None]:
        """When ``node``'s NIC in this probe is free."""
        return self.client_ended if node == self.src else self.ended


def _settle(*futures: asyncio.Future[None]) -> None:
    """Resolve those not yet done: a probe's signals are told once, by whichever way it ends."""
    for future in futures:
        if not future.done():
            future.set_result(None)


class _Runner:
    """Runs the probes pipelined per NIC, bounded in parallelism, reporting progress."""

    def __init__(
        self,
        launcher: Launcher,
        spec: LinktestSpec,
        run_id: str,
        ports: PortAllocator,
        total: int,
        on_progress: ProgressCallback | None,
        on_record: Callable[[ProbeRecord], None] | None,
    ) -> None:
        self.launcher = launcher
        self.spec = spec
        self.run_id = run_id
        self.ports = ports
        self.gids = GidCache()
        self.total = total
        self.done = 0
        self.started = time.monotonic()
        self.on_progress = on_progress
        self.on_record = on_record
        self.records: list[ProbeRecord] = []
        self.slots = asyncio.Semaphore(max(1, spec.max_parallel))
        self.gone: dict[str, str] = {}
        """Nodes that stopped answering during the probes, with why: their later probes are not run."""
        self._alive_checks: dict[str, asyncio.Future[bool]] = {}

    async def run(self, tests: Sequence[tuple[PairTest, int | None]]) -> list[PairOutcome]:
        last: dict[tuple[str, int], _Probe] = {}
        probes: list[_Probe] = []
        loop = asyncio.get_running_loop()
        for test, label in tests:
            ends = ((test.src, test.rail), (test.dst, test.rail))
            before = [(last[e], e[0]) for e in ends if e in last]
            probe = _Probe(test.src, loop.create_future(), loop.create_future(), loop.create_future())
            probe.task = asyncio.ensure_future(self._one(test, label, before, probe))
            for end in ends:
                last[end] = probe
            probes.append(probe)
        tasks = [p.task for p in probes]
        try:
            return [o for o in await asyncio.gather(*tasks) if o is not None]
        finally:
            for task in tasks:
                task.cancel()

    async def _answers(self, node: str) -> bool:
        """Whether ``node`` still answers: ``true`` through its runner within ALIVE_CHECK_S, asked once per
        node at a time (a hung node's probes all time out together)."""
        check = self._alive_checks.get(node)
        if check is None or check.done():
            async def ask() -> bool:
                result = await self.launcher.run(node, command("true"), ALIVE_CHECK_S)
                return result.exit_status is not None

            check = self._alive_checks[node] = asyncio.ensure_future(ask())
        return await asyncio.shield(check)

    async def _judge_failure(self, test: PairTest, record: ProbeRecord) -> None:
        """After a probe that timed out or could not reach a node: drop each node that no longer answers."""
        result = record.result
        host = str(result.get("failed_host", ""))
        reached = not host or not str(result.get("error", "")).startswith(
            tuple(f"{host}: {state}" for state in ("unreachable", "hung", "auth_failed", "host_key_mismatch")))
        if result.get("stage") != "timeout" and reached:
            return
        for node in (test.src, test.dst):
            if node not in self.gone and not await self._answers(node):
                self.gone[node] = (f"stopped answering during the probes (after {result.get('error', 'a failure')}; "
                                   f"no answer to `true` within {ALIVE_CHECK_S:g} s): its remaining probes were not run")

    def _count(self) -> None:
        self.done += 1
        if self.on_progress is not None:
            elapsed = time.monotonic() - self.started
            self.on_progress(self.done, self.total, elapsed / self.done * (self.total - self.done))

    async def _one(
        self, test: PairTest, label: int | None, before: Sequence[tuple[_Probe, str]], probe: _Probe
    ) -> PairOutcome | None:
        """One pair: its server starts while its NICs' previous probes measure, its client once they ended.

        ``before``: the previous probe of each of its NICs, with the node of that NIC. None: not run,
        a node of the pair stopped answering earlier.
        """
        loop = asyncio.get_running_loop()
        free = [previous.free(node) for previous, node in before]

        def stage(name: str) -> None:
            if name == "client" and not probe.measuring.done():
                probe.measuring.set_result(loop.time())
            elif name == "done":
                _settle(probe.client_ended, probe.ended)

        try:
            if before:
                await asyncio.wait([previous.measuring for previous, _ in before])
                lead = max(previous.measuring.result() for previous, _ in before) + SERVER_START_AFTER_S - loop.time()
                if lead > 0:
                    await asyncio.wait(free, timeout=lead)
            if test.src in self.gone or test.dst in self.gone:
                self._count()
                return None
            async with self.slots:
                spec = PerftestSpec(
                    test.src, test.dst, test=self.spec.test, src_nic=nic_name(test.rail),
                    iterations=self.spec.iterations, flow_label=label, timeout_s=self.spec.probe_timeout_s,
                    run_id=self.run_id,
                )  # fmt: skip
                record = await run_perftest(self.launcher, spec, ports=self.ports, gids=self.gids, on_stage=stage,
                                            after=free, on_client_ended=lambda: _settle(probe.client_ended))
            if not record.ok:  # before the NICs' next probes are let go: they skip a node found gone
                await self._judge_failure(test, record)
        finally:
            if not probe.measuring.done():
                probe.measuring.set_result(loop.time())
            _settle(probe.client_ended, probe.ended)
        self.records.append(record)
        if self.on_record is not None:
            self.on_record(record)
        self._count()
        result = record.result
        return PairOutcome(
            test.src, test.dst, test.rail, label, record.ok,
            result.get("p99_usec") if record.ok else None, result.get("p999_usec") if record.ok else None,
            result.get("t_typical_usec") if record.ok else None,
            "" if record.ok else str(result.get("error", "")),
        )  # fmt: skip


__all__ = ["LinktestReport", "LinktestSpec", "PairOutcome", "ProgressCallback", "flow_labels", "run_linktest"]
