"""Which spine each link-test probe crossed, asked of the leaves that hash it.

Why: a lossy spine makes only the probes whose flows cross it bad. To name it,
each probe's spine must be known; the hash is the switch's, so the switch is
asked. Every probe between two leaves has a GRH flow label (perftest
``--flow_label``), and the kernel derives a RoCE packet's UDP source port from
it (``rdma_flow_label_to_udp_sport`` in ``include/rdma/ib_verbs.h``), so each
direction of a probe is a known 5-tuple entering its leaf on a known port.
Cumulus Linux answers which port its hardware hash sends such a packet out of
with ``cl-ecmpcalc`` (every hashed field given; NVIDIA Cumulus Linux user
guide, "Equal Cost Multipath Load Sharing", cl-ecmpcalc); the leaf's LLDP
neighbour on that port is the spine. The calls for one leaf go in one SSH
session, a few dozen at a time.

A leaf that cannot be asked (SONiC, whose ECMP calculator runs only inside its
syncd container on a packet file, or a switch that refuses) leaves that
direction unknown: the probe's other direction may still be known, and
:func:`fleet.fabric.localize.localize` works with what is known.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from fleet.collectors.commands import command, sequence
from fleet.collectors.inventory import InventoryHost
from fleet.collectors.sshpool import SshPool
from fleet.collectors.switches import driver_for
from fleet.fabric.roce import ROCE_UDP_PORT

CALLS_PER_SESSION = 48
"""``cl-ecmpcalc`` calls per SSH command: short enough for any command line, few sessions per leaf."""
_MARK = "@@fleet-ecmpcalc "


@dataclass(frozen=True, slots=True)
class Hop:
    """One direction of a probe between leaves: the packet ``leaf`` hashes, entering on ``ingress``."""

    leaf: str
    ingress: str
    src_ip: str
    dst_ip: str
    sport: int


@dataclass(frozen=True, slots=True)
class Crossed:
    """The spine of every hop that could be asked (absent: unknown), and why any could not, in words."""

    spines: Mapping[Hop, str]
    notes: tuple[str, ...] = ()


async def spines_crossed(pool: SshPool, hops: Iterable[Hop], switches: Sequence[InventoryHost], *,
                         timeout_s: float = 30.0) -> Crossed:
    """Ask each leaf that hashes one of ``hops`` which uplink it sends it out of, and whose it is."""
    by_leaf: dict[str, list[Hop]] = defaultdict(list)
    for hop in dict.fromkeys(hops):
        by_leaf[hop.leaf].append(hop)
    hosts = {h.name: h for h in switches}
    spines = {h.name for h in switches if h.role == "spine"}
    results = await asyncio.gather(*(_ask(pool, hosts.get(leaf), leaf, leaf_hops, spines, timeout_s)
                                     for leaf, leaf_hops in sorted(by_leaf.items())))
    found: dict[Hop, str] = {}
    notes: list[str] = []
    for spines_of, note in results:
        found.update(spines_of)
        if note:
            notes.append(note)
    return Crossed(found, tuple(notes))


async def _ask(pool: SshPool, host: InventoryHost | None, leaf: str, hops: Sequence[Hop], spines: Collection[str],
               timeout_s: float) -> tuple[dict[Hop, str], str]:
    """One leaf's answers: hop -> spine, and a note when some could not be had."""
    if host is None:
        return {}, f"{leaf} is not a switch of the inventory: the spines its hash chose are unknown"
    if host.os != "cumulus":
        return {}, (f"{leaf} runs {host.os}, whose hash calculator fleet cannot call: the spines of the "
                    f"{len(hops)} probe directions it hashed are unknown")
    driver = driver_for(host.name, host.os)
    listed = await pool.run(leaf, driver.poll_command(), timeout_s)
    if not listed.ok:
        return {}, f"{leaf}: cannot list its ports ({listed.reason}): the spines its hash chose are unknown"
    uplinks = {p.device: p.peer_host for p in driver.read_poll(listed.stdout, 0.0).ports if p.peer_host in spines}
    found: dict[Hop, str] = {}
    refused = ""
    for start in range(0, len(hops), CALLS_PER_SESSION):
        chunk = hops[start:start + CALLS_PER_SESSION]
        parts = []
        for index, hop in enumerate(chunk):
            parts += [command("echo", f"{_MARK}{index}"),
                      command("cl-ecmpcalc", "-i", hop.ingress, "-s", hop.src_ip, "-d", hop.dst_ip, "-p", "udp",
                              "--sport", hop.sport, "--dport", ROCE_UDP_PORT)]
        result = await pool.run(leaf, sequence(*parts), timeout_s)
        if result.exit_status is None:
            return found, f"{leaf}: no answer from cl-ecmpcalc ({result.reason}): some spines are unknown"
        for index, port in egress_ports(result.stdout).items():
            spine = uplinks.get(port)
            if spine and index < len(chunk):
                found[chunk[index]] = spine
        if len(found) < start + len(chunk) and not refused:
            refused = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "no port printed"
    note = f"{leaf}: cl-ecmpcalc gave no uplink for {len(hops) - len(found)} of {len(hops)} ({refused})" \
        if len(found) < len(hops) else ""
    return found, note


def egress_ports(text: str) -> dict[int, str]:
    """Index -> the port printed after its marker (``ecmpcalc: will query hardware`` lines skipped)."""
    ports: dict[int, str] = {}
    current: int | None = None
    for line in text.splitlines():
        word = line.strip()
        if word.startswith(_MARK):
            tail = word[len(_MARK):]
            current = int(tail) if tail.isdigit() else None
        elif current is not None and word and not word.startswith("ecmpcalc:") and current not in ports:
            ports[current] = word.split()[0]
    return ports


__all__ = ["Crossed", "Hop", "egress_ports", "spines_crossed"]
