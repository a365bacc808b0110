"""A small synthetic fabric over one window, for the diagnosis rules' tests.

Four nodes with two NICs (rails) each, rail r cabled to leaf0(r+1) port
swp<node>, two spines, a 60 s window. ``Fleet`` holds the first and the newest
value of every series; each test breaks one thing.
"""

from __future__ import annotations

from fleet.fabric.diagnosis import DiagnosisInput, Reading, Thresholds, diagnose
from fleet.fabric.events import Event
from fleet.fabric.records import HostStatus, JobRecord, PortRecord, ProbeRecord
from fleet.fabric.rules.context import Moment
from fleet.fabric.states import HostState
from fleet.fabric.topology import PlannedCable, build_graph, compare

T0, T1 = 1_000.0, 1_060.0
RECENT_S = 10.0
NODES = ("gpu001", "gpu002", "gpu003", "gpu004")
NICS = ("mlx5_0", "mlx5_1")
LEAVES = ("leaf01", "leaf02")
SPINES = ("spine01", "spine02")
ROLES = {**{n: "node" for n in NODES}, **{leaf: "leaf" for leaf in LEAVES}, **{s: "spine" for s in SPINES}}
PLAN = [PlannedCable(n, nic, LEAVES[r], f"swp{i + 1}") for i, n in enumerate(NODES) for r, nic in enumerate(NICS)]


def ports_of(plan: list[PlannedCable]) -> list[PortRecord]:
    records = []
    for c in plan:
        records.append(PortRecord(c.node, c.nic, "1", f"eth{c.nic[-1]}", "Ethernet", c.switch, c.port))
        records.append(PortRecord(c.switch, c.port, "", "", "Ethernet", c.node, f"eth{c.nic[-1]}"))
    for li, leaf in enumerate(LEAVES):
        for si, spine in enumerate(SPINES):
            records.append(PortRecord(leaf, f"swp{9 + si}", "", "", "Ethernet", spine, f"swp{li + 1}"))
            records.append(PortRecord(spine, f"swp{li + 1}", "", "", "Ethernet", leaf, f"swp{9 + si}"))
    return records


class Fleet:
    """A healthy fabric's readings; tests overwrite what their fault changes."""

    def __init__(self) -> None:
        self.first: dict[tuple[str, str, str, str], Reading] = {}
        self.latest: dict[tuple[str, str, str, str], Reading] = {}
        self.statuses = {h: HostStatus(h, HostState.OK, T0) for h in ROLES}
        self.events: list[Event] = []
        self.probes: list[ProbeRecord] = []
        self.baseline: list[ProbeRecord] = []
        self.uplinks: dict[tuple[str, str], tuple[tuple[float, ...], tuple[float, ...]]] = {}
        self.ports = ports_of(PLAN)
        self.recent: dict[tuple[str, str, str, str], Reading] = {}
        self.history: list[Moment] = []
        self.jobs: list[JobRecord] = []
        for node in NODES:
            for nic in NICS:
                self.nic(node, nic)
            for gpu in ("gpu0", "gpu1"):
                for metric, value in (("gpu_temp_c", 62.0), ("gpu_throttle_reasons", 0.0), ("gpu_xid_last", 0.0),
                                      ("gpu_xid_count", 0.0), ("gpu_sm_clock_mhz", 1980.0)):
                    self.gauge(node, metric, gpu, "", value)
        for leaf in LEAVES:
            for port in range(1, 11):
                self.gauge(leaf, "sw_oper_up", f"swp{port}", "", 1.0)
        for spine in SPINES:
            for li, _ in enumerate(LEAVES):
                self.counter(spine, "sw_tx_bytes", f"swp{li + 1}", "", 0.0, 60 * 20e9)
                self.counter(spine, "sw_tx_drops", f"swp{li + 1}", "", 0.0, 0.0)

    def nic(self, node: str, nic: str) -> None:
        for metric, value in (("port_state", 4.0), ("phys_state", 5.0), ("rate_gbps", 400.0)):
            self.gauge(node, metric, nic, "1", value)
        self.gauge(node, "qp_count", nic, "", 9.0)
        for lane in range(4):
            self.gauge(node, "optics_rx_power_dbm", nic, f"L{lane}", 0.5 + 0.1 * lane)
        counters = {"link_downed": 0, "link_down_events_phy": 0, "rx_corrected_bits_phy": 60 * 1e4,
                    "rx_bits_phy": 60 * 4e11, "symbol_error": 0, "rx_pcs_symbol_err_phy": 0,
                    "tx_prio3_pause": 0, "rx_prio3_pause": 60 * 0.4, "np_ecn_marked_roce_packets": 60 * 500,
                    "np_cnp_sent": 60 * 250, "rp_cnp_handled": 60 * 250, "rp_cnp_ignored": 0,
                    "out_of_sequence": 0, "req_cqe_error": 0, "resp_cqe_error": 0, "rnr_nak_retry_err": 0,
                    "out_of_buffer": 0, "tx_pause_storm_warning_events": 0, "tx_pause_storm_error_events": 0}
        for metric, increase in counters.items():
            self.counter(node, metric, nic, "1", 0.0, float(increase))

    def gauge(self, host: str, metric: str, device: str, port: str, value: float) -> None:
        self.latest[(host, metric, device, port)] = Reading(T1, value)

    def counter(self, host: str, metric: str, device: str, port: str, first: float, last: float) -> None:
        self.first[(host, metric, device, port)] = Reading(T0, first)
        self.latest[(host, metric, device, port)] = Reading(T1, last)

    def rate(self, host: str, metric: str, device: str, per_s: float, port: str = "1") -> None:
        self.counter(host, metric, device, port, 1000.0, 1000.0 + per_s * (T1 - T0))

    def drop(self, host: str, device: str) -> None:
        for key in [k for k in self.latest if k[0] == host and k[2] == device]:
            del self.latest[key]
            self.first.pop(key, None)

    def input(self, plan: list[PlannedCable] = PLAN) -> DiagnosisInput:
        """The window as the rules get it (``recent`` and ``history`` as set on the fleet)."""
        graph = build_graph(self.ports, ROLES)
        silent = [h for h, s in self.statuses.items() if s.state in (HostState.UNREACHABLE, HostState.HUNG)]
        jobs = [JobRecord(T0, "77", "train", "alice", "acme", "RUNNING", NODES[:2])]
        return DiagnosisInput(T0, T1, self.latest, self.first, self.statuses, self.events, self.probes,
                              self.baseline, ROLES, self.ports, plan, graph, compare(graph, plan, silent=silent),
                              self.jobs or jobs, self.uplinks, self.recent, RECENT_S, self.history)


def parts(fleet: Fleet, thresholds: Thresholds | None = None) -> list[tuple[str, str, str, str, str]]:
    return [(f.kind, f.node, f.nic, f.switch, f.port) for f in diagnose(fleet.input(), thresholds)]


def module_limits(fleet: Fleet, node: str, nic: str, rx: tuple[float, float, float, float] = (-10.0, -7.0, 2.0, 4.0),
                  tx: tuple[float, float, float, float] = (-6.0, -4.0, 4.0, 6.0),
                  bias: tuple[float, float, float, float] = (2.0, 4.0, 13.0, 15.0),
                  temp: tuple[float, float, float, float] = (-5.0, 0.0, 70.0, 75.0)) -> None:
    """A module's own thresholds as ethtool -m prints them: (low alarm, low warning, high warning, high alarm)."""
    for name, unit, limits in (("rx_power", "dbm", rx), ("tx_power", "dbm", tx), ("tx_bias", "ma", bias),
                               ("temp", "c", temp)):
        for level, value in zip(("low_alarm", "low_warning", "high_warning", "high_alarm"), limits, strict=True):
            fleet.gauge(node, f"optics_{name}_{level}_{unit}", nic, "", value)


