"""The RoCE profile: the configuration every NIC, GPU node and switch of a lossless RoCE fleet should have.

Why one object: ``fleet check`` judges each machine against it, ``fleet check
fix`` writes it, and a site that runs another priority or DSCP says so once,
in its copy of ``docs/roce-profile.example.toml``. The defaults are NVIDIA's
published lossless RoCE recommendations; each value's source is in that file
and in docs/checks.md. ``0`` (or ``-1`` for the GID index) means "the same on
every machine, whatever it is": the check then names the odd ones out against
the fleet's most common value.

Pure: :func:`parse_profile` reads TOML text; the CLI reads the file.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, fields
from typing import Any


class ProfileError(ValueError):
    """A profile file mistake, worded for the user: ``FILE:LINE: [table] key: problem``."""


@dataclass(frozen=True, slots=True)
class RoceProfile:
    name: str = "NVIDIA lossless RoCE (default)"
    # --- the RoCE traffic class, end to end
    lossless_priority: int = 3
    """The 802.1Qbb priority PFC protects: ToS 106 >> 5 = 3 (NVIDIA doRoCE)."""
    roce_dscp: int = 26
    """DSCP of RoCE data packets: ToS 106 >> 2 = 26."""
    cnp_dscp: int = 48
    """DSCP of congestion notification packets (Cumulus ``nv show qos roce``: cnp dscp 48 -> priority 6)."""
    cnp_priority: int = 6
    tos: int = 106
    """ToS RDMA-CM and verbs QPs use by default: DSCP 26 with ECT(0) set (26 << 2 | 2)."""
    # --- NIC
    trust: str = "dscp"
    ets: bool = True
    """The lossless priority's traffic class is scheduled by ETS (``tsa: ets``) or strict priority."""
    dcqcn: bool = True
    """DCQCN on the lossless priority: ``ecn/roce_np/enable`` and ``ecn/roce_rp/enable`` both 1."""
    roce_mode: str = "RoCE v2"
    # --- the fleet: the same everywhere
    netdev_mtu: int = 0
    """Bytes; 0: the fleet's most common value."""
    active_mtu: int = 4096
    """RDMA path MTU in bytes (4096 is the largest RoCE supports); 0: the fleet's most common value."""
    gid_index: int = -1
    """The RoCE v2 IPv4 GID index every NIC must share (one ``NCCL_IB_GID_INDEX``); -1: the most common."""
    same_versions: tuple[str, ...] = ("ofed", "firmware", "driver", "kernel")
    # --- GPUDirect RDMA
    peermem_modules: tuple[str, ...] = ("nvidia_peermem", "nv_peer_mem")
    acs_off: bool = True
    pcie_at_capability: bool = True
    gpu_nic_paths: tuple[str, ...] = ("PIX", "PXB")
    """``nvidia-smi topo -m`` connections a rail's NIC may have to its GPU."""
    # --- switches
    switch_trust: tuple[str, ...] = ("dscp", "pcp,dscp", "both", "L3")
    """Trust settings that classify RoCE by DSCP (NVUE ``pcp,dscp`` trusts both; Onyx calls DSCP ``L3``)."""
    ecn_min_threshold_bytes: int = 0
    """0: any threshold, shown; else the expected WRED/ECN minimum threshold of the lossless queue."""
    ecn_max_threshold_bytes: int = 0
    pfc_watchdog: bool = True
    switch_mtu: int = 0
    """Bytes; 0: at least the hosts' netdev MTU."""
    lossless_buffer: bool = True

    @property
    def dscp_to_priority(self) -> dict[int, int]:
        """The DSCP -> priority pairs NICs and switches must both hold."""
        return {self.roce_dscp: self.lossless_priority, self.cnp_dscp: self.cnp_priority}


DEFAULT_PROFILE = RoceProfile()

_TABLES: dict[str, tuple[str, ...]] = {
    "roce": ("lossless_priority", "roce_dscp", "cnp_dscp", "cnp_priority", "tos"),
    "nic": ("trust", "ets", "dcqcn", "roce_mode"),
    "fleet": ("netdev_mtu", "active_mtu", "gid_index", "same_versions"),
    "gpudirect": ("peermem_modules", "acs_off", "pcie_at_capability", "gpu_nic_paths"),
    "switch": ("switch_trust", "ecn_min_threshold_bytes", "ecn_max_threshold_bytes", "pfc_watchdog",
               "switch_mtu", "lossless_buffer"),
}
_KEY_NAMES = {"switch_trust": "trust", "switch_mtu": "mtu"}
"""Attribute -> its key in the TOML table where the two differ."""
_RANGES: dict[str, tuple[int, int]] = {
    "lossless_priority": (0, 7), "cnp_priority": (0, 7), "roce_dscp": (0, 63), "cnp_dscp": (0, 63),
    "tos": (0, 255), "netdev_mtu": (0, 65535), "active_mtu": (0, 4096), "gid_index": (-1, 255),
    "ecn_min_threshold_bytes": (0, 2**40), "ecn_max_threshold_bytes": (0, 2**40), "switch_mtu": (0, 65535),
}  # fmt: skip
_CHOICES: dict[str, tuple[str, ...]] = {
    "trust": ("dscp", "pcp"), "roce_mode": ("RoCE v2", "IB/RoCE v1"),
    "same_versions": ("ofed", "firmware", "driver", "kernel"),
    "gpu_nic_paths": ("PIX", "PXB", "PHB", "NODE", "SYS"),
}  # fmt: skip


def _line_of(text: str, table: str, key: str | None) -> int:
    """Where ``[table] key`` is written (1 when it cannot be found)."""
    in_table = False
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            in_table = stripped.strip("[] ") == table
            if key is None and in_table:
                return number
        elif in_table and key is not None and re.match(rf"{re.escape(key)}\s*=", stripped):
            return number
    return 1


def parse_profile(text: str, source: str = "profile.toml") -> RoceProfile:
    """A profile from TOML text; unknown tables and keys are refused (a typo must not pass silently)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ProfileError(f"{source}: not valid TOML: {error}") from None
    values: dict[str, Any] = {}
    for table, raw in data.items():
        if table == "name":
            if not isinstance(raw, str):
                raise ProfileError(f"{source}:{_line_of(text, '', 'name')}: name: must be a string")
            values["name"] = raw
            continue
        if table not in _TABLES or not isinstance(raw, dict):
            raise ProfileError(f"{source}:{_line_of(text, table, None)}: [{table}]: unknown table "
                               f"(known: {', '.join(_TABLES)})")
        allowed = {_KEY_NAMES.get(attr, attr): attr for attr in _TABLES[table]}
        for key, value in raw.items():
            where = f"{source}:{_line_of(text, table, key)}: [{table}] {key}"
            if key not in allowed:
                raise ProfileError(f"{where}: unknown key (known: {', '.join(allowed)})")
            values[allowed[key]] = _checked(allowed[key], value, where)
    return RoceProfile(**values)


def _checked(attr: str, value: Any, where: str) -> Any:
    default = getattr(DEFAULT_PROFILE, attr)
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ProfileError(f"{where}: must be true or false, got {value!r}")
        return value
    if isinstance(default, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ProfileError(f"{where}: must be an integer, got {value!r}")
        low, high = _RANGES[attr]
        if not low <= value <= high:
            raise ProfileError(f"{where}: must be between {low} and {high}, got {value}")
        return value
    if isinstance(default, tuple):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ProfileError(f"{where}: must be a list of strings, got {value!r}")
        allowed = _CHOICES.get(attr)
        bad = [v for v in value if allowed is not None and v not in allowed]
        if bad:
            raise ProfileError(f"{where}: {bad[0]!r} is not one of {', '.join(allowed or ())}")
        return tuple(value)
    if not isinstance(value, str):
        raise ProfileError(f"{where}: must be a string, got {value!r}")
    if attr in _CHOICES and value not in _CHOICES[attr]:
        raise ProfileError(f"{where}: must be one of {', '.join(_CHOICES[attr])}, got {value!r}")
    return value


def profile_json(profile: RoceProfile) -> dict[str, Any]:
    """The profile as JSON data, for reports and ``--json`` (tuples as lists)."""
    return {f.name: list(v) if isinstance(v := getattr(profile, f.name), tuple) else v for f in fields(profile)}
