"""End to end: the agent's source through the pool's quoting, a real shell on an SSH server, lines back into rates."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from agent_harness import agent_env, build_sysfs

from fleet.collectors.agent_reader import agent_source, decode_agent_line, host_sample
from fleet.collectors.commands import agent_command
from fleet.collectors.inventory import InventoryHost
from fleet.collectors.sshpool import PoolSettings, SshPool
from fleet.fabric.rates import DerivedRates, RateFlag, RateTracker
from fleet.fabric.states import HostState

MakeHost = Callable[..., Coroutine[Any, Any, Any]]


async def test_agent_stream_over_ssh_into_rates(make_host: MakeHost, client_key: tuple[Any, Path], tmp_path: Path) -> None:
    sysfs = build_sysfs(tmp_path / "sys")
    env = agent_env(tmp_path, "h100")
    (tmp_path / "bin" / "python3").symlink_to(sys.executable)
    host = await make_host("gpu001", "exec", exec_env=env)
    known = tmp_path / "known_hosts"
    known.write_text(host.known_hosts_line())
    node = InventoryHost("gpu001", "node", host.address, host.port, "fleet", identity_file=client_key[1], mode="agent")
    pool = SshPool([node], known_hosts=known, settings=PoolSettings(ssh_config=()))
    tracker = RateTracker()
    derived: list[DerivedRates] = []
    stop = asyncio.Event()

    def on_line(text: str) -> None:
        derived.append(tracker.update(host_sample(decode_agent_line(text), host="gpu001")))
        if len(derived) == 3:
            stop.set()

    command = agent_command(agent_source(), 0.05, sysfs=str(sysfs), optics_every=0)
    result = await pool.stream("gpu001", command, on_line, first_line_timeout_s=20, line_timeout_s=5, stop=stop)
    await pool.close()
    assert result.state is HostState.OK, result.reason
    assert result.lines == 3
    assert host.stats.commands == [command.text]
    values = derived[1].sample.values
    assert values[("tx_gbps", "mlx5_0", "1")] == 0  # a fixture tree does not count: 0 Gb/s, not an error
    assert values[("cnp_sent_per_s", "mlx5_bond_0", "1")] == 0
    saturated = {(flag.metric, flag.device) for flag in derived[1].flags if flag.flag is RateFlag.SATURATED}
    assert saturated == {("link_downed", "mlx5_1"), ("port_xmit_discards", "mlx5_1"),
                         ("port_xmit_wait", "mlx5_1"), ("excessive_buffer_overrun_errors", "mlx5_1")}
