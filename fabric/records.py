"""Records other than samples that collectors and probes produce and the store keeps.

Plain frozen dataclasses shared by collectors, store, console and reports, so
that none of them has to import another's internals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fleet.fabric.states import HostState


@dataclass(frozen=True, slots=True)
class HostRecord:
    """A machine of the inventory."""

    name: str
    role: str  # "node" | "leaf" | "spine" | "head"
    address: str = ""
    os: str = ""  # switches: "cumulus" | "sonic"; nodes: "linux"
    group: int = -1  # leaf group of a node (-1: unknown)
    info: dict[str, str] = field(default_factory=dict)
    """Software and hardware as the host reports it: kernel, driver, firmware, GPU model."""


@dataclass(frozen=True, slots=True)
class PortRecord:
    """An RDMA NIC port (or a switch port) and, when known, who its cable reaches."""

    host: str
    device: str  # "mlx5_0" / "swp1"
    port: str  # "1" / ""
    netdev: str = ""
    link_layer: str = ""  # "InfiniBand" | "Ethernet"
    peer_host: str = ""  # LLDP / ibnetdiscover neighbour
    peer_port: str = ""


@dataclass(frozen=True, slots=True)
class HostStatus:
    """The collection state of a host since ``since`` (unix seconds), with the reason in words."""

    host: str
    state: HostState
    since: float
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ProbeRecord:
    """One active measurement: a latency or bandwidth probe, an all-reduce, a link-test pair.

    ``result`` holds numbers with units in their keys (``p99_usec``,
    ``bw_avg_gbps``, ``busbw_gbytes_s``); ``raw`` keeps both sides' output.
    """

    ts: float
    kind: str  # "lat" | "bw" | "allreduce" | "linktest"
    src: str
    dst: str = ""
    src_nic: str = ""
    dst_nic: str = ""
    ok: bool = True
    params: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)
    raw: str = ""
    job: str = ""
    run_id: str = ""  # groups the pairs of one link test or baseline


@dataclass(frozen=True, slots=True)
class JobRecord:
    """A Slurm job as seen at ``ts``; ``account`` is the tenant."""

    ts: float
    job_id: str
    name: str
    user: str
    account: str
    state: str
    nodes: tuple[str, ...]  # expanded hostnames
    partition: str = ""
    start_ts: float = 0.0


@dataclass(frozen=True, slots=True)
class ActionRecord:
    """One step of a change to a machine, for the append-only audit table."""

    ts: float
    actor: str  # user@host that ran fleet
    target: str  # switch or node
    action: str  # "ecmp.apply", "ecmp.rollback", ...
    step: str  # "snapshot" | "apply" | "verify" | "rollback" | "verdict"
    commands: tuple[str, ...] = ()
    output: str = ""
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] = field(default_factory=dict)
    verdict: str = ""
