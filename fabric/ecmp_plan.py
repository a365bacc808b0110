"""Remedies for an imbalanced leaf, least disruptive first, with the exact switch commands.

The order follows the published fixes in docs/domain.md, "ECMP on RoCE fabrics":

0. ``host-qps``: more QPs per NCCL connection (``NCCL_IB_QPS_PER_CONNECTION``)
   gives every ring several UDP source ports, i.e. several paths. Advice for
   the next job start; no switch changes, nothing to apply here.
1. ``hash-fields``: hash on more header fields. SONiC hashes on the RoCE
   destination QP (``RDMA_BTH_DEST_QP``), which differs per QP pair; NVUE adds
   ``ingress-interface`` (flows from different server ports part ways). Re-hashes
   flows in place; no switchd restart.
2. ``hash-seed``: a new seed re-shuffles every flow (NVUE only). Cumulus applies
   it by restarting switchd: every port goes down and up, traffic stops for
   seconds.
3. ``adaptive-routing``: per-packet load-aware spraying (NVUE, Spectrum-4);
   applied by restarting switchd as well, and the NICs must accept
   out-of-order delivery.

Each remedy carries its commands as argument vectors (the collectors run them
through the allow-list), a config diff, whether it restarts switchd or resets
ports, the expected effect, the rollback commands and the configuration it
should leave. No I/O.
"""

from __future__ import annotations

import shlex
import zlib
from dataclasses import dataclass, field, replace

NVUE_HASH_FIELDS_5TUPLE = ("source-ip", "destination-ip", "ip-protocol", "source-port", "destination-port")
SONIC_HASH_FIELDS_5TUPLE = ("SRC_IP", "DST_IP", "IP_PROTOCOL", "L4_SRC_PORT", "L4_DST_PORT")
"""The default on both OSes; assumed on SONiC when the switch cannot show its hash configuration."""

NVUE_EXTRA_FIELD = "ingress-interface"
SONIC_EXTRA_FIELD = "RDMA_BTH_DEST_QP"
QPS_PER_CONNECTION = 4
"""NCCL_IB_QPS_PER_CONNECTION to advise: 4 QPs per ring give 4 paths per connection; the NCCL
default is 1 (NCCL's environment variables documentation; docs/domain.md, "ECMP on RoCE fabrics")."""

MESSAGE_PREFIX = "fleet ecmp"


@dataclass(frozen=True, slots=True)
class HashConfig:
    """A switch's ECMP hash settings as read from it.

    ``ecmp_fields`` uses the OS's own names (NVUE ``source-ip``, SONiC
    ``SRC_IP``); None for a value the switch would not show, with ``note``
    saying so.
    """

    os: str  # "cumulus" | "sonic"
    ecmp_fields: tuple[str, ...] | None
    hash_seed: int | None = None
    adaptive_routing: bool | None = None
    note: str = ""

    def as_json(self) -> dict[str, object]:
        return {"os": self.os, "ecmp_fields": None if self.ecmp_fields is None else list(self.ecmp_fields),
                "hash_seed": self.hash_seed, "adaptive_routing": self.adaptive_routing, "note": self.note}

    def same_settings(self, other: HashConfig) -> bool:
        """Equal in everything both sides know (an unknown value matches anything)."""
        def same(a: object, b: object) -> bool:
            return a is None or b is None or a == b
        fields_a = None if self.ecmp_fields is None else sorted(self.ecmp_fields)
        fields_b = None if other.ecmp_fields is None else sorted(other.ecmp_fields)
        return (same(fields_a, fields_b) and same(self.hash_seed, other.hash_seed)
                and same(self.adaptive_routing, other.adaptive_routing))


@dataclass(frozen=True, slots=True)
class Remedy:
    """One candidate fix. ``commands``/``rollback`` are argument vectors, run in order."""

    id: str
    title: str
    disruption: int
    """0 host advice, 1 re-hash in place, 2-3 restarts switchd."""
    advice_only: bool
    commands: tuple[tuple[str, ...], ...]
    config_diff: str
    restarts_switchd: bool
    resets_ports: bool
    expected: str
    rollback: tuple[tuple[str, ...], ...]
    before: HashConfig | None = None
    after: HashConfig | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def command_lines(self) -> tuple[str, ...]:
        return tuple(shlex.join(argv) for argv in self.commands)

    @property
    def rollback_lines(self) -> tuple[str, ...]:
        return tuple(shlex.join(argv) for argv in self.rollback)

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id, "title": self.title, "disruption": self.disruption, "advice_only": self.advice_only,
            "commands": list(self.command_lines), "config_diff": self.config_diff,
            "restarts_switchd": self.restarts_switchd, "resets_ports": self.resets_ports,
            "expected": self.expected, "rollback": list(self.rollback_lines),
            "before": None if self.before is None else self.before.as_json(),
            "after": None if self.after is None else self.after.as_json(),
            "notes": list(self.notes),
        }


def plan_remedies(leaf: str, config: HashConfig, jobs: tuple[str, ...] = ()) -> tuple[Remedy, ...]:
    """Every remedy that applies to ``leaf`` with ``config``, least disruptive first."""
    remedies = [_host_qps(jobs)]
    if config.os == "cumulus":
        remedies += [r for r in (_nvue_fields(leaf, config), _nvue_seed(leaf, config), _nvue_ar(leaf, config))
                     if r is not None]
    elif config.os == "sonic":
        sonic = _sonic_fields(config)
        if sonic is not None:
            remedies.append(sonic)
    return tuple(remedies)


def default_remedy(remedies: tuple[Remedy, ...]) -> Remedy | None:
    """The least disruptive remedy that changes the switch (what ``apply`` picks without ``--remedy``)."""
    return next((r for r in remedies if not r.advice_only), None)


def _host_qps(jobs: tuple[str, ...]) -> Remedy:
    who = f"job{'s' if len(jobs) > 1 else ''} {', '.join(jobs)}" if jobs else "the jobs on this leaf"
    return Remedy(
        id="host-qps", title="More QPs per NCCL connection (host side, next job start)", disruption=0,
        advice_only=True,
        commands=(("export", f"NCCL_IB_QPS_PER_CONNECTION={QPS_PER_CONNECTION}"),
                  ("export", "NCCL_IB_SPLIT_DATA_ON_QPS=0")),
        config_diff="", restarts_switchd=False, resets_ports=False,
        expected=(f"each ring uses {QPS_PER_CONNECTION} QPs, i.e. {QPS_PER_CONNECTION} UDP source ports and "
                  f"paths per connection; takes effect at the next start of {who}"),
        rollback=(("unset", "NCCL_IB_QPS_PER_CONNECTION", "NCCL_IB_SPLIT_DATA_ON_QPS"),),
        notes=("advice for the job's environment: fleet changes nothing on the hosts",),
    )


def _nv_apply(leaf: str, what: str) -> tuple[str, ...]:
    return ("nv", "config", "apply", "-y", "-m", f"{MESSAGE_PREFIX}: {what} on {leaf}")


def _diff(rows: list[tuple[str, object, object]]) -> str:
    lines: list[str] = []
    for path, old, new in rows:
        lines += [f"- {path}: {'?' if old is None else old}", f"+ {path}: {new}"]
    return "\n".join(lines) + "\n"


def _nvue_fields(leaf: str, config: HashConfig) -> Remedy | None:
    if config.ecmp_fields is not None and NVUE_EXTRA_FIELD in config.ecmp_fields:
        return None
    fields = config.ecmp_fields if config.ecmp_fields is not None else NVUE_HASH_FIELDS_5TUPLE
    path = f"system forwarding ecmp-hash {NVUE_EXTRA_FIELD}"
    return Remedy(
        id="hash-fields", title=f"Hash on {NVUE_EXTRA_FIELD} as well", disruption=1, advice_only=False,
        commands=(("nv", "set", *path.split(), "on"), _nv_apply(leaf, f"ecmp-hash {NVUE_EXTRA_FIELD} on")),
        config_diff=_diff([(path, "off", "on")]),
        restarts_switchd=False, resets_ports=False,
        expected="flows entering on different server ports hash apart; the leaf re-hashes in place",
        rollback=(("nv", "set", *path.split(), "off"), _nv_apply(leaf, f"rollback ecmp-hash {NVUE_EXTRA_FIELD}")),
        before=config, after=replace(config, ecmp_fields=tuple(sorted({*fields, NVUE_EXTRA_FIELD})), note=""),
    )


def new_seed(leaf: str, current: int | None) -> int:
    """A seed for ``leaf`` different from ``current``, the same on every run (plans are reproducible)."""
    seed = zlib.crc32(f"fleet-ecmp:{leaf}:{current}".encode())
    return seed if seed != current else (seed + 1) % 2**32


def _nvue_seed(leaf: str, config: HashConfig) -> Remedy | None:
    if config.hash_seed is None:
        return None
    seed = new_seed(leaf, config.hash_seed)
    path = "system forwarding hash-seed"
    return Remedy(
        id="hash-seed", title="New ECMP hash seed (restarts switchd)", disruption=2, advice_only=False,
        commands=(("nv", "set", *path.split(), str(seed)), _nv_apply(leaf, f"hash-seed {seed}")),
        config_diff=_diff([(path, config.hash_seed, seed)]),
        restarts_switchd=True, resets_ports=True,
        expected="every flow re-hashed under a new seed; traffic on the leaf stops while switchd restarts",
        rollback=(("nv", "set", *path.split(), str(config.hash_seed)),
                  _nv_apply(leaf, f"rollback hash-seed {config.hash_seed}")),
        before=config, after=replace(config, hash_seed=seed, note=""),
        notes=("Cumulus applies a hash seed by restarting switchd: every port goes down and up",
               "the rollback restarts switchd again"),
    )


def _nvue_ar(leaf: str, config: HashConfig) -> Remedy | None:
    if config.adaptive_routing:
        return None
    path = "router adaptive-routing state"
    return Remedy(
        id="adaptive-routing", title="Adaptive routing (Spectrum-4; restarts switchd)", disruption=3,
        advice_only=False,
        commands=(("nv", "set", *path.split(), "enabled"), _nv_apply(leaf, "adaptive-routing enabled")),
        config_diff=_diff([(path, "disabled" if config.adaptive_routing is False else None, "enabled")]),
        restarts_switchd=True, resets_ports=True,
        expected="packets sprayed to the least loaded uplink; needs NICs that accept out-of-order RoCE",
        rollback=(("nv", "set", *path.split(), "disabled"), _nv_apply(leaf, "rollback adaptive-routing")),
        before=config, after=replace(config, adaptive_routing=True, note=""),
        notes=("Spectrum-4 only; applying reloads the forwarding plane (switchd restart, ports reset)",),
    )


def _sonic_fields(config: HashConfig) -> Remedy | None:
    current = config.ecmp_fields
    if current is not None and SONIC_EXTRA_FIELD in current:
        return None
    known = current if current is not None else SONIC_HASH_FIELDS_5TUPLE
    fields = (*known, SONIC_EXTRA_FIELD)
    notes: tuple[str, ...] = ()
    if current is None:
        notes = (f"the switch did not show its hash fields; the rollback restores SONiC's 5-tuple default "
                 f"({' '.join(SONIC_HASH_FIELDS_5TUPLE)})",)
    base = ("config", "switch-hash", "global", "ecmp-hash")
    return Remedy(
        id="hash-fields", title=f"Hash on {SONIC_EXTRA_FIELD} (the RoCE destination QP) as well", disruption=1,
        advice_only=False,
        commands=((*base, *fields),),
        config_diff=_diff([("switch-hash global ecmp-hash", " ".join(known), " ".join(fields))]),
        restarts_switchd=False, resets_ports=False,
        expected="each QP pair hashes on its destination QP: a ring's channels part ways; applied at once",
        rollback=((*base, *known),),
        before=config, after=replace(config, ecmp_fields=fields, note=""),
        notes=notes,
    )
