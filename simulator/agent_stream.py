"""The node agent protocol on a simulated node: ``python3 -u -c <agent> --interval N ...``.

The real agent (``collectors/agent.py``) reads sysfs, ethtool, rdma and NVML
and prints one JSON line of schema ``fleet-agent/2`` (docs/agent-schema.md)
per interval until stdin closes; each netdev's ``ethtool`` map ends with its
sysfs ``carrier_changes``. The simulated node answers the same command
line with lines of the same schema, on the same fixed ticks: ``AgentLines``
builds each from only the parts of the node a line carries; ``optics_text``
is the ``ethtool -m`` renderer's text, every K-th line. With
``--changed-only`` the lines between full ones carry only what changed, by
the real agent's rules (``fleet.collectors.agent.changed_line``). Tests hold the
text to the straightforward build (``tests/helpers/agent_reference.py``: the
whole NodeView as a document, diffed by the real agent's function).
"""

from __future__ import annotations

import asyncio
import json
import math
import struct
from base64 import b64encode
from collections.abc import Callable
from dataclasses import dataclass
from itertools import compress
from operator import ne
from typing import Any

from fleet.simulator.faults import FaultEffects
from fleet.simulator.model import (
    ETHTOOL_IPOIB_TABLE,
    ETHTOOL_ROCE_TABLE,
    CounterTable,
    FleetModel,
    NodeParts,
)
from fleet.simulator.session import Machine, StreamIO
from fleet.simulator.state import GpuView, NicView, OpticsLane, OpticsView
from fleet.simulator.tools.ethtool import (
    CMIS_IDS,
    bias_text,
    identifier_byte,
    module_row,
    power_text,
    render_module,
    temp_text,
    volt_text,
)
from fleet.simulator.tools.ib import PHYS_STATE_NUM, PORT_STATE_NUM, sysfs_rate

SCHEMA = "fleet-agent/2"
PYTHON_VERSION = "Python 3.10.12"
CARRIER_CHANGES = "carrier_changes"
"""The netdev's sysfs ``carrier_changes``, which the agent sends after its ``ethtool -S`` counters."""


@dataclass(frozen=True, slots=True)
class AgentOptions:
    """The agent's own arguments (docs/agent-schema.md)."""

    interval_s: float = 1.0
    optics_every: int = 10
    ethtool_keep: frozenset[str] | None = None
    """Only these ``ethtool -S`` counters (``--ethtool-keep a,b``); None: all of them."""
    optics_readings: bool = False
    """Only the reading lines of ``ethtool -m`` (``--optics-readings``), as the real agent sends them."""
    changed_only: bool = False
    full_every: int = 60
    """With ``changed_only``: a full line every this many lines (and the first)."""


def _options(words: list[str]) -> AgentOptions:
    """Parse ``--interval N``, ``--optics-every K``, ``--ethtool-keep A,B`` (also ``--name=value``)."""
    values: dict[str, str] = {}
    index = 0
    while index < len(words):
        word = words[index]
        name, equals, value = word.partition("=")
        if name in ("--changed-only", "--optics-readings"):
            values[name] = ""
        elif name in ("--interval", "--optics-every", "--ethtool-keep", "--full-every"):
            if not equals:
                index += 1
                value = words[index] if index < len(words) else ""
            values[name] = value
        index += 1
    options = AgentOptions(
        interval_s=float(values.get("--interval", 1.0)),
        optics_every=int(values.get("--optics-every", 10)),
        ethtool_keep=(frozenset(filter(None, values["--ethtool-keep"].split(",")))
                      if "--ethtool-keep" in values else None),
        optics_readings="--optics-readings" in values,
        changed_only="--changed-only" in values,
        full_every=int(values.get("--full-every", 60)),
    )
    if options.interval_s <= 0 or options.optics_every <= 0 or options.full_every <= 0:
        raise ValueError("interval, optics-every and full-every must be positive")
    return options


async def run_python(machine: Machine, argv: list[str], io: StreamIO) -> int:
    """``python3 --version`` or the agent; any other program is not something a simulated node can run."""
    words = argv[1:]
    if words[:1] in (["--version"], ["-V"]):
        io.stdout(PYTHON_VERSION + "\n")
        return 0
    if "-c" not in words or "--interval" not in " ".join(words) or machine.role != "node":
        io.stderr("python3: the simulated node runs only the fleet agent (python3 -u -c <agent> --interval N)\n")
        return 2
    agent_args = words[words.index("-c") + 2 :]
    try:
        options = _options(agent_args)
    except ValueError as error:
        io.stderr(f"agent: error: {error}\n")
        return 2
    model = machine.model
    lines = AgentLines(model, machine.host, options)
    seq = 0
    eof = asyncio.ensure_future(io.stdin_eof.wait())
    loop = asyncio.get_running_loop()
    next_at = loop.time()
    try:
        while not io.stdin_eof.is_set() and not io.closed.is_set():
            t = model.now()
            behaviour = model.behaviour(machine.host, t)
            if behaviour.hung:  # a node that hangs mid-stream stops printing, it does not hang up
                await io.closed.wait()
                break
            if behaviour.delay_s:
                await asyncio.sleep(behaviour.delay_s)
                t = model.now()
            seq += 1
            io.stdout(lines.line(model.node_parts(machine.host, t), model.unix(t), seq))
            await io.drain()  # a client that reads slowly slows the stream, as a pipe would
            # On fixed ticks, as the real agent: the time a line takes does not stretch the interval, and
            # a stream that fell behind skips the ticks it missed instead of piling lines up.
            next_at += options.interval_s
            now = loop.time()
            if now > next_at:
                next_at += math.ceil((now - next_at) / options.interval_s) * options.interval_s
            # asyncio.wait on one long-lived task: wait_for would wrap a new task around the wait every line
            await asyncio.wait((eof,), timeout=next_at - now)
    finally:
        eof.cancel()
    return 0


_OPTICS_READING_WORDS = ("bias current", "power", "temperature", "voltage")


def optics_readings(text: str) -> str:
    """The reading lines of ``ethtool -m`` output, by the real agent's rule (``--optics-readings``)."""
    kept = []
    for line in text.splitlines():
        key = line.partition(" :")[0].lower()
        if "alarm" not in key and "warning" not in key and any(word in key for word in _OPTICS_READING_WORDS):
            kept.append(line)
    return "\n".join(kept)


# --- the stream's fast path --------------------------------------------------------------
#
# ``AgentLines`` prints, line for line, what the reference ``agent_line`` + the agent's ``changed_line`` + compact
# ``json.dumps`` print for the node's whole view, but reads only the parts a line carries
# (no QP tables, LLDP, or optics between optics lines; only the kept ethtool counters), keeps
# what cannot change within a run (identities, the NIC heads while the faults and link state
# hold) and diffs section by section (each counter table's moved values picked in one pass).
# tests/simulator/test_agent_stream_fast.py holds the two to the same text.

_ENCODE = json.JSONEncoder(separators=(",", ":"), check_circular=False).encode
"""``json.dumps(obj, separators=(",", ":"))`` without building an encoder per line."""
_PORT_HEAD_KEYS = ("device", "port", "state", "state_code", "phys_state", "phys_state_code", "rate", "rate_gbps",
                   "link_layer", "netdev")
_GPU_KEYS = ("index", "name", "uuid", "util_pct", "mem_used_bytes", "mem_total_bytes", "temp_c", "power_w",
             "sm_clock_mhz", "throttle_reasons", "ecc_volatile_uncorrected", "ecc_aggregate_uncorrected",
             "ecc_volatile_corrected", "retired_pages", "pcie_replay", "xid_last", "xid_count", "nvlink_crc_errors",
             "nvlink_replay_errors", "nvlink_recovery_errors")

PortHead = tuple[str, int, str, int, str, int, str, float, str, str]


def _port_head(nic: NicView) -> PortHead:
    """A port's entry without its counters, in ``agent_line``'s key order (``_PORT_HEAD_KEYS``)."""
    return (nic.name, nic.port, nic.state, PORT_STATE_NUM.get(nic.state, 0), nic.phys_state,
            PHYS_STATE_NUM.get(nic.phys_state, 0), sysfs_rate(nic), float(nic.rate_gbps), nic.link_layer, nic.netdev)


def _gpu_values(g: GpuView) -> tuple[Any, ...]:
    """A GPU's entry in ``agent_line``'s key order (``_GPU_KEYS``)."""
    return (g.index, g.name, g.uuid, g.util_pct, g.mem_used_mib * 1048576, g.mem_total_mib * 1048576, g.temp_c,
            g.power_w, g.sm_clock_mhz, g.throttle_reasons, g.ecc_volatile_uncorrected, g.ecc_aggregate_uncorrected,
            0, 0, g.pcie_replay, g.xid_last, g.xid_count, sum(g.nvlink_crc_errors), sum(g.nvlink_replay_errors),
            sum(g.nvlink_recovery_errors))


def _kept_table(table: CounterTable, keep: frozenset[str]) -> CounterTable:
    """``table`` with only the counters in ``keep``, in the driver's order: filled alone, it equals the
    whole table filled and then filtered (``--ethtool-keep``) at a twentieth of the work."""
    return CounterTable(
        zeros={name: 0 for name in table.zeros if name in keep},
        single=tuple(row for row in table.single if row[0] in keep),
        mixed=tuple(row for row in table.mixed if row[0] in keep),
    )


_DARK = OpticsLane(0.0, 0.0, 0.0)
"""An unused channel, as the CMIS renderer pads the lanes to the bank."""
Reading = tuple[str, Callable[[Any], str], Any]
"""A row of ``ethtool -m``: its label, the renderer's formatter of the value, the value."""


def _cmis_readings(optics: OpticsView) -> list[Reading]:
    """The rows of ``render_module`` (CMIS layout) that ``optics_readings`` keeps, in order, as the
    renderer formats them: power class, temperature, voltage, then each channel's bias, Tx and Rx power."""
    lanes = len(optics.lanes)
    padded = [*optics.lanes, *[_DARK] * (max(8, -(-lanes // 8) * 8) - lanes)]
    big = lanes > 4
    return [
        ("Power class", str, "5" if big else "4"), ("Max power", str, "10.00W" if big else "8.50W"),
        ("Module temperature", temp_text, optics.temp_c), ("Module voltage", volt_text, optics.voltage_v),
        *((f"Laser tx bias current (Channel {i})", bias_text, lane.tx_bias_ma) for i, lane in enumerate(padded, 1)),
        *((f"Transmit avg optical power (Channel {i})", power_text, lane.tx_power_mw) for i, lane in enumerate(padded, 1)),
        *((f"Rcvr signal avg optical power (Channel {i})", power_text, lane.rx_power_mw)
          for i, lane in enumerate(padded, 1)),
    ]


_CMIS_CHECKED: dict[tuple[str, int], bool] = {}
"""Per module layout (identifier, lanes): whether ``_cmis_readings`` gives what the full render, filtered,
gives (checked on the layout's first module: the labels depend on the layout only, the values go through
the renderer's own formatters)."""


def _same(before: Any, after: Any) -> bool:
    """Whether a formatter prints ``after`` as it printed ``before`` (0.0 and -0.0 print apart)."""
    return bool(before == after and type(before) is type(after)
                and (after != 0 or math.copysign(1.0, before) == math.copysign(1.0, after)))


class ModuleReadings:
    """One module's readings-only ``ethtool -m`` text, ``optics_readings(render_module(optics))``, built
    from the reading rows alone (not the ~180 rows of the whole render) and re-formatting only the rows
    whose value moved since the module's last optics line (bias, voltage and dark channels do not)."""

    def __init__(self) -> None:
        self._rows: dict[str, tuple[Any, str]] = {}

    def text(self, optics: OpticsView) -> str:
        if identifier_byte(optics) not in CMIS_IDS:
            return optics_readings(render_module(optics))
        readings = _cmis_readings(optics)
        layout = (optics.identifier, len(optics.lanes))
        checked = _CMIS_CHECKED.get(layout)
        if checked is None:
            fresh = "".join(module_row(label, form(value)) for label, form, value in readings).removesuffix("\n")
            checked = _CMIS_CHECKED[layout] = fresh == optics_readings(render_module(optics))
        if not checked:
            return optics_readings(render_module(optics))
        rows, out = self._rows, []
        for label, form, value in readings:
            held = rows.get(label)
            if held is None or not _same(held[0], value):
                held = rows[label] = (value, module_row(label, form(value)))
            out.append(held[1])
        return "".join(out).removesuffix("\n")


class AgentLines:
    """The lines of one agent stream, each from the node's parts at one instant (see the section comment).

    Reads through ``NodeParts`` (port counters, hw_counters, ethtool totals, link state) and, for
    what ``NodeParts`` does not split out, the model's own per-part functions (a GPU, a module's
    optics, a NIC's QP table, the latter only when the faults or the link state change).
    """

    def __init__(self, model: FleetModel, host: str, options: AgentOptions) -> None:
        self.model = model
        self.host = host
        self.options = options
        self._ethtool_table: CounterTable | None = None
        if options.ethtool_keep is not None:
            self._ethtool_table = _kept_table(ETHTOOL_ROCE_TABLE if model.roce else ETHTOOL_IPOIB_TABLE,
                                              options.ethtool_keep)
        self._carrier = options.ethtool_keep is None or CARRIER_CHANGES in options.ethtool_keep
        """Whether the lines carry the netdevs' ``carrier_changes`` (``--ethtool-keep`` filters it too)."""
        self._gpu_indices: tuple[int, ...] = ()
        self._rails = 0
        # per rail: the faults and link state the NIC's head and QP count were last read under
        self._head_of: list[tuple[FaultEffects, bool, PortHead] | None] = []
        self._qps_of: list[tuple[FaultEffects, bool, int] | None] = []
        self._readings: list[ModuleReadings] = []
        self._last: _Sections | None = None
        """What the last line carried (the changed-only lines' reference)."""

    def _start(self, parts: NodeParts) -> None:
        """Learn the node's shape (NICs, GPUs) from its whole view, once per stream."""
        view = parts.view()
        self._rails = len(view.nics)
        self._gpu_indices = tuple(g.index for g in view.gpus)
        self._head_of = [None] * self._rails
        self._qps_of = [None] * self._rails
        self._readings = [ModuleReadings() for _ in range(self._rails)]

    def line(self, parts: NodeParts, ts: float, seq: int) -> str:
        """Line ``seq`` (from 1) for the node at ``parts``' instant, unix time ``ts``, with its newline."""
        if not self._rails:
            self._start(parts)
        options = self.options
        host = self.host
        effects = parts.effects
        head_of, qps_of, table, carrier = self._head_of, self._qps_of, self._ethtool_table, self._carrier
        now = _Sections([], [], [], [], [], [])
        for rail in range(self._rails):
            down = parts.down(rail)
            head = head_of[rail]
            if head is None or head[0] is not effects or head[1] != down:
                head = head_of[rail] = (effects, down, _port_head(parts.nic_head(rail)))
            now.heads.append(head[2])
            now.counters.append(parts.counters(rail))
            now.hw.append(parts.hw_counters(rail))
            ethtool = parts.ethtool(rail) if table is None else parts.filled(table, rail)
            if carrier:  # after the ethtool -S counters, as the agent reads it (a copy: ethtool() is the view's)
                ethtool = {**ethtool, CARRIER_CHANGES: parts.carrier_changes(rail)}
            now.ethtool.append(ethtool)
            qps = qps_of[rail]
            if qps is None or qps[0] is not effects or qps[1] != down:
                qps = qps_of[rail] = (effects, down, parts.qp_count(rail))
            now.qp_counts.append(qps[2])
        now.gpus.extend(_gpu_values(parts.gpu(index)) for index in self._gpu_indices)
        optics: list[str] | None = None
        if (seq - 1) % options.optics_every == 0:
            modules = [parts.optics(rail) for rail in range(self._rails)]
            optics = ([readings.text(o) for readings, o in zip(self._readings, modules, strict=True)]
                      if options.optics_readings else [render_module(o) for o in modules])
        last, self._last = self._last, now
        per_line = {"schema": SCHEMA, "host": host, "ts": round(ts, 3), "seq": seq, "interval_s": options.interval_s}
        changed = None
        if options.changed_only and last is not None and (seq - 1) % options.full_every:
            changed = now.changed_line(last, per_line, optics)
        return _ENCODE(changed if changed is not None else now.full_line(per_line, optics)) + "\n"


@dataclass(frozen=True, slots=True)
class _Sections:
    """One line's values, per rail (NIC heads, counter tables, QP counts) and per GPU."""

    heads: list[PortHead]
    counters: list[dict[str, int]]
    hw: list[dict[str, int]]
    ethtool: list[dict[str, int]]
    qp_counts: list[int]
    gpus: list[tuple[Any, ...]]

    def full_line(self, per_line: dict[str, Any], optics: list[str] | None) -> dict[str, Any]:
        """``agent_line``'s document."""
        netdevs: dict[str, dict[str, Any]] = {}
        for rail, port in enumerate(self.heads):
            entry: dict[str, Any] = {"ethtool": self.ethtool[rail]}
            if optics is not None:
                entry["optics_text"] = optics[rail]
            netdevs[port[9]] = entry
        return per_line | {
            "ports": [dict(zip(_PORT_HEAD_KEYS, port, strict=True)) | {"counters": self.counters[rail],
                                                                        "hw_counters": self.hw[rail]}
                      for rail, port in enumerate(self.heads)],
            "netdevs": netdevs,
            "qp_count": {port[0]: count for port, count in zip(self.heads, self.qp_counts, strict=True)},
            "gpus": [dict(zip(_GPU_KEYS, gpu, strict=True)) for gpu in self.gpus],
            "gpu_error": "",
            "errors": [],
        }

    def changed_line(self, last: _Sections, per_line: dict[str, Any], optics: list[str] | None) -> dict[str, Any] | None:
        """``changed_line(last's document, this one's, slot_paths(the full line's))``: None when a port's
        state, physical state or rate changed (a full line). The shapes match by construction (same node,
        same tables, so the full line's slots are this line's), every counter and GPU field is a number
        of a slot (``_GPU_KEYS[3:]``: each field's type is fixed), and values compare with ``!=`` alone
        where ``changed_line`` also sends a value whose type changed."""
        line = per_line | {"errors": [], "changed_only": True}
        netdevs: dict[str, dict[str, Any]] = {}
        slots: list[int] = []
        values: list[Any] = []
        ethtool_slots: list[int] = []
        ethtool_values: list[int] = []
        at = 0
        ethtool_at = sum(map(len, self.counters)) + sum(map(len, self.hw))
        qp_at = ethtool_at + sum(map(len, self.ethtool))
        qp_slots = []
        for rail, port in enumerate(self.heads):
            before = last.heads[rail]
            if port is not before and port[2:8] != before[2:8]:  # state .. rate_gbps; the rest name the port
                return None
            at = _moved(last.counters[rail], self.counters[rail], at, slots, values)
            at = _moved(last.hw[rail], self.hw[rail], at, slots, values)
            ethtool_at = _moved(last.ethtool[rail], self.ethtool[rail], ethtool_at, ethtool_slots, ethtool_values)
            if optics is not None:
                netdevs[port[9]] = {"optics_text": optics[rail]}
            if self.qp_counts[rail] != last.qp_counts[rail]:
                qp_slots.append(rail)
        slots += ethtool_slots
        values += ethtool_values
        slots.extend(qp_at + rail for rail in qp_slots)
        values.extend(self.qp_counts[rail] for rail in qp_slots)
        gpu_at = qp_at + len(self.heads)
        for gpu, before_gpu in zip(self.gpus, last.gpus, strict=True):
            if gpu != before_gpu:
                moved = list(compress(range(3, len(gpu)), map(ne, before_gpu[3:], gpu[3:])))
                slots.extend(gpu_at + field - 3 for field in moved)
                values.extend(map(gpu.__getitem__, moved))
            gpu_at += len(gpu) - 3
        if slots:  # the agent's packed_moved: every simulated number fits
            line["packed"] = b64encode(struct.pack(f"<{len(slots)}I{len(values)}d", *slots, *values)).decode()
        if netdevs:
            line["netdevs"] = netdevs
        return line


def _moved(before: dict[str, int], after: dict[str, int], at: int, slots: list[int], values: list[Any]) -> int:
    """The slots (from ``at``, one per counter) and values of the counters of ``after`` whose value differs
    from ``before`` (same names, same order), appended; returns the slot after the table's last."""
    flags = list(map(ne, before.values(), after.values()))
    slots.extend(compress(range(at, at + len(after)), flags))
    values.extend(compress(after.values(), flags))
    return at + len(after)
