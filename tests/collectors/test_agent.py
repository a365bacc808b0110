"""The node agent, run as a real subprocess against sysfs trees built from real captures (agent_harness)."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pynvml as real_pynvml
import pytest
from agent_harness import FIXTURES, agent_env, build_sysfs, run_agent

from fleet.collectors.agent_reader import agent_source


def port(line: dict[str, Any], device: str) -> dict[str, Any]:
    return next(entry for entry in line["ports"] if entry["device"] == device)


def test_ports_from_real_sysfs_captures(tmp_path: Path) -> None:
    line = run_agent(tmp_path, "--interval", "0.05", "--optics-every", "0")[0]
    assert line["schema"] == "fleet-agent/2"
    assert line["seq"] == 0 and line["interval_s"] == 0.05
    assert [entry["device"] for entry in line["ports"]] == ["mlx5_0", "mlx5_1", "mlx5_bond_0"]
    mlx5_0 = port(line, "mlx5_0")
    assert (mlx5_0["state"], mlx5_0["state_code"]) == ("ACTIVE", 4)
    assert (mlx5_0["phys_state"], mlx5_0["phys_state_code"]) == ("ACTIVE", 4)  # the capture's quirk, kept
    assert (mlx5_0["rate"], mlx5_0["rate_gbps"], mlx5_0["link_layer"]) == ("25 Gb/sec (1X EDR)", 25.0, "InfiniBand")
    assert mlx5_0["netdev"] == ""
    assert mlx5_0["counters"]["port_xmit_data"] == 2880761508848
    assert len(mlx5_0["counters"]) == 21 and len(mlx5_0["hw_counters"]) == 25
    assert mlx5_0["hw_counters"]["local_ack_timeout_err"] == 131
    mlx5_1 = port(line, "mlx5_1")
    assert mlx5_1["counters"]["port_xmit_wait"] == 4294967295
    assert (mlx5_1["counters"]["link_downed"], mlx5_1["counters"]["port_xmit_discards"]) == (255, 65535)
    assert mlx5_1["state_code"] is None and mlx5_1["rate_gbps"] is None
    assert any("mlx5_1/ports/1/state" in error for error in line["errors"])
    bond = port(line, "mlx5_bond_0")
    assert (bond["netdev"], bond["rate_gbps"], bond["phys_state"]) == ("bond0", 200.0, "LinkUp")
    assert bond["hw_counters"]["np_ecn_marked_roce_packets"] == 21278189006
    ethtool = line["netdevs"]["bond0"]["ethtool"]
    assert ethtool["rx_packets"] == 845320277 and ethtool["rx_discards_phy"] == 0
    assert "optics_text" not in line["netdevs"]["bond0"]
    assert line["qp_count"] == {"mlx5_0": 12, "mlx5_bond_0": 7}


def test_optics_every_kth_line(tmp_path: Path) -> None:
    lines = run_agent(tmp_path, "--interval", "0.01", "--optics-every", "2", lines=3)
    assert [line["seq"] for line in lines] == [0, 1, 2]
    with_optics = ["optics_text" in line["netdevs"]["bond0"] for line in lines]
    assert with_optics == [True, False, True]
    assert lines[0]["netdevs"]["bond0"]["optics_text"].startswith("Identifier")
    assert lines[0]["netdevs"]["bond0"]["optics_text"] == \
        (FIXTURES / "ethtool" / "cwdm4-ethtool-m-qsfp28-cx4-healthy-thresholds.txt").read_text()


def test_ethtool_keep_sends_only_the_named_counters(tmp_path: Path) -> None:
    every = run_agent(tmp_path / "all", "--interval", "0.01", "--optics-every", "0")[0]["netdevs"]["bond0"]["ethtool"]
    kept = run_agent(tmp_path / "kept", "--interval", "0.01", "--optics-every", "0",
                     "--ethtool-keep", "tx_global_pause,not_a_counter")[0]["netdevs"]["bond0"]["ethtool"]
    assert len(every) > 1 and "tx_global_pause" in every
    assert kept == {"tx_global_pause": every["tx_global_pause"]}


@pytest.mark.parametrize("hostile", ["eth0;rm -rf x", "$(reboot)", "-oops", "`id`"])
def test_hostile_netdev_name_never_reaches_a_tool(tmp_path: Path, hostile: str) -> None:
    sysfs = build_sysfs(tmp_path / "sys", extra_netdevs=(hostile,))
    line = run_agent(tmp_path, "--optics-every", "1", sysfs=sysfs)[0]
    assert port(line, "mlx5_1")["netdev"] == ""
    assert any(repr(hostile) in error and "not an interface name" in error for error in line["errors"])
    calls = (tmp_path / "tools.log").read_text().splitlines()
    assert calls == ["['-S', 'bond0']", "['-m', 'bond0']"]


def test_one_line_when_stdin_is_already_closed(tmp_path: Path) -> None:
    build_sysfs(tmp_path / "sys")
    done = subprocess.run(
        [sys.executable, "-u", "-c", agent_source(), "--sysfs", str(tmp_path / "sys"), "--interval", "0.01"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=20, env=agent_env(tmp_path, "h100"),
    )
    assert done.returncode == 0
    assert len(done.stdout.splitlines()) == 1


def test_missing_tools_are_reported_not_fatal(tmp_path: Path) -> None:
    env = agent_env(tmp_path, "no_library", with_rdma=False)
    env["PATH"] = str(tmp_path / "empty")
    line = run_agent(tmp_path, env=env)[0]
    assert "qp_count" not in line
    assert "ethtool: not installed" in line["errors"]
    assert line["netdevs"]["bond0"]["ethtool"] == {}


def test_gpus_through_real_nvml_structures(tmp_path: Path) -> None:
    first, second = run_agent(tmp_path, "--interval", "0.01", lines=2)
    assert first["gpu_error"] == ""
    gpu0, gpu1 = first["gpus"]
    assert gpu0 == {
        "index": 0, "name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-00000000-0000-0000-0000-000000000000",
        "util_pct": 97, "mem_used_bytes": 81_004_429_312, "mem_total_bytes": 85_520_809_984,
        "temp_c": 61, "power_w": 612.412, "sm_clock_mhz": 1980,
        "throttle_reasons": real_pynvml.nvmlClocksEventReasonSwThermalSlowdown,
        "ecc_volatile_uncorrected": 2, "ecc_aggregate_uncorrected": 5, "ecc_volatile_corrected": 12,
        "retired_pages": 3, "pcie_replay": 3, "xid_last": 79, "xid_count": 1,
        "nvlink_crc_errors": 2, "nvlink_replay_errors": 1, "nvlink_recovery_errors": 0,
    }
    # gpu1: NOT_SUPPORTED is null, never an error; retired pages used where remapped rows are missing
    assert gpu1["ecc_volatile_uncorrected"] is None and gpu1["nvlink_crc_errors"] is None
    assert gpu1["xid_last"] is None and gpu1["xid_count"] is None
    assert gpu1["retired_pages"] == 3 and gpu1["temp_c"] == 62
    assert first["errors"] == [error for error in first["errors"] if "mlx5_1" in error]
    assert second["gpus"][0]["xid_count"] == 1 and second["gpus"][0]["xid_last"] == 79


def test_lost_gpu_is_reported_by_its_nvml_error(tmp_path: Path) -> None:
    line = run_agent(tmp_path, env=agent_env(tmp_path, "lost"))[0]
    assert line["gpus"][0]["temp_c"] == 61
    assert line["gpus"][1] == {"index": 1, "error": "NVML_ERROR_GPU_IS_LOST"}


@pytest.mark.parametrize(("scenario", "error"), [
    ("no_driver", "NVML_ERROR_DRIVER_NOT_LOADED"),
    ("no_library", "NVML_ERROR_LIBRARY_NOT_FOUND"),
])
def test_no_gpu_named_by_nvml_error(tmp_path: Path, scenario: str, error: str) -> None:
    line = run_agent(tmp_path, env=agent_env(tmp_path, scenario))[0]
    assert line["gpus"] == [] and line["gpu_error"] == error


def test_no_nvidia_driver_is_a_state_of_the_node_not_an_nvml_error(tmp_path: Path) -> None:
    """No ``nvidia`` module loaded: the agent says so, and does not ask NVML (which would answer)."""
    sysfs = build_sysfs(tmp_path / "sys")
    shutil.rmtree(sysfs / "module" / "nvidia")
    line = run_agent(tmp_path, sysfs=sysfs)[0]
    assert line["gpus"] == [] and line["gpu_error"] == "no NVIDIA driver"
    assert line["ports"]  # the RDMA side is read as before


def test_no_rdma_device_and_no_driver(tmp_path: Path) -> None:
    """A CPU node: no /sys/class/infiniband, no nvidia module. Empty ports, and rdma is not run."""
    empty = tmp_path / "sys"
    empty.mkdir()
    line = run_agent(tmp_path, sysfs=empty)[0]
    assert line["ports"] == [] and line["netdevs"] == {} and "qp_count" not in line
    assert line["gpu_error"] == "no NVIDIA driver" and line["errors"] == []
    assert not (tmp_path / "tools.log").exists()  # neither ethtool nor rdma ran


def test_without_pynvml(tmp_path: Path) -> None:
    env = agent_env(tmp_path, "h100")
    del env["PYTHONPATH"]
    line = run_agent(tmp_path, env=env, python_flags=("-S",))[0]  # -S: no site-packages, no pynvml
    assert line["gpus"] == [] and line["gpu_error"] == "pynvml not installed"


def test_agent_is_self_contained() -> None:
    imports = [line.split()[1] for line in agent_source().splitlines() if line.startswith(("import ", "from "))]
    assert set(imports) <= set(sys.stdlib_module_names) | {"__future__"}
    assert os.path.basename(__file__).startswith("test_")


def test_sent_source_is_python36_syntax_without_annotations() -> None:
    import ast

    tree = ast.parse(agent_source(), feature_version=(3, 6))
    assert "__future__" not in agent_source()
    for node in ast.walk(tree):
        assert not isinstance(node, ast.AnnAssign)
        if isinstance(node, ast.FunctionDef):
            assert node.returns is None and all(arg.annotation is None for arg in node.args.args)


_CANDIDATES = sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.6*/bin/python3")))
"""Found at import, before the tests' HOME is replaced; /usr/bin/python3.6 on RHEL 8."""


def _old_pythons() -> list[str]:
    usable = []
    for path in [*_CANDIDATES, "/usr/bin/python3.6"]:
        if not os.path.exists(path):
            continue
        probe = subprocess.run([path, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                               text=True, timeout=20, env={})
        if probe.stdout.strip() == "(3, 6)":
            usable.append(path)
    return usable[:1]


def test_runs_on_python36_like_rhel8(tmp_path: Path) -> None:
    pythons = _old_pythons()
    if not pythons:
        pytest.skip("no Python 3.6 interpreter on this machine")
    build_sysfs(tmp_path / "sys")
    env = agent_env(tmp_path, "no_library")
    done = subprocess.run([pythons[0], "-u", "-c", agent_source(), "--sysfs", str(tmp_path / "sys"), "--optics-every", "1"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30, env=env)
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout)
    assert line["netdevs"]["bond0"]["ethtool"]["rx_packets"] == 845320277
    assert line["qp_count"] == {"mlx5_0": 12, "mlx5_bond_0": 7}
