"""fleet node agent: one JSON line per interval, schema ``fleet-agent/2`` (docs/agent-schema.md).

Sent over SSH and run as ``python3 -u -c <this file> --interval N [--sysfs ROOT]
[--optics-every K] [--optics-readings] [--changed-only [--full-every F]]``, so this file must stay SELF-CONTAINED: the standard
library only, plus ``pynvml`` (nvidia-ml-py) when the node has it. It never
imports anything from fleet.

What it reads, every interval:
- ``ROOT/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer}`` and every
  file of ``counters/`` and ``hw_counters/`` (raw integers; ``port_xmit_data``
  stays in 4-byte words, the reader multiplies);
- the RoCE/IPoIB netdev of each port from ``ROOT/class/infiniband/<dev>/device/net/*``
  (a multi-port device: ``dev_port`` picks the port), its ``ethtool -S`` counters and
  ``ROOT/class/net/<netdev>/carrier_changes`` (sent among them), and, every K-th line,
  the raw ``ethtool -m`` text (optics, parsed on the console side);
- QPs per RDMA device from ``rdma -j res show``;
- GPUs through NVML: utilization, memory, temperature, power, SM clock, clock
  event (throttle) reasons, ECC, retired pages or remapped rows, PCIe replays,
  NVLink CRC/replay/recovery errors summed over links, and XIDs from an NVML
  event set polled without blocking.

The file is written for Python 3.11 with annotations; what is sent
(``fleet.collectors.agent_reader.agent_source()``) has annotations and docstrings
stripped so that a node's python3 from 3.6 on (RHEL 8) runs it, and no
standard-library call newer than 3.6 is used here.

Tools are run with an argument list (no shell); the only argument taken from
the machine, a netdev name, must look like an interface name. A field NVML
does not support is ``null``; read problems go to ``errors`` and are never
fatal. The agent stops when stdin closes (the SSH channel ended) or stdout breaks.
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
import time
from typing import Any

SCHEMA = "fleet-agent/2"
TOOL_TIMEOUT_S = 5.0
_NETDEV = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:@-]{0,14}$")
_RATE = re.compile(r"^\s*([0-9.]+)\s*Gb/sec")
_ETHTOOL_LINE = re.compile(r"^\s*([^:]+?):\s*(-?\d+)\s*$")
_COUNT = re.compile(r"[0-9]{1,20}")

CARRIER_CHANGES = "carrier_changes"
"""A netdev's sysfs count of carrier losses and returns, sent under its ``ethtool`` counters."""


def is_count(text: str) -> bool:
    """Whether a sysfs file's text is a count: a whole number of at most 20 ASCII digits (64 bits)."""
    return _COUNT.fullmatch(text) is not None


# --- sysfs ---------------------------------------------------------------------------


def _read(path: str, errors: list[str]) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError as exc:
        errors.append(f"{path}: {exc.strerror or exc}")
        return None


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def split_state(text: str | None) -> tuple[str, int | None]:
    """``"4: ACTIVE"`` -> ``("ACTIVE", 4)``; unreadable -> ``("", None)``."""
    if not text:
        return "", None
    code, _, name = text.partition(":")
    try:
        return name.strip(), int(code)
    except ValueError:
        return text.strip(), None


def rate_gbps(text: str | None) -> float | None:
    """``"400 Gb/sec (4X NDR)"`` -> ``400.0``."""
    match = _RATE.match(text or "")
    return float(match.group(1)) if match else None


def read_counters(folder: str, errors: list[str]) -> dict[str, int]:
    """Every file of a counters folder as an integer (unreadable files go to ``errors``)."""
    values: dict[str, int] = {}
    for name in _listdir(folder):
        text = _read(os.path.join(folder, name), errors)
        if text is None:
            continue
        try:
            values[name] = int(text)
        except ValueError:
            errors.append(f"{folder}/{name}: not an integer: {text[:40]!r}")
    return values


def port_netdevs(sysfs: str, device: str, errors: list[str]) -> dict[int, str]:
    """HCA port -> netdev name, from ``class/infiniband/<dev>/device/net/*``."""
    net = os.path.join(sysfs, "class", "infiniband", device, "device", "net")
    names = []
    for name in _listdir(net):
        if _NETDEV.match(name):
            names.append(name)
        else:  # it will be an ethtool argument: only names that look like interfaces
            errors.append(f"{device}: netdev {name!r} is not an interface name, skipped")
    if len(names) == 1:
        return {0: names[0]}  # 0: every port of the device
    result: dict[int, str] = {}
    for name in names:
        text = _read(os.path.join(net, name, "dev_port"), errors)
        if text is not None and text.isdigit():
            result[int(text) + 1] = name
    return result


def collect_ports(sysfs: str, errors: list[str]) -> list[dict[str, Any]]:
    ports: list[dict[str, Any]] = []
    root = os.path.join(sysfs, "class", "infiniband")
    for device in _listdir(root):
        netdevs = port_netdevs(sysfs, device, errors)
        for port in _listdir(os.path.join(root, device, "ports")):
            if not port.isdigit():
                continue
            base = os.path.join(root, device, "ports", port)
            state, state_code = split_state(_read(os.path.join(base, "state"), errors))
            phys, phys_code = split_state(_read(os.path.join(base, "phys_state"), errors))
            rate = _read(os.path.join(base, "rate"), errors) or ""
            ports.append({
                "device": device,
                "port": int(port),
                "state": state,
                "state_code": state_code,
                "phys_state": phys,
                "phys_state_code": phys_code,
                "rate": rate,
                "rate_gbps": rate_gbps(rate),
                "link_layer": _read(os.path.join(base, "link_layer"), errors) or "",
                "netdev": netdevs.get(int(port), netdevs.get(0, "")),
                "counters": read_counters(os.path.join(base, "counters"), errors),
                "hw_counters": read_counters(os.path.join(base, "hw_counters"), errors),
            })
    return ports


# --- tools -----------------------------------------------------------------------------


def run_tool(argv: list[str], errors: list[str]) -> str | None:
    """stdout of ``argv`` (no shell), or None with the reason in ``errors``."""
    if shutil.which(argv[0]) is None:
        errors.append(f"{argv[0]}: not installed")
        return None
    try:
        # capture_output= and text= are Python 3.7+; nodes may have 3.6
        done = subprocess.run(  # noqa: UP022
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            universal_newlines=True,  # noqa: UP021
            errors="replace", timeout=TOOL_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False,
        )
    except subprocess.TimeoutExpired:
        errors.append(f"{' '.join(argv)}: no answer within {TOOL_TIMEOUT_S:g} s")
        return None
    except OSError as exc:
        errors.append(f"{' '.join(argv)}: {exc.strerror or exc}")
        return None
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or [""])[0][:200]
        errors.append(f"{' '.join(argv)}: exit status {done.returncode}: {first}")
        return None
    return done.stdout


def parse_ethtool_stats(text: str) -> dict[str, int]:
    """``ethtool -S`` ``name: value`` lines (the ``NIC statistics:`` header is skipped)."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        match = _ETHTOOL_LINE.match(line)
        if match:
            values[match.group(1)] = int(match.group(2))
    return values


_OPTICS_READING_WORDS = ("bias current", "power", "temperature", "voltage")


def is_optics_reading(low_key: str) -> bool:
    """Whether an ``ethtool -m`` key (lower case, before `` :``) names a reading, not a
    threshold, an alarm or warning flag, or identification."""
    return ("alarm" not in low_key and "warning" not in low_key
            and any(word in low_key for word in _OPTICS_READING_WORDS))


def optics_readings(text: str) -> str:
    """The lines of ``ethtool -m`` output that hold a reading (temperature, voltage, per-lane bias
    and power): about a sixth of a CMIS module's dump, and every line fleet parses. The collector
    filters a whole dump by the same rule before parsing (collectors/optics.py)."""
    return "\n".join(line for line in text.splitlines() if is_optics_reading(line.partition(" :")[0].lower()))


def carrier_changes(sysfs: str, name: str, errors: list[str]) -> int | None:
    """``ROOT/class/net/<name>/carrier_changes``: how often the netdev's carrier was lost or came back
    since it was registered, two a flap (Linux 3.15 and later,
    https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-class-net). It sees the node's link
    flaps where the driver has no ``link_down_events_phy`` (a non-mlx5 NIC, an IPoIB netdev).

    None when the file is absent (an older kernel: nothing to say) or holds no whole number
    (the reason in ``errors``).
    """
    path = os.path.join(sysfs, "class", "net", name, CARRIER_CHANGES)
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            text = handle.read(64).strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        errors.append(f"{path}: {exc.strerror or exc}")
        return None
    if not is_count(text):
        errors.append(f"{path}: not a whole number: {text[:40]!r}")
        return None
    return int(text)


def collect_netdevs(names: list[str], with_optics: bool, errors: list[str],
                    keep: frozenset[str] | None = None, readings_only: bool = False,
                    sysfs: str = "/sys") -> dict[str, dict[str, Any]]:
    """``ethtool -S`` with the sysfs ``carrier_changes`` after its counters (and with ``with_optics``
    the raw ``ethtool -m``) of each netdev.

    ``names`` come from ``port_netdevs``, which admits only interface-like names.
    ``keep``: send only these counters (an mlx5 netdev has ~270; the console uses a dozen).
    """
    result: dict[str, dict[str, Any]] = {}
    for name in names:
        entry: dict[str, Any] = {}
        stats = run_tool(["ethtool", "-S", name], errors)
        counters = parse_ethtool_stats(stats) if stats is not None else {}
        if keep is None or CARRIER_CHANGES in keep:
            changes = carrier_changes(sysfs, name, errors)
            if changes is not None:
                counters[CARRIER_CHANGES] = changes
        if keep is not None:
            counters = {counter: value for counter, value in counters.items() if counter in keep}
        entry["ethtool"] = counters
        if with_optics:
            optics = run_tool(["ethtool", "-m", name], errors)
            if optics is not None:
                entry["optics_text"] = optics_readings(optics) if readings_only else optics
        result[name] = entry
    return result


def qp_counts(errors: list[str]) -> dict[str, int] | None:
    """QPs per RDMA device from ``rdma -j res show``; None when rdma is missing or fails."""
    if shutil.which("rdma") is None:
        return None
    text = run_tool(["rdma", "-j", "res", "show"], errors)
    if text is None:
        return None
    try:
        rows = json.loads(text)
    except ValueError:
        errors.append("rdma -j res show: output is not JSON")
        return None
    counts: dict[str, int] = {}
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and isinstance(row.get("ifname"), str) and isinstance(row.get("qp"), int):
            counts[row["ifname"]] = row["qp"]
    return counts


# --- GPUs --------------------------------------------------------------------------------


class _GpuLost(Exception):
    pass


NO_NVIDIA_DRIVER = "no NVIDIA driver"
"""``gpu_error`` of a node whose kernel has no ``nvidia`` module loaded (a CPU or login node, a node
mid-reinstall): a state of the node, told apart from NVML's own failures on a node that has one."""


def nvidia_driver_loaded(sysfs: str) -> bool:
    """Whether the ``nvidia`` kernel module is loaded: every loaded module has ``/sys/module/<name>``
    (https://www.kernel.org/doc/Documentation/ABI/stable/sysfs-module)."""
    return os.path.isdir(os.path.join(sysfs, "module", "nvidia"))


class Gpus:
    """NVML, initialised once; ``sample()`` returns (gpus, gpu_error)."""

    RETRY_INIT_S = 30.0

    def __init__(self, sysfs: str = "/sys") -> None:
        self.sysfs = sysfs
        self.nvml: Any = None
        self.error = ""
        self.handles: list[Any] = []
        self.links: dict[int, list[int]] = {}
        self.events: Any = None
        self.xid_last: dict[int, int] = {}
        self.xid_count: dict[int, int] = {}
        self.xid_supported: set[int] = set()
        self.tried_at = -1e18
        self.ready = False
        try:
            import pynvml  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            self.error = "pynvml not installed"
            return
        except Exception as exc:  # a broken third-party install must not stop the port data
            self.error = f"pynvml failed to load: {type(exc).__name__}: {exc}"
            return
        self.nvml = pynvml
        self.error_names = {
            getattr(pynvml, name): name for name in dir(pynvml)
            if name.startswith("NVML_ERROR_") and isinstance(getattr(pynvml, name), int)
        }

    def error_name(self, exc: BaseException) -> str:
        value = getattr(exc, "value", None)
        return self.error_names.get(value, f"{type(exc).__name__}: {exc}") if value is not None else str(exc)

    def _is(self, exc: BaseException, constant: str) -> bool:
        return getattr(exc, "value", None) == getattr(self.nvml, constant, object())

    def _init(self, errors: list[str]) -> bool:
        """nvmlInit once; after a failure (no driver yet) retried at most every RETRY_INIT_S."""
        if self.ready:
            return True
        now = time.monotonic()
        if now - self.tried_at < self.RETRY_INIT_S:
            return False
        self.tried_at = now
        nv = self.nvml
        try:
            nv.nvmlInit()
            count = nv.nvmlDeviceGetCount()
            self.handles = [nv.nvmlDeviceGetHandleByIndex(index) for index in range(count)]
        except nv.NVMLError as exc:
            self.error = self.error_name(exc)
            self.handles = []
            return False
        self.error = ""
        self.ready = True
        self._find_links()
        self._register_xids(errors)
        return True

    def _find_links(self) -> None:
        nv = self.nvml
        for index, handle in enumerate(self.handles):
            links = []
            for link in range(getattr(nv, "NVML_NVLINK_MAX_LINKS", 18)):
                try:
                    nv.nvmlDeviceGetNvLinkState(handle, link)
                except nv.NVMLError:
                    continue
                links.append(link)
            self.links[index] = links

    def _register_xids(self, errors: list[str]) -> None:
        nv = self.nvml
        try:
            self.events = nv.nvmlEventSetCreate()
        except nv.NVMLError as exc:
            errors.append(f"nvmlEventSetCreate: {self.error_name(exc)}")
            return
        for index, handle in enumerate(self.handles):
            try:
                nv.nvmlDeviceRegisterEvents(handle, nv.nvmlEventTypeXidCriticalError, self.events)
            except nv.NVMLError as exc:
                if not self._is(exc, "NVML_ERROR_NOT_SUPPORTED"):
                    errors.append(f"gpu{index} xid events: {self.error_name(exc)}")
                continue
            self.xid_supported.add(index)
            self.xid_last[index] = 0
            self.xid_count[index] = 0

    def _poll_xids(self, errors: list[str]) -> None:
        nv = self.nvml
        if self.events is None or not self.xid_supported:
            return
        wait = getattr(nv, "nvmlEventSetWait_v2", None) or nv.nvmlEventSetWait
        for _ in range(10000):
            try:
                data = wait(self.events, 0)
            except nv.NVMLError as exc:
                if not self._is(exc, "NVML_ERROR_TIMEOUT"):
                    errors.append(f"nvmlEventSetWait: {self.error_name(exc)}")
                return
            if not data.eventType & nv.nvmlEventTypeXidCriticalError:
                continue
            try:
                index = nv.nvmlDeviceGetIndex(data.device)
            except nv.NVMLError as exc:
                errors.append(f"xid {int(data.eventData)} on an unknown GPU: {self.error_name(exc)}")
                continue
            if index in self.xid_supported:
                self.xid_last[index] = int(data.eventData)
                self.xid_count[index] += 1

    def _get(self, errors: list[str], label: str, fn: Any, *args: Any) -> Any:
        """One NVML call: NOT_SUPPORTED -> None, GPU_IS_LOST -> _GpuLost, others -> None + error."""
        try:
            return fn(*args)
        except self.nvml.NVMLError as exc:
            if self._is(exc, "NVML_ERROR_NOT_SUPPORTED"):
                return None
            if self._is(exc, "NVML_ERROR_GPU_IS_LOST"):
                raise _GpuLost() from None
            errors.append(f"{label}: {self.error_name(exc)}")
            return None

    def _gpu(self, index: int, handle: Any, errors: list[str]) -> dict[str, Any]:
        nv = self.nvml
        label = f"gpu{index}"

        def get(field: str, fn: Any, *args: Any) -> Any:
            return self._get(errors, f"{label} {field}", fn, handle, *args)

        name = get("name", nv.nvmlDeviceGetName)
        uuid = get("uuid", nv.nvmlDeviceGetUUID)
        util = get("util_pct", nv.nvmlDeviceGetUtilizationRates)
        memory = get("memory", nv.nvmlDeviceGetMemoryInfo)
        power_mw = get("power_w", nv.nvmlDeviceGetPowerUsage)
        reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            nv.nvmlDeviceGetCurrentClocksThrottleReasons
        uncorrected, corrected = nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nv.NVML_MEMORY_ERROR_TYPE_CORRECTED
        gpu: dict[str, Any] = {
            "index": index,
            "name": name.decode() if isinstance(name, bytes) else name,
            "uuid": uuid.decode() if isinstance(uuid, bytes) else uuid,
            "util_pct": util.gpu if util is not None else None,
            "mem_used_bytes": memory.used if memory is not None else None,
            "mem_total_bytes": memory.total if memory is not None else None,
            "temp_c": get("temp_c", nv.nvmlDeviceGetTemperature, nv.NVML_TEMPERATURE_GPU),
            "power_w": power_mw / 1000.0 if power_mw is not None else None,
            "sm_clock_mhz": get("sm_clock_mhz", nv.nvmlDeviceGetClockInfo, nv.NVML_CLOCK_SM),
            "throttle_reasons": get("throttle_reasons", reasons_fn),
            "ecc_volatile_uncorrected": get("ecc", nv.nvmlDeviceGetTotalEccErrors, uncorrected, nv.NVML_VOLATILE_ECC),
            "ecc_aggregate_uncorrected": get("ecc", nv.nvmlDeviceGetTotalEccErrors, uncorrected, nv.NVML_AGGREGATE_ECC),
            "ecc_volatile_corrected": get("ecc", nv.nvmlDeviceGetTotalEccErrors, corrected, nv.NVML_VOLATILE_ECC),
            "retired_pages": self._retired(handle, get),
            "pcie_replay": get("pcie_replay", nv.nvmlDeviceGetPcieReplayCounter),
            "xid_last": self.xid_last.get(index) if index in self.xid_supported else None,
            "xid_count": self.xid_count.get(index) if index in self.xid_supported else None,
        }
        gpu.update(self._nvlink(index, handle, get))
        return gpu

    def _retired(self, handle: Any, get: Any) -> int | None:
        """Remapped rows (A100 and later); retired pages on older GPUs; None when neither exists."""
        nv = self.nvml
        remapped = get("remapped_rows", nv.nvmlDeviceGetRemappedRows)
        if remapped is not None:
            return int(remapped[0]) + int(remapped[1])
        single = get("retired_pages", nv.nvmlDeviceGetRetiredPages,
                     nv.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
        double = get("retired_pages", nv.nvmlDeviceGetRetiredPages, nv.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
        if single is None and double is None:
            return None
        return len(single or []) + len(double or [])

    def _nvlink(self, index: int, handle: Any, get: Any) -> dict[str, int | None]:
        """NVLink DL error counters summed over the GPU's links (CRC: flit CRC errors)."""
        nv = self.nvml
        kinds = {
            "nvlink_crc_errors": nv.NVML_NVLINK_ERROR_DL_CRC_FLIT,
            "nvlink_replay_errors": nv.NVML_NVLINK_ERROR_DL_REPLAY,
            "nvlink_recovery_errors": nv.NVML_NVLINK_ERROR_DL_RECOVERY,
        }
        totals: dict[str, int | None] = dict.fromkeys(kinds)
        for link in self.links.get(index, []):
            for field, counter in kinds.items():
                value = get(field, nv.nvmlDeviceGetNvLinkErrorCounter, link, counter)
                if value is not None:
                    totals[field] = (totals[field] or 0) + int(value)
        return totals

    def sample(self, errors: list[str]) -> tuple[list[dict[str, Any]], str]:
        if not self.ready and not nvidia_driver_loaded(self.sysfs):
            return [], NO_NVIDIA_DRIVER
        if self.nvml is None or not self._init(errors):
            return [], self.error
        self._poll_xids(errors)
        gpus = []
        for index, handle in enumerate(self.handles):
            try:
                gpus.append(self._gpu(index, handle, errors))
            except _GpuLost:
                gpus.append({"index": index, "error": "NVML_ERROR_GPU_IS_LOST"})
        return gpus, ""


# --- changed-only lines ------------------------------------------------------------------

PER_LINE_KEYS = ("schema", "host", "ts", "seq", "interval_s", "errors")
"""Sent whole on every line, full or changed-only: they describe the line, not the node's state."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def slot_paths(line: dict[str, Any]) -> dict[tuple[Any, ...], int]:
    """The slots of a full line (docs/agent-schema.md): every number under ``ports[i].counters``,
    ``ports[i].hw_counters``, ``netdevs.N.ethtool``, ``qp_count`` and ``gpus[i]`` (but ``index``),
    numbered in the line's order. A changed-only line sends the numbers that moved as (slot, value)
    pairs: the reader puts them in place without walking the line's objects."""
    paths: list[tuple[Any, ...]] = []  # keys and list indices from the top
    for at, port in enumerate(line.get("ports", [])):
        for section in ("counters", "hw_counters"):
            paths.extend(("ports", at, section, name) for name, value in port.get(section, {}).items()
                         if _is_number(value))
    for netdev, entry in line.get("netdevs", {}).items():
        paths.extend(("netdevs", netdev, "ethtool", name) for name, value in entry.get("ethtool", {}).items()
                     if _is_number(value))
    paths.extend(("qp_count", device) for device, count in (line.get("qp_count") or {}).items() if _is_number(count))
    for at, gpu in enumerate(line.get("gpus", [])):
        paths.extend(("gpus", at, field) for field, value in gpu.items() if field != "index" and _is_number(value))
    return {path: slot for slot, path in enumerate(paths)}


def _state_keys(obj: dict[str, Any]) -> set[str]:
    return {key for key in obj if key != "optics_text"}


def _only_slots_moved(before: Any, after: Any, path: tuple[Any, ...], slots: dict[tuple[Any, ...], int],
                      moved: list[tuple[int, Any]]) -> bool:
    """Whether ``after`` differs from ``before`` only in numbers of slots (each such one appended to
    ``moved`` as (slot, value)); False for anything else: a key, item, string, null or number
    without a slot that came, went or changed, or a slot whose value is no longer a number."""
    if path in slots:
        if not _is_number(after):
            return False
        if after != before or type(after) is not type(before):
            moved.append((slots[path], after))
        return True
    if isinstance(after, dict):
        if not isinstance(before, dict) or _state_keys(before) != _state_keys(after):
            return False
        return all(_only_slots_moved(before[key], value, (*path, key), slots, moved)
                   for key, value in after.items() if key != "optics_text")
    if isinstance(after, list):
        if not isinstance(before, list) or len(before) != len(after):
            return False
        return all(_only_slots_moved(before[at], after[at], (*path, at), slots, moved) for at in range(len(after)))
    return before == after and type(before) is type(after)


def packed_moved(moved: list[tuple[int, Any]]) -> str | None:
    """(slot, value) pairs as ``packed`` (docs/agent-schema.md): base64 of the slots as little-endian
    uint32, then the values as little-endian float64 (an integer rounded to the nearest double, as
    the reader stores it). None when one does not fit (the line then goes whole)."""
    try:
        data = struct.pack(f"<{len(moved)}I{len(moved)}d", *(slot for slot, _ in moved), *(value for _, value in moved))
    except (struct.error, OverflowError):
        return None
    return base64.b64encode(data).decode("ascii")


def changed_line(previous: dict[str, Any], current: dict[str, Any],
                 slots: dict[tuple[Any, ...], int]) -> dict[str, Any] | None:
    """``current`` as a changed-only line against ``previous`` (docs/agent-schema.md): its own keys,
    the numbers that moved by slot (``slots``: those of the last full line, ``slot_paths``) as one
    ``packed`` string, and the optics texts it read. None when anything else changed (a port, netdev,
    GPU or counter that came or went, a port state, a GPU field that turned null): that needs a full line.
    """
    if _state_keys(previous) != _state_keys(current):
        return None
    moved: list[tuple[int, Any]] = []
    for key, value in current.items():
        if key not in PER_LINE_KEYS and not _only_slots_moved(previous[key], value, (key,), slots, moved):
            return None
    line = {key: current[key] for key in PER_LINE_KEYS if key in current}
    line["changed_only"] = True
    if moved:
        packed = packed_moved(moved)
        if packed is None:
            return None
        line["packed"] = packed
    optics = {name: {"optics_text": entry["optics_text"]} for name, entry in current.get("netdevs", {}).items()
              if "optics_text" in entry}
    if optics:
        line["netdevs"] = optics
    return line


# --- the loop ----------------------------------------------------------------------------


def sample_line(args: argparse.Namespace, seq: int, gpus: Gpus, hostname: str) -> dict[str, Any]:
    errors: list[str] = []
    ts = time.time()
    ports = collect_ports(args.sysfs, errors)
    netdev_names = sorted({port["netdev"] for port in ports if port["netdev"]})
    with_optics = args.optics_every > 0 and seq % args.optics_every == 0
    line: dict[str, Any] = {
        "schema": SCHEMA,
        "host": hostname,
        "ts": round(ts, 3),
        "seq": seq,
        "interval_s": args.interval,
        "ports": ports,
        "netdevs": collect_netdevs(netdev_names, with_optics, errors, args.ethtool_keep, args.optics_readings,
                                   args.sysfs),
    }
    qps = qp_counts(errors) if ports else None  # no RDMA device: nothing for rdma to count
    if qps is not None:
        line["qp_count"] = qps
    line["gpus"], line["gpu_error"] = gpus.sample(errors)
    line["errors"] = errors
    return line


def _watch_stdin(stop: threading.Event) -> None:
    """The SSH channel closing closes stdin: that is the signal to stop."""
    try:
        while os.read(sys.stdin.fileno(), 65536):
            pass
    except (OSError, ValueError):
        pass
    stop.set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fleet-agent", description="fleet node agent (fleet-agent/2)")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between lines")
    parser.add_argument("--sysfs", default="/sys", help="sysfs root (tests point it at a fixture tree)")
    parser.add_argument("--optics-every", type=int, default=60, help="ethtool -m every K lines (0: never)")
    parser.add_argument("--count", type=int, default=0, help="stop after N lines (0: until stdin closes)")
    parser.add_argument("--ethtool-keep", type=lambda text: frozenset(filter(None, text.split(","))),
                        default=None, help="comma-separated ethtool -S counters to send (default: all)")
    parser.add_argument("--optics-readings", action="store_true",
                        help="send only the reading lines of ethtool -m (no thresholds, flags, identification)")
    parser.add_argument("--changed-only", action="store_true",
                        help="between full lines, send only the values that changed since the previous line")
    parser.add_argument("--full-every", type=int, default=60, help="with --changed-only: a full line every F lines")
    args = parser.parse_args(argv)
    if args.interval <= 0:
        parser.error("--interval must be positive")
    if args.full_every <= 0:
        parser.error("--full-every must be positive")
    stop = threading.Event()
    threading.Thread(target=_watch_stdin, args=(stop,), daemon=True).start()
    gpus = Gpus(args.sysfs)
    hostname = socket.gethostname()
    seq = 0
    previous: dict[str, Any] | None = None
    slots: dict[tuple[Any, ...], int] = {}
    next_at = time.monotonic()
    while True:  # at least one line: with stdin already closed the agent is a one-shot sample
        line = sample_line(args, seq, gpus, hostname)
        if args.changed_only:  # full on the first line, every F-th, and when the shape changed
            delta = changed_line(previous, line, slots) \
                if previous is not None and seq % args.full_every else None
            if delta is None:
                slots = slot_paths(line)
            previous, line = line, (delta if delta is not None else line)
        try:
            sys.stdout.write(json.dumps(line, separators=(",", ":")) + "\n")
            sys.stdout.flush()
        except BrokenPipeError:
            return 0
        seq += 1
        if args.count and seq >= args.count:
            return 0
        next_at += args.interval
        now = time.monotonic()
        if now > next_at:  # fell behind (slow sysfs or tools): skip the missed ticks, never pile up
            next_at += math.ceil((now - next_at) / args.interval) * args.interval
        if stop.wait(next_at - now):
            return 0


if __name__ == "__main__":
    sys.exit(main())
