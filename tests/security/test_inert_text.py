"""Machine text is inert: never a terminal command, never markup (docs/hostile-input.md).

The ``hostile-names`` scenario makes the simulated machines name themselves with escape
sequences (ESC[2J, OSC 8 links, OSC 0 titles, DCS, C1 controls), Rich markup and HTML: in
Slurm job names, users and tenants, the GPU name, driver, firmware and kernel versions, LLDP
system names and port descriptions. Collected over real SSH, none of it reaches the store,
the console's screens (exported through Pilot) or a report (HTML, Markdown, JSON) as
anything but text: no ESC, C1 or BEL, HTML escaped, Markdown syntax escaped, markup shown as
typed. The report renderers escape even text that was stored before it was cleaned.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers.simfleet import running_fleet
from textual.pilot import Pilot

from fleet.collectors.inventory import load_inventory
from fleet.console.app import FleetApp
from fleet.console.cli import main
from fleet.console.config import Config
from fleet.console.feed import Feed, open_store_loader
from fleet.console.report_html import render_html
from fleet.console.report_markdown import render_markdown
from fleet.console.screens.audit import AuditScreen
from fleet.console.screens.baselines import BaselinesScreen
from fleet.console.screens.node import NodeScreen
from fleet.console.screens.topology import TopologyScreen
from fleet.console.screens.walkthrough import WalkthroughScreen
from fleet.console.widgets.fleet_table import FleetTable
from fleet.fabric.acceptance import evaluate, parse_criteria
from fleet.fabric.baseline import Baseline, CableCheck, FleetShape, diff, part_id
from fleet.fabric.events import Event, Finding, Severity
from fleet.fabric.records import ActionRecord, HostRecord, HostStatus, JobRecord, PortRecord
from fleet.fabric.report_model import Report, acceptance_report, diff_report
from fleet.fabric.samples import HostSample
from fleet.fabric.states import HostState
from fleet.simulator.scenario import load_scenario
from fleet.store.reader import StoreReader
from fleet.store.writer import StoreWriter

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "acceptance-criteria.example.toml"
ESC = "\x1b"
HOSTILE = {
    "clear": f"{ESC}[2J{ESC}[31mmallory",
    "link": f"acme{ESC}]8;;https://evil.example/{ESC}\\click{ESC}]8;;{ESC}\\",
    "title": f"train{ESC}]0;pwned{chr(7)}",
    "c1": "550.90.07\x9b31m<img src=x onerror=alert(1)>",
    "dcs": f"28.39.1002{ESC}P1$r{ESC}\\|pipe|`tick`",
    "markup": "[bold]big[/bold] [link=https://evil.example/]x[/link]",
    "html": "NVIDIA H100 <script>alert('gpu')</script>",
}
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
NUMERIC_CONTROLS = re.compile(r"&#(?:x0*(?:1b|9b|9d|7)|0*(?:27|155|157|7));|\\u00(?:1b|9b|9d|07)", re.IGNORECASE)
"""The same controls written as HTML character references or JSON escapes."""


def assert_inert(text: str, where: str) -> None:
    found = CONTROLS.search(text) or NUMERIC_CONTROLS.search(text)
    if found is not None:
        start = max(0, found.start() - 40)
        raise AssertionError(f"{where}: control {found.group()!r} in ...{text[start:found.end() + 40]!r}")


def strings(value: object) -> Iterator[str]:
    """Every string in a record: its fields, their dicts' keys and values, their tuples."""
    if isinstance(value, str):
        yield value
    elif dataclasses.is_dataclass(value):
        for item in dataclasses.fields(value):
            yield from strings(getattr(value, item.name))
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from strings(key)
            yield from strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings(item)


def assert_report_inert(report: Report) -> None:
    assert_inert(report.canonical, "report JSON")
    json.loads(report.canonical)
    html = render_html(report)
    assert_inert(html, "HTML report")
    assert "<script>alert" not in html and "<img" not in html, "HTML from a machine is escaped"
    markdown = render_markdown(report)
    assert_inert(markdown, "Markdown report")
    assert not re.search(r"(?<!\\)<(?:script|img)", markdown), "no raw HTML in the Markdown"
    assert not re.search(r"(?<!\\)\[link=", markdown), "no link can form in the Markdown"
    assert not re.search(r"(?<!\\)`tick", markdown), "no code span"


def hostile_baseline(label: str, gpu_model: str = HOSTILE["html"]) -> Baseline:
    """A baseline as a store written before cleaning could hold it: every string hostile."""
    nodes = ("gpu001", "gpu002")
    software = {node: {"kernel": HOSTILE["clear"], "gpu_driver": HOSTILE["c1"], "fw_mlx5_0": HOSTILE["dcs"],
                       "gpu_model": gpu_model} for node in nodes}
    parts = {part_id("nic", node, "mlx5_0"): {"bw_avg_gbps": 390.0, "rx_power_dbm": -1.0, "errors": 0.0,
                                              "packets": 1e9, "lat_p99_usec": 2.0} for node in nodes}
    return Baseline(
        label=label, ts=1_795_000_000.0, tool_version="fleet 0.1.0",
        shape=FleetShape(nodes, tuple(f"{n}:mlx5_0" for n in nodes), ("leaf01", "spine01"), (0,)),
        software=software, parts=parts,
        cabling={f"{n}:mlx5_0": CableCheck(HOSTILE["link"], "leaf01 swp1") for n in nodes},
        unreachable={"gpu003": HOSTILE["title"]},
        notes=(HOSTILE["markup"],),
    )


def test_reports_hold_machine_text_escaped_for_their_format() -> None:
    criteria = parse_criteria(EXAMPLE.read_text(), source="acceptance-criteria.example.toml")
    baseline = hostile_baseline(HOSTILE["title"])
    findings = [Finding("nic_check", Severity.WARNING, node="gpu001", nic="mlx5_0",
                        evidence={"problems": HOSTILE["clear"]}, next_step=HOSTILE["markup"])]
    acceptance = acceptance_report(criteria, baseline, evaluate(criteria, baseline, findings), findings,
                                   1_795_000_100.0)
    assert_report_inert(acceptance)
    markdown = render_markdown(acceptance)
    assert "NVIDIA H100 \\<script\\>alert('gpu')\\</script\\>" in markdown, "shown, as text"
    assert "28.39.1002\\|pipe\\|\\`tick\\`" in markdown
    assert "&lt;script&gt;alert(&#x27;gpu&#x27;)&lt;/script&gt;" in render_html(acceptance)
    other = hostile_baseline("month-2", gpu_model="NVIDIA H200")
    assert_report_inert(diff_report(diff(baseline, other), 1_795_000_200.0))


@pytest.mark.timeout(120)
async def test_collected_names_are_stored_as_text(tmp_path: Path) -> None:
    """``fleet collect --once --json`` against the hostile names: the store and the JSON hold only text."""
    db = tmp_path / "fleet.db"
    async with running_fleet(load_scenario("hostile-names"), tmp_path / "sim") as inventory:
        result = await asyncio.to_thread(
            CliRunner().invoke, main, ["collect", "--once", "--json", "--inventory", str(inventory), "--db", str(db)],
            catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert_inert(result.stdout, "collect --json")
    reader = StoreReader(db)
    try:
        hosts, ports, jobs = reader.hosts(), reader.ports(), reader.jobs()
        events = reader.events()
    finally:
        reader.close()
    gpu001 = next(h for h in hosts if h.name == "gpu001")
    assert gpu001.info["gpu_model"] == "NVIDIA H100 <script>alert('gpu')</script>"  # text, as the node said it
    assert gpu001.info["kernel"] == "5.15.0[red]alt[/red]"
    assert {j.name for j in jobs} == {"[bold]big[/bold]", "[link=https://evil.example/]x[/link]"}
    assert {j.user for j in jobs} == {"mallory", "eve"}
    assert {p.peer_host for p in ports if p.host == "gpu001"} == {f"leaf0{r}" for r in range(1, 9)}
    assert {p.peer_host for p in ports if p.host == "leaf01" and p.peer_host.startswith("gpu")} \
        == {"gpu001", "gpu002", "gpu003", "gpu004"}
    for record in (*hosts, *ports, *jobs, *events):
        for text in strings(record):
            assert_inert(text, repr(record))


SIZE = (200, 50)


async def screenshot_inert(app: FleetApp, where: str) -> str:
    """The screen as exported (SVG, as a user's screenshot): no control character, raw or escaped."""
    svg = app.export_screenshot()
    assert_inert(svg, where)
    return svg.replace("&#160;", " ")


async def drawn(app: FleetApp, pilot: Pilot[None]) -> None:
    """Two more views drawn (bounded): the screen shown has the store's newest data."""
    for _ in range(2):
        await asyncio.wait_for(app.next_view(), 30)
    await pilot.pause()


@pytest.mark.timeout(300)
async def test_every_screen_and_report_shows_machine_text_as_text(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The live console on the hostile names: Fleet, Node, Topology, Jobs, Events, Probes, Help, the
    acceptance Walkthrough (measured over SSH) and its reports, Baselines, Audit."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    db = tmp_path / "fleet.db"
    async with running_fleet(load_scenario("hostile-names"), tmp_path / "sim") as inventory_path:
        done = await asyncio.to_thread(  # facts, LLDP neighbours and jobs in the store before the console reads
            CliRunner().invoke, main, ["collect", "--once", "--inventory", str(inventory_path), "--db", str(db)],
            catch_exceptions=False)
        assert done.exit_code == 0, done.output
        inventory = load_inventory(inventory_path)
        config = Config(db_path=db, inventory_path=inventory_path, refresh_s=0.5)
        app = FleetApp(config, Feed(lambda: open_store_loader(db), refresh_s=0.5), inventory)
        async with app.run_test(size=SIZE) as pilot:
            await drawn(app, pilot)
            assert app.view is not None and len(app.view.jobs) == 2
            table = app.screen.query_one(FleetTable)
            rows = [r.name for r in app.screen.visible_rows(app.view)]  # type: ignore[attr-defined]
            table.move_cursor(row=rows.index("gpu001"))
            await pilot.pause()
            fleet = await screenshot_inert(app, "Fleet")
            assert "[bold]acme" in fleet, "the tenant on the reasons line, markup as typed"

            await pilot.press("3")
            await drawn(app, pilot)
            jobs = await screenshot_inert(app, "Jobs")
            assert "[bold]big[/bold]" in jobs and "mallory" in jobs, "markup as typed, not bold"
            assert "&lt;script&gt;" in jobs, "the tenant <script>..., escaped in the SVG as any text"

            for key, where in (("2", "Events"), ("p", "Probes"), ("question_mark", "Help")):
                await pilot.press(key)
                await drawn(app, pilot)
                await screenshot_inert(app, where)
                if where == "Help":
                    await pilot.press("escape")

            await pilot.press("4")
            await drawn(app, pilot)
            topology = app.screen
            assert isinstance(topology, TopologyScreen)
            topology.select_switch("leaf01")
            await drawn(app, pilot)
            assert "gpu001" in await screenshot_inert(app, "Topology")

            node = NodeScreen("gpu001")
            await app.push_screen(node)
            await asyncio.wait_for(node.drawn.wait(), 30)
            await screenshot_inert(app, "Node")
            await app.pop_screen()

            walkthrough = WalkthroughScreen(EXAMPLE)
            await app.push_screen(walkthrough)
            await asyncio.wait_for(walkthrough.measured.wait(), 150)
            await pilot.press("a")
            await pilot.pause()
            await screenshot_inert(app, "Walkthrough")
            assert walkthrough.report is not None
            await asyncio.wait_for(walkthrough.write(walkthrough.report, tmp_path / "acceptance.html").wait(), 60)
            assert walkthrough.report_written is not None
            written = walkthrough.report_written
            html, markdown = (path.read_text(encoding="utf-8") for path in (written.html, written.markdown))
            for text, where in ((html, "HTML report"), (markdown, "Markdown report")):
                assert_inert(text, where)
                assert "5.15.0[red]alt[/red]" in text.replace("\\", ""), f"{where}: the kernel, as text"
            assert "&lt;script&gt;alert(&#x27;gpu&#x27;)&lt;/script&gt;" in html
            assert "\\<script\\>alert('gpu')\\</script\\>" in markdown
            await app.pop_screen()

            for key, where in (("p", "Probes, after the link test"), ("2", "Events, after the link test")):
                await pilot.press(key)
                await drawn(app, pilot)
                await screenshot_inert(app, where)

            baselines = BaselinesScreen()
            await app.push_screen(baselines)
            await asyncio.wait_for(baselines.loaded.wait(), 30)
            await pilot.pause()
            await screenshot_inert(app, "Baselines")
            await app.pop_screen()

            audit = AuditScreen()
            await app.push_screen(audit)
            await asyncio.wait_for(audit.loaded.wait(), 30)
            await pilot.pause()
            await screenshot_inert(app, "Audit")


@pytest.mark.timeout(120)
async def test_a_store_written_before_cleaning_reads_and_shows_as_text(tmp_path: Path) -> None:
    """Text a store holds raw (an older version wrote it, or a hand) is inert when read: the reader
    cleans events, hosts, ports, states and jobs; the audit screen cleans what a switch said."""
    db = tmp_path / "fleet.db"
    now = time.time()
    writer = StoreWriter(db).start()
    try:
        writer.put_hosts([HostRecord("gpu001", "node", info={"kernel": HOSTILE["clear"], "gpu_model": HOSTILE["html"]}),
                          HostRecord("leaf01", "leaf", os="cumulus")])
        writer.put_ports([PortRecord("gpu001", "mlx5_0", "1", "ens1", "Ethernet", HOSTILE["link"], "swp1"),
                          PortRecord("leaf01", "swp1", "", peer_host=HOSTILE["title"], peer_port="mlx5_0")])
        writer.put_host_status(HostStatus("gpu001", HostState.UNPARSABLE, now, HOSTILE["c1"]))
        writer.put_samples(HostSample("gpu001", now, {("host_up", "", ""): 1.0, ("port_state", HOSTILE["clear"], "1"): 4.0,
                                                      ("rx_gbps", HOSTILE["clear"], "1"): 10.0}))
        writer.put_jobs([JobRecord(now, "7", HOSTILE["markup"], HOSTILE["clear"], HOSTILE["link"], "RUNNING",
                                   ("gpu001",))], ts=now)
        writer.put_event(Event(now, "host_state", Severity.WARNING, f"gpu001: {HOSTILE['dcs']}", host="gpu001",
                               data={"reason": HOSTILE["title"]}))
        writer.put_action(ActionRecord(now, "me@here", "leaf01", "ecmp.apply", "apply", ("nv config apply",),
                                       HOSTILE["clear"], verdict=HOSTILE["link"]))
        writer.flush(timeout=10)
    finally:
        writer.close(timeout=10)
    reader = StoreReader(db)
    try:
        stored = [*reader.hosts(), *reader.ports(), *reader.jobs(), *reader.events(), *reader.host_statuses().values(),
                  *reader.latest()]
    finally:
        reader.close()
    for record in stored:
        for text in strings(record):
            assert_inert(text, repr(record))
    app = FleetApp(Config(db_path=db, refresh_s=0.5), Feed(lambda: open_store_loader(db), refresh_s=0.5))
    async with app.run_test(size=SIZE) as pilot:
        await drawn(app, pilot)
        for key, where in (("1", "Fleet"), ("2", "Events"), ("3", "Jobs"), ("4", "Topology")):
            await pilot.press(key)
            await drawn(app, pilot)
            await screenshot_inert(app, where)
        node = NodeScreen("gpu001")
        await app.push_screen(node)
        await asyncio.wait_for(node.drawn.wait(), 30)
        async def nic_shown() -> None:
            while "mallory" not in await screenshot_inert(app, "Node"):
                await app.next_view()

        await asyncio.wait_for(nic_shown(), 30)  # the NIC a node named, cleaned
        await app.pop_screen()
        audit = AuditScreen()
        await app.push_screen(audit)
        await asyncio.wait_for(audit.loaded.wait(), 30)
        await pilot.pause()
        assert "mallory" in await screenshot_inert(app, "Audit"), "the switch's output, cleaned"
