"""The probe panel: the probe running now (stage, or a link test's progress bar and ETA), then its result
beside the same pair's previous result and the last baseline's value, or why it failed.

Draws ``ProbeState`` as published by ``app.probes.changed``; no I/O. Everything
in it that came from a machine (node names, perftest's error text) is ``Text``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import ProgressBar, Static

from fleet.console.probe_control import ProbeState
from fleet.console.timespec import format_moment
from fleet.fabric.records import ProbeRecord

if TYPE_CHECKING:
    from fleet.console.app import FleetApp


def result_words(record: ProbeRecord) -> str:
    """A probe's numbers in words with units: latency in usec, bandwidth in Gb/s."""
    r = record.result

    def usec(key: str) -> str:
        value = r.get(key)
        return f"{value:.2f}" if isinstance(value, int | float) else "-"

    if record.kind == "lat":
        return (f"min {usec('t_min_usec')}  typical {usec('t_typical_usec')}  avg {usec('t_avg_usec')}  "
                f"p99 {usec('p99_usec')}  p99.9 {usec('p999_usec')} usec")
    if record.kind == "allreduce":
        peak, efficiency = r.get("peak_busbw_gbytes_s"), r.get("efficiency")
        if not isinstance(peak, int | float):
            return "no bus bandwidth reported"
        share = f" ({100 * efficiency:.0f} % of {r.get('theoretical_basis', 'the hardware')})" \
            if isinstance(efficiency, int | float) else ""
        return f"peak bus bandwidth {peak:.1f} GB/s over {r.get('ranks')} ranks{share}"
    if record.kind == "alltoall":
        return alltoall_words(r)
    avg, peak = r.get("bw_avg_gbps"), r.get("bw_peak_gbps")
    return (f"avg {avg:.1f}  peak {peak:.1f} Gb/s" if isinstance(avg, int | float) and isinstance(peak, int | float)
            else "no bandwidth reported")


def alltoall_words(r: dict[str, Any]) -> str:
    """An all-to-all's peak against the theoretical figure, and what held it back (``bottleneck``)."""
    peak, efficiency, theoretical = r.get("peak_busbw_gbytes_s"), r.get("efficiency"), r.get("theoretical_busbw_gbytes_s")
    if not isinstance(peak, int | float):
        return "no bus bandwidth reported"
    words = f"all-to-all bus bandwidth {peak:.1f} GB/s over {r.get('ranks')} ranks"
    if isinstance(efficiency, int | float) and isinstance(theoretical, int | float):
        words += f" = {100 * efficiency:.0f} % of the theoretical {theoretical:.1f} GB/s"
    bottleneck = r.get("bottleneck") or {}
    if bottleneck.get("kind") in ("leaf", "nic", "rail"):
        words += f"; held back by {bottleneck['kind']} {bottleneck.get('part')} (rail {bottleneck.get('rail')})"
    elif bottleneck.get("kind") == "none":
        words += "; no rail holds it back"
    return words


def state_text(state: ProbeState, v: dict[str, str]) -> Text:
    """The panel's lines for ``state``."""
    text = Text()
    text.append(Text(state.label, style="bold"))
    if state.running:
        text.append(f"  {state.text}")
        if state.eta_s is not None:
            text.append(f"  ETA {state.eta_s:.0f} s")
        return text
    if state.result is not None:
        record = state.result.record
        if record.ok:
            verdict = state.result.verdict
            good = verdict is None or verdict.verdict in ("PASS", "no verdict")
            text.append(": ")
            text.append(result_words(record), style=v.get("health-ok" if good else "health-degraded", ""))
            if verdict is not None:
                style = {"PASS": "health-ok", "WARN": "health-degraded", "FAIL": "health-down"}.get(verdict.verdict)
                text.append("\n  verdict: ")
                text.append(verdict.words, style=f"bold {v.get(style, '')}".strip() if style else "")
            previous, baseline = state.result.previous, state.result.baseline
            text.append("\n  previous: ")
            text.append(f"{result_words(previous)} ({format_moment(previous.ts)})" if previous is not None else "none stored")
            text.append("\n  baseline: ")
            if baseline is not None:
                unit = {"p99_usec": "usec", "bw_avg_gbps": "Gb/s"}.get(baseline.metric, "GB/s")
                text.append(Text(f"{baseline.metric} {baseline.value:.2f} {unit} ({baseline.label}, "
                                 f"{format_moment(baseline.ts)})"))
            else:
                text.append("none stored")
            return text
    if state.error:
        text.append(": failed: ", style=v.get("health-down", ""))
        text.append(Text(state.error))
        return text
    if state.linktest is not None:
        report = state.linktest
        suspects = len(report.suspects)
        text.append(f": {state.text}; {len(report.bad)} bad pairs, {suspects} suspect{'' if suspects == 1 else 's'}"
                    f", {len(report.unreachable)} unreachable (p: Probes screen)")
    return text


class ProbePanel(Vertical):
    """Hidden until a probe starts; then its progress and its outcome."""

    DEFAULT_CSS = """
    ProbePanel { height: auto; max-height: 6; background: $panel; padding: 0 1; }
    ProbePanel ProgressBar { height: 1; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="probe-text")
        yield ProgressBar(show_eta=False, id="probe-progress")

    def on_mount(self) -> None:
        probes = cast("FleetApp", self.app).probes
        probes.changed.subscribe(self, self.show)
        self.show(probes.state)

    def show(self, state: ProbeState) -> None:
        self.display = bool(state.label)
        bar = self.query_one(ProgressBar)
        bar.display = state.running and state.total is not None
        if state.total is not None:
            bar.update(total=state.total, progress=state.done or 0)
        variables: dict[str, Any] = dict(self.app.theme_variables)
        self.query_one("#probe-text", Static).update(state_text(state, variables))
