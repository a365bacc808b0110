"""Decode the node agent's JSON lines (``fleet-agent/1``, docs/agent-schema.md) into typed values.

``decode_agent_line`` turns one line into an ``AgentLine`` or raises
``AgentLineError`` with a reason that names the field (callers mark the host
UNPARSABLE with it). ``host_sample`` turns an ``AgentLine`` into the
``HostSample`` the store keeps, with the metric names of ``fleet.fabric.samples``:
``tx_bytes = port_xmit_data x 4`` (the counter counts 4-byte words), netdev
counters filed under the RDMA device and port of their netdev, GPUs as ``gpuN``.
Unknown keys are ignored (a newer agent may add some); a different major
schema is refused.

``AgentStream`` reads one stream of the agent run with ``--changed-only``:
a full line is decoded as above, a changed-only line is applied to the values
of the line before it, so its cost follows what changed, not the node's size;
its numbers come by slot (numbered in the last full line), put in place with numpy.
"""

from __future__ import annotations

import binascii
import functools
import json
import math
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import orjson

from fleet.collectors.node_script import NODE_MIN_PYTHON, node_script_source
from fleet.fabric.rates_batch import Places
from fleet.fabric.samples import HostSample, PackedValues, SeriesKey, SeriesLayout, layout_of

SCHEMA_PREFIX = "fleet-agent/"
SCHEMA_MAJOR = 1

PORT_COUNTERS: dict[str, tuple[str, int]] = {
    "port_xmit_data": ("tx_bytes", 4),
    "port_rcv_data": ("rx_bytes", 4),
    "port_xmit_packets": ("tx_packets", 1),
    "port_rcv_packets": ("rx_packets", 1),
    **{name: (name, 1) for name in (
        "unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets",
        "port_xmit_wait", "symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
        "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
        "port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
        "excessive_buffer_overrun_errors", "VL15_dropped",
    )},
}
"""sysfs ``counters/`` file -> (metric, multiplier to the metric's unit)."""

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
    "tx_pause_storm_error_events",
})
"""``ethtool -S`` counters kept (RoCE uses priority 3); the netdev's own rx/tx_packets are not."""

GPU_FIELDS: tuple[str, ...] = (
    "util_pct", "mem_used_bytes", "mem_total_bytes", "temp_c", "power_w", "sm_clock_mhz",
    "throttle_reasons", "ecc_volatile_uncorrected", "ecc_aggregate_uncorrected", "ecc_volatile_corrected",
    "retired_pages", "pcie_replay", "xid_last", "xid_count", "nvlink_crc_errors", "nvlink_replay_errors",
    "nvlink_recovery_errors",
)
"""GPU fields of the schema; the metric is ``gpu_<field>``."""
_GPU_METRIC: dict[str, str] = {field: f"gpu_{field}" for field in GPU_FIELDS}


class AgentLineError(ValueError):
    """A line that is not a usable ``fleet-agent/1`` line; the message says why."""


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


_SCHEMA = f"{SCHEMA_PREFIX}{SCHEMA_MAJOR}"


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
    if schema == _SCHEMA:  # every line of this fleet's own agent: the checks below would pass
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


# --- samples ------------------------------------------------------------------------

OpticsReader = Callable[[str], Mapping[tuple[str, str], float]]
"""Raw ``ethtool -m`` text -> ``{(metric, port): value}`` with optics metrics of
``fleet.fabric.samples`` (``("optics_rx_power_dbm", "L0")``, ``("optics_temp_c", "")``)."""


def host_sample(line: AgentLine, host: str | None = None, optics: OpticsReader | None = None) -> HostSample:
    """The store's sample of one agent line (``host`` overrides the node's own hostname).

    ``optics`` parses the raw ``ethtool -m`` text when a line carries it; the
    values are filed under the RDMA device of that netdev.
    """
    return HostSample(host or line.host, line.ts, _line_values(line, optics, {}))


def _line_values(line: AgentLine, optics: OpticsReader | None,
                 netdev_owner: dict[str, tuple[str, str]]) -> dict[SeriesKey, float]:
    """Every value of ``line``; fills ``netdev_owner`` (netdev -> RDMA device and port)."""
    values: dict[SeriesKey, float] = {}
    for port in line.ports:
        keys = _port_keys(port.device, port.port)
        get = keys.counters.get
        for name, value in port.counters.items():
            mapped = get(name)
            if mapped is not None:
                values[mapped[0]] = float(value * mapped[1])
        get = keys.hw_counters.get
        for name, value in port.hw_counters.items():
            hw_entry = get(name)
            if hw_entry is not None:
                values[hw_entry[0]] = float(value)
        gauges = keys.gauges
        if port.state_code is not None:
            values[gauges["state_code"]] = float(port.state_code)
        if port.phys_state_code is not None:
            values[gauges["phys_state_code"]] = float(port.phys_state_code)
        if port.rate_gbps is not None:
            values[gauges["rate_gbps"]] = float(port.rate_gbps)
        if port.netdev:
            netdev_owner.setdefault(port.netdev, (port.device, keys.port))
    for name, netdev in line.netdevs.items():
        owner = netdev_owner.get(name)
        if owner is None:
            continue
        ethtool = netdev.ethtool  # a few hundred counters, of which fleet keeps 13: look those up
        for counter, (key, _) in _ethtool_keys(owner).items():
            count = ethtool.get(counter)
            if count is not None:
                values[key] = float(count)
        if optics is not None and netdev.optics_text is not None:
            for (metric, lane), reading in optics(netdev.optics_text).items():
                values[(metric, owner[0], lane)] = float(reading)
    for device, count in (line.qp_count or {}).items():
        values[("qp_count", device, "")] = float(count)
    for gpu in line.gpus:
        gpu_keys = _gpu_keys(gpu.index)
        for field, gauge in gpu.values.items():
            if gauge is not None:
                values[gpu_keys.get(field) or (f"gpu_{field}", f"gpu{gpu.index}", "")] = float(gauge)
    return values


# --- the keys of values -----------------------------------------------------------------
#
# Every node of a fleet has the same few devices (mlx5_0.., gpu0..), so the tables that
# map what the agent sends to the keys of values are kept once for the whole collector,
# not per stream: a thousand nodes' lines then share one set of key tuples, which stay
# in the CPU's caches from one node's line to the next, and a key set in a node's values
# is found by identity.

_MAX_TABLES = 4096
"""Tables kept per kind; beyond that (a garbled stream) they are built for each use."""


class _PortKeys:
    """The keys of one port's values, by the name the agent sends them under."""

    __slots__ = ("counters", "gauges", "hw_counters", "port")

    def __init__(self, device: str, port: str) -> None:
        self.port = port
        self.counters = {name: ((metric, device, port), factor) for name, (metric, factor) in PORT_COUNTERS.items()}
        self.hw_counters = {name: ((name, device, port), 1) for name in HW_COUNTERS}
        self.gauges = {field: (metric, device, port) for field, metric in _PORT_GAUGES.items()}


_PORT_GAUGES = {"state_code": "port_state", "phys_state_code": "phys_state", "rate_gbps": "rate_gbps"}
_PORT_KEYS: dict[tuple[str, int], _PortKeys] = {}
_ETHTOOL_KEYS: dict[tuple[str, str], dict[str, tuple[SeriesKey, int]]] = {}
_GPU_KEYS: dict[int, dict[str, SeriesKey]] = {}


def _port_keys(device: str, port: int) -> _PortKeys:
    keys = _PORT_KEYS.get((device, port))
    if keys is None:
        keys = _PortKeys(device, str(port))
        if len(_PORT_KEYS) < _MAX_TABLES:
            _PORT_KEYS[(device, port)] = keys
    return keys


def _ethtool_keys(owner: tuple[str, str]) -> dict[str, tuple[SeriesKey, int]]:
    """The kept ethtool counters of the netdev of RDMA ``owner`` (device, port), with their keys."""
    keys = _ETHTOOL_KEYS.get(owner)
    if keys is None:
        keys = {counter: ((counter, *owner), 1) for counter in ETHTOOL_COUNTERS}
        if len(_ETHTOOL_KEYS) < _MAX_TABLES:
            _ETHTOOL_KEYS[owner] = keys
    return keys


def _gpu_keys(index: int) -> dict[str, SeriesKey]:
    keys = _GPU_KEYS.get(index)
    if keys is None:
        keys = {field: (metric, f"gpu{index}", "") for field, metric in _GPU_METRIC.items()}
        if len(_GPU_KEYS) < _MAX_TABLES:
            _GPU_KEYS[index] = keys
    return keys


_Placed = dict[str, tuple[SeriesKey, int, int]]
"""What the agent sends under a name -> (its key, multiplier, its place in a stream's layout, -1
when the layout lacks it): a changed-only line's values go straight to their places."""
_PLACED: dict[tuple[SeriesLayout, object], Any] = {}
"""(layout, what) -> its placed table: shared by every stream of that layout, as the key tables."""


def _placed(layout: SeriesLayout, what: object, table: Mapping[str, tuple[SeriesKey, int]]) -> _Placed:
    placed = _PLACED.get((layout, what))
    if placed is None:
        if len(_PLACED) >= _MAX_TABLES:
            _PLACED.clear()
        index = layout.index
        placed = _PLACED[(layout, what)] = {name: (key, factor, index.get(key, -1))
                                             for name, (key, factor) in table.items()}
    return placed


class _PlacedPort:
    """A port's counter tables placed in one layout, and its gauges' keys (set through ``_set``)."""

    __slots__ = ("counters", "gauges", "hw_counters")

    def __init__(self, layout: SeriesLayout, device: str, port: int) -> None:
        keys = _port_keys(device, port)
        self.counters = _placed(layout, ("counters", device, port), keys.counters)
        self.hw_counters = _placed(layout, ("hw_counters", device, port), keys.hw_counters)
        self.gauges = keys.gauges


def _gpu_table(index: int) -> dict[str, tuple[SeriesKey, int]]:
    return {field: (key, 1) for field, key in _gpu_keys(index).items()}


_NO_LAYOUT = SeriesLayout(())


_MISSING, _SKIPPED = -2, -1
"""A slot's place when the layout lacks its key, and when fleet does not keep what the slot holds
(the lowest of a line's places says whether it has either)."""
_TOO_LARGE = "a number too large for a float (no counter is that wide)"
_SLOT_VALUE_KINDS = frozenset({int, float})
_SLOT_VALUE_MAX = 1e300
"""Above any counter (2^64 is 1.8e19) and below what a multiplier could take past a double's range."""


class _Slots:
    """The slots of a full line (docs/agent-schema.md, ``fleet.collectors.agent.slot_paths``): each one's key
    and multiplier (None: not kept), and their places in the layouts of the streams that use them."""

    __slots__ = ("_all_placed", "_places", "factors", "keys")

    def __init__(self, keys: tuple[tuple[SeriesKey, int] | None, ...]) -> None:
        self.keys = keys
        self.factors = np.array([entry[1] if entry is not None else 0 for entry in keys], dtype=np.float64)
        self._places: dict[SeriesLayout, np.ndarray[Any, np.dtype[np.intp]]] = {}
        self._all_placed: dict[SeriesLayout, bool] = {}

    def all_placed(self, layout: SeriesLayout) -> bool:
        """Whether ``layout`` has the key of every slot fleet keeps (a field that went null and came
        back by slot lacks its key: that line is reshaped, and is not held)."""
        placed = self._all_placed.get(layout)
        if placed is None:
            placed = bool(self.places(layout).min(initial=0) != _MISSING)
        return placed

    def places(self, layout: SeriesLayout) -> np.ndarray[Any, np.dtype[np.intp]]:
        places = self._places.get(layout)
        if places is None:
            if len(self._places) >= 16:  # layouts of reshaped lines: rare, and each is built again
                self._places.clear()
                self._all_placed.clear()
            index = layout.index
            places = self._places[layout] = np.array(
                [index.get(entry[0], _MISSING) if entry is not None else _SKIPPED for entry in self.keys],
                dtype=np.intp)
            self._all_placed[layout] = bool(places.min(initial=0) != _MISSING)
        return places


_SLOTS: dict[tuple[tuple[SeriesKey, int] | None, ...], _Slots] = {}
"""Slot tables by their keys: every node of a shape shares one (and its places per layout)."""
_NO_SLOTS = _Slots(())


def _slots_of(raw: dict[str, Any], owners: Mapping[str, tuple[str, str]]) -> _Slots:
    """The slot table of a full line (``raw``, already decoded without error), by the agent's rule:
    every number under ports' ``counters`` and ``hw_counters``, netdevs' ``ethtool``, ``qp_count``
    and GPUs (but ``index``), in the line's order."""
    keys: list[tuple[SeriesKey, int] | None] = []
    for port in raw["ports"]:
        table = _port_keys(port["device"], port["port"])
        keys.extend(map(table.counters.get, port.get("counters", _NOTHING)))
        keys.extend(map(table.hw_counters.get, port.get("hw_counters", _NOTHING)))
    for netdev, entry in raw.get("netdevs", _NOTHING).items():
        owner = owners.get(netdev)
        kept = _ethtool_keys(owner) if owner is not None else _NOTHING
        keys.extend(map(kept.get, entry.get("ethtool", _NOTHING)))
    keys.extend((("qp_count", device, ""), 1) for device in raw.get("qp_count") or _NOTHING)
    for gpu in raw.get("gpus", _NO_LIST):
        fields = _gpu_keys(gpu["index"])
        keys.extend((fields[field], 1) if field in fields else None for field, value in gpu.items()
                    if field != "index" and type(value) in _SLOT_VALUE_KINDS)
    frozen = tuple(keys)
    slots = _SLOTS.get(frozen)
    if slots is None:
        slots = _Slots(frozen)
        if len(_SLOTS) >= _MAX_TABLES:
            _SLOTS.clear()
        _SLOTS[frozen] = slots
    return slots


# --- changed-only streams -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StreamSample:
    """One line of a stream as the store's sample, and what changed since the line before."""

    sample: HostSample
    """Every value as of this line (optics only on the lines that carry them)."""
    changed_at: tuple[int, ...] | None
    """Where the values that may differ from the previous line's sit in ``sample.values``
    (``PackedValues``); every other value but optics is the previous line's. None: compare
    everything (a full line of new keys, or after a line that was refused)."""
    netdev_owner: Mapping[str, tuple[str, str]] | None
    """netdev -> (RDMA device, port) from a full line; None on a changed-only line (unchanged)."""
    slots: HeldSlots | None = None
    """Values by slot not yet in ``sample`` (``AgentStream.read`` with ``hold_slots``): the sample
    may be used once ``write_slots`` has written them; their places then add to ``changed_at``."""

    @property
    def changed(self) -> tuple[SeriesKey, ...] | None:
        """The keys at ``changed_at``."""
        values = self.sample.values
        if self.changed_at is None or not isinstance(values, PackedValues):
            return None
        return tuple(map(values.layout.keys.__getitem__, self.changed_at))


def _count(value: Any, where: str) -> int:
    if type(value) is not int:
        raise AgentLineError(f"{where}: expected an integer, got {value!r}")
    return value


def _number(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise AgentLineError(f"{where}: expected a number or null, got {value!r}")
    return float(value)


class AgentStream:
    """The lines of one agent stream (``--changed-only`` or not) into ``StreamSample``s.

    Holds the values of the last line; a changed-only line must follow the line
    before it (``seq`` + 1) of the same stream, else it is refused until the next
    full line. Start a new ``AgentStream`` for each stream: the agent starts again
    with a full line.

    A changed-only line costs the collector in proportion to what changed (a few
    hundred values a second per node, on every node): each value's key comes from
    a table of its port, netdev or GPU that every stream shares, and error messages
    are only worded when there is an error.
    """

    def __init__(self, host: str | None = None, optics: OpticsReader | None = None) -> None:
        self._host = host
        self._optics = optics
        self._layout: SeriesLayout | None = None
        """The keys of the last line's values without optics; None until a full line (or after a bad line)."""
        self._data: array[float] = array("d")
        """The last line's values in ``_layout``'s order (handed out in its sample: never written to)."""
        self._more: dict[SeriesKey, float | None] = {}
        """Keys of this line that ``_layout`` lacks, and keys it removes (None)."""
        self._seq = 0
        self._ports: dict[tuple[str, int], _PlacedPort] = {}
        """The (device, port) of the last full line, with their values' keys and places."""
        self._owners: dict[str, tuple[str, str]] = {}
        """netdev -> its RDMA (device, port), of the last full line."""
        self._netdev_keys: dict[str, tuple[str, _Placed]] = {}
        """netdev -> (RDMA device, its ethtool counters' keys and places)."""
        self._gpu_indices: tuple[int, ...] = ()
        """The GPUs of the last full line."""
        self._gpus: dict[int, _Placed] = {}
        """GPU index -> its fields' keys and places, for those GPUs."""
        self._last_optics: dict[str, tuple[str, str, dict[SeriesKey, float]]] = {}
        """netdev -> its last ``ethtool -m`` text and readings: an unchanged text is not parsed again."""
        self._slots = _NO_SLOTS
        """The slots of the last full line, which a changed-only line's ``slots`` number."""

    def read(self, text: str | bytes, *, hold_slots: bool = False) -> StreamSample:
        """One line; ``AgentLineError`` (reason names the field) for a line that cannot be used.

        ``hold_slots``: a changed-only line's ``slots`` and ``values`` may be left to
        ``write_slots``, with other streams' (``StreamSample.slots``); until then the
        sample lacks them, and this stream reads no other line.
        """
        try:
            return self._read(text, hold_slots)
        except OverflowError:  # an integer of hundreds of digits: no field is checked for that
            self._layout = None
            raise AgentLineError(_TOO_LARGE) from None

    def _read(self, text: str | bytes, hold_slots: bool = False) -> StreamSample:
        raw = _load(text)
        if raw.get("changed_only") is not True:
            before = (self._layout, self._data)
            self._layout = None  # until this full line is known to be good
            return self._full(_decode(raw), raw, *before)
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
        changed: list[int] = []
        data = self._data[:]  # the last line's array is in its sample: this line writes a copy
        more = self._more = {}
        optics = self._apply(raw, layout.index, data, changed)
        held = None
        if "packed" in raw:
            if "slots" in raw or "values" in raw:
                raise AgentLineError("packed, slots, values: expected packed or the two lists, not both")
            slot_bytes, value_bytes = _unpacked(raw["packed"])
            if hold_slots and not optics and not more and slot_bytes and self._slots.all_placed(layout):
                held = HeldSlots(self, slot_bytes, value_bytes, layout, data)
            else:
                self._put_slots(np.frombuffer(slot_bytes, "<u4"), np.frombuffer(value_bytes, "<f8"), layout, data,
                                changed)
        elif "slots" in raw or "values" in raw:
            self._apply_slots(raw.get("slots"), raw.get("values"), layout, data, changed)
        reshaped = bool(more)
        if reshaped:  # a key came or went: the line is compared whole
            layout, data = _reshaped(layout, data, more)
            self._place(layout)
        self._layout, self._data, self._seq = layout, data, seq
        host = self._host or _need(raw, "host", str, "")
        values = PackedValues(layout, data)
        with_optics = values.plus(optics) if optics else values
        # Places are places in a PackedValues; readings that clash with a value make a dict.
        placed = not reshaped and isinstance(with_optics, PackedValues)
        return StreamSample(HostSample(host, ts, with_optics), tuple(changed) if placed else None, None, held)

    def _full(self, line: AgentLine, raw: dict[str, Any], before: SeriesLayout | None,
              before_data: array[float]) -> StreamSample:
        """A full line; after a good line of the same keys (``before``, its values ``before_data``:
        the agent's periodic full line) its changed places too, so that its rates cost what
        changed, as a changed-only line's do, rather than a compare of every counter."""
        owners: dict[str, tuple[str, str]] = {}
        line_values = _line_values(line, None, owners)
        self._slots = _slots_of(raw, owners)
        values = PackedValues(layout_of(tuple(line_values)), array("d", line_values.values()))
        self._layout, self._data, self._seq = values.layout, values.data, line.seq
        self._ports = {(port.device, port.port): _PlacedPort(values.layout, port.device, port.port)
                       for port in line.ports}
        self._owners = owners
        self._gpu_indices = tuple(gpu.index for gpu in line.gpus)
        self._place(values.layout)
        optics: dict[SeriesKey, float] = {}
        for name, netdev in line.netdevs.items():
            owner = owners.get(name)
            if owner is not None and netdev.optics_text is not None:
                optics.update(self._optics_of(name, netdev.optics_text, owner[0]))
        with_optics = values.plus(optics)
        changed_at = None
        if before is values.layout and isinstance(with_optics, PackedValues):
            moved = np.frombuffer(before_data, np.float64) != np.frombuffer(values.data, np.float64)
            changed_at = tuple(np.flatnonzero(moved).tolist())
        return StreamSample(HostSample(self._host or line.host, line.ts, with_optics), changed_at, owners)

    def _place(self, layout: SeriesLayout) -> None:
        """The tables of the last full line's ports, netdevs and GPUs placed in ``layout``."""
        self._ports = {place: _PlacedPort(layout, *place) for place in self._ports}
        self._netdev_keys = {netdev: (owner[0], _placed(layout, ("ethtool", owner), _ethtool_keys(owner)))
                             for netdev, owner in self._owners.items()}
        self._gpus = {index: _placed(layout, ("gpu", index), _gpu_table(index)) for index in self._gpu_indices}

    def _optics_of(self, netdev: str, text: str, device: str) -> dict[SeriesKey, float]:
        if self._optics is None:
            return {}
        last = self._last_optics.get(netdev)
        if last is not None and last[0] == text and last[1] == device:
            return last[2]
        readings = {(metric, device, lane): float(reading) for (metric, lane), reading in self._optics(text).items()}
        self._last_optics[netdev] = (text, device, readings)
        return readings

    def _set(self, index: Mapping[SeriesKey, int], data: array[float], key: SeriesKey, value: float | None,
             changed: list[int]) -> None:
        """A new value for ``key``; None removes it (a field became unsupported)."""
        more = self._more
        if value is None:
            if key in index or key in more:
                more[key] = None
            return
        at = index.get(key)
        if at is None or key in more:
            more[key] = value
        else:
            data[at] = value
            changed.append(at)

    def _counts(self, counts: Any, keys: _Placed, data: array[float], changed: list[int], where: str,
                place: object) -> None:
        """Counters of one object (``name: integer``) that map to a key (with its multiplier).

        ``where.format(place)`` names the object in an error. When every value is an
        integer (checked at C speed) the keys' values are set without a check each.
        """
        if not isinstance(counts, dict):
            raise AgentLineError(f"{where.format(place)}: expected an object")
        if not _INT_ONLY.issuperset(map(type, counts.values())):
            for counter, count in counts.items():
                if counter in keys and type(count) is not int:
                    raise AgentLineError(f"{where.format(place)}.{counter}: expected an integer, got {count!r}")
        _put_counts(counts, keys, data, changed.append, self._more)

    def _apply(self, raw: dict[str, Any], index: Mapping[SeriesKey, int], data: array[float],
               changed: list[int]) -> dict[SeriesKey, float]:
        """Apply a changed-only line to ``data`` (``index``: its keys' places) and list the places it
        set in ``changed``; returns the optics it carries.

        Each port, netdev and GPU of the line is an object of a few changed values. One whose
        values are all of the right type (checked at C speed) and that holds no port gauge is
        applied in one tight loop per object; any other goes through ``_port`` or ``_counts``,
        which check each value in the line's order and word the error of the first bad one.
        A key that was not there before, or one removed, goes to ``_more`` (``read`` reshapes).
        """
        ports = raw.get("ports", _NO_LIST)
        if not isinstance(ports, list):
            raise AgentLineError("ports: expected a list")
        port_keys, append, int_only, more = self._ports, changed.append, _INT_ONLY.issuperset, self._more
        for at, port in enumerate(ports):
            if not isinstance(port, dict):
                raise AgentLineError(f"ports[{at}]: expected an object")
            device, number = port.get("device"), port.get("port")
            keys = port_keys.get((device, number)) if isinstance(device, str) and type(number) is int else None
            if keys is None:
                raise AgentLineError(f"ports[{at}]: port {device!r} {number!r} is not in the last full line")
            counts, hw_counts = port.get("counters", _NOTHING), port.get("hw_counters", _NOTHING)
            if not (type(counts) is dict and type(hw_counts) is dict and _PORT_GAUGE_FIELDS.isdisjoint(port)
                    and int_only(map(type, counts.values())) and int_only(map(type, hw_counts.values()))):
                self._port(port, at, keys, index, data, changed)
                continue
            _put_counts(counts, keys.counters, data, append, more)
            _put_counts(hw_counts, keys.hw_counters, data, append, more)
        optics: dict[SeriesKey, float] = {}
        netdev_keys = self._netdev_keys
        for netdev, entry in _items(raw.get("netdevs", _NOTHING), "netdevs"):
            if not isinstance(entry, dict):
                raise AgentLineError(f"netdevs.{netdev}: expected an object")
            owned = netdev_keys.get(netdev)
            if owned is None:
                continue
            ethtool = entry.get("ethtool")
            if ethtool is not None:
                self._counts(ethtool, owned[1], data, changed, "netdevs.{}.ethtool", netdev)
            text = entry.get("optics_text")
            if isinstance(text, str):
                optics.update(self._optics_of(netdev, text, owned[0]))
        for device, count in _items(raw.get("qp_count", _NOTHING), "qp_count"):
            self._set(index, data, ("qp_count", device, ""), float(_count(count, f"qp_count.{device}")), changed)
        gpus = raw.get("gpus", _NO_LIST)
        if not isinstance(gpus, list):
            raise AgentLineError("gpus: expected a list")
        for at, gpu in enumerate(gpus):
            if not isinstance(gpu, dict):
                raise AgentLineError(f"gpus[{at}]: expected an object")
            self._gpu(gpu, at, index, data, changed)
        return optics

    def _apply_slots(self, slots: Any, values: Any, layout: SeriesLayout, data: array[float],
                     changed: list[int]) -> None:
        """Apply a changed-only line's ``slots`` and ``values`` (each value to the key of its slot in the
        last full line) to ``data`` and list the places set in ``changed``.

        Both lists are checked at C speed and the values put in place with numpy, in a handful of calls
        whatever their number: a node sends about a hundred a second this way. (``array`` and
        ``fromiter`` turn the lists into arrays in about half the time ``np.array`` takes.) A slot whose key the
        layout lacks (a field that went null and came back), or a line whose keyed part already changed
        the keys, goes through ``_set`` one value at a time; a slot fleet does not keep is skipped.
        """
        if type(slots) is not list or type(values) is not list or len(slots) != len(values):
            raise AgentLineError("slots, values: expected two lists of the same length")
        if not slots:
            return
        if not _INT_ONLY.issuperset(map(type, slots)) or not _SLOT_VALUE_KINDS.issuperset(map(type, values)):
            for slot, value in zip(slots, values, strict=True):
                if type(slot) is not int:
                    raise AgentLineError(f"slots: expected integers, got {slot!r}")
                if type(value) not in _SLOT_VALUE_KINDS:
                    raise AgentLineError(f"values: slot {slot}: expected a number, got {value!r}")
        try:
            at = np.frombuffer(array("Q", slots), dtype=np.uint64)
        except OverflowError:  # a negative slot
            bad = next(slot for slot in slots if slot < 0)
            raise AgentLineError(f"slots: slot {bad} is not in the last full line ({len(self._slots.keys)} slots)") \
                from None
        # OverflowError beyond a double: read() names it
        self._put_slots(at, np.fromiter(values, np.float64, len(values)), layout, data, changed)

    def _put_slots(self, at: np.ndarray[Any, np.dtype[np.unsignedinteger[Any]]],
                   numbers: np.ndarray[Any, np.dtype[np.float64]], layout: SeriesLayout, data: array[float],
                   changed: list[int]) -> None:
        """Slots and their values as arrays (from the lists, or ``packed``), checked, into ``data``."""
        if not len(at):
            return
        table = self._slots
        if at.max() >= len(table.keys):
            bad = int(at[at >= len(table.keys)][0])
            raise AgentLineError(f"slots: slot {bad} is not in the last full line ({len(table.keys)} slots)")
        places = table.places(layout)[at]
        size = np.abs(numbers)
        if not size.max() < _SLOT_VALUE_MAX:  # NaN and inf too; no multiplier overflows
            worst = float(numbers[~(size < _SLOT_VALUE_MAX)][0])
            raise AgentLineError(f"values: expected finite numbers under 1e300, got {worst!r}")
        numbers = numbers * table.factors[at]
        lowest = places.min()
        if self._more or lowest == _MISSING:
            index = layout.index
            for slot, number in zip(at.tolist(), numbers.tolist(), strict=True):
                entry = table.keys[slot]
                if entry is not None:
                    self._set(index, data, entry[0], number, changed)
            return
        if lowest == _SKIPPED:
            kept = places >= 0
            places, numbers = places[kept], numbers[kept]
        np.frombuffer(data, dtype=np.float64)[places] = numbers
        changed.extend(places.tolist())

    def _port(self, port: dict[str, Any], at: int, keys: _PlacedPort, index: Mapping[SeriesKey, int],
              data: array[float], changed: list[int]) -> None:
        """The changed fields of one port (``ports[at]``), each checked in the line's order."""
        for field, value in port.items():
            if field == "counters":
                self._counts(value, keys.counters, data, changed, "ports[{}].counters", at)
            elif field == "hw_counters":
                self._counts(value, keys.hw_counters, data, changed, "ports[{}].hw_counters", at)
            elif field in keys.gauges:
                gauge = _number(value, f"ports[{at}].{field}")
                if gauge is not None and field != "rate_gbps":  # state codes: integers, as decoded whole
                    gauge = float(int(gauge))
                self._set(index, data, keys.gauges[field], gauge, changed)

    def _gpu(self, gpu: dict[str, Any], at: int, index: Mapping[SeriesKey, int], data: array[float],
             changed: list[int]) -> None:
        """The changed fields of one GPU (``gpus[at]``); a null removes the value."""
        gpu_index = gpu.get("index")
        if type(gpu_index) is not int:
            gpu_index = _need(gpu, "index", int, f"gpus[{at}].")
        fields = self._gpus.get(gpu_index)
        if fields is None:  # a GPU the last full line lacked: its fields go through _set
            fields = _placed(_NO_LAYOUT, ("gpu", gpu_index), _gpu_table(gpu_index))
        get, more = fields.get, self._more
        for field, value in gpu.items():
            entry = get(field)
            if entry is None:
                continue
            kind, where = type(value), entry[2]
            if where >= 0 and not (more and entry[0] in more) \
                    and (kind is int or (kind is float and math.isfinite(value))):
                data[where] = value
                changed.append(where)
            else:
                self._set(index, data, entry[0], _number(value, f"gpus[{at}].{field}"), changed)


def _put_counts(counts: dict[str, int], placed: _Placed, data: array[float], append: Callable[[int], None],
                more: dict[SeriesKey, float | None]) -> None:
    """Counters already checked to be integers: each that maps to a key is set at its place (times
    its multiplier) and the place appended; one the layout lacks goes to ``more``. The one loop every
    changed-only object's counters go through."""
    get = placed.get
    for counter, count in counts.items():
        entry = get(counter)
        if entry is not None:
            where = entry[2]
            if where < 0:
                more[entry[0]] = float(count * entry[1])
            else:
                data[where] = count * entry[1]
                append(where)


def _reshaped(layout: SeriesLayout, data: array[float],
              more: Mapping[SeriesKey, float | None]) -> tuple[SeriesLayout, array[float]]:
    """``layout``'s values with ``more`` applied as a dict would be (new keys last, None removes)."""
    values = dict(zip(layout.keys, data, strict=True))
    for key, value in more.items():
        if value is None:
            values.pop(key, None)
        else:
            values[key] = value
    return layout_of(tuple(values)), array("d", values.values())


_PORT_GAUGE_FIELDS = frozenset(_PORT_GAUGES)
_NOTHING: dict[str, Any] = {}
_NO_LIST: list[Any] = []
"""What an absent object or list reads as (never written to)."""


def _items(obj: Any, where: str) -> Any:
    if not isinstance(obj, dict):
        raise AgentLineError(f"{where}: expected an object")
    return obj.items()


# --- slots of many lines at once -----------------------------------------------------------


class HeldSlots:
    """A changed-only line's ``packed`` numbers, read but not yet checked or written (a layout with
    every kept slot's key): ``write_slots`` does it for many lines at once."""

    __slots__ = ("data", "error", "layout", "places", "slots", "stream", "table", "values")

    def __init__(self, stream: AgentStream, slots: memoryview, values: memoryview, layout: SeriesLayout,
                 data: array[float]) -> None:
        self.stream, self.slots, self.values, self.layout, self.data = stream, slots, values, layout, data
        self.table = stream._slots
        self.places: Sequence[int] | Places = ()
        """Where the values went in ``data``, once written."""
        self.error = ""
        """Why the line cannot be used, once written: the stream then reads no changed-only line
        until its next full line, as when ``read`` refuses one."""

    def write_alone(self) -> None:
        """Check and write this line's values as ``read`` does."""
        places: list[int] = []
        try:
            self.stream._put_slots(np.frombuffer(self.slots, "<u4"), np.frombuffer(self.values, "<f8"),
                                   self.layout, self.data, places)
        except AgentLineError as error:
            self.error = str(error)
            self.stream._layout = None
        self.places = places


WRITE_TOGETHER_FROM = 4
"""Fewer lines of one slot table and layout than this are written one by one."""


def _unpacked(text: Any) -> tuple[memoryview, memoryview]:
    """``packed`` (docs/agent-schema.md) as its slots' and its values' bytes."""
    if type(text) is not str:
        raise AgentLineError(f"packed: expected a string, got {type(text).__name__}")
    try:
        data = memoryview(binascii.a2b_base64(text, strict_mode=True))
    except (binascii.Error, ValueError):
        raise AgentLineError("packed: not base64") from None
    if len(data) % 12:
        raise AgentLineError(f"packed: {len(data)} bytes, not 12 per number (a 4-byte slot and an 8-byte value)")
    count = len(data) // 12
    return data[:4 * count], data[4 * count:]


def write_slots(held: Sequence[HeldSlots]) -> None:
    """Write held lines' values into their samples, those of one slot table and layout together.

    Per line, putting a hundred values in place is a dozen numpy calls of a few
    microseconds each, whatever their number. The lines of one shape share a table
    and a layout, so their slots and values are checked and put in place together in
    as many calls. A group in which anything fails a check is written line by line,
    which words each bad line's error.
    """
    groups: dict[tuple[_Slots, SeriesLayout], list[HeldSlots]] = {}
    for line in held:
        groups.setdefault((line.table, line.layout), []).append(line)
    for (table, layout), lines in groups.items():
        if len(lines) < WRITE_TOGETHER_FROM or not _written_together(table, layout, lines):
            for line in lines:
                line.write_alone()


def _written_together(table: _Slots, layout: SeriesLayout, lines: list[HeldSlots]) -> bool:
    """``write_alone`` of every line at once; False (nothing written) when any line fails a check."""
    at = np.frombuffer(b"".join([line.slots for line in lines]), "<u4")
    if at.max() >= len(table.keys):
        return False
    places = table.places(layout)[at]
    numbers = np.frombuffer(b"".join([line.values for line in lines]), "<f8")
    if not np.abs(numbers).max() < _SLOT_VALUE_MAX:
        return False
    numbers = numbers * table.factors[at]
    row = np.repeat(np.arange(len(lines)), [len(line.slots) // 4 for line in lines])
    kept = places >= 0  # no slot lacks its key (all_placed): the rest are slots fleet does not keep
    if not kept.all():
        places, numbers, row = places[kept], numbers[kept], row[kept]
    width = len(layout.keys)
    matrix = np.frombuffer(b"".join([line.data for line in lines]), np.float64).copy()
    matrix[row * width + places] = numbers
    rows = memoryview(matrix.data).cast("B")
    size = width * 8
    ends = np.cumsum(np.bincount(row, minlength=len(lines))).tolist()
    start = 0
    for at_row, (line, end) in enumerate(zip(lines, ends, strict=True)):
        memoryview(line.data).cast("B")[:] = rows[at_row * size:(at_row + 1) * size]
        line.places = places[start:end]
        start = end
    return True
