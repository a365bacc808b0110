"""A finding's life: opened when the rules first report it, closed when they stop, held when it flaps."""

from __future__ import annotations

from fleet.fabric.events import Finding, Severity
from fleet.fabric.finding_life import HOLD_BASE_S, FindingBook, event_key, open_findings

FLAP = Finding("link_flapping", Severity.CRITICAL, node="gpu011", nic="mlx5_5", next_step="reseat")
HOT = Finding("gpu_thermal", Severity.WARNING, node="gpu014", evidence={"gpu": "gpu5", "gpu_temp_c": 93.0})


def test_a_finding_opens_once_is_seen_again_and_closes_on_the_first_run_without_it() -> None:
    book = FindingBook()
    first = book.judge([FLAP, HOT], 100.0)
    assert [e.kind for e in first.raised] == ["link_flapping", "gpu_thermal"] and not first.cleared
    assert [life.finding.kind for life in first.open] == ["link_flapping", "gpu_thermal"]  # critical first
    again = book.judge([FLAP, HOT], 110.0)
    assert (again.raised, again.cleared) == ((), ())
    flap = again.open[0]
    assert (flap.opened_at, flap.last_seen, flap.active, flap.closed_at) == (100.0, 110.0, True, None)
    gone = book.judge([HOT], 120.0)
    [cleared] = gone.cleared
    assert (cleared.kind, cleared.severity, cleared.data["opened_at"], cleared.data["closed_at"]) == (
        "link_flapping", Severity.INFO, 100.0, 120.0)
    assert [life.finding.kind for life in gone.open] == ["gpu_thermal"]


def test_a_condition_that_comes_and_goes_is_held_open_longer_each_time() -> None:
    book = FindingBook()
    book.judge([FLAP], 0.0)
    assert book.judge([], 10.0).cleared  # the first close is at once
    reopened = book.judge([FLAP], 20.0)
    assert reopened.raised[0].data["reopened"] == 1
    held = book.judge([], 30.0)
    assert not held.cleared and held.open[0].active is False  # held for HOLD_BASE_S after last seen
    assert book.judge([], 20.0 + HOLD_BASE_S).cleared
    book.judge([FLAP], 50.0)
    assert not book.judge([], 50.0 + HOLD_BASE_S).cleared  # the second reopening holds twice as long
    assert book.judge([], 50.0 + 2 * HOLD_BASE_S).cleared


def test_the_life_goes_into_json_and_survives_a_restart_through_the_stored_events() -> None:
    book = FindingBook()
    [raised] = book.judge([HOT], 500.0).raised
    restarted = FindingBook(open_findings([raised]).values())
    [life] = restarted.judge([HOT], 530.0).open
    assert (life.opened_at, life.last_seen, life.active) == (500.0, 530.0, True)
    document = life.as_json()
    assert {"opened_at", "last_seen", "closed_at", "active", "reopened", "next_step", "basis"} <= set(document)
    assert document["evidence"]["gpu_temp_c"] == 93.0 and event_key(raised) == (
        "gpu_thermal", "gpu014", "", "", "", "")
