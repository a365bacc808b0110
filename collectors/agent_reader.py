"""Decode the node agent's JSON lines (``fleet-agent/2``, docs/agent-schema.md) into typed values.

``decode_agent_line`` turns one line into an ``AgentLine`` or raises
``AgentLineError`` with a reason that names the field (callers mark the host
UNPARSABLE with it). ``host_sample`` turns an ``AgentLine`` into the
``HostSample`` the store keeps, with the metric names of ``fleet.fabric.samples``:
``tx_bytes = port_xmit_data x 4`` (the counter counts 4-byte words), netdev
counters filed under the RDMA device and port of their netdev, GPUs as ``gpuN``.
Unknown keys are ignored (a newer agent may add some); a different major
schema is refused.

``AgentStream`` reads one stream of the agent run with ``--changed-only``:
a full line is decoded as above, a changed-only line's ``packed`` numbers
(by slot, numbered in the last full line) are put in place in a copy of the
values of the line before it, in a few numpy calls whatever their number.
"""

from __future__ import annotations

import binascii
import functools
import json
import math
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np
import orjson

from fleet.collectors.node_script import NODE_MIN_PYTHON, node_script_source
from fleet.fabric.samples import HostSample, PackedValues, SeriesKey, SeriesLayout, SeriesLayouts

SCHEMA_PREFIX = "fleet-agent/"
SCHEMA_MAJOR = 2
SCHEMA = f"{SCHEMA_PREFIX}{SCHEMA_MAJOR}"

class PortCounter(NamedTuple):
    """What fleet keeps of a sysfs ``counters/`` file."""

    metric: str
    factor: int
    """From the file's unit to the metric's (``port_xmit_data`` counts 4-byte words)."""


PORT_COUNTERS: Mapping[str, PortCounter] = MappingProxyType({
    "port_xmit_data": PortCounter("tx_bytes", 4),
    "port_rcv_data": PortCounter("rx_bytes", 4),
    "port_xmit_packets": PortCounter("tx_packets", 1),
    "port_rcv_packets": PortCounter("rx_packets", 1),
    **{name: PortCounter(name, 1) for name in (
        "unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets",
        "port_xmit_wait", "symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
        "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
        "port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
        "excessive_buffer_overrun_errors", "VL15_dropped",
    )},
})
"""sysfs ``counters/`` file -> what fleet keeps of it."""

HW_COUNTERS: frozenset[str] = frozenset({
    "out_of_buffer", "out_of_sequence", "packet_seq_err", "implied_nak_seq_err", "local_ack_timeout_err",
    "rnr_nak_retry_err", "duplicate_request", "req_cqe_error", "resp_cqe_error", "req_cqe_flush_error",
    "resp_cqe_flush_error", "roce_adp_retrans", "roce_slow_restart", "rx_icrc_encapsulated",
    "np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "rp_cnp_ignored",
})
"""sysfs ``hw_counters/`` files kept as metrics of the same name."""

ETHTOOL_COUNTERS: frozenset[str] = frozenset({
    "rx_prio3_pause", "tx_prio3_pause", "rx_prio3_pause_duration", "tx_prio3_pause_duration",
    "rx_bits_phy", "rx_corrected_bits_phy", "rx_discards_phy", "tx_discards_phy", "rx_prio3_discards",
    "rx_pcs_symbol_err_phy", "rx_crc_errors_phy", "link_down_events_phy", "tx_pause_storm_warning_events",
    "tx_pause_storm_error_events", "carrier_changes",
})
"""``ethtool -S`` counters kept (RoCE uses priority 3), and ``carrier_changes``, which the agent reads from
the netdev's sysfs and sends among them; the netdev's own rx/tx_packets are not kept."""

GPU_FIELDS: tuple[str, ...] = (
    "util_pct", "mem_used_bytes", "mem_total_bytes", "temp_c", "power_w", "sm_clock_mhz",
    "throttle_reasons", "ecc_volatile_uncorrected", "ecc_aggregate_uncorrected", "ecc_volatile_corrected",
    "retired_pages", "pcie_replay", "xid_last", "xid_count", "nvlink_crc_errors", "nvlink_replay_errors",
    "nvlink_recovery_errors",
)
"""GPU fields of the schema; the metric is ``gpu_<field>``."""


class AgentLineError(ValueError):
    """A line that is not a usable ``fleet-agent/2`` line; the message says why."""


@dataclass(frozen=True, slots=True)
class AgentPort:
    device: str
    port: int
    state: str
    state_code: int | None
    phys_state: str
    phys_state_code: int | None
    rate: str
    rate_gbps: float | None
    link_layer: str
    netdev: str
    counters: Mapping[str, int]
    """Raw sysfs values: ``port_xmit_data`` in 4-byte words."""
    hw_counters: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class AgentNetdev:
    name: str
    ethtool: Mapping[str, int]
    optics_text: str | None
    """Raw ``ethtool -m`` output, on every K-th line only."""


@dataclass(frozen=True, slots=True)
class AgentGpu:
    """One GPU; a field NVML does not support is None; ``error`` set when the GPU could not be read."""

    index: int
    name: str | None
    uuid: str | None
    values: Mapping[str, float | None]
    """``GPU_FIELDS`` -> value (units in the names)."""
    error: str = ""


@dataclass(frozen=True, slots=True)
class AgentLine:
    schema: str
    host: str
    ts: float
    seq: int
    interval_s: float
    ports: tuple[AgentPort, ...]
    netdevs: Mapping[str, AgentNetdev]
    qp_count: Mapping[str, int] | None
    """None: the node has no ``rdma`` tool."""
    gpus: tuple[AgentGpu, ...]
    gpu_error: str
    errors: tuple[str, ...]


AGENT_MIN_PYTHON = NODE_MIN_PYTHON
"""The oldest node python3 the agent source from ``agent_source()`` runs on (RHEL 8's)."""


@functools.cache
def agent_source() -> str:
    """The agent as sent with ``python3 -u -c``: collectors/agent.py without annotations and docstrings.

    Stripped so that python3 >= 3.6 runs it (``AGENT_MIN_PYTHON``) and so that
    the command line each stream starts with is about half as long.
    """
    return node_script_source("agent.py")


# --- decoding -----------------------------------------------------------------------


def _need(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in obj:
        raise AgentLineError(f"{where}{key}: missing")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise AgentLineError(f"{where}{key}: expected {_kind_name(kind)}, got {type(value).__name__}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def _optional_number(obj: Mapping[str, Any], key: str, where: str) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise AgentLineError(f"{where}{key}: expected a number or null, got {value!r}")
    return value


_INT_ONLY = frozenset({int})
_NUMBER_KINDS = frozenset({int, float, type(None)})


def _int_map(obj: Any, where: str) -> dict[str, int]:
    """``obj`` when it is an object of integers (bools refused); checked at C speed,
    since a node's line carries a few thousand counters every second."""
    if not isinstance(obj, dict):
        raise AgentLineError(f"{where}: expected an object")
    if not _INT_ONLY.issuperset(map(type, obj.values())):
        for key, value in obj.items():
            if type(value) is not int:
                raise AgentLineError(f"{where}.{key}: expected an integer, got {value!r}")
    return obj


def _port(raw: Any, where: str) -> AgentPort:
    if not isinstance(raw, dict):
        raise AgentLineError(f"{where}: expected an object")
    code = _optional_number(raw, "state_code", where + ".")
    phys = _optional_number(raw, "phys_state_code", where + ".")
    return AgentPort(
        device=_need(raw, "device", str, where + "."),
        port=_need(raw, "port", int, where + "."),
        state=str(raw.get("state") or ""),
        state_code=int(code) if code is not None else None,
        phys_state=str(raw.get("phys_state") or ""),
        phys_state_code=int(phys) if phys is not None else None,
        rate=str(raw.get("rate") or ""),
        rate_gbps=_optional_number(raw, "rate_gbps", where + "."),
        link_layer=str(raw.get("link_layer") or ""),
        netdev=str(raw.get("netdev") or ""),
        counters=_int_map(raw.get("counters", {}), where + ".counters"),
        hw_counters=_int_map(raw.get("hw_counters", {}), where + ".hw_counters"),
    )


def _gpu(raw: Any, where: str) -> AgentGpu:
    if not isinstance(raw, dict):
        raise AgentLineError(f"{where}: expected an object")
    get = raw.get
    values = {name: get(name) for name in GPU_FIELDS}
    kinds = set(map(type, values.values()))
    if not kinds <= _NUMBER_KINDS or (float in kinds and not all(
            math.isfinite(v) for v in values.values() if type(v) is float)):
        values = {name: _optional_number(raw, name, where + ".") for name in GPU_FIELDS}
    name, uuid = raw.get("name"), raw.get("uuid")
    return AgentGpu(
        index=_need(raw, "index", int, where + "."),
        name=name if isinstance(name, str) else None,
        uuid=uuid if isinstance(uuid, str) else None,
        values=values,
        error=str(raw.get("error") or ""),
    )


def decode_agent_line(text: str | bytes) -> AgentLine:
    """One agent line -> ``AgentLine``; ``AgentLineError`` (reason names the field) otherwise."""
    raw = _load(text)
    if raw.get("changed_only") is True:
        raise AgentLineError("a changed-only line: it needs the line before it (read streams with AgentStream)")
    return _decode(raw)


def _load(text: str | bytes) -> dict[str, Any]:
    """The JSON object of one line, of a schema this fleet reads.

    orjson decodes a line in less than half the time of ``json`` (a thousand lines a
    second). What it refuses (NaN, lone surrogates, numbers beyond a double) is read
    again by ``json``, which also words the error of a line that is not JSON at all.
    It reads integers beyond 64 bits as floats: no counter is that wide, and the
    checks below then refuse the value as not an integer.
    """
    try:
        raw = orjson.loads(text)
    except orjson.JSONDecodeError:
        try:
            raw = json.loads(text)
        except ValueError as exc:
            raise AgentLineError(f"not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise AgentLineError(f"expected a JSON object, got {type(raw).__name__}")
    schema = raw.get("schema")
    if schema == SCHEMA:  # every line of this fleet's own agent: the checks below would pass
        return raw
    if not isinstance(schema, str) or not schema.startswith(SCHEMA_PREFIX):
        raise AgentLineError(f"not a fleet agent line (schema {schema!r})")
    major = schema[len(SCHEMA_PREFIX):].split(".", 1)[0]
    if major != str(SCHEMA_MAJOR):
        raise AgentLineError(
            f"schema {schema} is not supported: this fleet reads {SCHEMA_PREFIX}{SCHEMA_MAJOR} "
            "(update fleet, or run the agent that ships with it)"
        )
    return raw


def _decode(raw: dict[str, Any]) -> AgentLine:
    schema = raw["schema"]
    ts = _need(raw, "ts", (int, float), "")
    ports_raw = _need(raw, "ports", list, "")
    netdevs_raw = raw.get("netdevs", {})
    if not isinstance(netdevs_raw, dict):
        raise AgentLineError("netdevs: expected an object")
    netdevs = {}
    for name, entry in netdevs_raw.items():
        if not isinstance(entry, dict):
            raise AgentLineError(f"netdevs.{name}: expected an object")
        optics = entry.get("optics_text")
        netdevs[name] = AgentNetdev(name, _int_map(entry.get("ethtool", {}), f"netdevs.{name}.ethtool"),
                                    optics if isinstance(optics, str) else None)
    qp_raw = raw.get("qp_count")
    gpus_raw = raw.get("gpus", [])
    if not isinstance(gpus_raw, list):
        raise AgentLineError("gpus: expected a list")
    errors = raw.get("errors", [])
    return AgentLine(
        schema=schema,
        host=_need(raw, "host", str, ""),
        ts=float(ts),
        seq=_need(raw, "seq", int, ""),
        interval_s=float(_need(raw, "interval_s", (int, float), "")),
        ports=tuple(_port(port, f"ports[{index}]") for index, port in enumerate(ports_raw)),
        netdevs=netdevs,
        qp_count=_int_map(qp_raw, "qp_count") if qp_raw is not None else None,
        gpus=tuple(_gpu(gpu, f"gpus[{index}]") for index, gpu in enumerate(gpus_raw)),
        gpu_error=str(raw.get("gpu_error") or ""),
        errors=tuple(str(error) for error in errors) if isinstance(errors, list) else (),
    )


# --- the keys of values -----------------------------------------------------------------


class Kept(NamedTuple):
    """Where fleet files a number the agent sends: its series key and the multiplier to its unit."""

    key: SeriesKey
    factor: int


class NetdevOwner(NamedTuple):
    """The RDMA port a netdev belongs to (from the port's ``netdev``)."""

    device: str
    port: str
    """As the series keys have it (``PortKeys.port``)."""


class PortKeys(NamedTuple):
    """The keys of one port's values, by the name the agent sends each under."""

    port: str
    counters: Mapping[str, Kept]
    hw_counters: Mapping[str, Kept]
    gauges: Mapping[str, SeriesKey]
    """``state_code``, ``phys_state_code``, ``rate_gbps``."""


_PORT_GAUGES: Mapping[str, str] = MappingProxyType(
    {"state_code": "port_state", "phys_state_code": "phys_state", "rate_gbps": "rate_gbps"})


class AgentKeys:
    """The keys of values by what the agent sends them under, for every stream of one collector.

    Every node of a fleet has the same few devices (mlx5_0.., gpu0..), so a
    thousand nodes' values share one set of key tuples, and their samples one
    layout (``layouts``): a collector keeps ~800 keys a node shape, not ~800 a node.
    Holds ``most`` tables of each kind; beyond that (a garbled stream inventing
    devices) a table is built for each use.
    """

    def __init__(self, layouts: SeriesLayouts | None = None, most: int = 4096) -> None:
        self.layouts = layouts if layouts is not None else SeriesLayouts()
        self.most = most
        self._ports: dict[tuple[str, int], PortKeys] = {}
        self._ethtool: dict[NetdevOwner, Mapping[str, Kept]] = {}
        self._gpus: dict[int, Mapping[str, Kept]] = {}
        self._slot_tables: dict[tuple[SeriesLayout, tuple[Kept | None, ...]], SlotTable] = {}

    def port(self, device: str, port: int) -> PortKeys:
        keys = self._ports.get((device, port))
        if keys is None:
            name = str(port)
            keys = PortKeys(
                name,
                {file: Kept((counter.metric, device, name), counter.factor) for file, counter in PORT_COUNTERS.items()},
                {file: Kept((file, device, name), 1) for file in HW_COUNTERS},
                {field: (metric, device, name) for field, metric in _PORT_GAUGES.items()})
            if len(self._ports) < self.most:
                self._ports[(device, port)] = keys
        return keys

    def ethtool(self, owner: NetdevOwner) -> Mapping[str, Kept]:
        """The kept ethtool counters of the netdev of RDMA ``owner`` (device, port), with their keys."""
        keys = self._ethtool.get(owner)
        if keys is None:
            keys = {counter: Kept((counter, *owner), 1) for counter in ETHTOOL_COUNTERS}
            if len(self._ethtool) < self.most:
                self._ethtool[owner] = keys
        return keys

    def slot_table(self, layout: SeriesLayout, kept: tuple[Kept | None, ...]) -> SlotTable:
        """The slot table of full lines of ``layout`` whose slots hold ``kept``: one for every node of
        that shape, so that ``put_moved`` puts their numbers in place together."""
        table = self._slot_tables.get((layout, kept))
        if table is None:
            index = layout.index
            table = SlotTable(layout,
                              np.array([-1 if entry is None else index[entry.key] for entry in kept], dtype=np.intp),
                              np.array([0 if entry is None else entry.factor for entry in kept], dtype=np.float64))
            if len(self._slot_tables) < self.most:
                self._slot_tables[(layout, kept)] = table
        return table

    def gpu(self, index: int) -> Mapping[str, Kept]:
        keys = self._gpus.get(index)
        if keys is None:
            keys = {field: Kept((f"gpu_{field}", f"gpu{index}", ""), 1) for field in GPU_FIELDS}
            if len(self._gpus) < self.most:
                self._gpus[index] = keys
        return keys


# --- samples ------------------------------------------------------------------------

ReadOptics = Callable[[str], Mapping[tuple[str, str], float]]
"""``ethtool -m`` text -> ``{(metric, port): value}`` with optics metrics of
``fleet.fabric.samples`` (``("optics_rx_power_dbm", "L0")``, ``("optics_temp_c", "")``):
``fleet.collectors.optics.OpticsReader``."""


def host_sample(line: AgentLine, host: str | None = None, optics: ReadOptics | None = None,
                keys: AgentKeys | None = None) -> HostSample:
    """The store's sample of one agent line (``host`` overrides the node's own hostname).

    ``optics`` reads the ``ethtool -m`` text when a line carries it; the
    values are filed under the RDMA device of that netdev. ``keys``: a
    collector's, shared by its nodes.
    """
    owners: dict[str, NetdevOwner] = {}
    values = _line_values(line, keys if keys is not None else AgentKeys(), owners)
    if optics is not None:
        for device, text in _optics_texts(line, owners):
            values.update(_readings(optics, text, device))
    return HostSample(host or line.host, line.ts, values)


def _line_values(line: AgentLine, keys: AgentKeys, netdev_owner: dict[str, NetdevOwner]) -> dict[SeriesKey, float]:
    """Every value of ``line`` but optics; fills ``netdev_owner`` (netdev -> RDMA device and port)."""
    values: dict[SeriesKey, float] = {}
    for port in line.ports:
        port_keys = keys.port(port.device, port.port)
        get = port_keys.counters.get
        for name, count in port.counters.items():
            kept = get(name)
            if kept is not None:
                values[kept.key] = float(count * kept.factor)
        get = port_keys.hw_counters.get
        for name, count in port.hw_counters.items():
            kept = get(name)
            if kept is not None:
                values[kept.key] = float(count)
        gauges = port_keys.gauges
        if port.state_code is not None:
            values[gauges["state_code"]] = float(port.state_code)
        if port.phys_state_code is not None:
            values[gauges["phys_state_code"]] = float(port.phys_state_code)
        if port.rate_gbps is not None:
            values[gauges["rate_gbps"]] = float(port.rate_gbps)
        if port.netdev:
            netdev_owner.setdefault(port.netdev, NetdevOwner(port.device, port_keys.port))
    for name, netdev in line.netdevs.items():
        owner = netdev_owner.get(name)
        if owner is None:
            continue
        ethtool = netdev.ethtool  # a few hundred counters, of which fleet keeps 15: look those up
        for counter, kept in keys.ethtool(owner).items():
            reading = ethtool.get(counter)
            if reading is not None:
                values[kept.key] = float(reading)
    for device, count in (line.qp_count or {}).items():
        values[("qp_count", device, "")] = float(count)
    for gpu in line.gpus:
        gpu_keys = keys.gpu(gpu.index)
        for field, gauge in gpu.values.items():
            if gauge is not None:
                values[gpu_keys[field].key] = float(gauge)
    return values


def _optics_texts(line: AgentLine, netdev_owner: Mapping[str, NetdevOwner]) -> list[tuple[str, str]]:
    """(RDMA device, ``ethtool -m`` text) of each netdev of ``line`` with an owner that carries one."""
    return [(netdev_owner[name].device, netdev.optics_text) for name, netdev in line.netdevs.items()
            if netdev.optics_text is not None and name in netdev_owner]


def _readings(optics: ReadOptics, text: str, device: str) -> dict[SeriesKey, float]:
    return {(metric, device, lane): float(reading) for (metric, lane), reading in optics(text).items()}


# --- slots ------------------------------------------------------------------------------

_NUMBER_TYPES = frozenset({int, float})
_VALUE_MAX = 1e300
"""Above any counter (2^64 is 1.8e19) and below what a multiplier could take past a double's range."""
_TOO_LARGE = "a number too large for a float (no counter is that wide)"


@dataclass(frozen=True, slots=True, eq=False)
class SlotTable:
    """The slots of a full line (docs/agent-schema.md, ``fleet.collectors.agent.slot_paths``), by
    which a changed-only line sends its numbers: where each goes in the values of a layout. Shared
    by the streams of nodes of one shape (``AgentKeys.slot_table``)."""

    layout: SeriesLayout
    places: np.ndarray[Any, np.dtype[np.intp]]
    """Each slot's place in ``layout``; -1 for a number fleet does not keep."""
    factors: np.ndarray[Any, np.dtype[np.float64]]
    """Each slot's multiplier to its metric's unit."""


def _slots_kept(raw: dict[str, Any], owners: Mapping[str, NetdevOwner], keys: AgentKeys) -> tuple[Kept | None, ...]:
    """What fleet keeps of each slot of a full line (``raw``, already decoded without error), by the
    agent's rule: every number under ports' ``counters`` and ``hw_counters``, netdevs' ``ethtool``,
    ``qp_count`` and GPUs (but ``index``), in the line's order; None for a number it does not keep."""
    kept: list[Kept | None] = []
    for port in raw["ports"]:
        port_keys = keys.port(port["device"], port["port"])
        kept.extend(map(port_keys.counters.get, port.get("counters", {})))
        kept.extend(map(port_keys.hw_counters.get, port.get("hw_counters", {})))
    for netdev, entry in raw.get("netdevs", {}).items():
        owner = owners.get(netdev)
        ethtool = keys.ethtool(owner) if owner is not None else {}
        kept.extend(map(ethtool.get, entry.get("ethtool", {})))
    kept.extend(Kept(("qp_count", device, ""), 1) for device in raw.get("qp_count") or {})
    for gpu in raw.get("gpus", []):
        fields = keys.gpu(gpu["index"])
        kept.extend(fields.get(field) for field, value in gpu.items()
                    if field != "index" and type(value) in _NUMBER_TYPES)
    return tuple(kept)


@dataclass(frozen=True, slots=True)
class MovedNumbers:
    """A changed-only line's numbers by slot, checked but not yet in its values: ``put_moved`` puts
    them there, with those of other lines."""

    table: SlotTable
    before: array[float]
    """The values of the line before (in place once the lines before are)."""
    values: array[float]
    """This line's values: empty until ``put_moved``."""
    slots: np.ndarray[Any, np.dtype[np.uint32]]
    numbers: np.ndarray[Any, np.dtype[np.float64]]


def put_moved(lines: Sequence[MovedNumbers]) -> None:
    """Each line's values: the line before's, with its numbers at their slots' places (times their
    multipliers; the numbers of what fleet does not keep skipped). The lines of one slot table are
    put together, in a handful of numpy calls whatever their number. A line's line before must be
    in place first (``put_moved`` of an earlier call, or a full line)."""
    tables: dict[SlotTable, list[MovedNumbers]] = {}
    for line in lines:
        tables.setdefault(line.table, []).append(line)
    for table, moved in tables.items():
        width = len(table.layout.keys)
        joined = bytearray().join([line.before for line in moved])  # the lines before, one row each
        rows = np.frombuffer(joined, np.float64).reshape(len(moved), width)
        slots = np.concatenate([line.slots for line in moved])
        places = table.places[slots]
        numbers = np.concatenate([line.numbers for line in moved]) * table.factors[slots]
        line_of = np.repeat(np.arange(len(moved)), [len(line.slots) for line in moved])
        if places.size and places.min() < 0:
            kept = places >= 0
            places, numbers, line_of = places[kept], numbers[kept], line_of[kept]
        rows[line_of, places] = numbers
        data, size = memoryview(joined), width * 8
        for at, line in enumerate(moved):
            line.values.frombytes(data[at * size:(at + 1) * size])


_NO_SLOTS: np.ndarray[Any, np.dtype[np.uint32]] = np.zeros(0, dtype=np.uint32)
_NO_NUMBERS: np.ndarray[Any, np.dtype[np.float64]] = np.zeros(0, dtype=np.float64)
_NO_SLOTS.flags.writeable = _NO_NUMBERS.flags.writeable = False


def _checked(packed: Any, slot_count: int) -> tuple[np.ndarray[Any, np.dtype[np.uint32]],
                                                    np.ndarray[Any, np.dtype[np.float64]]]:
    """``packed`` (docs/agent-schema.md; None: no number moved) as its slots and numbers, each slot
    one of the last full line's ``slot_count`` and each number finite and under 1e300 (no counter
    is near that, and no multiplier takes it past a double). ``AgentLineError`` names what is wrong."""
    if packed is None:
        return _NO_SLOTS, _NO_NUMBERS
    if type(packed) is not str:
        raise AgentLineError(f"packed: expected a string, got {type(packed).__name__}")
    try:
        data = binascii.a2b_base64(packed, strict_mode=True)
    except (binascii.Error, ValueError):
        raise AgentLineError("packed: not base64") from None
    if len(data) % 12:
        raise AgentLineError(f"packed: {len(data)} bytes, not 12 per number (a 4-byte slot and an 8-byte value)")
    count = len(data) // 12
    slots, numbers = np.frombuffer(data, "<u4", count), np.frombuffer(data, "<f8", count, 4 * count)
    if count and slots.max() >= slot_count:
        bad = int(slots[slots >= slot_count][0])
        raise AgentLineError(f"packed: slot {bad} is not in the last full line ({slot_count} slots)")
    if count and not np.abs(numbers).max() < _VALUE_MAX:  # NaN and inf too
        worst = float(numbers[~(np.abs(numbers) < _VALUE_MAX)][0])
        raise AgentLineError(f"packed: expected finite numbers under 1e300, got {worst!r}")
    return slots, numbers


# --- streams ----------------------------------------------------------------------------

_KEYED = ("ports", "gpus", "qp_count", "slots", "values")
"""What a changed-only line of ``fleet-agent/2`` never carries: its numbers come in ``packed`` only,
and anything else that changes makes the line a full one."""


@dataclass(frozen=True, slots=True)
class StreamSample:
    """One line of a stream as the store's sample."""

    sample: HostSample
    """Every value but optics as of this line (``PackedValues`` of the last full line's layout)."""
    optics: Mapping[SeriesKey, float]
    """The optics readings of this line (empty on the lines that read none): gauges that take no rate."""
    netdev_owner: Mapping[str, NetdevOwner] | None
    """netdev -> (RDMA device, port) from a full line; None on a changed-only line (unchanged)."""
    moved: MovedNumbers | None = None
    """A changed-only line's numbers, which ``put_moved`` must put in ``sample`` before it is used."""


_NO_OPTICS: Mapping[SeriesKey, float] = MappingProxyType({})


class _Readings(NamedTuple):
    """A module's ``ethtool -m`` text and what it read as."""

    text: str
    values: dict[SeriesKey, float]


class AgentStream:
    """The lines of one agent stream (``--changed-only`` or not) into ``StreamSample``s.

    Holds the values of the last line; a changed-only line must follow the line
    before it (``seq`` + 1) of the same stream, else it is refused until the next
    full line. Start a new ``AgentStream`` for each stream: the agent starts again
    with a full line. ``keys``: the collector's, shared by every stream.
    """

    def __init__(self, host: str | None = None, optics: ReadOptics | None = None, keys: AgentKeys | None = None) -> None:
        self._host = host
        self._optics = optics
        self._keys = keys if keys is not None else AgentKeys()
        self._layout: SeriesLayout | None = None
        """The keys of the last line's values; None until a full line (or after a bad line)."""
        self._data: array[float] = array("d")
        """The last line's values in ``_layout``'s order (handed out in its sample: never written to)."""
        self._seq = 0
        self._slots: SlotTable | None = None
        """The slots of the last full line, which a changed-only line's ``packed`` numbers."""
        self._owners: dict[str, NetdevOwner] = {}
        """netdev -> its RDMA (device, port), of the last full line."""
        self._last_optics: dict[str, _Readings] = {}
        """RDMA device -> its module's last readings: an unchanged text is not read again."""

    def read(self, text: str | bytes) -> StreamSample:
        """One line; ``AgentLineError`` (reason names the field) for a line that cannot be used."""
        try:
            return self._read(text)
        except OverflowError:  # an integer of hundreds of digits: no field is checked for that
            self._layout = None
            raise AgentLineError(_TOO_LARGE) from None

    def _read(self, text: str | bytes) -> StreamSample:
        raw = _load(text)
        if raw.get("changed_only") is not True:
            self._layout = None  # until this full line is known to be good
            return self._full(_decode(raw), raw)
        layout = self._layout
        self._layout = None  # a line that fails half-way leaves no state to build on
        seq = raw.get("seq")
        if type(seq) is not int:
            seq = _need(raw, "seq", int, "")
        if layout is None:
            raise AgentLineError(f"changed-only line {seq} without the full line before it")
        if seq != self._seq + 1:
            raise AgentLineError(f"changed-only line {seq} does not follow line {self._seq}")
        ts = raw.get("ts")
        ts = ts if type(ts) is float else float(_need(raw, "ts", (int, float), ""))
        host = self._host or _need(raw, "host", str, "")
        keyed = [key for key in _KEYED if key in raw]
        if keyed:
            raise AgentLineError(f"{', '.join(keyed)}: a changed-only line carries its numbers in packed only")
        table = self._slots
        assert table is not None, "a full line came before"
        slots, numbers = _checked(raw.get("packed"), len(table.places))
        optics = self._changed_optics(raw.get("netdevs"))
        moved = MovedNumbers(table, self._data, array("d"), slots, numbers)
        self._layout, self._data, self._seq = layout, moved.values, seq
        return StreamSample(HostSample(host, ts, PackedValues(layout, moved.values)), optics, None, moved)

    def _full(self, line: AgentLine, raw: dict[str, Any]) -> StreamSample:
        owners: dict[str, NetdevOwner] = {}
        values = _line_values(line, self._keys, owners)
        layout = self._keys.layouts.of(tuple(values))
        self._slots = self._keys.slot_table(layout, _slots_kept(raw, owners, self._keys))
        self._owners = owners
        optics: dict[SeriesKey, float] = {}
        for device, text in _optics_texts(line, owners):
            optics.update(self._optics_of(device, text))
        self._layout, self._data, self._seq = layout, array("d", values.values()), line.seq
        return StreamSample(HostSample(self._host or line.host, line.ts, PackedValues(layout, self._data)),
                            optics or _NO_OPTICS, owners)

    def _changed_optics(self, netdevs: Any) -> Mapping[SeriesKey, float]:
        """The readings of a changed-only line's ``netdevs`` (each an ``optics_text`` only)."""
        if netdevs is None:
            return _NO_OPTICS
        if not isinstance(netdevs, dict):
            raise AgentLineError("netdevs: expected an object")
        optics: dict[SeriesKey, float] = {}
        for netdev, entry in netdevs.items():
            if not isinstance(entry, dict):
                raise AgentLineError(f"netdevs.{netdev}: expected an object")
            if "ethtool" in entry:
                raise AgentLineError(f"netdevs.{netdev}.ethtool: a changed-only line carries its numbers in packed only")
            text, owner = entry.get("optics_text"), self._owners.get(netdev)
            if isinstance(text, str) and owner is not None:
                optics.update(self._optics_of(owner.device, text))
        return optics

    def _optics_of(self, device: str, text: str) -> dict[SeriesKey, float]:
        if self._optics is None:
            return {}
        last = self._last_optics.get(device)
        if last is not None and last.text == text:
            return last.values
        readings = _readings(self._optics, text, device)
        self._last_optics[device] = _Readings(text, readings)
        return readings
