"""Cumulus Linux NVUE: ``nv show interface`` for ports and neighbours, per-port counters as JSON."""

from __future__ import annotations

from fleet.collectors.commands import Command, command
from fleet.collectors.isolation import Unparsable, read_output
from fleet.collectors.parsers.switch_nvue import parse_nvue_counters
from fleet.collectors.parsers.switch_tables import parse_switch_table
from fleet.collectors.sections import sectioned, split_sections
from fleet.collectors.switches.base import SwitchPoll, clock_part, poll_time, speed_gbps
from fleet.fabric.records import PortRecord
from fleet.fabric.samples import HostSample, SeriesKey
from fleet.fabric.text import clean_text

RDMA_PRIORITY = "3"
"""RoCE's lossless priority, whose PFC pause frames matter (docs/domain.md, "PFC pause and pause storms")."""

_JSON_METRICS: dict[tuple[str, str], str] = {
    ("", "in-bytes"): "sw_rx_bytes",
    ("", "out-bytes"): "sw_tx_bytes",
    ("", "in-drops"): "sw_rx_drops",
    ("", "out-drops"): "sw_tx_drops",
    ("", "in-errors"): "sw_rx_errors",
    ("", "carrier-transitions"): "sw_carrier_transitions",
    ("", "ecn-marked-packets"): "sw_ecn_marked",
    (f"pfc/{RDMA_PRIORITY}", "rx-pause-frames"): "sw_rx_pfc_pause",
    (f"pfc/{RDMA_PRIORITY}", "tx-pause-frames"): "sw_tx_pfc_pause",
}


class NvueDriver:
    os = "cumulus"

    def __init__(self, name: str) -> None:
        self.name = name
        self.ports: tuple[str, ...] = ()
        """Front-panel ports (``swpN``), learnt from ``nv show interface``."""

    def poll_command(self) -> Command:
        parts = [clock_part(), ("interfaces", command("nv", "show", "interface"))]
        parts += [(f"port:{port}", command("nv", "show", "interface", port, "counters", "-o", "json"))
                  for port in self.ports]
        return sectioned(parts)

    def read_poll(self, text: str, ts: float) -> SwitchPoll:
        sections = split_sections(text)
        ts, clock_problem = poll_time(sections, ts)
        table = read_output("nv show interface", parse_switch_table, sections.get("interfaces", ""))
        problems = [f"nv show interface line {p.line}: {p.reason}" for p in table.problems]
        problems += [clock_problem] if clock_problem else []
        values: dict[SeriesKey, float] = {}
        records: list[PortRecord] = []
        speeds: dict[str, float] = {}
        ports: list[str] = []
        for row in table.rows:
            port = clean_text(row.get("Interface", ""), one_line=True)
            if row.get("Type") != "swp" or not port:
                continue
            ports.append(port)
            values[("sw_oper_up", port, "")] = 1.0 if row.get("State") == "up" else 0.0
            speed = speed_gbps(row.get("Speed", ""))
            if speed is not None:
                speeds[port] = speed
            records.append(PortRecord(self.name, port, "", link_layer="Ethernet",
                                      peer_host=clean_text(row.get("Remote Host", ""), one_line=True),
                                      peer_port=clean_text(row.get("Remote Port", ""), one_line=True)))
        self.ports = tuple(ports)
        for name, body in sections.items():
            if not name.startswith("port:"):
                continue
            port = name.split(":", 1)[1]
            what = f"nv show interface {port} counters -o json"
            counters = read_output(what, parse_nvue_counters, body)
            if body.strip() and not counters.counters and counters.problems:  # printed, but nothing readable
                raise Unparsable(what, counters.problems[0].reason)
            problems += [f"{port} counters line {p.line}: {p.reason}" for p in counters.problems[:3]]
            for counter in counters.counters:
                metric = _JSON_METRICS.get((counter.section, counter.name))
                if metric is not None and isinstance(counter.value, int | float):
                    values[(metric, port, "")] = float(counter.value)
        return SwitchPoll(HostSample(self.name, ts, values), tuple(records), speeds, tuple(problems))
