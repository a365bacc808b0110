"""Findings to Alertmanager, and the alerts active there back as findings.

Out: ``AlertPublisher`` posts each open finding to Alertmanager's v2 API
(``POST /api/v2/alerts``, https://github.com/prometheus/alertmanager/blob/v0.25.0/api/v2/openapi.yaml)
when it opens, again every ``RESEND_S`` while it stays open, and once more with
``endsAt`` at its ``closed_at`` when it closes, which resolves it. Like
Prometheus (``--rules.alert.resend-delay`` 1 min, ``endsAt`` four resend delays
ahead), every post says the alert ends ``RESOLVE_AFTER_S`` later unless posted
again: a collector that dies leaves no alert firing for ever. Labels: alertname
(``Fleet`` and the kind in CamelCase), kind, severity and where (node, nic, switch,
port, gpu, slurm_job), only those that are set; annotations: summary, evidence,
next_step, opened_at. A post that fails is tried again at the next run, closes first.

In: ``active_findings`` reads the alerts active in Alertmanager that carry a
``kind`` (this module's and deploy/prometheus's rules alike) as finding events for
the console's Events screen.

Blocking HTTP (urllib): run it in a thread.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fleet.fabric.diagnosis import finding_json
from fleet.fabric.events import Event, Severity, evidence_text
from fleet.fabric.finding_life import FindingKey, FindingLife, event_key, finding_key

RESEND_S = 60.0
"""An open finding is posted again after a minute, as Prometheus resends a firing alert."""
RESOLVE_AFTER_S = 4 * RESEND_S
"""Each post says the alert ends this long after it unless posted again (Prometheus's 4 x resend delay)."""
TIMEOUT_S = 10.0
"""One HTTP request to Alertmanager; a slower one is a failure, tried again at the next run."""

_WHERE = (("node", "node"), ("nic", "nic"), ("switch", "switch"), ("port", "port"), ("slurm_job", "job"))


class AlertmanagerError(Exception):
    """Alertmanager could not be reached or refused the request; the message says why in one line."""


def alert_name(kind: str) -> str:
    """``pfc_storm`` -> ``FleetPfcStorm``, as deploy/prometheus/alerts.rules.yml names its alerts."""
    return "Fleet" + "".join(word.capitalize() for word in kind.split("_"))


def iso_time(ts: float) -> str:
    """Unix seconds as the RFC 3339 time the API takes."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _unix(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def alert_labels(finding: Mapping[str, Any]) -> dict[str, str]:
    """The labels of a finding given as ``finding_json``'s object (an open finding, or the data of the event
    that closed it): the same for both, so the resolution reaches the alert that fired."""
    labels = {"alertname": alert_name(str(finding["kind"])), "kind": str(finding["kind"]),
              "severity": str(finding["severity"])}
    for label, key in _WHERE:
        value = str(finding.get(key) or "")
        if value:
            labels[label] = value
    gpu = (finding.get("evidence") or {}).get("gpu")
    if gpu not in (None, ""):
        labels["gpu"] = str(gpu).removeprefix("gpu")
    return labels


def alert(finding: Mapping[str, Any], opened_at: float, ends_at: float) -> dict[str, Any]:
    """A postable alert (the API's ``postableAlert``) for a finding."""
    where = " ".join(str(finding.get(key) or "") for _, key in _WHERE[:4] if finding.get(key)) or \
        f"job {finding.get('job', '')}"
    return {
        "labels": alert_labels(finding),
        "annotations": {"summary": f"{str(finding['kind']).replace('_', ' ')}: {where}",
                        "evidence": evidence_text(finding.get("evidence") or {}),
                        "next_step": str(finding.get("next_step", "")), "opened_at": iso_time(opened_at)},
        "startsAt": iso_time(opened_at),
        "endsAt": iso_time(ends_at),
    }


def post_alerts(url: str, alerts: Sequence[Mapping[str, Any]]) -> None:
    """POST ``alerts`` to the Alertmanager at ``url`` (``http://host:9093``); AlertmanagerError on any failure."""
    request = urllib.request.Request(url.rstrip("/") + "/api/v2/alerts", data=json.dumps(list(alerts)).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
    _send(request)


def _send(request: urllib.request.Request) -> bytes:
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return bytes(response.read())
    except urllib.error.HTTPError as error:
        body = error.read(300).decode("utf-8", "replace").strip().strip('"')
        raise AlertmanagerError(f"{request.full_url}: HTTP {error.code} {body}") from None
    except (urllib.error.URLError, OSError) as error:
        reason = getattr(error, "reason", error)
        raise AlertmanagerError(f"{request.full_url}: {reason}") from None


@dataclass(frozen=True, slots=True)
class Published:
    """One run's posts: alerts that fired (new or sent again), that resolved, and why posting failed."""

    fired: int = 0
    resolved: int = 0
    failure: str | None = None


@dataclass
class AlertPublisher:
    """Keeps Alertmanager in step with the open findings of one diagnosis (see the module doc)."""

    url: str
    resend_s: float = RESEND_S
    _posted: dict[FindingKey, float] = field(default_factory=dict)
    """Open findings posted, and when last."""
    _closing: dict[FindingKey, dict[str, Any]] = field(default_factory=dict)
    """Resolutions not yet delivered."""
    totals: Published = Published()

    def publish(self, open_now: Sequence[FindingLife], closed: Sequence[Event], now: float) -> Published:
        """Post what changed since the last run (``closed``: the events that closed findings in it) and what is
        due again. Blocking: run it in a thread."""
        for event in closed:
            key = event_key(event)
            if key is not None and event.data.get("cleared"):
                self._posted.pop(key, None)
                closed_at = float(event.data.get("closed_at", event.ts))
                self._closing[key] = alert(event.data, float(event.data.get("opened_at", closed_at)), closed_at)
        due = [(finding_key(life.finding), life) for life in open_now]
        due = [(key, life) for key, life in due if now - self._posted.get(key, -1e18) >= self.resend_s]
        firing = [alert(finding_json(life.finding), life.opened_at, now + RESOLVE_AFTER_S) for _, life in due]
        resolving = list(self._closing.values())
        if not firing and not resolving:
            return Published()
        try:
            post_alerts(self.url, [*resolving, *firing])
        except AlertmanagerError as error:
            result = Published(failure=str(error))
        else:
            self._closing.clear()
            self._posted.update((key, now) for key, _ in due)
            result = Published(len(firing), len(resolving))
        self.totals = Published(self.totals.fired + result.fired, self.totals.resolved + result.resolved,
                                result.failure)
        return result


def active_findings(url: str) -> list[Event]:
    """The alerts active in Alertmanager that carry a ``kind``, as open finding events, newest first."""
    query = urllib.parse.urlencode({"active": "true", "silenced": "false", "inhibited": "false"})
    request = urllib.request.Request(url.rstrip("/") + f"/api/v2/alerts?{query}", headers={"Accept": "application/json"})
    try:
        alerts = json.loads(_send(request))
    except ValueError as error:
        raise AlertmanagerError(f"{request.full_url}: not JSON ({error})") from None
    events = [finding_of(item) for item in alerts if isinstance(item, dict)]
    return sorted((e for e in events if e is not None), key=lambda e: e.ts, reverse=True)


def finding_of(item: Mapping[str, Any]) -> Event | None:
    """One ``gettableAlert`` as an open finding event (None without a ``kind`` label: not a fleet alert)."""
    labels = item.get("labels") or {}
    annotations = item.get("annotations") or {}
    kind = str(labels.get("kind", ""))
    if not kind:
        return None
    try:
        severity = Severity(str(labels.get("severity", "")))
    except ValueError:
        severity = Severity.WARNING
    try:
        opened = _unix(str(item.get("startsAt", "")))
    except ValueError:
        opened = 0.0
    where = {key: str(labels.get(label, "")) for label, key in _WHERE}
    evidence = _evidence(str(annotations.get("evidence", "")))
    gpu = str(labels.get("gpu", ""))
    if gpu:
        evidence = {"gpu": gpu, **evidence}
    data: dict[str, Any] = {"finding": True, "kind": kind, "severity": severity.value, **where, "evidence": evidence,
                            "next_step": str(annotations.get("next_step", "")), "opened_at": opened,
                            "active": True, "source": "alertmanager"}
    message = str(annotations.get("summary", "")) or kind.replace("_", " ")
    return Event(opened, kind, severity, message, host=where["node"] or where["switch"],
                 device=where["nic"] or gpu, port=where["port"], switch=where["switch"], job=where["job"], data=data)


def _evidence(text: str) -> dict[str, Any]:
    """``evidence_text``'s ``k=v, k=v`` back into a table (numbers as numbers); other text kept whole."""
    found: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(", "))):
        key, sep, value = part.partition("=")
        if not sep or not key or " " in key:
            return {"evidence": text} if text else {}
        try:
            found[key] = float(value) if "." in value or "e" in value.lower() else int(value)
        except ValueError:
            found[key] = value
    return found
