"""The link test against small simulated fleets: matrices, progress, local checks and localization."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from simfleet import Fleet, fabric_text, start_fleet

from fleet.collectors.commands import Command
from fleet.collectors.probes.linktest import LinktestSpec, run_linktest
from fleet.collectors.probes.nic_checks import check_before
from fleet.collectors.sshpool import RunResult
from fleet.fabric.records import ProbeRecord

pytestmark = pytest.mark.timeout(30)

NODES4 = ("gpu001", "gpu002", "gpu003", "gpu004")


async def test_a_healthy_fleet_gives_full_matrices_and_no_suspect(fleet: Fleet) -> None:
    progress: list[tuple[int, int, float | None]] = []
    stored: list[ProbeRecord] = []
    report = await run_linktest(
        fleet.pool, LinktestSpec(NODES4, rails=(0, 3)), cabling=fleet.inventory.cabling,
        on_progress=lambda d, t, eta: progress.append((d, t, eta)), on_record=stored.append,
    )  # fmt: skip
    assert report.rounds == 3 and len(report.outcomes) == 6 * 2
    assert [p[0] for p in progress] == list(range(1, 13)) and {p[1] for p in progress} == {12}
    assert progress[-1][2] == 0.0
    assert len(stored) == 12 and {r.run_id for r in stored} == {report.run_id}
    assert all(r.kind == "lat" and r.ok for r in stored)
    assert report.bad == () and report.suspects == () and report.unreachable == {}
    assert all(not c.problems for c in report.nic_checks) and len(report.nic_checks) == 4 * 8
    matrix = report.matrix(3)
    cells = matrix["p99_usec"]
    assert matrix["nic"] == "mlx5_3" and matrix["nodes"] == list(NODES4)
    assert all((cells[i][j] is None) == (i == j) for i in range(4) for j in range(4))
    assert cells[0][1] == cells[1][0] and cells[0][1] < cells[0][2]  # same leaf is one hop shorter
    assert fleet.perftest_servers() == []
    summary = report.summary_record(1.0)
    assert summary.kind == "linktest" and summary.ok and summary.result["probes"] == 12


async def test_a_down_nic_is_localized_and_flagged(tmp_path: Path) -> None:
    faults = '[[faults]]\nkind = "link_down"\ntarget = "gpu003:mlx5_1"\nat = 0\n'
    fleet = await start_fleet(tmp_path, fabric_text(faults=faults))
    try:
        report = await run_linktest(fleet.pool, LinktestSpec(NODES4, rails=(0, 1), probe_timeout_s=5),
                                    cabling=fleet.inventory.cabling)
        assert len(report.bad) == 3
        assert all("gpu003" in (o.src, o.dst) and o.rail == 1 and not o.ok for o in report.bad)
        [suspect] = report.suspects
        assert (suspect.kind, suspect.node, suspect.nic) == ("nic", "gpu003", "mlx5_1")
        [check] = [c for c in report.nic_checks if c.problems]
        assert (check.node, check.nic) == ("gpu003", "mlx5_1") and "port state DOWN" in check.problems[0]
        assert report.matrix(1)["bad_pairs"] and not report.matrix(0)["bad_pairs"]
        assert fleet.perftest_servers() == []
    finally:
        await fleet.pool.close()
        await fleet.server.close()


async def test_weak_optics_make_the_cable_the_suspect(tmp_path: Path) -> None:
    faults = '[[faults]]\nkind = "optics_attenuation"\ntarget = "gpu002:mlx5_0"\ndb = 9\nat = 0\n'
    fleet = await start_fleet(tmp_path, fabric_text(faults=faults))
    try:
        report = await run_linktest(fleet.pool, LinktestSpec(NODES4, rails=(0,)), cabling=fleet.inventory.cabling)
        flagged = [c for c in report.nic_checks if c.problems]
        assert [(c.node, c.nic, c.cable_suspect) for c in flagged] == [("gpu002", "mlx5_0", True)]
        assert flagged[0].rx_margin_db is not None and flagged[0].rx_margin_db < 2.0
        problems = " / ".join(flagged[0].problems)
        assert "dB above the module's low threshold" in problems  # FEC still corrects: no symbol errors yet
    finally:
        await fleet.pool.close()
        await fleet.server.close()


async def test_optics_left_unread_when_the_probes_end_are_read_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Optics are read one node at a time, spaced, while the probes run; the rest at their end, not later."""
    monkeypatch.setattr("fleet.collectors.probes.linktest.OPTICS_READ_EVERY_S", 600.0)
    faults = '[[faults]]\nkind = "optics_attenuation"\ntarget = "gpu004:mlx5_0"\ndb = 11\nat = 0\n'
    fleet = await start_fleet(tmp_path, fabric_text(faults=faults))
    try:
        report = await asyncio.wait_for(  # not 600 s: the spacing was cut short when the probes ended
            run_linktest(fleet.pool, LinktestSpec(NODES4, rails=(0,)), cabling=fleet.inventory.cabling), 100)
        assert all(c.rx_margin_db is not None for c in report.nic_checks)  # every node's modules were read
        assert [(c.node, c.nic, c.cable_suspect) for c in report.nic_checks if c.problems] == [
            ("gpu004", "mlx5_0", True)
        ]
    finally:
        await fleet.pool.close()
        await fleet.server.close()


async def test_a_lossy_spine_points_at_the_spine_layer(tmp_path: Path) -> None:
    faults = '[[faults]]\nkind = "spine_loss"\ntarget = "spine01"\nrate = 0.01\nat = 0\n'
    fleet = await start_fleet(tmp_path, fabric_text(faults=faults))
    try:
        report = await run_linktest(fleet.pool, LinktestSpec(NODES4, rails=(0,), flows=6))
        assert report.bad, "some flows cross the lossy spine"
        assert all(o.src[:6] != o.dst[:6] for o in report.bad)
        leaf_pairs = {frozenset((o.src, o.dst)) for o in report.bad}
        assert frozenset(("gpu001", "gpu002")) not in leaf_pairs  # same leaf: no spine on the path
        [suspect] = report.suspects
        assert (suspect.kind, suspect.part) == ("spine", "spines")
        assert 0 < suspect.bad <= suspect.total == 4 * 6
    finally:
        await fleet.pool.close()
        await fleet.server.close()


async def test_a_lossy_spine_is_named_when_the_leaves_are_asked(tmp_path: Path) -> None:
    faults = '[[faults]]\nkind = "spine_loss"\ntarget = "spine01"\nrate = 0.01\nat = 0\n'
    fleet = await start_fleet(tmp_path, fabric_text(faults=faults))
    try:
        report = await run_linktest(fleet.pool, LinktestSpec(NODES4, rails=(0,), flows=4),
                                    cabling=fleet.inventory.cabling, switches=fleet.inventory.switches)
    finally:
        await fleet.pool.close()
        await fleet.server.close()
    [suspect] = report.suspects
    assert (suspect.kind, suspect.part) == ("spine", "spine01") and suspect.bad == suspect.total
    assert report.path_notes == ()  # every leaf is Cumulus: every probe's spines are known
    assert all(len(o.spines) == 2 for o in report.outcomes if o.path == "spine")
    assert {o.spines for o in report.bad} <= {s for s in {o.spines for o in report.outcomes} if "spine01" in s}


async def test_an_unreachable_node_is_left_out_with_its_reason(tmp_path: Path) -> None:
    faults = '[[faults]]\nkind = "node_unreachable"\ntarget = "gpu004"\nat = 0\n'
    fleet = await start_fleet(tmp_path, fabric_text(faults=faults))
    try:
        report = await run_linktest(fleet.pool, LinktestSpec(NODES4, rails=(0,)))
        assert list(report.unreachable) == ["gpu004"] and "refused" in report.unreachable["gpu004"]
        assert report.rounds == 3 and len(report.outcomes) == 3  # the three others, full mesh
        assert all("gpu004" not in (o.src, o.dst) for o in report.outcomes)
        assert report.matrix(0)["nodes"] == ["gpu001", "gpu002", "gpu003"]
    finally:
        await fleet.pool.close()
        await fleet.server.close()


async def test_probes_go_through_the_runners_with_the_gids_the_checks_read(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One probe runner per node starts the perftest sides (no SSH session each), the GID indices come
    from the checks before (no look-up per NIC), and no runner is left on a node afterwards."""
    by_ssh: list[str] = []
    run, stream = fleet.pool.run, fleet.pool.stream

    async def counted_run(host: str, command: Command, *args: Any, **kwargs: Any) -> RunResult:
        by_ssh.append(command.text)
        return await run(host, command, *args, **kwargs)

    async def counted_stream(host: str, command: Command, *args: Any, **kwargs: Any) -> RunResult:
        by_ssh.append(command.text)
        return await stream(host, command, *args, **kwargs)

    monkeypatch.setattr(fleet.pool, "run", counted_run)
    monkeypatch.setattr(fleet.pool, "stream", counted_stream)
    report = await run_linktest(fleet.pool, LinktestSpec(NODES4, rails=(0, 5)), cabling=fleet.inventory.cabling)
    assert len(report.outcomes) == 12 and all(o.ok for o in report.outcomes)
    assert {r.params["gid_index"]["client"] for r in report.records} == {3}
    assert not any("ib_write_lat" in text or "show_gids mlx5" in text for text in by_ssh)
    assert sum("--probe-runner" in text for text in by_ssh) == 4
    assert sum("show_gids" in text for text in by_ssh) == 4  # in each node's checks before
    assert not any(text.startswith("grep") for text in by_ssh)  # the checks after went through the runners
    assert await fleet.wait_until(lambda: fleet.runner_sessions(*NODES4) == 0)  # the sshd side closes too


@pytest.mark.parametrize(("link_layer", "index"), [("roce", 3), ("ib", None)])
async def test_the_checks_before_give_every_nic_its_gid_index(
    tmp_path: Path, link_layer: str, index: int | None
) -> None:
    fleet = await start_fleet(tmp_path, fabric_text(link_layer=link_layer))
    try:
        checks = await check_before(fleet.pool, "gpu002", 10)
    finally:
        await fleet.pool.close()
        await fleet.server.close()
    assert checks.gid_indices == {(f"mlx5_{rail}", 1): index for rail in range(8)}


async def test_a_node_that_stops_answering_is_dropped_after_its_first_timeout_and_named_once(tmp_path: Path) -> None:
    """Without the checks before nothing finds gpu004 hung up front: its first probe times out, a short
    check finds it silent, and its probes of the later rounds are not run (each would cost the timeout)."""
    faults = '[[faults]]\nkind = "node_hang"\ntarget = "gpu004"\nat = 0\n'
    fleet = await start_fleet(tmp_path, fabric_text(nodes=6, faults=faults))
    try:
        nodes = (*NODES4, "gpu005", "gpu006")
        stored: list[ProbeRecord] = []
        report = await run_linktest(fleet.pool, LinktestSpec(nodes, rails=(0,), local_checks=False, probe_timeout_s=3),
                                    on_record=stored.append)
    finally:
        await fleet.pool.close()
        await fleet.server.close()
    assert list(report.unreachable) == ["gpu004"]
    assert report.unreachable["gpu004"].startswith("stopped answering during the probes")
    assert sum("gpu004" in (r.src, r.dst) for r in stored) == 1  # its first probe only, not one per round
    assert len(stored) == 15 - 4  # the 5 rounds of 6 nodes, less gpu004's 4 later probes
    assert all("gpu004" not in (o.src, o.dst) for o in report.outcomes + report.bad)
    assert report.suspects == () and report.matrix(0)["nodes"] == ["gpu001", "gpu002", "gpu003", "gpu005", "gpu006"]
