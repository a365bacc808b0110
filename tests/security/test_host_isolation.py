"""One machine's output never stops the rest of the fleet (docs/hostile-input.md).

The ``hostile-output`` scenario over real SSH: one node's ``lldpctl -f json`` prints JSON
nested 100,000 deep, one NVUE leaf answers ``nv show interface swpN counters -o json`` with
a one-column table, and the Slurm head prints binary bytes for ``squeue --json``. Each of the
three is named ``unparsable`` with the command and what was wrong, an event is stored, and
every other host is collected, once (``fleet collect --once --json``) and streaming. Then
every form of hostile output (``fleet.simulator.hostile``) on a node, a switch and the head.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.simfleet import running_fleet
from textual.worker import WorkerState

from fleet.collectors.engine import Collector, RoundSummary
from fleet.collectors.inventory import load_inventory
from fleet.collectors.node_poller import CollectSettings
from fleet.console.app import FleetApp
from fleet.console.cli import main
from fleet.console.config import Config
from fleet.console.feed import Feed, open_store_loader
from fleet.console.view_model import ConsoleView
from fleet.console.widgets.fleet_table import FleetTable
from fleet.fabric.records import HostStatus
from fleet.fabric.states import HostState
from fleet.simulator.scenario import Scenario, load_scenario, parse_scenario
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

FLEET = """
[fabric]
nodes = 4
nodes_per_leaf = 4
spines = 1
link_layer = "roce"
link_gbps = 400
seed = 5

[[jobs]]
id = 61
tenant = "acme"
nodes = "gpu[001-004]"
load = 0.4

{faults}
"""

BAD = {"gpu002", "leaf01", "head01"}
REASONS = {"gpu002": "lldpctl -f json: ", "leaf01": "nv show interface swp", "head01": "squeue --json: "}
"""The start of each bad host's reason: the command that printed what could not be read."""


def hostile(target: str, form: str, command: str) -> str:
    """A ``hostile_output`` fault's TOML."""
    return f'[[faults]]\nkind = "hostile_output"\ntarget = "{target}"\nform = "{form}"\ncommand = "{command}"\n'


async def collect_once(tmp_path: Path, scenario: Scenario) -> tuple[dict[str, dict[str, str]], Path]:
    """``fleet collect --once --json`` against ``scenario``: (hosts' states and reasons, the db)."""
    db = tmp_path / "fleet.db"
    async with running_fleet(scenario, tmp_path / "sim") as inventory:
        result = await asyncio.to_thread(
            CliRunner().invoke, main, ["collect", "--once", "--json", "--inventory", str(inventory), "--db", str(db)],
            catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output  # some hosts failed: never a crash
    return json.loads(result.stdout)["hosts"], db


def stored_events(db: Path, host: str) -> list[str]:
    reader = StoreReader(db)
    try:
        return [e.data.get("state", "") for e in reader.events(host=host, kind="host_state")]
    finally:
        reader.close()


@pytest.mark.timeout(120)
async def test_one_round_names_the_hosts_that_printed_hostile_output_and_reads_every_other(tmp_path: Path) -> None:
    hosts, db = await collect_once(tmp_path, load_scenario("hostile-output"))
    for host in BAD:
        assert hosts[host]["state"] == "unparsable", (host, hosts[host])
        reason = hosts[host]["reason"]
        assert reason.startswith(REASONS[host]) and "\n" not in reason and len(reason) <= 200, reason
        assert "unparsable" in stored_events(db, host), f"no event stored for {host}"
    assert "counters -o json: " in hosts["leaf01"]["reason"]
    others = {host: entry["state"] for host, entry in hosts.items() if host not in BAD}
    assert others and all(state == "ok" for state in others.values()), others
    reader = StoreReader(db)
    try:
        sampled = {point.host for point in reader.latest() if point.metric in ("tx_bytes", "sw_oper_up")}
    finally:
        reader.close()
    assert {"gpu001", "gpu003", "gpu004", "leaf02", "spine01"} <= sampled


FLOODS = hostile("gpu002", "huge", "python3 *") + hostile("leaf01", "long_line", "nv *")
"""A node whose agent floods 16 MiB of bad lines each interval, a leaf whose every poll is one endless line."""


@pytest.mark.timeout(180)
@pytest.mark.parametrize(("faults", "bad"), [("hostile-output", BAD), (FLOODS, {"gpu002", "leaf01"})],
                         ids=["hostile-output", "floods"])
async def test_streaming_goes_on_for_every_other_host(tmp_path: Path, faults: str, bad: set[str]) -> None:
    """The collector of ``fleet collect`` and the console: the bad hosts are marked, the others
    keep streaming round after round, and the collector never ends on its own. A flood costs
    the collector one line per stream: the stream ends at the first bad line."""
    statuses: asyncio.Queue[HostStatus] = asyncio.Queue()
    rounds: asyncio.Queue[RoundSummary] = asyncio.Queue()
    scenario = load_scenario(faults) if faults == "hostile-output" else \
        parse_scenario(FLEET.format(faults=faults), source="floods.toml")
    async with running_fleet(scenario, tmp_path / "sim") as inventory_path:
        writer = StoreWriter(tmp_path / "fleet.db").start()
        try:
            inventory = load_inventory(inventory_path)
            # facts (where gpu002's lldpctl is) within a second, not every five minutes
            settings = CollectSettings(interval_s=0.5, facts_every_s=1.0)
            collector = Collector(inventory, writer, settings=settings, on_status=statuses.put_nowait,
                                  on_round=rounds.put_nowait)
            task = asyncio.ensure_future(collector.run())

            async def marked() -> None:
                seen: set[str] = set()
                while not bad.issubset(seen):
                    status = await statuses.get()
                    if status.state is HostState.UNPARSABLE and status.host in bad:
                        seen.add(status.host)

            await asyncio.wait_for(marked(), 60)
            good_nodes = [n for n in collector.nodes if n.host.name not in bad]
            good_switches = [s for s in collector.switches if s.host.name not in bad]
            polls = {s.host.name: s.polls for s in good_switches}
            for _ in range(3):  # three more samples from every other node
                for node in good_nodes:
                    node.got_sample.clear()
                await asyncio.wait_for(asyncio.gather(*(n.got_sample.wait() for n in good_nodes)), 30)

            async def switches_polled() -> None:
                while not all(s.polls >= polls[s.host.name] + 2 for s in good_switches):
                    await rounds.get()

            await asyncio.wait_for(switches_polled(), 30)
            assert not task.done(), "the collector keeps running"
            states = collector.status.all()
            assert all(states[h].state is HostState.UNPARSABLE for h in bad), {h: states[h] for h in bad}
            assert all(states[n.host.name].state is HostState.OK for n in good_nodes)
            await collector.close()
            await asyncio.wait_for(task, 30)
        finally:
            writer.close(timeout=10)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("target", "form", "command", "reason"), [
    ("gpu002", "deep_json", "python3 *", "agent line: "),  # every agent line nested 100,000 deep
    ("gpu002", "binary", "python3 *", "agent line: "),
    ("gpu002", "long_line", "python3 *", "python3: a line over 1048576 bytes"),
    ("gpu002", "huge", "lldpctl *", "uname, grep, nvidia-smi, lldpctl, ethtool: output over 8388608 bytes"),
    ("leaf01", "huge", "nv *", "date, nv: output over 8388608 bytes"),
    ("leaf01", "binary", "nv show interface * counters -o json", "nv show interface swp1 counters -o json: "),
    ("head01", "long_line", "squeue *", "squeue: a line over 1048576 bytes"),
])
async def test_every_hostile_form_is_that_hosts_problem(tmp_path: Path, target: str, form: str, command: str,
                                                       reason: str) -> None:
    hosts, db = await collect_once(tmp_path, parse_scenario(FLEET.format(faults=hostile(target, form, command)),
                                                            source="hostile.toml"))
    assert hosts[target]["state"] == "unparsable", hosts[target]
    assert hosts[target]["reason"].startswith(reason), hosts[target]
    assert "unparsable" in stored_events(db, target)
    others = {host: entry["state"] for host, entry in hosts.items() if host != target}
    assert all(state == "ok" for state in others.values()), others


@pytest.mark.timeout(180)
async def test_the_console_stays_up_and_shows_the_hosts_that_printed_hostile_output(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The console's own collector against the ``hostile-output`` fleet: the app keeps running, the
    bad hosts show as unparsable with their reasons (Fleet table, reasons line, Topology), and
    every other node stays ok with fresh values."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    db = tmp_path / "fleet.db"
    async with running_fleet(load_scenario("hostile-output"), tmp_path / "sim") as inventory_path:
        config = Config(db_path=db, inventory_path=inventory_path, refresh_s=0.5)
        app = FleetApp(config, Feed(lambda: open_store_loader(db), refresh_s=0.5), load_inventory(inventory_path))
        async with app.run_test(size=(200, 50)) as pilot:

            def shown(view: ConsoleView) -> bool:
                statuses = view.snapshot.statuses
                rows = {row.name: row for row in view.rows}
                return (all(h in statuses and statuses[h].state is HostState.UNPARSABLE for h in BAD)
                        and all(rows[n].state == "ok" and rows[n].rx_gbps is not None
                                for n in ("gpu001", "gpu003", "gpu004") if n in rows)
                        and len(rows) == 4)

            async def wait_shown() -> ConsoleView:
                while app.view is None or not app.view.snapshot.complete or not shown(app.view):
                    await app.next_view()
                return app.view

            view = await asyncio.wait_for(wait_shown(), 90)
            await asyncio.wait_for(app.next_view(), 30)  # and the collector goes on after that
            collector = next(w for w in app.workers if w.group == "collector")
            assert collector.state is WorkerState.RUNNING, "the console's collector keeps running"
            rows = [r.name for r in app.screen.visible_rows(app.view)]  # type: ignore[attr-defined]
            app.screen.query_one(FleetTable).move_cursor(row=rows.index("gpu002"))
            await pilot.pause()
            fleet = app.export_screenshot().replace("&#160;", " ")
            assert "unparsable: lldpctl -f json: JSON nested deeper than 64 levels" in fleet, "the reasons line names the command"
            assert "gpu002" in fleet and "unparsable" in fleet
            await pilot.press("2")
            await asyncio.wait_for(app.next_view(), 30)
            await pilot.pause()
            events = app.export_screenshot().replace("&#160;", " ")
            for host in BAD:  # the event of each bad host, with its reason
                assert f"{host}: " in events and f"unparsable ({REASONS[host]}" in events, host
            assert view.snapshot.statuses["leaf01"].reason.startswith("nv show interface swp")
