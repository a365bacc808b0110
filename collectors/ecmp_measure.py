"""Fresh uplink throughput of one leaf, polled from the switch itself, and a probe across it.

The guarded apply must judge a change by what the switch counts now, not by
the store (which may lag) nor by anything a simulator knows: this polls the
leaf's own counters through its OS driver every ``interval_s`` for
``window_s`` seconds and turns them into a :class:`fleet.fabric.ecmp.LeafBalance`.
After a change that restarts switchd it first waits, bounded and telling how
far the switch is back, until the ECMP members are up, LLDP names their spines
again and traffic flows.
The probe is a perftest latency run between a node on the leaf and a node on
another leaf of the same rail, so its path crosses the leaf's uplinks.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from fleet.collectors.commands import command
from fleet.collectors.inventory import InventoryHost
from fleet.collectors.parsers.show_gids import parse_show_gids
from fleet.collectors.probes.perftest_probe import PerftestSpec, run_perftest
from fleet.collectors.sshpool import SshPool
from fleet.collectors.switches import driver_for
from fleet.fabric.ecmp import EcmpThresholds, LeafBalance, UplinkSeries, assess_leaf
from fleet.fabric.rates import RateTracker
from fleet.fabric.records import PortRecord, ProbeRecord


class MeasureFailed(Exception):
    """The leaf could not be polled; the message says why."""


@dataclass(frozen=True, slots=True)
class Measurement:
    balance: LeafBalance
    ports: tuple[PortRecord, ...]
    """The leaf's ports with their LLDP neighbours, as the switch reported them."""
    down_uplinks: tuple[str, ...]
    problems: tuple[str, ...] = ()
    uplinks: Mapping[str, str] = field(default_factory=dict)
    """ECMP member port -> its spine (LLDP), as measured."""
    waited_s: float = 0.0
    """How long forwarding and LLDP took to come back (``wait_forwarding_s`` > 0), seconds."""


WaitCallback = Callable[[str], None]
"""Told, on every poll while waiting for a restarted switch, how far it is back, in words."""


async def measure_leaf(pool: SshPool, host: InventoryHost, spines: Collection[str], thresholds: EcmpThresholds, *,
                       window_s: float, interval_s: float, jobs: Sequence[str] = (),
                       wait_forwarding_s: float = 0.0, timeout_s: float = 15.0,
                       uplinks: Mapping[str, str] | None = None, flow_gbps: float | None = None,
                       on_wait: WaitCallback | None = None) -> Measurement:
    """Poll ``host`` until ``window_s`` seconds of uplink rates are in, and assess its balance.

    ``uplinks`` (port -> spine, from an earlier measurement) names the ECMP
    members; without it they are the ports whose LLDP neighbour is a spine.
    ``wait_forwarding_s`` > 0: first wait, at most that long, until the switch
    forwards again, e.g. after switchd restarted: every member port up, LLDP
    naming its spine again, and the group carrying traffic; each poll meanwhile
    is told to ``on_wait``. A restarted switch has no LLDP neighbours for a
    while, which is no reason to give up: only the deadline is. Samples taken
    before it is back are not counted. ``flow_gbps``: one flow's rate, for the
    collision estimate (``fleet.fabric.ecmp.assess_leaf``).
    """
    driver = driver_for(host.name, host.os)
    rates = RateTracker(max_gap_s=max(10.0, 3 * interval_s))
    series: dict[str, list[tuple[float, float]]] = {}
    speeds: dict[str, float] = {}
    members: dict[str, str] = dict(uplinks or {})
    ports: tuple[PortRecord, ...] = ()
    problems: tuple[str, ...] = ()
    down: tuple[str, ...] = ()
    started_wait = time.monotonic()
    deadline_forwarding = started_wait + wait_forwarding_s
    give_up_s = wait_forwarding_s + 3 * window_s + 10 * interval_s + 2 * timeout_s
    give_up = time.monotonic() + give_up_s
    waiting = wait_forwarding_s > 0
    waited_s = 0.0
    first_ts: float | None = None
    polls = 0
    while True:
        started = time.monotonic()
        result = await pool.run(host.name, driver.poll_command(), timeout_s)
        if not result.ok:
            if waiting and time.monotonic() < deadline_forwarding:  # a restarting switch may not answer at once
                if on_wait is not None:
                    on_wait(f"{host.name} does not answer yet ({result.reason}); "
                            f"{time.monotonic() - started_wait:.0f} s of at most {wait_forwarding_s:g} s")
                await asyncio.sleep(interval_s)
                continue
            raise MeasureFailed(f"{host.name}: {result.reason}")
        polled = driver.read_poll(result.stdout, time.time())
        polls += 1
        if polls == 1 and host.os == "cumulus":
            continue  # NVUE lists its ports first; counters come from the next poll on
        ports, problems = polled.ports, polled.problems
        neighbours = {p.device: p.peer_host for p in ports if p.peer_host in spines}
        if not members:
            members = neighbours
        if not members and not waiting:
            raise MeasureFailed(f"{host.name}: no port has a spine as its LLDP neighbour: no ECMP group to measure")
        if time.monotonic() > give_up:
            raise MeasureFailed(f"{host.name}: no {window_s:g} s of uplink rates within {give_up_s:g} s "
                                f"({'; '.join(problems[:2]) or 'no throughput in the output'})")
        speeds.update({p: s for p, s in polled.speeds_gbps.items() if p in members})
        values = dict(polled.sample.values)
        values.update(rates.update(polled.sample).sample.values)
        down = tuple(sorted(p for p in members if values.get(("sw_oper_up", p, ""), 1.0) < 1.0))
        tx = {p: values[("sw_tx_gbps", p, "")] for p in members if ("sw_tx_gbps", p, "") in values}
        if waiting:
            lldp_back = [p for p in members if neighbours.get(p) == members[p]]
            carrying = bool(members) and len(tx) == len(members) and \
                sum(tx.values()) / len(members) >= thresholds.min_mean_gbps
            if members and not down and len(lldp_back) == len(members) and carrying:
                waiting = False
                waited_s = time.monotonic() - started_wait
                rates.forget(host.name)
                rates.update(polled.sample)  # rates from here on cover only the restarted switch
                tx = {}
                if on_wait is not None:
                    on_wait(f"{host.name} forwards again: {len(members)} uplinks up with their LLDP neighbours "
                            f"after {waited_s:.0f} s")
            elif time.monotonic() > deadline_forwarding:
                raise MeasureFailed(
                    f"{host.name}: not forwarding {wait_forwarding_s:g} s after the change "
                    f"({_back_words(members, down, lldp_back, carrying)})")
            elif on_wait is not None:
                on_wait(f"waiting for {host.name}: {_back_words(members, down, lldp_back, carrying)}; "
                        f"{time.monotonic() - started_wait:.0f} s of at most {wait_forwarding_s:g} s")
        if tx and not waiting:
            for port, gbps in tx.items():
                series.setdefault(port, []).append((polled.sample.ts, gbps))
            first_ts = polled.sample.ts if first_ts is None else first_ts
            if polled.sample.ts - first_ts >= window_s - interval_s / 2:
                break
        await asyncio.sleep(max(0.0, interval_s - (time.monotonic() - started)))
    group = [UplinkSeries(port, members[port], speeds.get(port, 0.0),
                          tuple(t for t, _ in series.get(port, ())), tuple(g for _, g in series.get(port, ())))
             for port in sorted(members, key=lambda port: (members[port], port))]
    return Measurement(assess_leaf(host.name, group, thresholds, jobs, flow_gbps), ports, down, problems,
                       dict(members), waited_s)


def _back_words(members: Mapping[str, str], down: Sequence[str], lldp_back: Sequence[str], carrying: bool) -> str:
    """``3 of 4 uplinks up, LLDP back on 2 of 4, no traffic yet``."""
    if not members:
        return "no uplink known yet (no LLDP neighbour is a spine)"
    total = len(members)
    return (f"{total - len(down)} of {total} uplinks up, LLDP back on {len(lldp_back)} of {total}, "
            f"{'carrying traffic' if carrying else 'no traffic yet'}")


@dataclass(frozen=True, slots=True)
class ProbePair:
    """Two node NICs on the same rail behind different leaves: a path over the leaf's uplinks."""

    src: str
    src_nic: str
    dst: str
    dst_nic: str


def nodes_on(ports: Sequence[PortRecord], nodes: Collection[str]) -> dict[str, str]:
    """Node -> its netdev on this switch, from the switch's LLDP neighbours."""
    return {p.peer_host: p.peer_port for p in ports if p.peer_host in nodes}


async def _device_of(pool: SshPool, node: str, netdev: str, timeout_s: float) -> str | None:
    result = await pool.run(node, command("show_gids"), timeout_s)
    if not result.ok:
        return None
    return next((g.device for g in parse_show_gids(result.stdout).gids if g.netdev == netdev), None)


async def find_probe_pair(pool: SshPool, leaf: str, ports_by_switch: Mapping[str, Sequence[PortRecord]],
                          nodes: Collection[str], timeout_s: float = 15.0) -> tuple[ProbePair | None, str]:
    """A node on ``leaf`` and one on another leaf, same netdev (rail); (None, why) when there is none."""
    mine = nodes_on(ports_by_switch.get(leaf, ()), nodes)
    for src, netdev in sorted(mine.items()):
        for other in sorted(s for s in ports_by_switch if s != leaf):
            theirs = {n: d for n, d in nodes_on(ports_by_switch[other], nodes).items() if d == netdev}
            if not theirs:
                continue
            dst = min(theirs)
            src_nic, dst_nic = await asyncio.gather(_device_of(pool, src, netdev, timeout_s),
                                                    _device_of(pool, dst, netdev, timeout_s))
            if src_nic is None or dst_nic is None:
                return None, f"no RDMA device with netdev {netdev} on {src if src_nic is None else dst}"
            return ProbePair(src, src_nic, dst, dst_nic), ""
    return None, f"no node pair across {leaf} on one rail is known (collect the fleet first)"


async def probe_across(pool: SshPool, pair: ProbePair, timeout_s: float = 30.0) -> ProbeRecord:
    """One ``ib_send_lat`` from ``pair.src`` to ``pair.dst`` (perftest_probe cleans up its server)."""
    spec = PerftestSpec(src=pair.src, dst=pair.dst, test="ib_send_lat", src_nic=pair.src_nic,
                        dst_nic=pair.dst_nic, timeout_s=timeout_s, run_id="ecmp-verify")
    return await run_perftest(pool, spec)


def probe_numbers(record: ProbeRecord | None) -> dict[str, object]:
    """What the audit keeps of a probe: ok, typical and p99 latency in microseconds, or the error."""
    if record is None:
        return {}
    if not record.ok:
        return {"ok": False, "src": record.src, "dst": record.dst, "error": record.result.get("error", "")}
    return {"ok": True, "src": record.src, "dst": record.dst,
            **{k: record.result[k] for k in ("t_typical_usec", "p99_usec") if k in record.result}}


def probe_worse(before: ProbeRecord | None, after: ProbeRecord | None, tolerance: float) -> tuple[bool, str]:
    """Whether the probe after the change is worse than before: failed, or p99 up by more than ``tolerance``."""
    if before is None or after is None:
        return False, "no probe"
    if not after.ok:
        return before.ok, f"probe after the change failed: {after.result.get('error', '')}"
    if not before.ok:
        return False, "probe before the change failed; after it works"
    key = "p99_usec" if before.result.get("p99_usec") and after.result.get("p99_usec") else "t_typical_usec"
    old, new = float(before.result.get(key) or 0.0), float(after.result.get(key) or 0.0)
    worse = new > old * (1 + tolerance) + 0.5
    return worse, f"probe {key} {old:.2f} -> {new:.2f} us" + (" (worse)" if worse else "")
