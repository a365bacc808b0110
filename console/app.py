"""The fleet console: wiring only. Global keys, themes, screens, and the two workers
(store refresh, collector) whose results the screens draw."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from fleet.console.actions import is_machine_changing
from fleet.console.commands import FleetCommands, JobCommands, NodeCommands, ToolCommands
from fleet.console.config import Config
from fleet.console.feed import Feed, run_collector
from fleet.console.messages import (
    CollectorRoundFinished,
    DiagnosisRan,
    HostStatusChanged,
    JobChosen,
    LinktestFinished,
    NodeChosen,
    ProbeFinished,
    ProbeProgressed,
    SnapshotLoaded,
    SwitchChosen,
)
from fleet.console.probe_control import ProbeControl
from fleet.console.screens.audit import AuditScreen
from fleet.console.screens.baselines import BaselinesScreen
from fleet.console.screens.config import ConfigScreen
from fleet.console.screens.ecmp_plan import EcmpPlanScreen
from fleet.console.screens.events import EventsScreen
from fleet.console.screens.fleet import FleetScreen
from fleet.console.screens.help import HelpScreen
from fleet.console.screens.jobs import JobsScreen
from fleet.console.screens.jump import JumpScreen
from fleet.console.screens.links import LinksScreen
from fleet.console.screens.node import NodeScreen
from fleet.console.screens.path_prompt import PathPrompt
from fleet.console.screens.probes import ProbesScreen
from fleet.console.screens.topology import TopologyScreen
from fleet.console.screens.walkthrough import WalkthroughScreen
from fleet.console.theming import load_themes, stylesheet_path
from fleet.console.view_model import ConsoleView
from fleet.fabric.records import HostStatus
from fleet.fabric.states import HostState
from fleet.store.errors import StoreWriteError
from fleet.store.writer import StoreWriter

REPLAY_STEP_S = 60.0
REPLAY_BIG_STEP_S = 600.0


class FleetApp(App[None]):
    CSS_PATH = stylesheet_path()
    TITLE = "fleet"
    COMMANDS: ClassVar = App.COMMANDS | {NodeCommands, JobCommands, FleetCommands, ToolCommands}
    MODES: ClassVar = {
        "fleet": FleetScreen, "events": EventsScreen, "jobs": JobsScreen, "topology": TopologyScreen,
        "probes": ProbesScreen,
    }
    DEFAULT_MODE = "fleet"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "help", "Keys", id="app.help"),
        Binding("colon,ctrl+p", "command_palette", "Palette", id="app.palette"),
        Binding("1", "goto('fleet')", "Fleet", id="app.fleet"),
        Binding("2", "goto('events')", "Events", id="app.events"),
        Binding("3", "goto('jobs')", "Jobs", id="app.jobs"),
        Binding("4", "goto('topology')", "Topology", id="app.topology"),
        Binding("p", "goto('probes')", "Probes", id="app.probes"),
        Binding("left_square_bracket", f"replay_step({-REPLAY_STEP_S})", "-1 min", id="app.replay_back"),
        Binding("right_square_bracket", f"replay_step({REPLAY_STEP_S})", "+1 min", id="app.replay_forward"),
        Binding("left_curly_bracket", f"replay_step({-REPLAY_BIG_STEP_S})", "-10 min", show=False,
                id="app.replay_back_big"),
        Binding("right_curly_bracket", f"replay_step({REPLAY_BIG_STEP_S})", "+10 min", show=False,
                id="app.replay_forward_big"),
        Binding("g", "replay_jump", "Go to", id="app.replay_jump"),
        Binding("L", "replay_live", "Live", id="app.replay_live"),
        Binding("B", "baselines", "Baselines", id="app.baselines"),
        Binding("N", "links", "NVLink vs network", id="app.links"),
        Binding("W", "walkthrough", "Walkthrough", id="app.walkthrough"),
        Binding("A", "audit", "Audit", id="app.audit"),
        Binding("C", "config", "Config", id="app.config"),
        Binding("ctrl+s", "save_svg", "Screenshot", id="app.screenshot"),
        Binding("q", "quit", "Quit", id="app.quit"),
    ]

    view: reactive[ConsoleView | None] = reactive(None, always_update=True)
    """The newest view of the fleet at the moment shown; screens draw it."""
    cursor_ts: reactive[float | None] = reactive(None)
    """The replayed moment (unix seconds); None: live."""
    highlighted_nodes: reactive[frozenset[str]] = reactive(frozenset())
    """Nodes of the job chosen on the Jobs screen, marked on Fleet and Topology."""
    writer_problem: reactive[str] = reactive("")
    """Why the store writer of the in-console collector is behind or failing; "" when fine."""
    store_failing: reactive[str] = reactive("")
    """Why the in-console collector's store cannot write, after the writer's retries (the header shows
    STORE FAILING with it); "" while it writes. The writer keeps retrying: space may come back."""

    def __init__(self, config: Config, feed: Feed, inventory: Any = None) -> None:
        super().__init__()
        self.config = config
        self.feed = feed
        self.inventory = inventory
        self._refreshing = False
        self._refresh_again = False
        self._view_waiters: list[asyncio.Future[ConsoleView]] = []
        self._last_read_s = 0.0
        self._last_read_end = 0.0
        self.set_reactive(FleetApp.cursor_ts, config.at_ts)
        self.writer: StoreWriter | None = None
        """The in-console collector's store writer (live with an inventory); probes and findings share it."""
        self.probes = ProbeControl(self)

    def on_mount(self) -> None:
        for theme in load_themes():
            self.register_theme(theme)
        self.theme = self.config.theme
        self.set_keymap(dict(self.config.keymap))
        if self.inventory is not None and self.cursor_ts is None and self.config.history_url is None:
            # The writer creates the store file now, before the first read looks for it.
            try:
                self.writer = StoreWriter(self.config.db_path).start()
            except StoreWriteError as error:  # e.g. a read-only folder: say so, show what is stored
                self.store_failing = str(error)
            else:
                self.collect(self.writer)
                if self.config.job_latency_enabled:
                    self.probes.start_job_sampler()
        self.set_interval(self.config.refresh_s, self.request_refresh)
        self.request_refresh()
        if self.config.diagnose and self.config.history_url is None:  # with --history, the shards diagnose
            self.probes.start_diagnosis()

    @property
    def history_source(self) -> str:
        """Where the history is read from, for the header; "" for the local store."""
        config = self.config
        if config.history_url is None:
            return ""
        from fleet.console.remote_history import history_label

        return history_label(config.history_url, config.alertmanager_url)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return not (self.config.read_only and is_machine_changing(self, action))

    # --- refresh: one read at a time; a tick while reading is skipped, never queued twice
    def request_refresh(self, force: bool = False) -> None:
        """Read the store again unless a read is in flight (then once more after it) or, for
        timer ticks (``force`` False), the last read was too recent for its cost."""
        if self._refreshing:
            self._refresh_again = self._refresh_again or force
            return
        if not force and time.monotonic() - self._last_read_end < self._last_read_s:
            # A read that took r seconds is followed by at least r idle seconds: on a big fleet
            # the reads (and their GIL time) never starve the collector running beside them.
            return
        self._refreshing = True
        self.refresh_view(self.cursor_ts, first=self.view is None)

    @work(group="refresh", exit_on_error=False)
    async def refresh_view(self, cursor_ts: float | None, first: bool = False) -> None:
        """Read one view. The very first read is done twice: states only (every node on screen
        at once), then with values, so a large store never shows an empty screen."""
        try:
            if first:
                self.post_message(SnapshotLoaded(await self.feed.load_view(cursor_ts, with_values=False)))
            started = time.monotonic()
            view = await self.feed.load_view(cursor_ts)
            self._last_read_end = time.monotonic()
            self._last_read_s = self._last_read_end - started
            self.post_message(SnapshotLoaded(view))
        finally:
            self._refreshing = False
            if self._refresh_again:
                self._refresh_again = False
                self.call_later(self.request_refresh, True)

    def on_snapshot_loaded(self, message: SnapshotLoaded) -> None:
        if message.view.snapshot.live != (self.cursor_ts is None):
            self.request_refresh(force=True)
            return
        self.view = message.view
        waiters, self._view_waiters = self._view_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(message.view)

    async def next_view(self) -> ConsoleView:
        """The next view the screens draw (tests and the benchmark await it)."""
        waiter: asyncio.Future[ConsoleView] = asyncio.get_running_loop().create_future()
        self._view_waiters.append(waiter)
        return await waiter

    # --- collector (live, with an inventory)
    @work(group="collector", exit_on_error=False)
    async def collect(self, writer: StoreWriter) -> None:
        await run_collector(self.inventory, writer, on_status=self._status_seen,
                            on_round=self._round_done, on_writer_problem=self._writer_problem,
                            on_start=lambda collector: self.probes.use_collector_pool(collector.pool))

    def _status_seen(self, status: HostStatus) -> None:
        self.post_message(HostStatusChanged(status))

    def _round_done(self, summary: Any) -> None:
        self.post_message(CollectorRoundFinished(
            summary.ts, summary.hosts_ok, dict(summary.hosts_failed), summary.samples))

    def _writer_problem(self, problem: str) -> None:
        self.writer_problem = problem
        self.store_failing = (self.writer.stats().failing or "") if self.writer is not None else ""

    def on_collector_round_finished(self, _message: CollectorRoundFinished) -> None:
        self.request_refresh()

    def on_host_status_changed(self, message: HostStatusChanged) -> None:
        """Pop up only what needs a person now (a changed key, refused credentials); every other
        state shows in the table, so a fleet-wide outage does not bury the screen in toasts."""
        status = message.status
        if status.state in (HostState.HOST_KEY_MISMATCH, HostState.AUTH_FAILED):
            self.notify(f"{status.host}: {status.state.value} {status.reason}", title="needs you",
                        severity="error", timeout=15, markup=False)

    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        """Every worker failure ends here and is shown; nothing fails silently."""
        if event.state is WorkerState.ERROR:
            error = event.worker.error
            if event.worker.group == "probe":
                self.probes.failed(f"{type(error).__name__}: {error}")
            self.notify(f"{event.worker.name} failed: {error!r}", title="worker failed",
                        severity="error", timeout=10, markup=False)

    # --- replay
    def watch_cursor_ts(self) -> None:
        self.request_refresh(force=True)

    def action_replay_step(self, seconds: float) -> None:
        base = self.cursor_ts
        if base is None:
            base = self.view.snapshot.moment_ts if self.view is not None else self.feed.now()
        target = base + seconds
        self.cursor_ts = None if target >= self.feed.now() else target

    def action_replay_jump(self) -> None:
        self.push_screen(JumpScreen(self.feed.now()), self._jumped)

    def _jumped(self, moment: float | None) -> None:
        if moment is not None:
            self.cursor_ts = None if moment >= self.feed.now() else moment

    def action_replay_live(self) -> None:
        self.cursor_ts = None

    # --- navigation
    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.screen))

    async def action_goto(self, mode: str) -> None:
        """Show a top-level screen from anywhere: the screens opened on top of the current one
        (a node, Baselines, the walkthrough, an ECMP plan) close first, so `1` always shows Fleet."""
        if not await self._close_pushed():
            return
        if self.current_mode != mode:
            await self.switch_mode(mode)

    async def _close_pushed(self) -> bool:
        """Pop every screen above the current mode's own; False (and a warning) when one of them
        must not be left now (an ECMP change between apply and verify sets ``applying``)."""
        stack = self.screen_stack
        for screen in stack[1:]:
            if getattr(screen, "applying", False):
                self.notify("a change is in progress: wait for its verdict", severity="warning")
                return False
        while len(self.screen_stack) > 1:
            await self.pop_screen()
        return True

    async def action_baselines(self) -> None:
        if await self._close_pushed():
            await self.push_screen(BaselinesScreen())

    async def action_audit(self) -> None:
        if await self._close_pushed():
            await self.push_screen(AuditScreen())

    def action_save_svg(self) -> None:
        """Save the screen as SVG in the screenshot folder (made on first use) and say where."""
        folder = self.config.screenshot_dir
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = self.save_screenshot(path=str(folder))
        except OSError as error:
            self.notify(f"screenshot not saved: {error}", severity="error", markup=False)
            return
        self.notify(f"saved {path}", title="screenshot", markup=False)

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """Textual's palette commands, with its Screenshot (which writes into ~/Downloads, failing
        where that folder does not exist) replaced by ctrl+s's, which makes its folder."""
        for command in super().get_system_commands(screen):
            if command.title == "Screenshot":
                yield SystemCommand("Screenshot", f"Save an SVG of this screen in {self.config.screenshot_dir}",
                                    self.action_save_svg)
            else:
                yield command

    async def action_links(self) -> None:
        if await self._close_pushed():
            await self.push_screen(LinksScreen())

    async def action_config(self) -> None:
        if await self._close_pushed():
            await self.push_screen(ConfigScreen())

    def action_ecmp_plan(self, leaf: str) -> None:
        self.push_screen(EcmpPlanScreen(leaf))

    async def action_walkthrough(self) -> None:
        """Ask for the criteria file (the configured one offered first), then walk through it; in read-only
        mode nothing is measured, so the newest stored acceptance run is shown at once."""
        if not await self._close_pushed():
            return
        if self.config.read_only:
            self.push_screen(WalkthroughScreen(None))
            return

        def chosen(path: Path | None) -> None:
            if path is not None:
                self.push_screen(WalkthroughScreen(path))

        self.push_screen(PathPrompt("Acceptance criteria file (TOML):", self.config.criteria_path,
                                    must_exist=True), chosen)

    def on_node_chosen(self, message: NodeChosen) -> None:
        if isinstance(self.screen, NodeScreen):
            self.pop_screen()
        self.push_screen(NodeScreen(message.name))

    async def on_switch_chosen(self, message: SwitchChosen) -> None:
        await self.action_goto("topology")
        screen = self.screen
        if isinstance(screen, TopologyScreen):
            screen.select_switch(message.name)

    def on_job_chosen(self, message: JobChosen) -> None:
        view = self.view
        job = next((j for j in view.jobs if j.job_id == message.job_id), None) if view else None
        self.highlighted_nodes = frozenset(job.nodes) if job else frozenset()

    @on(ProbeProgressed)
    @on(ProbeFinished)
    @on(LinktestFinished)
    @on(DiagnosisRan)
    def _probe_news(self, message: ProbeProgressed | ProbeFinished | LinktestFinished | DiagnosisRan) -> None:
        self.probes.seen(message)

    async def on_unmount(self) -> None:
        await self.probes.close()
        self.feed.close()
