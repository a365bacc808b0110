"""A small real fleet history, written through ``StoreWriter``, for the console tests.

Eight nodes in two leaf groups at three moments (T0-600, T0-300, T0):
- gpu003: mlx5_2 port goes down at T0 (degraded at T0, ok before);
- gpu005: optics Rx on mlx5_1 low (degraded throughout);
- gpu007: unreachable from T0-120 (down at T0, ok at T0-300);
- gpu008: auth failed from T0-600;
- gpu006: NIC mlx5_1 cabled to the rail-0 leaf of its group (miswired);
jobs 100 (gpu001-004, tenant acme) and 101 (gpu005-008, tenant globex).
"""

from __future__ import annotations

from pathlib import Path

from fleet.fabric.events import Event, Severity
from fleet.fabric.naming import leaf_name, node_name, spine_name
from fleet.fabric.records import HostRecord, HostStatus, JobRecord, PortRecord, ProbeRecord
from fleet.fabric.samples import HostSample, SeriesKey
from fleet.fabric.states import HostState
from fleet.store.writer import StoreWriter

T0 = 1_800_000_000.0
NODES = 8
RAILS = 2
MOMENTS = (T0 - 600, T0 - 300, T0)


def node_values(index: int, ts: float) -> dict[SeriesKey, float]:
    name = node_name(index)
    values: dict[SeriesKey, float] = {("host_up", "", ""): 1.0}
    for rail in range(RAILS):
        dev = f"mlx5_{rail}"
        down = name == "gpu003" and rail == 1 and ts >= T0
        values.update({
            ("port_state", dev, "1"): 1.0 if down else 4.0,
            ("rate_gbps", dev, "1"): 400.0,
            ("rx_gbps", dev, "1"): 0.0 if down else 100.0 + index * 10 + rail,
            ("tx_gbps", dev, "1"): 0.0 if down else 90.0 + index * 10 + rail,
            ("rx_pause_per_s", dev, "1"): 0.0,
            ("tx_pause_per_s", dev, "1"): 0.0,
            ("cnp_sent_per_s", dev, "1"): float(index),
            ("qp_count", dev, "1"): 16.0,
        })
        for lane in range(2):
            rx = -9.0 if name == "gpu005" and rail == 1 else -2.0 - lane * 0.1
            values[("optics_rx_power_dbm", dev, f"L{lane}")] = rx
            values[("optics_tx_power_dbm", dev, f"L{lane}")] = 1.0
    for gpu in range(2):
        values[("gpu_util_pct", f"gpu{gpu}", "")] = 50.0 + index
        values[("gpu_temp_c", f"gpu{gpu}", "")] = 60.0
        values[("gpu_xid_last", f"gpu{gpu}", "")] = 0.0
    return values


def fill_store(path: Path) -> StoreWriter:
    """Write the history and return the still-running writer (tests add to it)."""
    writer = StoreWriter(path).start()
    hosts = [HostRecord(node_name(i), "node", group=(i - 1) // 4) for i in range(1, NODES + 1)]
    hosts += [HostRecord(leaf_name(g, r), "leaf", os="cumulus") for g in range(2) for r in range(RAILS)]
    hosts += [HostRecord(spine_name(1), "spine", os="cumulus")]
    writer.put_hosts(hosts)
    ports = []
    for i in range(1, NODES + 1):
        for rail in range(RAILS):
            leaf = leaf_name((i - 1) // 4, rail)
            if node_name(i) == "gpu006" and rail == 1:
                leaf = leaf_name(1, 0)  # miswired: rail 1 of group 1 plugged into the rail-0 leaf
            ports.append(PortRecord(node_name(i), f"mlx5_{rail}", "1", f"ens{rail}", "Ethernet",
                                    leaf, f"swp{(i - 1) % 4 + 1}"))
    for g in range(2):
        for rail in range(RAILS):
            leaf = leaf_name(g, rail)
            ports.append(PortRecord(leaf, "swp32", "", peer_host=spine_name(1), peer_port=f"swp{g * RAILS + rail + 1}"))
            for k in range(4):
                ports.append(PortRecord(leaf, f"swp{k + 1}", "", peer_host=node_name(g * 4 + k + 1),
                                        peer_port=f"mlx5_{rail}"))
    writer.put_ports(ports)
    for i in range(1, NODES + 1):
        writer.put_host_status(HostStatus(node_name(i), HostState.OK, T0 - 3600))
    writer.put_host_status(HostStatus("gpu008", HostState.AUTH_FAILED, T0 - 600, "publickey rejected"))
    writer.put_host_status(HostStatus("gpu007", HostState.UNREACHABLE, T0 - 120, "connection refused"))
    for ts in MOMENTS:
        for i in range(1, NODES + 1):
            if node_name(i) == "gpu007" and ts >= T0 - 120:
                continue
            writer.put_samples(HostSample(node_name(i), ts, node_values(i, ts)))
        for g in range(2):
            for rail in range(RAILS):
                util = 85.0 if (g, rail) == (0, 0) else 20.0
                writer.put_samples(HostSample(leaf_name(g, rail), ts, {
                    ("sw_util_pct", "swp32", ""): util, ("sw_oper_up", "swp32", ""): 1.0}))
    jobs = [
        JobRecord(T0 - 900, "100", "llama", "alice", "acme", "RUNNING", tuple(node_name(i) for i in range(1, 5)),
                  start_ts=T0 - 900),
        JobRecord(T0 - 900, "101", "moe", "bob", "globex", "RUNNING", tuple(node_name(i) for i in range(5, 9)),
                  start_ts=T0 - 900),
    ]
    writer.put_jobs(jobs, T0 - 900)
    writer.put_jobs([JobRecord(T0, j.job_id, j.name, j.user, j.account, j.state, j.nodes, start_ts=j.start_ts)
                     for j in jobs], T0)
    writer.put_event(Event(T0 - 500, "optics_low", Severity.WARNING, "mlx5_1 Rx -9.0 dBm [bold]low",
                           host="gpu005", device="mlx5_1"))
    writer.put_event(Event(T0 - 120, "host_state", Severity.CRITICAL, "unreachable: connection refused",
                           host="gpu007"))
    writer.put_event(Event(T0, "link_down", Severity.CRITICAL, "mlx5_1 port down", host="gpu003",
                           device="mlx5_1", port="1"))
    for k, ts in enumerate(MOMENTS):
        writer.put_probe(ProbeRecord(ts, "lat", "gpu001", "gpu002", "mlx5_0", "mlx5_0",
                                     result={"t_typical_usec": 2.0 + k, "p99_usec": 4.0 + k}, job="100"))
    assert writer.flush(10.0)
    return writer
