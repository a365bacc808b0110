"""One GPU node, collected for as long as the collector runs.

Agent mode keeps one long-lived stream (``python3 -u -c <agent>``) and turns
each JSON line into samples; a node without python3 falls back to command
mode for good, with an event saying so. Command mode runs one compound
command per tick; a tick still in flight when the next is due is skipped,
never queued, so a slow node falls behind alone. Every few minutes a second,
short command reads the node's facts (kernel, firmware, driver) and its LLDP
neighbours for the topology.
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, replace

from fleet.collectors.agent_reader import (
    ETHTOOL_COUNTERS,
    AgentKeys,
    AgentLine,
    AgentLineError,
    AgentStream,
    ReadOptics,
    agent_source,
    host_sample,
)
from fleet.collectors.command_mode import CommandModeNode
from fleet.collectors.commands import Glob, agent_command, command
from fleet.collectors.inventory import InventoryHost
from fleet.collectors.isolation import Unparsable, describe, read_output
from fleet.collectors.module_limits import module_limit_values, module_parts
from fleet.collectors.parsers.host_hardware import HARDWARE_FILES, HostHardware, parse_host_hardware
from fleet.collectors.parsers.lldp import parse_lldp
from fleet.collectors.rate_queue import RateQueue
from fleet.collectors.sections import sectioned, split_sections
from fleet.collectors.setup_gate import Budget, Place, SetupGate, handshake
from fleet.collectors.sshpool import RunResult, SshPool
from fleet.collectors.status import StatusBook
from fleet.collectors.stoppable_sleep import sleep_until_stopped
from fleet.fabric.events import Event, Severity
from fleet.fabric.node_hardware import (
    NO_NVIDIA_DRIVER,
    NO_RDMA,
    NodeHardware,
    hardware_info,
    node_hardware,
)
from fleet.fabric.records import HostRecord, PortRecord
from fleet.fabric.samples import HostSample
from fleet.fabric.states import HostState
from fleet.fabric.text import clean_text
from fleet.store.writer import StoreWriter

FIRST_FACTS_PER_S = 50.0
"""The nodes' first facts reads, after the fleet is set up, are spread at about this many a second
(a 1,024-node fleet's over 20 s), so that they do not all come in one second."""
MAX_CLOCK_SKEW_S = 30.0
"""A node clock further off than this is not trusted: its lines are stamped with ours.
Within it, the node's own stamps give the exact interval between two counter reads."""


@dataclass(frozen=True, slots=True)
class CollectSettings:
    """Seconds unless named otherwise."""

    interval_s: float = 1.0
    optics_every: int = 10
    """Read optics (``ethtool -m``, a slow EEPROM read) every this many intervals."""
    hung_after_s: float = 10.0
    """No first line (or no next line) within this long: the node is ``hung``."""
    slow_after_s: float = 2.0
    """A first answer later than this: the node is ``slow``."""
    facts_every_s: float = 300.0
    """Kernel/firmware/driver and LLDP neighbours change rarely: read them this often."""
    full_every: int | None = 60
    """The agent sends only changed values, with a full line every this many lines; None: full lines only."""


class CollectorStats:
    """What the collector has done, for round summaries and ``--json`` output."""

    def __init__(self) -> None:
        self.samples = 0
        """Values written (counters, gauges and rates)."""
        self.lines = 0
        """Node samples stored (agent lines and command-mode ticks)."""
        self.dropped = 0
        """Node samples the store's writer refused (back-pressure)."""


class NodePoller:
    def __init__(self, host: InventoryHost, pool: SshPool, writer: StoreWriter, status: StatusBook,
                 queue: RateQueue, settings: CollectSettings, stats: CollectorStats, keys: AgentKeys,
                 optics: ReadOptics, gate: SetupGate | None = None) -> None:
        """``queue``, ``keys`` and ``optics``: the collector's, shared by its nodes (where samples wait to
        be derived with other nodes', the keys of their values, the optics reader). ``gate``: paces
        set-ups with the other hosts' (a collector's), None sets up at once."""
        self.host = host
        self._gate = gate
        self._pool = pool
        self._writer = writer
        self._status = status
        self._queue = queue
        self._settings = settings
        self._stats = stats
        self._keys = keys
        self._optics = optics
        self.mode = host.mode
        self._command_node = CommandModeNode(host.name, optics_every=settings.optics_every)
        self._netdev_owner: dict[str, str] = {}
        """netdev -> RDMA device, from the samples, for LLDP neighbours."""
        self._facts_due = 0.0
        self._facts_problem = ""
        """Why the last facts read could not be read ("" when it could): the node stays unparsable."""
        self._last_line_at = 0.0
        self._lag_at_last_line = 0.0
        self._lines_in_stream = 0
        """Lines of the current agent stream: the first one's delay is judged apart (set-up)."""
        self._stream = AgentStream(host.name, optics, keys)
        self.got_sample = asyncio.Event()
        self.showed_nothing = False
        """The last agent line had no value: no RDMA port and no GPU."""
        self._rng = random.Random(host.name)
        self.hardware: NodeHardware | None = None
        """What the node has (RDMA devices, NVIDIA driver, CPUs, memory, interfaces), from its last facts read."""

    # --- samples -------------------------------------------------------------

    def _queue_tick(self, line: AgentLine) -> None:
        """A command-mode tick, read as an agent line, to the rate queue."""
        for port in line.ports:
            if port.netdev:
                self._netdev_owner[port.netdev] = port.device
        self._queue.put(host_sample(line, self.host.name, self._optics, self._keys), self._store)

    def _store(self, sample: HostSample) -> None:
        """A sample with its rates and readings, into the store: one frame per line."""
        if sample.values:
            if not self._writer.put_samples(sample):
                self._stats.dropped += 1
            self._stats.samples += len(sample.values)
        self._stats.lines += 1
        self.got_sample.set()

    def _answered(self, state: HostState, reason: str = "") -> None:
        """The node answered: ``state`` is its state, unless its last facts read was unreadable,
        which keeps it ``unparsable`` (with that reason) until a facts read succeeds."""
        if self._facts_problem and state is HostState.OK:
            state, reason = HostState.UNPARSABLE, self._facts_problem
        self._status.set(self.host.name, state, reason)

    def _on_agent_line(self, text: str) -> None:
        try:
            read = self._stream.read(text)
        except Exception as error:  # the node's line: whatever reading it raises is the node's (isolation)
            # Ends this stream (nothing more of it is read: a flood of bad lines costs one), and the
            # guarded loop marks the node and starts the agent again, with a full line, on its schedule.
            raise Unparsable("agent line", str(error) if isinstance(error, AgentLineError) else describe(error)) \
                from error
        sample, now = read.sample, time.time()
        if read.moved is None:  # a full line; a changed-only line's values are filled in later, in its shape
            self.showed_nothing = not sample.values  # no RDMA port, no GPU: its facts say why
        if abs(sample.ts - now) > MAX_CLOCK_SKEW_S:
            sample = replace(sample, ts=now)
        if read.netdev_owner is not None:
            self._netdev_owner.update((netdev, owner.device) for netdev, owner in read.netdev_owner.items())
        self._queue.put(sample, self._store, read.optics, read.moved)
        arrived, lag = time.monotonic(), self._pool.lag
        gap_s = arrived - self._last_line_at - lag.since(self._lag_at_last_line)  # our own lateness is not the node's
        self._last_line_at, self._lag_at_last_line = arrived, lag.total_s
        current = self._status.get(self.host.name)
        if self._lines_in_stream == 0:
            # The first line's wait includes the session's start: _agent_stream judges it.
            if current is None or current.state is not HostState.SLOW:
                self._answered(HostState.OK)
        elif gap_s - self._settings.interval_s > self._settings.slow_after_s:
            self._status.set(self.host.name, HostState.SLOW,
                             f"agent lines {gap_s:.1f} s apart (interval {self._settings.interval_s:g} s)")
        else:
            self._answered(HostState.OK)
        self._lines_in_stream += 1

    # --- modes ---------------------------------------------------------------

    async def _enter(self) -> Place | None:
        """Wait for a place among the set-ups in flight (None: no gate, at once)."""
        return None if self._gate is None else await self._gate.enter(self.host.name, Budget.NODES)

    async def _agent_stream(self, stop: asyncio.Event) -> RunResult:
        place = await self._enter()  # a stream's start is a set-up: the handshake and the agent's session
        try:
            return await self._agent_stream_set_up(stop, place)
        finally:
            if place is not None:
                place.ended()

    async def _agent_stream_set_up(self, stop: asyncio.Event, place: Place | None) -> RunResult:
        """The stream, from the connection on; ``place``: opened once the agent's session is (the
        first line is the node's own work), ended with the first line or the stream's end."""
        settings = self._settings
        connected = await self._pool.connect(self.host.name)
        if not connected.ok:
            return connected
        started = self._last_line_at = time.monotonic()
        lag_at_start = self._lag_at_last_line = self._pool.lag.total_s
        self._lines_in_stream = 0
        self._stream = AgentStream(self.host.name, self._optics, self._keys)  # the agent starts again with a full line
        first = asyncio.ensure_future(self.got_sample.wait())
        self.got_sample.clear()
        stream = asyncio.ensure_future(self._pool.stream(
            self.host.name,
            agent_command(agent_source(), settings.interval_s, optics_every=settings.optics_every,
                          ethtool_keep=ETHTOOL_COUNTERS, full_every=settings.full_every, optics_readings=True),
            self._on_agent_line,
            first_line_timeout_s=settings.hung_after_s + settings.interval_s,
            line_timeout_s=settings.hung_after_s + settings.interval_s,
            stop=stop,
            on_open=None if place is None else lambda _write: place.opened(),
        ))
        done, _ = await asyncio.wait({first, stream}, return_when=asyncio.FIRST_COMPLETED)
        if place is not None:
            place.ended()
        if first in done:
            waited = time.monotonic() - started - self._pool.lag.since(lag_at_start)
            if waited > settings.slow_after_s + settings.interval_s:
                self._status.set(self.host.name, HostState.SLOW,
                                 f"first agent line after {waited:.1f} s (slow above {settings.slow_after_s:g} s)")
        else:
            first.cancel()
        return await stream

    async def _command_tick(self) -> RunResult:
        place = None if self._pool.connected(self.host.name) else await self._enter()
        try:
            result = await handshake(self._pool, self.host.name, place) or await self._pool.run(
                self.host.name, self._command_node.tick_command(), timeout_s=self._settings.hung_after_s)
        finally:
            if place is not None:
                place.ended()
        if result.state in (HostState.OK, HostState.SLOW):
            try:
                line = self._command_node.read(result.stdout, time.time())
            except Unparsable as error:
                self._status.set(self.host.name, HostState.UNPARSABLE, error.reason)
                return result
            if not line.ports and not line.gpus:
                if self.hardware is None:
                    await self.read_facts()  # a node with neither is normal: its facts say whether it is one
                if self.hardware is None or self.hardware.states != (NO_RDMA, NO_NVIDIA_DRIVER):
                    self._status.set(self.host.name, HostState.UNPARSABLE,
                                     "no RDMA port and no GPU in the output: " + "; ".join(line.errors[:2]))
                    return result
            self._queue_tick(line)
        self._answered(result.state, result.reason)
        return result

    @staticmethod
    def _lacks_python(result: RunResult) -> bool:
        return result.state is HostState.COMMAND_FAILED and (
            result.exit_status == 127 or "python3: not found" in result.stderr
            or "No module named" in result.stderr)

    # --- facts and neighbours ---------------------------------------------------

    async def read_facts(self) -> None:
        """Kernel, firmware, GPU driver, what the host has (``HostHardware``), LLDP neighbours and
        module thresholds of each RDMA netdev.

        Every string kept is the node's: cleaned (``clean_text``) before it is stored.
        Output that cannot be read makes the node ``unparsable`` until a read succeeds.
        """
        result = await self._pool.run(self.host.name, sectioned([
            ("kernel", command("uname", "-r")),
            ("fw", command("grep", "-H", ".", Glob("/sys/class/infiniband/*/fw_ver"))),
            ("gpu", command("nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader")),
            ("lldp", command("lldpctl", "-f", "json")),
            ("hardware", command("grep", "-Hs", ".", *(Glob(path) for path in HARDWARE_FILES))),
            *module_parts(self._netdev_owner),
        ]), timeout_s=self._settings.hung_after_s)
        if result.state is HostState.UNPARSABLE:  # over the pool's output caps
            self._unreadable_facts(result.reason)
        if not result.ok:
            return
        sections = split_sections(result.stdout)
        try:
            neighbours = read_output("lldpctl -f json", parse_lldp, sections.get("lldp", ""))
            hardware = read_output("grep -Hs . (host hardware)", parse_host_hardware, sections.get("hardware", ""))
            limits = read_output("ethtool -m", lambda _: module_limit_values(sections, self._netdev_owner), "")
        except Unparsable as error:
            self._unreadable_facts(error.reason)
            return
        info = {"kernel": sections.get("kernel", "").strip()}
        for line in sections.get("fw", "").splitlines():
            path, _, value = line.partition(":")
            parts = path.split("/")
            if len(parts) > 4:
                info[f"fw_{parts[4]}"] = value.strip()
        gpu_lines = [line.split(",") for line in sections.get("gpu", "").splitlines() if "," in line]
        if gpu_lines:
            info["gpu_model"] = gpu_lines[0][0].strip()
            info["gpu_driver"] = gpu_lines[0][1].strip()
        info.update(hardware_info(hardware.rdma_devices, hardware.nvidia_driver, hardware.cpus,
                                  hardware.memory_total_bytes, _netdevs_text(hardware)))
        info = {clean_text(key, one_line=True): clean_text(value, one_line=True) for key, value in info.items()}
        self.hardware = node_hardware(info)
        self._writer.put_hosts([HostRecord(self.host.name, "node", self.host.connect_address, "linux", info=info)])
        if limits:
            self._writer.put_samples(HostSample(self.host.name, time.time(), limits))
        ports = [
            PortRecord(self.host.name, self._netdev_owner.get(n.local_interface, ""), "1", n.local_interface,
                       "Ethernet", clean_text(n.chassis_name, one_line=True), clean_text(n.port_id, one_line=True))
            for n in neighbours.neighbors
            if n.local_interface in self._netdev_owner
        ]
        if ports:
            self._writer.put_ports(ports)
        if self._facts_problem:
            self._facts_problem = ""
            self._answered(result.state, result.reason)

    def _unreadable_facts(self, reason: str) -> None:
        self._facts_problem = reason
        self._status.set(self.host.name, HostState.UNPARSABLE, reason)

    # --- loops ---------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Collect until ``stop`` is set; failures are states, retried with the pool's backoff."""
        while not stop.is_set():
            if self.mode == "agent":
                result = await self._agent_stream(stop)
                if self._lacks_python(result):
                    self._fall_back(result)
                    continue
                if not stop.is_set():
                    self._status.set(self.host.name, result.state, result.reason or "agent stream ended")
            else:
                started = time.monotonic()
                result = await self._command_tick()
                if result.ok:
                    await self._facts_if_due()
                    await sleep_until_stopped(stop, self._settings.interval_s - (time.monotonic() - started))
                    continue
            if not stop.is_set():
                await sleep_until_stopped(stop, max(self._pool.next_retry_s(self.host.name), self._settings.interval_s))

    async def facts_loop(self, stop: asyncio.Event) -> None:
        """Agent mode: the stream owns the main loop, facts come on a second channel now and then.

        The first read waits until the whole fleet is set up (first lines before steady-state
        work), then comes at once for a node whose lines show nothing (no RDMA port, no GPU: its
        facts say whether that is what it is), else at a random moment of a spread that gives
        ``FIRST_FACTS_PER_S`` reads a second over the fleet.
        """
        spread_s = 0.0
        if self._gate is None:  # alone: give the stream a few seconds to answer first
            await sleep_until_stopped(stop, min(5.0, self._settings.facts_every_s))
        else:
            settled = asyncio.ensure_future(self._gate.settled.wait())
            stopped = asyncio.ensure_future(stop.wait())
            await asyncio.wait({settled, stopped}, return_when=asyncio.FIRST_COMPLETED)
            settled.cancel()
            stopped.cancel()
            spread_s = min(self._gate.progress().total / FIRST_FACTS_PER_S, self._settings.facts_every_s)
        await sleep_until_stopped(stop, 0.0 if self.showed_nothing else self._rng.uniform(0.0, spread_s))
        while not stop.is_set():
            if self._status.get(self.host.name) is not None and self._pool.state(self.host.name).state in (
                    HostState.OK, HostState.SLOW):
                await self.read_facts()
            await sleep_until_stopped(stop, self._settings.facts_every_s)

    async def _facts_if_due(self) -> None:
        now = time.monotonic()
        if now >= self._facts_due:
            self._facts_due = now + self._settings.facts_every_s
            await self.read_facts()

    def _fall_back(self, result: RunResult) -> None:
        self.mode = "commands"
        self._writer.put_event(Event(time.time(), "collect_mode", Severity.INFO,
                                     f"{self.host.name}: no python3 for the agent ({result.reason}); "
                                     "collecting with plain commands instead", host=self.host.name))

    async def once(self) -> None:
        """One sample (the first agent line, or one command tick), facts and neighbours."""
        stop = asyncio.Event()
        if self.mode == "agent":
            watcher = asyncio.ensure_future(self.got_sample.wait())
            self.got_sample.clear()
            stream = asyncio.ensure_future(self._agent_stream(stop))
            await asyncio.wait({watcher, stream}, return_when=asyncio.FIRST_COMPLETED)
            stop.set()
            watcher.cancel()
            result = await stream  # an unreadable first line raises Unparsable: the round marks the node
            if self._lacks_python(result):
                self._fall_back(result)
                await self._command_tick()
            elif not self.got_sample.is_set():
                self._status.set(self.host.name, result.state, result.reason)
        else:
            await self._command_tick()
        if self._pool.state(self.host.name).state in (HostState.OK, HostState.SLOW):
            await self.read_facts()


def _netdevs_text(hardware: HostHardware) -> str:
    """``eth0 up 100 Gb/s, eth1 down``: the interfaces but the loopback, for a person."""
    parts = []
    for netdev in hardware.netdevs:
        if netdev.name == "lo":
            continue
        speed = f" {netdev.speed_mbps / 1000:g} Gb/s" if netdev.speed_mbps else ""
        parts.append(f"{netdev.name} {netdev.operstate or '?'}{speed}")
    return ", ".join(parts)
