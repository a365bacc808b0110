"""`fleet bench collect --nodes 4 --json`: every measurement is there, measured on a real simulator."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fleet.collectors.inventory import InventoryHost
from fleet.console.cli.bench_collect import WRITER_THREAD, _thread_cpu_s, node_set, ssh_config_for
from fleet.store.writer import StoreWriter


@pytest.mark.timeout(90)
def test_bench_collect_json_shape_on_four_nodes() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from fleet.console.cli import main; main()", "bench", "collect", "--nodes", "4",
         "--window", "2", "--json"], capture_output=True, text=True, timeout=80, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["nodes"] == 4
    assert result["round_command"] == "grep -H . /sys/class/infiniband/*/ports/*/counters/*"
    for key in ("round_new_connections", "round_open_connections"):
        measured = result[key]
        assert measured["hosts_ok"] == 4
        assert measured["wall_s"] > 0 and measured["collector_cpu_s"] > 0
        assert measured["output_bytes"] > 4 * 1000  # every node's counters came back
    stream = result["stream"]
    assert stream["nodes_streaming"] == 4 and stream["lines_per_s"] > 0 and stream["samples_per_s"] > 0
    assert 0 < stream["collector_cpu_s_per_s"] < 2
    assert 0 <= stream["store_writer_cpu_s_per_s"] <= stream["collector_cpu_s_per_s"]
    assert stream["dropped_values_in_window"] == 0 and stream["writer_caught_up_s"] >= 0
    clush = result["clush"]
    if clush["available"]:
        assert clush["hosts_ok"] == 4 and clush["exit_status"] == 0, clush
        assert result["ratios"]["clush_over_open_wall"] > 0
    else:
        assert clush["reason"] and result["ratios"]["clush_over_open_wall"] is None
    assert set(result["targets_met"]) == {"open_round_wall", "stream_cpu", "clush_ratio"}


def test_ssh_config_names_each_hosts_own_port() -> None:
    hosts = (InventoryHost("gpu001", "node", "127.42.0.1", 40001, "fleet", identity_file=Path("/k/id")),
             InventoryHost("gpu002", "node", "127.42.0.2", 40002, "fleet", identity_file=Path("/k/id")))
    text = ssh_config_for(hosts, Path("/k/known_hosts"))
    blocks = text.split("Host ")
    assert "gpu001\n  HostName 127.42.0.1\n  Port 40001\n  User fleet\n  IdentityFile /k/id" in blocks[1]
    assert "Port 40002" in blocks[2]
    assert "UserKnownHostsFile /k/known_hosts" in text and "StrictHostKeyChecking yes" in text


def test_node_set_keeps_each_padding_apart_for_clush() -> None:
    names = [f"gpu{i:03d}" for i in range(1, 1025)]
    assert node_set(names) == "gpu[001-999],gpu[1000-1024]"


def test_the_writer_thread_is_found_by_the_name_the_bench_looks_for(tmp_path: Path) -> None:
    """The bench reads the store writer's CPU on its thread's CPU clock, finding the thread by name."""
    writer = StoreWriter(tmp_path / "fleet.db").start()
    try:
        assert WRITER_THREAD in {thread.name for thread in threading.enumerate()}
        assert _thread_cpu_s("no such thread") == 0.0
    finally:
        writer.close()
    me = threading.current_thread().name
    before, began = _thread_cpu_s(me), time.thread_time()
    while time.thread_time() - began < 0.1:  # ten clock ticks of this thread's own CPU
        pass
    assert 0.07 <= _thread_cpu_s(me) - before <= 1.0
