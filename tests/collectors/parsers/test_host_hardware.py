"""``grep -Hs .`` over what says what a host has: a real capture, the simulator's answer, hostile input."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from helpers.simfleet import running_fleet, small_scenario

from fleet.collectors.commands import Glob, command
from fleet.collectors.inventory import load_inventory
from fleet.collectors.parsers.host_hardware import HARDWARE_FILES, cpu_count, parse_host_hardware
from fleet.collectors.parsers.problem_log import MAX_LISTED
from fleet.collectors.sshpool import PoolSettings, SshPool
from fleet.simulator.tools.sysfs import HOST_CPUS, HOST_MEMORY_KIB

FIXTURES = Path(__file__).parents[2] / "fixtures"
VM = FIXTURES / "host" / "debian12-vm-grep-Hs-no-rdma-no-nvidia.txt"


def test_a_real_vm_without_rdma_or_driver() -> None:
    parsed = parse_host_hardware(VM.read_text())
    assert parsed.problems == () and parsed.unknown_lines == 0
    assert parsed.cpus == 2
    assert parsed.memory_total_bytes == 24_683_664 * 1024 and parsed.memory_available_bytes == 22_907_172 * 1024
    assert parsed.rdma_devices == () and parsed.nvidia_driver is None
    assert [(n.name, n.operstate, n.speed_mbps, n.mtu) for n in parsed.netdevs] == [
        ("eth0", "up", None, 1400),  # virtio: speed -1, unknown
        ("ifb0", "down", None, 1500),  # down: the kernel refuses its speed (EINVAL), grep -s is quiet
        ("ifb1", "down", None, 1500),
        ("lo", "unknown", None, 65536),
    ]


async def test_what_the_simulator_answers(tmp_path: Path) -> None:
    async with running_fleet(small_scenario(), tmp_path / "sim") as inventory_path:
        inventory = load_inventory(inventory_path)
        pool = SshPool(inventory.hosts, known_hosts=inventory.known_hosts, settings=PoolSettings(ssh_config=()))
        try:
            result = await pool.run("gpu001", command("grep", "-Hs", ".", *(Glob(p) for p in HARDWARE_FILES)),
                                    timeout_s=30)
        finally:
            await pool.close()
    assert result.ok, result.reason
    parsed = parse_host_hardware(result.stdout)
    assert parsed.problems == ()
    assert parsed.cpus == HOST_CPUS and parsed.memory_total_bytes == HOST_MEMORY_KIB * 1024
    assert parsed.memory_available_bytes is not None and 0 < parsed.memory_available_bytes < parsed.memory_total_bytes
    assert parsed.rdma_devices == tuple(f"mlx5_{rail}" for rail in range(8))
    assert parsed.nvidia_driver
    assert all(n.operstate in ("up", "down") and n.mtu == 9000 for n in parsed.netdevs) and len(parsed.netdevs) == 8


@pytest.mark.parametrize(("text", "count"), [
    ("0", 1), ("0-63", 64), ("0-3,8-11", 8), ("0-1\n", 2), ("", None), ("3-1", None), ("a-b", None),
    ("0-99999999999", None),
])
def test_cpu_lists(text: str, count: int | None) -> None:
    assert cpu_count(text) == count


def test_a_host_with_rdma_and_a_driver() -> None:
    text = ("/sys/devices/system/cpu/online:0-223\n/sys/module/nvidia/version:535.183.01\n"
            "/sys/class/infiniband/mlx5_1/node_type:1: CA\n/sys/class/infiniband/mlx5_0/node_type:1: CA\n"
            "/sys/class/net/ibp1s0/operstate:up\n/sys/class/net/ibp1s0/speed:400000\n")
    parsed = parse_host_hardware(text)
    assert parsed.rdma_devices == ("mlx5_0", "mlx5_1") and parsed.nvidia_driver == "535.183.01"
    assert parsed.netdevs[0].speed_mbps == 400_000 and parsed.netdevs[0].mtu is None


@pytest.mark.parametrize("hostile", [
    "", "\n\n", "garbage without a colon", "\x00\xff" * 1000, "/etc/passwd:root:x:0:0\n",
    "/proc/meminfo:MemTotal: lots kB\n", "/sys/devices/system/cpu/online:\x1b[2J\n",
    "/sys/class/net/eth0/operstate:up\n" * 100_000, "/proc/meminfo:MemTotal: ²³ kB\n",
    "/proc/meminfo:MemTotal:" + " " * 50_000 + "x\n", "/sys/class/net/eth0/mtu:99999999999999999999999\n",
])
def test_hostile_input_never_raises_and_is_counted(hostile: str) -> None:
    parsed = parse_host_hardware(hostile)
    assert len(parsed.problems) <= MAX_LISTED + 1
    if "passwd" in hostile or "colon" in hostile:
        assert parsed.unknown_lines == 1
    if "lots" in hostile:
        assert parsed.memory_total_bytes is None and "MemTotal: 'lots' is not an integer" in parsed.problems[0].reason
    if "online" in hostile:
        assert parsed.cpus is None and parsed.problems


def test_truncated_and_shuffled_captures() -> None:
    lines = VM.read_text().splitlines()
    rng = random.Random(7)
    for _ in range(50):
        cut = rng.sample(lines, rng.randrange(len(lines)))
        text = "\n".join(cut)[: rng.randrange(1, 2000)]
        parsed = parse_host_hardware(text)
        assert parsed.cpus in (None, 2) and parsed.rdma_devices == ()
