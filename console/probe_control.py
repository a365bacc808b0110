"""The console's active probes and background judges, run as the app's workers.

One object per app (``app.probes``) owns what they share: the SSH pool (the
in-console collector's when it runs, else one opened from the inventory on
first use), the store writer (the collector's, else one opened on first use),
the perftest port allocator and GID cache. It starts

- a latency or bandwidth probe between two nodes (``t``/``b``), judged against the NICs'
  trained rate and the pair's baseline or previous result (``collectors/probes/history.py``),
- a link test over a set of nodes and rails (``l``),
- an all-reduce on one node or across nodes (``a``),
- an all-to-all on one node or across nodes (``x``), with each step's progress,
- the per-job latency sampler (live, ``Config.job_latency_enabled``),
- the diagnosis every ``DIAGNOSIS_INTERVAL_S`` live, and on each replayed moment,

each as a worker that posts facts (``fleet.console.messages``); the app hands those
back to ``seen``, which keeps the latest state and publishes it on ``changed``
for the probe panels and the Probes screen. Nothing here draws. The probe
modules (asyncssh behind them) are imported on first use, off the console's
start-up path.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from textual.message import Message
from textual.signal import Signal

from fleet.console.diagnosis_watch import DIAGNOSIS_INTERVAL_S, DiagnosisWatch
from fleet.console.messages import DiagnosisRan, LinktestFinished, ProbeFinished, ProbeProgressed
from fleet.fabric.records import JobRecord
from fleet.store.writer import StoreWriter

if TYPE_CHECKING:
    from fleet.collectors.probes.linktest import LinktestReport
    from fleet.collectors.sshpool import SshPool
    from fleet.console.app import FleetApp

RUNNING_JOB_STATES = frozenset({"R", "RUNNING"})


class ProbeUnavailable(RuntimeError):
    """A probe cannot start: no inventory to reach the nodes, or a probe already runs."""


@dataclass(frozen=True, slots=True)
class ProbeState:
    """What the probe panels draw: the probe running now, or the last one's outcome."""

    label: str = ""
    """What runs or ran, e.g. ``lat gpu001 mlx5_0 -> gpu002 mlx5_0``."""
    running: bool = False
    text: str = ""
    """The stage (``server``, ``client``...) or a link test's ``done/total``."""
    done: int | None = None
    total: int | None = None
    eta_s: float | None = None
    result: ProbeFinished | None = None
    linktest: LinktestReport | None = None
    error: str = ""
    """Why the last probe could not start or failed outside perftest (the worker's exception)."""


class ProbeControl:
    """See the module doc; ``changed`` carries every new ``ProbeState``."""

    def __init__(self, app: FleetApp) -> None:
        self._app = app
        self.changed: Signal[ProbeState] = Signal(app, "probe-state")
        self.state = ProbeState()
        self.diagnosis_runs = 0
        """Diagnosis runs finished (tests wait on it)."""
        self._collector_pool: SshPool | None = None
        self._own_pool: SshPool | None = None
        self._own_writer: StoreWriter | None = None
        self._ports: Any = None
        self._gids: Any = None
        self._watch: DiagnosisWatch | None = None
        self._diagnosing = False
        self._diagnose_again = False
        self._sampler_stop = asyncio.Event()
        self._sampler_started = False

    # --- shared resources
    @property
    def can_probe(self) -> bool:
        """Probes need the inventory (addresses, users, host keys) to reach the nodes."""
        return self._app.inventory is not None

    def use_collector_pool(self, pool: SshPool) -> None:
        """Probe over the in-console collector's connections (one transport, one connection per host)."""
        self._collector_pool = pool

    def pool(self) -> SshPool:
        if self._collector_pool is not None:
            return self._collector_pool
        if self._own_pool is None:
            inventory = self._app.inventory
            if inventory is None:
                raise ProbeUnavailable("no inventory: start the console with --inventory to run probes")
            from fleet.collectors.sshpool import SshPool

            self._own_pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts)
        return self._own_pool

    def writer(self) -> StoreWriter:
        """The collector's writer when it runs (``app.writer``), else one of our own."""
        shared = getattr(self._app, "writer", None)
        if isinstance(shared, StoreWriter):
            return shared
        if self._own_writer is None:
            self._own_writer = StoreWriter(self._app.config.db_path).start()
        return self._own_writer

    def _probe_parts(self) -> tuple[Any, Any]:
        if self._ports is None:
            from fleet.collectors.probes.perftest_probe import GidCache
            from fleet.collectors.probes.ports import PortAllocator

            self._ports, self._gids = PortAllocator(), GidCache()
        return self._ports, self._gids

    async def close(self) -> None:
        self._sampler_stop.set()
        if self._own_pool is not None:
            await self._own_pool.close()
        if self._own_writer is not None:
            await asyncio.to_thread(self._own_writer.close, 5.0)

    # --- state
    def seen(self, message: Message) -> None:
        """Fold a worker's fact into ``state`` and publish it."""
        if isinstance(message, ProbeProgressed):
            self._publish(replace(self.state, label=message.label, running=True, text=message.text,
                                  done=message.done, total=message.total, eta_s=message.eta_s))
        elif isinstance(message, ProbeFinished):
            self._publish(ProbeState(label=self.state.label, result=message,
                                     error="" if message.record.ok else str(message.record.result.get("error", ""))))
        elif isinstance(message, LinktestFinished):
            self._publish(ProbeState(label=self.state.label, linktest=message.report,
                                     text=f"{len(message.report.outcomes)} probes in {message.report.seconds:.1f} s"))
        elif isinstance(message, DiagnosisRan):
            self.diagnosis_runs += 1

    def failed(self, reason: str) -> None:
        """A probe worker ended with an exception (the app's one worker-failure handler calls this)."""
        self._publish(ProbeState(label=self.state.label, error=reason))

    def _publish(self, state: ProbeState) -> None:
        self.state = state
        self.changed.publish(state)

    def _start(self, label: str) -> None:
        if self._app.config.read_only:
            from fleet.console.actions import READ_ONLY_RULE

            raise ProbeUnavailable(f"{label}: refused, {READ_ONLY_RULE}")
        if self.state.running:
            raise ProbeUnavailable(f"a probe runs already: {self.state.label}")
        self.pool()
        self._publish(ProbeState(label=label, running=True, text="starting"))

    # --- t / b
    def start_pair(self, kind: str, src: str, dst: str, nic: str = "mlx5_0") -> None:
        """Latency (``kind`` "lat", ib_send_lat) or bandwidth ("bw", ib_send_bw) from ``src`` to ``dst``."""
        from fleet.collectors.probes.perftest_probe import PerftestSpec

        test = "ib_send_lat" if kind == "lat" else "ib_send_bw"
        spec = PerftestSpec(src, dst, test=test, src_nic=nic)
        label = f"{kind} {src} {nic} -> {dst} {nic}"
        self._start(label)
        self._app.run_worker(self._pair(spec, label), name=label, group="probe", exit_on_error=False)

    async def _pair(self, spec: Any, label: str) -> None:
        from fleet.collectors.probes.perftest_probe import run_perftest

        ports, gids = self._probe_parts()
        app = self._app

        def staged(stage: str) -> None:
            app.post_message(ProbeProgressed(label, stage))

        record = await run_perftest(self.pool(), spec, ports=ports, gids=gids, on_stage=staged)
        await self._finished(record)

    async def _finished(self, record: Any) -> None:
        """Store a probe, compare it with its history, judge it and post it."""
        from fleet.collectors.probes.history import (
            baseline_value,
            link_rate_gbps,
            previous_probe,
            verdict_of,
        )

        app = self._app
        writer = self.writer()
        writer.put_probe(record)

        def compare(reader: Any) -> tuple[Any, Any]:
            return previous_probe(reader, record), baseline_value(reader, record)

        previous, baseline = await app.feed.read(compare)
        link = await link_rate_gbps(self.pool(), record) if record.ok and record.kind == "bw" else None
        await asyncio.to_thread(writer.flush, 10.0)
        app.post_message(ProbeFinished(record, previous, baseline, verdict_of(record, previous, baseline, link)))

    # --- a
    def start_allreduce(self, nodes: Sequence[str]) -> None:
        """``all_reduce_perf`` on ``nodes`` (one: NVLink; several: one ring over their NICs), stored and judged."""
        from fleet.collectors.probes.allreduce import AllreduceSpec

        spec = AllreduceSpec(tuple(nodes))
        label = f"all-reduce {nodes[0]}" if len(nodes) == 1 else f"all-reduce over {len(nodes)} nodes"
        self._start(label)
        self._app.run_worker(self._allreduce(spec, label), name=label, group="probe", exit_on_error=False)

    async def _allreduce(self, spec: Any, label: str) -> None:
        from fleet.collectors.probes.allreduce import run_allreduce

        self._app.post_message(ProbeProgressed(label, f"all_reduce_perf on {len(spec.nodes)} node(s)"))
        await self._finished(await run_allreduce(self.pool(), spec))

    # --- x
    def start_alltoall(self, nodes: Sequence[str]) -> None:
        """``alltoall_perf`` on ``nodes`` (several: then once per rail and the part holding it back named), stored
        and judged against the baseline or the previous run."""
        from fleet.collectors.probes.alltoall import AlltoallSpec

        spec = AlltoallSpec(tuple(nodes))
        label = f"all-to-all {nodes[0]}" if len(nodes) == 1 else f"all-to-all over {len(nodes)} nodes"
        self._start(label)
        self._app.run_worker(self._alltoall(spec, label), name=label, group="probe", exit_on_error=False)

    async def _alltoall(self, spec: Any, label: str) -> None:
        from fleet.collectors.probes.alltoall import run_alltoall

        app = self._app
        inventory = app.inventory

        def progressed(what: str, done: int, total: int) -> None:
            app.post_message(ProbeProgressed(label, what, done, total))

        record = await run_alltoall(self.pool(), spec, cabling=inventory.cabling if inventory is not None else (),
                                    switches=inventory.switches if inventory is not None else (),
                                    on_progress=progressed)
        await self._finished(record)

    # --- l
    def start_linktest(self, nodes: Sequence[str], rails: Sequence[int]) -> None:
        """A link test (full mesh) over ``nodes`` on ``rails``; its probes and summary go to the store."""
        if len(nodes) < 2:
            raise ProbeUnavailable("a link test needs at least two nodes")
        label = f"link test, {len(nodes)} nodes, rails {','.join(str(r) for r in rails)}"
        self._start(label)
        self._app.run_worker(self._linktest(tuple(nodes), tuple(rails), label), name=label, group="probe",
                             exit_on_error=False)

    async def _linktest(self, nodes: tuple[str, ...], rails: tuple[int, ...], label: str) -> None:
        from fleet.collectors.probes.linktest import LinktestSpec, run_linktest

        app = self._app
        writer = self.writer()
        ports, _gids = self._probe_parts()
        cabling = app.inventory.cabling if app.inventory is not None else ()

        def progressed(done: int, total: int, eta_s: float | None) -> None:
            app.post_message(ProbeProgressed(label, f"{done}/{total} probes", done, total, eta_s))

        switches = app.inventory.switches if app.inventory is not None else ()
        report = await run_linktest(self.pool(), LinktestSpec(nodes, rails=rails), cabling=cabling, switches=switches,
                                    on_progress=progressed, on_record=writer.put_probe, ports=ports)
        writer.put_probe(report.summary_record(time.time()))
        await asyncio.to_thread(writer.flush, 30.0)
        app.post_message(LinktestFinished(report))

    # --- per-job latency sampler
    def start_job_sampler(self, interval_s: float | None = None) -> None:
        """Probe a few pairs inside every running job each interval (live only; see Config.job_latency).

        The sampler starts with the first view that shows a running job: before it, it has nothing
        to probe and would wait a whole interval."""
        from fleet.collectors.probes.job_latency import JobSamplerSettings

        if self._app.config.read_only:  # its probes are traffic on the tenants' links
            return

        settings = JobSamplerSettings() if interval_s is None else JobSamplerSettings(interval_s=interval_s)
        self._app.watch(self._app, "view", lambda _view: self._sampler_due(settings), init=False)

    def _sampler_due(self, settings: Any) -> None:
        if self._sampler_started or not self._running_jobs():
            return
        from fleet.collectors.probes.job_latency import JobLatencySampler

        self._sampler_started = True
        sampler = JobLatencySampler(self.pool(), self._running_jobs, self.writer().put_probe, settings,
                                    ports=self._probe_parts()[0])
        self._app.run_worker(sampler.run(self._sampler_stop), name="job latency sampler", group="job-sampler",
                             exit_on_error=False)

    def _running_jobs(self) -> Sequence[JobRecord]:
        """The jobs running now; none while a past moment is replayed (its jobs may be long gone)."""
        view = self._app.view
        if view is None or not view.snapshot.live:
            return ()
        return tuple(j for j in view.snapshot.jobs if j.state.upper() in RUNNING_JOB_STATES)

    # --- diagnosis
    def start_diagnosis(self) -> None:
        """Live: judge the newest window now and every ``DIAGNOSIS_INTERVAL_S``; replay: each moment shown."""
        app = self._app
        inventory = app.inventory
        self._watch = DiagnosisWatch(app.config.db_path, cabling=inventory.cabling if inventory is not None else ())
        app.set_interval(DIAGNOSIS_INTERVAL_S, self._tick)
        app.watch(app, "cursor_ts", lambda _ts: self.diagnose_now(), init=False)
        self.diagnose_now()

    def _tick(self) -> None:
        # a replayed moment does not change: judged once when shown; a tick during a run skips (a large
        # fleet's runs then space themselves instead of piling up)
        if self._app.cursor_ts is None and not self._diagnosing:
            self.diagnose_now()

    def diagnose_now(self) -> None:
        """Run the diagnosis once on the moment shown; asked while one runs, it runs once more after it."""
        if self._watch is None:
            return
        if self._diagnosing:
            self._diagnose_again = True
            return
        self._diagnosing = True
        self._app.run_worker(self._diagnose(self._watch, self._app.cursor_ts), name="diagnosis",
                             group="diagnosis", exit_on_error=False)

    async def _diagnose(self, watch: DiagnosisWatch, end_ts: float | None) -> None:
        try:
            transitions = await asyncio.to_thread(watch.run, end_ts, self._app.feed.now())
            if transitions.events:
                writer = self.writer()
                for event in transitions.events:
                    writer.put_event(event)
                await asyncio.to_thread(writer.flush, 10.0)
        finally:
            self._diagnosing = False
            if self._diagnose_again:
                self._diagnose_again = False
                self._app.call_later(self.diagnose_now)
        self._app.post_message(DiagnosisRan(transitions.end_ts, transitions.open_count, transitions.raised,
                                            transitions.cleared))
        if transitions.events:
            self._app.request_refresh(force=True)
