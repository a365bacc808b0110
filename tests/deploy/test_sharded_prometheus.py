"""Two shards collect the simulated fleet, a real Prometheus scrapes both with the shipped rules, and the
Grafana dashboard's every query has data.

Checked through Prometheus's HTTP API, as an operator's Prometheus would hold it: every host's series
arrive once, from the one shard that collects it, with the labels docs/metrics.md documents; the
recording and alert rules evaluate without error on real data; every panel and variable of
deploy/grafana/fleet.json returns series.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers.prometheus import get_json, wait_for
from helpers.shards import ShardedFleet, sharded_fleet

from fleet.collectors.openmetrics import EXPORTED, FAMILY_ORDER
from fleet.fabric.samples import METRICS, MetricKind
from fleet.store.reader import StoreReader

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "grafana" / "fleet.json"
PROMETHEUS_LABELS = {"__name__", "job", "instance"}
"""What Prometheus adds to every scraped series: the name, the scrape job and the target."""

pytestmark = pytest.mark.timeout(420)


def _documented() -> dict[str, set[str]]:
    """Series name -> its labels, from the tables of docs/metrics.md (the contract)."""
    rows = re.findall(r"^\| `(fleet_[a-z0-9_]+)` \| \w+ \| ([^|]+) \|", (ROOT / "docs" / "metrics.md").read_text(),
                      re.MULTILINE)
    return {name: {label.strip() for label in labels.split(",")} for name, labels in rows}


def _ready(fleet: ShardedFleet) -> bool:
    prometheus = fleet.prometheus
    hosts = {s["metric"]["node"] for s in prometheus.query("fleet_host_up")}
    rated = {s["metric"]["node"] for s in prometheus.query("fleet:node_tx_gbps:sum > 0")}
    jobs = prometheus.query("fleet_slurm_job_rdma_latency_p99_usec")
    loss = prometheus.query("fleet:slurm_job_loss_ratio:rate2m")
    balance = prometheus.query("fleet:leaf_uplink_imbalance:ratio")
    return (hosts == {h.name for h in fleet.inventory.hosts} and rated == {h.name for h in fleet.inventory.nodes}
            and len(jobs) == 2 and len(loss) == 2 and len(balance) > 0)


def test_two_shards_in_prometheus_with_the_shipped_rules_and_dashboard(tmp_path: Path) -> None:
    """One test, one fleet: ``make test`` spreads tests over workers, and each would start its own fleet."""
    with sharded_fleet(tmp_path / "sharded") as fleet:
        wait_for(lambda: _ready(fleet), 150, "every host, rate, job latency and rule in Prometheus", poll_s=1.0)
        _every_host_is_collected_by_exactly_one_shard(fleet)
        _every_series_arrives_once_with_the_documented_labels(fleet)
        _the_shipped_rules_evaluate_on_real_data_without_error(fleet)
        empty = [(title, expr) for title, expr in _panel_queries() if not _has_data(fleet, expr)]
        assert empty == [], "dashboard queries without data"


def _every_host_is_collected_by_exactly_one_shard(fleet: ShardedFleet) -> None:
    shards = {shard.target: shard for shard in fleet.shards}
    where = Counter((s["metric"]["node"], s["metric"]["instance"]) for s in fleet.prometheus.query("fleet_host_up"))
    nodes = Counter(node for node, _ in where)
    assert set(nodes) == {host.name for host in fleet.inventory.hosts}
    assert set(nodes.values()) == {1}
    assert {instance for _, instance in where} == set(shards)
    for target, shard in shards.items():
        with StoreReader(shard.db) as reader:
            assert {node for node, instance in where if instance == target} == set(reader.host_statuses())


def _every_series_arrives_once_with_the_documented_labels(fleet: ShardedFleet) -> None:
    documented = _documented()
    found = fleet.prometheus.query('{__name__=~"fleet_.+"}')
    seen: Counter[tuple[tuple[str, str], ...]] = Counter()
    for sample in found:
        labels = sample["metric"]
        name = labels["__name__"]
        assert name in documented, f"{name} is not in docs/metrics.md"
        own = {key for key in labels if key not in PROMETHEUS_LABELS}
        allowed = documented[name] | ({k for k in own if k.startswith("info_")} if "info_*" in documented[name] else set())
        assert own <= allowed, (name, own - allowed)
        seen[tuple(sorted((k, v) for k, v in labels.items() if k != "instance"))] += 1
    assert [key for key, count in seen.items() if count > 1] == []
    # Per shard, the sample series are exactly what its store holds (a series is its name and labels).
    for shard in fleet.shards:
        with StoreReader(shard.db) as reader:
            stored = {(EXPORTED[p.metric].sample_name, p.host) for p in reader.latest()
                      if p.metric in FAMILY_ORDER and METRICS[p.metric].kind is not MetricKind.ERROR}
        scraped = {(s["metric"]["__name__"], s["metric"]["node"]) for s in found
                   if s["metric"]["instance"] == shard.target and s["metric"]["__name__"] in
                   {EXPORTED[m].sample_name for m in FAMILY_ORDER}}
        assert stored <= scraped, sorted(stored - scraped)[:5]
        assert {node for _, node in scraped} == {node for _, node in stored}
    # Every node's NIC, GPU and optics series, from its one shard, with every label it documents.
    nodes = {host.name for host in fleet.inventory.nodes}
    for family, labels in (("fleet_nic_tx_bytes_total", {"node", "device", "port"}),
                           ("fleet_gpu_util_pct", {"node", "gpu"}), ("fleet_optics_rx_power_dbm", {"node", "device", "port"})):
        series = [s["metric"] for s in found if s["metric"]["__name__"] == family]
        assert {m["node"] for m in series} == nodes
        assert all(set(m) - PROMETHEUS_LABELS == labels for m in series)
    jobs = {(s["metric"]["slurm_job"], s["metric"]["tenant"]) for s in found
            if s["metric"]["__name__"] == "fleet_slurm_job_node_info"}
    assert jobs == {("1001", "acme"), ("1002", "globex")}


def _the_shipped_rules_evaluate_on_real_data_without_error(fleet: ShardedFleet) -> None:
    groups = get_json(f"{fleet.prometheus.url}/api/v1/rules")["data"]["groups"]
    rules = [rule for group in groups for rule in group["rules"]]
    assert len(rules) == 44
    assert [(rule["name"], rule.get("lastError")) for rule in rules if rule["health"] != "ok"] == []
    firing = fleet.prometheus.query('ALERTS{alertstate="firing"}')
    assert firing == []  # the healthy scenario raises nothing


def _panel_queries() -> list[tuple[str, str]]:
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [(panel["title"], target["expr"]) for panel in dashboard["panels"] for target in panel.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            selector, label = re.fullmatch(r"label_values\((.+), (\w+)\)", variable["query"]["query"]).groups()
            queries.append((f"variable {variable['name']}", f"count by ({label}) ({selector})"))
    return queries


def _with_all(expr: str) -> str:
    """The query as Grafana sends it with every variable at All (``.*``) and the rate interval at 2m."""
    return re.sub(r"\$(tenant|slurm_job|leaf)\b", ".*", expr).replace("$__rate_interval", "2m")


def test_the_dashboard_is_a_grafana_dashboard() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    panels = [panel for panel in dashboard["panels"] if panel["type"] != "row"]
    assert len({panel["id"] for panel in dashboard["panels"]}) == len(dashboard["panels"])
    assert all(panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"} for panel in panels)
    titles = " ".join(panel["title"] for panel in panels)
    for wanted in ("p99 latency per job", "p99 latency per tenant", "loss per job", "loss per tenant",
                   "GPU utilisation per job", "GPU utilisation per tenant", "throughput per job",
                   "throughput per tenant", "PFC pause frames per leaf", "ECN marks per leaf", "ECMP balance per leaf"):
        assert wanted in titles


def _has_data(fleet: ShardedFleet, expr: str) -> bool:
    """Whether the query, as Grafana sends it, has series now and over the last minute (an invalid query fails)."""
    result: list[dict[str, Any]] = fleet.prometheus.query(_with_all(expr))
    if not result:
        return False
    end = float(result[0]["value"][0])
    return bool(fleet.prometheus.query_range(_with_all(expr), end - 60, end, 15))
