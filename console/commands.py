"""Command-palette providers: find a node or a job by typing, switch theme, replay.

The palette reads labels and help as Textual markup: everything from a machine (node names,
reasons, job names, tenants) is escaped first."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider
from textual.markup import escape

from fleet.console.messages import JobChosen, NodeChosen

if TYPE_CHECKING:
    from fleet.console.app import FleetApp


def _app(provider: Provider) -> FleetApp:
    from fleet.console.app import FleetApp

    return cast(FleetApp, provider.app)


class NodeCommands(Provider):
    """``gpu017`` -> open that node; its health and reason in the help line."""

    async def search(self, query: str) -> Hits:
        app = _app(self)
        if app.view is None:
            return
        matcher = self.matcher(query)
        for row in app.view.rows:
            score = matcher.match(row.name)
            if score > 0:
                reasons = "; ".join(row.reasons[:2]) or "no problem found"
                yield Hit(score, matcher.highlight(escape(row.name)),
                          partial(app.post_message, NodeChosen(row.name)),
                          help=escape(f"{row.health.value}: {reasons}"))


class JobCommands(Provider):
    """``job 1234`` / a job or tenant name -> highlight that job's nodes."""

    async def search(self, query: str) -> Hits:
        app = _app(self)
        if app.view is None:
            return
        matcher = self.matcher(query)
        for job in app.view.jobs:
            label = f"job {job.job_id} {job.name} ({job.account})"
            score = matcher.match(label)
            if score > 0:
                yield Hit(score, matcher.highlight(escape(label)),
                          partial(app.post_message, JobChosen(job.job_id)),
                          help=escape(f"{len(job.nodes)} nodes: {job.nodelist}"))


class FleetCommands(Provider):
    """Themes, screens and the replay cursor."""

    def _commands(self) -> list[tuple[str, str, object]]:
        app = _app(self)
        commands: list[tuple[str, str, object]] = [
            (f"Theme: {name}", "switch the colour theme", partial(setattr, app, "theme", name))
            for name in sorted(app.available_themes) if name.startswith("fleet-")
        ]
        commands += [
            ("Go live", "leave replay and follow the fleet now", app.action_replay_live),
            ("Replay: go to time", "replay a past moment from the store", app.action_replay_jump),
            ("Screen: Fleet", "every node", partial(app.action_goto, "fleet")),
            ("Screen: Events", "findings and state changes", partial(app.action_goto, "events")),
            ("Screen: Jobs", "jobs and tenants", partial(app.action_goto, "jobs")),
            ("Screen: Topology", "spines, leaves, links", partial(app.action_goto, "topology")),
            ("Screen: Probes", "link test matrix, suspects, probe history", partial(app.action_goto, "probes")),
        ]
        return commands

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands():
            yield DiscoveryHit(name, callback, help=help_text)  # type: ignore[arg-type]

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)  # type: ignore[arg-type]


class ToolCommands(Provider):
    """ECMP plan of any leaf, the audit, the baselines, NVLink beside the network and the acceptance walkthrough."""

    def _commands(self) -> list[tuple[str, str, object]]:
        app = _app(self)
        commands: list[tuple[str, str, object]] = [
            ("Screen: Baselines", "diff two stored baselines, write the report", app.action_baselines),
            ("Acceptance walkthrough", "run the agreed checks one by one (high contrast)", app.action_walkthrough),
            ("Audit", "every change to a machine, newest first", app.action_audit),
            ("Screen: NVLink vs network", "NVLink and RDMA bandwidth against their theoretical values",
             app.action_links),
        ]
        leaves = sorted({h.name for h in app.view.snapshot.hosts if h.role == "leaf"}) if app.view else []
        commands += [(f"ECMP plan: {leaf}", "uplink balance and remedies of this leaf",
                      partial(app.action_ecmp_plan, leaf)) for leaf in leaves]
        return commands

    async def discover(self) -> Hits:
        for name, help_text, callback in self._commands()[:3]:
            yield DiscoveryHit(escape(name), callback, help=help_text)  # type: ignore[arg-type]

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._commands():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(escape(name)), callback, help=help_text)  # type: ignore[arg-type]
