"""SONiC: ``show interfaces counters`` (portstat), ``show pfc counters``, ``show lldp table``.

portstat prints frame counts and a rate, not byte counters: the throughput
gauges come from its RX_BPS/TX_BPS columns (bytes per second, averaged by
the switch) instead of from counter deltas.
"""

from __future__ import annotations

from fleet.collectors.commands import Command, command
from fleet.collectors.isolation import read_output
from fleet.collectors.parsers.switch_sonic import parse_sonic_counters, parse_sonic_pfc
from fleet.collectors.parsers.switch_tables import parse_switch_table
from fleet.collectors.sections import sectioned, split_sections
from fleet.collectors.switches.base import SwitchPoll, clock_part, poll_time
from fleet.fabric.records import PortRecord
from fleet.fabric.samples import HostSample, SeriesKey
from fleet.fabric.text import clean_text

RDMA_PRIORITY = 3


class SonicDriver:
    os = "sonic"

    def __init__(self, name: str) -> None:
        self.name = name

    def poll_command(self) -> Command:
        return sectioned([
            clock_part(),
            ("counters", command("show", "interfaces", "counters")),
            ("pfc", command("show", "pfc", "counters")),
            ("lldp", command("show", "lldp", "table")),
        ])

    def read_poll(self, text: str, ts: float) -> SwitchPoll:
        sections = split_sections(text)
        ts, clock_problem = poll_time(sections, ts)
        counters = read_output("show interfaces counters", parse_sonic_counters, sections.get("counters", ""))
        problems = [f"show interfaces counters line {p.line}: {p.reason}" for p in counters.problems[:3]]
        problems += [clock_problem] if clock_problem else []
        values: dict[SeriesKey, float] = {}
        speeds: dict[str, float] = {}
        for port in counters.ports:
            name = clean_text(port.interface, one_line=True)
            if port.state is not None:
                values[("sw_oper_up", name, "")] = 1.0 if port.state == "U" else 0.0
            for metric, reading in (("sw_rx_drops", port.rx_drp), ("sw_tx_drops", port.tx_drp),
                                    ("sw_rx_errors", port.rx_err)):
                if reading is not None:
                    values[(metric, name, "")] = float(reading)
            rx_gbps = None if port.rx_bytes_per_s is None else port.rx_bytes_per_s * 8 / 1e9
            tx_gbps = None if port.tx_bytes_per_s is None else port.tx_bytes_per_s * 8 / 1e9
            if rx_gbps is not None:
                values[("sw_rx_gbps", name, "")] = rx_gbps
            if tx_gbps is not None:
                values[("sw_tx_gbps", name, "")] = tx_gbps
            util = max((u for u in (port.rx_util_pct, port.tx_util_pct) if u is not None), default=None)
            if util is not None:
                values[("sw_util_pct", name, "")] = util
                if util > 0 and rx_gbps is not None and tx_gbps is not None:
                    speeds[name] = round(max(rx_gbps, tx_gbps) * 100 / util)
        pfc = read_output("show pfc counters", parse_sonic_pfc, sections.get("pfc", ""))
        for row in pfc.rows:
            if RDMA_PRIORITY in row.priorities:
                frames = row.pfc_frames[row.priorities.index(RDMA_PRIORITY)]
                if frames is not None:
                    metric = "sw_rx_pfc_pause" if row.direction == "rx" else "sw_tx_pfc_pause"
                    values[(metric, clean_text(row.interface, one_line=True), "")] = float(frames)
        lldp = read_output("show lldp table", parse_switch_table, sections.get("lldp", ""))
        neighbours = {row.get("LocalPort", ""): row for row in lldp.rows}
        records = tuple(
            PortRecord(self.name, clean_text(port.interface, one_line=True), "", link_layer="Ethernet",
                       peer_host=clean_text(neighbours.get(port.interface, {}).get("RemoteDevice", ""), one_line=True),
                       peer_port=clean_text(neighbours.get(port.interface, {}).get("RemotePortID", ""),
                                            one_line=True))
            for port in counters.ports
        )
        return SwitchPoll(HostSample(self.name, ts, values), records, speeds, tuple(problems))
