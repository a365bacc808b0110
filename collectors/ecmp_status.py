"""Leaf balances from the store, a short switch collection when the store has none, and leaf plans.

The pieces ``fleet ecmp status|plan|apply`` and the console's topology and plan
screens call: no printing, no Textual. Every one of them judges a leaf with
:func:`leaf_balances` (one assessment: the same numbers and state in the CLI
and the console), and ``apply`` refuses a leaf whose assessment needs no
remedy unless forced with a reason. A plan always reads the switch's running
configuration over SSH (never a cached one), so after a change whose outcome
is unknown the next plan shows what the switch really runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import statistics
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from fleet.collectors.ecmp_apply import ApplyOutcome, ApplySettings, EcmpApply, StepCallback
from fleet.collectors.ecmp_config import ConfigSnapshot, read_hash_config
from fleet.collectors.ecmp_measure import find_probe_pair
from fleet.collectors.engine import Collector
from fleet.collectors.inventory import Inventory, InventoryHost
from fleet.collectors.node_poller import CollectSettings
from fleet.collectors.sshpool import SshPool
from fleet.fabric.ecmp import EcmpThresholds, LeafBalance, UplinkSeries, assess_leaf, jobs_across
from fleet.fabric.ecmp_plan import Remedy, plan_remedies
from fleet.fabric.records import PortRecord
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter


def switch_data_age_s(reader: StoreReader, leaves: Sequence[str], now: float) -> float | None:
    """Seconds since the newest uplink throughput sample of any leaf; None when the store has none."""
    points = reader.latest(hosts=list(leaves), metrics=["sw_tx_gbps"])
    return now - max(p.ts for p in points) if points else None


def ports_by_switch(reader: StoreReader, switches: Sequence[str]) -> dict[str, list[PortRecord]]:
    """Each switch's ports with their LLDP neighbours, as last stored."""
    return {s: reader.ports(s) for s in switches}


def _speeds(reader: StoreReader, leaf: str, ports: Collection[str]) -> dict[str, float]:
    """Port speed in Gb/s from the stored gauges: util_pct = max(rx, tx) / speed."""
    latest = {(p.metric, p.device): p.value
              for p in reader.latest(hosts=[leaf], metrics=["sw_util_pct", "sw_rx_gbps", "sw_tx_gbps"])}
    speeds: dict[str, float] = {}
    for port in ports:
        util = latest.get(("sw_util_pct", port), 0.0)
        busiest = max(latest.get(("sw_rx_gbps", port), 0.0), latest.get(("sw_tx_gbps", port), 0.0))
        if util > 0.5:
            speeds[port] = float(round(busiest * 100.0 / util))
    if speeds:  # an idle member has the speed of its group (ECMP members are alike)
        typical = max(speeds.values())
        speeds = {port: speeds.get(port, typical) for port in ports}
    return speeds


KERNEL_QPS = {"InfiniBand": 2, "Ethernet": 1}
"""QPs every port holds for the kernel, not for flows: QP0 (SMI, InfiniBand only) and QP1 (GSI)."""


def flow_rate_gbps(reader: StoreReader, leaf_ports: Sequence[PortRecord], nodes: Collection[str]) -> float | None:
    """The rate of one flow on a leaf (Gb/s): the median over its nodes' NICs of the transmit rate over
    the connections each sends on, half its QPs beyond the kernel's (NCCL opens, per channel, one QP
    to the next rank and one from the previous: a QP pair is a flow, docs/domain.md "ECMP on RoCE fabrics").
    None when the store has no QP count or no traffic for them."""
    nics = [(p.peer_host, p.peer_port) for p in leaf_ports if p.peer_host in nodes]
    hosts = sorted({host for host, _ in nics})
    if not hosts:
        return None
    device_of = {(port.host, port.netdev): port for host in hosts for port in reader.ports(host) if port.netdev}
    latest = {(p.host, p.metric, p.device): p.value
              for p in reader.latest(hosts=hosts, metrics=["tx_gbps", "qp_count"])}
    rates = []
    for host, netdev in nics:
        port = device_of.get((host, netdev))
        device = port.device if port is not None else netdev
        tx, qps = latest.get((host, "tx_gbps", device)), latest.get((host, "qp_count", device))
        if tx is None or qps is None:
            continue
        sending = (qps - KERNEL_QPS.get(port.link_layer if port is not None else "", 1)) / 2
        if tx >= 1.0 and sending >= 1:
            rates.append(tx / sending)
    return statistics.median(rates) if rates else None


def leaf_balances(reader: StoreReader, inventory: Inventory, thresholds: EcmpThresholds, *, window_s: float,
                  end: float | None = None, leaves: Sequence[str] | None = None) -> list[LeafBalance]:
    """Every leaf's (or ``leaves``') uplink balance over the last ``window_s`` of its stored switch series,
    with its flows estimated (:func:`flow_rate_gbps`): the one assessment status, plan, apply and the
    console show.

    The window ends at the leaf's newest sample (at most ``end``): leaves are
    polled independently, so one slow poll must not cut another leaf's window.
    """
    spines = {h.name for h in inventory.by_role("spine")}
    nodes = {h.name for h in inventory.nodes}
    jobs = reader.jobs()
    chosen = leaves if leaves is not None else [h.name for h in inventory.by_role("leaf")]
    balances: list[LeafBalance] = []
    for leaf in chosen:
        ports = reader.ports(leaf)
        uplinks = {p.device: p.peer_host for p in ports if p.peer_host in spines}
        speeds = _speeds(reader, leaf, uplinks)
        newest = [p.ts for p in reader.latest(hosts=[leaf], metrics=["sw_tx_gbps"]) if p.device in uplinks]
        leaf_end = min(max(newest, default=end or 0.0), end if end is not None else float("inf"))
        start = leaf_end - window_s
        members = []
        for port, spine in sorted(uplinks.items(), key=lambda item: (item[1], item[0])):
            data = reader.series(leaf, "sw_tx_gbps", port, "", start=start, end=leaf_end, resolution="raw")
            members.append(UplinkSeries(port, spine, speeds.get(port, 0.0), tuple(data.ts), tuple(data.avg)))
        on_leaf = {p.peer_host for p in ports if p.peer_host in nodes}
        balances.append(assess_leaf(leaf, members, thresholds, jobs_across(on_leaf, jobs),
                                    flow_rate_gbps(reader, ports, nodes)))
    return balances


async def collect_switches(inventory: Inventory, writer: StoreWriter, duration_s: float,
                           interval_s: float) -> None:
    """Collect the switches, the Slurm head and the nodes (ports, counters, QPs, jobs) for ``duration_s`` s.

    The nodes are collected for their NICs' transmit rates and QP counts: the
    flow estimate behind a collision (:func:`flow_rate_gbps`). The seconds
    count from the first poll of every switch that answers (or from the hung
    timeout), so that connection set-up on a busy machine does not eat into
    the window the balance is judged over.
    """
    hosts = tuple(h for h in inventory.hosts if h.role in ("leaf", "spine", "head", "node"))
    sub = dataclasses.replace(inventory, hosts=hosts)
    settings = CollectSettings(interval_s=interval_s, hung_after_s=max(6.0, 3 * interval_s))
    collector = Collector(sub, writer, settings=settings)
    task = asyncio.ensure_future(collector.run())
    try:
        started = asyncio.get_running_loop().time()
        while (not task.done() and asyncio.get_running_loop().time() - started < settings.hung_after_s
               and any(p.polls == 0 and not collector.status_failed(p.host.name) for p in collector.switches)):
            await asyncio.sleep(interval_s / 4)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(task), timeout=duration_s)
    finally:
        await collector.close()
        await task


@dataclass(frozen=True, slots=True)
class LeafPlan:
    """A leaf's balance, the configuration it runs now (read from it) and the remedies, least disruptive first."""

    leaf: str
    balance: LeafBalance | None
    snapshot: ConfigSnapshot
    remedies: tuple[Remedy, ...]

    def as_json(self) -> dict[str, object]:
        return {
            "leaf": self.leaf,
            "balance": None if self.balance is None else self.balance.as_json(),
            "config": self.snapshot.config.as_json(),
            "config_read_with": list(self.snapshot.commands),
            "reachable": self.snapshot.reachable,
            "reason": self.snapshot.reason,
            "remedies": [r.as_json() for r in self.remedies],
        }


async def plan_leaf(pool: SshPool, host: InventoryHost, balance: LeafBalance | None,
                    timeout_s: float = 15.0) -> LeafPlan:
    """Read ``host``'s running hash configuration and plan its remedies."""
    snapshot = await read_hash_config(pool, host.name, host.os, timeout_s)
    jobs = balance.jobs if balance is not None else ()
    remedies = plan_remedies(host.name, snapshot.config, jobs) if snapshot.reachable else ()
    return LeafPlan(host.name, balance, snapshot, remedies)


def spine_names(inventory: Inventory) -> frozenset[str]:
    return frozenset(h.name for h in inventory.by_role("spine"))


def node_names(inventory: Inventory) -> frozenset[str]:
    return frozenset(h.name for h in inventory.nodes)


def leaf_ports(ports: Mapping[str, Sequence[PortRecord]], leaves: Collection[str]) -> dict[str, list[PortRecord]]:
    """Only the leaves' port lists (a probe pair needs nodes on two leaves)."""
    return {s: list(p) for s, p in ports.items() if s in leaves}


async def guarded_apply(pool: SshPool, inventory: Inventory, reader: StoreReader, writer: StoreWriter,
                        plan: LeafPlan, remedy: Remedy, *, actor: str, settings: ApplySettings, read_only: bool,
                        on_step: StepCallback | None = None, force_reason: str = "") -> ApplyOutcome:
    """Run ``remedy`` on ``plan``'s leaf with every guard, once the user confirmed it.

    Refused, before anything is sent, when ``plan.balance`` (the leaf's assessment) needs no remedy
    (idle, balanced, no data) unless ``force_reason`` says why it must run anyway; that reason is
    audited. Picks a probe pair across the leaf from the stored LLDP neighbours (none:
    verified on counters only, and ``on_step`` and the audit say so); writes
    each step with ``writer.put_action`` and each probe with ``writer.put_probe``.
    """
    if not read_only and (plan.balance is None or not plan.balance.actionable) and not force_reason.strip():
        why = "the store has no uplink data for it" if plan.balance is None else \
            f"it is {plan.balance.state}: {plan.balance.reason}"
        return ApplyOutcome(plan.leaf, remedy.id, "refused",
                            f"refused: {plan.leaf} needs no remedy, {why}; force it with a reason "
                            "(`fleet ecmp apply --force REASON`) if it must change anyway")
    leaves = [h.name for h in inventory.by_role("leaf")]
    pair, why = await find_probe_pair(pool, plan.leaf, leaf_ports(ports_by_switch(reader, leaves), leaves),
                                      node_names(inventory))
    if pair is None and on_step is not None:
        on_step("probe", f"{why}: verifying on counters only")
    applier = EcmpApply(pool, inventory.host(plan.leaf), remedy, spines=spine_names(inventory), actor=actor,
                        put_action=writer.put_action, settings=settings, probe=pair,
                        jobs=plan.balance.jobs if plan.balance is not None else (), on_step=on_step,
                        put_probe=writer.put_probe, force_reason=force_reason.strip(),
                        flow_gbps=plan.balance.flow_gbps if plan.balance is not None else None)
    return await applier.run(read_only=read_only)
