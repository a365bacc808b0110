"""Shards: every host in exactly one, an even share each, the same split everywhere, few moves when N grows."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.simfleet import running_fleet, small_scenario

from fleet.collectors.inventory import CablingRow, Inventory, InventoryHost, load_inventory
from fleet.collectors.shard import Shard, parse_shard, shard_inventory, shard_of
from fleet.console.cli import main
from fleet.store.reader import StoreReader


def _fleet(nodes: int = 1024, leaves: int = 64, spines: int = 16) -> Inventory:
    hosts = ([InventoryHost(f"gpu{i:04d}", "node") for i in range(1, nodes + 1)]
             + [InventoryHost(f"leaf{i:02d}", "leaf", os="cumulus") for i in range(1, leaves + 1)]
             + [InventoryHost(f"spine{i:02d}", "spine", os="cumulus") for i in range(1, spines + 1)]
             + [InventoryHost("head01", "head")])
    return Inventory(Path("inventory.toml"), tuple(hosts), None, 1.0)


@pytest.mark.parametrize(("text", "expected"), [("1/2", Shard(1, 2)), (" 3 / 3 ", Shard(3, 3)), ("1/1", Shard(1, 1))])
def test_shards_are_written_k_of_n(text: str, expected: Shard) -> None:
    assert parse_shard(text) == expected
    assert str(expected) == text.replace(" ", "")


@pytest.mark.parametrize("text", ["0/2", "3/2", "1/0", "2", "a/b", "-1/2", "1/5000", ""])
def test_a_bad_shard_is_refused_with_its_reason(text: str) -> None:
    with pytest.raises(ValueError, match=r"K/N|outside|must be"):
        parse_shard(text)


@pytest.mark.parametrize("count", [1, 2, 3, 7, 16])
def test_every_host_is_in_exactly_one_shard(count: int) -> None:
    fleet = _fleet()
    parts = [shard_inventory(fleet, Shard(k, count)) for k in range(1, count + 1)]
    names = Counter(host.name for part in parts for host in part.hosts)
    assert set(names) == {host.name for host in fleet.hosts}
    assert set(names.values()) == {1}
    for part in parts:  # each keeps the inventory's order and settings
        order = [host.name for host in fleet.hosts if host.name in {h.name for h in part.hosts}]
        assert [host.name for host in part.hosts] == order
        assert part.interval_s == fleet.interval_s and part.path == fleet.path
    heads = [part.head for part in parts if part.head is not None]
    assert [head.name for head in heads] == ["head01"]


def test_shares_are_even() -> None:
    fleet = _fleet()
    for count in (2, 4, 8):
        sizes = [len(shard_inventory(fleet, Shard(k, count)).hosts) for k in range(1, count + 1)]
        fair = len(fleet.hosts) / count
        assert all(abs(size - fair) < 0.2 * fair for size in sizes), (count, sizes)


def test_the_split_is_pinned_so_every_machine_and_release_agrees() -> None:
    """N collectors agree only if they compute the same split: a change here moves hosts in running fleets."""
    assert [shard_of(name, 4) for name in ("gpu0001", "gpu0002", "leaf01", "spine01", "head01")] == [2, 4, 2, 3, 4]


def test_a_new_shard_takes_hosts_and_moves_no_other() -> None:
    fleet = _fleet()
    moved = [host.name for host in fleet.hosts if shard_of(host.name, 4) != shard_of(host.name, 5)]
    assert all(shard_of(name, 5) == 5 for name in moved)
    assert 0.1 < len(moved) / len(fleet.hosts) < 0.3  # about a fifth, where hash mod N would move ~4/5


def test_a_shard_keeps_the_cables_it_sees_one_end_of() -> None:
    fleet = _fleet(nodes=64, leaves=4, spines=2)
    plan = tuple(CablingRow(f"gpu{i:04d}", "mlx5_0", f"leaf{(i - 1) // 16 + 1:02d}", f"swp{i}") for i in range(1, 65))
    fleet = Inventory(fleet.path, fleet.hosts, None, 1.0, plan)
    for k in (1, 2, 3):
        part = shard_inventory(fleet, Shard(k, 3))
        names = {host.name for host in part.hosts}
        assert {row for row in plan if row.node in names or row.switch in names} == set(part.cabling)


@pytest.mark.timeout(120)
async def test_two_collectors_cover_the_simulated_fleet_without_overlap(tmp_path: Path) -> None:
    async with running_fleet(small_scenario(), tmp_path / "sim") as inventory_path:
        results = []
        for k in (1, 2):
            db = tmp_path / f"shard{k}.db"
            results.append(await asyncio.to_thread(
                CliRunner().invoke, main, ["collect", "--once", "--json", "--shard", f"{k}/2",
                                           "--inventory", str(inventory_path), "--db", str(db)],
                catch_exceptions=False))
        empty = await asyncio.to_thread(CliRunner().invoke, main, ["collect", "--once", "--shard", "1/4000",
                                                                   "--inventory", str(inventory_path)])
    inventory = load_inventory(inventory_path)
    assert empty.exit_code == 2 and "holds no host" in empty.stderr
    owned: list[set[str]] = []
    for k, result in zip((1, 2), results, strict=True):
        assert result.exit_code == 0, result.output
        document = json.loads(result.stdout)
        assert document["shard"]["index"] == k and document["shard"]["count"] == 2
        hosts = set(document["shard"]["hosts"])
        assert set(document["hosts"]) == hosts  # it collected its own hosts and no other
        with StoreReader(tmp_path / f"shard{k}.db") as reader:
            assert {point.host for point in reader.latest()} <= hosts
            assert set(reader.host_statuses()) == hosts
        owned.append(hosts)
    assert not owned[0] & owned[1]
    assert owned[0] | owned[1] == {host.name for host in inventory.hosts}
